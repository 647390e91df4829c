#!/usr/bin/env bash
# make demo: the main job end to end on the embedded default (simulated agents, the demo
# byte-level tokenizer), into out/demo/ (SENTINEL_DEMO_OUT overrides). Every stage is resumable,
# so running it twice continues rather than starting over. Stages that are not built yet
# (trainer, GGUF export, runtime detector) are reported as such, never faked.
set -euo pipefail
build=${1:-build}
bin="$build/sentinel"
out=${SENTINEL_DEMO_OUT:-out/demo}
recipe=recipes/quickstart.json
mkdir -p "$out"
step() { printf '\n== %s\n' "$*"; }

step "1/5 simulate: debates under attack with the built-in sim agents -> $out/trajectories"
"$bin" simulate --recipe "$recipe" -o "$out/trajectories" --progress plain

step "2/5 stats: group dynamics -> $out/stats.json, $out/stats.csv"
"$bin" stats "$out/trajectories" --by experiment --json "$out/stats.json" --csv "$out/stats.csv" \
    --progress none

step "3/5 tokenizer: the demo byte-level tokenizer -> $out/tokenizer.json"
"$bin" tokenize --write-demo "$out/tokenizer.json"

step "4/5 build: (context, chosen, rejected, reference) tuples -> $out/shards"
"$bin" build -i "$out/trajectories" -o "$out/shards" --tokenizer "$out/tokenizer.json" \
    --max-len 512 --progress plain

step "5/5 inspect: what the shards hold"
"$bin" inspect "$out/shards"

cat <<EOT

demo: done.
  trajectories  $out/trajectories/
  stats report  $out/stats.json  (table above; plot it with notebooks/01_group_dynamics.ipynb)
  shards        $out/shards/  (manifest.json lists them)
  detector      not produced: the trainer (sentinel train), GGUF export and the runtime
                detector are the next pipeline stages and are not built yet (README.md, Status).
EOT
