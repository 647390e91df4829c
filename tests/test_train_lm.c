/* tests/test_train_lm.c: the lm objective (docs/train.md "Domain-adaptive pretraining
** (objective lm)") on shard sets written here:
**   - sn_loss_lm equals the cross-entropy computed on the host from the same logits, and the LM
**     forward's logits at token t equal the reward forward's read-out of the row cut after t
**     times the tied embedding (every layer on every token, causal);
**   - gradient check: every weight's gradient of the step's LM loss (the trainer's
**     sn_trainer_accumulate in float64: forward_lm, the tied head, the loss, the weighting of
**     micro-batches) against central finite differences; micro-batch 4 × accumulation 2
**     equals 8 × 1, and gradient checkpointing gives the same gradient;
**   - the loss falls on a toy corpus of arithmetic progressions (40 steps);
**   - resume is bit-identical (weights and optimizer state), metrics.jsonl has loss and
**     perplexity, and a changed objective is refused naming it;
**   - a reward run with train.base = the LM checkpoint loads its weights exactly (and gets a
**     fresh head), and refuses a checkpoint of another vocabulary;
**   - no leak: the checkpoint's recorded inputs are exactly the train split's shards;
**   - an untied Hugging Face base trains and saves its own lm_head.weight. */
#include "hf/safetensors.h"
#include "loss/loss.h"
#include "shard/shard.h"
#include "tests/testutil.h"
#include "tests/testutil_aten.h"
#include "tests/testutil_train.h"
#include "train/train.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static struct sn_err E;
static char ROOT[512];
static int n_distinct; /* distinct train sequences of the last make_lm_shards, counted here */

/* ROOT/name (not wiped: sn_test_dir would, and its buffer is shared) */
static const char *dir_of(const char *name)
{
    static char buf[4][700];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, sizeof buf[0], "%s/%s", ROOT, name);
    return b;
}

/* n_train + n_val tuples over vocabulary vocab: arithmetic progressions a, a+s, a+2s, ...
** mod vocab (s in 1..3), 6..20 tokens, so the next token follows from the previous two. */
static int make_lm_shards(const char *dir, int n_train, int n_val, int64_t vocab,
                          struct sn_err *err)
{
    struct sn_shard_set *s = NULL;
    int rc = open_test_shards(dir, "{\"test\": 2}", vocab, &s, err);
    struct sn_rng rng;
    sn_rng_seed(&rng, 11);
    /* (start, stride, length) names a progression: count the distinct ones of the train split */
    int64_t (*seen)[3] = calloc((size_t)(2 * n_train + 1), sizeof *seen);
    n_distinct = 0;
    for (int i = 0; i < n_train + n_val && !rc; i++) {
        int32_t ids[3][24];
        struct sn_shard_tuple t;
        memset(&t, 0, sizeof t);
        for (int f = 0; f < 3; f++) {
            size_t len = 6 + sn_rng_below(&rng, 15);
            int64_t a = (int64_t)sn_rng_below(&rng, (uint64_t)vocab);
            int64_t st = 1 + (int64_t)sn_rng_below(&rng, 3);
            for (size_t j = 0; j < len; j++)
                ids[f][j] = (int32_t)((a + (int64_t)j * st) % vocab);
            t.ids[SN_FIELD_CHOSEN + f] = ids[f];
            t.n_ids[SN_FIELD_CHOSEN + f] = len;
        }
        if (i % 5 == 0) { /* a repeated sequence: left out once by the dedupe */
            t.ids[SN_FIELD_REJECTED] = t.ids[SN_FIELD_CHOSEN];
            t.n_ids[SN_FIELD_REJECTED] = t.n_ids[SN_FIELD_CHOSEN];
        }
        for (int f = 0; f < 2 && i < n_train; f++) {
            const int32_t *q = t.ids[SN_FIELD_CHOSEN + f];
            int64_t key[3] = {q[0], (q[1] - q[0] + vocab) % vocab,
                              (int64_t)t.n_ids[SN_FIELD_CHOSEN + f]};
            int j = 0;
            while (j < n_distinct && memcmp(seen[j], key, sizeof key))
                j++;
            if (j == n_distinct)
                memcpy(seen[n_distinct++], key, sizeof key);
        }
        for (int f = 0; f < SN_FIELD_COUNT; f++)
            t.text[f] = "x";
        t.meta.split = i < n_train ? SN_SPLIT_TRAIN : SN_SPLIT_VALIDATION;
        t.meta.chosen_agent = t.meta.rejected_agent = -1;
        t.meta.sha256 = HASH;
        rc = sn_shard_set_add(s, &t, err);
    }
    free(seen);
    if (!rc)
        rc = sn_shard_set_finish(s, err);
    sn_shard_set_close(s);
    return rc;
}

static struct sn_train_params lm_params(void)
{
    struct sn_train_params p = sn_train_default_params();
    p.base = "tiny";
    p.objective = SN_OBJECTIVE_LM;
    p.max_steps = 6;
    p.micro_batch = 4;
    p.grad_accum = 2;
    p.sched.lr = 3e-3;
    p.sched.warmup_steps = 1;
    p.save_every = 2;
    p.keep_last = 0;
    p.threads = 1;
    p.progress_mode = 3;
    return p;
}

/* ---- the loss against the host ---------------------------------------------------------- */

static void test_loss_host(void)
{
    enum { N = 5, VV = 7 };
    double lg[N * VV];
    int64_t tg[N];
    struct sn_rng rng;
    sn_rng_seed(&rng, 3);
    double want = 0;
    for (int i = 0; i < N; i++) {
        double mx = -INFINITY, z = 0;
        for (int j = 0; j < VV; j++) {
            lg[i * VV + j] = 4.0 * sn_rng_normal(&rng);
            mx = fmax(mx, lg[i * VV + j]);
        }
        for (int j = 0; j < VV; j++)
            z += exp(lg[i * VV + j] - mx);
        tg[i] = (int64_t)sn_rng_below(&rng, VV);
        want += -(lg[i * VV + tg[i]] - mx - log(z)) / N;
    }
    int64_t sh[2] = {N, VV};
    struct sn_tensor *x = NULL, *l = NULL;
    double v = NAN;
    CHECK_MSG(sn_aten_from_host(lg, SN_DTYPE_F64, sh, 2, SN_DTYPE_F64, SN_CPU,
                                &x, &E) == SN_OK, "%s", E.msg);
    CHECK_MSG(sn_loss_lm(x, tg, N, &l, &v, &E) == SN_OK, "%s", E.msg);
    printf("lm loss: %.15g (host %.15g)\n", v, want);
    CHECK_CLOSE(v, want, 1e-13, 1e-13);
    tg[2] = VV; /* outside the vocabulary */
    struct sn_tensor *l2 = NULL;
    CHECK(sn_loss_lm(x, tg, N, &l2, NULL, &E) == SN_E_ARG && !l2);
    CHECK_MSG(strstr(E.msg, "outside the vocabulary"), "%s", E.msg);
    sn_tensor_free(x);
    sn_tensor_free(l);
}

/* ---- gradients -------------------------------------------------------------------------- */

static double *grads(struct sn_trainer *t, size_t *n_out)
{
    const struct sn_param *ps;
    const bool *dec;
    size_t np, n = 0;
    sn_trainer_params(t, &ps, &dec, &np);
    for (size_t i = 0; i < np; i++)
        n += (size_t)sn_tensor_numel(ps[i].t);
    double *g = calloc(n + 1, sizeof *g);
    size_t k = 0;
    for (size_t i = 0; i < np; i++) {
        struct sn_tensor *gt = NULL;
        size_t ni = (size_t)sn_tensor_numel(ps[i].t);
        CHECK(sn_aten_grad(ps[i].t, &gt, &E) == SN_OK);
        CHECK_MSG(gt != NULL, "%s has no gradient", ps[i].name);
        if (gt)
            CHECK(sn_aten_to_host(gt, g + k, SN_DTYPE_F64, ni, &E) == SN_OK);
        sn_tensor_free(gt);
        k += ni;
    }
    *n_out = n;
    return g;
}

/* The LM forward against the reward forward, which tests/test_train_reference.c holds to
** PyTorch: the logits of forward_lm at token t of a row are the final hidden state that
** sn_model_forward reads out of the same row cut after t (causality: nothing after t may
** count), times the embedding (the tied head). Float64. */
static void test_forward_lm(struct sn_trainer *t)
{
    enum { B = 3, T = 7 };
    struct sn_model *m = sn_trainer_model(t);
    int64_t V = sn_model_get_config(m)->vocab_size;
    int32_t ids[B * T], full[B * T], cut[B * T];
    int64_t at[B];
    for (int r = 0; r < B; r++) {
        int len = T - r, stop = 2 + r; /* right-padded rows, each cut inside */
        for (int j = 0; j < T; j++) {
            ids[r * T + j] = (int32_t)((r * 31 + j * 17 + 5) % V);
            full[r * T + j] = j < len;
            cut[r * T + j] = j <= stop;
        }
        at[r] = r * T + stop;
    }
    struct sn_model_batch bf = {ids, full, B, T}, bc = {ids, cut, B, T};
    struct sn_tensor *logits = NULL, *hid = NULL, *ref = NULL;
    const struct sn_param *ps;
    const bool *dec;
    size_t np;
    sn_trainer_params(t, &ps, &dec, &np);
    CHECK(np > 0 && !strcmp(ps[0].name, "model.embed_tokens.weight"));
    bool g = sn_aten_no_grad_enter();
    OK(sn_model_forward_lm(m, &bf, at, B, &logits, &E));
    OK(sn_model_forward(m, &bc, NULL, &hid, &E));
    if (hid)
        OK(sn_aten_linear(hid, ps[0].t, NULL, &ref, &E));
    double d = INFINITY;
    if (logits && ref)
        OK(sn_aten_max_abs_diff(logits, ref, &d, &E));
    sn_aten_no_grad_exit(g);
    printf("lm forward vs the read-out forward of the cut rows: max difference %.3g\n", d);
    CHECK_MSG(d <= 1e-12, "LM logits differ from the reward forward's hidden state by %g", d);
    /* a read-out on padding is refused */
    struct sn_tensor *bad = NULL;
    int64_t pad_at[1] = {2 * T + T - 1};
    struct sn_err e = {0};
    CHECK(sn_model_forward_lm(m, &bf, pad_at, 1, &bad, &e) == SN_E_ARG && !bad);
    CHECK_MSG(strstr(e.msg, "not a token"), "%s", e.msg);
    sn_tensor_free(logits);
    sn_tensor_free(hid);
    sn_tensor_free(ref);
}

/* The first step's loss and gradient of a trainer opened with p equal (loss, g0: n values). */
static void same_step(const struct sn_train_params *p, const char *shards, const char *name,
                      const double *g0, size_t n, double loss, const char *what)
{
    struct sn_trainer *t = NULL;
    struct sn_train_stats st;
    OK(sn_trainer_open(p, shards, dir_of(name), true, &t, &E));
    if (!t)
        return;
    OK(sn_trainer_accumulate(t, &st, &E));
    size_t n1 = 0;
    double *g1 = grads(t, &n1), worst = 0;
    CHECK(n1 == n);
    for (size_t i = 0; i < n && i < n1; i++)
        worst = fmax(worst, fabs(g1[i] - g0[i]));
    printf("lm %s: loss %.15g vs %.15g, gradient diff %.3g\n", what, st.loss, loss, worst);
    CHECK_CLOSE(st.loss, loss, 1e-12, 1e-12);
    CHECK_MSG(worst <= 1e-12, "%s: the gradient differs by %g", what, worst);
    free(g1);
    sn_trainer_free(t);
}

static void test_gradcheck(const char *shards)
{
    struct sn_train_params p = lm_params();
    p.dtype = SN_DTYPE_F64;
    struct sn_trainer *t = NULL;
    struct sn_train_stats st;
    OK(sn_trainer_open(&p, shards, dir_of("lm_grad"), true, &t, &E));
    if (!t)
        return;
    test_forward_lm(t);
    OK(sn_trainer_accumulate(t, &st, &E));
    CHECK(st.lm && isfinite(st.loss) && fabs(st.perplexity - exp(st.loss)) < 1e-9);
    size_t n = 0;
    double *g = grads(t, &n);
    const struct sn_param *ps;
    const bool *dec;
    size_t np;
    sn_trainer_params(t, &ps, &dec, &np);
    CHECK(!sn_model_has_head(sn_trainer_model(t)));
    /* finite differences on a spread of entries of every weight (embedding = tied LM head) */
    const double e = 1e-6;
    int checked = 0, nonzero = 0;
    size_t off = 0;
    for (size_t i = 0; i < np; i++) {
        double *d = sn_tensor_data_ptr(ps[i].t);
        size_t ni = (size_t)sn_tensor_numel(ps[i].t), step = ni > 4 ? ni / 4 + 1 : 1;
        CHECK(d != NULL);
        for (size_t k = i % 3; d && k < ni; k += step) {
            struct sn_train_stats sp, sm;
            double keep = d[k];
            d[k] = keep + e;
            OK(sn_trainer_accumulate(t, &sp, &E));
            d[k] = keep - e;
            OK(sn_trainer_accumulate(t, &sm, &E));
            d[k] = keep;
            double fd = (sp.loss - sm.loss) / (2 * e), an = g[off + k];
            CHECK_MSG(fabs(fd - an) <= 1e-7 + 1e-5 * fabs(fd), "%s[%zu]: autograd %.10g, "
                      "finite difference %.10g", ps[i].name, k, an, fd);
            checked++;
            nonzero += fabs(an) > 1e-7;
        }
        off += ni;
    }
    printf("lm gradcheck: %d entries of %zu weights, %d non-zero\n", checked, np, nonzero);
    CHECK(checked >= (int)np);
    CHECK_MSG(nonzero >= checked * 2 / 3, "only %d of %d gradients are non-zero", nonzero,
              checked);
    sn_trainer_free(t);
    /* the same step as one micro-batch of 8, and with gradient checkpointing (every layer
    ** recomputed in backward): the same gradient */
    p.micro_batch = 8;
    p.grad_accum = 1;
    same_step(&p, shards, "lm_grad1", g, n, st.loss, "micro-batch 8 x 1");
    p.grad_checkpoint = true;
    same_step(&p, shards, "lm_grad2", g, n, st.loss, "checkpointed");
    free(g);
}

/* ---- the loss falls --------------------------------------------------------------------- */

static void test_loss_falls(const char *shards)
{
    struct sn_train_params p = lm_params();
    p.max_steps = 40;
    p.sched.lr = 1e-2;
    p.sched.warmup_steps = 2;
    p.save_every = 0;
    struct sn_trainer *t = NULL;
    OK(sn_trainer_open(&p, shards, dir_of("lm_falls"), true, &t, &E));
    if (!t)
        return;
    OK(sn_trainer_run(t, &E));
    sn_trainer_free(t);
    /* first and last step's loss from metrics.jsonl */
    char path[600];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir_of("lm_falls"));
    char *buf = NULL;
    size_t len = 0;
    OK(sn_file_read(path, 0, &buf, &len, &E));
    double first = NAN, last = NAN, ppl = NAN;
    for (char *line = buf; buf && line && *line;) {
        char *nl = strchr(line, '\n');
        cJSON *o = cJSON_ParseWithLength(line, nl ? (size_t)(nl - line) : strlen(line));
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(o, "loss");
        const cJSON *pp = cJSON_GetObjectItemCaseSensitive(o, "perplexity");
        CHECK(!cJSON_GetObjectItemCaseSensitive(o, "accuracy"));
        if (cJSON_IsNumber(l)) {
            if (isnan(first))
                first = l->valuedouble;
            last = l->valuedouble;
            ppl = cJSON_IsNumber(pp) ? pp->valuedouble : NAN;
        }
        cJSON_Delete(o);
        line = nl ? nl + 1 : NULL;
    }
    sn_free(buf);
    printf("lm loss: step 1 %.4f, step 40 %.4f (perplexity %.2f; ln V = %.4f)\n", first, last,
           ppl, log(96.0));
    CHECK_MSG(last < 0.6 * first, "loss %.4f -> %.4f: did not fall by 40%%", first, last);
    CHECK_CLOSE(ppl, exp(last), 1e-9, 1e-9);
}

/* ---- resume, base for a reward run, inputs ---------------------------------------------- */

static void test_resume(const char *shards)
{
    char out[512], p1[700];
    snprintf(out, sizeof out, "%s", dir_of("lm_resume"));
    struct sn_train_params p = lm_params();
    /* 6 steps straight vs a resume from checkpoint-4 (checkpoint-6 spoilt) */
    sn_test_resume_exact(&p, shards, out, 6, 4);
    struct sn_trainer *t = NULL;
    snprintf(p1, sizeof p1, "%s/checkpoint-6/config.json", out);
    CHECK_MSG(sn_test_sh("grep -q '\"tie_word_embeddings\": *true' '%s'", p1) == 0,
              "the LM checkpoint's config does not say its head is the embedding");
    snprintf(p1, sizeof p1, "%s/checkpoint-6/model.safetensors", out);
    struct sn_st_file *f = NULL;
    OK(sn_st_open(p1, &f, &E));
    CHECK(f && !sn_st_find(f, "score.weight") && !sn_st_find(f, "lm_head.weight"));
    sn_st_close(f);
    /* another objective on the same output directory is another run */
    p.objective = SN_OBJECTIVE_REWARD;
    struct sn_err e = {0};
    CHECK(sn_trainer_open(&p, shards, out, false, &t, &e) == SN_E_ARG && !t);
    CHECK_MSG(strstr(e.msg, "objective (was \"lm\", now absent)") ||
              strstr(e.msg, "objective (no longer set)"), "%s", e.msg);
}

/* The LM run's inputs: exactly the train split's shards, none of the held-out ones. */
static void test_inputs(const char *shards)
{
    char path[700];
    snprintf(path, sizeof path, "%s/checkpoint-6/sentinel_state.json", dir_of("lm_resume"));
    cJSON *st = NULL;
    OK(sn_json_load(path, &st, &E));
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(st, "inputs");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(in, "shards");
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(in, "split");
    CHECK(cJSON_IsString(sp) && !strcmp(sp->valuestring, "train"));
    struct sn_manifest *man = NULL;
    OK(sn_manifest_load(shards, &man, &E));
    char **tr = NULL, **all = NULL;
    size_t ntr = 0, nall = 0;
    if (man) {
        OK(sn_manifest_paths(man, SN_SPLIT_TRAIN, &tr, &ntr, &E));
        OK(sn_manifest_paths(man, SN_SPLIT_COUNT, &all, &nall, &E));
    }
    printf("lm inputs: %d recorded, %zu train shards of %zu\n", cJSON_GetArraySize(sh), ntr,
           nall);
    CHECK(nall > ntr && ntr > 0); /* the set has held-out shards the run must not read */
    CHECK(cJSON_IsArray(sh) && (size_t)cJSON_GetArraySize(sh) == ntr);
    for (size_t i = 0; i < ntr && cJSON_IsArray(sh); i++) {
        const cJSON *e = cJSON_GetArrayItem(sh, (int)i);
        const char *b = strrchr(tr[i], '/');
        b = b ? b + 1 : tr[i];
        CHECK_MSG(cJSON_IsString(e) && !strcmp(e->valuestring, b), "input %zu: %s, train "
                  "shard %s", i, cJSON_IsString(e) ? e->valuestring : "?", b);
    }
    const cJSON *nseq = cJSON_GetObjectItemCaseSensitive(in, "sequences");
    /* 2 per train tuple, identical ones once (every 5th tuple repeats its chosen sequence,
    ** and a few progressions recur by chance) */
    printf("lm sequences: %g recorded, %d distinct of %d\n",
           cJSON_IsNumber(nseq) ? nseq->valuedouble : -1.0, n_distinct, 2 * 48);
    CHECK(cJSON_IsNumber(nseq) && nseq->valuedouble == n_distinct && n_distinct <= 2 * 48 - 10);
    sn_paths_free(tr, ntr);
    sn_paths_free(all, nall);
    sn_manifest_free(man);
    cJSON_Delete(st);
}

/* Every tensor of the LM checkpoint equals the reward model's of the same name. */
static void test_reward_base(const char *shards, const char *root)
{
    char ck[700], saved[700], a[800], b[800];
    snprintf(ck, sizeof ck, "%s/checkpoint-6", dir_of("lm_resume"));
    struct sn_train_params p = sn_train_default_params();
    p.base = ck;
    p.mode = SN_TRAIN_FULL;
    p.max_steps = 1;
    p.micro_batch = 4;
    p.grad_accum = 1;
    p.threads = 1;
    p.progress_mode = 3;
    struct sn_trainer *t = NULL;
    OK(sn_trainer_open(&p, shards, dir_of("lm_reward"), true, &t, &E));
    if (t) {
        CHECK(sn_model_has_head(sn_trainer_model(t)));
        snprintf(saved, sizeof saved, "%s/loaded", dir_of("lm_reward"));
        OK(sn_model_save_hf(sn_trainer_model(t), saved, &E));
    }
    sn_trainer_free(t);
    t = NULL;
    snprintf(a, sizeof a, "%s/model.safetensors", ck);
    snprintf(b, sizeof b, "%s/model.safetensors", saved);
    struct sn_st_file *fa = NULL, *fb = NULL;
    OK(sn_st_open(a, &fa, &E));
    OK(sn_st_open(b, &fb, &E));
    size_t same = 0;
    for (size_t i = 0; fa && fb && i < sn_st_count(fa); i++) {
        const struct sn_st_tensor *x = sn_st_get(fa, i), *y = sn_st_find(fb, x->name);
        CHECK_MSG(y && y->nbytes == x->nbytes && !memcmp(x->data, y->data, x->nbytes),
                  "%s differs after loading the LM checkpoint", x->name);
        same += y && y->nbytes == x->nbytes && !memcmp(x->data, y->data, x->nbytes);
    }
    CHECK(fb && sn_st_find(fb, "score.weight"));
    printf("reward from lm: %zu tensors equal, score.weight initialised\n", same);
    sn_st_close(fa);
    sn_st_close(fb);
    /* shards of another vocabulary (smaller, then larger): refused; train.base the run's
    ** directory (its last checkpoint) */
    p.base = dir_of("lm_resume");
    int64_t vocabs[2] = {64, 128};
    for (int i = 0; i < 2; i++) {
        char other[600];
        snprintf(other, sizeof other, "%s/shards-v%d", root, (int)vocabs[i]);
        OK(make_lm_shards(other, 16, 0, vocabs[i], &E));
        struct sn_err e = {0};
        CHECK(sn_trainer_open(&p, other, dir_of("lm_reward_other"), true, &t, &e) ==
              SN_E_ARG && !t);
        printf("another vocabulary (%d): %s\n", (int)vocabs[i], e.msg);
        CHECK_MSG(strstr(e.msg, "vocabulary") && strstr(e.msg, "checkpoint-6"), "%s", e.msg);
        sn_trainer_free(t);
        t = NULL;
    }
}

/* Whether t trains the weight called name. */
static bool trains(struct sn_trainer *t, const char *name)
{
    const struct sn_param *ps;
    const bool *dec;
    size_t np;
    sn_trainer_params(t, &ps, &dec, &np);
    for (size_t i = 0; i < np; i++)
        if (!strcmp(ps[i].name, name))
            return true;
    return false;
}

/* An untied Hugging Face base (tie_word_embeddings false, its own lm_head.weight): the lm
** objective trains that head and saves it; a reward run on the same base leaves it out. */
static void test_untied(const char *shards)
{
    char hf[700], st[800], tmp[800];
    snprintf(hf, sizeof hf, "%s", dir_of("lm_untied_base"));
    struct sn_model_config c = sn_model_config_tiny(96);
    struct sn_model_params mp = sn_model_default_params();
    mp.seed = 4;
    struct sn_model *m = NULL;
    OK(sn_model_create(&c, &mp, &m, &E));
    if (m)
        OK(sn_model_set_pad_token_id(m, 0, &E));
    if (m)
        OK(sn_model_save_hf(m, hf, &E));
    sn_model_free(m);
    /* the same file plus a random lm_head.weight (96, 64) */
    snprintf(st, sizeof st, "%s/model.safetensors", hf);
    snprintf(tmp, sizeof tmp, "%s/with_head.safetensors", hf);
    struct sn_st_file *f = NULL;
    struct sn_st_writer *w = NULL;
    static float head[96 * 64];
    struct sn_rng rng;
    sn_rng_seed(&rng, 9);
    for (size_t i = 0; i < 96 * 64; i++)
        head[i] = (float)(0.02 * sn_rng_normal(&rng));
    int64_t hs[2] = {96, 64};
    OK(sn_st_open(st, &f, &E));
    OK(sn_st_writer_create(&w, &E));
    for (size_t i = 0; f && w && i < sn_st_count(f); i++) {
        const struct sn_st_tensor *x = sn_st_get(f, i);
        OK(sn_st_writer_add(w, x->name, x->dtype, x->n_dims, x->shape, x->data, &E));
    }
    if (w) {
        OK(sn_st_writer_add(w, "lm_head.weight", SN_ST_F32, 2, hs, head, &E));
        OK(sn_st_writer_save(w, tmp, &E));
    }
    sn_st_writer_free(w);
    sn_st_close(f);
    CHECK(rename(tmp, st) == 0);

    struct sn_train_params p = lm_params();
    p.base = hf;
    p.max_steps = 2;
    struct sn_trainer *t = NULL;
    OK(sn_trainer_open(&p, shards, dir_of("lm_untied"), true, &t, &E));
    bool has = t && trains(t, "lm_head.weight");
    if (t)
        OK(sn_trainer_run(t, &E));
    sn_trainer_free(t);
    t = NULL;
    CHECK_MSG(has, "the untied lm_head is not trained");
    char ck[800];
    snprintf(ck, sizeof ck, "%s/checkpoint-2/model.safetensors", dir_of("lm_untied"));
    f = NULL;
    OK(sn_st_open(ck, &f, &E));
    const struct sn_st_tensor *h = f ? sn_st_find(f, "lm_head.weight") : NULL;
    CHECK_MSG(h && h->nbytes == sizeof head, "the checkpoint lacks lm_head.weight");
    if (h && h->nbytes == sizeof head)
        CHECK_MSG(memcmp(h->data, head, sizeof head) != 0, "lm_head.weight did not train");
    CHECK(f && !sn_st_find(f, "score.weight"));
    sn_st_close(f);
    /* a reward run on the untied base: no lm_head among its weights */
    p.objective = SN_OBJECTIVE_REWARD;
    p.mode = SN_TRAIN_FULL;
    OK(sn_trainer_open(&p, shards, dir_of("lm_untied_reward"), true, &t, &E));
    CHECK_MSG(t && !trains(t, "lm_head.weight"), "a reward run trains lm_head");
    sn_trainer_free(t);
    printf("untied base: lm_head trained and saved by objective lm\n");
}

static void test_recipe(void)
{
    struct sn_train_params p = sn_train_default_params();
    cJSON *r = cJSON_Parse("{\"train\": {\"objective\": \"lm\", \"base\": \"mini\"}}");
    CHECK_MSG(sn_train_params_from_recipe(r, &p, &E) == SN_OK, "%s", E.msg);
    CHECK(p.objective == SN_OBJECTIVE_LM && sn_train_is_full(&p) &&
          sn_train_base_is_seeded(p.base));
    cJSON_Delete(r);
    struct sn_model_config c = sn_model_config_seeded("mini", 100);
    CHECK(c.num_hidden_layers == 4 && c.hidden_size == 128 && c.num_attention_heads == 4 &&
          c.num_key_value_heads == 2 && c.intermediate_size == 384);
    const char *bad[] = {"{\"train\": {\"objective\": \"mlm\"}}",
                         "{\"train\": {\"objective\": \"lm\", \"mode\": \"lora\"}}",
                         "{\"train\": {\"objective\": \"lm\", \"pretrain_steps\": 5}}",
                         "{\"train\": {\"pretrain_steps\": -1}}"};
    const char *want[] = {"expected \"reward\" or \"lm\"", "train.mode \"full\"",
                          "pretrain_steps", "pretrain_steps"};
    for (int i = 0; i < 4; i++) {
        p = sn_train_default_params();
        r = cJSON_Parse(bad[i]);
        struct sn_err e = {0};
        CHECK(sn_train_params_from_recipe(r, &p, &e) == SN_E_ARG);
        CHECK_MSG(strstr(e.msg, want[i]), "%s: %s", bad[i], e.msg);
        cJSON_Delete(r);
    }
}

int main(void)
{
    sn_log_set_level(SN_LOG_ERROR);
    sn_aten_set_num_threads(1);
    test_recipe();
    test_loss_host();
    snprintf(ROOT, sizeof ROOT, "%s", sn_test_dir("train_lm"));
    const char *root = ROOT;
    char shards[600];
    snprintf(shards, sizeof shards, "%s/shards", root);
    CHECK_MSG(make_lm_shards(shards, 48, 12, 96, &E) == SN_OK, "%s", E.msg);
    test_gradcheck(shards);
    test_loss_falls(shards);
    test_resume(shards);
    test_inputs(shards);
    test_reward_base(shards, root);
    test_untied(shards);
    return sn_test_done();
}
