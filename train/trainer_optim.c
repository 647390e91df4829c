/* train/trainer_optim.c: what the optimizer step needs beyond AdamW itself (train/optim.c): the
** learning-rate schedule, the weight-decay rule and the two parameter groups it makes (one
** AdamW each, the second without decay), and the update: clip by the global norm, then AdamW.
** Equations: train/train.h; keys: docs/train.md. */
#include "train/trainer_internal.h"

#include <math.h>
#include <string.h>

/* ---- the schedule and the decay rule -------------------------------------------------------- */

double sn_lr_at(const struct sn_lr_schedule *s, int64_t step)
{
    if (step < s->warmup_steps)
        return s->lr * (double)step / (double)(s->warmup_steps > 0 ? s->warmup_steps : 1);
    int64_t span = s->total_steps - s->warmup_steps;
    double p = (double)(step - s->warmup_steps) / (double)(span > 1 ? span : 1);
    if (p > 1.0)
        p = 1.0;
    switch (s->kind) {
    case SN_LR_LINEAR:
        return s->lr * fmax(0.0, 1.0 - p);
    case SN_LR_COSINE:
        return s->lr * (s->min_ratio + (1.0 - s->min_ratio) * 0.5 * (1.0 + cos(M_PI * p)));
    default:
        return s->lr;
    }
}

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

bool sn_train_default_decay(const char *name)
{
    /* transformers' Trainer.get_decay_parameter_names: no decay for biases and norm layers;
    ** we also leave the reward head alone unless asked (a scalar read-out). */
    if (ends_with(name, ".bias") || ends_with(name, "norm.weight") ||
        ends_with(name, "layernorm.weight") || ends_with(name, "score.weight"))
        return false;
    return true;
}

/* ---- parameter groups and the update -------------------------------------------------------- */

int sn_trainer_setup_params(struct sn_trainer *t, struct sn_err *err)
{
    int rc = SN_OK;
    sn_free(t->params);
    t->params = NULL;
    if (t->full) {
        struct sn_model_slot *s = NULL;
        size_t n = 0;
        rc = sn_model_slots(t->m, sn_model_has_head(t->m), &s, &n, err);
        if (rc)
            return rc;
        t->params = sn_calloc(n + 1, sizeof *t->params);
        if (!t->params) {
            sn_free(s);
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        }
        /* names: the HF names live in the model's name cache (freed with it) */
        sn_model_names_free(t->m);
        t->m->names = sn_calloc(n + 1, sizeof *t->m->names);
        if (!t->m->names) {
            sn_free(s);
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        }
        for (size_t i = 0; i < n && !rc; i++) {
            t->m->names[i] = sn_strdup(s[i].name);
            t->m->n_names = i + 1;
            if (!t->m->names[i])
                rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
            t->params[i].name = t->m->names[i];
            t->params[i].t = *s[i].dst;
            if (!rc && !sn_aten_requires_grad(*s[i].dst))
                rc = sn_aten_set_requires_grad(*s[i].dst, true, err);
        }
        t->n_params = n;
        sn_free(s);
    } else {
        rc = sn_model_trainable_params(t->m, &t->params, &t->n_params, err);
    }
    if (rc)
        return rc;
    sn_free(t->decay);
    t->decay = sn_calloc(t->n_params + 1, sizeof *t->decay);
    for (int g = 0; g < 2; g++) {
        sn_free(t->group[g]);
        t->group[g] = sn_calloc(t->n_params + 1, sizeof *t->group[g]);
        t->n_group[g] = 0;
    }
    if (!t->decay || !t->group[0] || !t->group[1])
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    for (size_t i = 0; i < t->n_params; i++) {
        /* PEFT names carry a "base_model.model." prefix; the rule reads the tail */
        t->decay[i] = t->p.decay_all || sn_train_default_decay(t->params[i].name);
        int g = t->decay[i] ? 0 : 1;
        t->group[g][t->n_group[g]++] = t->params[i];
    }
    for (int g = 0; g < 2; g++) {
        struct sn_adamw_params hp = t->p.adamw;
        if (g == 1)
            hp.weight_decay = 0.0;
        sn_adamw_free(t->opt[g]);
        t->opt[g] = NULL;
        rc = sn_adamw_create(t->group[g], t->n_group[g], &hp, &t->opt[g], err);
        if (rc)
            return rc;
    }
    return SN_OK;
}

int sn_trainer_update(struct sn_trainer *t, double lr, double *grad_norm, struct sn_err *err)
{
    struct sn_tensor **ts = sn_calloc(t->n_params + 1, sizeof *ts);
    if (!ts)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    for (size_t i = 0; i < t->n_params; i++)
        ts[i] = t->params[i].t;
    double norm = 0;
    int rc = sn_aten_clip_grad_norm(ts, t->n_params, t->p.max_grad_norm, &norm, err);
    sn_free(ts);
    if (grad_norm)
        *grad_norm = norm;
    if (!rc && !isfinite(norm))
        return sn_err_set(err, SN_E_BACKEND, "the gradient norm is %g", norm);
    for (int g = 0; g < 2 && !rc; g++)
        rc = sn_adamw_step(t->opt[g], lr, err);
    return rc;
}
