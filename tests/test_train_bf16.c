/* tests/test_train_bf16.c: bf16 mixed precision with f32 master weights (train.dtype
** "bfloat16"; docs/train.md "bf16").
**   - aten: under sn_aten_autocast_enter(BF16) a linear of f32 operands equals the product of
**     the bf16-rounded operands (computed here in f64) rounded once more to bf16, not the f32
**     product; its gradients are f32; add_linear keeps the residual in f32; off again, the
**     op is the plain f32 one bit for bit.
**   - trainer: 20 optimizer steps of the tiny model in full mode, bf16 vs f32 from the same
**     seed and data: every step's loss within 2e-2 of the f32 loss (bf16 keeps 8 significant
**     bits: each GEMM output carries a relative rounding of up to 2^-9 ≈ 2e-3, the rewards of
**     this model are O(1), and −log σ has slope below 1, so the loss moves by less than the
**     margins' error; the gap compounds over 20 AdamW steps: measured 5e-3 at most), and not
**     equal
**     to it (the casts happen); the weights stay f32; the loss falls in both.
**   - gradient checkpointing recomputes under the forward's bf16 setting: LoRA gradients with
**     and without checkpointing agree to f32 rounding (a recompute in f32 would differ by
**     bf16's 1e-3). */
#include "tests/testutil.h"
#include "tests/testutil_aten.h"
#include "train/train.h"

#include <stdint.h>

#include "tests/testutil_train.h"

static struct sn_err E;

static float bf16_round(double x) /* round to nearest even on the f32 bits */
{
    float f = (float)x;
    uint32_t u;
    memcpy(&u, &f, 4);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&f, &u, 4);
    return f;
}

static void test_aten_autocast(void)
{
    enum { N = 6, I = 40, O = 24 };
    struct sn_aten_gen *g = NULL;
    OK(sn_aten_gen_create(5, SN_CPU, &g, &E));
    struct sn_tensor *x = NULL, *w = NULL, *y = NULL, *f32 = NULL, *bf = NULL, *res = NULL;
    OK(sn_aten_randn((int64_t[]){N, I}, 2, SN_DTYPE_F32, SN_CPU, g, &x, &E));
    OK(sn_aten_randn((int64_t[]){O, I}, 2, SN_DTYPE_F32, SN_CPU, g, &w, &E));
    OK(sn_aten_randn((int64_t[]){N, O}, 2, SN_DTYPE_F32, SN_CPU, g, &y, &E));
    OK(sn_aten_set_requires_grad(x, true, &E));
    OK(sn_aten_set_requires_grad(w, true, &E));
    float hx[N * I], hw[O * I], hy[N * O], hf[N * O], hb[N * O], hr[N * O];
    OK(sn_aten_to_host(x, hx, SN_DTYPE_F32, N * I, &E));
    OK(sn_aten_to_host(w, hw, SN_DTYPE_F32, O * I, &E));
    OK(sn_aten_to_host(y, hy, SN_DTYPE_F32, N * O, &E));
    OK(sn_aten_linear(x, w, NULL, &f32, &E));
    CHECK(sn_aten_autocast_get() == SN_DTYPE_F32);
    enum sn_dtype prev = sn_aten_autocast_enter(SN_DTYPE_BF16);
    CHECK(prev == SN_DTYPE_F32 && sn_aten_autocast_get() == SN_DTYPE_BF16);
    OK(sn_aten_linear(x, w, NULL, &bf, &E));
    OK(sn_aten_add_linear(y, x, w, 0.5, &res, &E));
    sn_aten_autocast_exit(prev);
    CHECK(sn_aten_autocast_get() == SN_DTYPE_F32);
    CHECK(bf && sn_tensor_dtype(bf) == SN_DTYPE_F32 && res && sn_tensor_dtype(res) == SN_DTYPE_F32);
    OK(sn_aten_to_host(f32, hf, SN_DTYPE_F32, N * O, &E));
    OK(sn_aten_to_host(bf, hb, SN_DTYPE_F32, N * O, &E));
    OK(sn_aten_to_host(res, hr, SN_DTYPE_F32, N * O, &E));
    double worst_bf = 0, worst_res = 0, gap = 0;
    for (int n = 0; n < N; n++)
        for (int o = 0; o < O; o++) {
            double ref = 0, exact = 0;
            for (int i = 0; i < I; i++) {
                ref += (double)bf16_round(hx[n * I + i]) * bf16_round(hw[o * I + i]);
                exact += (double)hx[n * I + i] * hw[o * I + i];
            }
            double want = bf16_round(ref); /* the bf16 GEMM's output rounding */
            worst_bf = fmax(worst_bf, fabs(hb[n * O + o] - want) / fmax(1.0, fabs(want)));
            /* add_linear: y + 0.5 · (that product), the sum in f32 */
            double wr = hy[n * O + o] + 0.5 * want;
            worst_res = fmax(worst_res, fabs(hr[n * O + o] - wr) / fmax(1.0, fabs(wr)));
            gap = fmax(gap, fabs(hf[n * O + o] - exact));
        }
    double diff_f32 = 0;
    for (int k = 0; k < N * O; k++)
        diff_f32 = fmax(diff_f32, fabs(hb[k] - hf[k]));
    printf("autocast linear: vs bf16 reference %.3g, add_linear %.3g, vs f32 %.3g (f32 exact "
           "to %.3g)\n", worst_bf, worst_res, diff_f32, gap);
    /* f32 accumulation inside the GEMM in another order: one bf16 ulp (2^-8) at most */
    CHECK_MSG(worst_bf <= 4e-3, "autocast linear off the bf16 reference by %g", worst_bf);
    CHECK_MSG(worst_res <= 4e-3, "autocast add_linear off by %g", worst_res);
    CHECK_MSG(diff_f32 > 1e-4, "autocast linear equals the f32 one (%g): no cast happened",
              diff_f32);
    /* gradients reach the f32 leaves as f32 */
    struct sn_tensor *s = NULL, *gx = NULL;
    OK(sn_aten_sum_all(bf, &s, &E));
    OK(sn_aten_backward(s, NULL, false, &E));
    OK(sn_aten_grad(x, &gx, &E));
    CHECK(gx && sn_tensor_dtype(gx) == SN_DTYPE_F32);
    /* off again: the plain f32 op, bit for bit */
    struct sn_tensor *again = NULL;
    float ha[N * O];
    OK(sn_aten_linear(x, w, NULL, &again, &E));
    OK(sn_aten_to_host(again, ha, SN_DTYPE_F32, N * O, &E));
    CHECK(memcmp(ha, hf, sizeof ha) == 0);
    sn_tensor_free(again);
    sn_tensor_free(s);
    sn_tensor_free(gx);
    sn_tensor_free(x);
    sn_tensor_free(w);
    sn_tensor_free(y);
    sn_tensor_free(f32);
    sn_tensor_free(bf);
    sn_tensor_free(res);
    sn_aten_gen_free(g);
}

/* tests/testutil_train.h's short full-mode run on the tiny seeded base */
static struct sn_train_params base_params(void)
{
    return train_test_params("cpu");
}

enum { STEPS = 20 };

/* Trains p for STEPS steps with the trainer's own loop; loss[s] from metrics.jsonl. Returns
** the trainer (caller frees) for a look at its parameters. */
static struct sn_trainer *run_steps(struct sn_train_params *p, const char *shards,
                                    const char *name, double *loss)
{
    struct sn_trainer *t = NULL;
    char out[512];
    snprintf(out, sizeof out, "%s", sn_test_dir(name));
    OK(sn_trainer_open(p, shards, out, true, &t, &E));
    if (!t)
        return NULL;
    OK(sn_trainer_run(t, &E));
    char path[600];
    snprintf(path, sizeof path, "%s/metrics.jsonl", out);
    for (int s = 0; s < STEPS; s++)
        loss[s] = train_step_loss(path, s + 1);
    const struct sn_param *ps;
    const bool *d;
    size_t n;
    sn_trainer_params(t, &ps, &d, &n);
    for (size_t i = 0; i < n; i++)
        CHECK_MSG(sn_tensor_dtype(ps[i].t) == SN_DTYPE_F32, "%s is %s", ps[i].name,
                  sn_dtype_name(sn_tensor_dtype(ps[i].t)));
    return t;
}

static void test_twenty_steps(const char *shards)
{
    double l32[STEPS], l16[STEPS];
    struct sn_train_params p = base_params();
    struct sn_trainer *a = run_steps(&p, shards, "bf16_f32", l32);
    p.dtype = SN_DTYPE_BF16;
    struct sn_trainer *b = run_steps(&p, shards, "bf16_bf16", l16);
    double worst = 0, any = 0;
    for (int s = 0; s < STEPS; s++) {
        CHECK_MSG(isfinite(l32[s]) && isfinite(l16[s]), "step %d: loss %g / %g", s + 1, l32[s],
                  l16[s]);
        worst = fmax(worst, fabs(l16[s] - l32[s]));
        any = fmax(any, fabs(l16[s] - l32[s]));
    }
    printf("20 steps, bf16 vs f32: loss %.4f -> %.4f vs %.4f -> %.4f, max |dloss| %.3g\n",
           l16[0], l16[STEPS - 1], l32[0], l32[STEPS - 1], worst);
    CHECK_MSG(worst <= 2e-2, "bf16 loss strays %g from f32", worst);
    CHECK_MSG(any > 1e-7, "bf16 loss equals f32 (%g): the casts did not happen", any);
    CHECK(l32[STEPS - 1] < l32[0] && l16[STEPS - 1] < l16[0]);
    sn_trainer_free(a);
    sn_trainer_free(b);
}

/* One step's LoRA gradients in bf16, with and without checkpointing. */
static void test_checkpoint_recompute(const char *shards)
{
    struct sn_train_params p = base_params();
    p.dtype = SN_DTYPE_BF16;
    p.mode = SN_TRAIN_LORA;
    double *g[2] = {NULL, NULL};
    size_t n[2] = {0, 0};
    for (int c = 0; c < 2; c++) {
        p.grad_checkpoint = c == 1;
        struct sn_trainer *t = NULL;
        struct sn_train_stats st;
        OK(sn_trainer_open(&p, shards, sn_test_dir(c ? "bf16_ck1" : "bf16_ck0"), true, &t, &E));
        if (!t)
            return;
        const struct sn_param *ps;
        const bool *d;
        size_t np;
        sn_trainer_params(t, &ps, &d, &np);
        OK(train_fill_lora_b(t, 0.01, &E));
        OK(sn_trainer_accumulate(t, &st, &E));
        for (size_t i = 0; i < np; i++)
            n[c] += (size_t)sn_tensor_numel(ps[i].t);
        g[c] = calloc(n[c] + 1, sizeof *g[c]);
        size_t k = 0;
        for (size_t i = 0; i < np; i++) {
            struct sn_tensor *gr = NULL;
            OK(sn_aten_grad(ps[i].t, &gr, &E));
            size_t m = (size_t)sn_tensor_numel(ps[i].t);
            if (gr)
                OK(sn_aten_to_host(gr, g[c] + k, SN_DTYPE_F64, m, &E));
            sn_tensor_free(gr);
            k += m;
        }
        sn_trainer_free(t);
    }
    double worst = 0, mx = 0;
    CHECK(n[0] == n[1] && n[0] > 0);
    for (size_t i = 0; i < n[0] && i < n[1]; i++) {
        worst = fmax(worst, fabs(g[0][i] - g[1][i]));
        mx = fmax(mx, fabs(g[0][i]));
    }
    printf("bf16 lora gradients, checkpointing vs not: max diff %.3g (max |g| %.3g)\n", worst,
           mx);
    /* same bf16 ops in both; only f32 summation order may differ */
    CHECK_MSG(worst <= 1e-5 * fmax(1.0, mx) && mx > 1e-4, "checkpointed bf16 gradients differ "
              "by %g", worst);
    free(g[0]);
    free(g[1]);
}

static void test_recipe(void)
{
    struct sn_err e = {0};
    struct sn_train_params p = sn_train_default_params();
    cJSON *r = cJSON_Parse("{\"train\": {\"dtype\": \"bfloat16\"}}");
    CHECK_MSG(sn_train_params_from_recipe(r, &p, &e) == SN_OK, "%s", e.msg);
    CHECK(p.dtype == SN_DTYPE_BF16);
    cJSON_Delete(r);
    r = cJSON_Parse("{\"train\": {\"dtype\": \"float8\"}}");
    CHECK(sn_train_params_from_recipe(r, &p, &e) == SN_E_ARG && strstr(e.msg, "bfloat16"));
    cJSON_Delete(r);
}

int main(void)
{
    sn_log_set_level(SN_LOG_ERROR);
    test_recipe();
    test_aten_autocast();
    const char *root = sn_test_dir("train_bf16");
    char shards[512];
    snprintf(shards, sizeof shards, "%s/shards", root);
    CHECK_MSG(make_shards(shards, 80, 8, &E) == SN_OK, "%s", E.msg);
    test_twenty_steps(shards);
    test_checkpoint_recompute(shards);
    return sn_test_done();
}
