/* tests/test_train_trainer.c: the trainer (train/trainer*.c) on small shard sets written here
** with random token sequences:
**   - learning-rate schedules against the closed forms written out independently;
**   - weight decay: with zero gradients one AdamW step multiplies decayed weights by exactly
**     (1 − lr·wd) and leaves biases, norms and the head untouched (full and LoRA modes);
**   - micro-batch 4 × accumulation 2 gives the gradients of micro-batch 8 × accumulation 1
**     (alignment term with missing references and reward centering included), and gradient
**     checkpointing gives the gradients of the plain backward (full and LoRA);
**   - checkpoints: last-K pruning, `latest`, a corrupt newest checkpoint falls back to the
**     previous one, and the resumed run ends with byte-identical weights and optimizer state;
**   - a changed setting is refused naming the key; NaN loss names the step and tuples; a
**     foreign tokenizer, an empty train split and a truncated shard are clear errors. */
#include "shard/shard.h"
#include "tests/testutil.h"
#include "train/train.h"

#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/testutil_train.h"

static struct sn_train_params base_params(void)
{
    struct sn_train_params p = sn_train_default_params();
    p.base = "tiny";
    p.max_steps = 6;
    p.micro_batch = 4;
    p.grad_accum = 2;
    p.sched.lr = 1e-3;
    p.sched.warmup_steps = 2;
    p.alpha = 0.5;
    p.eval_every = 3;
    p.save_every = 3;
    p.keep_last = 2;
    p.threads = 1;
    p.progress_mode = 3;
    p.lora.dropout = 0.0;
    return p;
}

/* ---- schedules ---------------------------------------------------------------------------- */

static void test_schedules(void)
{
    const double lr = 3e-4;
    const int64_t W = 10, N = 110;
    const int64_t at[] = {0, 1, 5, 9, 10, 11, 35, 60, 85, 109, 110};
    for (int k = 0; k < SN_LR_KIND_COUNT; k++)
        for (int mr = 0; mr < 2; mr++) {
            struct sn_lr_schedule s = {(enum sn_lr_kind)k, lr, W, N, mr ? 0.1 : 0.0};
            for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
                int64_t t = at[i];
                double want;
                if (t < W) {
                    want = lr * (double)t / 10.0;
                } else {
                    double p = (double)(t - W) / 100.0;
                    if (k == SN_LR_CONSTANT)
                        want = lr;
                    else if (k == SN_LR_LINEAR)
                        want = lr * (1.0 - p);
                    else /* HF cosine, num_cycles 0.5, floor at min ratio */
                        want = lr * ((mr ? 0.1 : 0.0) +
                                     (1.0 - (mr ? 0.1 : 0.0)) * 0.5 * (1.0 + cos(M_PI * p)));
                }
                CHECK_CLOSE(sn_lr_at(&s, t), want, 1e-18, 1e-12);
            }
        }
    /* no warmup: the first step already runs at the peak */
    struct sn_lr_schedule s = {SN_LR_COSINE, 1.0, 0, 4, 0.0};
    CHECK_CLOSE(sn_lr_at(&s, 0), 1.0, 0, 1e-15);
    CHECK_CLOSE(sn_lr_at(&s, 2), 0.5, 1e-15, 1e-12);
}

/* ---- weight decay --------------------------------------------------------------------------- */

static void test_decay(const char *shards, bool lora)
{
    struct sn_err err = {0};
    char out[512];
    snprintf(out, sizeof out, "%s", sn_test_dir(lora ? "train_decay_lora" : "train_decay_full"));
    struct sn_train_params p = base_params();
    p.dtype = SN_DTYPE_F64;
    p.adamw.weight_decay = 0.1;
    p.mode = lora ? SN_TRAIN_LORA : SN_TRAIN_FULL;
    p.lora.r = 4;
    p.lora.alpha = 8;
    struct sn_trainer *t = NULL;
    CHECK_MSG(sn_trainer_open(&p, shards, out, true, &t, &err) == SN_OK, "%s", err.msg);
    if (!t)
        return;
    const struct sn_param *ps;
    const bool *dec;
    size_t n;
    sn_trainer_params(t, &ps, &dec, &n);
    CHECK(n > 0);
    int n_dec = 0, n_keep = 0;
    double *before[512] = {0};
    CHECK(n < 512);
    for (size_t i = 0; i < n && i < 512; i++) {
        size_t k = (size_t)sn_tensor_numel(ps[i].t);
        before[i] = malloc(k * sizeof(double));
        CHECK(sn_aten_to_host(ps[i].t, before[i], SN_DTYPE_F64, k, &err) == SN_OK);
        struct sn_tensor *z = NULL;
        int64_t shape[8];
        int nd = sn_tensor_shape(ps[i].t, shape, 8);
        CHECK(sn_aten_zeros(shape, nd, SN_DTYPE_F64, SN_CPU, &z, &err) == SN_OK);
        CHECK(sn_aten_set_grad(ps[i].t, z, &err) == SN_OK);
        sn_tensor_free(z);
        /* the rule, read from the name alone */
        bool want = !(strstr(ps[i].name, ".bias") || strstr(ps[i].name, "norm.weight") ||
                      strstr(ps[i].name, "score.weight"));
        CHECK_MSG(dec[i] == want, "%s: decay %d", ps[i].name, dec[i]);
        n_dec += dec[i];
        n_keep += !dec[i];
    }
    CHECK(n_dec > 0 && n_keep > 0);
    const double lr = 0.25;
    CHECK_MSG(sn_trainer_update(t, lr, NULL, &err) == SN_OK, "%s", err.msg);
    for (size_t i = 0; i < n && i < 512; i++) {
        size_t k = (size_t)sn_tensor_numel(ps[i].t);
        double *now = malloc(k * sizeof(double));
        CHECK(sn_aten_to_host(ps[i].t, now, SN_DTYPE_F64, k, &err) == SN_OK);
        double worst = 0;
        for (size_t j = 0; j < k; j++) {
            double want = dec[i] ? before[i][j] * (1.0 - lr * 0.1) : before[i][j];
            worst = fmax(worst, fabs(now[j] - want));
        }
        CHECK_MSG(worst <= 1e-15, "%s: off by %g", ps[i].name, worst);
        free(now);
        free(before[i]);
    }
    sn_trainer_free(t);
}

/* ---- accumulation --------------------------------------------------------------------------- */

static double *grads_of(struct sn_trainer *t, size_t *total)
{
    struct sn_err err = {0};
    const struct sn_param *ps;
    const bool *dec;
    size_t n, k = 0;
    sn_trainer_params(t, &ps, &dec, &n);
    for (size_t i = 0; i < n; i++)
        k += (size_t)sn_tensor_numel(ps[i].t);
    double *g = calloc(k, sizeof *g);
    k = 0;
    for (size_t i = 0; i < n; i++) {
        struct sn_tensor *gr = NULL;
        size_t m = (size_t)sn_tensor_numel(ps[i].t);
        CHECK(sn_aten_grad(ps[i].t, &gr, &err) == SN_OK && gr);
        if (gr)
            CHECK(sn_aten_to_host(gr, g + k, SN_DTYPE_F64, m, &err) == SN_OK);
        sn_tensor_free(gr);
        k += m;
    }
    *total = k;
    return g;
}

static void test_accumulation(const char *shards, enum sn_dtype dt, bool lora, uint64_t seed,
                              double tol, bool ckpt)
{
    struct sn_err err = {0};
    struct sn_train_stats s1, s2;
    struct sn_trainer *a = NULL, *b = NULL;
    struct sn_train_params p = base_params();
    p.dtype = dt;
    p.center_rewards = 0.05;
    p.seed = seed;
    p.mode = lora ? SN_TRAIN_LORA : SN_TRAIN_FULL;
    p.lora.r = 4;
    p.lora.alpha = 8;
    char o1[512], o2[512];
    snprintf(o1, sizeof o1, "%s", sn_test_dir("train_accum_a"));
    snprintf(o2, sizeof o2, "%s", sn_test_dir("train_accum_b"));
    p.micro_batch = 4;
    p.grad_accum = 2;
    CHECK_MSG(sn_trainer_open(&p, shards, o1, true, &a, &err) == SN_OK, "%s", err.msg);
    if (ckpt) {
        /* the second run: same batches, every decoder layer recomputed in backward */
        p.grad_checkpoint = true;
    } else {
        p.micro_batch = 8;
        p.grad_accum = 1;
    }
    CHECK_MSG(sn_trainer_open(&p, shards, o2, true, &b, &err) == SN_OK, "%s", err.msg);
    if (!a || !b) {
        sn_trainer_free(a);
        sn_trainer_free(b);
        return;
    }
    if (lora) {
        /* a fresh adapter has B = 0, so A gets no gradient: move B off zero in both */
        const struct sn_param *pa, *pb;
        const bool *d;
        size_t na, nb;
        sn_trainer_params(a, &pa, &d, &na);
        sn_trainer_params(b, &pb, &d, &nb);
        bool g = sn_aten_no_grad_enter();
        for (size_t i = 0; i < na && i < nb; i++)
            if (strstr(pa[i].name, "lora_B")) {
                CHECK(sn_aten_fill_(pa[i].t, 0.01, &err) == SN_OK);
                CHECK(sn_aten_fill_(pb[i].t, 0.01, &err) == SN_OK);
            }
        sn_aten_no_grad_exit(g);
    }
    CHECK_MSG(sn_trainer_accumulate(a, &s1, &err) == SN_OK, "%s", err.msg);
    CHECK_MSG(sn_trainer_accumulate(b, &s2, &err) == SN_OK, "%s", err.msg);
    CHECK_CLOSE(s1.loss, s2.loss, tol, tol);
    CHECK(s1.n == 8 && s2.n == 8 && s1.num_tokens == s2.num_tokens);
    size_t n1, n2;
    double *g1 = grads_of(a, &n1), *g2 = grads_of(b, &n2);
    CHECK(n1 == n2 && n1 > 0);
    double worst = 0, gmax = 0;
    for (size_t i = 0; i < n1 && i < n2; i++) {
        worst = fmax(worst, fabs(g1[i] - g2[i]));
        gmax = fmax(gmax, fabs(g2[i]));
    }
    printf("%s (%s, %s): max |g_a - g_b| = %.3g (max |g| %.3g)\n",
           ckpt ? "checkpointing" : "accumulation 4x2 vs 8x1", sn_dtype_name(dt),
           lora ? "lora" : "full", worst, gmax);
    /* f64: rounding only; f32: the sums of 8 vs 4 + 4 terms round differently (~1e-7) */
    CHECK_MSG(worst <= tol * fmax(1.0, gmax) && gmax > 1e-4, "max diff %g, max grad %g", worst,
              gmax);
    free(g1);
    free(g2);
    sn_trainer_free(a);
    sn_trainer_free(b);
}

/* ---- checkpoints and resume ----------------------------------------------------------------- */

static int read_all(const char *path, char **buf, size_t *len)
{
    struct sn_err err = {0};
    return sn_file_read(path, (size_t)1 << 28, buf, len, &err);
}

static bool same_file(const char *a, const char *b)
{
    char *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    bool ok = !read_all(a, &x, &nx) && !read_all(b, &y, &ny) && nx == ny && !memcmp(x, y, nx);
    sn_free(x);
    sn_free(y);
    return ok;
}

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static void test_checkpoints(const char *shards, bool lora)
{
    struct sn_err err = {0};
    char out[512], keep[600], p1[700], p2[700];
    snprintf(out, sizeof out, "%s", sn_test_dir(lora ? "train_ckpt_lora" : "train_ckpt_full"));
    struct sn_train_params p = base_params();
    p.mode = lora ? SN_TRAIN_LORA : SN_TRAIN_FULL;
    p.lora.r = 4;
    p.lora.alpha = 8;
    p.lora.dropout = lora ? 0.1 : 0.0; /* dropout: its per-step reseeding must resume too */
    p.max_steps = 9;
    p.keep_last = 0;
    struct sn_trainer *t = NULL;
    CHECK_MSG(sn_trainer_open(&p, shards, out, false, &t, &err) == SN_OK, "%s", err.msg);
    CHECK_MSG(t && sn_trainer_run(t, &err) == SN_OK, "%s", err.msg);
    sn_trainer_free(t);
    t = NULL;
    const char *wfile = lora ? "adapter_model.safetensors" : "model.safetensors";
    /* keep the uninterrupted result, then spoil checkpoint-9 and drop checkpoint-6's latest */
    snprintf(keep, sizeof keep, "%s.keep", out);
    sn_test_sh("rm -rf '%s' && cp -r '%s/checkpoint-9' '%s'", keep, out, keep);
    snprintf(p1, sizeof p1, "%s/checkpoint-9/%s", out, wfile);
    CHECK(sn_test_sh("printf 'XXXX' | dd of='%s' bs=1 seek=100 conv=notrunc 2>/dev/null",
                     p1) == 0);
    /* the same settings resume (from checkpoint-6: 9 is corrupt) and finish at 9 */
    CHECK_MSG(sn_trainer_open(&p, shards, out, false, &t, &err) == SN_OK, "%s", err.msg);
    CHECK(t && sn_trainer_step(t) == 6);
    CHECK_MSG(t && sn_trainer_run(t, &err) == SN_OK, "%s", err.msg);
    sn_trainer_free(t);
    t = NULL;
    snprintf(p2, sizeof p2, "%s/%s", keep, wfile);
    CHECK_MSG(same_file(p1, p2), "resumed %s differs from the uninterrupted run", wfile);
    snprintf(p1, sizeof p1, "%s/checkpoint-9/optimizer.safetensors", out);
    snprintf(p2, sizeof p2, "%s/optimizer.safetensors", keep);
    CHECK_MSG(same_file(p1, p2), "resumed optimizer state differs");
    /* LoRA: adapter_config.json names a real base directory */
    if (lora) {
        cJSON *ac = NULL;
        snprintf(p1, sizeof p1, "%s/checkpoint-9/adapter_config.json", out);
        CHECK(sn_json_load(p1, &ac, &err) == SN_OK);
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(ac, "base_model_name_or_path");
        CHECK(cJSON_IsString(b) && b->valuestring[0] == '/');
        if (cJSON_IsString(b)) {
            snprintf(p2, sizeof p2, "%s/config.json", b->valuestring);
            CHECK_MSG(access(p2, R_OK) == 0, "%s", p2);
            snprintf(p2, sizeof p2, "%s/tokenizer.json", b->valuestring);
            (void)p2; /* no tokenizer in this synthetic set */
        }
        cJSON_Delete(ac);
    }
    /* keep_last 1 after --restart: only the newest survives */
    p.keep_last = 1;
    p.max_steps = 9;
    p.eval_every = 0;
    CHECK_MSG(sn_trainer_open(&p, shards, out, true, &t, &err) == SN_OK, "%s", err.msg);
    CHECK_MSG(t && sn_trainer_run(t, &err) == SN_OK, "%s", err.msg);
    sn_trainer_free(t);
    t = NULL;
    snprintf(p1, sizeof p1, "%s/checkpoint-3", out);
    snprintf(p2, sizeof p2, "%s/checkpoint-9", out);
    CHECK(is_dir(p2));
    CHECK(!is_dir(p1));
    snprintf(p1, sizeof p1, "%s/checkpoint-6", out);
    CHECK(!is_dir(p1));
    char *latest = NULL;
    size_t ll = 0;
    snprintf(p1, sizeof p1, "%s/latest", out);
    CHECK(read_all(p1, &latest, &ll) == 0 && latest && !strncmp(latest, "checkpoint-9\n", 13));
    sn_free(latest);
    /* a changed setting is refused, naming it */
    p.sched.lr = 2e-3;
    CHECK(sn_trainer_open(&p, shards, out, false, &t, &err) == SN_E_ARG && !t);
    CHECK_MSG(strstr(err.msg, "lr (was 0.001, now 0.002)") != NULL, "%s", err.msg);
    sn_err_clear(&err);
    sn_test_sh("rm -rf '%s'", keep);
}

/* ---- failures ------------------------------------------------------------------------------- */

static void test_failures(const char *shards, const char *root)
{
    struct sn_err err = {0};
    struct sn_train_params p = base_params();
    char out[700], path[700];
    snprintf(out, sizeof out, "%s/fail_out", root);
    p.mode = SN_TRAIN_FULL;
    /* NaN: a poisoned embedding */
    struct sn_trainer *t = NULL;
    CHECK_MSG(sn_trainer_open(&p, shards, out, true, &t, &err) == SN_OK, "%s", err.msg);
    if (t) {
        const struct sn_param *ps;
        const bool *d;
        size_t n;
        sn_trainer_params(t, &ps, &d, &n);
        bool g = sn_aten_no_grad_enter();
        CHECK(sn_aten_fill_(ps[0].t, NAN, &err) == SN_OK);
        sn_aten_no_grad_exit(g);
        CHECK(sn_trainer_run(t, &err) == SN_E_BACKEND);
        CHECK_MSG(strstr(err.msg, "step 1") && strstr(err.msg, "nan") &&
                  strstr(err.msg, "train-00000.h5#"), "%s", err.msg);
        sn_err_clear(&err);
        sn_trainer_free(t);
        t = NULL;
    }
    /* a tokenizer file that is not the shards' */
    snprintf(path, sizeof path, "%s/other_tokenizer.json", root);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs("{\"model\": {}}\n", f);
        fclose(f);
    }
    p.tokenizer = path;
    CHECK(sn_trainer_open(&p, shards, out, true, &t, &err) != SN_OK && !t);
    CHECK_MSG(strstr(err.msg, "tokenizer") && strstr(err.msg, "other_tokenizer.json"), "%s",
              err.msg);
    sn_err_clear(&err);
    p.tokenizer = NULL;
    /* no training tuples */
    char empty[600];
    snprintf(empty, sizeof empty, "%s/empty_shards", root);
    CHECK_MSG(make_shards(empty, 0, 8, &err) == SN_OK, "%s", err.msg);
    CHECK(sn_trainer_open(&p, empty, out, true, &t, &err) == SN_E_ARG && !t);
    CHECK_MSG(strstr(err.msg, "no training tuples") != NULL, "%s", err.msg);
    sn_err_clear(&err);
    /* fewer tuples than one optimizer step */
    p.micro_batch = 64;
    CHECK(sn_trainer_open(&p, shards, out, true, &t, &err) == SN_E_ARG && !t);
    CHECK_MSG(strstr(err.msg, "fewer than one optimizer step") != NULL, "%s", err.msg);
    sn_err_clear(&err);
    p.micro_batch = 4;
    /* train.device: a name that is no device, and CUDA on a libtorch without it (Debian's
    ** CPU build here), are refused before any work with the setting named */
    p.device = "gpu";
    CHECK(sn_trainer_open(&p, shards, out, true, &t, &err) == SN_E_ARG && !t);
    CHECK_MSG(strstr(err.msg, "train.device") && strstr(err.msg, "'gpu'") &&
              strstr(err.msg, "cuda:N"), "%s", err.msg);
    sn_err_clear(&err);
    if (!sn_aten_cuda_available()) {
        p.device = "cuda";
        CHECK(sn_trainer_open(&p, shards, out, true, &t, &err) == SN_E_UNSUPPORTED && !t);
        CHECK_MSG(strstr(err.msg, "train.device") && strstr(err.msg, "no usable CUDA"), "%s",
                  err.msg);
        sn_err_clear(&err);
    }
    p.device = "cpu";
    /* a truncated shard */
    char cut[600];
    snprintf(cut, sizeof cut, "%s/cut_shards", root);
    sn_test_sh("rm -rf '%s' && cp -r '%s' '%s' && truncate -s 3000 '%s/train-00000.h5'", cut,
               shards, cut, cut);
    CHECK(sn_trainer_open(&p, cut, out, true, &t, &err) != SN_OK && !t);
    CHECK_MSG(strstr(err.msg, "train-00000.h5") != NULL, "%s", err.msg);
    sn_err_clear(&err);
    /* recipe errors name the key and the nearest valid one */
    cJSON *r = cJSON_Parse("{\"train\": {\"micro_bach\": 4}}");
    struct sn_train_params q = sn_train_default_params();
    CHECK(sn_train_params_from_recipe(r, &q, &err) == SN_E_ARG);
    CHECK_MSG(strstr(err.msg, "micro_bach") && strstr(err.msg, "micro_batch"), "%s", err.msg);
    sn_err_clear(&err);
    cJSON_Delete(r);
    r = cJSON_Parse("{\"train\": {\"lora\": {\"target_modules\": [\"q_proj\", \"qq_proj\"]}}}");
    CHECK(sn_train_params_from_recipe(r, &q, &err) == SN_E_ARG);
    CHECK_MSG(strstr(err.msg, "qq_proj") != NULL, "%s", err.msg);
    sn_err_clear(&err);
    cJSON_Delete(r);
    r = cJSON_Parse("{\"train\": {\"mode\": \"lora\", \"schedule\": \"linear\", \"lr\": 2e-5,"
                    " \"lora\": {\"r\": 16, \"alpha\": 32, \"target_modules\": [\"v_proj\"]}}}");
    CHECK(sn_train_params_from_recipe(r, &q, &err) == SN_OK);
    CHECK(!strcmp(q.device, "cpu"));
    CHECK(q.mode == SN_TRAIN_LORA && q.sched.kind == SN_LR_LINEAR && q.sched.lr == 2e-5 &&
          q.lora.r == 16 && q.lora.alpha == 32 && q.lora.targets == (1u << SN_LORA_V_PROJ));
    cJSON_Delete(r);
    r = cJSON_Parse("{\"train\": {\"device\": \"cuda:1\"}}");
    CHECK(sn_train_params_from_recipe(r, &q, &err) == SN_OK && !strcmp(q.device, "cuda:1"));
    cJSON_Delete(r);
}

int main(void)
{
    struct sn_err err = {0};
    sn_log_set_level(SN_LOG_ERROR); /* the warnings this test provokes on purpose */
    test_schedules();
    char root[512], shards[600];
    snprintf(root, sizeof root, "%s", sn_test_dir("train_trainer"));
    snprintf(shards, sizeof shards, "%s/shards", root);
    CHECK_MSG(make_shards(shards, 40, 12, &err) == SN_OK, "%s", err.msg);
    test_decay(shards, false);
    test_decay(shards, true);
    /* several seeds: several data orders (and so reference counts per micro-batch) */
    for (uint64_t seed = 1; seed <= 3; seed++) {
        test_accumulation(shards, SN_DTYPE_F64, false, seed, 1e-10, false);
        test_accumulation(shards, SN_DTYPE_F32, false, seed, 1e-6, false);
    }
    test_accumulation(shards, SN_DTYPE_F64, true, 1, 1e-10, false);
    /* gradient checkpointing gives the same gradients, full fine-tuning included */
    test_accumulation(shards, SN_DTYPE_F64, false, 1, 1e-10, true);
    test_accumulation(shards, SN_DTYPE_F64, true, 1, 1e-10, true);
    test_checkpoints(shards, false);
    test_checkpoints(shards, true);
    test_failures(shards, root);
    return sn_test_done();
}
