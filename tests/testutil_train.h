/* tests/testutil_train.h: a small shard set of random token sequences for the trainer tests
** (written with shard/shard.h, no tokenizer needed). */
#ifndef SN_TESTUTIL_TRAIN_H
#define SN_TESTUTIL_TRAIN_H
#include "shard/shard.h"

enum { V = 96 };
#define HASH "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* A shard set in dir for the trainer tests: shards of 40 tuples, max_len 24, the given
** vocabulary and build settings (a JSON object naming the test). */
static inline int open_test_shards(const char *dir, const char *settings_json, int64_t vocab,
                                   struct sn_shard_set **s, struct sn_err *err)
{
    struct sn_shard_set_params sp = sn_shard_set_default_params();
    cJSON *settings = cJSON_Parse(settings_json);
    sp.dir = dir;
    sp.shard_size = 40;
    sp.writer.info.tokenizer_hash = HASH;
    sp.writer.info.template_id = "sentinel-chatml/1";
    sp.writer.info.max_len = 24;
    sp.writer.info.vocab_size = vocab;
    sp.settings = settings;
    *s = NULL;
    int rc = sn_shard_set_open(&sp, s, err);
    cJSON_Delete(settings);
    return rc;
}

/* n_train/n_val tuples of random sequences (5..20 tokens) in dir; a tuple has a reference
** with probability 1/2 (so the micro-batches of one step hold different numbers of
** references). Chosen sequences end with token 7, rejected with 9: a learnable signal. */
static inline int make_shards(const char *dir, int n_train, int n_val, struct sn_err *err)
{
    struct sn_shard_set *s = NULL;
    int rc = open_test_shards(dir, "{\"test\": 1}", V, &s, err);
    struct sn_rng rng;
    sn_rng_seed(&rng, 5);
    for (int i = 0; i < n_train + n_val && !rc; i++) {
        int32_t ids[3][24];
        struct sn_shard_tuple t;
        memset(&t, 0, sizeof t);
        for (int f = 0; f < 3; f++) {
            size_t len = 5 + sn_rng_below(&rng, 16);
            for (size_t j = 0; j < len; j++)
                ids[f][j] = (int32_t)sn_rng_below(&rng, V);
            ids[f][len - 1] = f == 1 ? 9 : 7;
            t.ids[SN_FIELD_CHOSEN + f] = ids[f];
            t.n_ids[SN_FIELD_CHOSEN + f] = len;
        }
        if (sn_rng_below(&rng, 2))
            t.n_ids[SN_FIELD_REFERENCE] = 0;
        for (int f = 0; f < SN_FIELD_COUNT; f++)
            t.text[f] = "x";
        t.meta.split = i < n_train ? SN_SPLIT_TRAIN : SN_SPLIT_VALIDATION;
        t.meta.chosen_agent = t.meta.rejected_agent = -1;
        t.meta.sha256 = HASH;
        rc = sn_shard_set_add(s, &t, err);
    }
    if (!rc)
        rc = sn_shard_set_finish(s, err);
    sn_shard_set_close(s);
    return rc;
}

#endif
