#!/bin/bash
# tests/preference_train.sh: a detector trains from TRL preference data end to end (README.md
# "Training from preference data"): `sentinel build` reads recipes/preference/tiny.jsonl (all
# four row formats) with the demo tokenizer, `sentinel train` runs a few steps of the tiny model
# on the shards, `sentinel score` scores a (context, responses) line with the checkpoint, and the
# GGUF detector exported from it scores that line the same.
set -eu
bin="$SENTINEL_BIN"
src="$SENTINEL_SRC"
out="$SENTINEL_TMP/preference_train"
rm -rf "$out"
mkdir -p "$out"
cd "$out"
fail() { echo "FAIL: $*" >&2; for f in *.log; do echo "== $f"; cat "$f"; done >&2; exit 1; }
"$bin" tokenize --write-demo tok.json
"$bin" build -r "$src/recipes/preference.json" -i "$src/recipes/preference/tiny.jsonl" -o shards \
    --tokenizer tok.json --progress none > build.log 2>&1 || fail "build"
grep -q "read 48 preference rows: 0 with a sequence truncated" build.log || fail "build summary"
grep -q '"preference_rows": 48' shards/manifest.json || fail "manifest stats"
"$bin" train -r "$src/recipes/preference.json" -i shards -o train --tokenizer tok.json \
    --max-steps 6 --progress none > train.log 2>&1 || fail "train"
test -s train/final_metrics.json || fail "no final_metrics.json"
test "$(grep -c '"step"' train/metrics.jsonl)" -ge 6 || fail "fewer than 6 steps logged"
"$bin" score --checkpoint train --jsonl "$src/recipes/preference/score.jsonl" > scores.txt \
    2> score.log || fail "score"
test "$(wc -l < scores.txt)" = 2 || fail "want 2 scores"
grep -Eqv '^-?[0-9]+\.[0-9]{6}$' scores.txt && fail "a score is not a number"
# the exported GGUF detector scores the same line as the training-side model
"$bin" export --checkpoint train -o d.gguf --max-len 384 --progress none > export.log 2>&1 \
    || fail "export"
"$bin" score --detector d.gguf --jsonl "$src/recipes/preference/score.jsonl" > det.txt \
    2>> score.log || fail "score --detector"
paste scores.txt det.txt | awk '{d = $1 - $2; if (d < 0) d = -d; if (d > 1e-3) bad = 1}
                                END {exit bad}' || fail "detector and checkpoint scores differ"
echo "ok: built, trained 6 steps, scored: $(tr '\n' ' ' < scores.txt)/ detector $(tr '\n' ' ' < det.txt)"
