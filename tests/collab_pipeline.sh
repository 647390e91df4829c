#!/usr/bin/env bash
# tests/collab_pipeline.sh: the real-text pipeline of recipes/collab-attack.json, reduced: the
# shipped recipe with its import sets, sizes and steps overridden by --set (one vendored file of
# MMLU debates to train on, one of MedMCQA debates held out as a whole dataset, a few hundred
# tuples, the tiny model, 24 steps), run end to end by `sentinel run` (import -> build -> train
# -> export -> eval). Env (from ctest): SENTINEL_BIN, SENTINEL_SRC, SENTINEL_TMP.
#
# What it asserts: every stage runs and leaves its output; the tuples follow the selection rules
# on real text (adversary messages rejected, MedMCQA explanations as references, the held-out
# dataset only in the test split); the eval report replays every held-out debate with the
# detector next to the random, shortest, disagree and n-gram baselines, none on a training item.
# It asserts no margin of the detector over the baselines: 24 steps of a from-scratch model on
# a few hundred real tuples give figures that move with the thread count and libtorch version
# (the full runs' figures, good or bad, are in docs/collab-attack.md).
set -euo pipefail
bin=${SENTINEL_BIN:?}
src=${SENTINEL_SRC:?}
tmp="${SENTINEL_TMP:-/tmp}/collab_pipeline"
rm -rf "$tmp" && mkdir -p "$tmp"
recipe="$src/recipes/collab-attack.json"
logs="$src/data/collab-attack/logs"
fail() { echo "FAIL: $*"; exit 1; }

train_file="$logs/mmlu/adv_100_3_3_1-gpt-3.5-turbo-gpt-3.5-turbo/adv_mmlu_100_3_3_1_0-gpt-3.5-turbo-gpt-3.5-turbo.jsonl.gz"
held_file="$logs/medmcqa/adv_100_3_3_1-gpt-3.5-turbo-gpt-3.5-turbo/adv_medmcqa_100_3_3_1_0-gpt-3.5-turbo-gpt-3.5-turbo.jsonl.gz"
sets="[{\"name\":\"mmlu\",\"paths\":[\"$train_file\"]},{\"name\":\"medmcqa\",\"paths\":[\"$held_file\"]}]"
small=(--set "import.sets=$sets" --set 'eval.sets=["medmcqa"]'
       --set 'build.test=["medmcqa"]' --set build.max_len=512
       --set train.max_steps=24 --set train.micro_batch=4 --set train.save_every=12
       --set train.warmup_steps=4 --set eval.bootstrap=0)

# 0. recipe errors are refused before anything runs, naming the key
set +e
"$bin" run "$recipe" -o "$tmp/bad" "${small[@]}" --set 'eval.sets=["nosuchset"]' > "$tmp/bad1.log" 2>&1
rc1=$?
"$bin" run "$recipe" -o "$tmp/bad" "${small[@]}" --set 'simulate={}' > "$tmp/bad2.log" 2>&1
rc2=$?
set -e
[ $rc1 = 2 ] && grep -q "eval.sets: 'nosuchset' is not the name of an import set" "$tmp/bad1.log" \
  || { cat "$tmp/bad1.log"; fail "unknown eval set: exit $rc1"; }
[ $rc2 = 2 ] && grep -q "exclusive" "$tmp/bad2.log" || { cat "$tmp/bad2.log"; fail "import + simulate: exit $rc2"; }
[ ! -e "$tmp/bad/trajectories" ] || fail "a refused recipe ran the import stage"

# 1. the whole pipeline
"$bin" run "$recipe" -o "$tmp/a" "${small[@]}" > "$tmp/a1.log" 2>&1 || { cat "$tmp/a1.log"; fail "run"; }
stages=$(grep -E '^== sentinel run: (import|simulate|build|train|export|eval) \(' "$tmp/a1.log" | sed -E 's/^== sentinel run: ([a-z]+) .*/\1/' \
         | tr '\n' ' ' | sed 's/ $//')
[ "$stages" = "import build train export eval" ] || { cat "$tmp/a1.log"; fail "stages '$stages'"; }
for f in trajectories/mmlu.jsonl.gz trajectories/medmcqa.jsonl.gz shards/manifest.json \
         train/final_metrics.json detector.gguf eval/report.json eval/report.txt run.json; do
  [ -s "$tmp/a/$f" ] || fail "missing $f"
done
grep -q "held-out splits hold out whole values of build.split_by = dataset" "$tmp/a1.log" \
  || fail "summary does not say the split is by dataset"
grep -q "held-out pairwise accuracy, test split" "$tmp/a1.log" || fail "summary lacks the test split's accuracy"
"$bin" inspect "$tmp/a/detector.gguf" > /dev/null || fail "inspect detector.gguf"

"${SENTINEL_PYTHON:-/usr/bin/python3}" - "$tmp/a" "$train_file" "$held_file" <<'PY' || fail "outputs"
import glob, gzip, json, sys
import h5py
out, train_file, held_file = sys.argv[1:4]
st = json.load(open(out + "/run.json"))["stages"]
assert list(st) == ["import", "build", "train", "export", "eval"], list(st)
assert all(v["state"] == "done" for v in st.values()), st

# import: one trajectory per source line, texts byte for byte (the importer's own tests check
# the rest of the mapping)
def lines(p):
    with gzip.open(p, "rt", encoding="utf-8") as f:
        return [json.loads(l) for l in f if l.strip()]
for name, src in (("mmlu", train_file), ("medmcqa", held_file)):
    tr, so = lines(f"{out}/trajectories/{name}.jsonl.gz"), lines(src)
    assert len(tr) == len(so) == 100, (name, len(tr), len(so))
    assert all(t["dataset"] == name for t in tr), name
    # every record: agent k's (t+1)-th assistant reply is round t's text of agent k
    for t, s in zip(tr, so):
        for k, conv in enumerate(s["agent_responses"]):
            replies = [m["content"] for m in conv if m["role"] == "assistant"]
            assert [r[k]["text"] for r in t["rounds"]] == replies, (name, t["id"], k)

# build: a few hundred tuples; MMLU trains, MedMCQA only in test, with its explanations
man = json.load(open(out + "/shards/manifest.json"))
c = man["counts"]
assert man["settings"]["split_by"] == "dataset" and man["settings"]["test"] == ["medmcqa"], man["settings"]
assert 100 <= c["train"] <= 1000 and c["test"] > 0 and c["validation"] == 0, c
by_split = {}
expl = {t["id"]: t.get("gold_explanation") for t in lines(f"{out}/trajectories/medmcqa.jsonl.gz")}
n_ref_expl = n_adv = 0
for p in sorted(glob.glob(out + "/shards/*.h5")):
    with h5py.File(p, "r") as h:
        ds = [x.decode() for x in h["meta/dataset"][:]]
        sp = [x.decode() for x in h["meta/split"][:]]
        kind = [x.decode() for x in h["meta/rejected_kind"][:]]
        role = [x.decode() for x in h["meta/rejected_role"][:]]
        tid = [x.decode() for x in h["meta/trajectory_id"][:]]
        ref = [x.decode() for x in h["text/reference"][:]]
        for i in range(len(ds)):
            by_split.setdefault(sp[i], set()).add(ds[i])
            assert (kind[i] == "adversary") == (role[i] == "adversary"), (kind[i], role[i])
            n_adv += kind[i] == "adversary"
            e = expl.get(tid[i])
            if ds[i] == "medmcqa" and e:
                assert ref[i].startswith(e), "reference is not the MedMCQA explanation"
                n_ref_expl += 1
assert by_split.get("train") == {"mmlu"} and by_split.get("test") == {"medmcqa"}, by_split
assert n_adv > 0, "no adversary message among the rejected"
assert n_ref_expl > 0, "no MedMCQA explanation used as a reference"

# eval: every held-out debate replayed, none on a training item, detector next to baselines
rep = json.load(open(out + "/eval/report.json"))
assert rep["debates"] == 100 and rep["debates_on_train_items"] == 0, (rep["debates"], rep["debates_on_train_items"])
rankers = {r["ranker"] for r in rep["rankers"]}
assert {"detector", "random", "shortest", "disagree", "ngram"} <= rankers, rankers
for r in rep["rankers"]:
    o = r["groups"]["all"]["overall"]
    for k in ("auroc", "agent_detection_accuracy"):
        p = o[k]["p"]
        assert p is not None and 0.0 <= p <= 1.0, (r["ranker"], k, p)
fm = json.load(open(out + "/train/final_metrics.json"))
assert "test" in fm and 0.0 <= fm["test"]["accuracy"] <= 1.0, fm.get("test")
print("tuples", c, "adversary rejected", n_adv, "explanation references", n_ref_expl)
print("AUROC", {r["ranker"]: r["groups"]["all"]["overall"]["auroc"]["p"] for r in rep["rankers"]})
PY
grep -q "detection accuracy (agents)" "$tmp/a/eval/report.txt" || fail "report.txt lacks the detection rows"

# 2. again: every stage is up to date
"$bin" run "$recipe" -o "$tmp/a" "${small[@]}" > "$tmp/a2.log" 2>&1 || { cat "$tmp/a2.log"; fail "second run"; }
grep -q "nothing to do" "$tmp/a2.log" || { cat "$tmp/a2.log"; fail "second run did not say nothing to do"; }
grep -q "import   up to date (skipped)" "$tmp/a2.log" || { cat "$tmp/a2.log"; fail "import stage not skipped"; }
echo "collab_pipeline: ok"
