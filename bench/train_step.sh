#!/usr/bin/env bash
# bench/train_step.sh BUILD_DIR: the trainer's full step (bench_train_step: batch assembly,
# forward + backward of chosen/rejected/reference, loss, clipping, AdamW) next to the same step
# in PyTorch eager (bench/ref/train_step_ref.py, /usr/bin/python3) in one run.
#  1. tiny and small seeded configs (full fine-tuning and LoRA r16) and the ~100M decoder
#     (LoRA r16), with and without gradient checkpointing: tokens/s, GFLOP/s as a fraction of
#     the sgemm peak (BUILD/bench/gemm_peak.txt, measured here by bench_gemm_peak when absent),
#     data wait as a share of the step, peak RSS; PyTorch with its defaults (as users run it)
#     and with sentinel-torch's process settings (glibc keeps freed blocks, passive OpenMP
#     wait, OpenBLAS workers that sleep at once: cli/torch_shim.c), and sentinel's ratio over
#     each.
#  2. gradient checkpointing at seq 1024: peak RSS and step time with and without it.
#  3. the batching modes (docs/train.md "Packed and shared-prefix batches") on tuples whose
#     three sequences share a context 4x longer than their responses (TS_BSEQ tokens, 512),
#     and the tuples/s ratio of packed and shared_prefix over padded.
# Env: TS_SEQ (256), TS_BATCH (8), TS_STEPS (8; TS_STEPS_TINY 40, TS_STEPS_100M 3),
# TS_THREADS (nproc: both sides), TS_BSEQ (512), TS_REPEAT (1: rounds per row of parts 1 and 3,
# each running ours and both PyTorch columns, or the three batching modes, in turn; the tables
# show each column's or mode's median),
# TS_CONFIGS ("tiny small 100m": part 1's configs), TS_SECTIONS ("step ckpt batching": the
# parts to run).
# One warm-up step before the timed ones on both sides. bench_train_step
# runs with the allocator setting `sentinel` applies at start (sn_tune_host_allocator;
# TS_DEFAULT_MALLOC=1 measures without it).
set -euo pipefail
build=${1:-build}
build=$(cd "$build" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
b="$build/bench/bench_train_step"
if [ ! -x "$b" ]; then
  echo "train_step.sh: $b not built (needs -DSENTINEL_WITH_TORCH=ON)"; exit 0
fi
seq=${TS_SEQ:-256}; batch=${TS_BATCH:-8}; threads=${TS_THREADS:-$(nproc)}
repeat=${TS_REPEAT:-1}; configs=${TS_CONFIGS:-tiny small 100m}
sections=${TS_SECTIONS:-step ckpt batching}
case $repeat in ''|*[!0-9]*|0) echo "train_step.sh: TS_REPEAT must be a count >= 1"; exit 2 ;; esac
have_torch=1
"${SENTINEL_PYTHON:-/usr/bin/python3}" -c 'import torch' 2>/dev/null || have_torch=0
get() { sed -n "s/^$1=//p" <<<"$2" | head -1; }
if [ ! -f "$build/bench/gemm_peak.txt" ] && [ -x "$build/bench/bench_gemm_peak" ]; then
  "$build/bench/bench_gemm_peak" "$build/bench/gemm_peak.txt" > /dev/null
fi
peak=$(sed -n 's/^gemm_peak_gflops=//p' "$build/bench/gemm_peak.txt" 2>/dev/null | head -1)
ours() {
  env OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}" \
      OPENBLAS_THREAD_TIMEOUT="${OPENBLAS_THREAD_TIMEOUT:-4}" "$b" --threads "$threads" "$@"
}
ref() { "${SENTINEL_PYTHON:-/usr/bin/python3}" "$src/bench/ref/train_step_ref.py" --threads "$threads" "$@"; }
# PyTorch with the process settings sentinel-torch runs with (sn_tune_host_allocator's glibc
# settings, libgomp's passive wait, OPENBLAS_THREAD_TIMEOUT), so the ratio isolates the code
# from the settings
ref_same() {
  env MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=1073741824 \
      MALLOC_TOP_PAD_=67108864 OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4 \
      "${SENTINEL_PYTHON:-/usr/bin/python3}" "$src/bench/ref/train_step_ref.py" --threads "$threads" "$@"
}
# median of the numbers on stdin
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2); else print "-" }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }

# timed steps: tiny's take ~0.1 s, so it gets more of them (TS_STEPS_TINY) to time about a second
steps_of() { if [ "$1" = tiny ]; then echo "${TS_STEPS_TINY:-40}"; else echo "${TS_STEPS:-8}"; fi; }
has() { case " $sections " in *" $1 "*) return 0 ;; esac; return 1; }
if has step; then
echo "== full training step: seq $seq, micro-batch $batch tuples (3 sequences each), $threads" \
     "threads; sgemm peak ${peak:-?} GFLOP/s; load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %-5s %-4s %9s %9s %7s %9s %7s | %9s %9s %8s %8s\n' config mode ckpt step_s \
  tokens/s %peak wait_frac rss_MB torch_tok/s same_tok/s vs_torch vs_same
row() {
  local cfg=$1 mode=$2 ck=$3 bt=$4 steps=$5
  local args=(--config "$cfg" --mode "$mode" --ckpt "$ck" --seq "$seq" --batch "$bt"
              --steps "$steps" --warmup 1)
  local o="" oi r s tps rt="-" st="-" ours_t="" ref_t="" same_t="" i
  # TS_REPEAT rounds, each running ours, PyTorch and PyTorch-same-settings in turn, so slow
  # drifts of the machine hit all three; each column is the median of its rounds, and the
  # other figures of ours come from its median round
  for ((i = 0; i < repeat; i++)); do
    oi=$(ours "${args[@]}")
    ours_t+="$(get tokens_per_s "$oi")"$'\n'
    if [ "$have_torch" = 1 ]; then
      r=$(ref "${args[@]}"); s=$(ref_same "${args[@]}")
      ref_t+="$(get tokens_per_s "$r")"$'\n'; same_t+="$(get tokens_per_s "$s")"$'\n'
    fi
    eval "o_$i=\$oi"
  done
  tps=$(printf '%s' "$ours_t" | median)
  for ((i = 0; i < repeat; i++)); do
    eval "oi=\$o_$i"
    if [ -z "$o" ] || awk -v a="$(get tokens_per_s "$oi")" -v m="$tps" \
         'BEGIN { exit !(a == m) }'; then o=$oi; fi
  done
  if [ "$have_torch" = 1 ]; then
    rt=$(printf '%s' "$ref_t" | median); st=$(printf '%s' "$same_t" | median)
  fi
  printf '%-6s %-5s %-4s %9s %9s %7s %9s %7s | %9s %9s %8s %8s\n' "$cfg" "$mode" "$ck" \
    "$(get step_s "$o")" "$tps" \
    "$(awk -v g="$(get gflops "$o")" -v p="${peak:-0}" 'BEGIN { if (p > 0) printf "%.0f%%", 100 * g / p; else print "-" }')" \
    "$(get data_wait_frac "$o")" "$(get peak_rss_mb "$o")" "$rt" "$st" \
    "$(ratio "$tps" "$rt")" "$(ratio "$tps" "$st")"
}
for cfg in $configs; do
  case $cfg in
    tiny|small)
      for mode in full lora; do
        for ck in 0 1; do row $cfg $mode $ck "$batch" "$(steps_of $cfg)"; done
      done ;;
    100m) for ck in 0 1; do row 100m lora $ck "$batch" "${TS_STEPS_100M:-3}"; done ;;
    *) echo "train_step.sh: TS_CONFIGS: unknown config '$cfg' (tiny, small, 100m)"; exit 2 ;;
  esac
done
[ "$have_torch" = 1 ] || echo "(PyTorch columns skipped: ${SENTINEL_PYTHON:-/usr/bin/python3} cannot import torch)"
echo "(median of $repeat round(s) per row)"
fi

if has ckpt; then
echo
echo "== gradient checkpointing at seq 1024 (one warm-up, ${TS_STEPS_100M:-3} timed steps)"
printf '%-6s %-5s %6s %10s %10s %10s %10s\n' config mode batch step_s step_s_ck rss_MB rss_MB_ck
for spec in "small full 8" "100m lora 2"; do
  read -r cfg mode bt <<<"$spec"
  a=$(ours --config "$cfg" --mode "$mode" --ckpt 0 --seq 1024 --batch "$bt" \
      --steps "${TS_STEPS_100M:-3}" --warmup 1)
  c=$(ours --config "$cfg" --mode "$mode" --ckpt 1 --seq 1024 --batch "$bt" \
      --steps "${TS_STEPS_100M:-3}" --warmup 1)
  printf '%-6s %-5s %6s %10s %10s %10s %10s' "$cfg" "$mode" "$bt" "$(get step_s "$a")" \
    "$(get step_s "$c")" "$(get peak_rss_mb "$a")" "$(get peak_rss_mb "$c")"
  awk -v ta="$(get step_s "$a")" -v tc="$(get step_s "$c")" -v ra="$(get peak_rss_mb "$a")" \
      -v rc="$(get peak_rss_mb "$c")" \
      'BEGIN { printf "   peak RSS %.2fx lower, step time %+.0f%%\n", ra / rc, 100 * (tc / ta - 1) }'
done
fi

bseq=${TS_BSEQ:-512}
if has batching; then
echo
echo "== batching, contexts 4x the responses (seq $bseq, micro-batch $batch, full mode)"
printf '%-6s %-5s %-14s %10s %10s %9s %8s %9s\n' config ckpt batching step_s tokens/s \
  tuples/s rss_MB vs_padded
for cfg in tiny small; do
  for ck in 0 1; do
    # TS_REPEAT rounds, each running the three modes in turn; each mode's row is its median
    # round by tuples/s, and vs_padded is the ratio of the medians
    declare -A runs=() tp=()
    for ((i = 0; i < repeat; i++)); do
      for bm in padded packed shared_prefix; do
        runs[$bm,$i]=$(ours --config $cfg --mode full --ckpt $ck --seq "$bseq" \
          --batch "$batch" --steps "$(steps_of $cfg)" --warmup 1 --batching $bm --ctx-ratio 4)
        tp[$bm]+="$(get tuples_per_s "${runs[$bm,$i]}")"$'\n'
      done
    done
    base=""
    for bm in padded packed shared_prefix; do
      tps=$(printf '%s' "${tp[$bm]}" | median)
      for ((i = 0; i < repeat; i++)); do
        out=${runs[$bm,$i]}
        awk -v a="$(get tuples_per_s "$out")" -v m="$tps" 'BEGIN { exit !(a == m) }' && break
      done
      [ -z "$base" ] && base=$tps
      printf '%-6s %-5s %-14s %10s %10s %9s %8s %9s\n' $cfg $ck $bm "$(get step_s "$out")" \
        "$(get tokens_per_s "$out")" "$tps" "$(get peak_rss_mb "$out")" "$(ratio "$tps" "$base")"
    done
    unset runs tp
  done
done
echo "(median of $repeat round(s) per row)"
fi
