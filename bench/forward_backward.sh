#!/usr/bin/env bash
# bench/forward_backward.sh BUILD_DIR: reward-model training-step throughput (issue 5).
# For the tiny config and the ~100M config (8 layers, hidden 768, 12 heads, 4 KV heads,
# intermediate 2048, vocab 32000), seq 512, batch 8, LoRA r16 on all seven projections:
# forward+backward tokens/s of sentinel (bench_forward_backward) and of the same model in
# PyTorch eager (bench/ref/forward_backward_ref.py, /usr/bin/python3) with the same thread
# count, the ratio, achieved GFLOP/s as a fraction of BUILD/bench/gemm_peak.txt (written by
# bench/aten.sh), peak RSS of both processes, the BLAS each mapped, and where the time goes.
# sentinel keeps freed activation blocks in the process (sn_tune_host_allocator) and runs
# OpenMP with the passive wait policy (set by `sentinel` for sentinel-torch); PyTorch is
# measured both with the defaults (as users run it) and with the same two settings.
# Env: FB_ITERS_TINY (5), FB_ITERS_100M (3), FB_WARMUP_100M (1), FB_THREADS (default: nproc,
# the thread count bench_gemm_peak measures the peak with).
set -euo pipefail
build=${1:-build}
b="$build/bench/bench_forward_backward"
src=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -x "$b" ]; then
  echo "forward_backward.sh: $b not built (needs -DSENTINEL_WITH_TORCH=ON)"; exit 0
fi
peak=""
if [ -f "$build/bench/gemm_peak.txt" ]; then
  peak=$(sed -n 's/^gemm_peak_gflops=//p' "$build/bench/gemm_peak.txt" | head -1)
fi
have_torch=1
"${SENTINEL_PYTHON:-/usr/bin/python3}" -c 'import torch' 2>/dev/null || have_torch=0
get() { sed -n "s/^$1=//p" <<<"$2" | head -1; }

run_config() {
  local cfg=$1 iters=$2 warm=$3
  local threads_arg=()
  threads_arg=(--threads "${FB_THREADS:-$(nproc)}")
  local ours ref=""
  # OMP_WAIT_POLICY as `sentinel` sets it for sentinel-torch (cli/torch_shim.c)
  ours=$(env OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}" "$b" --config "$cfg" --seq 512 \
         --batch 8 --rank 16 --iters "$iters" --warmup "$warm" "${threads_arg[@]}")
  local th; th=$(get threads "$ours")
  local ref_tuned=""
  if [ "$have_torch" = 1 ]; then
    ref=$("${SENTINEL_PYTHON:-/usr/bin/python3}" "$src/bench/ref/forward_backward_ref.py" --config "$cfg" --seq 512 \
          --batch 8 --rank 16 --iters "$iters" --warmup "$warm" --threads "$th")
    # PyTorch again with the process settings sentinel-torch runs with: glibc told what
    # sn_tune_host_allocator tells it, and libgomp's passive wait policy (cli/torch_shim.c),
    # so the second ratio isolates the code from the settings.
    ref_tuned=$(env MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=1073741824 \
          MALLOC_TOP_PAD_=67108864 OMP_WAIT_POLICY=PASSIVE "${SENTINEL_PYTHON:-/usr/bin/python3}" "$src/bench/ref/forward_backward_ref.py" \
          --config "$cfg" --seq 512 --batch 8 --rank 16 --iters "$iters" --warmup "$warm" \
          --threads "$th")
  fi
  echo "== $cfg: seq 512, batch 8, LoRA r16 on q,k,v,o,gate,up,down; threads $th =="
  echo "params $(get params "$ours"), trainable $(get trainable "$ours"), " \
       "$(get gflop_per_step "$ours") GFLOP per step (matmuls)"
  local tps gf; tps=$(get tokens_per_s "$ours"); gf=$(get gflops "$ours")
  printf '%-16s %12s %10s %10s %10s %12s\n' impl tokens/s step_s fwd_s bwd_s peak_rss_MB
  printf '%-16s %12s %10s %10s %10s %12s\n' sentinel "$tps" "$(get step_s "$ours")" \
    "$(get fwd_s "$ours")" "$(get bwd_s "$ours")" "$(get peak_rss_mb "$ours")"
  if [ -n "$ref" ]; then
    local rtps; rtps=$(get tokens_per_s "$ref")
    printf '%-16s %12s %10s %10s %10s %12s\n' pytorch_eager "$rtps" "$(get step_s "$ref")" \
      "$(get fwd_s "$ref")" "$(get bwd_s "$ref")" "$(get peak_rss_mb "$ref")"
    local ttps; ttps=$(get tokens_per_s "$ref_tuned")
    printf '%-16s %12s %10s %10s %10s %12s\n' pytorch_samesets "$ttps" \
      "$(get step_s "$ref_tuned")" "$(get fwd_s "$ref_tuned")" "$(get bwd_s "$ref_tuned")" \
      "$(get peak_rss_mb "$ref_tuned")"
    awk -v a="$tps" -v b="$rtps" 'BEGIN { printf "ratio sentinel/pytorch eager (defaults): %.2fx\n", a / b }'
    awk -v a="$tps" -v b="$ttps" \
      'BEGIN { printf "ratio sentinel/pytorch eager (same malloc and OpenMP settings): %.2fx\n", a / b }'
  else
    echo "pytorch_eager: skipped (${SENTINEL_PYTHON:-/usr/bin/python3} cannot import torch)"
  fi
  if [ -n "$peak" ]; then
    awk -v g="$gf" -v p="$peak" \
      'BEGIN { printf "achieved %.1f GFLOP/s = %.1f%% of the sgemm peak (%.1f GFLOP/s)\n", g, 100 * g / p, p }'
  else
    echo "achieved $gf GFLOP/s (no $build/bench/gemm_peak.txt: run bench/aten.sh for the peak)"
  fi
  echo "sentinel forward per step: projections+LoRA $(get fwd_linear_s "$ours") s," \
       "RoPE+attention $(get fwd_attention_s "$ours") s, RMSNorm $(get fwd_norm_s "$ours") s," \
       "other $(get fwd_other_s "$ours") s, outside layers $(get fwd_outside_layers_s "$ours") s"
  if [ -n "$ref" ]; then
    echo "pytorch profile (one step, self CPU): matmul $(get prof_matmul_s "$ref") s," \
         "softmax+mask $(get prof_softmax_mask_s "$ref") s, other $(get prof_other_s "$ref") s"
    echo "blas: sentinel $(get blas "$ours"); pytorch $(get blas "$ref")"
  else
    echo "blas: sentinel $(get blas "$ours")"
  fi
  echo
}

# The ~100M step is ~1 TFLOP: one warm-up step (the first step pays the fresh page faults and
# is much slower on both sides) and three timed steps keep the run to several minutes.
run_config tiny "${FB_ITERS_TINY:-5}" 1
run_config 100m "${FB_ITERS_100M:-3}" "${FB_WARMUP_100M:-1}"
