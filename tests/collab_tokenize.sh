#!/usr/bin/env bash
# tests/collab_tokenize.sh: no held-out debate reaches the tokenizer or the LM pretraining
# (docs/run.md "Recipe section `tokenize`", docs/collab-attack.md "No leak"). Env (from ctest):
# SENTINEL_BIN, SENTINEL_SRC, SENTINEL_TMP.
#
# What it asserts:
# 0. on the shipped recipes (both hold-outs and their validation variants): `sentinel run
#    --check` names as the tokenizer's inputs exactly the import sets that eval.sets does not
#    name, and none of their paths is a held-out dataset's or model's log;
# 1. a `tokenize` section is refused before anything runs without an import, with
#    build.tokenizer, with an unknown key or a vocabulary below the bytes and the ChatML tokens;
# 2. a reduced real-text run (one vendored MMLU file trains, one MedMCQA file is held out as a
#    dataset; a 600-id tokenizer; 6 LM steps, then 6 reward steps): the tokenizer stage's
#    recorded inputs are the training set's trajectories only, and they hold no held-out
#    question; the build used that tokenizer; the LM stage's recorded inputs are train-split
#    shards only, whose tuples are all on training items;
# 3. `--from build` again: the tokenizer is not trained again (same settings and inputs).
set -euo pipefail
bin=${SENTINEL_BIN:?}
src=${SENTINEL_SRC:?}
tmp="${SENTINEL_TMP:-/tmp}/collab_tokenize"
rm -rf "$tmp" && mkdir -p "$tmp"
fail() { echo "FAIL: $*"; exit 1; }
cd "$src"   # the recipes' import paths are relative to the repository root

# 0. the shipped recipes
for r in recipes/collab-attack.json recipes/collab-attack-models.json \
         recipes/collab-attack-val.json recipes/collab-attack-models-val.json; do
  "$bin" run "$r" --check > "$tmp/check.log" 2>&1 || { cat "$tmp/check.log"; fail "$r --check"; }
  "${SENTINEL_PYTHON:-/usr/bin/python3}" - "$r" "$tmp/check.log" <<'PY' || fail "$r: tokenizer inputs"
import json, re, sys
path, log = sys.argv[1:3]
rec = json.load(open(path))
line = [l for l in open(log) if l.startswith("tokenize:")]
assert rec.get("tokenize"), f"{path}: no tokenize section"
assert len(line) == 1, open(log).read()
named = re.search(r"import sets (.*) \(not eval.sets\)", line[0]).group(1).split()
held = set(rec["eval"]["sets"])
sets = {s["name"]: s["paths"] for s in rec["import"]["sets"]}
assert named == [n for n in sets if n not in held], (named, held)
# the held-out debates by what the recipe holds out: datasets, models, or carved questions
words = {"collab-attack.json": ["medmcqa", "truthfulqa"],
         "collab-attack-models.json": ["llama", "qwen"],
         "collab-attack-val.json": ["medmcqa", "truthfulqa", "/val/"],
         "collab-attack-models-val.json": ["truthfulqa", "llama", "qwen"]}[path.split("/")[-1]]
for n in named:
    for p in sets[n]:
        assert not any(w in p.lower() for w in words), (path, n, p)
for n in held:
    assert n not in named, (path, n)
print(path, "tokenizer reads", named, "held out", sorted(held))
PY
done

logs="data/collab-attack/logs"
recipe="recipes/collab-attack.json"
train_file="$logs/mmlu/adv_100_3_3_1-gpt-3.5-turbo-gpt-3.5-turbo/adv_mmlu_100_3_3_1_0-gpt-3.5-turbo-gpt-3.5-turbo.jsonl.gz"
held_file="$logs/medmcqa/adv_100_3_3_1-gpt-3.5-turbo-gpt-3.5-turbo/adv_medmcqa_100_3_3_1_0-gpt-3.5-turbo-gpt-3.5-turbo.jsonl.gz"
sets="[{\"name\":\"mmlu\",\"paths\":[\"$train_file\"]},{\"name\":\"medmcqa\",\"paths\":[\"$held_file\"]}]"
small=(--set "import.sets=$sets" --set 'eval.sets=["medmcqa"]'
       --set 'build.test=["medmcqa"]' --set build.max_len=256 --set tokenize.vocab_size=600
       --set train.base=tiny --set train.max_steps=6 --set train.micro_batch=2
       --set train.save_every=6 --set train.warmup_steps=1 --set train.pretrain_steps=6)

# 1. refusals, before anything runs
refused() { # refused NAME PATTERN ARGS...
  local name=$1 pat=$2; shift 2
  set +e; "$bin" run "$@" -o "$tmp/bad" > "$tmp/$name.log" 2>&1; local rc=$?; set -e
  [ $rc = 2 ] && grep -q -- "$pat" "$tmp/$name.log" || { cat "$tmp/$name.log"; fail "$name: exit $rc"; }
  [ ! -e "$tmp/bad/trajectories" ] || fail "$name: a refused recipe ran a stage"
}
refused no_import "needs an \`import\` section" recipes/quickstart.json --set tokenize.vocab_size=600
refused with_build_tok "exclude each other" "$recipe" "${small[@]}" --set build.tokenizer=x.json
refused unknown_key "unknown key" "$recipe" "${small[@]}" --set tokenize.vocab=600
refused small_vocab "vocab_size 100" "$recipe" "${small[@]}" --set tokenize.vocab_size=100

# 2. the reduced run, up to the reward training
"$bin" run "$recipe" -o "$tmp/a" "${small[@]}" --to train > "$tmp/a1.log" 2>&1 || { cat "$tmp/a1.log"; fail "run"; }
grep -q "sentinel run: tokenize: 1 training set(s)" "$tmp/a1.log" || { cat "$tmp/a1.log"; fail "no tokenize step"; }
"${SENTINEL_PYTHON:-/usr/bin/python3}" - "$tmp/a" "$held_file" <<'PY' || fail "recorded inputs"
import glob, gzip, hashlib, json, os, sys
import h5py
out, held_file = sys.argv[1:3]
def lines(p):
    with gzip.open(p, "rt", encoding="utf-8") as f:
        return [json.loads(l) for l in f if l.strip()]
# the tokenizer's inputs: the training set's trajectories only, none on a held-out question
rec = json.load(open(out + "/tokenize/inputs.json"))
assert rec["vocab_size"] == 600 and rec["min_frequency"] == 2, rec
assert [(i["set"], os.path.basename(i["path"])) for i in rec["inputs"]] == [("mmlu", "mmlu.jsonl.gz")], rec
p = rec["inputs"][0]["path"]
assert hashlib.sha256(open(p, "rb").read()).hexdigest() == rec["inputs"][0]["sha256"], "sha256"
held_q = {json.loads(l)["question"] for l in gzip.open(held_file, "rt", encoding="utf-8") if l.strip()}
tr = lines(p)
assert tr and all(t["dataset"] == "mmlu" for t in tr), "a held-out dataset among the tokenizer's inputs"
assert not any(t["question"] in q or q in t["question"] for t in tr for q in held_q), "held-out question"
tok = json.load(open(out + "/tokenize/tokenizer.json"))
n_ids = len(tok["model"]["vocab"]) + len(tok.get("added_tokens", []))
assert n_ids == 600, n_ids
# the build used it
man = json.load(open(out + "/shards/manifest.json"))
h = man["settings"]["tokenizer_hash"]
assert h.split(":")[-1] == hashlib.sha256(open(out + "/tokenize/tokenizer.json", "rb").read()).hexdigest(), h
# the LM stage's inputs: train-split shards only, whose tuples are all training items
train_ids = {t["id"] for t in tr}
states = glob.glob(out + "/pretrain/checkpoint-*/sentinel_state.json")
assert states, "no pretrain checkpoint"
for s in states:
    st = json.load(open(s))
    assert st["objective"] == "lm", st["objective"]
    ins = st["inputs"]
    assert ins["split"] == "train" and ins["shards"], ins
    for sh in ins["shards"]:
        assert os.path.basename(sh).startswith("train-"), sh
        with h5py.File(sh if os.path.isabs(sh) else os.path.join(out, "shards", os.path.basename(sh)), "r") as f:
            assert {x.decode() for x in f["meta/split"][:]} == {"train"}
            assert {x.decode() for x in f["meta/dataset"][:]} == {"mmlu"}
            assert {x.decode() for x in f["meta/trajectory_id"][:]} <= train_ids
print("tokenizer inputs", [i["path"] for i in rec["inputs"]], "lm inputs", ins["shards"])
PY

# 3. the build again: the tokenizer is kept
"$bin" run "$recipe" -o "$tmp/a" "${small[@]}" --to build --from build > "$tmp/a2.log" 2>&1 || { cat "$tmp/a2.log"; fail "second run"; }
grep -q "tokenize up to date (skipped)" "$tmp/a2.log" || { cat "$tmp/a2.log"; fail "tokenizer trained again"; }
echo "collab_tokenize: ok"
