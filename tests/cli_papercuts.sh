#!/usr/bin/env bash
# tests/cli_papercuts.sh: the command line's small promises (docs/design.md §1): a mistyped
# command or option gets the nearest name ("did you mean"), exit 2; a known option without its
# value says so; `sentinel report` has --help. Env (from ctest): SENTINEL_BIN, SENTINEL_TMP.
set -euo pipefail
bin=${SENTINEL_BIN:?}
tmp="${SENTINEL_TMP:-/tmp}/cli_papercuts"
rm -rf "$tmp" && mkdir -p "$tmp"
fail() { echo "FAIL: $*"; exit 1; }
expect() { # expect STATUS TEXT -- command...
  local want=$1 text=$2; shift 3
  set +e; "$@" > "$tmp/out" 2>&1; local st=$?; set -e
  [ $st -eq "$want" ] || { cat "$tmp/out"; fail "$*: exit $st, expected $want"; }
  grep -qF -- "$text" "$tmp/out" || { cat "$tmp/out"; fail "$*: no '$text'"; }
}
expect 2 "unknown command 'trian' (did you mean 'train'?)" -- "$bin" trian
expect 2 "unknown command 'evl' (did you mean 'eval'?)" -- "$bin" evl
expect 2 "unknown command 'frobnicate'; try" -- "$bin" frobnicate
expect 2 "unknown option '--forse' (did you mean '--force'?)" -- "$bin" run --forse r.json
expect 2 "unknown option '--recipy' (did you mean '--recipe'?)" -- "$bin" simulate --recipy x
expect 2 "unknown option '--tokeniser' (did you mean '--tokenizer'?)" -- "$bin" build --tokeniser x
expect 2 "unknown option '--verfy' (did you mean '--verify'?)" -- "$bin" inspect --verfy x
expect 2 "unknown option '--zzzzzzzzzz'" -- "$bin" inspect --zzzzzzzzzz x
expect 2 "option '--out' needs a value" -- "$bin" run r.json --out
expect 0 "usage: sentinel report RUN_DIR" -- "$bin" report --help
expect 1 "not a directory" -- "$bin" report "$tmp/none"
# a bad line of `score --jsonl` is named once ("-:1: expected", not "-:1: -:1: expected"),
# with the trained fixture's detector (tests/run.cmake) when this build has one
gguf="${SENTINEL_TMP:-/tmp}/run_pipeline/a/detector.gguf"
if [ -s "$gguf" ]; then
  printf '{"context": 1}\n' > "$tmp/bad.jsonl"
  expect 1 "sentinel score: -:1: expected {" -- sh -c "'$bin' score --detector '$gguf' --jsonl - < '$tmp/bad.jsonl'"
  ! grep -q -- "-:1: -:1:" "$tmp/out" || { cat "$tmp/out"; fail "location printed twice"; }
else
  echo "note: no trained fixture ($gguf): the score message check is left out"
fi
echo ok
