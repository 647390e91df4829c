#!/usr/bin/env bash
# make demo: the main job end to end on the embedded default. Stages that are not built yet
# are reported as such (README.md "Status"), never faked.
set -euo pipefail
build=${1:-build}
bin="$build/sentinel"
out=${SENTINEL_DEMO_OUT:-out/demo}
mkdir -p "$out"
echo "demo: output in $out"
"$bin" --version
