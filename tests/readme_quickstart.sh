#!/usr/bin/env bash
# tests/readme_quickstart.sh: the quickstart as `make demo` runs it, into a temp directory, then
# scripts/readme_example.py --check against README.md (tests/readme.cmake). The run's seeds are
# fixed, so every figure but the timings is the same on every run. Env (from ctest):
# SENTINEL_BIN, SENTINEL_SRC, SENTINEL_TMP.
set -euo pipefail
bin=${SENTINEL_BIN:?}
src=${SENTINEL_SRC:?}
out="${SENTINEL_TMP:-/tmp}/readme_quickstart"
fail() { echo "FAIL: $*"; exit 1; }
# The figures come from a training run, so they depend on the kernels OpenBLAS and ATen pick
# for the CPU (docs/eval.md, "The quickstart on validation"). The README's block was made with
# these, which every AVX2 or AVX-512 x86-64 CPU runs, so the check holds wherever CI runs,
# whatever the machine's own environment sets.
export OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=512 ATEN_CPU_CAPABILITY=avx2
rm -rf "$out"
"$bin" run "$src/recipes/quickstart.json" -o "$out" > "$out.log" 2>&1 \
  || { tail -50 "$out.log"; fail "the quickstart run"; }
[ -s "$out/summary.txt" ] || fail "no $out/summary.txt"
# what the run prints at the end is the summary, and it is short (docs/run.md "Summary")
n=$(wc -l < "$out/summary.txt")
[ "$n" -le 25 ] || { cat "$out/summary.txt"; fail "the summary is $n lines (at most 25)"; }
tail -n "$n" "$out.log" | cmp -s - "$out/summary.txt" \
  || { tail -n "$n" "$out.log"; fail "the run's output does not end with summary.txt"; }
"${SENTINEL_PYTHON:-/usr/bin/python3}" "$src/scripts/readme_example.py" "$out" --readme "$src/README.md" --check
echo "ok: readme_worked_example"
