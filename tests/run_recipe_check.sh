#!/bin/bash
# tests/run_recipe_check.sh: `sentinel run` checks every section of a recipe with the stage's own
# decoder before any stage runs (docs/run.md "Checking a recipe"): a typo, a wrong type or a
# value out of range in any section fails at once with exit 2, a message naming the recipe file
# and the key path, no "re-run to resume" advice, and no file written (not even OUT). `--check`
# prints the Hugging Face names a recipe uses with the sentinel keys they set. Each check names
# what it holds; any failure makes the script exit 1.
set -u
S="$SENTINEL_BIN"
R="$SENTINEL_SRC/recipes/quickstart.json"
T="$SENTINEL_TMP/run_recipe_check"
rm -rf "$T" && mkdir -p "$T"
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }
# fails_early DESC PATTERN --set... : exit 2, PATTERN (grep -E) in stderr, nothing written
fails_early() {
    local desc="$1" pat="$2"
    shift 2
    "$S" run "$R" -o "$T/out" "$@" > "$T/stdout" 2> "$T/err"
    local rc=$?
    if [ "$rc" -ne 2 ]; then bad "$desc: exit $rc, want 2 ($(head -c 300 "$T/err"))"; return; fi
    if ! grep -Eq -- "$pat" "$T/err"; then bad "$desc: stderr lacks '$pat': $(head -c 300 "$T/err")"; return; fi
    if ! grep -q -- "$R" "$T/err"; then bad "$desc: the message does not name the recipe file"; return; fi
    if grep -q "resume" "$T/err" "$T/stdout"; then bad "$desc: resume advice after a recipe error"; return; fi
    if [ -e "$T/out" ]; then bad "$desc: $T/out was created"; rm -rf "$T/out"; return; fi
    if grep -q "== sentinel run: simulate" "$T/stdout"; then bad "$desc: simulate started"; return; fi
    ok "$desc"
}

# the quickstart recipe itself checks, and --check runs nothing
"$S" run "$R" -o "$T/out" --check > "$T/stdout" 2> "$T/err" && [ ! -e "$T/out" ] \
    && grep -q "every section checks" "$T/stdout" && ok "quickstart checks" \
    || bad "quickstart --check ($(cat "$T/err"))"

# simulate and build: each section by its stage's own decoder
fails_early "simulate typo" "unknown key 'simulate.defaults.roundz' \(did you mean 'rounds'\?\)" \
    --set simulate.defaults.roundz=3
fails_early "simulate type" "rounds: expected an integer" --set simulate.defaults.rounds=3x
fails_early "build typo" "unknown key 'build.max_lenn' \(did you mean 'max_len'\?\)" \
    --set build.max_lenn=64
fails_early "build type" "build.shard_size: expected an integer" --set build.shard_size=big
fails_early "build range" "build.deflate_level = 12 must be 0..9" --set build.deflate_level=12
fails_early "build HF twice" "build.max_len and build.max_length are one setting" \
    --set build.max_len=64 --set build.max_length=64
# the eval stage's own debates (eval.experiments under simulate's defaults), checked up front
fails_early "eval debates typo" "eval debates .*unknown key 'simulate.experiments\[0\].scenarioo'" \
    --set 'eval.experiments=[{"name": "x", "scenarioo": "none"}]'
# ... but only when the run reaches eval
"$S" run "$R" -o "$T/out" --check --to train --set 'eval.experiments=[{"name": "x", "scenarioo": "none"}]' \
    > /dev/null 2> "$T/err" && ok "eval debates not checked for --to train" \
    || bad "eval debates checked for --to train ($(cat "$T/err"))"
# a --set under one name replaces the file's key under the other (quickstart has train.lr,
# build.max_len, train.dtype unset)
"$S" run "$R" -o "$T/out" --check --set train.learning_rate=2e-3 --set build.max_length=96 \
    > "$T/stdout" 2> "$T/err" && grep -q 'train.learning_rate = 0.002  ->  train.lr = 0.002' "$T/stdout" \
    && grep -q "lr 0.002" "$T/stdout" && ok "--set of an HF name replaces the file's sentinel key" \
    || bad "--set HF name over the file's key ($(cat "$T/stdout" "$T/err"))"
printf '{"build": {"max_length": 96}}' > "$T/len.json"
"$S" run "$T/len.json" -o "$T/out" --check --to export > /dev/null 2> "$T/err" \
    && ok "build.max_length accepted" || bad "build.max_length ($(cat "$T/err"))"

# train: a typo, a wrong type, a range, an HF name we refuse, both names of one setting
fails_early "train typo" "unknown key 'train.micro_bach' \(did you mean 'micro_batch'\?\)" \
    --set train.micro_bach=2
fails_early "train HF typo" "did you mean 'learning_rate', the Hugging Face name of train.lr" \
    --set train.learning_rat=1e-4
fails_early "train type" "train.lr: expected a number" --set train.lr=fast
fails_early "train range" "train.grad_accum = 0 \(expected >= 1\)" --set train.grad_accum=0
fails_early "train HF refused" "train.fp16 = true is not supported: float16 training needs loss scaling" \
    --set train.fp16=true
fails_early "train HF twice" "train.lr and train.learning_rate are one setting" \
    --set train.lr=1e-4 --set train.learning_rate=1e-4
fails_early "train lora" "unknown key 'train.lora.rank' " --set train.lora.rank=8
# export and eval
fails_early "export typo" "unknown key 'export.max_lenn' \(did you mean 'max_len'\?\)" \
    --set export.max_lenn=64
fails_early "export range" "export.max_len = 0" --set export.max_len=0
fails_early "eval typo" "unknown key 'eval.bootstrp' \(did you mean 'bootstrap'\?\)" \
    --set eval.bootstrp=10
fails_early "eval type" "eval.allow_overlap: expected" --set eval.allow_overlap=yes
fails_early "eval baselines" "eval.baselines: 'randon' is not a baseline" --set eval.baselines=randon
# import: a recipe that starts from debate logs
printf '{"import": {"format": "chatlog", "sets": [{"name": "a", "paths": ["x"], "grup_model": "m"}]}, "eval": {"sets": ["a"]}}' \
    > "$T/imp.json"
"$S" run "$T/imp.json" -o "$T/out" > "$T/stdout" 2> "$T/err"
rc=$?
[ $rc -eq 2 ] && grep -q "import.sets\[0\].grup_model" "$T/err" && [ ! -e "$T/out" ] \
    && ok "import typo" || bad "import typo (exit $rc: $(cat "$T/err"))"

# HF names are accepted, and --check shows the sentinel key each one sets
printf '{"train": {"base": "tiny", "learning_rate": 1e-4, "save_total_limit": 3}}' > "$T/hf.json"
"$S" run "$T/hf.json" -o "$T/out" --check --to export --set train.bf16=true \
    > "$T/stdout" 2> "$T/err"
rc=$?
[ $rc -eq 0 ] && grep -q 'train.learning_rate = 0.0001  ->  train.lr = 0.0001' "$T/stdout" \
    && grep -q 'train.bf16 = true  ->  train.dtype = "bfloat16"' "$T/stdout" \
    && grep -q 'train.save_total_limit = 3  ->  train.keep_last = 2 (and the best)' "$T/stdout" \
    && ok "HF names shown with their sentinel keys" || bad "--check with HF names (exit $rc: $(cat "$T/stdout" "$T/err"))"
"$S" inspect "$T/hf.json" > "$T/stdout" 2> "$T/err" \
    && grep -q 'train.learning_rate = 0.0001  ->  train.lr = 0.0001' "$T/stdout" \
    && grep -q "training:   full on tiny" "$T/stdout" && ok "inspect of a recipe" \
    || bad "inspect of a recipe ($(cat "$T/stdout" "$T/err"))"
printf '{"train": {"learning_rate": 1e-4, "lr": 1e-4}}' > "$T/both.json"
"$S" inspect "$T/both.json" > /dev/null 2> "$T/err"
[ $? -eq 2 ] && grep -q "both.json: train.lr and train.learning_rate are one setting" "$T/err" \
    && ok "inspect of a recipe with both names" || bad "inspect both names ($(cat "$T/err"))"

# export takes its checkpoint from the same choice (docs/run.md "Which checkpoint")
mkdir -p "$T/notackpt"
"$S" export --checkpoint "$T/notackpt" -o "$T/x.gguf" > /dev/null 2> "$T/err"
[ $? -eq 2 ] && grep -q "neither a PEFT adapter" "$T/err" && ok "export --checkpoint of no checkpoint" \
    || bad "export --checkpoint ($(cat "$T/err"))"
"$S" export --checkpoint "$T/notackpt" --base "$T" -o "$T/x.gguf" > /dev/null 2> "$T/err"
[ $? -eq 2 ] && grep -q "give one or the other" "$T/err" && ok "export --checkpoint with --base" \
    || bad "export --checkpoint with --base ($(cat "$T/err"))"
exit $fail
