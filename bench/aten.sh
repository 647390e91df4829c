#!/usr/bin/env bash
# bench/aten.sh BUILD_DIR: the aten/ benchmarks. (1) C API overhead vs the same ATen calls
# from C++ (ratio per op; target < 1.05 for the 256x256 matmul); (2) achieved sgemm rate
# through our API and through OpenBLAS directly, which also writes BUILD/bench/gemm_peak.txt.
set -euo pipefail
build=${1:-build}
b="$build/bench"
for x in bench_aten_overhead bench_gemm_peak; do
  if [ ! -x "$b/$x" ]; then
    echo "aten.sh: $b/$x not built (needs -DSENTINEL_WITH_TORCH=ON)"; exit 0
  fi
done
echo "== aten C API overhead vs direct C++ ATen (alternating batches, best of 9) =="
out=$("$b/bench_aten_overhead")
grep '^#' <<<"$out"
printf '%-12s %12s %12s %8s\n' op "C API ns" "C++ ns" ratio
for k in add16 mul16 matmul256; do
  printf '%-12s %12s %12s %8s\n' "$k" "$(sed -n "s/^${k}_ns=//p" <<<"$out")" \
    "$(sed -n "s/^${k}_ref_ns=//p" <<<"$out")" "$(sed -n "s/^${k}_ratio=//p" <<<"$out")"
done
echo
echo "== sgemm peak =="
"$b/bench_gemm_peak" "$b/gemm_peak.txt"
echo "(written to $b/gemm_peak.txt)"
