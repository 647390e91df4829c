#!/usr/bin/python3
"""tests/ref/export_hf_check.py: reads the merged Hugging Face directories written by
`sentinel export --hf` with PyTorch alone (transformers is not installed here) and checks what
transformers' Qwen2ForSequenceClassification.from_pretrained relies on:
  config.json   architectures == ["Qwen2ForSequenceClassification"], model_type qwen2,
                num_labels 1 and one id2label entry, pad_token_id an int inside the vocabulary,
                torch_dtype naming the tensors' dtype
  safetensors   our own parser of the format (8-byte length, JSON header, data): exactly the
                names of Qwen2Model (embed_tokens, per layer 7 projections + q/k/v biases + 2
                norms, final norm) plus score.weight [1, hidden], with the shapes the config
                implies, one dtype, loadable with torch.frombuffer and finite
  tokenizer     tokenizer.json present and JSON
usage: export_hf_check.py DIR [DIR...]   exit 0 ok, 1 a check failed, 77 torch missing.
"""
import json
import math
import os
import struct
import sys

try:
    import torch
except Exception as e:  # pragma: no cover
    print("export_hf_check: torch not importable (%s); skipping" % e)
    sys.exit(77)

DTYPES = {"F32": (torch.float32, 4, "float32"), "F16": (torch.float16, 2, "float16"),
          "BF16": (torch.bfloat16, 2, "bfloat16")}


def fail(msg):
    print("export_hf_check: FAIL " + msg)
    sys.exit(1)


def check(d):
    cfg = json.load(open(os.path.join(d, "config.json")))
    if cfg.get("architectures") != ["Qwen2ForSequenceClassification"]:
        fail("%s: architectures %r" % (d, cfg.get("architectures")))
    if cfg.get("model_type") != "qwen2":
        fail("%s: model_type %r" % (d, cfg.get("model_type")))
    if cfg.get("num_labels") != 1 or len(cfg.get("id2label", {})) != 1:
        fail("%s: num_labels %r, id2label %r" % (d, cfg.get("num_labels"), cfg.get("id2label")))
    V, E, L = cfg["vocab_size"], cfg["hidden_size"], cfg["num_hidden_layers"]
    H, F = cfg["num_attention_heads"], cfg["intermediate_size"]
    Hkv = cfg.get("num_key_value_heads", H)
    Ekv = Hkv * (E // H)
    pad = cfg.get("pad_token_id")
    if not isinstance(pad, int) or not 0 <= pad < V:
        fail("%s: pad_token_id %r" % (d, pad))
    want = {"model.embed_tokens.weight": [V, E], "model.norm.weight": [E],
            "score.weight": [1, E]}
    for i in range(L):
        p = "model.layers.%d." % i
        want.update({p + "input_layernorm.weight": [E], p + "post_attention_layernorm.weight": [E],
                     p + "self_attn.q_proj.weight": [E, E], p + "self_attn.q_proj.bias": [E],
                     p + "self_attn.k_proj.weight": [Ekv, E], p + "self_attn.k_proj.bias": [Ekv],
                     p + "self_attn.v_proj.weight": [Ekv, E], p + "self_attn.v_proj.bias": [Ekv],
                     p + "self_attn.o_proj.weight": [E, E], p + "mlp.gate_proj.weight": [F, E],
                     p + "mlp.up_proj.weight": [F, E], p + "mlp.down_proj.weight": [E, F]})
    data = open(os.path.join(d, "model.safetensors"), "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {})
    if meta.get("format") != "pt":
        fail("%s: __metadata__ %r (transformers wants format pt)" % (d, meta))
    if set(header) != set(want):
        fail("%s: names differ: extra %s, missing %s" % (d, sorted(set(header) - set(want))[:5],
                                                        sorted(set(want) - set(header))[:5]))
    dts = {e["dtype"] for e in header.values()}
    if len(dts) != 1 or next(iter(dts)) not in DTYPES:
        fail("%s: dtypes %r" % (d, dts))
    tdt, size, name = DTYPES[next(iter(dts))]
    if cfg.get("torch_dtype") != name:
        fail("%s: torch_dtype %r but the tensors are %s" % (d, cfg.get("torch_dtype"), name))
    base = 8 + n
    for k, e in header.items():
        if e["shape"] != want[k]:
            fail("%s: %s has shape %r, expected %r" % (d, k, e["shape"], want[k]))
        b, end = e["data_offsets"]
        if end - b != size * math.prod(e["shape"]):
            fail("%s: %s holds %d bytes" % (d, k, end - b))
        t = torch.frombuffer(bytearray(data[base + b:base + end]), dtype=tdt).reshape(e["shape"])
        if not torch.isfinite(t.float()).all():
            fail("%s: %s is not finite" % (d, k))
    json.load(open(os.path.join(d, "tokenizer.json")))
    print("export_hf_check: %s: %d tensors (%s), config ok" % (d, len(header), name))


for d in sys.argv[1:]:
    check(d)
