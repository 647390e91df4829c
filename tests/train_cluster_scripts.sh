#!/usr/bin/env bash
# tests/train_cluster_scripts.sh: recipes/cluster/train-torchrun.sh and train-srun.sbatch run as
# their launchers would run them, with stand-ins for `torchrun`, `srun` and `scontrol` on PATH
# that start the ranks with the environment the real ones give (torchrun: RANK, WORLD_SIZE,
# LOCAL_RANK, MASTER_ADDR, MASTER_PORT; srun: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID).
# Each script trains 2 steps with 2 ranks (Gloo, DEVICE=cpu) on the trained_run fixture's
# shards: rank 0 alone writes OUT, which records world_size 2 and one metrics line per step.
# With DEVICE=cuda on a libtorch without CUDA, the script's run stops with the device error.
# Env (from ctest): SENTINEL_BIN, SENTINEL_SRC, SENTINEL_TMP.
set -euo pipefail
bin=${SENTINEL_BIN:?}
src=${SENTINEL_SRC:?}
tmp="${SENTINEL_TMP:-/tmp}/train_cluster_scripts"
shards="${SENTINEL_TMP:-/tmp}/run_pipeline/a/shards"
rm -rf "$tmp" && mkdir -p "$tmp/bin"
fail() { echo "FAIL: $*"; exit 1; }
[ -f "$shards/manifest.json" ] || fail "no $shards (the trained_run fixture)"

ln -s "$bin" "$tmp/bin/sentinel"
# torchrun --no-python --nproc-per-node=N ... --master-addr=A --master-port=P CMD...
cat > "$tmp/bin/torchrun" <<'EOF'
#!/usr/bin/env bash
n=1; addr=127.0.0.1; port=29500
while [ $# -gt 0 ]; do
  case "$1" in
    --nproc-per-node=*) n=${1#*=} ;;
    --master-addr=*) addr=${1#*=} ;;
    --master-port=*) port=${1#*=} ;;
    --nnodes=*|--node-rank=*|--no-python) ;;
    --*) echo "torchrun stand-in: unexpected $1" >&2; exit 2 ;;
    *) break ;;  # the program and its arguments
  esac
  shift
done
pids=()
for ((r = 0; r < n; r++)); do
  RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r MASTER_ADDR=$addr MASTER_PORT=$port "$@" &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=$?; done
exit $rc
EOF
# srun [--kill-on-bad-exit=1] CMD...: SLURM_NTASKS tasks
cat > "$tmp/bin/srun" <<'EOF'
#!/usr/bin/env bash
[ "${1:-}" = --kill-on-bad-exit=1 ] && shift
pids=()
for ((r = 0; r < SLURM_NTASKS; r++)); do
  SLURM_PROCID=$r SLURM_LOCALID=$r "$@" &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=$?; done
exit $rc
EOF
printf '#!/bin/sh\necho 127.0.0.1\n' > "$tmp/bin/scontrol"
chmod +x "$tmp/bin/torchrun" "$tmp/bin/srun" "$tmp/bin/scontrol"
export PATH="$tmp/bin:$PATH"
cat > "$tmp/recipe.json" <<'EOF'
{"train": {"base": "tiny", "micro_batch": 2, "grad_accum": 1, "max_steps": 2, "eval_every": 0,
           "save_every": 0, "threads": 1, "seed": 7}}
EOF
free_port() { "${SENTINEL_PYTHON:-/usr/bin/python3}" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

check_out() {  # OUT: written by rank 0 for a world of 2, one metrics line per step
  local out=$1
  "${SENTINEL_PYTHON:-/usr/bin/python3}" - "$out" <<'PY' || fail "$out"
import json, sys
out = sys.argv[1]
s = json.load(open(out + "/train_settings.json"))
assert s["world_size"] == 2, s["world_size"]
steps = [json.loads(l)["step"] for l in open(out + "/metrics.jsonl") if '"eval_' not in l]
assert steps == [1, 2], steps
assert open(out + "/latest").read().strip().endswith("checkpoint-2")
PY
}

MASTER_PORT=$(free_port) DEVICE=cpu sh "$src/recipes/cluster/train-torchrun.sh" 2 \
  "$tmp/recipe.json" "$shards" "$tmp/torchrun" > "$tmp/torchrun.log" 2>&1 ||
  { cat "$tmp/torchrun.log"; fail "train-torchrun.sh"; }
[ "$(grep -c '^trained 2 steps' "$tmp/torchrun.log")" = 2 ] ||
  { cat "$tmp/torchrun.log"; fail "torchrun: both ranks should finish 2 steps"; }
check_out "$tmp/torchrun"

SLURM_NTASKS=2 SLURM_JOB_NODELIST=node1 SLURM_CPUS_PER_TASK=1 MASTER_PORT=$(free_port) \
  DEVICE=cpu bash "$src/recipes/cluster/train-srun.sbatch" "$tmp/recipe.json" "$shards" \
  "$tmp/srun" > "$tmp/srun.log" 2>&1 || { cat "$tmp/srun.log"; fail "train-srun.sbatch"; }
check_out "$tmp/srun"

# the device reaches the trainer: CUDA on a CPU-only libtorch is refused (exit 3)
if ! command -v nvidia-smi > /dev/null; then
  rc=0
  MASTER_PORT=$(free_port) DEVICE=cuda sh "$src/recipes/cluster/train-torchrun.sh" 1 \
    "$tmp/recipe.json" "$shards" "$tmp/cuda" > "$tmp/cuda.log" 2>&1 || rc=$?
  [ "$rc" = 3 ] && grep -q "train.device: device 'cuda'" "$tmp/cuda.log" ||
    { cat "$tmp/cuda.log"; fail "DEVICE=cuda without CUDA: exit $rc"; }
fi
echo "ok: train-torchrun.sh and train-srun.sbatch train with 2 ranks; DEVICE reaches the trainer"
