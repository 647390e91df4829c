#!/bin/sh
# bench/serve.sh BUILD_DIR: `sentinel serve` throughput at SERVE_CLIENTS concurrent clients (4)
# next to in-process scoring with the same total threads (bench/bench_serve.c; docs/agents.md
# "Throughput"): bench_detector's model with SERVE_LAYERS layers (8), requests of one context and
# 5 responses of about SERVE_TOKENS tokens (200), SERVE_REQUESTS requests per side (32).
set -u
build=$(cd "${1:?usage: bench/serve.sh BUILD_DIR}" && pwd)
out="$build/bench/serve"
mkdir -p "$out"
echo "== bench/serve: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$build/bench/bench_serve" "$out" --clients "${SERVE_CLIENTS:-4}" --layers "${SERVE_LAYERS:-8}" \
    --tokens "${SERVE_TOKENS:-200}" --requests "${SERVE_REQUESTS:-32}" | tee "$out/result.txt"
