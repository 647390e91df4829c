#!/usr/bin/env bash
# tests/inspect_models.sh: `sentinel inspect` of what training writes, on the trained_run
# fixture (a full fine-tuning run) and a 1-step LoRA run made here from the fixture's base:
#   - a training run directory: settings, checkpoints with latest and best, final metrics equal
#     to final_metrics.json's;
#   - a checkpoint directory, full and LoRA: step, the model it holds, parameter counts equal
#     to an independent parse of the safetensors header (Python, not sentinel's reader);
#     --verify passes on the real files and fails (exit 1, the file named) on a changed one;
#   - a Hugging Face model directory and a safetensors file (--json tensor list equal to the
#     independent parse); a directory that is none of these: exit 1 with what was expected.
# Env (from ctest): SENTINEL_BIN, SENTINEL_TMP.
set -euo pipefail
bin=${SENTINEL_BIN:?}
run="${SENTINEL_TMP:-/tmp}/run_pipeline/a"
tmp="${SENTINEL_TMP:-/tmp}/inspect_models"
rm -rf "$tmp" && mkdir -p "$tmp"
fail() { echo "FAIL: $*"; exit 1; }
[ -f "$run/train/latest" ] || fail "no $run/train (the trained_run fixture)"
ck="$run/train/$(cat "$run/train/latest")"

# the run directory
"$bin" inspect "$run/train" > "$tmp/run.txt" || fail "inspect run"
grep -q ': training run$' "$tmp/run.txt" || fail "run kind: $(cat "$tmp/run.txt")"
grep -q "$(basename "$ck") (latest, best)" "$tmp/run.txt" || fail "latest/best: $(cat "$tmp/run.txt")"
"$bin" inspect --json "$run/train" > "$tmp/run.json" || fail "inspect --json run"

# checkpoints: a full one (fixture) and a LoRA one (one step from the fixture's base)
printf '{"train": {"base": "%s", "mode": "lora", "max_steps": 1, "micro_batch": 2, "grad_accum": 1, "lora": {"r": 4, "alpha": 8}, "eval_every": 0}}' \
  "$run/train/base" > "$tmp/lora.json"
"$bin" train --recipe "$tmp/lora.json" -i "$run/shards" -o "$tmp/lora" \
  --tokenizer "$run/tokenizer.json" --progress none > "$tmp/lora.log" 2>&1 ||
  { cat "$tmp/lora.log"; fail "lora train"; }
lck="$tmp/lora/checkpoint-1"
for c in "$ck" "$lck"; do
  "$bin" inspect --verify "$c" > "$tmp/ck.txt" || fail "inspect --verify $c: $(cat "$tmp/ck.txt")"
  grep -Eq '([0-9]+) of \1 match the SHA-256' "$tmp/ck.txt" || fail "verify line: $(cat "$tmp/ck.txt")"
  "$bin" inspect --json "$c" > "$tmp/ck.json" || fail "inspect --json $c"
  "$bin" inspect --json "$c/"*model.safetensors > "$tmp/st.json" || fail "inspect safetensors"
done
grep -q 'PEFT LORA adapter (r 4, alpha 8, scale 2' <("$bin" inspect "$lck") || fail "lora line"
"$bin" inspect "$run/train/base" | grep -q 'Hugging Face model directory' || fail "base dir"

"${SENTINEL_PYTHON:-/usr/bin/python3}" - "$run" "$ck" "$lck" "$tmp" <<'PY'
import json, struct, subprocess, sys, os
run, ck, lck, tmp = sys.argv[1:]
bin_ = os.environ["SENTINEL_BIN"]

def header(path):  # safetensors: u64 little-endian length, then the JSON header
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
    h.pop("__metadata__", None)
    return h

def numel(shape):
    p = 1
    for d in shape:
        p *= d
    return p

def inspect(*args):
    return json.loads(subprocess.check_output([bin_, "inspect", "--json", *args]))

r = inspect(run + "/train")
fin = json.load(open(run + "/train/final_metrics.json"))
assert r["kind"] == "training_run" and r["final_metrics"] == fin, r.get("final_metrics")
assert r["latest"] == os.path.basename(ck) and r["best"] == fin["best_checkpoint"], r
for c, weights, kind in ((ck, "model.safetensors", "hf_model"),
                         (lck, "adapter_model.safetensors", "peft_adapter")):
    j = inspect(c)
    h = header(os.path.join(c, weights))
    assert j["kind"] == "checkpoint" and j["model"] == kind, (j["kind"], j["model"])
    assert j["n_params"] == sum(numel(t["shape"]) for t in h.values()), j["n_params"]
    st = json.load(open(os.path.join(c, "sentinel_state.json")))
    assert j["state"] == st
    s = inspect(os.path.join(c, weights))
    assert {t["name"]: (t["dtype"], t["shape"]) for t in s["tensors"]} == \
        {k: (v["dtype"], v["shape"]) for k, v in h.items()}
print("ok: json views agree with the files")
PY

# --verify catches a changed file, naming it
cp -r "$lck" "$tmp/bad"
printf x >> "$tmp/bad/optimizer.safetensors"
rc=0; "$bin" inspect --verify "$tmp/bad" > /dev/null 2> "$tmp/bad.err" || rc=$?
[ "$rc" = 1 ] && grep -q 'optimizer.safetensors: SHA-256 differs' "$tmp/bad.err" ||
  fail "changed file: exit $rc, $(cat "$tmp/bad.err")"
# a directory that is none of these
mkdir -p "$tmp/empty"
rc=0; "$bin" inspect "$tmp/empty" 2> "$tmp/empty.err" || rc=$?
[ "$rc" = 1 ] && grep -q 'checkpoint, training run or model directory' "$tmp/empty.err" ||
  fail "empty dir: exit $rc, $(cat "$tmp/empty.err")"
echo "ok: inspect shows runs, checkpoints, model directories and safetensors files"
