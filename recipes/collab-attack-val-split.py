#!/usr/bin/env python3
"""Carves the validation split of recipes/collab-attack-val.json (docs/collab-attack.md
"Validation"): the GPT-3.5 MMLU debates of the dataset hold-out's training set, split by
question. A question whose source id is a multiple of 5 (20 of the 100) goes to
OUT/val/logs/..., every other one to OUT/train/logs/..., every replicate and condition alike,
so no question is on both sides. Run from the repository root:

    python3 recipes/collab-attack-val-split.py [OUT]     (default out/collab-attack-val-data)

The held-out datasets (MedMCQA, TruthfulQA) are not read."""
import gzip
import json
import os
import sys

SRC = "data/collab-attack/logs/mmlu"
CONDS = ["100_3_3_gpt-3.5-turbo", "adv_100_3_3_1-gpt-3.5-turbo-gpt-3.5-turbo"]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "out/collab-attack-val-data"
    counts = {"train": 0, "val": 0}
    for cond in CONDS:
        for name in sorted(os.listdir(os.path.join(SRC, cond))):
            if not name.endswith(".jsonl.gz"):
                continue
            sides = {"train": [], "val": []}
            with gzip.open(os.path.join(SRC, cond, name), "rt", encoding="utf-8") as f:
                for line in f:
                    if not line.strip():
                        continue
                    side = "val" if int(json.loads(line)["id"]) % 5 == 0 else "train"
                    sides[side].append(line if line.endswith("\n") else line + "\n")
            for side, lines in sides.items():
                d = os.path.join(out, side, "logs", "mmlu", cond)
                os.makedirs(d, exist_ok=True)
                # mtime 0: the same inputs give the same bytes
                with open(os.path.join(d, name), "wb") as raw:
                    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as g:
                        g.write("".join(lines).encode("utf-8"))
                counts[side] += len(lines)
    print(f"{out}: {counts['train']} train debates, {counts['val']} validation debates")


if __name__ == "__main__":
    main()
