#!/usr/bin/env bash
# tests/score_pairs.sh: `sentinel score` reads (context, response) pairs the same way with the
# training-side model (--model, sentinel-torch) and with the runtime detector (--detector, no
# libtorch): on the trained_run fixture, whose detector.gguf is the export of its final
# checkpoint, both give the same rewards (to 1e-4 of 1 + |r|) for --jsonl records (a single
# response and a shared context with several) and for --context/--response files, and, with
# --max-tokens set to the GGUF's sentinel.max_len, for a response long enough to be cut from
# its front (the template keeps the task whole and cuts the response's beginning).
# Usage errors: --context without --response, two inputs at once.
# Env (from ctest): SENTINEL_BIN, SENTINEL_TMP.
set -euo pipefail
bin=${SENTINEL_BIN:?}
run="${SENTINEL_TMP:-/tmp}/run_pipeline/a"
tmp="${SENTINEL_TMP:-/tmp}/score_pairs"
rm -rf "$tmp" && mkdir -p "$tmp"
fail() { echo "FAIL: $*"; exit 1; }
[ -f "$run/train/latest" ] || fail "no $run/train (the trained_run fixture)"
ck="$run/train/$(cat "$run/train/latest")"
gg="$run/detector.gguf"
max_len=$("$bin" inspect --json "$gg" | "${SENTINEL_PYTHON:-/usr/bin/python3}" -c \
  'import json, sys; print(json.load(sys.stdin)["keys"]["sentinel.max_len"])')

"${SENTINEL_PYTHON:-/usr/bin/python3}" - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
ctx = "Question: which planet is largest? (A) Mars (B) Jupiter (C) Venus (D) Mercury"
long_resp = " ".join("Step %d: the reasoning holds up, so (%s)." % (i, "ABCD"[i % 4])
                     for i in range(120)) + " Final answer: (B) Jupiter."
recs = [{"context": "Question: what is 2+2? (A) 3 (B) 4", "response": "I think (B)."},
        {"context": "Question: capital of France? (A) Paris (B) Rome",
         "responses": ["(A) Paris.", "Definitely (B), everyone knows.", "(A)"]},
        {"context": ctx, "response": long_resp}]
with open(tmp + "/pairs.jsonl", "w") as f:
    for r in recs:
        f.write(json.dumps(r) + "\n")
open(tmp + "/c.txt", "w").write(ctx)
open(tmp + "/r.txt", "w").write(long_resp + " Really.")
PY

"$bin" score --model "$ck" --jsonl "$tmp/pairs.jsonl" --max-tokens "$max_len" > "$tmp/model.txt" ||
  fail "score --model --jsonl"
"$bin" score --detector "$gg" --jsonl "$tmp/pairs.jsonl" > "$tmp/det.txt" || fail "score --detector --jsonl"
"$bin" score --model "$ck" --context "$tmp/c.txt" --response "$tmp/r.txt" --max-tokens "$max_len" \
  >> "$tmp/model.txt" || fail "score --model --context"
"$bin" score --detector "$gg" --context "$tmp/c.txt" --response "$tmp/r.txt" >> "$tmp/det.txt" ||
  fail "score --detector --context"
"${SENTINEL_PYTHON:-/usr/bin/python3}" - "$tmp/model.txt" "$tmp/det.txt" <<'PY'
import sys
a = [float(x) for x in open(sys.argv[1])]
b = [float(x) for x in open(sys.argv[2])]
assert len(a) == len(b) == 6, (len(a), len(b))
worst = max(abs(x - y) / (1 + abs(y)) for x, y in zip(a, b))
assert worst <= 1e-4, (a, b, worst)
assert len(set(round(x, 4) for x in a)) > 1, a  # the rewards differ between responses
print("model vs detector: %d rewards, worst %.2e" % (len(a), worst))
PY
rc=0; "$bin" score --model "$ck" --context "$tmp/c.txt" 2> "$tmp/u.err" || rc=$?
[ "$rc" = 2 ] && grep -q 'go together' "$tmp/u.err" || fail "--context alone: exit $rc"
rc=0; "$bin" score --model "$ck" --ids --jsonl "$tmp/pairs.jsonl" 2> "$tmp/u.err" || rc=$?
[ "$rc" = 2 ] && grep -q 'choose one input' "$tmp/u.err" || fail "two inputs: exit $rc"
rc=0; printf '{"context": 3}\n' | "$bin" score --model "$ck" --jsonl - 2> "$tmp/u.err" || rc=$?
[ "$rc" = 1 ] && grep -q -- '-:1: expected {"context": string' "$tmp/u.err" ||
  fail "bad record: exit $rc, $(cat "$tmp/u.err")"
echo "ok: --model and --detector read pairs alike and agree"
