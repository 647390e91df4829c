/* hf/vocab.c: a base directory's tokenizer.json as the arrays of llama.cpp's tokenizer.ggml keys
** (hf/hf.h; docs/formats.md#gguf). tokenizer.json is parsed and checked by tokenizer/ (its one
** parser, sn_tokenizer_open), so the exporter and the tokenizer that scores agree on every
** token, merge, normalizer and pre-tokenizer; this file adds what the GGUF needs beyond the
** vocabulary: the special ids and tokenizer_config.json's chat template. */
#include "hf/hf.h"
#include "tokenizer/tokenizer.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void sn_hf_tokenizer_free(struct sn_hf_tokenizer *t)
{
    if (!t)
        return;
    struct sn_tokenizer_arrays a = {.tokens = t->tokens, .types = t->types, .n_tokens = t->n,
                                    .merges = t->merges, .n_merges = t->n_merges};
    sn_tokenizer_arrays_free(&a);
    sn_free(t->chat_template);
    memset(t, 0, sizeof *t);
}

/* The id of the added token with this text, or -1. */
static int32_t added_id(const struct sn_tokenizer_arrays *a, const char *text)
{
    for (size_t i = 0; i < a->n_tokens; i++)
        if ((a->types[i] == SN_TOKEN_CONTROL || a->types[i] == SN_TOKEN_USER_DEFINED) &&
            !strcmp(a->tokens[i], text))
            return (int32_t)i;
    return -1;
}

int sn_hf_tokenizer_load(const char *dir, int64_t n_vocab, struct sn_hf_tokenizer *t,
                         struct sn_err *err)
{
    char path[4096];
    struct sn_tokenizer *tok = NULL;
    struct sn_tokenizer_arrays a = {0};
    memset(t, 0, sizeof *t);
    int rc = sn_path_join(path, sizeof path, dir, "tokenizer.json", err);
    if (!rc)
        rc = sn_tokenizer_open(path, &tok, err);
    if (rc)
        return rc;
    if (n_vocab < 1 || sn_tokenizer_vocab_size(tok) > (size_t)n_vocab)
        rc = sn_err_set(err, SN_E_FORMAT, "%s: token id %zu is outside the model's vocab_size %"
                        PRId64, path, sn_tokenizer_vocab_size(tok) - 1, n_vocab);
    if (!rc)
        rc = sn_tokenizer_to_arrays(tok, (size_t)n_vocab, &a, err);
    if (!rc && !a.pre)
        rc = sn_err_set(err, SN_E_UNSUPPORTED, "%s: the pre-tokenizer is neither Qwen2's nor "
                        "GPT-2's; llama.cpp could not reproduce it", path);
    if (!rc) {
        snprintf(t->hash, sizeof t->hash, "%s", sn_tokenizer_hash(tok));
        t->tokens = a.tokens;
        t->types = a.types;
        t->n = a.n_tokens;
        t->merges = a.merges;
        t->n_merges = a.n_merges;
        t->pre = a.pre;
        t->nfc = a.nfc;
        t->bos = t->pad = added_id(&a, "<|endoftext|>");
        t->eos = added_id(&a, "<|im_end|>");
        memset(&a, 0, sizeof a);
    }
    sn_tokenizer_arrays_free(&a);
    sn_tokenizer_free(tok);
    /* chat template: tokenizer_config.json's when present */
    cJSON *tc = NULL;
    struct sn_err e2 = {0};
    if (!rc && !sn_path_join(path, sizeof path, dir, "tokenizer_config.json", &e2) &&
        sn_path_exists(path) && sn_json_load(path, &tc, &e2) == SN_OK) {
        const cJSON *ct = cJSON_GetObjectItemCaseSensitive(tc, "chat_template");
        if (cJSON_IsString(ct) && !(t->chat_template = sn_strdup(ct->valuestring)))
            rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
        cJSON_Delete(tc);
    }
    if (rc)
        sn_hf_tokenizer_free(t);
    return rc;
}
