#!/usr/bin/env bash
# scripts/gpu_ecosystem.sh BUILD_DIR WORK_DIR: do PEFT, transformers and tokenizers load what
# sentinel writes? Two halves:
#  1. sentinel (BUILD_DIR/sentinel, which hands score and train to BUILD_DIR/sentinel-torch):
#     a tiny preference set into shards, a few LoRA steps on the seeded `tiny` base (written to
#     WORK/train/base, docs/train.md), `sentinel export --peft --hf` (docs/export.md), rewards
#     of 10 (context, response) pairs by `sentinel score`, and the ids of those pairs and of
#     some texts by `sentinel tokenize`, with a demo and a `sentinel tokenize train` tokenizer;
#     about 3 s on 2 cores, no Python packages beyond the standard library.
#  2. scripts/gpu_ecosystem.py check: PEFT's PeftModel, transformers'
#     AutoModelForSequenceClassification and tokenizers' Tokenizer.from_file on those files,
#     rewards on the same ids within 1e-4 * max(1, |r|) of sentinel's, ids equal; the GPU too
#     when torch sees one. What each check does: that script's docstring.
# Prints one line per check (PASS/FAIL name: figures), writes WORK/ecosystem.json.
# Exit: 0 all pass, 1 any failure, 77 a package (torch, transformers, peft, tokenizers) is not
# importable by $PYTHON (default python3), 2 usage. The check is stopped after
# $GPU_ECOSYSTEM_TIMEOUT seconds (default 300; importing torch and transformers alone can take
# tens of seconds), each sentinel command after 120. WORK_DIR's own subfolders (in, out, logs,
# shards, train, peft, hf) are replaced; nothing else there is touched.
set -uo pipefail
case ${1:-} in -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
if [ $# -ne 2 ]; then
    echo "usage: $0 BUILD_DIR WORK_DIR" >&2
    exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
py=${PYTHON:-python3}
bin="$1/sentinel"
if [ ! -x "$bin" ] || [ ! -x "$1/sentinel-torch" ]; then
    echo "FAIL sentinel_side: $1 lacks sentinel or sentinel-torch (build both targets)"
    exit 1
fi
mkdir -p "$2" || exit 1
work=$(cd "$2" && pwd)
for d in in out logs shards train peft hf; do
    rm -rf "${work:?}/$d"
done
rm -f "$work/steps.tsv" "$work/ecosystem.json"
mkdir -p "$work/in" "$work/out" "$work/logs" || exit 1

# step NAME STDIN STDOUT CMD...: runs CMD under a time limit (no step may hang the caller's
# slot), stdin from STDIN (- = none), stdout to STDOUT (- = the log), stderr to logs/NAME.err;
# appends "NAME<TAB>exit<TAB>seconds" to steps.tsv. After a failure the later steps are
# recorded as skipped, and the check still runs to report it.
failed=0
step() {
    local name=$1 in=$2 out=$3 rc=0 t0 t1
    shift 3
    if [ "$failed" -ne 0 ]; then
        printf '%s\tskipped\t0\n' "$name" >> "$work/steps.tsv"
        return 1
    fi
    [ "$in" = - ] && in=/dev/null
    [ "$out" = - ] && out="$work/logs/$name.out"
    t0=$(date +%s%N)
    timeout -k 5 120 "$@" < "$in" > "$out" 2> "$work/logs/$name.err" || rc=$?
    t1=$(date +%s%N)
    printf '%s\t%s\t%d.%03d\n' "$name" "$rc" "$(( (t1 - t0) / 1000000000 ))" \
        "$(( (t1 - t0) / 1000000 % 1000 ))" >> "$work/steps.tsv"
    if [ "$rc" -ne 0 ]; then
        failed=1
        echo "sentinel step $name failed (exit $rc): $*" >&2
        tail -n 5 "$work/logs/$name.err" >&2
        return 1
    fi
}

w=$work
S=(--progress none)
step prepare - - "$py" "$here/gpu_ecosystem.py" prepare "$w"
step version - - "$bin" --version
step demo_tokenizer - - "$bin" tokenize --write-demo "$w/in/demo-tokenizer.json"
step build - - "$bin" build -i "$w/in/prefs.jsonl" -o "$w/shards" \
    --tokenizer "$w/in/demo-tokenizer.json" --max-len 384 "${S[@]}"
step train - - "$bin" train -r "$w/in/recipe.json" -i "$w/shards" -o "$w/train" \
    --tokenizer "$w/in/demo-tokenizer.json" "${S[@]}"
ckpt="$w/train/$(cat "$w/train/latest" 2> /dev/null)"
base="$w/train/base"
step export - - "$bin" export --base "$base" --adapter "$ckpt" --peft "$w/peft" --hf "$w/hf" \
    "${S[@]}"
# The rendered pairs through the base's tokenizer: the ids Python feeds to the models.
step tokenize_pairs "$w/in/rendered.jsonl" "$w/out/ids.txt" \
    "$bin" tokenize --tokenizer "$base/tokenizer.json" --json
# sentinel's rewards: the pairs as `score --jsonl` renders them; the same pairs from our ids
# (equal rewards = equal sequences); the PEFT and merged exports read back by sentinel.
step score_jsonl - "$w/out/rewards_jsonl.txt" \
    "$bin" score --model "$base" --adapter "$ckpt" --jsonl "$w/in/pairs.jsonl" --batch 1
step score_ids "$w/out/ids.txt" "$w/out/rewards_ids.txt" \
    "$bin" score --model "$base" --adapter "$ckpt" --ids --batch 1
step score_peft "$w/out/ids.txt" "$w/out/rewards_peft.txt" \
    "$bin" score --model "$base" --adapter "$w/peft" --ids --batch 1
step score_hf "$w/out/ids.txt" "$w/out/rewards_hf.txt" \
    "$bin" score --model "$w/hf" --ids --batch 1
step tokenizer_train - - "$bin" tokenize train -o "$w/in/trained-tokenizer.json" \
    --vocab-size 400 "${S[@]}" "$w/in/corpus.txt"
step tokenize_demo "$w/in/strings.jsonl" "$w/out/tok_demo.txt" \
    "$bin" tokenize --tokenizer "$base/tokenizer.json" --json
step tokenize_trained "$w/in/strings.jsonl" "$w/out/tok_trained.txt" \
    "$bin" tokenize --tokenizer "$w/in/trained-tokenizer.json" --json

# The check reports a failed step too (sentinel_side).
limit=${GPU_ECOSYSTEM_TIMEOUT:-300}
rc=0
timeout -k 10 "$limit" "$py" "$here/gpu_ecosystem.py" check "$w" || rc=$?
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "FAIL python_side: $py scripts/gpu_ecosystem.py check stopped after $limit s"
    exit 1
fi
if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ] && [ "$rc" -ne 77 ]; then
    echo "FAIL python_side: $py scripts/gpu_ecosystem.py check exited $rc"
    exit 1
fi
exit "$rc"
