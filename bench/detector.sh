#!/bin/sh
# bench/detector.sh BUILD_DIR: runtime detector scoring speed (bench/bench_detector.c) next to
# llama.cpp (node-llama-cpp, bench/ref/llama_bench.mjs; installed into BUILD/npm-llama by
# tests/ref/llama_npm.sh) on the same GGUF, sequences and threads, and next to the libtorch
# forward (in bench_detector when built with libtorch), in one run; then both f32 rewards
# against a float64 reference (bench/ref/detector_f64.py; skipped without torch).
# Env: DET_THREADS (default nproc), DET_LAYERS (8), DET_TOKENS (320), DET_PAIRS (6),
# DET_GEN_TPS (50: the generating model's tokens/s for the round-overhead figure).
set -u
build=$(cd "${1:?usage: bench/detector.sh BUILD_DIR}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
threads=${DET_THREADS:-$(nproc)}
out="$build/bench/detector"
mkdir -p "$out"
echo "== bench/detector: $(nproc) cores, $threads threads, load average" \
     "$(cut -d' ' -f1-3 /proc/loadavg)"
"$build/bench/bench_detector" "$out" --threads "$threads" --layers "${DET_LAYERS:-8}" \
    --tokens "${DET_TOKENS:-320}" --pairs "${DET_PAIRS:-6}" --gen-tps "${DET_GEN_TPS:-50}" \
    | tee "$out/ours.txt" || exit 1
sh "$src/tests/ref/llama_npm.sh" "$build/npm-llama" > /dev/null
if [ $? -ne 0 ]; then
    echo "bench/detector: node-llama-cpp unavailable; llama.cpp comparison skipped"
    exit 0
fi
node "$src/bench/ref/llama_bench.mjs" "$build/npm-llama" "$out" "$threads" | tee "$out/llama.txt" ||
    exit 1
get() { sed -n "s/^RESULT $1=//p" "$2" | head -1; }
o1=$(get ours_single_tok_s "$out/ours.txt"); l1=$(get llama_single_tok_s "$out/llama.txt")
o2=$(get ours_shared_tuples_s "$out/ours.txt"); l2=$(get llama_shared_tuples_s "$out/llama.txt")
awk -v o1="$o1" -v l1="$l1" -v o2="$o2" -v l2="$l2" 'BEGIN {
    printf "ours / llama.cpp: single-pair scoring %.2fx (target >= 2x), shared context " \
           "tuples/s %.2fx (target >= 4x)\n", o1 / l1, o2 / l2 }'
# Which side a reward disagreement comes from: both f32 rewards against a float64 reference.
/usr/bin/python3 "$src/bench/ref/detector_f64.py" "$out" | tee "$out/f64.txt"
