#!/bin/sh
# tests/ref/llama_npm.sh DIR: makes sure DIR/node_modules holds node-llama-cpp (pinned: 3.22.1,
# which bundles llama.cpp v0.5.0 with prebuilt CPU binaries), installing it with npm on first
# use. Exit 0 ready, 77 node/npm missing or the registry unreachable (a skip), 1 npm failed.
PKG="node-llama-cpp@3.22.1"
dir=${1:?usage: llama_npm.sh DIR}
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "SKIP: node/npm not found (Debian: apt-get install nodejs npm)"
    exit 77
fi
stamp="$dir/.installed-$(echo "$PKG" | sed 's/[^A-Za-z0-9.]/_/g')"
if [ -f "$stamp" ] && [ -d "$dir/node_modules/node-llama-cpp" ]; then
    exit 0
fi
mkdir -p "$dir" || exit 1
[ -f "$dir/package.json" ] || echo '{"name": "sentinel-llama-ref", "private": true}' \
    > "$dir/package.json"
echo "installing $PKG into $dir (once)"
if timeout 900 npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$PKG" \
        > "$dir/npm-install.log" 2>&1; then
    rm -f "$dir"/.installed*
    touch "$stamp"
    exit 0
fi
if ! timeout 60 npm ping > /dev/null 2>&1; then
    echo "SKIP: the npm registry is unreachable (npm ping failed); cannot install $PKG"
    exit 77
fi
echo "FAIL: npm install failed although the registry answers; log:"
tail -n 20 "$dir/npm-install.log"
exit 1
