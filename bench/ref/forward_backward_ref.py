#!/usr/bin/python3
"""bench/ref/forward_backward_ref.py: PyTorch-eager baseline for bench_forward_backward.

The same reward model (Qwen2 decoder as transformers' eager code writes it: RMSNorm in f32,
rotate-half RoPE, GQA via repeat_kv, causal + padding mask with masked_fill, softmax, SwiGLU),
LoRA on all seven projections (PEFT math: x W^T + b + s (x A^T) B^T), a score head at the last
token, f32 on the CPU, frozen base. One step = forward + mean(rewards).backward().
Prints key=value lines like the C benchmark, plus a time breakdown from the autograd profiler
(self CPU time of matmul kernels vs softmax/mask vs everything else), peak RSS and the BLAS
library this process mapped.

usage: forward_backward_ref.py --config tiny|100m [--seq T] [--batch B] [--rank R]
                               [--iters N] [--warmup N] [--threads N]
"""
import argparse
import math
import resource
import time

import torch
import torch.nn.functional as F

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

if a.config == "100m":
    L, D, Hq, Hkv, I, V = 8, 768, 12, 4, 2048, 32000
else:
    L, D, Hq, Hkv, I, V = 2, 64, 4, 2, 128, 512
Dh = D // Hq
eps, theta, r = 1e-6, 10000.0, a.rank
scale = 2.0 * r / r


def frozen(*shape, std=0.02):
    return torch.randn(*shape) * std


class Lora:
    def __init__(self, inf, outf):
        self.A = (torch.rand(r, inf) * 2 - 1) / math.sqrt(inf)
        self.B = torch.zeros(outf, r)
        self.A.requires_grad_(True)
        self.B.requires_grad_(True)

    def __call__(self, x, W, b=None):
        return F.linear(x, W, b) + scale * F.linear(F.linear(x, self.A), self.B)


def rms(x, w):
    h = x.float()
    return w * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def rotate_half(x):
    d = x.shape[-1] // 2
    return torch.cat((-x[..., d:], x[..., :d]), dim=-1)


def repeat_kv(x, n):
    if n == 1:
        return x
    B_, H, T_, d = x.shape
    return x[:, :, None].expand(B_, H, n, T_, d).reshape(B_, H * n, T_, d)


emb = frozen(V, D)
layers = []
for _ in range(L):
    layers.append(dict(
        ln1=torch.ones(D), ln2=torch.ones(D),
        Wq=frozen(Hq * Dh, D), bq=torch.zeros(Hq * Dh), Wk=frozen(Hkv * Dh, D),
        bk=torch.zeros(Hkv * Dh), Wv=frozen(Hkv * Dh, D), bv=torch.zeros(Hkv * Dh),
        Wo=frozen(D, Hq * Dh), Wg=frozen(I, D), Wu=frozen(I, D), Wd=frozen(D, I),
        lq=Lora(D, Hq * Dh), lk=Lora(D, Hkv * Dh), lv=Lora(D, Hkv * Dh), lo=Lora(Hq * Dh, D),
        lg=Lora(D, I), lu=Lora(D, I), ld=Lora(I, D)))
norm = torch.ones(D)
head = frozen(1, D).requires_grad_(True)


def forward(ids, mask):
    B_, T_ = ids.shape
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    inv = 1.0 / (theta ** (torch.arange(0, Dh, 2, dtype=torch.float32) / Dh))
    fr = pos.float()[..., None] * inv
    e = torch.cat((fr, fr), dim=-1)
    cos, sin = e.cos()[:, None], e.sin()[:, None]
    causal = torch.tril(torch.ones(T_, T_, dtype=torch.bool))
    allowed = causal[None, None] & mask.bool()[:, None, None, :]
    lowest = torch.finfo(torch.float32).min
    h = F.embedding(ids, emb)
    for l in layers:
        x = rms(h, l["ln1"])
        q = l["lq"](x, l["Wq"], l["bq"]).view(B_, T_, Hq, Dh).transpose(1, 2)
        k = l["lk"](x, l["Wk"], l["bk"]).view(B_, T_, Hkv, Dh).transpose(1, 2)
        v = l["lv"](x, l["Wv"], l["bv"]).view(B_, T_, Hkv, Dh).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k, v = repeat_kv(k, Hq // Hkv), repeat_kv(v, Hq // Hkv)
        s = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(Dh))
        s = s.masked_fill(~allowed, lowest)
        o = torch.matmul(torch.softmax(s, dim=-1), v)
        o = o.transpose(1, 2).reshape(B_, T_, Hq * Dh)
        h = h + l["lo"](o, l["Wo"])
        m = rms(h, l["ln2"])
        h = h + l["ld"](F.silu(l["lg"](m, l["Wg"])) * l["lu"](m, l["Wu"]), l["Wd"])
    last = mask.sum(-1) - 1
    hl = h[torch.arange(B_), last]
    return F.linear(rms(hl, norm), head)[:, 0]


ids = torch.randint(0, V, (a.batch, a.seq))
mask = torch.ones(a.batch, a.seq, dtype=torch.long)


def step():
    params = [head] + [t for l in layers for k in l if k[0] == "l" and k not in ("ln1", "ln2")
                       for t in (l[k].A, l[k].B)]
    for t in params:
        t.grad = None
    t0 = time.perf_counter()
    loss = forward(ids, mask).mean()
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

blas = "?"
with open("/proc/self/maps") as f:
    for line in f:
        path = line.split()[-1] if len(line.split()) >= 6 else ""
        base = path.rsplit("/", 1)[-1]
        if any(k in base for k in ("openblas", "libblas", "mkl", "blis")):
            blas = path
            break

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
