/* tests/test_loss_math.c: L = L_pref + α·L_align (docs/design.md §4) against hand-computed values,
** stable log σ at extreme margins, the per-tuple missing-reference mask, metrics (strict
** accuracy: ties count wrong), and autograd gradients against central finite differences of
** the host formula in double. */
#include "loss/loss.h"
#include "tests/testutil.h"

/* Independent, naive formula: fine for the moderate values used with it. */
static double naive_nls(double z) { return log(1.0 + exp(-z)); } /* −log σ(z) */

static struct sn_tensor *vec(const double *v, int64_t n, enum sn_dtype dt, bool grad)
{
    struct sn_tensor *t = NULL;
    struct sn_err err = {0};
    int64_t s[1] = {n};
    CHECK(sn_aten_from_host(v, SN_DTYPE_F64, s, 1, dt, SN_CPU, &t, &err) == SN_OK);
    if (t && grad)
        CHECK(sn_aten_set_requires_grad(t, true, &err) == SN_OK);
    return t;
}

static void grad_of(struct sn_tensor *t, double *out, int64_t n)
{
    struct sn_err err = {0};
    struct sn_tensor *g = NULL;
    CHECK(sn_aten_grad(t, &g, &err) == SN_OK);
    CHECK(g != NULL);
    if (g)
        CHECK(sn_aten_to_host(g, out, SN_DTYPE_F64, (size_t)n, &err) == SN_OK);
    sn_tensor_free(g);
}

static void test_log_sigmoid(void)
{
    CHECK_CLOSE(sn_log_sigmoid(0.0), -log(2.0), 1e-15, 0);
    CHECK_CLOSE(sn_log_sigmoid(-1000.0), -1000.0, 1e-9, 0); /* naive: log(0) = -inf */
    CHECK(sn_log_sigmoid(1000.0) <= 0.0 && sn_log_sigmoid(1000.0) > -1e-300);
    CHECK_CLOSE(sn_log_sigmoid(3.0), -naive_nls(3.0), 1e-15, 1e-14);
    CHECK_CLOSE(sn_log_sigmoid(-3.0), -naive_nls(-3.0), 1e-15, 1e-14);
}

static void test_host_values(void)
{
    struct sn_err err = {0};
    double ch[4] = {1.0, 0.0, 2.0, -0.5}, rej[4] = {0.0, 1.0, 2.0, -1.5};
    double ref[4] = {0.5, NAN, 3.0, -0.5};
    bool has[4] = {true, false, true, true};
    struct sn_loss_result r;
    CHECK(sn_loss_host(ch, rej, ref, has, 4, 0.5, &r, &err) == SN_OK);
    double pref = (naive_nls(1.0) + naive_nls(-1.0) + naive_nls(0.0) + naive_nls(1.0)) / 4;
    double align = (naive_nls(0.5) + naive_nls(-1.0) + naive_nls(0.0)) / 3;
    CHECK_CLOSE(r.pref, pref, 1e-14, 1e-13);
    CHECK_CLOSE(r.align, align, 1e-14, 1e-13);
    CHECK_CLOSE(r.loss_value, pref + 0.5 * align, 1e-14, 1e-13);
    CHECK_CLOSE(r.acc_pref, 0.5, 0, 0);       /* 1>0 yes, 0>1 no, 2>2 tie = no, -0.5>-1.5 yes */
    CHECK_CLOSE(r.acc_align, 1.0 / 3.0, 1e-15, 0); /* 1>0.5 yes, 2>3 no, -0.5>-0.5 tie no */
    CHECK_CLOSE(r.margin_mean, (1.0 - 1.0 + 0.0 + 1.0) / 4, 1e-15, 0);
    CHECK_CLOSE(r.reward_chosen_mean, 2.5 / 4, 1e-15, 0);
    CHECK_CLOSE(r.reward_rejected_mean, 1.5 / 4, 1e-15, 0);
    CHECK_CLOSE(r.reward_reference_mean, 3.0 / 3, 1e-15, 0);
    CHECK(r.n == 4 && r.n_align == 3);
    /* α = 0: alignment off */
    CHECK(sn_loss_host(ch, rej, ref, has, 4, 0.0, &r, &err) == SN_OK);
    CHECK_CLOSE(r.loss_value, pref, 1e-14, 1e-13);
    CHECK(r.align == 0.0 && r.n_align == 0);
    /* no reference at all */
    bool none[4] = {false, false, false, false};
    CHECK(sn_loss_host(ch, rej, ref, none, 4, 2.0, &r, &err) == SN_OK);
    CHECK_CLOSE(r.loss_value, pref, 1e-14, 1e-13);
    CHECK(isnan(r.acc_align));
    CHECK(sn_loss_host(ch, rej, NULL, NULL, 0, 1.0, &r, &err) == SN_E_ARG);
    sn_err_clear(&err);
    CHECK(sn_loss_host(ch, rej, NULL, NULL, 4, -1.0, &r, &err) == SN_E_ARG);
}

/* Tensor version: same values as the host version; gradients vs central differences. */
static void test_tensor_grad(void)
{
    struct sn_err err = {0};
    enum { N = 5 };
    double ch[N] = {0.3, -1.2, 2.0, 0.7, -0.1}, rej[N] = {0.1, 0.4, -1.0, 0.7, 0.2};
    double ref[N] = {1.0, NAN, -0.5, 0.2, 0.0};
    bool has[N] = {true, false, true, true, true};
    const double alpha = 0.7;
    struct sn_tensor *tc = vec(ch, N, SN_DTYPE_F64, true), *tr = vec(rej, N, SN_DTYPE_F64, true);
    struct sn_tensor *tf = vec(ref, N, SN_DTYPE_F64, true);
    struct sn_loss_result r, h;
    CHECK(sn_loss_compute(tc, tr, tf, has, alpha, &r, &err) == SN_OK);
    CHECK(sn_loss_host(ch, rej, ref, has, N, alpha, &h, &err) == SN_OK);
    double lv = NAN;
    CHECK(r.loss && sn_aten_item_f64(r.loss, &lv, &err) == SN_OK);
    CHECK_CLOSE(lv, h.loss_value, 1e-14, 1e-13);
    CHECK_CLOSE(r.loss_value, h.loss_value, 0, 0);
    CHECK(r.n_align == 4);
    CHECK(sn_aten_backward(r.loss, NULL, false, &err) == SN_OK);
    double gc[N], gr[N], gf[N];
    grad_of(tc, gc, N);
    grad_of(tr, gr, N);
    grad_of(tf, gf, N);
    double *arrs[3] = {ch, rej, ref}, *grads[3] = {gc, gr, gf};
    const double e = 1e-6;
    for (int a = 0; a < 3; a++) {
        for (int i = 0; i < N; i++) {
            if (a == 2 && !has[i]) {
                CHECK_MSG(grads[a][i] == 0.0, "missing reference %d got gradient %g", i,
                          grads[a][i]);
                continue;
            }
            double keep = arrs[a][i], lp, lm;
            arrs[a][i] = keep + e;
            sn_loss_host(ch, rej, ref, has, N, alpha, &h, &err);
            lp = h.loss_value;
            arrs[a][i] = keep - e;
            sn_loss_host(ch, rej, ref, has, N, alpha, &h, &err);
            lm = h.loss_value;
            arrs[a][i] = keep;
            CHECK_CLOSE(grads[a][i], (lp - lm) / (2 * e), 1e-9, 1e-6);
        }
    }
    sn_loss_result_free(&r);
    sn_tensor_free(tc);
    sn_tensor_free(tr);
    sn_tensor_free(tf);
}

/* f32 rewards with a −1000 margin: the loss is 1000, finite, and so is its gradient. */
static void test_extreme_f32(void)
{
    struct sn_err err = {0};
    double ch[2] = {-500.0, 500.0}, rej[2] = {500.0, -500.0};
    struct sn_tensor *tc = vec(ch, 2, SN_DTYPE_F32, true), *tr = vec(rej, 2, SN_DTYPE_F32, true);
    struct sn_loss_result r;
    CHECK(sn_loss_compute(tc, tr, NULL, NULL, 1.0, &r, &err) == SN_OK);
    CHECK_CLOSE(r.loss_value, 500.0, 1e-9, 1e-12); /* (1000 + 0) / 2 */
    double lv = NAN;
    CHECK(r.loss && sn_aten_item_f64(r.loss, &lv, &err) == SN_OK);
    CHECK_CLOSE(lv, 500.0, 1e-3, 1e-6);
    CHECK(sn_aten_backward(r.loss, NULL, false, &err) == SN_OK);
    double g[2];
    grad_of(tc, g, 2);
    CHECK_CLOSE(g[0], -0.5, 1e-6, 0);
    CHECK_CLOSE(g[1], 0.0, 1e-6, 0);
    CHECK(r.acc_pref == 0.5 && isnan(r.acc_align) && r.n_align == 0);
    sn_loss_result_free(&r);
    /* shape mismatch is a clean error */
    double one[1] = {0};
    struct sn_tensor *t1 = vec(one, 1, SN_DTYPE_F32, false);
    CHECK(sn_loss_compute(tc, t1, NULL, NULL, 0.0, &r, &err) != SN_OK);
    CHECK(r.loss == NULL);
    sn_tensor_free(t1);
    sn_tensor_free(tc);
    sn_tensor_free(tr);
}

int main(void)
{
    test_log_sigmoid();
    test_host_values();
    test_tensor_grad();
    test_extreme_f32();
    return sn_test_done();
}
