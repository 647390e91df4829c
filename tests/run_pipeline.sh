#!/usr/bin/env bash
# tests/run_pipeline.sh: `sentinel run` on recipes/quickstart.json reduced by --set (few items,
# few steps). Env (from ctest): SENTINEL_BIN, SENTINEL_SRC, SENTINEL_TMP.
# It is also the suite's trained fixture (`trained_run`, tests/run.cmake): at the end
# $SENTINEL_TMP/run_pipeline/a is a finished run directory (detector.gguf, train/metrics.jsonl,
# train/final_metrics.json, shards/, eval/report.json, eval/items.csv) that the tests with
# FIXTURES_REQUIRED trained_run read and must not modify.
set -euo pipefail
bin=${SENTINEL_BIN:?}
src=${SENTINEL_SRC:?}
tmp="${SENTINEL_TMP:-/tmp}/run_pipeline"
rm -rf "$tmp" && mkdir -p "$tmp"
recipe="$src/recipes/quickstart.json"
# the reduced settings (tests/quickstart_reduced.sh says why each)
source "$src/tests/quickstart_reduced.sh"
fail() { echo "FAIL: $*"; exit 1; }
stages() { grep -E '^== sentinel run: (simulate|build|train|export|eval) \(' "$1" \
             | sed -E 's/^== sentinel run: ([a-z]+) .*/\1/' | tr '\n' ' ' | sed 's/ $//'; }

# 1. the whole pipeline
"$bin" run "$recipe" -o "$tmp/a" "${small[@]}" > "$tmp/a1.log" 2>&1 || { cat "$tmp/a1.log"; fail "first run"; }
[ "$(stages "$tmp/a1.log")" = "simulate build train export eval" ] \
  || { cat "$tmp/a1.log"; fail "first run: stages '$(stages "$tmp/a1.log")'"; }
for f in detector.gguf run.json eval/report.json eval/report.txt eval/items.csv \
         train/metrics.jsonl train/final_metrics.json shards/manifest.json; do
  [ -s "$tmp/a/$f" ] || fail "missing $f"
done
grep -q "detector      $tmp/a/detector.gguf" "$tmp/a1.log" || fail "summary does not name the detector"
grep -q "held-out pairwise accuracy, test split" "$tmp/a1.log" || fail "summary lacks the held-out accuracy"
grep -q "eval items    $tmp/a/eval/items.csv" "$tmp/a1.log" || fail "summary does not name the eval items"
grep -q "^defended debates, last round: recovery" "$tmp/a1.log" \
  || fail "summary lacks the defended debates (accuracy recovery)"
grep -q "^zero attackers, last round: clean .*cost of the defence" "$tmp/a1.log" \
  || fail "summary lacks the cost of the defence at zero attackers"
# the run ends with its summary, at most 25 lines, also saved as summary.txt (docs/run.md)
n=$(wc -l < "$tmp/a/summary.txt")
[ "$n" -le 25 ] || { cat "$tmp/a/summary.txt"; fail "summary is $n lines (at most 25)"; }
tail -n "$n" "$tmp/a1.log" | cmp -s - "$tmp/a/summary.txt" || fail "the run does not end with summary.txt"
grep -q "^the detector beats the best baseline on: " "$tmp/a/summary.txt" \
  || fail "summary lacks eval's sentences on the best baseline"
"${SENTINEL_PYTHON:-/usr/bin/python3}" - "$tmp/a/run.json" "$tmp/a/eval/report.json" <<'PY' || fail "run.json / report.json"
import json, sys
st = json.load(open(sys.argv[1]))["stages"]
assert [k for k in st] == ["simulate", "build", "train", "export", "eval"], st
assert all(v["state"] == "done" and len(v["key"]) == 64 for v in st.values()), st
assert len({v["key"] for v in st.values()}) == 5
rep = json.load(open(sys.argv[2]))
assert rep["debates"] > 0 and rep["debates_on_train_items"] == 0, rep["debates"]
# defended debates ride along (eval.defended defaults to true): four arms, matched
d = rep["defended"]
assert rep["mode"] == "replay+defended", rep["mode"]
n = d["debates"]
assert n["clean"] == n["attacked"] == n["defended"] == n["clean_defended"] > 0, n
cost = d["groups"]["all"]["last_round"]["cost_of_defence"]
assert cost["debates"] == n["clean"] and cost["p"] is not None, cost
# sim agents: no measured overhead, with the reason
assert "sim agents" in d["overhead_measured"]["attacked_to_defended"]["na"], d["overhead_measured"]
ov = d["groups"]["all"]["overall"]
for arm in ("clean", "attacked", "defended"):
    assert 0 <= ov["accuracy"][arm]["p"] <= 1, (arm, ov["accuracy"][arm])
assert ov["recovery"]["na"] is not None or ov["recovery"]["p"] is not None, ov["recovery"]
PY

# The trained detector must detect: on the held-out evaluation debates its AUROC (over all
# messages) and its agent-level detection accuracy (last round) beat random ranking and the
# shortest-message heuristic by stated margins (0.10 and 0.05). The reduced run trains 12
# steps with fixed seeds; the full quickstart's figures are in README.md.
"${SENTINEL_PYTHON:-/usr/bin/python3}" - "$tmp/a/eval/report.json" <<'PY' || fail "the detector does not beat random and shortest by the margins"
import json, sys
rep = json.load(open(sys.argv[1]))
fig = {r["ranker"]: r["groups"]["all"]["overall"] for r in rep["rankers"]}
auc = {k: v["auroc"]["p"] for k, v in fig.items()}
acc = {k: v["agent_detection_accuracy"]["p"] for k, v in fig.items()}
print("AUROC", auc)
print("agent detection accuracy", acc)
for base in ("random", "shortest"):
    assert auc["detector"] >= auc[base] + 0.10, ("AUROC", base, auc)
    assert acc["detector"] >= acc[base] + 0.05, ("detection accuracy", base, acc)
PY
cp "$tmp/a/train/final_metrics.json" "$tmp/a1.final.json"
# the detector scores: the GGUF loads in the runtime
"$bin" inspect "$tmp/a/detector.gguf" > /dev/null || fail "inspect detector.gguf"

# 2. again: nothing to do, nothing touched
before=$(cd "$tmp/a" && find . -type f ! -name run.json -printf '%p %T@\n' | sort | sha256sum)
"$bin" run "$recipe" -o "$tmp/a" "${small[@]}" > "$tmp/a2.log" 2>&1 || { cat "$tmp/a2.log"; fail "second run"; }
grep -q "nothing to do" "$tmp/a2.log" || { cat "$tmp/a2.log"; fail "second run did not say nothing to do"; }
[ -z "$(stages "$tmp/a2.log")" ] || fail "second run ran: $(stages "$tmp/a2.log")"
[ "$(grep -c 'up to date (skipped)' "$tmp/a2.log")" = 5 ] || fail "second run: not 5 skips"
after=$(cd "$tmp/a" && find . -type f ! -name run.json -printf '%p %T@\n' | sort | sha256sum)
[ "$before" = "$after" ] || fail "second run touched files"

# 3. one training setting changed: train, export and eval only
traj_before=$(find "$tmp/a/trajectories" "$tmp/a/shards" -type f -printf '%p %T@\n' | sort | sha256sum)
"$bin" run "$recipe" -o "$tmp/a" "${small[@]}" --set train.lr=5e-4 > "$tmp/a3.log" 2>&1 \
  || { cat "$tmp/a3.log"; fail "third run"; }
[ "$(stages "$tmp/a3.log")" = "train export eval" ] \
  || { cat "$tmp/a3.log"; fail "changed lr: stages '$(stages "$tmp/a3.log")'"; }
traj_after=$(find "$tmp/a/trajectories" "$tmp/a/shards" -type f -printf '%p %T@\n' | sort | sha256sum)
[ "$traj_before" = "$traj_after" ] || fail "changed lr: simulate or build outputs were touched"
grep -q '"lr": 0.0005\|learning_rate' "$tmp/a/train/metrics.jsonl" || fail "no metrics after re-train"

# 4. killed during train (SIGKILL after step 7, no checkpoint), re-run: resumes, and ends with
# the final metrics of an uninterrupted run (the trainer's resume is exact on the CPU). The
# test hook's variable is read by build too, so the run stops after build first (--to).
"$bin" run "$recipe" -o "$tmp/k" "${small[@]}" --to build > "$tmp/k0.log" 2>&1 || { cat "$tmp/k0.log"; fail "--to build"; }
[ "$(stages "$tmp/k0.log")" = "simulate build" ] || fail "--to build: stages '$(stages "$tmp/k0.log")'"
# a usage error in a stage (an unknown train key) exits 2 without resume advice
rc=0
"$bin" run "$recipe" -o "$tmp/k" "${small[@]}" --set train.bogus=1 --to train > "$tmp/ku.log" 2>&1 || rc=$?
[ "$rc" = 2 ] || { cat "$tmp/ku.log"; fail "usage error in train: exit $rc, expected 2"; }
grep -q "unknown key 'train.bogus'" "$tmp/ku.log" || { cat "$tmp/ku.log"; fail "no unknown-key message"; }
! grep -q "to resume" "$tmp/ku.log" || { cat "$tmp/ku.log"; fail "resume advice after a usage error"; }
# SIGTERM during train: a checkpoint, exit 143 passed on by run with the resume advice
rc=0
SENTINEL_TEST_TERM_AFTER=3 "$bin" run "$recipe" -o "$tmp/k" "${small[@]}" --to train > "$tmp/kt.log" 2>&1 || rc=$?
[ "$rc" = 143 ] || { cat "$tmp/kt.log"; fail "SIGTERM in train: exit $rc, expected 143"; }
grep -q "stage train interrupted (exit 143); re-run" "$tmp/kt.log" || { cat "$tmp/kt.log"; fail "no interrupt message"; }
rc=0
SENTINEL_TEST_KILL_AFTER=7 "$bin" run "$recipe" -o "$tmp/k" "${small[@]}" > "$tmp/k1.log" 2>&1 || rc=$?
[ "$rc" = 1 ] || { cat "$tmp/k1.log"; fail "killed run: exit $rc, expected 1"; }
grep -q '"train": {"key": "[0-9a-f]*", "state": "running"}\|"state": "running"' "$tmp/k/run.json" \
  || fail "killed run: train not recorded as running"
"$bin" run "$recipe" -o "$tmp/k" "${small[@]}" > "$tmp/k2.log" 2>&1 || { cat "$tmp/k2.log"; fail "resumed run"; }
grep -q "train (resuming after an interrupted run)" "$tmp/k2.log" || { cat "$tmp/k2.log"; fail "did not resume"; }
[ "$(stages "$tmp/k2.log")" = "train export eval" ] || fail "resumed: stages '$(stages "$tmp/k2.log")'"
"${SENTINEL_PYTHON:-/usr/bin/python3}" - "$tmp/a1.final.json" "$tmp/k/train/final_metrics.json" <<'PY' || fail "resumed != uninterrupted"
import json, math, sys
a, k = (json.load(open(p)) for p in sys.argv[1:3])
assert a["step"] == k["step"], (a["step"], k["step"])
for split in ("validation", "test"):
    for key, v in a.get(split, {}).items():
        w = k[split][key]
        if isinstance(v, float) and not (math.isnan(v) and math.isnan(w)):
            assert abs(v - w) <= 1e-5 * max(1.0, abs(v)), (split, key, v, w)
print("resumed run's final metrics equal the uninterrupted run's:", a.get("test"))
PY
echo "ok: run_pipeline"
