#!/bin/sh
# recipes/cluster/train-torchrun.sh: data-parallel `sentinel train` launched by torchrun
# (docs/train.md, "Data parallelism"). torchrun sets RANK / WORLD_SIZE / LOCAL_RANK /
# MASTER_ADDR / MASTER_PORT for each process; --no-python runs our binary directly.
# The global batch is train.micro_batch x train.grad_accum x processes; rank 0 writes OUT.
#
#   one machine, 4 processes:   recipes/cluster/train-torchrun.sh 4 recipe.json shards/ out/
#   several machines: run it on each with NNODES, NODE_RANK and MASTER_ADDR set.
#   (On one machine without torchrun: sentinel train ... --nproc 4.)
#   DEVICE=cuda: each process trains on GPU LOCAL_RANK, NCCL between them (default cpu, Gloo).
set -eu
NPROC=${1:?processes per node}; RECIPE=${2:?recipe}; SHARDS=${3:?shards}; OUT=${4:?out dir}
exec torchrun --no-python --nproc-per-node="$NPROC" --nnodes="${NNODES:-1}" \
     --node-rank="${NODE_RANK:-0}" --master-addr="${MASTER_ADDR:-127.0.0.1}" \
     --master-port="${MASTER_PORT:-29500}" \
     sentinel train --recipe "$RECIPE" -i "$SHARDS" -o "$OUT" --progress plain \
     --device "${DEVICE:-cpu}"
