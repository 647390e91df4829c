#!/usr/bin/env bash
# Runs every bench/*.sh in name order with the build dir as $1; each prints its own report.
# A benchmark that fails is reported and the others still run; exit status 1 if any failed.
set -u
build=${1:-build}
build=$(cd "$build" && pwd)
failed=0
for b in "$(dirname "$0")"/../bench/*.sh; do
  [ -e "$b" ] || continue
  echo "=== $(basename "$b" .sh)"
  if ! bash "$b" "$build"; then echo "bench $(basename "$b"): FAILED"; failed=1; fi
done
exit $failed
