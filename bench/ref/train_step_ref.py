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
tuples_per_s, peak_rss_mb (and cuda_peak_mb on a GPU).

--device cuda[:N] builds the model and the batches on that GPU (needs torch >= 2.0) and
synchronizes it before reading the clock at both ends of each step. --dtype bf16 is
sentinel's train.dtype bfloat16 (docs/train.md "bf16", docs/aten.md
sn_aten_autocast_enter): f32 master weights, gradients and AdamW state; each projection (q, k,
v, o, gate, up, down and their LoRA A and B) runs under torch.autocast, so its operands are cast
to bf16, the GEMM accumulates in f32 and its bf16 output is cast back to f32; everything else
(embedding, RMSNorm, RoPE, attention and its softmax, SwiGLU, residual sums, the head) stays
f32. A plain torch.autocast around the whole forward would also run the attention products and
the head in bf16 (and qwen2_eager's mask fill, the f32 lowest value, overflows bf16 scores).
What still differs: in a LoRA projection autocast forms x W^T + b + s (x A^T) B^T in bf16 and
casts the sum once, where sentinel adds the adapter's product to the f32 base output in f32.
--config wide: bench_train_step's wide decoder (4 layers, hidden 2048, 16/4 heads,
intermediate 5504, vocab 32000).

usage: train_step_ref.py --config tiny|small|100m|wide [--mode full|lora] [--seq T] [--batch B]
                         [--steps N] [--warmup N] [--threads N] [--ckpt 0|1]
                         [--device cpu|cuda|cuda:N] [--dtype f32|bf16]
"""
import argparse
import os
import resource
import sys
import time

import torch
import torch.nn.functional as F
import torch.utils.checkpoint

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qwen2_eager import CONFIGS, RewardModel, mapped_blas, rms  # noqa: E402

CONFIGS.setdefault("wide", (4, 2048, 16, 4, 5504, 32000))  # L, D, Hq, Hkv, I, V


class Model(RewardModel):
    """qwen2_eager's model on any device, with sentinel's bf16 (see the module docstring)."""

    def __init__(self, config, mode, rank, checkpoint, amp_device=None):
        super().__init__(config, mode, rank, checkpoint=checkpoint)
        self.amp_device = amp_device  # device type for torch.autocast; None: f32

    def proj(self, l, p, x, bias=None):
        if self.amp_device is None:
            return super().proj(l, p, x, bias)
        with torch.autocast(device_type=self.amp_device, dtype=torch.bfloat16):
            y = super().proj(l, p, x, bias)
        return y.float()

    def forward(self, ids, mask):
        # qwen2_eager's forward with its index and mask tensors made on the batch's device
        # (a default-device context would tax every op of the step with a Python mode)
        B_, T_ = ids.shape
        Dh, dev = self.Dh, ids.device
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        inv = 1.0 / (self.theta ** (torch.arange(0, Dh, 2, dtype=torch.float32, device=dev) /
                                    Dh))
        fr = pos.float()[..., None] * inv
        e = torch.cat((fr, fr), dim=-1)
        cos, sin = e.cos()[:, None], e.sin()[:, None]
        causal = torch.tril(torch.ones(T_, T_, dtype=torch.bool, device=dev))
        allowed = causal[None, None] & mask.bool()[:, None, None, :]
        h = F.embedding(ids, self.emb)
        for l in self.layers:
            if self.checkpoint:
                h = torch.utils.checkpoint.checkpoint(self.layer, l, h, cos, sin, allowed,
                                                      use_reentrant=False)
            else:
                h = self.layer(l, h, cos, sin, allowed)
        last = mask.sum(-1) - 1
        hl = h[torch.arange(B_, device=dev), last]
        return F.linear(rms(hl, self.norm, self.eps), self.head)[:, 0]


p = argparse.ArgumentParser()
p.add_argument("--config", default="tiny", choices=sorted(CONFIGS))
p.add_argument("--mode", default="full", choices=("full", "lora"))
p.add_argument("--seq", type=int, default=256)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--steps", type=int, default=4)
p.add_argument("--warmup", type=int, default=1)
p.add_argument("--threads", type=int, default=0)
p.add_argument("--ckpt", type=int, default=0)
p.add_argument("--device", default="cpu")
p.add_argument("--dtype", default="f32", choices=("f32", "bf16"))
a = p.parse_args()
if a.threads > 0:
    torch.set_num_threads(a.threads)
dev = torch.device(a.device)
cuda = dev.type == "cuda"
if cuda and not torch.cuda.is_available():
    sys.exit("train_step_ref.py: --device %s: torch %s sees no CUDA device"
             % (a.device, torch.__version__))
if cuda and not hasattr(torch, "set_default_device"):
    sys.exit("train_step_ref.py: --device %s needs torch >= 2.0 (this is %s)"
             % (a.device, torch.__version__))


def sync():
    if cuda:
        torch.cuda.synchronize(dev)


torch.manual_seed(1)
amp = dev.type if a.dtype == "bf16" else None
if cuda:
    with dev:  # the model's factory calls (randn, ones, zeros) allocate on the GPU
        model = Model(a.config, a.mode, 16, bool(a.ckpt), amp)
else:
    model = Model(a.config, a.mode, 16, bool(a.ckpt), amp)
opt = torch.optim.AdamW(model.params, lr=1e-4, weight_decay=0.0)
rows = 3 * a.batch
batches = [torch.randint(0, model.V, (rows, a.seq), device=dev)
           for _ in range(a.warmup + a.steps)]
mask = torch.ones(rows, a.seq, dtype=torch.long, device=dev)


def step(ids):
    sync()
    t0 = time.perf_counter()
    r = model.forward(ids, mask)
    ch, rej, ref = r[:a.batch], r[a.batch:2 * a.batch], r[2 * a.batch:]
    loss = -F.logsigmoid(ch - rej).mean() - F.logsigmoid(ch - ref).mean()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.params, 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    sync()
    return time.perf_counter() - t0


for i in range(a.warmup):
    step(batches[i])
tot = sum(step(batches[a.warmup + i]) for i in range(a.steps))
st = tot / a.steps
print("impl=pytorch_eager")
print("torch=%s" % torch.__version__)
print("config=%s\nmode=%s\nseq=%d\nbatch=%d\ngrad_checkpoint=%d" % (a.config, a.mode, a.seq,
                                                                   a.batch, a.ckpt))
print("device=%s\ndtype=%s" % (dev, a.dtype))
if cuda:
    print("gpu=%s" % torch.cuda.get_device_name(dev))
print("threads=%d" % torch.get_num_threads())
print("params_trained=%d" % sum(t.numel() for t in model.params))
print("step_s=%.4f" % st)
print("tokens_per_s=%.0f" % (rows * a.seq / st))
print("tuples_per_s=%.2f" % (a.batch / st))
print("peak_rss_mb=%.1f" % (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0))
if cuda:
    print("cuda_peak_mb=%.1f" % (torch.cuda.max_memory_allocated(dev) / 2.0 ** 20))
print("blas=%s" % mapped_blas())
