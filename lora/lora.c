/* lora/lora.c: LoRA linear layers, merge and unmerge. Math and conventions: lora/lora.h. */
#include "lora/lora.h"

#include <math.h>
#include <string.h>

void sn_lora_linear_free(struct sn_lora_linear *l)
{
    if (!l)
        return;
    sn_tensor_free(l->A);
    sn_tensor_free(l->B);
    sn_tensor_free(l->w_saved);
    memset(l, 0, sizeof *l);
}

int sn_lora_linear_init(struct sn_lora_linear *l, int64_t in, int64_t out,
                        const struct sn_lora_config *c, enum sn_dtype dt, struct sn_device dev,
                        struct sn_aten_gen *gen, struct sn_err *err)
{
    memset(l, 0, sizeof *l);
    int rc = sn_lora_config_check(c, err);
    if (rc)
        return rc;
    int64_t sa[2] = {c->r, in}, sb[2] = {out, c->r};
    /* Kaiming-uniform with a = sqrt(5) (nn.Linear, PEFT): bound = sqrt(6 / ((1 + 5) in)) */
    double bound = 1.0 / sqrt((double)in);
    rc = sn_aten_uniform(sa, 2, -bound, bound, dt, dev, gen, &l->A, err);
    if (!rc)
        rc = sn_aten_zeros(sb, 2, dt, dev, &l->B, err);
    if (!rc)
        rc = sn_aten_set_requires_grad(l->A, true, err);
    if (!rc)
        rc = sn_aten_set_requires_grad(l->B, true, err);
    if (rc) {
        sn_lora_linear_free(l);
        return sn_err_wrap(err, "lora init (%lld -> %lld, r %d)", (long long)in,
                           (long long)out, c->r);
    }
    l->scale = sn_lora_scale(c);
    l->dropout = c->dropout;
    return SN_OK;
}

/* out = y + scale · (drop(x) Aᵀ) Bᵀ (Hu et al. 2021, eq. 3), the scale and the sum folded
** into the GEMM; a new handle to y when there is no live adapter. Takes y over. */
static int add_adapter_term(const struct sn_lora_linear *l, struct sn_tensor *y,
                            const struct sn_tensor *x, bool training, struct sn_aten_gen *gen,
                            struct sn_tensor **out, struct sn_err *err)
{
    if (!l || l->merged) {
        *out = y;
        return SN_OK;
    }
    struct sn_tensor *xd = NULL, *xa = NULL;
    int rc = SN_OK;
    if (training && l->dropout > 0.0)
        rc = sn_aten_dropout(x, l->dropout, true, gen, &xd, err);
    if (!rc)
        rc = sn_aten_linear(xd ? xd : x, l->A, NULL, &xa, err);
    if (!rc)
        rc = sn_aten_add_linear(y, xa, l->B, l->scale, out, err);
    sn_tensor_free(y);
    sn_tensor_free(xd);
    sn_tensor_free(xa);
    return rc;
}

int sn_lora_linear_forward(const struct sn_lora_linear *l, const struct sn_tensor *x,
                           const struct sn_tensor *W, const struct sn_tensor *bias,
                           bool training, struct sn_aten_gen *gen, struct sn_tensor **out,
                           struct sn_err *err)
{
    *out = NULL;
    struct sn_tensor *y = NULL;
    int rc = sn_aten_linear(x, W, bias, &y, err);
    return rc ? rc : add_adapter_term(l, y, x, training, gen, out, err);
}

int sn_lora_linear_forward_add(const struct sn_lora_linear *l, const struct sn_tensor *residual,
                               const struct sn_tensor *x, const struct sn_tensor *W,
                               bool training, struct sn_aten_gen *gen, struct sn_tensor **out,
                               struct sn_err *err)
{
    *out = NULL;
    struct sn_tensor *y = NULL;
    int rc = sn_aten_add_linear(residual, x, W, 1.0, &y, err);
    return rc ? rc : add_adapter_term(l, y, x, training, gen, out, err);
}

/* B_blk (Σ out_i, Σ r_j over live adapters j): projection i's rows hold B_i·(scale_i / s0) in
** the columns of its own adapter and zeros elsewhere, so (x Aᵀ_cat) B_blkᵀ gives each
** projection exactly its own (x A_iᵀ) B_iᵀ: the zero blocks add exact zeros. */
static int block_b(const struct sn_lora_linear *const *l, const bool *live, const int64_t *outs,
                   size_t n, int64_t r_total, double s0, struct sn_tensor **out,
                   struct sn_err *err)
{
    struct sn_tensor *rows[SN_LORA_TARGET_COUNT] = {0}, *parts[3] = {0};
    int rc = SN_OK;
    int64_t r_before = 0;
    const struct sn_tensor *like = NULL;
    for (size_t i = 0; i < n; i++)
        if (live[i])
            like = l[i]->B;
    enum sn_dtype dt = sn_tensor_dtype(like);
    struct sn_device dev = sn_tensor_device(like);
    for (size_t i = 0; i < n && !rc; i++) {
        if (!live[i]) {
            int64_t sz[2] = {outs[i], r_total};
            rc = sn_aten_zeros(sz, 2, dt, dev, &rows[i], err);
            continue;
        }
        int64_t r = sn_tensor_size(l[i]->A, 0), r_after = r_total - r_before - r;
        size_t np = 0;
        if (r_before > 0) {
            int64_t sz[2] = {outs[i], r_before};
            rc = sn_aten_zeros(sz, 2, dt, dev, &parts[np++], err);
        }
        if (!rc && l[i]->scale != s0)
            rc = sn_aten_mul_scalar(l[i]->B, l[i]->scale / s0, &parts[np++], err);
        else if (!rc)
            rc = sn_tensor_alias(l[i]->B, &parts[np++], err);
        if (!rc && r_after > 0) {
            int64_t sz[2] = {outs[i], r_after};
            rc = sn_aten_zeros(sz, 2, dt, dev, &parts[np++], err);
        }
        if (!rc)
            rc = sn_aten_cat(parts, np, 1, &rows[i], err);
        for (size_t j = 0; j < 3; j++) {
            sn_tensor_free(parts[j]);
            parts[j] = NULL;
        }
        r_before += r;
    }
    if (!rc)
        rc = sn_aten_cat(rows, n, 0, out, err);
    for (size_t i = 0; i < n; i++)
        sn_tensor_free(rows[i]);
    return rc;
}

/* x A_jᵀ of every live adapter side by side (..., Σ r_j): one GEMM over the concatenated A's,
** or, with dropout in training, one product per adapter on its own dropout of x (PEFT draws a
** mask per module), in member order as separate sn_lora_linear_forward calls draw them. */
static int adapters_input(const struct sn_lora_linear *const *l, const bool *live, size_t n,
                          const struct sn_tensor *x, bool training, struct sn_aten_gen *gen,
                          struct sn_tensor **out, struct sn_err *err)
{
    struct sn_tensor *parts[SN_LORA_TARGET_COUNT] = {0}, *acat = NULL;
    bool dropout = false;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (live[i])
            dropout |= training && l[i]->dropout > 0.0;
    int rc = SN_OK;
    for (size_t i = 0; i < n && !rc; i++) {
        if (!live[i])
            continue;
        if (!dropout) {
            rc = sn_tensor_alias(l[i]->A, &parts[k++], err);
            continue;
        }
        struct sn_tensor *xd = NULL;
        if (l[i]->dropout > 0.0)
            rc = sn_aten_dropout(x, l[i]->dropout, true, gen, &xd, err);
        if (!rc)
            rc = sn_aten_linear(xd ? xd : x, l[i]->A, NULL, &parts[k++], err);
        sn_tensor_free(xd);
    }
    if (!rc && !dropout) {
        rc = sn_aten_cat(parts, k, 0, &acat, err);
        if (!rc)
            rc = sn_aten_linear(x, acat, NULL, out, err);
    } else if (!rc) {
        rc = sn_aten_cat(parts, k, -1, out, err);
    }
    sn_tensor_free(acat);
    for (size_t i = 0; i < k; i++)
        sn_tensor_free(parts[i]);
    return rc;
}

int sn_lora_group_forward(const struct sn_lora_linear *const *l,
                          const struct sn_tensor *const *W, const struct sn_tensor *const *bias,
                          size_t n, const struct sn_tensor *x, bool training,
                          struct sn_aten_gen *gen, struct sn_tensor **out, struct sn_err *err)
{
    *out = NULL;
    if (n < 1 || n > SN_LORA_TARGET_COUNT)
        return sn_err_set(err, SN_E_ARG, "lora group: %zu projections (expected 1..%d)", n,
                          SN_LORA_TARGET_COUNT);
    bool has_bias = bias && bias[0], live[SN_LORA_TARGET_COUNT] = {0};
    int64_t outs[SN_LORA_TARGET_COUNT], r_total = 0;
    double s0 = 0.0;
    for (size_t i = 0; i < n; i++) {
        if ((bias && bias[i]) != has_bias)
            return sn_err_set(err, SN_E_ARG, "lora group: projection %zu %s a bias and "
                              "projection 0 %s", i, has_bias ? "lacks" : "has",
                              has_bias ? "has" : "lacks");
        outs[i] = sn_tensor_size(W[i], 0);
        live[i] = l && l[i] && !l[i]->merged;
        if (live[i]) {
            if (r_total == 0)
                s0 = l[i]->scale;
            r_total += sn_tensor_size(l[i]->A, 0);
        }
    }
    struct sn_tensor *wcat = NULL, *bcat = NULL, *y = NULL, *xa = NULL, *bblk = NULL;
    /* the casts only drop const: cat reads its inputs; a group of one needs no copy */
    int rc = n == 1 ? sn_tensor_alias(W[0], &wcat, err)
                    : sn_aten_cat((struct sn_tensor *const *)W, n, 0, &wcat, err);
    if (!rc && has_bias)
        rc = n == 1 ? sn_tensor_alias(bias[0], &bcat, err)
                    : sn_aten_cat((struct sn_tensor *const *)bias, n, 0, &bcat, err);
    if (!rc)
        rc = sn_aten_linear(x, wcat, bcat, &y, err);
    if (!rc && r_total > 0) {
        rc = adapters_input(l, live, n, x, training, gen, &xa, err);
        if (!rc)
            rc = block_b(l, live, outs, n, r_total, s0, &bblk, err);
        if (!rc)
            rc = sn_aten_add_linear(y, xa, bblk, s0, out, err);
    } else if (!rc) {
        *out = y;
        y = NULL;
    }
    sn_tensor_free(wcat);
    sn_tensor_free(bcat);
    sn_tensor_free(y);
    sn_tensor_free(xa);
    sn_tensor_free(bblk);
    return rc ? sn_err_wrap(err, "lora group of %zu projections", n) : SN_OK;
}

int sn_lora_delta(const struct sn_lora_linear *l, struct sn_tensor **out, struct sn_err *err)
{
    *out = NULL;
    struct sn_tensor *d = NULL;
    bool g = sn_aten_no_grad_enter();
    int rc = sn_aten_matmul(l->B, l->A, &d, err);
    if (!rc)
        rc = sn_aten_mul_scalar_(d, l->scale, err);
    sn_aten_no_grad_exit(g);
    if (rc) {
        sn_tensor_free(d);
        return rc;
    }
    *out = d;
    return SN_OK;
}

int sn_lora_merge(struct sn_lora_linear *l, struct sn_tensor *W, struct sn_err *err)
{
    if (l->merged)
        return sn_err_set(err, SN_E_ARG, "lora merge: adapter already merged");
    struct sn_tensor *d = NULL, *dc = NULL;
    int rc = sn_lora_delta(l, &d, err);
    bool g = sn_aten_no_grad_enter();
    if (!rc)
        rc = sn_aten_clone(W, &l->w_saved, err);
    /* ΔW in W's dtype (a bf16 base with f32 adapters is merged in bf16, as PEFT does) */
    if (!rc)
        rc = sn_aten_to_dtype(d, sn_tensor_dtype(W), &dc, err);
    if (!rc)
        rc = sn_aten_add_(W, dc, 1.0, err);
    sn_aten_no_grad_exit(g);
    sn_tensor_free(d);
    sn_tensor_free(dc);
    if (rc) {
        sn_tensor_free(l->w_saved);
        l->w_saved = NULL;
        return sn_err_wrap(err, "lora merge");
    }
    l->merged = true;
    return SN_OK;
}

int sn_lora_unmerge(struct sn_lora_linear *l, struct sn_tensor *W, struct sn_err *err)
{
    if (!l->merged || !l->w_saved)
        return sn_err_set(err, SN_E_ARG, "lora unmerge: adapter is not merged");
    bool g = sn_aten_no_grad_enter();
    int rc = sn_aten_copy_(W, l->w_saved, err);
    sn_aten_no_grad_exit(g);
    if (rc)
        return sn_err_wrap(err, "lora unmerge");
    sn_tensor_free(l->w_saved);
    l->w_saved = NULL;
    l->merged = false;
    return SN_OK;
}
