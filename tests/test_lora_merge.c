/* tests/test_lora_merge.c: LoRA layers (lora/lora.h) and their use in the model:
**  - one layer against a hand-written double loop: y = x Wᵀ + b + (α/r)(x Aᵀ) Bᵀ;
**  - A's Kaiming-uniform bound 1/sqrt(in), B zero;
**  - a fresh adapter leaves the model's rewards bit for bit unchanged;
**  - merge then forward equals the adapter forward; unmerge restores every base weight bit
**    for bit; double merge / stray unmerge are errors;
**  - base weights are frozen (no gradient), adapters and head are not;
**  - dropout acts in training mode only. */
#include "tests/testutil.h"
#include "tests/testutil_aten.h"
#include "train/train.h"

#include <stdint.h>

static void test_layer(void)
{
    struct sn_err err = {0};
    enum { IN = 5, OUT = 3, R = 2, N = 4 };
    struct sn_lora_config c = sn_lora_default_config();
    c.r = R;
    c.alpha = 3.0;
    struct sn_aten_gen *g = NULL;
    CHECK(sn_aten_gen_create(1, SN_CPU, &g, &err) == SN_OK);
    struct sn_lora_linear l;
    CHECK(sn_lora_linear_init(&l, IN, OUT, &c, SN_DTYPE_F64, SN_CPU, g, &err) == SN_OK);
    CHECK(l.scale == 1.5);
    double A[R * IN], Bz[OUT * R];
    CHECK(sn_aten_to_host(l.A, A, SN_DTYPE_F64, R * IN, &err) == SN_OK);
    CHECK(sn_aten_to_host(l.B, Bz, SN_DTYPE_F64, OUT * R, &err) == SN_OK);
    double bound = 1.0 / sqrt((double)IN), amax = 0;
    for (int i = 0; i < R * IN; i++)
        amax = fmax(amax, fabs(A[i]));
    CHECK(amax <= bound && amax > 0.3 * bound);
    for (int i = 0; i < OUT * R; i++)
        CHECK(Bz[i] == 0.0);
    /* set B, W, b, x to known values */
    double B[OUT * R], W[OUT * IN], bias[OUT], x[N * IN];
    for (int i = 0; i < OUT * R; i++)
        B[i] = 0.1 * (i + 1) - 0.25;
    for (int i = 0; i < OUT * IN; i++)
        W[i] = sin(i + 1.0);
    for (int i = 0; i < OUT; i++)
        bias[i] = 0.05 * i;
    for (int i = 0; i < N * IN; i++)
        x[i] = cos(0.7 * i);
    struct sn_tensor *tB = NULL, *tW = NULL, *tb = NULL, *tx = NULL, *y = NULL;
    int64_t sB[2] = {OUT, R}, sW[2] = {OUT, IN}, sb[1] = {OUT}, sx[2] = {N, IN};
    CHECK(sn_aten_from_host(B, SN_DTYPE_F64, sB, 2, SN_DTYPE_F64, SN_CPU, &tB, &err) == SN_OK);
    bool gm = sn_aten_no_grad_enter();
    CHECK(sn_aten_copy_(l.B, tB, &err) == SN_OK);
    sn_aten_no_grad_exit(gm);
    CHECK(sn_aten_from_host(W, SN_DTYPE_F64, sW, 2, SN_DTYPE_F64, SN_CPU, &tW, &err) == SN_OK);
    CHECK(sn_aten_from_host(bias, SN_DTYPE_F64, sb, 1, SN_DTYPE_F64, SN_CPU, &tb, &err) == 0);
    CHECK(sn_aten_from_host(x, SN_DTYPE_F64, sx, 2, SN_DTYPE_F64, SN_CPU, &tx, &err) == SN_OK);
    CHECK(sn_lora_linear_forward(&l, tx, tW, tb, false, NULL, &y, &err) == SN_OK);
    double got[N * OUT];
    CHECK(y && sn_aten_to_host(y, got, SN_DTYPE_F64, N * OUT, &err) == SN_OK);
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OUT; o++) {
            double want = bias[o];
            for (int i = 0; i < IN; i++)
                want += x[n * IN + i] * W[o * IN + i];
            for (int r = 0; r < R; r++) {
                double xa = 0;
                for (int i = 0; i < IN; i++)
                    xa += x[n * IN + i] * A[r * IN + i];
                want += 1.5 * xa * B[o * R + r];
            }
            CHECK_CLOSE(got[n * OUT + o], want, 1e-12, 1e-12);
        }
    sn_tensor_free(y);
    /* the residual form: r + x Wᵀ + adapter == forward without bias + r */
    {
        double rr[N * OUT], got2[N * OUT];
        for (int i = 0; i < N * OUT; i++)
            rr[i] = 0.3 * i - 1;
        struct sn_tensor *tr = NULL, *y2 = NULL;
        int64_t sr[2] = {N, OUT};
        CHECK(sn_aten_from_host(rr, SN_DTYPE_F64, sr, 2, SN_DTYPE_F64, SN_CPU, &tr, &err) == 0);
        CHECK(sn_lora_linear_forward_add(&l, tr, tx, tW, false, NULL, &y2, &err) == SN_OK);
        CHECK(y2 && sn_aten_to_host(y2, got2, SN_DTYPE_F64, N * OUT, &err) == SN_OK);
        for (int n = 0; n < N; n++)
            for (int o = 0; o < OUT; o++)
                CHECK_CLOSE(got2[n * OUT + o], got[n * OUT + o] - bias[o] + rr[n * OUT + o],
                            1e-12, 1e-12);
        sn_tensor_free(tr);
        sn_tensor_free(y2);
    }
    /* merge / unmerge on the layer: W' = W + 1.5 B A, then W restored exactly */
    CHECK(sn_lora_merge(&l, tW, &err) == SN_OK);
    CHECK(sn_lora_merge(&l, tW, &err) == SN_E_ARG);
    sn_err_clear(&err);
    double Wm[OUT * IN];
    CHECK(sn_aten_to_host(tW, Wm, SN_DTYPE_F64, OUT * IN, &err) == SN_OK);
    for (int o = 0; o < OUT; o++)
        for (int i = 0; i < IN; i++) {
            double d = 0;
            for (int r = 0; r < R; r++)
                d += B[o * R + r] * A[r * IN + i];
            CHECK_CLOSE(Wm[o * IN + i], W[o * IN + i] + 1.5 * d, 1e-14, 1e-14);
        }
    CHECK(sn_lora_unmerge(&l, tW, &err) == SN_OK);
    CHECK(sn_aten_to_host(tW, Wm, SN_DTYPE_F64, OUT * IN, &err) == SN_OK);
    CHECK(!memcmp(Wm, W, sizeof W));
    CHECK(sn_lora_unmerge(&l, tW, &err) == SN_E_ARG);
    sn_err_clear(&err);
    enum sn_lora_target t;
    CHECK(sn_lora_target_parse("gate_proj", &t) && t == SN_LORA_GATE_PROJ);
    CHECK(!sn_lora_target_parse("lm_head", &t));
    c.r = 0;
    CHECK(sn_lora_config_check(&c, &err) == SN_E_ARG && strstr(err.msg, "r = 0"));
    sn_lora_linear_free(&l);
    sn_tensor_free(tB);
    sn_tensor_free(tW);
    sn_tensor_free(tb);
    sn_tensor_free(tx);
    sn_aten_gen_free(g);
}

static void host_weight(struct sn_tensor *t, float **out, size_t *n)
{
    struct sn_err err = {0};
    *n = (size_t)sn_tensor_numel(t);
    *out = malloc(*n * sizeof **out);
    CHECK(sn_aten_to_host(t, *out, SN_DTYPE_F32, *n, &err) == SN_OK);
}

static void test_model(void)
{
    struct sn_err err = {0};
    struct sn_model_config c = sn_model_config_tiny(100);
    struct sn_model_params p = sn_model_default_params();
    p.seed = 21;
    p.init_std = 0.1;
    p.init_noise = 0.05;
    struct sn_model *m = NULL;
    CHECK(sn_model_create(&c, &p, &m, &err) == SN_OK);
    if (!m)
        return;
    enum { B = 3, T = 9 };
    int32_t ids[B * T], mask[B * T];
    for (int i = 0; i < B * T; i++) {
        ids[i] = (i * 37 + 5) % 100;
        mask[i] = (i % T) < 4 + 2 * (i / T);
    }
    struct sn_model_batch b = {ids, mask, B, T};
    float r0[B], r1[B], r2[B], r3[B];
    CHECK(sn_model_forward_host(m, &b, r0, NULL, &err) == SN_OK);
    struct sn_param *ps = NULL;
    size_t np = 0;
    CHECK(sn_test_lora_attach_all(m, 4, 16, &ps, &np, &err) == SN_OK);
    CHECK(sn_model_forward_host(m, &b, r1, NULL, &err) == SN_OK);
    for (int i = 0; i < B; i++)
        CHECK_MSG(r1[i] == r0[i], "fresh adapter changed reward %d: %.9g -> %.9g", i, r0[i],
                  r1[i]);
    /* non-zero B everywhere */
    CHECK(sn_test_randomize_lora_b(ps, np, 0.05, 8) == SN_OK);
    CHECK(sn_model_forward_host(m, &b, r1, NULL, &err) == SN_OK);
    int changed = 0;
    for (int i = 0; i < B; i++)
        changed += fabsf(r1[i] - r0[i]) > 1e-4f;
    CHECK(changed == B);
    /* keep the original bits of every base weight */
    float *orig[64];
    size_t n_orig[64];
    int k = 0;
    for (int64_t li = 0; li < c.num_hidden_layers; li++)
        for (int t = 0; t < SN_LORA_TARGET_COUNT && k < 64; t++, k++)
            host_weight(sn_model_base_weight(m, li, (enum sn_lora_target)t), &orig[k],
                        &n_orig[k]);
    CHECK(sn_model_lora_merge(m, &err) == SN_OK);
    CHECK(sn_model_forward_host(m, &b, r2, NULL, &err) == SN_OK);
    for (int i = 0; i < B; i++)
        CHECK_CLOSE(r2[i], r1[i], 1e-5, 1e-4); /* f32: W + ΔW rounds differently */
    CHECK(sn_model_lora_merge(m, &err) != SN_OK); /* already merged */
    sn_err_clear(&err);
    CHECK(sn_model_save_hf(m, sn_test_dir("lora_merged_save"), &err) == SN_E_ARG);
    sn_err_clear(&err);
    CHECK(sn_model_lora_unmerge(m, &err) == SN_OK);
    k = 0;
    for (int64_t li = 0; li < c.num_hidden_layers; li++)
        for (int t = 0; t < SN_LORA_TARGET_COUNT && k < 64; t++, k++) {
            float *now;
            size_t n;
            host_weight(sn_model_base_weight(m, li, (enum sn_lora_target)t), &now, &n);
            CHECK_MSG(n == n_orig[k] && !memcmp(now, orig[k], n * sizeof *now),
                      "layer %d %s not restored bit for bit", (int)li,
                      sn_lora_target_name((enum sn_lora_target)t));
            free(now);
            free(orig[k]);
        }
    CHECK(sn_model_forward_host(m, &b, r3, NULL, &err) == SN_OK);
    for (int i = 0; i < B; i++)
        CHECK(r3[i] == r1[i]);

    /* frozen base, trainable adapters and head */
    struct sn_tensor *r = NULL, *s = NULL;
    CHECK(sn_model_forward(m, &b, &r, NULL, &err) == SN_OK);
    CHECK(r && sn_aten_sum_all(r, &s, &err) == SN_OK);
    CHECK(s && sn_aten_backward(s, NULL, false, &err) == SN_OK);
    for (size_t i = 0; i < np; i++) {
        struct sn_tensor *gr = NULL;
        CHECK(sn_aten_grad(ps[i].t, &gr, &err) == SN_OK);
        CHECK_MSG(gr != NULL, "%s got no gradient", ps[i].name);
        sn_tensor_free(gr);
    }
    struct sn_tensor *w0 = sn_model_base_weight(m, 0, SN_LORA_Q_PROJ), *gw = NULL;
    CHECK(!sn_aten_requires_grad(w0));
    CHECK(sn_aten_grad(w0, &gw, &err) == SN_OK && gw == NULL);
    sn_tensor_free(r);
    sn_tensor_free(s);
    CHECK(sn_model_count_params(m, true) ==
          (int64_t)c.hidden_size + c.num_hidden_layers * 4 *
                                       (/* q */ (64 + 64) + /* k */ (64 + 32) + /* v */ (64 + 32) +
                                        /* o */ (64 + 64) + /* gate */ (64 + 128) +
                                        /* up */ (64 + 128) + /* down */ (128 + 64)));

    /* dropout: training mode changes the output, evaluation mode does not */
    struct sn_lora_config lc = sn_lora_default_config(); /* as attached above, with dropout */
    lc.r = 4;
    lc.alpha = 16;
    lc.targets = SN_LORA_ALL_TARGETS;
    lc.dropout = 0.5;
    CHECK(sn_model_lora_attach(m, &lc, &err) == SN_OK);
    free(ps);
    CHECK(sn_model_trainable_params(m, &ps, &np, &err) == SN_OK);
    CHECK(sn_test_randomize_lora_b(ps, np, 0.2, 9) == SN_OK);
    float e1[B], e2[B], t1[B];
    CHECK(sn_model_forward_host(m, &b, e1, NULL, &err) == SN_OK);
    CHECK(sn_model_forward_host(m, &b, e2, NULL, &err) == SN_OK);
    sn_model_set_training(m, true);
    CHECK(sn_model_forward_host(m, &b, t1, NULL, &err) == SN_OK);
    sn_model_set_training(m, false);
    for (int i = 0; i < B; i++)
        CHECK(e1[i] == e2[i]);
    int dif = 0;
    for (int i = 0; i < B; i++)
        dif += fabsf(t1[i] - e1[i]) > 1e-6f;
    CHECK(dif > 0);
    free(ps);
    sn_model_free(m);
}

int main(void)
{
    test_layer();
    test_model();
    return sn_test_done();
}
