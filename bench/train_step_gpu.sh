#!/usr/bin/env bash
# bench/train_step_gpu.sh BUILD_DIR [OUT_FILE]: the trainer's full step on a CUDA GPU
# (bench_train_step --device cuda, docs/train.md "GPUs") next to the same step in PyTorch eager
# (bench/ref/train_step_ref.py --device cuda) in one run, with the GPU's bf16 GEMM peak measured
# in the same run:
#  1. torch.matmul of two 8192x8192 bf16 matrices: 3 warm-ups, the mean of 10 timed with CUDA
#     events, as TFLOP/s;
#  2. bf16 (docs/train.md "bf16": f32 master weights, bf16 products) rows: the ~100M decoder
#     with LoRA r16, and the wide decoder (hidden 2048, 4 layers; bench_train_step.c) with LoRA
#     r16 and fully fine-tuned; then the ~100M LoRA step in f32 for reference, when the run's
#     time budget leaves room for it;
#  3. a markdown table: tokens/s of ours and PyTorch and their ratio, our TFLOP/s
#     (bench_train_step's FLOP count: the products the step computes), and that as a fraction
#     of the datasheet's dense bf16 peak and of the measured matmul peak (MFU).
# The table goes to stdout and, row by row as they finish, to OUT_FILE when given (a run cut
# short keeps the rows it measured). A failed run prints its last error line in its row and
# the script goes on to the next.
# Without a usable GPU (bench_train_step built against a libtorch without CUDA, or a Python
# whose torch sees no CUDA device) it prints `train_step_gpu: skipped: <reason>` and exits 0.
# Env: PYTHON (python3; the torch the PyTorch column and the matmul peak run on), TSG_DEVICE
# (cuda), TSG_SEQ (512), TSG_BATCH (16 tuples: 48 sequences, 24,576 tokens a step),
# TSG_STEPS (10 timed steps after TSG_WARMUP, 2), TSG_PEAK_TFLOPS (989: the H200 datasheet's
# dense bf16 figure), TSG_BUDGET (100 s: the f32 row runs only while at least 20 s of it are
# left), TSG_TIMEOUT (60 s: the limit of each process), TSG_DEADLINE (200 s: no process runs
# past it, so a hung one cannot hold the GPU for long). Progress and each run's raw key=value
# lines go to stderr.
set -uo pipefail
case ${1:-} in -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
if [ $# -lt 1 ]; then
  echo "usage: bench/train_step_gpu.sh BUILD_DIR [OUT_FILE]" >&2; exit 2
fi
build=$(cd "$1" && pwd) || exit 2
out=${2:-}
src=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python3}
device=${TSG_DEVICE:-cuda}
seq=${TSG_SEQ:-512}; batch=${TSG_BATCH:-16}; steps=${TSG_STEPS:-10}; warm=${TSG_WARMUP:-2}
sheet=${TSG_PEAK_TFLOPS:-989}; budget=${TSG_BUDGET:-100}; tmo=${TSG_TIMEOUT:-60}
deadline=${TSG_DEADLINE:-200}
b="$build/bench/bench_train_step"
skip() {
  echo "train_step_gpu: skipped: $*"
  if [ -n "$out" ]; then echo "train_step_gpu: skipped: $*" > "$out"; fi
  exit 0
}
last_line() { grep -v '^[[:space:]]*$' | tail -1; }
# a failed process's cell: its exit status and last stderr line ("timed out" for timeout's 124)
failed() {
  if [ "$1" = 124 ]; then echo "timed out"; return; fi
  echo "failed ($1): $(last_line < "$2" | tr '|' '/')"
}
get() { sed -n "s/^$1=//p" <<<"$2" | head -1; }
log() { echo "train_step_gpu: $*" >&2; }
# seconds a process may run: TSG_TIMEOUT, cut to what is left before TSG_DEADLINE
limit() { local l=$((deadline - SECONDS)); if [ "$l" -gt "$tmo" ]; then l=$tmo; fi; echo "$l"; }

case $device in
  cuda|cuda:*) ;;
  *) echo "train_step_gpu: TSG_DEVICE must be cuda or cuda:N"; exit 2 ;;
esac
[ -x "$b" ] || skip "$b not built (needs -DSENTINEL_WITH_TORCH=ON)"
# --steps 0: bench_train_step only opens the device (exit 3 when its libtorch has no CUDA)
probe=$("$b" --device "$device" --steps 0 2>&1) ||
  skip "$(last_line <<<"$probe")"
libtorch=$(get libtorch "$probe")
pyprobe=$("$py" -c 'import sys, torch
if not torch.cuda.is_available():
    sys.exit("torch %s sees no CUDA device" % torch.__version__)
print(torch.__version__)' 2>&1) || skip "$py: $(last_line <<<"$pyprobe")"
torch_v=$(last_line <<<"$pyprobe")

tmp=$(mktemp -d /tmp/train_step_gpu.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
[ -n "$out" ] && : > "$out"
emit() { printf '%s\n' "$*"; if [ -n "$out" ]; then printf '%s\n' "$*" >> "$out"; fi; }

# 1. the bf16 GEMM peak of this GPU, now, with the same torch as the PyTorch column
peak_out=$(timeout "$(limit)" "$py" - "$device" 2>&1 <<'EOF'
import sys
import torch
dev = torch.device(sys.argv[1])
n = 8192
a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
c = torch.empty(n, n, device=dev, dtype=torch.bfloat16)
for _ in range(3):
    torch.matmul(a, b, out=c)
torch.cuda.synchronize(dev)
ms = []
for _ in range(10):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    torch.matmul(a, b, out=c)
    e.record()
    e.synchronize()
    ms.append(s.elapsed_time(e))
mean = sum(ms) / len(ms)
print("gpu=%s" % torch.cuda.get_device_name(dev))
print("matmul_ms=%.3f" % mean)
print("matmul_tflops=%.1f" % (2.0 * n ** 3 / (mean / 1e3) / 1e12))
EOF
)
peak=$(get matmul_tflops "$peak_out")
gpu=$(get gpu "$peak_out")
[ -n "$peak" ] || log "matmul peak failed: $(last_line <<<"$peak_out")"

emit "## Training step on ${gpu:-$device}: sentinel vs PyTorch eager"
emit ""
emit "seq $seq, micro-batch $batch tuples ($((3 * batch)) sequences, $((3 * batch * seq)) tokens" \
     "a step), $warm warm-up + $steps timed steps, no checkpointing; libtorch $libtorch" \
     "(ours), torch $torch_v (PyTorch eager, bench/ref/train_step_ref.py); bf16 matmul peak" \
     "(8192^3, mean of 10): ${peak:-?} TFLOP/s; datasheet dense bf16: $sheet TFLOP/s."
emit ""
emit "| config | mode | dtype | step ms ours | step ms PyTorch | tokens/s ours |" \
     "tokens/s PyTorch | ratio | TFLOP/s ours | MFU (datasheet $sheet) |" \
     "MFU (matmul ${peak:-?}) |"
emit "|---|---|---|---|---|---|---|---|---|---|---|"

ms() { awk -v s="$1" 'BEGIN { printf "%.1f", 1e3 * s }'; }
# GFLOP/s as a percentage of a TFLOP/s peak
mfu() { awk -v g="$1" -v p="$2" 'BEGIN { printf "%.1f%%", 100 * g / 1e3 / p }'; }
# one row: ours, then PyTorch, on the same shapes
row() {
  local cfg=$1 mode=$2 dt=$3 o r rc_o rc_r
  local args=(--config "$cfg" --mode "$mode" --dtype "$dt" --device "$device" --seq "$seq"
              --batch "$batch" --steps "$steps" --warmup "$warm" --ckpt 0)
  if [ $((deadline - SECONDS)) -lt 10 ]; then
    emit "| $cfg | $mode | $dt | skipped: past the ${deadline} s deadline | | | | | | | |"
    return
  fi
  log "$cfg $mode $dt: sentinel ($SECONDS s in)"
  o=$(timeout "$(limit)" "$b" "${args[@]}" 2>"$tmp/ours.err"); rc_o=$?
  log "$cfg $mode $dt: PyTorch ($SECONDS s in)"
  r=$(timeout "$(limit)" "$py" "$src/bench/ref/train_step_ref.py" "${args[@]}" \
      2>"$tmp/ref.err"); rc_r=$?
  local ot="-" rt="-" os="-" rs="-" tf="-" m1="-" m2="-" ratio="-"
  if [ $rc_o = 0 ]; then
    ot=$(get tokens_per_s "$o"); os=$(ms "$(get step_s "$o")")
    local g; g=$(get gflops "$o")
    tf=$(awk -v g="$g" 'BEGIN { printf "%.1f", g / 1e3 }')
    m1=$(mfu "$g" "$sheet")
    [ -n "$peak" ] && m2=$(mfu "$g" "$peak")
  else
    ot=$(failed "$rc_o" "$tmp/ours.err")
  fi
  if [ $rc_r = 0 ]; then
    rt=$(get tokens_per_s "$r"); rs=$(ms "$(get step_s "$r")")
  else
    rt=$(failed "$rc_r" "$tmp/ref.err")
  fi
  if [ $rc_o = 0 ] && [ $rc_r = 0 ]; then
    ratio=$(awk -v a="$ot" -v b="$rt" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }')
  fi
  # the raw figures, for the log
  log "ours: $(tr '\n' ' ' <<<"$o")"
  log "PyTorch: $(tr '\n' ' ' <<<"$r")"
  emit "| $cfg | $mode | $dt | $os | $rs | $ot | $rt | $ratio | $tf | $m1 | $m2 |"
}

row 100m lora bf16
row wide lora bf16
row wide full bf16
if [ "$SECONDS" -le $((budget - 20)) ]; then
  row 100m lora f32
else
  emit "| 100m | lora | f32 | skipped: $SECONDS s spent of the ${budget} s budget | | | | | | | |"
fi
emit ""
emit "tokens/s counts every token of the 3 sequences of each tuple (no padding here). TFLOP/s:"
emit "bench_train_step's count of the products the step computes (bench/bench_train_step.c;"
emit "its last layer runs on the read-out tokens only, PyTorch's on every token). f32 rows run"
emit "true f32 products on both sides (TF32 off, both libraries' default), so their MFU is"
emit "against the bf16 peaks too. ${SECONDS} s for the whole run."
