#!/usr/bin/env bash
# scripts/llama-server.sh: a real llama.cpp `llama-server` for the interop tests (docs/interop.md).
#
# No Debian package ships llama.cpp's server and no npm package ships the program, but npm
# `node-llama-cpp` ships llama.cpp's full source as a git bundle (llama/gitRelease.bundle, the
# llama.cpp release named in llama/llama.cpp.info.json). This script builds the `llama-server`
# target from that bundle once (CPU only, no OpenSSL/curl, no tests, no examples, no web UI) into
#     ${SENTINEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sentinel}/llama-server-<release>/bin/
# outside any build tree, and reuses it while the release (and the bundle commit) is unchanged.
#
#   scripts/llama-server.sh build    build if needed, then print the binary's path on stdout
#   scripts/llama-server.sh path     print the binary's path if it is built (exit 1 if not)
#   scripts/llama-server.sh info     print the cache directory, release and state
#
# Environment:
#   SENTINEL_CACHE                  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/sentinel)
#   SENTINEL_LLAMA_BUNDLE           a gitRelease.bundle to use instead of node-llama-cpp's
#   SENTINEL_NPM_LLAMA              where node-llama-cpp is (or gets) npm-installed
#                                   (default $SENTINEL_BUILD/npm-llama when SENTINEL_BUILD is set,
#                                   else build/npm-llama of this checkout when it holds one, else
#                                   <cache root>/npm-llama)
#   SENTINEL_LLAMA_BUILD_TIMEOUT    seconds for installing, waiting on the lock and building
#                                   (default 1200; 0 = use a cached binary only, never build)
#   SENTINEL_LLAMA_JOBS             parallel compile jobs (default: nproc)
#
# Exit status: 0 ready; 77 not available here, with the reason on stderr (no git/cmake/c++,
# node/npm or the npm registry missing, or the build did not finish within the time bound: the
# partial build is kept in <cache>/llama-server-<release>.work and resumes on the next run);
# 1 a real failure (the configure or the compile failed: see the log it names).
# Two runs never build at once: the build holds an flock on <cache>/llama-server-<release>.lock.
set -u

here=$(cd "$(dirname "$0")" && pwd)
src_root=$(cd "$here/.." && pwd)
cmd=${1:-build}
cache=${SENTINEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sentinel}
budget=${SENTINEL_LLAMA_BUILD_TIMEOUT:-1200}
jobs=${SENTINEL_LLAMA_JOBS:-$(nproc 2>/dev/null || echo 2)}
t_start=$(date +%s)

# The options, in one place: they are part of the build stamp, so changing them rebuilds.
LLAMA_CMAKE_OPTS="-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF
 -DGGML_CCACHE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON
 -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF
 -DLLAMA_OPENSSL=OFF -DLLAMA_ALL_WARNINGS=OFF"

exec 3>&2                               # messages go here even while stderr goes to a log
say() { echo "llama-server.sh: $*" >&3; }
skip() { say "SKIP: $*"; exit 77; }
fail() { say "FAIL: $*"; exit 1; }

case "$cmd" in
    build|path|info) ;;
    -h|--help|help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) say "unknown command '$cmd' (expected build, path or info)"; exit 2 ;;
esac
case "$budget" in
    ''|*[!0-9]*) fail "SENTINEL_LLAMA_BUILD_TIMEOUT='$budget' is not a whole number of seconds" ;;
esac

# --- where the source comes from -------------------------------------------------------------
find_bundle() {
    if [ -n "${SENTINEL_LLAMA_BUNDLE:-}" ]; then
        [ -f "$SENTINEL_LLAMA_BUNDLE" ] ||
            fail "SENTINEL_LLAMA_BUNDLE=$SENTINEL_LLAMA_BUNDLE: no such file"
        bundle=$SENTINEL_LLAMA_BUNDLE
        info_json=$(dirname "$bundle")/llama.cpp.info.json
        return 0
    fi
    local npm_dir
    if [ -n "${SENTINEL_NPM_LLAMA:-}" ]; then
        npm_dir=$SENTINEL_NPM_LLAMA
    elif [ -n "${SENTINEL_BUILD:-}" ]; then
        npm_dir=$SENTINEL_BUILD/npm-llama
    elif [ -f "$src_root/build/npm-llama/node_modules/node-llama-cpp/llama/gitRelease.bundle" ]
    then
        npm_dir=$src_root/build/npm-llama         # what `make test` installed
    else
        npm_dir=$cache/npm-llama
    fi
    local pkg=$npm_dir/node_modules/node-llama-cpp/llama
    if [ ! -f "$pkg/gitRelease.bundle" ]; then
        [ "$cmd" = build ] || return 1
        [ "$budget" -gt 0 ] || skip "no llama.cpp bundle in $npm_dir, and" \
            "SENTINEL_LLAMA_BUILD_TIMEOUT=0 says not to install or build anything"
        # tests/ref/llama_npm.sh pins the node-llama-cpp version and exits 77 without npm.
        sh "$src_root/tests/ref/llama_npm.sh" "$npm_dir" >&2
        local rc=$?
        [ $rc -eq 77 ] &&
            skip "node-llama-cpp (which carries the llama.cpp source) cannot be installed"
        [ $rc -eq 0 ] || fail "installing node-llama-cpp into $npm_dir failed"
        [ -f "$pkg/gitRelease.bundle" ] ||
            skip "$pkg/gitRelease.bundle is missing: this node-llama-cpp ships no llama.cpp source"
    fi
    bundle=$pkg/gitRelease.bundle
    info_json=$pkg/llama.cpp.info.json
}

if ! find_bundle; then
    echo "not built (no llama.cpp bundle found; run: scripts/llama-server.sh build)" >&2
    exit 1
fi
release=""
[ -f "$info_json" ] && release=$(sed -n 's/.*"tag"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' \
                                 "$info_json" | head -n 1)
case "$release" in
    ''|*[!A-Za-z0-9._-]*)
        fail "cannot read a llama.cpp release tag from $info_json (got '$release')" ;;
esac
command -v git >/dev/null 2>&1 || skip "git not found (needed to read the llama.cpp bundle)"
commit=$(git bundle list-heads "$bundle" 2>/dev/null | awk 'NR == 1 { print $1 }')
case "$commit" in
    [0-9a-f]*) ;;
    *) fail "$bundle is not a readable git bundle (git bundle list-heads failed)" ;;
esac
# shellcheck disable=SC2086,SC2116 # the unquoted echo folds the options onto one line
stamp_text="release=$release commit=$commit options=$(echo $LLAMA_CMAKE_OPTS)"

dest=$cache/llama-server-$release
work=$dest.work
lock=$dest.lock
bin=$dest/bin/llama-server

is_built() {
    [ -x "$bin" ] && [ -f "$dest/STAMP" ] && [ "$(cat "$dest/STAMP")" = "$stamp_text" ]
}

case "$cmd" in
    path)
        is_built && { echo "$bin"; exit 0; }
        echo "not built: $bin (run: scripts/llama-server.sh build)" >&2
        exit 1 ;;
    info)
        echo "cache:   $cache"
        echo "release: $release (commit $commit, from $bundle)"
        if is_built; then echo "binary:  $bin"; cat "$dest/BUILD_INFO" 2>/dev/null
        elif [ -d "$work" ]; then echo "binary:  not built (partial build in $work)"
        else echo "binary:  not built"
        fi
        exit 0 ;;
esac

if is_built; then
    echo "$bin"
    exit 0
fi

# --- build, once, under a lock ---------------------------------------------------------------
[ "$budget" -gt 0 ] ||
    skip "llama-server $release is not built and SENTINEL_LLAMA_BUILD_TIMEOUT=0 says not to" \
         "build it"
command -v cmake >/dev/null 2>&1 || skip "cmake not found"
command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 || skip "no C++ compiler found"
command -v flock >/dev/null 2>&1 || skip "flock (util-linux) not found"
mkdir -p "$cache" ||
    skip "cannot create the cache directory $cache (set SENTINEL_CACHE to a writable one)"

remaining() { echo $(( budget - ($(date +%s) - t_start) )); }
# bounded CMD...: CMD under what is left of the time bound; a step that runs out of time skips.
bounded() {
    local left
    left=$(remaining)
    [ "$left" -gt 0 ] ||
        skip "no time left within the ${budget} s bound (SENTINEL_LLAMA_BUILD_TIMEOUT)"
    timeout -k 10 "$left" "$@"
    local rc=$?
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        skip "building llama-server did not finish within the ${budget} s bound" \
             "(SENTINEL_LLAMA_BUILD_TIMEOUT); the partial build in $work resumes on the next run," \
             "or pre-build it with: scripts/llama-server.sh build"
    fi
    return $rc
}

exec 9>"$lock" || fail "cannot open the lock file $lock"
if ! flock -n 9; then
    say "another run is building llama-server $release (lock $lock); waiting up to $(remaining) s"
    left=$(remaining)
    [ "$left" -gt 0 ] && flock -w "$left" 9 ||
        skip "another run held the build lock $lock for longer than the time bound (${budget} s)"
fi
if is_built; then                       # the other run finished it while we waited
    echo "$bin"
    exit 0
fi

# A work tree from another bundle commit or other options is stale: start over.
if [ -d "$work" ] && [ "$(cat "$work/STAMP" 2>/dev/null)" != "$stamp_text" ]; then
    say "removing a stale partial build in $work"
    rm -rf "$work"
fi
mkdir -p "$work" || fail "cannot create $work"
echo "$stamp_text" > "$work/STAMP"
log=$work/build.log
if [ ! -f "$work/src/CMakeLists.txt" ]; then
    rm -rf "$work/src"
    say "extracting llama.cpp $release ($commit) from $bundle"
    bounded git clone -q --no-checkout "$bundle" "$work/src" >> "$log" 2>&1 &&
        git -C "$work/src" -c advice.detachedHead=false checkout -q "$commit" >> "$log" 2>&1 ||
        { rm -rf "$work/src"; fail "cannot extract $bundle (log: $log)"; }
fi
if [ ! -f "$work/build/CMakeCache.txt" ]; then
    say "configuring (log: $log)"
    # shellcheck disable=SC2086
    bounded cmake -S "$work/src" -B "$work/build" $LLAMA_CMAKE_OPTS >> "$log" 2>&1 ||
        { rm -rf "$work/build"; tail -n 30 "$log" >&2
          fail "configuring llama.cpp failed (log: $log)"; }
fi
say "building target llama-server with -j$jobs, at most $(remaining) s (load: $(cut -d' ' -f1-3 \
/proc/loadavg 2>/dev/null)); a cold build needs about 11 CPU-minutes"
t_build=$(date +%s)
bounded cmake --build "$work/build" --target llama-server -j "$jobs" >> "$log" 2>&1
rc=$?
[ $rc -eq 0 ] || { tail -n 30 "$log" >&2; fail "building llama-server failed (log: $log)"; }
built=$(find "$work/build" -type f -name llama-server -perm -u+x | head -n 1)
[ -n "$built" ] || fail "the build succeeded but no llama-server binary is in $work/build"

# Install: a fresh directory renamed into place, so a reader never sees a half-copied binary.
tmp=$dest.tmp.$$
rm -rf "$tmp"
mkdir -p "$tmp/bin" && cp "$built" "$tmp/bin/llama-server" || fail "cannot copy into $tmp"
{
    echo "built:   $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m), $jobs jobs"
    echo "seconds: $(( $(date +%s) - t_build )) (the compile step of this run; a build resumed" \
         "from an earlier run's partial work took that much more)"
    echo "load:    $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null) at the end"
    echo "version: $("$tmp/bin/llama-server" --version 2>&1 | grep -m 1 '^version:' | cut -c 10-)"
} > "$tmp/BUILD_INFO"
echo "$stamp_text" > "$tmp/STAMP"
sync "$tmp/bin/llama-server" "$tmp/STAMP" 2>/dev/null
rm -rf "$dest"
mv "$tmp" "$dest" || fail "cannot rename $tmp to $dest"
rm -rf "$work"
say "built $bin in $(( $(date +%s) - t_build )) s"
echo "$bin"
exit 0
