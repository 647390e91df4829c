#!/usr/bin/env bash
# scripts/gpu-check.sh: the GPU checks of docs/train.md "GPUs", as one prepared run for a
# machine with an NVIDIA GPU, a PyTorch 2.x wheel (its libtorch, headers and CMake config),
# CUDA's compiler and CMake, but maybe no internet, no apt and none of our Debian libraries
# (those travel as .deb files: scripts/gpu-deps.sh).
#
#   scripts/gpu-check.sh [--out DIR] [--build DIR] [--debs DIR] [--budget SECONDS] [--bundle F.tgz]
#                        [--only cuda,ecosystem,figures,suite]
#   scripts/gpu-check.sh --dry BUILD_DIR [--out DIR]
#
# Steps, in order of value, each under its own time limit, each writing its log and a line of
# DIR/summary.md as it ends (so a run cut short still says how far it got):
#   probe      the machine: OS, glibc, CPU count, GPU (nvidia-smi), compilers, Python packages,
#              where the wheel keeps libtorch, nccl.h and (if it ships them) Gloo's headers
#   deps       the carried Debian libraries unpacked into a prefix (scripts/gpu-deps.sh)
#   configure  CMake against the wheel's libtorch, with NCCL and Gloo where their headers are
#   build      the targets the next steps need, with all cores (warnings are not errors:
#              libtorch 2.x's own headers warn)
#   cuda       the suite's CUDA tests: tests/test_train_cuda.c (training on cuda:0 held to the
#              CPU, gradient checkpointing, packed batches, resume, Gloo and NCCL), and the
#              device and c10d tests of aten/
#   ecosystem  PEFT, transformers and tokenizers load what sentinel writes
#              (scripts/gpu_ecosystem.sh)
#   figures    the training step in bf16 on the GPU next to PyTorch eager
#              (bench/train_step_gpu.sh)
#   suite      the whole ctest suite against this libtorch, in the time left
# --dry BUILD_DIR (run by `make test`, tests/gpu.cmake): no deps, configure or build; the
# existing build's tests/test_train_cuda runs with SN_TEST_GPU_DEVICE=cpu (every comparison's
# logic on the CPU), the ecosystem and figure scripts run as far as this machine allows (their
# CUDA and Python-package parts say why they skip), so the script cannot rot between GPU runs.
# --only: of the steps after the build, run these (a second, shorter run on a GPU).
# Exit: 0 when every step that ran passed (skips included), 1 otherwise.
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$src/gpu-check-out}
build=$src/build-gpu
debs=$src/.gpu/debs
budget=560
dry=""
bundle_file=""
only="cuda,ecosystem,figures,suite"
usage() { sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'; }
wanted() { case ",$only," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --debs) debs=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --bundle) bundle_file=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --dry) dry=1; build=$2; budget=900; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
done
case $budget in ''|*[!0-9]*) echo "gpu-check: --budget must be seconds" >&2; exit 2 ;; esac
mkdir -p "$out" || exit 1
build=$(mkdir -p "$build" && cd "$build" && pwd)
summary=$out/summary.md
start=$(date +%s)
failed=0
py=${PYTHON:-python3}
[ -n "$dry" ] && py=${PYTHON:-${SENTINEL_PYTHON:-/usr/bin/python3}}
printf '# gpu-check %s\n\n| step | result | seconds | note |\n|---|---|---|---|\n' \
  "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$summary"

left() { echo $((budget - ($(date +%s) - start))); }
# step NAME LIMIT_S CMD...: runs CMD with its output in OUT/NAME.log under min(LIMIT_S, the
# time left), and records pass / fail / skip (exit 77) / timeout in the summary
step() {
  local name=$1 limit=$2; shift 2
  local l; l=$(left)
  [ "$limit" -gt "$l" ] && limit=$l
  if [ "$limit" -lt 5 ]; then
    echo "| $name | not run | 0 | out of time |" >> "$summary"; return 1
  fi
  echo "== $name (limit ${limit}s)"
  local t0 rc result note
  t0=$(date +%s)
  if declare -F "$1" >/dev/null; then # a function of this script: through an exported bash
    timeout -k 5 "$limit" bash -c "$*" > "$out/$name.log" 2>&1
  else
    timeout -k 5 "$limit" "$@" > "$out/$name.log" 2>&1
  fi
  rc=$?
  case $rc in
    0) result=pass ;;
    77) result=skip ;;
    124|137) result=timeout; failed=1 ;;
    *) result="fail ($rc)"; failed=1 ;;
  esac
  note=$(grep -E '^(skipped|FAIL|gpu-check:|gpu_ecosystem:|-- sentinel: libtorch)|[0-9]+ passed, [0-9]+ failed|tests passed|error:' \
    "$out/$name.log" | tail -1 | tr '|' '/' | cut -c1-160)
  echo "| $name | $result | $(( $(date +%s) - t0 )) | $note |" >> "$summary"
  echo "   $result; $out/$name.log"
  tail -5 "$out/$name.log"
  bundle
  [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ]
}

# --bundle FILE: after every step, the logs, summary and small result files as one .tgz (a run
# cut off by its machine's time limit still leaves what it has; model and shard files stay out)
bundle() {
  [ -n "$bundle_file" ] || return 0
  (cd "$out" && find . -maxdepth 2 -type f \( -name '*.log' -o -name '*.md' -o -name '*.json' \
     -o -name '*.gz' -o -name CMakeCache.txt \) -size -8M -print0 |
     tar czf "$bundle_file.tmp" --null -T - && mv "$bundle_file.tmp" "$bundle_file")
}

probe() {
  echo "## os"; cat /etc/os-release 2>/dev/null | grep -E '^(PRETTY_NAME|VERSION_ID)='
  echo "## glibc"; ldd --version 2>&1 | head -1
  echo "## cpus: $(nproc)"
  echo "## gpu"; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm \
    --format=csv,noheader 2>&1 | head -4
  echo "## tools"
  for t in gcc g++ cmake ninja nvcc pkg-config pkgconf dpkg-deb; do
    printf '%s: %s\n' "$t" "$(command -v $t >/dev/null && ($t --version 2>&1 | head -1) || echo absent)"
  done
  echo "## python"
  "$py" - <<'EOF'
import importlib, os
for m in ("torch", "transformers", "peft", "tokenizers", "safetensors", "h5py", "sklearn"):
    try:
        print(m, getattr(importlib.import_module(m), "__version__", "?"))
    except Exception as e:
        print(m, "absent:", type(e).__name__)
try:
    import torch
    print("torch cuda", torch.version.cuda, "available", torch.cuda.is_available(),
          "devices", torch.cuda.device_count())
    if torch.cuda.is_available():
        print("device", torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0))
    print("cmake_prefix_path", torch.utils.cmake_prefix_path)
    inc = os.path.join(os.path.dirname(torch.__file__), "include")
    print("gloo headers in torch/include:", os.path.exists(os.path.join(inc, "gloo", "algorithm.h")))
    print("cxx11 abi", torch.compiled_with_cxx11_abi())
except Exception as e:
    print("torch probe failed:", e)
EOF
  echo "## libraries the image has"
  for l in libcurl.so.4 libz.so.1 libssl.so.3 libgomp.so.1 libopenblas.so.0 libhdf5_serial.so.103 libcjson.so.1; do
    printf '%s: %s\n' "$l" "$(ldconfig -p 2>/dev/null | grep -m1 "$l" | sed 's/.*=> //' || true)"
  done
  for h in curl/curl.h zlib.h cjson/cJSON.h hdf5.h pcre2.h utf8proc.h microhttpd.h cblas.h; do
    printf '%s: %s\n' "$h" "$( [ -e /usr/include/$h ] && echo /usr/include/$h || echo absent)"
  done
}

torch_prefix=""; nccl_inc=""; gloo_inc=""
find_torch() {
  torch_prefix=$("$py" -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null)
  local site; site=$("$py" -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))' 2>/dev/null)
  if [ -n "$site" ]; then
    nccl_inc=$(dirname "$(find "$site/nvidia" -name nccl.h 2>/dev/null | head -1)" 2>/dev/null)
    [ -e "$site/torch/include/gloo/algorithm.h" ] || \
      { [ -e "$src/.gpu/gloo/include/gloo/algorithm.h" ] && gloo_inc=$src/.gpu/gloo/include; }
  fi
  [ "$nccl_inc" = "." ] && nccl_inc=""
  true
}

configure() {
  local args=()
  [ -f "$prefix/cmake.args" ] && mapfile -t args < "$prefix/cmake.args"
  local gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  echo "torch prefix: $torch_prefix; nccl.h: ${nccl_inc:-none}; gloo: ${gloo_inc:-in torch or none}"
  cmake -S "$src" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSENTINEL_WERROR=OFF -DCMAKE_PREFIX_PATH="$torch_prefix" \
    -DSENTINEL_NCCL_INCLUDE_DIR="$nccl_inc" -DSENTINEL_GLOO_INCLUDE_DIR="$gloo_inc" \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DSENTINEL_PYTHON="$real_py" "${args[@]}"
  local rc=$?
  cp "$build/CMakeCache.txt" "$out/CMakeCache.txt" 2>/dev/null
  for f in CMakeFiles/CMakeConfigureLog.yaml CMakeFiles/CMakeError.log; do
    [ -f "$build/$f" ] && gzip -c "$build/$f" > "$out/$(basename "$f").gz"
  done
  return $rc
}

build_targets() {
  # -k 0 / -k: every compile error in one run, not the first
  local keep=(-k 0); [ -f "$build/Makefile" ] && keep=(-k)
  cmake --build "$build" -j "$(nproc)" --target sentinel sentinel-torch test_train_cuda \
    test_aten_ops test_aten_dist test_train_trainer bench_train_step -- "${keep[@]}"
}

cuda_tests() {
  (cd "$build" && ctest --output-on-failure -R '^(test_train_cuda|test_aten_ops|test_aten_dist|test_train_trainer)$')
}

dry_cuda_test() {
  SENTINEL_BIN=$build/sentinel SN_TEST_GPU_DEVICE=cpu "$build/tests/test_train_cuda"
}

suite() {
  cmake --build "$build" -j "$(nproc)" -- -k 0 >/dev/null 2>&1 || cmake --build "$build" -j "$(nproc)" 2>&1 | tail -20
  (cd "$build" && ctest -j "$(nproc)" --output-on-failure --timeout 120 -LE 'interop')
}

# the carried libraries' prefix: outside OUT, whose files travel back
prefix=${GPU_PREFIX:-/tmp/sentinel-gpu-prefix}
export src out build py prefix torch_prefix nccl_inc gloo_inc
export -f probe configure build_targets cuda_tests dry_cuda_test suite
step probe 60 probe
if [ -n "$dry" ]; then
  [ -x "$build/tests/test_train_cuda" ] || { echo "gpu-check: --dry: $build/tests/test_train_cuda not built" >&2; exit 1; }
  step cuda 300 dry_cuda_test || failed=1
  step ecosystem 240 env PYTHON="$py" bash "$src/scripts/gpu_ecosystem.sh" "$build" "$out/ecosystem" || failed=1
  step figures 120 env PYTHON="$py" bash "$src/bench/train_step_gpu.sh" "$build" "$out/figures.md" || failed=1
else
  find_torch
  # the image's Python runs the suite's references too (it has PyTorch and h5py)
  real_py=$(command -v "$py")
  export torch_prefix nccl_inc gloo_inc real_py
  if [ -d "$debs" ] && ls "$debs"/*.deb >/dev/null 2>&1; then
    step deps 90 bash "$src/scripts/gpu-deps.sh" install "$debs" "$prefix" || failed=1
    # in this shell, so every later step (the build's tools, the tests' loader) sees it
    [ -f "$prefix/env.sh" ] && . "$prefix/env.sh"
    # but not the image's Python: the carried Debian libraries (libssl, libz, libffi, ...)
    # stay out of its way behind a wrapper that drops them from the loader's path
    if [ -f "$prefix/env.sh" ]; then
      printf '#!/bin/sh\nunset LD_LIBRARY_PATH\nexec "%s" "$@"\n' "$real_py" > "$prefix/python3"
      chmod +x "$prefix/python3"
      py=$prefix/python3
      export py
    fi
  fi
  if step configure 180 configure && step build 360 build_targets; then
    wanted cuda && { step cuda 240 cuda_tests || failed=1; }
    wanted ecosystem && { step ecosystem 150 env PYTHON="$py" bash "$src/scripts/gpu_ecosystem.sh" "$build" "$out/ecosystem" || failed=1; }
    wanted figures && { step figures 200 env PYTHON="$py" bash "$src/bench/train_step_gpu.sh" "$build" "$out/figures.md" || failed=1; }
    wanted suite && { step suite 600 suite || failed=1; }
  else
    failed=1
  fi
fi
echo; cat "$summary"
bundle
exit $failed
