#!/usr/bin/python3
"""bench/ref/forward_backward_ref.py: PyTorch-eager baseline for bench_forward_backward.

The same reward model (bench/ref/qwen2_eager.py: Qwen2 as transformers' eager code writes it,
LoRA on all seven projections, a score head at the last token, f32 on the CPU, frozen base).
One step = forward + mean(rewards).backward().
Prints key=value lines like the C benchmark, plus a time breakdown from the autograd profiler
(self CPU time of matmul kernels vs softmax/mask vs everything else), peak RSS and the BLAS
library this process mapped.

usage: forward_backward_ref.py --config tiny|100m [--seq T] [--batch B] [--rank R]
                               [--iters N] [--warmup N] [--threads N]
"""
import argparse
import os
import resource
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qwen2_eager import RewardModel, mapped_blas  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--config", default="tiny")
p.add_argument("--seq", type=int, default=512)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--rank", type=int, default=16)
p.add_argument("--iters", type=int, default=5)
p.add_argument("--warmup", type=int, default=1)
p.add_argument("--threads", type=int, default=0)
a = p.parse_args()
if a.threads > 0:
    torch.set_num_threads(a.threads)
torch.manual_seed(1)
model = RewardModel(a.config, "lora", a.rank)
V = model.V
ids = torch.randint(0, V, (a.batch, a.seq))
mask = torch.ones(a.batch, a.seq, dtype=torch.long)


def step():
    for t in model.params:
        t.grad = None
    t0 = time.perf_counter()
    loss = model.forward(ids, mask).mean()
    t1 = time.perf_counter()
    loss.backward()
    t2 = time.perf_counter()
    return t2 - t0, t1 - t0


for _ in range(a.warmup):
    step()
tot = fwd = 0.0
for _ in range(a.iters):
    s_, f_ = step()
    tot += s_
    fwd += f_
st, fw = tot / a.iters, fwd / a.iters

# breakdown of one more step from the autograd profiler (self CPU time per op)
with torch.autograd.profiler.profile() as prof:
    step()
cats = {"matmul": 0.0, "softmax_mask": 0.0, "other": 0.0}
for e in prof.key_averages():
    n = e.key
    t = e.self_cpu_time_total / 1e6
    if n in ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addmv", "aten::mv",
             "aten::dot"):
        cats["matmul"] += t
    elif "softmax" in n or "masked_fill" in n:
        cats["softmax_mask"] += t
    else:
        cats["other"] += t

blas = mapped_blas()

print("impl=pytorch_eager")
print("torch=%s" % torch.__version__)
print("threads=%d" % torch.get_num_threads())
print("step_s=%.4f" % st)
print("fwd_s=%.4f" % fw)
print("bwd_s=%.4f" % (st - fw))
print("tokens_per_s=%.1f" % (a.batch * a.seq / st))
print("prof_matmul_s=%.4f" % cats["matmul"])
print("prof_softmax_mask_s=%.4f" % cats["softmax_mask"])
print("prof_other_s=%.4f" % cats["other"])
print("peak_rss_mb=%.1f" % (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0))
print("blas=%s" % blas)
