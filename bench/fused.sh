#!/usr/bin/env bash
# bench/fused.sh BUILD_DIR: the fused CPU kernels of aten/ (RMSNorm, rotary, SwiGLU) against the
# same formulas composed of plain ATen ops, forward and forward+backward, at the ~100M config's
# shapes (bench/bench_fused.c), 2 threads, best of 5. Ratios are from one run.
set -eu
build=${1:-build}
bin="$build/bench/bench_fused"
if [ ! -x "$bin" ]; then
  echo "fused.sh: $bin not built (needs -DSENTINEL_WITH_TORCH=ON)"; exit 0
fi
"$bin" "${FUSED_THREADS:-2}" "${FUSED_REPS:-5}"
