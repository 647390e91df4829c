#!/usr/bin/env bash
# tests/check_links.sh EXE REGEX [LINK_TXT]: a library's real dependencies (docs/design.md §3,
# docs/modules.txt). Fails, naming them, when a shared library EXE loads (ldd, transitive) or
# the link command CMake wrote for EXE (LINK_TXT; Makefile generators only) matches the
# extended regex REGEX; then runs EXE with no arguments, which must exit 0.
set -u
exe=$1
re=$2
link=${3:-}
bad=$(ldd "$exe" | grep -oE "$re[^ ]*" | sort -u)
if [ -n "$link" ] && [ -f "$link" ]; then
  bad="$bad $(tr ' ' '\n' < "$link" | grep -E "$re" | sort -u)"
fi
if [ -n "${bad// /}" ]; then
  echo "$(basename "$exe") links what it must not ($re):"
  printf '  %s\n' $bad
  exit 1
fi
"$exe" > /dev/null || { echo "$(basename "$exe") failed to run"; exit 1; }
echo "ok: $(basename "$exe") links none of $re"
