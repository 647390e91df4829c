/* loss/loss.c: L = L_pref + α · L_align (docs/design.md §4) and its metrics; see loss/loss.h. */
#include "loss/loss.h"

#include <math.h>
#include <string.h>

/* log σ(z) = −(max(−z, 0) + log1p(exp(−|z|))). The direct log(1 / (1 + exp(−z))) becomes −inf
** below about z = −710 in double (−88 in float); margins are unbounded. */
double sn_log_sigmoid(double z)
{
    return -(fmax(-z, 0.0) + log1p(exp(-fabs(z))));
}

void sn_loss_result_free(struct sn_loss_result *r)
{
    if (!r)
        return;
    sn_tensor_free(r->loss);
    r->loss = NULL;
}

int sn_loss_host(const double *r_ch, const double *r_rej, const double *r_ref,
                 const bool *has_ref, size_t n, double alpha, struct sn_loss_result *out,
                 struct sn_err *err)
{
    memset(out, 0, sizeof *out);
    if (n == 0)
        return sn_err_set(err, SN_E_ARG, "loss: empty batch");
    if (!(alpha >= 0.0) || !isfinite(alpha))
        return sn_err_set(err, SN_E_ARG, "loss: alpha = %g (expected >= 0)", alpha);
    double pref = 0, align = 0, acc = 0, acc_al = 0, margin = 0, sch = 0, srej = 0, sref = 0;
    int64_t n_al = 0;
    for (size_t i = 0; i < n; i++) {
        double d = r_ch[i] - r_rej[i];
        pref += -sn_log_sigmoid(d);
        acc += r_ch[i] > r_rej[i];
        margin += d;
        sch += r_ch[i];
        srej += r_rej[i];
        if (r_ref && (!has_ref || has_ref[i])) {
            n_al++;
            align += -sn_log_sigmoid(r_ch[i] - r_ref[i]);
            acc_al += r_ch[i] > r_ref[i];
            sref += r_ref[i];
        }
    }
    out->n = (int64_t)n;
    out->pref = pref / (double)n;
    out->acc_pref = acc / (double)n;
    out->margin_mean = margin / (double)n;
    out->reward_chosen_mean = sch / (double)n;
    out->reward_rejected_mean = srej / (double)n;
    out->acc_align = n_al ? acc_al / (double)n_al : NAN;
    out->reward_reference_mean = n_al ? sref / (double)n_al : NAN;
    out->n_align = alpha > 0.0 ? n_al : 0;
    out->align = (alpha > 0.0 && n_al) ? align / (double)n_al : 0.0;
    out->loss_value = out->pref + alpha * out->align;
    return SN_OK;
}

/* Host copy of a (B) reward tensor as doubles. */
static int rewards_to_host(const struct sn_tensor *r, const char *what, int64_t B, double *dst,
                           struct sn_err *err)
{
    if (sn_tensor_ndim(r) != 1 || sn_tensor_size(r, 0) != B)
        return sn_err_set(err, SN_E_ARG, "loss: %s rewards must have shape (%lld)", what,
                          (long long)B);
    return sn_aten_to_host(r, dst, SN_DTYPE_F64, (size_t)B, err);
}

int sn_loss_compute(const struct sn_tensor *r_ch, const struct sn_tensor *r_rej,
                    const struct sn_tensor *r_ref, const bool *has_ref, double alpha,
                    struct sn_loss_result *out, struct sn_err *err)
{
    memset(out, 0, sizeof *out);
    if (!r_ch || !r_rej || sn_tensor_ndim(r_ch) != 1)
        return sn_err_set(err, SN_E_ARG, "loss: chosen and rejected rewards (B) are required");
    int64_t B = sn_tensor_size(r_ch, 0);
    if (B < 1)
        return sn_err_set(err, SN_E_ARG, "loss: empty batch");
    if (alpha == 0.0)
        r_ref = NULL;
    double *h = sn_calloc((size_t)B * 3, sizeof *h);
    uint8_t *keep = sn_calloc((size_t)B, 1);
    struct sn_tensor *d1 = NULL, *ls1 = NULL, *pref = NULL, *d2 = NULL, *mask = NULL,
                     *notmask = NULL, *d2m = NULL, *ls2 = NULL, *ls2m = NULL, *s2 = NULL,
                     *loss = NULL;
    int rc = SN_OK;
    if (!h || !keep) {
        rc = sn_err_set(err, SN_E_NOMEM, "loss: out of memory");
        goto done;
    }
    rc = rewards_to_host(r_ch, "chosen", B, h, err);
    if (!rc)
        rc = rewards_to_host(r_rej, "rejected", B, h + B, err);
    if (!rc && r_ref)
        rc = rewards_to_host(r_ref, "reference", B, h + 2 * B, err);
    if (rc)
        goto done;
    /* Missing references may hold anything (even NaN): they never reach the sums. */
    rc = sn_loss_host(h, h + B, r_ref ? h + 2 * B : NULL, has_ref, (size_t)B, alpha, out, err);
    if (rc)
        goto done;
    /* L_pref = −mean log σ(R_ch − R_rej) */
    rc = sn_aten_sub(r_ch, r_rej, &d1, err);
    if (!rc)
        rc = sn_aten_logsigmoid(d1, &ls1, err);
    if (!rc)
        rc = sn_aten_mean_all(ls1, &pref, err);
    if (!rc)
        rc = sn_aten_mul_scalar(pref, -1.0, &loss, err);
    if (!rc && r_ref && out->n_align > 0) {
        /* L_align over the tuples that have a reference. The difference is zeroed at the
        ** others BEFORE log σ so a NaN placeholder cannot leak into values or gradients. */
        for (int64_t i = 0; i < B; i++)
            keep[i] = !has_ref || has_ref[i];
        int64_t shape[1] = {B};
        rc = sn_aten_from_host(keep, SN_DTYPE_BOOL, shape, 1, SN_DTYPE_BOOL,
                               sn_tensor_device(r_ch), &mask, err);
        if (!rc)
            rc = sn_aten_logical_not(mask, &notmask, err);
        if (!rc)
            rc = sn_aten_sub(r_ch, r_ref, &d2, err);
        if (!rc)
            rc = sn_aten_masked_fill(d2, notmask, 0.0, &d2m, err);
        if (!rc)
            rc = sn_aten_logsigmoid(d2m, &ls2, err);
        if (!rc)
            rc = sn_aten_masked_fill(ls2, notmask, 0.0, &ls2m, err);
        if (!rc)
            rc = sn_aten_sum_all(ls2m, &s2, err);
        if (!rc)
            rc = sn_aten_mul_scalar_(s2, -alpha / (double)out->n_align, err);
        struct sn_tensor *total = NULL;
        if (!rc)
            rc = sn_aten_add(loss, s2, &total, err);
        if (!rc) {
            sn_tensor_free(loss);
            loss = total;
        }
    }
    if (rc)
        goto done;
    out->loss = loss;
    loss = NULL;
done:
    sn_free(h);
    sn_free(keep);
    sn_tensor_free(d1);
    sn_tensor_free(ls1);
    sn_tensor_free(pref);
    sn_tensor_free(d2);
    sn_tensor_free(mask);
    sn_tensor_free(notmask);
    sn_tensor_free(d2m);
    sn_tensor_free(ls2);
    sn_tensor_free(ls2m);
    sn_tensor_free(s2);
    sn_tensor_free(loss);
    if (rc)
        return sn_err_wrap(err, "loss");
    return SN_OK;
}

int sn_loss_lm(const struct sn_tensor *logits, const int64_t *targets, int64_t n,
               struct sn_tensor **loss, double *value, struct sn_err *err)
{
    *loss = NULL;
    int64_t shape[2];
    if (!logits || sn_tensor_ndim(logits) != 2 || sn_tensor_shape(logits, shape, 2) != 2 ||
        shape[0] != n || n < 1)
        return sn_err_set(err, SN_E_ARG, "lm loss: expected logits (%lld, V) for %lld targets",
                          (long long)n, (long long)n);
    for (int64_t i = 0; i < n; i++)
        if (targets[i] < 0 || targets[i] >= shape[1])
            return sn_err_set(err, SN_E_ARG, "lm loss: target %lld = %lld outside the "
                              "vocabulary [0, %lld)", (long long)i, (long long)targets[i],
                              (long long)shape[1]);
    struct sn_tensor *x = NULL, *lp = NULL, *idx = NULL, *g = NULL, *m = NULL;
    enum sn_dtype dt = sn_tensor_dtype(logits);
    int64_t s2[2] = {n, 1};
    int rc = dt == SN_DTYPE_F64 || dt == SN_DTYPE_F32
                 ? sn_tensor_alias(logits, &x, err)
                 : sn_aten_to_dtype(logits, SN_DTYPE_F32, &x, err);
    if (!rc)
        rc = sn_aten_log_softmax(x, 1, &lp, err);
    if (!rc)
        rc = sn_aten_from_host(targets, SN_DTYPE_I64, s2, 2, SN_DTYPE_I64,
                               sn_tensor_device(logits), &idx, err);
    if (!rc)
        rc = sn_aten_gather(lp, 1, idx, &g, err); /* (n, 1): log p(target) */
    if (!rc)
        rc = sn_aten_mean_all(g, &m, err);
    if (!rc)
        rc = sn_aten_neg(m, loss, err);
    if (!rc && value)
        rc = sn_aten_item_f64(*loss, value, err);
    sn_tensor_free(x);
    sn_tensor_free(lp);
    sn_tensor_free(idx);
    sn_tensor_free(g);
    sn_tensor_free(m);
    if (rc) {
        sn_tensor_free(*loss);
        *loss = NULL;
        return sn_err_wrap(err, "lm loss");
    }
    return SN_OK;
}
