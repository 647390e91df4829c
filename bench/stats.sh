#!/usr/bin/env bash
# bench/stats.sh BUILD_DIR: `sentinel stats` throughput on 100,000 generated five-agent
# five-round debates (aim: the whole metric set in < 10 s on one core, bounded memory).
# Generation is not timed. Prints trajectories/s, seconds and peak RSS (full set and 1/10 set;
# peak RSS through /usr/bin/time, Debian package `time`).
set -eu
build=${1:-build}
bin="$build/bench/bench_stats"
[ -x "$bin" ] || { echo "bench stats: $bin not built"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_stats.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores"
# one core: the metrics are single-threaded; taskset keeps the reading honest
if command -v taskset >/dev/null; then pin="taskset -c 0"; else pin=""; fi
$pin "$bin" --n "${BENCH_STATS_N:-100000}" --dir "$tmp" --bin "$build/sentinel"
