#!/usr/bin/env bash
# bench/shards.sh BUILD_DIR: HDF5 shard throughput (issue 7 "Benchmarks"):
#   1. bench_shards: tuples/s written, read sequentially (iterator with prefetch) and at random,
#      tokens/s read, and the template's tokenization rate (demo tokenizer);
#   2. `sentinel build` end to end on trajectories from `sentinel simulate` (sim backend):
#      tuples/s from gzip JSONL to committed shards with the demo tokenizer.
# Environment: N (tuples for bench_shards, default 16384), DEBATES (items for simulate, 200).
set -euo pipefail
B=${1:?usage: bench/shards.sh BUILD_DIR}
"$B/bench/bench_shards" "${N:-16384}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/r.json" <<JSON
{"simulate": {"experiments": [
  {"name": "bench", "scenario": "collaboration", "n_agents": 5, "n_adversaries": 2,
   "rounds": 3, "rhetoric": "mixed",
   "dataset": {"kind": "synthetic", "n": ${DEBATES:-200}, "seed": 1}}]}}
JSON
"$B/sentinel" simulate --recipe "$tmp/r.json" -o "$tmp/traj" --progress none 2>/dev/null
"$B/sentinel" tokenize --write-demo "$tmp/tok.json"
t0=$(date +%s.%N)
"$B/sentinel" build -i "$tmp/traj" -o "$tmp/shards" --tokenizer "$tmp/tok.json" \
  --max-len 1024 --progress none > "$tmp/build.log"
t1=$(date +%s.%N)
n=$(grep -o '"total":[[:space:]]*[0-9]*' "$tmp/shards/manifest.json" | grep -o '[0-9]*$')
awk -v n="$n" -v a="$t0" -v b="$t1" \
  'BEGIN { printf "  sentinel build end to end: %d tuples in %.2f s = %.0f tuples/s (gzip JSONL -> tokenized shards, demo tokenizer, max_len 1024, process start included)\n", n, b - a, n / (b - a) }'
