#!/usr/bin/env bash
# tests/check_links.sh EXE REGEX [LINK_TXT]: a library's real dependencies (docs/design.md §3,
# docs/modules.txt). Fails, naming them, when a shared library EXE loads (ldd, transitive) or
# the link command CMake wrote for EXE (LINK_TXT; Makefile generators only) matches the
# extended regex REGEX; then runs EXE with no arguments, which must exit 0. A shared library
# (EXE named *.so*) is checked by what it loads (ldd) and names (readelf -d, NEEDED), not run.
# MODE link-only (4th argument) skips ldd: for programs on libtorch, whose own dependencies
# (libcurl, HDF5, PCRE2 in Debian's build) ldd lists and which are not ours to choose.
set -u
exe=$1
re=$2
link=${3:-}
mode=${4:-}
bad=""
if [ "$mode" != link-only ]; then
  bad=$(ldd "$exe" | grep -oE "$re[^ ]*" | sort -u)
fi
case "$exe" in
  *.so|*.so.*) bad="$bad $(readelf -d "$exe" | grep NEEDED | grep -oE "$re[^] ]*" | sort -u)" ;;
esac
if [ -n "$link" ] && [ -f "$link" ]; then
  bad="$bad $(tr ' ' '\n' < "$link" | grep -E "$re" | sort -u)"
fi
if [ -n "${bad// /}" ]; then
  echo "$(basename "$exe") links what it must not ($re):"
  printf '  %s\n' $bad
  exit 1
fi
case "$exe" in
  *.so|*.so.*) ;;
  *) "$exe" > /dev/null || { echo "$(basename "$exe") failed to run"; exit 1; } ;;
esac
echo "ok: $(basename "$exe") links none of $re"
