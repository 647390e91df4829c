#!/usr/bin/env bash
# tests/stats_notebook.sh MODE: the group-dynamics notebook.
#   run    simulate the quickstart recipe with the built-in sim agents, run `sentinel stats`,
#          then execute notebooks/01_group_dynamics.ipynb headless with Debian's python
#          (/usr/bin/python3: matplotlib) through nbconvert; fails on any cell error and checks
#          that every figure was written.
#   clean  the committed notebook carries no outputs and no execution counts.
# Env (from ctest): SENTINEL_BIN, SENTINEL_SRC, SENTINEL_TMP.
set -euo pipefail
mode=${1:?usage: stats_notebook.sh run|clean}
src=${SENTINEL_SRC:?}
nb="$src/notebooks/01_group_dynamics.ipynb"
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
print(f"{sys.argv[1]}: {len(nb['cells'])} cells, no outputs")
PY
  exit 0
fi

bin=${SENTINEL_BIN:?}
tmp="${SENTINEL_TMP:-/tmp}/stats_notebook"
rm -rf "$tmp" && mkdir -p "$tmp"
"$bin" simulate --help > /dev/null || { echo "sentinel simulate is not available"; exit 1; }
"$bin" simulate --recipe "$src/recipes/quickstart.json" -o "$tmp/traj" --progress none \
  > "$tmp/simulate.log" 2>&1 || { cat "$tmp/simulate.log"; exit 1; }
"$bin" stats "$tmp/traj" --by scenario,strategy,n_honest,n_adversaries,panel \
  --json "$tmp/stats.json" --quiet --progress none

# A kernel spec that runs Debian's python, first on JUPYTER_PATH whatever the user has installed.
mkdir -p "$tmp/jupyter/kernels/python3"
cat > "$tmp/jupyter/kernels/python3/kernel.json" <<JSON
{"argv": ["$py", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
 "display_name": "Python 3 (Debian)", "language": "python"}
JSON
export JUPYTER_PATH="$tmp/jupyter" PYDEVD_DISABLE_FILE_VALIDATION=1 SENTINEL_STATS_JSON="$tmp/stats.json" \
       SENTINEL_FIG_DIR="$tmp/fig" JUPYTER_CONFIG_DIR="$tmp/jupyter-config" \
       JUPYTER_RUNTIME_DIR="$tmp/jupyter-runtime" IPYTHONDIR="$tmp/ipython"
"$py" -m nbconvert --to notebook --execute --ExecutePreprocessor.kernel_name=python3 \
  --ExecutePreprocessor.timeout=300 --output-dir "$tmp" --output executed.ipynb "$nb"
for f in sdi_fat consensus dc_dm flip_rate; do
  [ -s "$tmp/fig/$f.png" ] || { echo "figure $f.png was not written"; exit 1; }
done
"$py" - "$tmp/executed.ipynb" <<'PY'
import json, sys
nb = json.load(open(sys.argv[1]))
errors = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])
          if o.get("output_type") == "error"]
text = "".join("".join(o.get("text", "")) for c in nb["cells"] if c["cell_type"] == "code"
               for o in c.get("outputs", []))
if errors or "agree with an independent implementation" not in text:
    sys.exit("notebook ran with errors or without the Wilson cross-check")
print("notebook executed:", text.splitlines()[0])
PY
