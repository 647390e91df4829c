/* tests/test_train_gradcheck.c: gradients of the full training loss (model forward on chosen,
** rejected and reference sequences + loss/) with respect to the reward head and LoRA A and B,
** against central finite differences, in float64 on a tiny model. Then per-layer gradient
** checkpointing must give the same gradients as the plain backward. */
#include "loss/loss.h"
#include "tests/testutil.h"
#include "tests/testutil_aten.h"
#include "train/train.h"

#include <stdint.h>

enum { NT = 3, T = 6 }; /* tuples, tokens per sequence */

static int32_t ids[3 * NT * T], mask[3 * NT * T];
static const bool has_ref[NT] = {true, false, true};

/* Loss of the batch [chosen rows; rejected rows; reference rows]. *loss_t (NULL ok) receives
** the differentiable scalar. */
static double batch_loss(struct sn_model *m, struct sn_tensor **loss_t)
{
    struct sn_err err = {0};
    struct sn_model_batch b = {ids, mask, 3 * NT, T};
    struct sn_tensor *r = NULL, *rc = NULL, *rr = NULL, *rf = NULL;
    double v = NAN;
    CHECK_MSG(sn_model_forward(m, &b, &r, NULL, &err) == SN_OK, "%s", err.msg);
    if (!r)
        return v;
    CHECK(sn_aten_narrow(r, 0, 0, NT, &rc, &err) == SN_OK);
    CHECK(sn_aten_narrow(r, 0, NT, NT, &rr, &err) == SN_OK);
    CHECK(sn_aten_narrow(r, 0, 2 * NT, NT, &rf, &err) == SN_OK);
    struct sn_loss_result L;
    CHECK_MSG(sn_loss_compute(rc, rr, rf, has_ref, 0.5, &L, &err) == SN_OK, "%s", err.msg);
    v = L.loss_value;
    if (loss_t) {
        *loss_t = L.loss;
        L.loss = NULL;
    }
    sn_loss_result_free(&L);
    sn_tensor_free(r);
    sn_tensor_free(rc);
    sn_tensor_free(rr);
    sn_tensor_free(rf);
    return v;
}

/* Host copies of every trainable gradient, concatenated. */
static double *all_grads(struct sn_param *ps, size_t np, size_t *n_out)
{
    struct sn_err err = {0};
    size_t n = 0;
    for (size_t i = 0; i < np; i++)
        n += (size_t)sn_tensor_numel(ps[i].t);
    double *g = calloc(n, sizeof *g);
    size_t k = 0;
    for (size_t i = 0; i < np; i++) {
        struct sn_tensor *gt = NULL;
        size_t ni = (size_t)sn_tensor_numel(ps[i].t);
        CHECK(sn_aten_grad(ps[i].t, &gt, &err) == SN_OK);
        CHECK_MSG(gt != NULL, "%s has no gradient", ps[i].name);
        if (gt)
            CHECK(sn_aten_to_host(gt, g + k, SN_DTYPE_F64, ni, &err) == SN_OK);
        sn_tensor_free(gt);
        k += ni;
    }
    *n_out = n;
    return g;
}

int main(void)
{
    struct sn_err err = {0};
    struct sn_model_config c = sn_model_config_tiny(40);
    c.hidden_size = 16;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.intermediate_size = 24;
    struct sn_model_params p = sn_model_default_params();
    p.dtype = SN_DTYPE_F64;
    p.seed = 3;
    p.init_std = 0.3;
    p.init_noise = 0.1;
    struct sn_model *m = NULL;
    CHECK(sn_model_create(&c, &p, &m, &err) == SN_OK);
    if (!m)
        return sn_test_done();
    CHECK(sn_model_init_head(m, 0.5, 17, &err) == SN_OK);
    struct sn_param *ps = NULL;
    size_t np = 0;
    CHECK(sn_test_lora_attach_all(m, 2, 3, &ps, &np, &err) == SN_OK);
    /* B = 0 would make ∂L/∂A vanish: give B random values so both factors are exercised */
    CHECK(sn_test_randomize_lora_b(ps, np, 0.3, 5) == SN_OK);
    /* sequences of different lengths, right padded */
    for (int s = 0; s < 3 * NT; s++) {
        int len = 2 + (s * 5) % (T - 1);
        for (int t = 0; t < T; t++) {
            ids[s * T + t] = (int32_t)((s * 13 + t * 7 + 1) % c.vocab_size);
            mask[s * T + t] = t < len;
        }
    }

    struct sn_tensor *loss = NULL;
    double l0 = batch_loss(m, &loss);
    CHECK(isfinite(l0));
    CHECK(loss && sn_aten_backward(loss, NULL, false, &err) == SN_OK);
    sn_tensor_free(loss);
    size_t n_all = 0;
    double *g_plain = all_grads(ps, np, &n_all);

    /* finite differences on a spread of entries of every trainable tensor */
    const double e = 1e-6;
    int n_checked = 0, n_nonzero = 0;
    size_t off = 0;
    for (size_t i = 0; i < np; i++) {
        double *d = sn_tensor_data_ptr(ps[i].t);
        size_t ni = (size_t)sn_tensor_numel(ps[i].t);
        CHECK(d != NULL);
        if (!d)
            break;
        size_t step = ni > 3 ? ni / 3 + 1 : 1;
        for (size_t k = i % 2; k < ni; k += step) {
            double keep = d[k];
            d[k] = keep + e;
            double lp = batch_loss(m, NULL);
            d[k] = keep - e;
            double lm = batch_loss(m, NULL);
            d[k] = keep;
            double fd = (lp - lm) / (2 * e), an = g_plain[off + k];
            /* central differences: truncation O(e²) ≈ 1e-12, rounding ≈ 1e-16/e = 1e-10 */
            CHECK_MSG(fabs(fd - an) <= 1e-7 + 1e-5 * fabs(fd), "%s[%zu]: autograd %.10g, "
                      "finite difference %.10g", ps[i].name, k, an, fd);
            n_checked++;
            n_nonzero += fabs(an) > 1e-6;
        }
        off += ni;
    }
    CHECK(n_checked >= (int)np);
    CHECK_MSG(n_nonzero >= n_checked * 3 / 4, "only %d of %d gradients are non-zero", n_nonzero,
              n_checked);

    /* gradient checkpointing: same gradients */
    for (size_t i = 0; i < np; i++)
        sn_aten_zero_grad(ps[i].t);
    sn_model_set_grad_checkpoint(m, true);
    double l1 = batch_loss(m, &loss);
    CHECK(l1 == l0);
    CHECK(loss && sn_aten_backward(loss, NULL, false, &err) == SN_OK);
    sn_tensor_free(loss);
    sn_model_release_forward_state(m);
    size_t n_all2 = 0;
    double *g_ck = all_grads(ps, np, &n_all2);
    CHECK(n_all2 == n_all);
    double worst = 0;
    for (size_t i = 0; i < n_all && i < n_all2; i++)
        worst = fmax(worst, fabs(g_ck[i] - g_plain[i]));
    CHECK_MSG(worst <= 1e-12, "checkpointed gradients differ by %g", worst);
    free(g_ck);
    free(g_plain);
    free(ps);
    sn_model_free(m);
    return sn_test_done();
}
