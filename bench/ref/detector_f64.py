#!/usr/bin/python3
"""bench/ref/detector_f64.py OUT_DIR: the float64 reference for bench/detector's rewards.

bench_detector writes the random Qwen2 it scores as an HF directory (OUT/model), the token
ids of every sequence (OUT/seqs.txt) and its f32 rewards (OUT/rewards.txt); llama_bench.mjs
adds llama.cpp's f32 rewards for the same sequences (OUT/llama_rewards.txt). This script
scores the sequences in float64 with tests/ref/qwen2_ref.py (plain torch, its own safetensors
parser) and prints how far each f32 implementation is from it, as max |r - r64| / (1 + |r64|),
the measure the bench uses between ours and llama.cpp. Two f32 implementations can only
agree to about the sum of their own errors, so this says which side a disagreement comes
from. Exit 77 without torch.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "ref"))
import qwen2_ref  # noqa: E402  (exits 77 itself when torch is missing)

import json  # noqa: E402
import torch  # noqa: E402


def read_floats(path):
    with open(path) as f:
        return [float(x) for x in f.read().split()]


def worst(a, ref):
    return max(abs(x - r) / (1 + abs(r)) for x, r in zip(a, ref))


def main():
    out = sys.argv[1]
    mdir = os.path.join(out, "model")
    cfg = json.load(open(os.path.join(mdir, "config.json")))
    _, W = qwen2_ref.load_safetensors(os.path.join(mdir, "model.safetensors"))
    seqs = [[int(t) for t in line.split()] for line in open(os.path.join(out, "seqs.txt"))
            if line.strip()]
    torch.set_grad_enabled(False)
    ref = []
    for s in seqs:
        ids = torch.tensor([s], dtype=torch.long)
        _, r = qwen2_ref.forward(cfg, W, ids, torch.ones_like(ids))
        ref.append(float(r[0]))
    with open(os.path.join(out, "rewards_f64.txt"), "w") as f:
        f.write("".join("%.17g\n" % r for r in ref))
    ours = read_floats(os.path.join(out, "rewards.txt"))
    lines = ["f64 reference (tests/ref/qwen2_ref.py), %d sequences, |r64| up to %.3g:" %
             (len(ref), max(abs(r) for r in ref)),
             "  ours (f32) vs f64:      %.2e" % worst(ours, ref)]
    lp = os.path.join(out, "llama_rewards.txt")
    if os.path.exists(lp):
        llama = read_floats(lp)
        lines.append("  llama.cpp (f32) vs f64: %.2e" % worst(llama, ref))
        lines.append("  ours vs llama.cpp:      %.2e" % worst(ours, llama))
    print("\n".join(lines))
    print("RESULT ours_vs_f64=%.3e" % worst(ours, ref))
    if os.path.exists(lp):
        print("RESULT llama_vs_f64=%.3e" % worst(llama, ref))


if __name__ == "__main__":
    main()
