#!/usr/bin/env bash
# tests/train_pretrain_run.sh: `sentinel run` chains the lm stage (train.pretrain_steps;
# docs/train.md "Domain-adaptive pretraining (objective lm)") before the reward training, on a
# copy of the trained_run fixture's trajectories (the fixture itself is only read):
#   - OUT/pretrain trains objective lm for pretrain_steps steps (metrics loss and perplexity,
#     no reward figures), and the reward run's train.base is its last checkpoint, in full mode;
#   - no leak: the lm checkpoint's recorded inputs are exactly the manifest's train shards,
#     none of its validation or test shards;
#   - `sentinel run --check` describes the chained stage, `sentinel inspect` the lm run.
# Env (from ctest): SENTINEL_BIN, SENTINEL_SRC, SENTINEL_TMP.
set -euo pipefail
bin=${SENTINEL_BIN:?}
src=${SENTINEL_SRC:?}
run="${SENTINEL_TMP:-/tmp}/run_pipeline/a"
tmp="${SENTINEL_TMP:-/tmp}/train_pretrain_run"
rm -rf "$tmp" && mkdir -p "$tmp"
fail() { echo "FAIL: $*"; exit 1; }
[ -d "$run/trajectories" ] || fail "no $run/trajectories (the trained_run fixture)"
cp -r "$run/trajectories" "$run/run.json" "$tmp/"
# run_pipeline.sh's reduced settings (so simulate is up to date), plus the lm stage
recipe="$src/recipes/quickstart.json"
source "$src/tests/quickstart_reduced.sh"
sets=("${small[@]}" --set train.pretrain_steps=4 --set train.pretrain_lr=0.002)
"$bin" run "$src/recipes/quickstart.json" -o "$tmp" "${sets[@]}" --check > "$tmp/check.log" 2>&1 \
  || { cat "$tmp/check.log"; fail "--check"; }
grep -q "^pretrain:   4 steps of objective lm on the train split first" "$tmp/check.log" \
  || { cat "$tmp/check.log"; fail "--check does not describe the lm stage"; }
"$bin" run "$src/recipes/quickstart.json" -o "$tmp" "${sets[@]}" --to train > "$tmp/run.log" 2>&1 \
  || { cat "$tmp/run.log"; fail "sentinel run"; }
grep -q "simulate up to date" "$tmp/run.log" || { cat "$tmp/run.log"; fail "simulate re-ran"; }
grep -q "train.pretrain_steps 4: objective lm -> $tmp/pretrain" "$tmp/run.log" \
  || { cat "$tmp/run.log"; fail "no lm stage"; }
"${SENTINEL_PYTHON:-/usr/bin/python3}" - "$tmp" <<'PY' || fail "the lm stage and the reward run after it"
import json, math, sys
out = sys.argv[1]
pre = json.load(open(f"{out}/pretrain/train_settings.json"))
assert pre["objective"] == "lm" and pre["mode"] == "full" and pre["total_steps"] == 4, pre
assert pre["lr"] == 0.002, pre["lr"]
lines = [json.loads(l) for l in open(f"{out}/pretrain/metrics.jsonl")]
assert [l["step"] for l in lines] == [1, 2, 3, 4], lines
for l in lines:
    assert "accuracy" not in l and "margin" not in l, l
    assert abs(l["perplexity"] - math.exp(l["loss"])) <= 1e-6 * l["perplexity"], l
ck = f"{out}/pretrain/checkpoint-4"
rew = json.load(open(f"{out}/train/train_settings.json"))
assert rew["base"] == ck and rew["mode"] == "full" and "objective" not in rew, rew
# no leak: exactly the train split's shards
man = json.load(open(f"{out}/shards/manifest.json"))
train = [s["file"] for s in man["shards"] if s["split"] == "train"]
held = [s["file"] for s in man["shards"] if s["split"] != "train"]
assert train and held, man["shards"]
st = json.load(open(f"{ck}/sentinel_state.json"))
assert st["objective"] == "lm" and st["inputs"]["split"] == "train", st
assert st["inputs"]["shards"] == train, (st["inputs"], train)
assert not set(st["inputs"]["shards"]) & set(held)
assert st["inputs"]["sequences"] > 0
# the reward run's checkpoint is a full model with a head, started from the lm weights
assert json.load(open(f"{ck}/config.json"))["tie_word_embeddings"] is True
print("lm stage:", lines[0]["loss"], "->", lines[-1]["loss"], "; inputs", st["inputs"])
PY
"$bin" inspect "$tmp/pretrain" > "$tmp/inspect.log" 2>&1 || { cat "$tmp/inspect.log"; fail "inspect"; }
grep -q "^settings:    objective lm" "$tmp/inspect.log" \
  && grep -q "^last step:   4: loss .*, perplexity" "$tmp/inspect.log" \
  || { cat "$tmp/inspect.log"; fail "inspect does not show the lm run"; }
echo "train_pretrain_run: ok"
