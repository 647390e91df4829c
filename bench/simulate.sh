#!/usr/bin/env bash
# bench/simulate.sh BUILD_DIR: debates/s with the sim backend:
# the engine in process (bench_simulate), then `sentinel simulate` end to end (recipe parsing,
# work list, worker thread, gzip members, fsync) on a 2,000-debate recipe, one thread.
# The openai half lives in bench/simulate_openai.sh.
set -euo pipefail
B=${1:?usage: bench/simulate.sh BUILD_DIR}
"$B/bench/bench_simulate" "${BENCH_SECONDS:-2}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/r.json" <<'JSON'
{"simulate": {"experiments": [
  {"name": "bench", "scenario": "collaboration", "n_agents": 5, "n_adversaries": 2,
   "rounds": 5, "rhetoric": "mixed", "replicates": 10,
   "dataset": {"kind": "synthetic", "n": 200, "seed": 1}}]}}
JSON
t0=$(date +%s.%N)
"$B/sentinel" simulate --recipe "$tmp/r.json" -o "$tmp/out" --threads 1 --progress none 2>/dev/null
t1=$(date +%s.%N)
n=$(zcat "$tmp/out/trajectories-0of1.jsonl.gz" | wc -l)
awk -v n="$n" -v a="$t0" -v b="$t1" -v s="$(stat -c %s "$tmp/out/trajectories-0of1.jsonl.gz")" \
  'BEGIN { printf "  sentinel simulate end to end: %d debates in %.2f s = %.0f debates/s (1 thread), %.1f KB/debate gzipped\n", n, b - a, n / (b - a), s / n / 1024 }'
