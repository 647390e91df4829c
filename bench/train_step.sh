#!/usr/bin/env bash
# bench/train_step.sh BUILD_DIR: the trainer's full step (bench_train_step: batch assembly,
# forward + backward of chosen/rejected/reference, loss, clipping, AdamW) for the tiny and
# small seeded configs, full fine-tuning and LoRA r16, with and without gradient
# checkpointing: tokens/s, tuples/s, data wait as a share of the step, peak RSS. Sequences of
# TS_SEQ tokens (256), micro-batch TS_BATCH (8); each line is one process.
# Then the batching modes (docs/train.md "Packed and shared-prefix batches") on tuples whose
# three sequences share a context 4x longer than their responses (TS_BSEQ tokens, 512), full
# fine-tuning of each config, with and without checkpointing, and the tuples/s ratio of
# packed and shared_prefix over padded. TS_THREADS fixes the intra-op threads (0 = libtorch's
# default); on a shared, loaded machine 1 thread gives the steadiest ratios.
# Not here yet: the PyTorch-eager step beside it (bench/forward_backward.sh compares forward +
# backward alone).
set -euo pipefail
build=${1:-build}
b="$build/bench/bench_train_step"
if [ ! -x "$b" ]; then
  echo "train_step.sh: $b not built (needs -DSENTINEL_WITH_TORCH=ON)"; exit 0
fi
seq=${TS_SEQ:-256}; batch=${TS_BATCH:-8}
printf '%-6s %-5s %-5s %10s %10s %9s %10s %8s\n' config mode ckpt step_s tokens/s tuples/s \
  wait_frac rss_MB
for cfg in tiny small; do
  for mode in full lora; do
    for ck in 0 1; do
      out=$(env OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}" "$b" --config $cfg --mode $mode \
            --ckpt $ck --seq "$seq" --batch "$batch" --steps "${TS_STEPS:-4}" --warmup 1)
      get() { sed -n "s/^$1=//p" <<<"$out"; }
      printf '%-6s %-5s %-5s %10s %10s %9s %10s %8s\n' $cfg $mode $ck "$(get step_s)" \
        "$(get tokens_per_s)" "$(get tuples_per_s)" "$(get data_wait_frac)" "$(get peak_rss_mb)"
    done
  done
done

bseq=${TS_BSEQ:-512}
echo
echo "batching, contexts 4x the responses (seq $bseq, micro-batch $batch, full mode)"
printf '%-6s %-5s %-14s %10s %10s %9s %8s %9s\n' config ckpt batching step_s tokens/s \
  tuples/s rss_MB vs_padded
for cfg in tiny small; do
  for ck in 0 1; do
    base=""
    for bm in padded packed shared_prefix; do
      out=$(env OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}" "$b" --config $cfg --mode full \
            --ckpt $ck --seq "$bseq" --batch "$batch" --steps "${TS_STEPS:-4}" --warmup 1 \
            --batching $bm --ctx-ratio 4 --threads "${TS_THREADS:-0}")
      get() { sed -n "s/^$1=//p" <<<"$out"; }
      tps=$(get tuples_per_s)
      [ -z "$base" ] && base=$tps
      printf '%-6s %-5s %-14s %10s %10s %9s %8s %9s\n' $cfg $ck $bm "$(get step_s)" \
        "$(get tokens_per_s)" "$tps" "$(get peak_rss_mb)" \
        "$(awk -v a="$tps" -v b="$base" 'BEGIN { printf "%.2fx", a / b }')"
    done
  done
done
