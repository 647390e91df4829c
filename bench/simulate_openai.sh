#!/usr/bin/env bash
# bench/simulate_openai.sh BUILD_DIR: the `openai` backend against a loopback server that answers
# after a fixed 100 ms (tests/servers/fake_openai.py), at concurrency 64 (issue 6 "Benchmarks"):
#   1. bench_simulate_openai: requests/s as a fraction of the concurrency/latency bound
#      (target >= 0.9) and memory per in-flight request;
#   2. `sentinel simulate` with an openai endpoint (synthetic questions, 5 agents, 3 rounds,
#      cache off): debates/s and requests/s through the whole debate engine.
# Environment: N (requests, default 1280), CONC (64), LATENCY_MS (100), DEBATES (640; the
# wall time includes process start-up, ~1-2 s with libtorch linked in),
# THREADS (simulate worker threads, default 2 * CONC: a thread that is between two requests of
# its debate does not hold a slot, so more threads than slots keep every slot busy).
set -euo pipefail
BUILD=${1:?usage: bench/simulate_openai.sh BUILD_DIR}
SRC=$(cd "$(dirname "$0")/.." && pwd)
N=${N:-1280}
CONC=${CONC:-64}
LATENCY_MS=${LATENCY_MS:-100}
DEBATES=${DEBATES:-640}
THREADS=${THREADS:-$((2 * CONC))}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sn-bench-openai.XXXXXX")
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
SERVER_PID=
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT

"${SENTINEL_PYTHON:-/usr/bin/python3}" "$SRC/tests/servers/fake_openai.py" --port-file "$TMP/port" \
  --latency-ms "$LATENCY_MS" --lifetime 600 > /dev/null &
SERVER_PID=$!
for _ in $(seq 100); do [ -s "$TMP/port" ] && break; sleep 0.05; done
PORT=$(cat "$TMP/port")
URL="http://127.0.0.1:$PORT/v1"
echo "== simulate_openai: fake server $URL answering after $LATENCY_MS ms"

"$BUILD/bench/bench_simulate_openai" --base-url "$URL" --n "$N" --concurrency "$CONC" \
  --latency-ms "$LATENCY_MS"
echo "-- the same with the response cache on (every reply written: one fsync'd file each)"
"$BUILD/bench/bench_simulate_openai" --base-url "$URL" --n "$N" --concurrency "$CONC" \
  --latency-ms "$LATENCY_MS" --cache-dir "$TMP/cache"
echo "-- the same with cache_fsync false (atomic rename, no fsync)"
"$BUILD/bench/bench_simulate_openai" --base-url "$URL" --n "$N" --concurrency "$CONC" \
  --latency-ms "$LATENCY_MS" --cache-dir "$TMP/cache-nofsync" --no-fsync

if [ -x "$BUILD/sentinel" ] && "$BUILD/sentinel" simulate --help > /dev/null 2>&1; then
  cat > "$TMP/recipe.json" <<EOF
{"out_dir": "$TMP/out", "simulate": {
  "endpoints": {"llm": {"kind": "openai", "base_url": "$URL", "model": "bench",
                        "concurrency": $CONC, "cache": false}},
  "defaults": {"dataset": {"kind": "synthetic", "n": $DEBATES, "seed": 3},
               "backend": "llm", "n_agents": 5, "rounds": 3, "seed": 1},
  "experiments": [{"name": "bench-openai", "scenario": "none"}]}}
EOF
  curl -s -X POST "http://127.0.0.1:$PORT/reset" > /dev/null
  t0=$(date +%s.%N)
  rc=0
  "$BUILD/sentinel" simulate --recipe "$TMP/recipe.json" -o "$TMP/out/traj" --threads "$THREADS" \
    --progress none || rc=$?
  t1=$(date +%s.%N)
  stats=$(curl -s "http://127.0.0.1:$PORT/stats")
  "${SENTINEL_PYTHON:-/usr/bin/python3}" - "$t0" "$t1" "$rc" "$DEBATES" "$CONC" "$LATENCY_MS" "$stats" "$THREADS" <<'EOF'
import json, sys
t0, t1, rc, n, conc, lat = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), \
    int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
st = json.loads(sys.argv[7])
threads = int(sys.argv[8])
dt = t1 - t0
rps = st["hits"] / dt
print("sentinel simulate (openai, 5 agents x 3 rounds, %d debates, concurrency %d, --threads %d): exit %d, "
      "%.2f s, %.2f debates/s, %d requests = %.1f requests/s (%.3f of the %.0f/s bound), "
      "server max concurrent %d" % (n, conc, threads, rc, dt, n / dt, st["hits"], rps,
                                    rps / (conc / (lat / 1000)), conc / (lat / 1000),
                                    st["max_concurrent"]))
print(json.dumps({"bench": "simulate_openai_debates", "debates": n, "seconds": round(dt, 3),
                  "debates_per_s": round(n / dt, 3), "requests": st["hits"],
                  "rps": round(rps, 2), "max_concurrent": st["max_concurrent"]}))
EOF
else
  echo "sentinel simulate not available in $BUILD: debates/s through the engine skipped"
fi
