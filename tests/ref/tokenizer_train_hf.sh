#!/bin/sh
# tests/ref/tokenizer_train_hf.sh: ctest driver for tokenizer_train_hf (tests/tokenizer.cmake).
# Trains a tokenizer with `sentinel tokenize train` on 4000 corpus lines (seed 3; vocabulary
# 2000, the ChatML specials), then checks with tokenizer_train_hf.mjs that Hugging Face
# tokenizers loads it and encodes 3000 other corpus strings (seed 11) to our ids. The npm
# references are those of tokenizer_npm.sh. Exit 77 = skipped (no node/npm or registry).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/tokenizer_npm.sh"
sn_tok_npm_build
work="${SENTINEL_TMP:-/tmp}/tokenizer_train_hf"
mkdir -p "$work" || exit 1
node "$here/tokenizer_corpus.mjs" 4000 3 --lines > "$work/train.txt" || exit 1
"${SENTINEL_BIN:?}" tokenize train -o "$work/tokenizer.json" --vocab-size 2000 \
    --progress none "$work/train.txt" || exit 1
exec node "$here/tokenizer_train_hf.mjs" "$SN_TOK_NPM_DIR" "$SENTINEL_BIN" \
    "$work/tokenizer.json" "${SN_TOK_TRAIN_HF_N:-3000}" 11
