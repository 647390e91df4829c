#!/usr/bin/env bash
# tests/eval_types.sh: `sentinel eval`'s figures by message type and AITM's tampered copy ranked
# lowest against an independent reference (scripts/message_types.py, plain Python from the
# --items scores and the debates), and the below-chance sentence of its summary against its
# JSON (docs/eval.md "By message type", "Below chance", "AITM"). A small sim run: collaboration,
# AITM and PsySafe debates, the baselines and the tiny random detector (tests/export_fixture.cmake).
# Env (from ctest): SENTINEL_BIN, SENTINEL_SRC, SENTINEL_TMP.
set -euo pipefail
bin=${SENTINEL_BIN:?}
src=${SENTINEL_SRC:?}
tmp="${SENTINEL_TMP:-/tmp}/eval_types"
det="${SENTINEL_TMP:-/tmp}/tiny_detector/d.gguf"
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$tmp"
mkdir -p "$tmp"
cat > "$tmp/r.json" <<'JSON'
{"simulate": {
  "endpoints": {"sim": {"kind": "sim", "competence": 0.7}},
  "defaults": {"dataset": {"kind": "synthetic", "n": 12, "seed": 5, "numeric_share": 0.4},
               "backend": "sim", "n_agents": 5, "rounds": 3, "seed": 2},
  "experiments": [
    {"name": "t-collab", "scenario": "collaboration", "n_adversaries": 2, "rhetoric": "mixed",
     "topology": "complete", "strategy": "simultaneous"},
    {"name": "t-aitm", "scenario": "aitm", "n_adversaries": 2, "topology": "complete",
     "strategy": "sc_one_by_one"},
    {"name": "t-psysafe", "scenario": "psysafe", "n_adversaries": 2, "persona": "bandwagon"}]}}
JSON
"$bin" simulate --recipe "$tmp/r.json" -o "$tmp/sim" --progress none > /dev/null 2>&1 \
  || fail "simulate"
[ -s "$det" ] || fail "no tiny detector at $det (the tiny_detector fixture)"
"$bin" eval -i "$tmp/sim" --detector "$det" --threads 1 --bootstrap 100 --progress none \
  --items "$tmp/items.csv" --json "$tmp/report.json" > "$tmp/report.txt" \
  || fail "eval"
# every per-type AUROC, count and the AITM share of every ranker, in every group the reference
# can name, agree with the reference (exit 1 naming each difference)
"${SENTINEL_PYTHON:-/usr/bin/python3}" "$src/scripts/message_types.py" --items "$tmp/items.csv" -i "$tmp/sim" \
  --ranker detector --ranker random --ranker shortest --ranker disagree \
  --check "$tmp/report.json" || fail "eval and scripts/message_types.py differ"
# the summary states the below-chance groups in one line, the JSON's sentence
want=$("${SENTINEL_PYTHON:-/usr/bin/python3}" -c 'import json, sys
print(json.load(open(sys.argv[1]))["detector_below_chance"]["sentence"])' "$tmp/report.json")
[ -n "$want" ] || fail "no detector_below_chance.sentence in report.json"
sed -n '/^== summary/,$p' "$tmp/report.txt" | grep -qxF -- "$want" \
  || { sed -n '/^== summary/,$p' "$tmp/report.txt"; fail "the summary lacks: $want"; }
grep -q '^tampered copy lowest (AITM rankings), pooled ' "$tmp/report.txt" \
  || fail "the summary lacks the AITM row"
grep -q '^-- by message type' "$tmp/report.txt" || fail "no message-type table"
echo "ok: eval_types ($want)"
