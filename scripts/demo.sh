#!/usr/bin/env bash
# make demo: the whole pipeline on recipes/quickstart.json with `sentinel run` (docs/run.md):
# simulated debates -> tuples -> the tiny model trained from its own init -> GGUF detector ->
# evaluation on fresh debates, into out/quickstart/ (SENTINEL_DEMO_OUT overrides). Every stage
# is cached and resumable: running it again does only what changed.
set -euo pipefail
build=${1:-build}
bin="$build/sentinel"
out=${SENTINEL_DEMO_OUT:-out/quickstart}
recipe=recipes/quickstart.json
start=$(date +%s)
"$bin" run "$recipe" -o "$out"
echo "demo: done in $(( $(date +%s) - start )) s (the summary above is also $out/summary.txt;" \
     "make demo again: every stage is skipped)"
