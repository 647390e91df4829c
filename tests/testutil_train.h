/* tests/testutil_train.h: a small shard set of random token sequences for the trainer tests
** (written with shard/shard.h, no tokenizer needed). */
#ifndef SN_TESTUTIL_TRAIN_H
#define SN_TESTUTIL_TRAIN_H
#include "hf/hf.h"
#include "shard/shard.h"
#include "tests/testutil.h"
#include "train/train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* The loss metrics.jsonl records for one step (NaN when the file or the step is missing). */
static inline double train_step_loss(const char *metrics, int step)
{
    char *buf = NULL;
    size_t len = 0;
    struct sn_err err = {0};
    double v = NAN;
    if (sn_file_read(metrics, 1 << 24, &buf, &len, &err))
        return v;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *o = cJSON_Parse(line);
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "step");
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(o, "loss");
        if (cJSON_IsNumber(s) && cJSON_IsNumber(l) && (int)s->valuedouble == step)
            v = l->valuedouble;
        cJSON_Delete(o);
    }
    sn_free(buf);
    return v;
}

/* The largest |a - b| over two safetensors files' tensors, matched by name; -1 when a file
** does not open or their tensors do not match up (names, sizes, count). */
static inline double st_max_weight_diff(const char *a, const char *b)
{
    struct sn_err err = {0};
    struct sn_st_file *fa = NULL, *fb = NULL;
    double worst = -1;
    if (!sn_st_open(a, &fa, &err) && !sn_st_open(b, &fb, &err) &&
        sn_st_count(fa) == sn_st_count(fb)) {
        worst = 0;
        for (size_t i = 0; i < sn_st_count(fa) && worst >= 0; i++) {
            const struct sn_st_tensor *x = sn_st_get(fa, i), *y = sn_st_find(fb, x->name);
            if (!y || y->n_elements != x->n_elements) {
                worst = -1;
                break;
            }
            float *u = malloc(x->n_elements * sizeof *u), *v = malloc(y->n_elements * sizeof *v);
            if (!u || !v || sn_st_to_f32(x, u, &err) || sn_st_to_f32(y, v, &err))
                worst = -1;
            for (uint64_t j = 0; worst >= 0 && j < x->n_elements; j++)
                worst = fmax(worst, fabs((double)u[j] - v[j]));
            free(u);
            free(v);
        }
    }
    sn_st_close(fa);
    sn_st_close(fb);
    return worst;
}

/* Two training runs root/a and root/b that must be the same (data parallelism against one
** process, tests/test_train_dist.c and test_train_cuda.c): every step's loss up to `steps`
** within 1e-12, and the largest weight difference of their checkpoint-`steps` (returned; -1,
** and a failure, when the files do not open or do not match up). */
static inline double train_same_runs(const char *root, const char *a, const char *b, int steps)
{
    char p1[800], p2[800];
    for (int s = 1; s <= steps; s++) {
        snprintf(p1, sizeof p1, "%s/%s/metrics.jsonl", root, a);
        snprintf(p2, sizeof p2, "%s/%s/metrics.jsonl", root, b);
        double x = train_step_loss(p1, s), y = train_step_loss(p2, s);
        CHECK_MSG(fabs(x - y) <= 1e-12 && isfinite(x), "%s vs %s, step %d: loss %.17g vs %.17g",
                  a, b, s, x, y);
    }
    snprintf(p1, sizeof p1, "%s/%s/checkpoint-%d/model.safetensors", root, a, steps);
    snprintf(p2, sizeof p2, "%s/%s/checkpoint-%d/model.safetensors", root, b, steps);
    double worst = st_max_weight_diff(p1, p2);
    CHECK_MSG(worst >= 0, "%s and %s do not open or do not match up", p1, p2);
    return worst;
}

/* A short full-mode run on the tiny seeded base for the trainer tests that compare two runs
** (bf16 against f32, a device against the CPU): 20 steps of 4 x 2 tuples, lr 2e-3 constant
** from the first step, alpha 0.5, no evaluation or checkpoints, one thread, quiet; LoRA r 4,
** alpha 8, no dropout when a test switches to LoRA. */
static inline struct sn_train_params train_test_params(const char *device)
{
    struct sn_train_params p = sn_train_default_params();
    p.base = "tiny";
    p.mode = SN_TRAIN_FULL;
    p.max_steps = 20;
    p.micro_batch = 4;
    p.grad_accum = 2;
    p.sched.lr = 2e-3;
    p.sched.warmup_steps = 0;
    p.alpha = 0.5;
    p.eval_every = 0;
    p.save_every = 0;
    p.threads = 1;
    p.progress_mode = 3;
    p.lora.dropout = 0.0;
    p.lora.r = 4;
    p.lora.alpha = 8;
    p.device = device;
    return p;
}

/* LoRA B starts at zero, and so do the gradients of A: fill every B with v so that a test of
** LoRA gradients has something to compare. */
static inline int train_fill_lora_b(struct sn_trainer *t, double v, struct sn_err *err)
{
    const struct sn_param *ps;
    const bool *d;
    size_t np;
    int rc = SN_OK;
    sn_trainer_params(t, &ps, &d, &np);
    bool gm = sn_aten_no_grad_enter();
    for (size_t i = 0; i < np && !rc; i++)
        if (strstr(ps[i].name, "lora_B"))
            rc = sn_aten_fill_(ps[i].t, v, err);
    sn_aten_no_grad_exit(gm);
    return rc;
}

#endif
