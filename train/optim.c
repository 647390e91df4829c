/* train/optim.c: AdamW with decoupled weight decay (Loshchilov & Hutter, arXiv:1711.05101), the
** update torch.optim.AdamW performs (foreach=False, amsgrad=False, maximize=False); see
** train/train.h for the equations. */
#include "train/train_internal.h"

#include <math.h>
#include <string.h>

struct sn_adamw {
    struct sn_param       *p;
    struct sn_tensor     **m, **v; /* first and second moments, like each param */
    size_t                 n;
    struct sn_adamw_params hp;
    int64_t                t;      /* steps taken */
};

void sn_adamw_free(struct sn_adamw *o)
{
    if (!o)
        return;
    for (size_t i = 0; i < o->n; i++) {
        if (o->m)
            sn_tensor_free(o->m[i]);
        if (o->v)
            sn_tensor_free(o->v[i]);
    }
    sn_free(o->m);
    sn_free(o->v);
    sn_free(o->p);
    sn_free(o);
}

int sn_adamw_create(const struct sn_param *params, size_t n, const struct sn_adamw_params *hp,
                    struct sn_adamw **out, struct sn_err *err)
{
    *out = NULL;
    if (!(hp->beta1 >= 0 && hp->beta1 < 1) || !(hp->beta2 >= 0 && hp->beta2 < 1) ||
        !(hp->eps > 0) || !(hp->weight_decay >= 0))
        return sn_err_set(err, SN_E_ARG, "adamw: betas must be in [0, 1), eps > 0, "
                          "weight_decay >= 0");
    struct sn_adamw *o = sn_calloc(1, sizeof *o);
    if (!o)
        return sn_err_set(err, SN_E_NOMEM, "adamw: out of memory");
    o->hp = *hp;
    o->p = sn_calloc(n + 1, sizeof *o->p);
    o->m = sn_calloc(n + 1, sizeof *o->m);
    o->v = sn_calloc(n + 1, sizeof *o->v);
    if (!o->p || !o->m || !o->v) {
        sn_adamw_free(o);
        return sn_err_set(err, SN_E_NOMEM, "adamw: out of memory");
    }
    o->n = n;
    int rc = SN_OK;
    for (size_t i = 0; !rc && i < n; i++) {
        o->p[i] = params[i];
        int64_t shape[8];
        int nd = sn_tensor_shape(params[i].t, shape, 8);
        enum sn_dtype dt = sn_tensor_dtype(params[i].t);
        struct sn_device dev = sn_tensor_device(params[i].t);
        rc = sn_aten_zeros(shape, nd, dt, dev, &o->m[i], err);
        if (!rc)
            rc = sn_aten_zeros(shape, nd, dt, dev, &o->v[i], err);
    }
    if (rc) {
        sn_adamw_free(o);
        return sn_err_wrap(err, "adamw");
    }
    *out = o;
    return SN_OK;
}

int sn_adamw_step(struct sn_adamw *o, double lr, struct sn_err *err)
{
    o->t++;
    const struct sn_adamw_params *h = &o->hp;
    double bc1 = 1.0 - pow(h->beta1, (double)o->t), bc2 = 1.0 - pow(h->beta2, (double)o->t);
    double step = lr / bc1, inv_sqrt_bc2 = 1.0 / sqrt(bc2);
    bool g = sn_aten_no_grad_enter();
    int rc = SN_OK;
    for (size_t i = 0; !rc && i < o->n; i++) {
        struct sn_tensor *gr = NULL, *den = NULL;
        rc = sn_aten_grad(o->p[i].t, &gr, err);
        if (rc || !gr)
            continue; /* no gradient: skipped, as torch does */
        struct sn_tensor *p = o->p[i].t;
        if (h->weight_decay > 0.0)
            rc = sn_aten_mul_scalar_(p, 1.0 - lr * h->weight_decay, err);
        if (!rc)
            rc = sn_aten_lerp_(o->m[i], gr, 1.0 - h->beta1, err);
        if (!rc)
            rc = sn_aten_mul_scalar_(o->v[i], h->beta2, err);
        if (!rc)
            rc = sn_aten_addcmul_(o->v[i], gr, gr, 1.0 - h->beta2, err);
        if (!rc)
            rc = sn_aten_clone(o->v[i], &den, err);
        if (!rc)
            rc = sn_aten_sqrt_(den, err);
        if (!rc)
            rc = sn_aten_mul_scalar_(den, inv_sqrt_bc2, err);
        if (!rc)
            rc = sn_aten_add_scalar_(den, h->eps, err);
        if (!rc)
            rc = sn_aten_addcdiv_(p, o->m[i], den, -step, err);
        if (rc)
            sn_err_wrap(err, "adamw: %s", o->p[i].name);
        sn_tensor_free(den);
        sn_tensor_free(gr);
    }
    sn_aten_no_grad_exit(g);
    return rc;
}

int64_t sn_adamw_step_count(const struct sn_adamw *o) { return o->t; }

int sn_adamw_state(struct sn_adamw *o, size_t i, struct sn_tensor **m, struct sn_tensor **v)
{
    if (i >= o->n)
        return SN_E_ARG;
    *m = o->m[i];
    *v = o->v[i];
    return SN_OK;
}

void sn_adamw_set_step_count(struct sn_adamw *o, int64_t t) { o->t = t; }
