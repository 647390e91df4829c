#!/usr/bin/python3
"""bench/ref/train_step_ref.py: PyTorch-eager baseline for bench_train_step.

One optimizer step of `sentinel train` written as a PyTorch user would write it, on the same
model (bench/ref/qwen2_eager.py) and shapes: B tuples of three sequences (chosen, rejected,
reference) of T tokens each, scored in one forward of 3B rows; L = L_pref + alpha L_align with
L_pref = -log sigma(R(ch) - R(rej)) and L_align = -log sigma(R(ch) - R(ref)) (alpha 1, as the
C bench); backward; clip_grad_norm_(1.0); torch.optim.AdamW (lr 1e-4, weight decay 0);
zero_grad. mode full trains every parameter, lora the LoRA matrices (r 16, alpha 32) and the
head; --ckpt 1 recomputes each decoder layer in backward (torch.utils.checkpoint).
Prints key=value lines with the C benchmark's names: step_s, tokens_per_s (3 B T / step),
tuples_per_s, peak_rss_mb.

usage: train_step_ref.py --config tiny|small|100m [--mode full|lora] [--seq T] [--batch B]
                         [--steps N] [--warmup N] [--threads N] [--ckpt 0|1]
"""
import argparse
import os
import resource
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qwen2_eager import RewardModel, mapped_blas  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--config", default="tiny")
p.add_argument("--mode", default="full")
p.add_argument("--seq", type=int, default=256)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--steps", type=int, default=4)
p.add_argument("--warmup", type=int, default=1)
p.add_argument("--threads", type=int, default=0)
p.add_argument("--ckpt", type=int, default=0)
a = p.parse_args()
if a.threads > 0:
    torch.set_num_threads(a.threads)
torch.manual_seed(1)
model = RewardModel(a.config, a.mode, 16, checkpoint=bool(a.ckpt))
opt = torch.optim.AdamW(model.params, lr=1e-4, weight_decay=0.0)
rows = 3 * a.batch
batches = [torch.randint(0, model.V, (rows, a.seq)) for _ in range(a.warmup + a.steps)]
mask = torch.ones(rows, a.seq, dtype=torch.long)


def step(ids):
    t0 = time.perf_counter()
    r = model.forward(ids, mask)
    ch, rej, ref = r[:a.batch], r[a.batch:2 * a.batch], r[2 * a.batch:]
    loss = -F.logsigmoid(ch - rej).mean() - F.logsigmoid(ch - ref).mean()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.params, 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return time.perf_counter() - t0


for i in range(a.warmup):
    step(batches[i])
tot = sum(step(batches[a.warmup + i]) for i in range(a.steps))
st = tot / a.steps
print("impl=pytorch_eager")
print("torch=%s" % torch.__version__)
print("config=%s\nmode=%s\nseq=%d\nbatch=%d\ngrad_checkpoint=%d" % (a.config, a.mode, a.seq,
                                                                   a.batch, a.ckpt))
print("threads=%d" % torch.get_num_threads())
print("params_trained=%d" % sum(t.numel() for t in model.params))
print("step_s=%.4f" % st)
print("tokens_per_s=%.0f" % (rows * a.seq / st))
print("tuples_per_s=%.2f" % (a.batch / st))
print("peak_rss_mb=%.1f" % (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0))
print("blas=%s" % mapped_blas())
