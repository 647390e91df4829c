/* tests/test_train_overfit.c: the whole backward path (model + LoRA + head + loss + AdamW)
** must overfit 16 (chosen, rejected, reference) tuples of random token sequences to pairwise
** accuracy 1.0 within a bounded number of steps, with the loss falling. Also checks one AdamW
** step against the update written out by hand. */
#include "loss/loss.h"
#include "tests/testutil.h"
#include "train/train.h"

#include <stdint.h>

enum { NT = 16, T = 12, V = 64 };

static void test_adamw_by_hand(void)
{
    struct sn_err err = {0};
    double w0[3] = {0.5, -1.0, 2.0}, g0[3] = {0.1, -0.2, 0.0};
    struct sn_tensor *w = NULL, *g = NULL;
    int64_t s[1] = {3};
    CHECK(sn_aten_from_host(w0, SN_DTYPE_F64, s, 1, SN_DTYPE_F64, SN_CPU, &w, &err) == SN_OK);
    CHECK(sn_aten_from_host(g0, SN_DTYPE_F64, s, 1, SN_DTYPE_F64, SN_CPU, &g, &err) == SN_OK);
    CHECK(sn_aten_set_requires_grad(w, true, &err) == SN_OK);
    struct sn_param p = {"w", w};
    struct sn_adamw_params hp = sn_adamw_default_params();
    hp.weight_decay = 0.1;
    struct sn_adamw *o = NULL;
    CHECK(sn_adamw_create(&p, 1, &hp, &o, &err) == SN_OK);
    double lr = 0.01, want[3], m[3] = {0}, v[3] = {0}, cur[3];
    memcpy(cur, w0, sizeof cur);
    for (int step = 1; step <= 2; step++) {
        CHECK(sn_aten_set_grad(w, g, &err) == SN_OK);
        CHECK(sn_adamw_step(o, lr, &err) == SN_OK);
        for (int i = 0; i < 3; i++) {
            cur[i] *= 1 - lr * 0.1;
            m[i] = 0.9 * m[i] + 0.1 * g0[i];
            v[i] = 0.999 * v[i] + 0.001 * g0[i] * g0[i];
            double mh = m[i] / (1 - pow(0.9, step)), vh = v[i] / (1 - pow(0.999, step));
            cur[i] -= lr * mh / (sqrt(vh) + 1e-8);
        }
    }
    memcpy(want, cur, sizeof want);
    double got[3];
    CHECK(sn_aten_to_host(w, got, SN_DTYPE_F64, 3, &err) == SN_OK);
    for (int i = 0; i < 3; i++)
        CHECK_CLOSE(got[i], want[i], 1e-12, 1e-10);
    CHECK(sn_adamw_step_count(o) == 2);
    sn_adamw_free(o);
    sn_tensor_free(w);
    sn_tensor_free(g);
}

int main(void)
{
    test_adamw_by_hand();
    struct sn_err err = {0};
    struct sn_model_config c = sn_model_config_tiny(V);
    struct sn_model_params p = sn_model_default_params();
    p.seed = 2024;
    struct sn_model *m = NULL;
    CHECK(sn_model_create(&c, &p, &m, &err) == SN_OK);
    if (!m)
        return sn_test_done();
    struct sn_lora_config lc = sn_lora_default_config();
    lc.r = 8;
    lc.alpha = 16;
    lc.dropout = 0.0;
    lc.targets = SN_LORA_ALL_TARGETS;
    CHECK(sn_model_lora_attach(m, &lc, &err) == SN_OK);
    sn_model_set_training(m, true);
    sn_model_set_grad_checkpoint(m, true); /* the configuration a real run uses */

    /* [chosen × 16; rejected × 16; reference × 16], random lengths, right padded */
    static int32_t ids[3 * NT * T], mask[3 * NT * T];
    struct sn_rng rng;
    sn_rng_seed(&rng, 77);
    for (int s = 0; s < 3 * NT; s++) {
        int len = 4 + (int)sn_rng_below(&rng, T - 3);
        for (int t = 0; t < T; t++) {
            ids[s * T + t] = (int32_t)sn_rng_below(&rng, V);
            mask[s * T + t] = t < len;
        }
    }
    bool has_ref[NT];
    for (int i = 0; i < NT; i++)
        has_ref[i] = i % 4 != 3; /* some tuples have no reference */
    struct sn_model_batch b = {ids, mask, 3 * NT, T};

    struct sn_param *ps = NULL;
    size_t np = 0;
    CHECK(sn_model_trainable_params(m, &ps, &np, &err) == SN_OK);
    struct sn_adamw_params hp = sn_adamw_default_params();
    hp.weight_decay = 0.0;
    struct sn_adamw *o = NULL;
    CHECK(sn_adamw_create(ps, np, &hp, &o, &err) == SN_OK);
    double first = NAN, last = NAN, acc = 0;
    int step = 0;
    const int max_steps = 150;
    for (step = 0; step < max_steps && o; step++) {
        struct sn_tensor *r = NULL, *rc = NULL, *rr = NULL, *rf = NULL;
        int ok = sn_model_forward(m, &b, &r, NULL, &err) == SN_OK;
        ok = ok && sn_aten_narrow(r, 0, 0, NT, &rc, &err) == SN_OK &&
             sn_aten_narrow(r, 0, NT, NT, &rr, &err) == SN_OK &&
             sn_aten_narrow(r, 0, 2 * NT, NT, &rf, &err) == SN_OK;
        struct sn_loss_result L = {0};
        ok = ok && sn_loss_compute(rc, rr, rf, has_ref, 0.5, &L, &err) == SN_OK;
        for (size_t i = 0; ok && i < np; i++)
            sn_aten_zero_grad(ps[i].t);
        ok = ok && sn_aten_backward(L.loss, NULL, false, &err) == SN_OK;
        sn_model_release_forward_state(m);
        ok = ok && sn_adamw_step(o, 3e-3, &err) == SN_OK;
        CHECK_MSG(ok, "step %d: %s", step, err.msg);
        if (step == 0)
            first = L.loss_value;
        last = L.loss_value;
        acc = L.acc_pref;
        sn_loss_result_free(&L);
        sn_tensor_free(r);
        sn_tensor_free(rc);
        sn_tensor_free(rr);
        sn_tensor_free(rf);
        if (!ok || acc == 1.0)
            break;
    }
    printf("overfit: %d steps, loss %.4f -> %.4f, pairwise accuracy %.3f\n", step + 1, first,
           last, acc);
    CHECK_MSG(acc == 1.0, "pairwise accuracy %.3f after %d steps", acc, step);
    CHECK(last < first);
    /* the trained head and adapters are real: evaluation-mode rewards order every pair */
    sn_model_set_training(m, false);
    float rw[3 * NT];
    CHECK(sn_model_forward_host(m, &b, rw, NULL, &err) == SN_OK);
    int correct = 0;
    for (int i = 0; i < NT; i++)
        correct += rw[i] > rw[NT + i];
    CHECK_MSG(correct >= NT - 1, "eval-mode pairwise correct %d/%d", correct, NT);
    sn_adamw_free(o);
    free(ps);
    sn_model_free(m);
    return sn_test_done();
}
