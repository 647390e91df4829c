/* lora/lora.c: LoRA linear layers, merge and unmerge. Math and conventions: lora/lora.h. */
#include "lora/lora.h"

#include <math.h>
#include <string.h>

static const char *const target_names[] = {
    "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj",
};
_Static_assert(sizeof target_names / sizeof target_names[0] == SN_LORA_TARGET_COUNT,
               "target names out of sync");

const char *sn_lora_target_name(enum sn_lora_target t)
{
    return (unsigned)t < SN_LORA_TARGET_COUNT ? target_names[t] : NULL;
}

bool sn_lora_target_parse(const char *name, enum sn_lora_target *out)
{
    for (int i = 0; i < SN_LORA_TARGET_COUNT; i++) {
        if (!strcmp(name, target_names[i])) {
            *out = (enum sn_lora_target)i;
            return true;
        }
    }
    return false;
}

struct sn_lora_config sn_lora_default_config(void)
{
    struct sn_lora_config c = {
        .r = 8,
        .alpha = 8.0,
        .dropout = 0.0,
        .targets = (1u << SN_LORA_Q_PROJ) | (1u << SN_LORA_V_PROJ),
    };
    return c;
}

double sn_lora_scale(const struct sn_lora_config *c)
{
    return c->use_rslora ? c->alpha / sqrt((double)c->r) : c->alpha / c->r;
}

int sn_lora_config_check(const struct sn_lora_config *c, struct sn_err *err)
{
    if (c->r < 1 || c->r > 65536)
        return sn_err_set(err, SN_E_ARG, "lora: r = %d (expected 1..65536)", c->r);
    if (!(c->alpha > 0.0) || !isfinite(c->alpha))
        return sn_err_set(err, SN_E_ARG, "lora: lora_alpha = %g (expected > 0)", c->alpha);
    if (!(c->dropout >= 0.0 && c->dropout < 1.0))
        return sn_err_set(err, SN_E_ARG, "lora: lora_dropout = %g (expected in [0, 1))",
                          c->dropout);
    if (c->targets == 0 || (c->targets & ~SN_LORA_ALL_TARGETS))
        return sn_err_set(err, SN_E_ARG, "lora: target_modules must name at least one of "
                          "q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj");
    return SN_OK;
}

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
