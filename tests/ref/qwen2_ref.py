#!/usr/bin/python3
"""tests/ref/qwen2_ref.py: an independent PyTorch-eager reference of sentinel's reward model.

Implements Qwen2 (transformers' Qwen2Model + GenericForSequenceClassification) from its
published definition in plain torch, computed in float64:
  RMSNorm  y = w * x / sqrt(mean(x^2) + eps)
  RoPE     rotate-half layout, inv_freq_j = theta^(-2j/Dh), cos/sin tables duplicated halves
  GQA      key/value head h // (Hq / Hkv) serves query head h
  biases   on q, k, v; none on o
  MLP      down(silu(gate(x)) * up(x))
  mask     causal, plus padding keys never attended
  pooling  final-norm hidden state at the last position whose mask is 1; reward = score . h
  positions  number of real tokens before each token (HF: attention_mask.cumsum(-1) - 1), so
             a left-padded row is scored exactly like the unpadded sequence
LoRA (PEFT layout, adapter_model.safetensors + adapter_config.json) is applied as
W + (lora_alpha / r) * B @ A, and the head is taken from base_model.model.score.weight.

It reads safetensors with its own small parser (not sentinel's), so a naming or layout bug on
either side shows up as a mismatch.

usage: qwen2_ref.py CASE.json
  CASE.json: {"model": DIR, "adapter": DIR or null, "ids": [[...]], "mask": [[...]],
              "hidden": [[...]] (ours), "rewards": [...] (ours) or null, "tol": 1e-4,
              "rtol": optional, each value within rtol * (1 + |ref|) instead of tol}
Exit 0 if every hidden value and reward is within tol (absolute) of the reference, 1 if not,
77 if torch cannot be imported (ctest SKIP_RETURN_CODE).
"""
import json
import math
import struct
import sys

try:
    import numpy as np
    import torch
except Exception as e:  # pragma: no cover
    print("qwen2_ref: torch/numpy not importable (%s); skipping" % e)
    sys.exit(77)


def load_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n].decode("utf-8"))
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        raw = data[base + b : base + end]
        shape = e["shape"]
        dt = e["dtype"]
        if dt == "F32":
            arr = np.frombuffer(raw, dtype="<f4").astype(np.float64)
        elif dt == "F64":
            arr = np.frombuffer(raw, dtype="<f8").astype(np.float64)
        elif dt == "F16":
            arr = np.frombuffer(raw, dtype="<f2").astype(np.float64)
        elif dt == "BF16":
            u = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            arr = u.view(np.float32).astype(np.float64)
        else:
            raise ValueError("%s: tensor %s: unsupported dtype %s" % (path, name, dt))
        out[name] = torch.from_numpy(arr.reshape(shape).copy())
    return header.get("__metadata__", {}), out


def rms_norm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotate_half(x):
    d = x.shape[-1] // 2
    return torch.cat((-x[..., d:], x[..., :d]), dim=-1)


def rope_tables(pos, dim, theta):
    inv = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    freqs = pos.to(torch.float64)[..., None] * inv  # (B, T, dim/2)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def forward(cfg, W, ids, mask):
    B, T = ids.shape
    D = cfg["hidden_size"]
    Hq = cfg["num_attention_heads"]
    Hkv = cfg["num_key_value_heads"]
    Dh = D // Hq
    eps = cfg["rms_norm_eps"]
    pos = (mask.cumsum(-1) - 1).clamp(min=0) * mask
    cos, sin = rope_tables(pos, Dh, cfg["rope_theta"])
    cos, sin = cos[:, None], sin[:, None]  # broadcast over heads
    h = W["model.embed_tokens.weight"][ids]
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    allowed = causal[None, None] & mask.bool()[:, None, None, :]
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        a = rms_norm(h, W[p + "input_layernorm.weight"], eps)
        q = a @ W[p + "self_attn.q_proj.weight"].T + W[p + "self_attn.q_proj.bias"]
        k = a @ W[p + "self_attn.k_proj.weight"].T + W[p + "self_attn.k_proj.bias"]
        v = a @ W[p + "self_attn.v_proj.weight"].T + W[p + "self_attn.v_proj.bias"]
        q = q.view(B, T, Hq, Dh).transpose(1, 2)
        k = k.view(B, T, Hkv, Dh).transpose(1, 2)
        v = v.view(B, T, Hkv, Dh).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(Hq // Hkv, dim=1)
        v = v.repeat_interleave(Hq // Hkv, dim=1)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(Dh)
        s = s.masked_fill(~allowed, torch.finfo(torch.float64).min)
        o = torch.softmax(s, dim=-1) @ v
        o = o.transpose(1, 2).reshape(B, T, Hq * Dh)
        h = h + o @ W[p + "self_attn.o_proj.weight"].T
        m = rms_norm(h, W[p + "post_attention_layernorm.weight"], eps)
        g = m @ W[p + "mlp.gate_proj.weight"].T
        u = m @ W[p + "mlp.up_proj.weight"].T
        h = h + (torch.nn.functional.silu(g) * u) @ W[p + "mlp.down_proj.weight"].T
    hn = rms_norm(h, W["model.norm.weight"], eps)
    last = torch.tensor([int(torch.nonzero(mask[b]).max()) for b in range(B)])
    hidden = hn[torch.arange(B), last]
    rewards = None
    if "score.weight" in W:
        rewards = (hidden @ W["score.weight"].T)[:, 0]
    return hidden, rewards


def apply_adapter(W, adir):
    with open(adir + "/adapter_config.json") as f:
        ac = json.load(f)
    assert ac["peft_type"] == "LORA" and ac["task_type"] == "SEQ_CLS", ac
    scale = ac["lora_alpha"] / ac["r"]
    meta, A = load_safetensors(adir + "/adapter_model.safetensors")
    assert meta.get("format") == "pt", meta
    W = dict(W)
    n = 0
    for name, t in A.items():
        if name == "base_model.model.score.weight":
            W["score.weight"] = t
            continue
        assert name.startswith("base_model.model.") and (
            name.endswith(".lora_A.weight") or name.endswith(".lora_B.weight")), name
        if name.endswith(".lora_A.weight"):
            mod = name[len("base_model.model."):-len(".lora_A.weight")]
            Bm = A[name.replace(".lora_A.", ".lora_B.")]
            assert t.shape[0] == ac["r"] and Bm.shape[1] == ac["r"], name
            W[mod + ".weight"] = W[mod + ".weight"] + scale * (Bm @ t)
            n += 1
    return W, n


def main():
    case = json.load(open(sys.argv[1]))
    cfg = json.load(open(case["model"] + "/config.json"))
    _, W = load_safetensors(case["model"] + "/model.safetensors")
    if case.get("adapter"):
        W, n = apply_adapter(W, case["adapter"])
        print("adapter: %d LoRA modules" % n)
    ids = torch.tensor(case["ids"], dtype=torch.long)
    mask = torch.tensor(case["mask"], dtype=torch.long)
    hidden, rewards = forward(cfg, W, ids, mask)
    tol = case.get("tol", 1e-4)
    # "rtol": each value within rtol * (1 + |ref|) instead of tol (docs/export.md
    # "Reproducibility" states the detector's bound this way)
    rtol = case.get("rtol")

    def err(ours, ref):
        d = (ours - ref).abs()
        return (d / (1 + ref.abs()) if rtol is not None else d).max().item()

    bound = rtol if rtol is not None else tol
    what = "max|diff|/(1+|ref|)" if rtol is not None else "max|diff|"
    ours_h = torch.tensor(case["hidden"], dtype=torch.float64)
    dh = err(ours_h, hidden)
    ok = dh <= bound
    msg = "%s: hidden %s %.3e (max|ref| %.3f)" % (case.get("name", "?"), what, dh,
                                                  hidden.abs().max().item())
    if case.get("rewards") is not None:
        ours_r = torch.tensor(case["rewards"], dtype=torch.float64)
        dr = err(ours_r, rewards)
        ok = ok and dr <= bound
        msg += ", rewards %s %.3e (ref %s)" % (what, dr, [round(x, 5) for x in rewards.tolist()])
    print(("ok   " if ok else "FAIL ") + msg)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
