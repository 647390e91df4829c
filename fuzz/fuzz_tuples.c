/* fuzz/fuzz_tuples.c: the tuple builder and the prompt template (tuples/tuples.h,
** tokenizer/template.h) on arbitrary trajectory lines. The input is one JSON line; when it parses
** as a trajectory, every tuple it yields is rendered and tokenized with the demo tokenizer at a
** max_len derived from the input size (96..995, so truncation of history and responses is
** exercised). Invariants (abort on violation): every tuple has a 64-hex content hash equal to
** sn_tuples_hash of its texts; a successful encoding has at most max_len ids, starts with
** <|im_start|>, ends with <|im_end|> "\n", and is the same when repeated; a failure is SN_E_ARG
** (task too long) or SN_E_FORMAT (invalid UTF-8 in the input), never anything else. */
#include "tuples/tuples.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct sn_tokenizer *tok;
static int32_t id_start, id_end, id_nl;

static void init(void)
{
    char path[64];
    struct sn_err err = {0};
    snprintf(path, sizeof path, "/tmp/fuzz_tuples_tok.%ld.json", (long)getpid());
    if (sn_tokenizer_write_demo(path, &err) || sn_tokenizer_open(path, &tok, &err)) {
        fprintf(stderr, "fuzz_tuples: demo tokenizer: %s\n", err.msg);
        abort();
    }
    unlink(path);
    id_start = sn_tokenizer_token_id(tok, "<|im_start|>");
    id_end = sn_tokenizer_token_id(tok, "<|im_end|>");
    id_nl = sn_tokenizer_token_id(tok, "\n");
}

struct ctx {
    size_t max_len;
    size_t n;
};

static int on_tuple(void *user, const struct sn_tuple *t, struct sn_err *err)
{
    struct ctx *c = user;
    char hex[65];
    (void)err;
    sn_tuples_hash(t->text, hex);
    if (!t->meta.sha256 || strcmp(hex, t->meta.sha256) != 0)
        abort();
    if (c->n++ > 64) /* bound the work per input */
        return SN_OK;
    for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT; f++) {
        struct sn_ids a = {0}, b = {0};
        struct sn_err e = {0};
        struct sn_template_cut cut;
        int rc = sn_template_encode(tok, &t->prompt, t->text[f], c->max_len, &a, &cut, NULL, &e);
        if (rc == SN_OK) {
            if (a.n > c->max_len || a.n < 4 || a.v[0] != id_start || a.v[a.n - 2] != id_end ||
                a.v[a.n - 1] != id_nl)
                abort();
            if (sn_template_encode(tok, &t->prompt, t->text[f], c->max_len, &b, NULL, NULL, &e) ||
                b.n != a.n || memcmp(a.v, b.v, a.n * sizeof *a.v) != 0)
                abort();
        } else if (rc != SN_E_ARG && rc != SN_E_FORMAT) {
            abort();
        }
        sn_ids_free(&a);
        sn_ids_free(&b);
    }
    return SN_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!tok)
        init();
    if (size > 1 << 16)
        return 0;
    struct sn_traj *t = NULL;
    struct sn_err err = {0};
    if (sn_traj_parse((const char *)data, size, "fuzz", &t, &err) != SN_OK)
        return 0;
    struct sn_tuples_params p = sn_tuples_default_params();
    p.max_pairs = size % 3; /* 0 = all pairs, else a seeded sample */
    p.seed = size;
    struct sn_tuples *b = NULL;
    struct ctx c = {96 + (size * 7) % 900, 0};
    if (sn_tuples_create(&p, &b, &err) == SN_OK) {
        if (sn_tuples_add(b, t, on_tuple, &c, &err) != SN_OK)
            abort(); /* the callback never fails; only allocation could, and it aborts */
        const uint64_t *n = sn_tuples_counts(b);
        if (n[SN_TC_TRAJECTORIES] != 1 || n[SN_TC_TUPLES] != c.n)
            abort();
    }
    sn_tuples_free(b);
    sn_traj_free(t);
    return 0;
}
