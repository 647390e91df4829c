"""bench/ref/qwen2_eager.py: the reward model in PyTorch eager, as the bench baselines run it.

A Qwen2 decoder written the way transformers' eager code writes it (RMSNorm in f32, rotate-half
RoPE, GQA via repeat_kv, causal + padding mask with masked_fill, softmax, SwiGLU) with a score
head at the last real token, f32 on the CPU. mode "lora": frozen base, LoRA on all seven
projections (PEFT math: x W^T + b + s (x A^T) B^T, s = alpha / r = 2) and the head trained;
mode "full": every parameter trained, no LoRA. Used by forward_backward_ref.py (forward +
backward) and train_step_ref.py (the whole optimizer step).

Configs, the same shapes as the C benchmarks: tiny and small are sentinel's seeded configs
(train/config.c, vocab 512), 100m the ~100M decoder of bench_forward_backward.
"""
import math

import torch
import torch.nn.functional as F
import torch.utils.checkpoint

CONFIGS = {  # L, D, Hq, Hkv, I, V
    "tiny": (2, 64, 4, 2, 128, 512),
    "small": (4, 256, 8, 4, 768, 512),
    "100m": (8, 768, 12, 4, 2048, 32000),
}
PROJECTIONS = ("q", "k", "v", "o", "g", "u", "d")


def rms(x, w, eps):
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


class RewardModel:
    def __init__(self, config, mode="lora", rank=16, theta=10000.0, eps=1e-6, std=0.02,
                 checkpoint=False):
        self.checkpoint = checkpoint
        self.L, self.D, self.Hq, self.Hkv, self.I, self.V = CONFIGS[config]
        self.Dh = self.D // self.Hq
        self.theta, self.eps, self.r, self.scale = theta, eps, rank, 2.0
        full = mode == "full"
        D, Hq, Hkv, Dh, I = self.D, self.Hq, self.Hkv, self.Dh, self.I

        def w(*shape):
            return (torch.randn(*shape) * std).requires_grad_(full)

        def const(t):
            return t.requires_grad_(full)

        self.emb = w(self.V, D)
        shapes = {"q": (Hq * Dh, D), "k": (Hkv * Dh, D), "v": (Hkv * Dh, D), "o": (D, Hq * Dh),
                  "g": (I, D), "u": (I, D), "d": (D, I)}
        self.layers = []
        for _ in range(self.L):
            l = dict(ln1=const(torch.ones(D)), ln2=const(torch.ones(D)),
                     bq=const(torch.zeros(Hq * Dh)), bk=const(torch.zeros(Hkv * Dh)),
                     bv=const(torch.zeros(Hkv * Dh)))
            for p in PROJECTIONS:
                o, i = shapes[p]
                l["W" + p] = w(o, i)
                if not full:
                    l["A" + p] = ((torch.rand(rank, i) * 2 - 1) / math.sqrt(i)).requires_grad_()
                    l["B" + p] = torch.zeros(o, rank).requires_grad_()
            self.layers.append(l)
        self.norm = const(torch.ones(D))
        self.head = (torch.randn(1, D) * std).requires_grad_()
        if full:
            self.params = [self.emb, self.norm, self.head] + [t for l in self.layers
                                                              for t in l.values()]
        else:
            self.params = [self.head] + [l[k] for l in self.layers for k in l
                                         if k[0] in "AB"]

    def proj(self, l, p, x, bias=None):
        y = F.linear(x, l["W" + p], bias)
        if "A" + p in l:
            y = y + self.scale * F.linear(F.linear(x, l["A" + p]), l["B" + p])
        return y

    def layer(self, l, h, cos, sin, allowed):
        B_, T_ = h.shape[:2]
        Hq, Hkv, Dh = self.Hq, self.Hkv, self.Dh
        x = rms(h, l["ln1"], self.eps)
        q = self.proj(l, "q", x, l["bq"]).view(B_, T_, Hq, Dh).transpose(1, 2)
        k = self.proj(l, "k", x, l["bk"]).view(B_, T_, Hkv, Dh).transpose(1, 2)
        v = self.proj(l, "v", x, l["bv"]).view(B_, T_, Hkv, Dh).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k, v = repeat_kv(k, Hq // Hkv), repeat_kv(v, Hq // Hkv)
        s = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(Dh))
        s = s.masked_fill(~allowed, torch.finfo(torch.float32).min)
        o = torch.matmul(torch.softmax(s, dim=-1), v)
        o = o.transpose(1, 2).reshape(B_, T_, Hq * Dh)
        h = h + self.proj(l, "o", o)
        m = rms(h, l["ln2"], self.eps)
        return h + self.proj(l, "d", F.silu(self.proj(l, "g", m)) * self.proj(l, "u", m))

    def forward(self, ids, mask):
        B_, T_ = ids.shape
        Dh = self.Dh
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        inv = 1.0 / (self.theta ** (torch.arange(0, Dh, 2, dtype=torch.float32) / Dh))
        fr = pos.float()[..., None] * inv
        e = torch.cat((fr, fr), dim=-1)
        cos, sin = e.cos()[:, None], e.sin()[:, None]
        causal = torch.tril(torch.ones(T_, T_, dtype=torch.bool))
        allowed = causal[None, None] & mask.bool()[:, None, None, :]
        h = F.embedding(ids, self.emb)
        for l in self.layers:
            if self.checkpoint:  # recompute the layer in backward, as sentinel's
                h = torch.utils.checkpoint.checkpoint(self.layer, l, h, cos, sin, allowed,
                                                      use_reentrant=False)
            else:
                h = self.layer(l, h, cos, sin, allowed)
        last = mask.sum(-1) - 1
        hl = h[torch.arange(B_), last]
        return F.linear(rms(hl, self.norm, self.eps), self.head)[:, 0]


def mapped_blas():
    """The BLAS library this process mapped (for the report)."""
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            base = path.rsplit("/", 1)[-1]
            if any(k in base for k in ("openblas", "libblas", "mkl", "blis")):
                return path
    return "?"
