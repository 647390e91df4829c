#!/usr/bin/env bash
# DESIGN.md §3: aten/ holds the project's only C++. Fails, naming the files, if any other
# source file in the tree is C++ (by extension, or a .c/.h that includes a C++ standard header).
set -u
root=${1:-.}
cd "$root" || exit 2
bad=$(find . -path ./aten -prune -o \( -path './build*' -o -path ./node_modules -o -path ./.git \) -prune -o \
        -type f \( -name '*.cpp' -o -name '*.cc' -o -name '*.cxx' -o -name '*.hpp' -o -name '*.hh' \) -print)
inc=$(grep -rlE --include='*.c' --include='*.h' '^\s*#\s*include\s*<((iostream|string|vector|memory|cstdio|cstdlib)>|torch/|ATen/|c10/)' \
        --exclude-dir=aten --exclude-dir='build*' --exclude-dir=.git . 2>/dev/null)
if [ -n "$bad$inc" ]; then
  echo "C++ outside aten/:"; printf '%s\n' $bad $inc
  exit 1
fi
n=$(find . -path './build*' -prune -o -name '*.c' -print | wc -l)
echo "ok: $n C files, C++ only under aten/"
