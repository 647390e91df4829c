#!/usr/bin/env bash
# tests/notebook_run.sh MODE NOTEBOOK [FIGURE|MARKER]...: a notebook of notebooks/ on a trained run.
#   run    execute NOTEBOOK top to bottom, headless, with Debian's python (/usr/bin/python3:
#          h5py, matplotlib, numpy) through nbconvert, on the run directory SENTINEL_RUN_DIR
#          (default: the trained_run fixture of tests/run.cmake, $SENTINEL_TMP/run_pipeline/a).
#          Fails on any cell error (the notebooks assert their own sanity checks), when a
#          figure NAME (written as $fig_dir/NAME.png) is missing, or when a marker text ('~TEXT')
#          does not appear in the cells' output.
#   clean  the committed notebook carries no outputs and no execution counts.
# Env (from ctest): SENTINEL_BIN, SENTINEL_SRC, SENTINEL_TMP; SENTINEL_RUN_DIR (optional).
set -euo pipefail
mode=${1:?usage: notebook_run.sh run|clean NOTEBOOK [FIGURE|~MARKER]...}
nb=${2:?usage: notebook_run.sh run|clean NOTEBOOK [FIGURE|~MARKER]...}
shift 2
py="${SENTINEL_PYTHON:-/usr/bin/python3}"

if [ "$mode" = clean ]; then
  "$py" - "$nb" <<'PY'
import json, sys
nb = json.load(open(sys.argv[1]))
bad = [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"
       and (c.get("outputs") or c.get("execution_count") is not None)]
if bad:
    sys.exit(f"{sys.argv[1]}: cells {bad} carry outputs or execution counts; strip them "
             "(jupyter nbconvert --clear-output --inplace)")
code = sum(c["cell_type"] == "code" for c in nb["cells"])
if code == 0:
    sys.exit(f"{sys.argv[1]}: no code cell")
print(f"{sys.argv[1]}: {len(nb['cells'])} cells, no outputs")
PY
  exit 0
fi

[ "$mode" = run ] || { echo "unknown mode '$mode'"; exit 2; }
: "${SENTINEL_BIN:?}"
name=$(basename "$nb" .ipynb)
tmp="${SENTINEL_TMP:-/tmp}/notebook_$name"
run_dir=${SENTINEL_RUN_DIR:-${SENTINEL_TMP:-/tmp}/run_pipeline/a}
[ -s "$run_dir/run.json" ] || { echo "no trained run in $run_dir (the trained_run fixture: ctest -R run_pipeline)"; exit 1; }
rm -rf "$tmp" && mkdir -p "$tmp"

# A kernel spec that runs Debian's python, first on JUPYTER_PATH whatever the user has installed.
mkdir -p "$tmp/jupyter/kernels/python3"
cat > "$tmp/jupyter/kernels/python3/kernel.json" <<JSON
{"argv": ["$py", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
 "display_name": "Python 3 (Debian)", "language": "python"}
JSON
export JUPYTER_PATH="$tmp/jupyter" PYDEVD_DISABLE_FILE_VALIDATION=1 SENTINEL_RUN_DIR="$run_dir" \
       SENTINEL_BIN SENTINEL_FIG_DIR="$tmp/fig" JUPYTER_CONFIG_DIR="$tmp/jupyter-config" \
       JUPYTER_RUNTIME_DIR="$tmp/jupyter-runtime" IPYTHONDIR="$tmp/ipython" MPLBACKEND=Agg
"$py" -m nbconvert --to notebook --execute --ExecutePreprocessor.kernel_name=python3 \
  --ExecutePreprocessor.timeout=300 --output-dir "$tmp" --output executed.ipynb "$nb"

markers=()
for want in "$@"; do
  case "$want" in
    "~"*) markers+=("${want#\~}") ;;
    *) [ -s "$tmp/fig/$want.png" ] || { echo "figure $want.png was not written"; exit 1; } ;;
  esac
done
"$py" - "$tmp/executed.ipynb" "${markers[@]}" <<'PY'
import json, sys
nb = json.load(open(sys.argv[1]))
outs = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]
errors = [o for o in outs if o.get("output_type") == "error"]
text = "".join("".join(o.get("text", "")) for o in outs)
if errors:
    sys.exit(f"notebook ran with errors: {errors[0].get('ename')}: {errors[0].get('evalue')}")
missing = [m for m in sys.argv[2:] if m not in text]
if missing:
    print(text)
    sys.exit(f"notebook output lacks {missing}")
print(text)
print(f"notebook executed, {len(outs)} outputs")
PY
