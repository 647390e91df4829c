#!/usr/bin/env bash
# tests/content_contrast.sh: a detector trained with content-contrastive pairs judges content
# (docs/eval.md "Content, not wording"; docs/formats.md "Tuple selection"). On tiny data: 16
# multiple-choice items of the `facts` dataset's train part, collaboration debates of sim agents
# with `styles: "full"`, tuples with build.contrast = 1 and build.persuasive_correct = 0.5, the
# tiny model trained 300 steps and exported. Then fresh style_matched debates on the same items
# (another seed): each style-matched adversary message (honest wording, wrong fact) is paired
# with the matching right one (the same text with its answer made right, built by the tuple
# builder itself: build.persuasive_correct = 1, rejected = adversary), and both are scored in
# the first round's context (the task) by the exported detector. The right one must score higher in more pairs
# than chance allows: a one-sided binomial test at p < 0.01 against one half. A signal check,
# not a benchmark (the benchmark-sized figures are in docs/eval.md); no timing is asserted.
# Env (from ctest): SENTINEL_BIN, SENTINEL_TMP.
set -euo pipefail
bin=${SENTINEL_BIN:?}
tmp="${SENTINEL_TMP:-/tmp}/content_contrast"
rm -rf "$tmp" && mkdir -p "$tmp"
fail() { echo "FAIL: $*"; exit 1; }
ds='{"kind":"facts","part":"train","n":16,"seed":5,"numeric_share":0}'
cat > "$tmp/recipe.json" <<JSON
{"out_dir": "$tmp/run",
 "simulate": {"endpoints": {"sim-styles": {"kind": "sim", "competence": 0.8, "styles": "full"}},
   "defaults": {"dataset": $ds, "backend": "sim-styles", "n_agents": 5, "rounds": 3,
                "replicates": 4, "seed": 1},
   "experiments": [{"name": "cc-collab", "scenario": "collaboration", "n_adversaries": 2,
                    "rhetoric": "mixed"}]},
 "build": {"max_len": 256, "max_pairs": 2, "seed": 3, "validation_fraction": 0.0,
           "test_fraction": 0.0, "contrast": 1.0, "persuasive_correct": 0.5},
 "train": {"base": "tiny", "mode": "full", "seed": 42, "max_steps": 300, "micro_batch": 8,
           "lr": 2e-3, "schedule": "cosine", "warmup_steps": 20, "eval_every": 300,
           "save_every": 300, "keep_last": 1}}
JSON
"$bin" run "$tmp/recipe.json" --to export > "$tmp/run.log" 2>&1 || { tail -30 "$tmp/run.log"; fail "run"; }
[ -f "$tmp/run/detector.gguf" ] || fail "no detector.gguf"
# fresh style-matched debates on the same items (paper styles, another seed)
cat > "$tmp/sm.json" <<JSON
{"simulate": {"defaults": {"dataset": $ds, "n_agents": 5, "rounds": 3, "seed": 99,
                "replicates": 3},
   "experiments": [{"name": "cc-style", "scenario": "style_matched", "n_adversaries": 2}]},
 "build": {"max_len": 256, "max_pairs": 1, "seed": 3, "validation_fraction": 0.0,
           "test_fraction": 0.0, "rejected": "adversary", "persuasive_correct": 1.0}}
JSON
"$bin" simulate --recipe "$tmp/sm.json" -o "$tmp/sm" --progress none > /dev/null
"$bin" build --recipe "$tmp/sm.json" -i "$tmp/sm" -o "$tmp/sm-shards" \
  --tokenizer "$tmp/run/tokenizer.json" --progress none > /dev/null
: > "$tmp/pairs.jsonl"
for s in "$tmp"/sm-shards/*.h5; do
  "$bin" inspect "$s" --json --all | "${SENTINEL_PYTHON:-/usr/bin/python3}" -c '
import json, sys
for t in json.load(sys.stdin).get("tuples", []):
    # the adversary message made right, in round 0 (whose context is the task alone: `score`
    # takes the context as given and does not cut history)
    if t["meta"]["chosen_role"] == "contrast" and t["meta"]["round"] == 0:
        x = t["text"]
        print(json.dumps({"context": x["context"], "responses": [x["chosen"], x["rejected"]]}))
' >> "$tmp/pairs.jsonl"
done
"$bin" score --detector "$tmp/run/detector.gguf" --jsonl "$tmp/pairs.jsonl" > "$tmp/scores.txt"
"${SENTINEL_PYTHON:-/usr/bin/python3}" - "$tmp/scores.txt" <<'PY'
import math, sys
v = [float(x) for x in open(sys.argv[1]).read().split()]
pairs = list(zip(v[0::2], v[1::2]))
n = len(pairs)
wins = sum(1 for right, wrong in pairs if right > wrong)
p = sum(math.comb(n, k) for k in range(wins, n + 1)) / 2 ** n if n else 1.0
print(f"style-matched pairs: the right one scores higher in {wins} of {n}; "
      f"one-sided binomial p = {p:.2e}")
if n < 40:
    sys.exit(f"FAIL: only {n} pairs")
if p >= 0.01:
    sys.exit("FAIL: not above chance")
PY
echo "content_contrast: ok"
