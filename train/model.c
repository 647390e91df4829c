/* train/model.c: the Qwen2 reward model over aten/ ops: random init, forward (with optional
** per-layer gradient checkpointing), HF-directory load/save, LoRA attach/merge, trainable
** parameters. Architecture and conventions: train/train.h; file layouts: docs/formats.md. */
#include "train/train.h"
#include "train/train_internal.h"

#include "hf/hf.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- small helpers ------------------------------------------------------------------------ */

/* Temporaries of one computation, freed together. */
struct scope {
    struct sn_tensor *t[64];
    int               n;
};

static void scope_keep(struct scope *s, struct sn_tensor *t)
{
    if (s->n < (int)(sizeof s->t / sizeof s->t[0]))
        s->t[s->n++] = t;
}

static void scope_free(struct scope *s)
{
    for (int i = 0; i < s->n; i++)
        sn_tensor_free(s->t[i]);
    s->n = 0;
}

/* rc = call (which fills var); on success var is kept in the scope. */
#define STEP(call, var)                                                                      \
    do {                                                                                     \
        rc = (call);                                                                         \
        if (rc)                                                                              \
            goto fail;                                                                       \
        scope_keep(&sc, (var));                                                              \
    } while (0)

/* STEP, timed into m->prof->seconds[cat] when profiling is on (sn_model_set_profile). */
#define STEPC(cat, call, var)                                                                \
    do {                                                                                     \
        double t0_ = m->prof ? sn_now() : 0.0;                                               \
        rc = (call);                                                                         \
        if (m->prof)                                                                         \
            m->prof->seconds[cat] += sn_now() - t0_;                                         \
        if (rc)                                                                              \
            goto fail;                                                                       \
        scope_keep(&sc, (var));                                                              \
    } while (0)

static const char *const proj_path[SN_LORA_TARGET_COUNT] = {
    "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
    "mlp.gate_proj",    "mlp.up_proj",      "mlp.down_proj",
};

const char *sn_model_proj_path(enum sn_lora_target t)
{
    return (unsigned)t < SN_LORA_TARGET_COUNT ? proj_path[t] : "?";
}

void sn_model_proj_shape(const struct sn_model_config *c, enum sn_lora_target t, int64_t *out_f,
                         int64_t *in_f)
{
    int64_t D = c->hidden_size, Dh = sn_model_config_head_dim(c);
    int64_t q = c->num_attention_heads * Dh, kv = c->num_key_value_heads * Dh;
    int64_t I = c->intermediate_size;
    switch (t) {
    case SN_LORA_Q_PROJ: *out_f = q, *in_f = D; break;
    case SN_LORA_K_PROJ:
    case SN_LORA_V_PROJ: *out_f = kv, *in_f = D; break;
    case SN_LORA_O_PROJ: *out_f = D, *in_f = q; break;
    case SN_LORA_GATE_PROJ:
    case SN_LORA_UP_PROJ: *out_f = I, *in_f = D; break;
    default: *out_f = D, *in_f = I; break;
    }
}

struct sn_model_params sn_model_default_params(void)
{
    struct sn_model_params p = {
        .dtype = SN_DTYPE_F32,
        .device = {SN_DEVICE_CPU, 0},
        .grad_checkpoint = false,
        .seed = 0,
        .init_std = 0.02,
        .init_noise = 0.0,
        .autocast = SN_DTYPE_F32,
    };
    return p;
}

const struct sn_model_config *sn_model_get_config(const struct sn_model *m) { return &m->cfg; }
const struct sn_model_params *sn_model_get_params(const struct sn_model *m) { return &m->p; }
bool sn_model_has_head(const struct sn_model *m) { return m->head != NULL; }
void sn_model_set_training(struct sn_model *m, bool on) { m->training = on; }
void sn_model_set_grad_checkpoint(struct sn_model *m, bool on) { m->p.grad_checkpoint = on; }
void sn_model_set_profile(struct sn_model *m, struct sn_model_profile *prof) { m->prof = prof; }
bool sn_model_has_lora(const struct sn_model *m) { return m->has_lora; }

const struct sn_lora_config *sn_model_lora_config(const struct sn_model *m)
{
    return m->has_lora ? &m->lora_cfg : NULL;
}

struct sn_lora_linear *sn_model_lora_layer(struct sn_model *m, int64_t layer,
                                           enum sn_lora_target t)
{
    if (layer < 0 || layer >= m->cfg.num_hidden_layers || (unsigned)t >= SN_LORA_TARGET_COUNT)
        return NULL;
    return m->layers[layer].lora[t];
}

struct sn_tensor *sn_model_base_weight(struct sn_model *m, int64_t layer, enum sn_lora_target t)
{
    if (layer < 0 || layer >= m->cfg.num_hidden_layers || (unsigned)t >= SN_LORA_TARGET_COUNT)
        return NULL;
    return m->layers[layer].w[t];
}

static void free_lora(struct sn_model *m)
{
    for (int64_t i = 0; m->layers && i < m->cfg.num_hidden_layers; i++) {
        for (int t = 0; t < SN_LORA_TARGET_COUNT; t++) {
            struct sn_lora_linear *l = m->layers[i].lora[t];
            if (l && l->merged) /* restore the base before the saved copy goes away */
                (void)sn_lora_unmerge(l, m->layers[i].w[t], NULL);
            sn_lora_linear_free(l);
            sn_free(l);
            m->layers[i].lora[t] = NULL;
        }
    }
    m->has_lora = false;
    sn_model_names_free(m);
}

void sn_model_release_forward_state(struct sn_model *m)
{
    while (m->fwd) {
        struct sn_fwd_state *f = m->fwd;
        m->fwd = f->next;
        sn_tensor_free(f->cos);
        sn_tensor_free(f->sin);
        sn_tensor_free(f->keep);
        sn_tensor_free(f->spans);
        sn_tensor_free(f->ro);
        sn_tensor_free(f->ro_win);
        sn_tensor_free(f->ro_keep);
        sn_free(f->ctx);
        sn_free(f);
    }
}

void sn_model_lora_detach(struct sn_model *m)
{
    free_lora(m);
}

void sn_model_free(struct sn_model *m)
{
    if (!m)
        return;
    free_lora(m);
    sn_model_release_forward_state(m);
    sn_tensor_free(m->embed);
    sn_tensor_free(m->norm);
    sn_tensor_free(m->head);
    sn_tensor_free(m->lm_head);
    for (int64_t i = 0; m->layers && i < m->cfg.num_hidden_layers; i++) {
        struct sn_model_layer *L = &m->layers[i];
        sn_tensor_free(L->ln1);
        sn_tensor_free(L->ln2);
        sn_tensor_free(L->bq);
        sn_tensor_free(L->bk);
        sn_tensor_free(L->bv);
        for (int t = 0; t < SN_LORA_TARGET_COUNT; t++)
            sn_tensor_free(L->w[t]);
    }
    sn_free(m->layers);
    sn_aten_gen_free(m->gen);
    sn_free(m);
}

/* ---- the table of named weights (load, save and init walk the same list) ------------------ */

int sn_model_slots(struct sn_model *m, bool with_head, struct sn_model_slot **out, size_t *n,
                   struct sn_err *err)
{
    const struct sn_model_config *c = &m->cfg;
    int64_t D = c->hidden_size, Dh = sn_model_config_head_dim(c);
    size_t cap = 4 + (size_t)c->num_hidden_layers * 12;
    struct sn_model_slot *s = sn_calloc(cap, sizeof *s);
    if (!s)
        return sn_err_set(err, SN_E_NOMEM, "model: out of memory");
    size_t k = 0;
#define SLOT(kind_, ptr_, nd_, d0_, d1_, ...)                                                 \
    do {                                                                                     \
        snprintf(s[k].name, sizeof s[k].name, __VA_ARGS__);                                  \
        s[k].kind = (kind_);                                                                 \
        s[k].dst = (ptr_);                                                                   \
        s[k].ndim = (nd_);                                                                   \
        s[k].shape[0] = (d0_);                                                               \
        s[k].shape[1] = (d1_);                                                               \
        k++;                                                                                 \
    } while (0)
    SLOT(SN_SLOT_MATRIX, &m->embed, 2, c->vocab_size, D, "model.embed_tokens.weight");
    for (int64_t i = 0; i < c->num_hidden_layers; i++) {
        struct sn_model_layer *L = &m->layers[i];
        SLOT(SN_SLOT_NORM, &L->ln1, 1, D, 0, "model.layers.%" PRId64 ".input_layernorm.weight",
             i);
        for (int t = 0; t < SN_LORA_TARGET_COUNT; t++) {
            int64_t of, inf;
            sn_model_proj_shape(c, (enum sn_lora_target)t, &of, &inf);
            SLOT(SN_SLOT_MATRIX, &L->w[t], 2, of, inf, "model.layers.%" PRId64 ".%s.weight", i,
                 proj_path[t]);
            if (t <= SN_LORA_V_PROJ) {
                struct sn_tensor **b = t == SN_LORA_Q_PROJ ? &L->bq
                                       : t == SN_LORA_K_PROJ ? &L->bk : &L->bv;
                SLOT(SN_SLOT_BIAS, b, 1, of, 0, "model.layers.%" PRId64 ".%s.bias", i,
                     proj_path[t]);
            }
        }
        SLOT(SN_SLOT_NORM, &L->ln2, 1, D, 0,
             "model.layers.%" PRId64 ".post_attention_layernorm.weight", i);
    }
    SLOT(SN_SLOT_NORM, &m->norm, 1, D, 0, "model.norm.weight");
    if (m->lm_head) /* kept for the LM objective only (keep_lm_head) */
        SLOT(SN_SLOT_MATRIX, &m->lm_head, 2, c->vocab_size, D, "lm_head.weight");
    if (with_head)
        SLOT(SN_SLOT_HEAD, &m->head, 2, 1, D, "score.weight");
#undef SLOT
    (void)Dh;
    *out = s;
    *n = k;
    return SN_OK;
}

int sn_model_alloc(const struct sn_model_config *c, const struct sn_model_params *p,
                       struct sn_model **out, struct sn_err *err)
{
    *out = NULL;
    int rc = sn_model_config_check(c, "config", err);
    if (rc)
        return rc;
    if (p->dtype != SN_DTYPE_F32 && p->dtype != SN_DTYPE_F64 && p->dtype != SN_DTYPE_BF16 &&
        p->dtype != SN_DTYPE_F16)
        return sn_err_set(err, SN_E_ARG, "model: compute dtype %s is not a float type",
                          sn_dtype_name(p->dtype));
    struct sn_model *m = sn_calloc(1, sizeof *m);
    if (!m)
        return sn_err_set(err, SN_E_NOMEM, "model: out of memory");
    m->cfg = *c;
    m->p = *p;
    if (!(m->p.init_std > 0.0))
        m->p.init_std = 0.02;
    m->layers = sn_calloc((size_t)c->num_hidden_layers, sizeof *m->layers);
    if (!m->layers) {
        sn_free(m);
        return sn_err_set(err, SN_E_NOMEM, "model: out of memory");
    }
    rc = sn_aten_gen_create(p->seed, p->device, &m->gen, err);
    if (rc) {
        sn_model_free(m);
        return rc;
    }
    *out = m;
    return SN_OK;
}

int sn_model_create(const struct sn_model_config *c, const struct sn_model_params *p,
                    struct sn_model **out, struct sn_err *err)
{
    struct sn_model *m;
    int rc = sn_model_alloc(c, p, &m, err);
    if (rc)
        return rc;
    struct sn_model_slot *s = NULL;
    size_t n = 0;
    rc = sn_model_slots(m, true, &s, &n, err);
    /* Separate derived streams per tensor: the init does not depend on the order we walk. */
    struct sn_aten_gen *g = NULL;
    for (size_t i = 0; !rc && i < n; i++) {
        rc = sn_aten_gen_create(sn_seed_derive(p->seed, s[i].name, 0), p->device, &g, err);
        if (rc)
            break;
        switch (s[i].kind) {
        case SN_SLOT_MATRIX:
        case SN_SLOT_HEAD:
            rc = sn_aten_randn(s[i].shape, s[i].ndim, p->dtype, p->device, g, s[i].dst, err);
            if (!rc)
                rc = sn_aten_mul_scalar_(*s[i].dst,
                                         s[i].kind == SN_SLOT_HEAD ? 0.02 : m->p.init_std, err);
            break;
        case SN_SLOT_NORM:
        case SN_SLOT_BIAS:
            if (p->init_noise > 0.0) {
                rc = sn_aten_randn(s[i].shape, s[i].ndim, p->dtype, p->device, g, s[i].dst, err);
                if (!rc)
                    rc = sn_aten_mul_scalar_(*s[i].dst, p->init_noise, err);
                if (!rc && s[i].kind == SN_SLOT_NORM)
                    rc = sn_aten_add_scalar_(*s[i].dst, 1.0, err);
            } else if (s[i].kind == SN_SLOT_NORM) {
                rc = sn_aten_ones(s[i].shape, s[i].ndim, p->dtype, p->device, s[i].dst, err);
            } else {
                rc = sn_aten_zeros(s[i].shape, s[i].ndim, p->dtype, p->device, s[i].dst, err);
            }
            break;
        }
        sn_aten_gen_free(g);
        g = NULL;
    }
    if (!rc && m->head)
        rc = sn_aten_set_requires_grad(m->head, true, err);
    sn_free(s);
    if (rc) {
        sn_model_free(m);
        return sn_err_wrap(err, "model init");
    }
    *out = m;
    return SN_OK;
}

int sn_model_init_head(struct sn_model *m, double std, uint64_t seed, struct sn_err *err)
{
    struct sn_aten_gen *g = NULL;
    struct sn_tensor *h = NULL;
    int64_t shape[2] = {1, m->cfg.hidden_size};
    int rc = sn_aten_gen_create(seed, m->p.device, &g, err);
    if (!rc)
        rc = sn_aten_randn(shape, 2, m->p.dtype, m->p.device, g, &h, err);
    if (!rc)
        rc = sn_aten_mul_scalar_(h, std, err);
    if (!rc)
        rc = sn_aten_set_requires_grad(h, true, err);
    sn_aten_gen_free(g);
    if (rc) {
        sn_tensor_free(h);
        return sn_err_wrap(err, "head init");
    }
    sn_tensor_free(m->head);
    m->head = h;
    sn_model_names_free(m);
    return SN_OK;
}

int sn_model_set_head(struct sn_model *m, const float *w, struct sn_err *err)
{
    struct sn_tensor *h = NULL;
    int64_t shape[2] = {1, m->cfg.hidden_size};
    int rc = sn_aten_from_host(w, SN_DTYPE_F32, shape, 2, m->p.dtype, m->p.device, &h, err);
    if (!rc)
        rc = sn_aten_set_requires_grad(h, true, err);
    if (rc) {
        sn_tensor_free(h);
        return sn_err_wrap(err, "set head");
    }
    sn_tensor_free(m->head);
    m->head = h;
    sn_model_names_free(m);
    return SN_OK;
}

/* ---- forward ------------------------------------------------------------------------------ */

struct layer_ctx {
    struct sn_model        *m;
    int64_t                 li;
    const struct sn_tensor *cos, *sin; /* (B, T, Dh) */
    const struct sn_tensor *keep;      /* (B, T) BOOL: 1 = token */
    int64_t                 B, T;
    const struct sn_tensor *spans;     /* packed rows (B, T, 3) I32, or NULL */
    /* the last layer (read-out rows only, readout_layer_fn): */
    const struct sn_tensor *ro;        /* (n) I64 read-out tokens, flat in B*T */
    const struct sn_tensor *ro_win;    /* packed rows: (n * W) I64 flat key window of each
                                       ** read-out token, or NULL (padded: row r's keys) */
    const struct sn_tensor *ro_keep;   /* (n, W) BOOL keys of the window each one sees */
    int64_t                 n_ro, W;
};

/* The decoder layer's second half over rows of h: h1 = h + o_proj(att2),
** out = h1 + down(swiglu(gate|up(rms_norm(h1)))). h and att2 (..., D) and (..., Hq*Dh). */
static int layer_tail(struct sn_model *m, struct sn_model_layer *L, const struct sn_tensor *h,
                      const struct sn_tensor *att2, struct sn_tensor **out, struct sn_err *err)
{
    const struct sn_model_config *c = &m->cfg;
    bool tr = m->training;
    struct scope sc = {0};
    int rc = SN_OK;
    struct sn_tensor *h1, *mn, *gup, *gu;
    const struct sn_lora_linear *l_gu[2] = {L->lora[SN_LORA_GATE_PROJ],
                                            L->lora[SN_LORA_UP_PROJ]};
    const struct sn_tensor *w_gu[2] = {L->w[SN_LORA_GATE_PROJ], L->w[SN_LORA_UP_PROJ]};
    *out = NULL;
    /* h1 = h + o_proj(att): the residual rides in the GEMM's accumulator */
    STEPC(SN_PROF_LINEAR, sn_lora_linear_forward_add(L->lora[SN_LORA_O_PROJ], h, att2,
                                L->w[SN_LORA_O_PROJ], tr, m->gen, &h1, err), h1);
    STEPC(SN_PROF_NORM, sn_aten_rms_norm(h1, L->ln2, c->rms_norm_eps, &mn, err), mn);
    STEPC(SN_PROF_LINEAR, sn_lora_group_forward(l_gu, w_gu, NULL, 2, mn, tr, m->gen, &gup, err),
          gup);
    STEPC(SN_PROF_OTHER, sn_aten_swiglu_cat(gup, &gu, err), gu);
    /* out = h1 + down_proj(gu), likewise */
    double t0 = m->prof ? sn_now() : 0.0;
    rc = sn_lora_linear_forward_add(L->lora[SN_LORA_DOWN_PROJ], h1, gu, L->w[SN_LORA_DOWN_PROJ],
                                    tr, m->gen, out, err);
    if (m->prof)
        m->prof->seconds[SN_PROF_LINEAR] += sn_now() - t0;
fail:
    scope_free(&sc);
    return rc;
}

/* One decoder layer: in[0] = h (B, T, D) -> out[0] = h' (B, T, D). */
static int layer_fn(void *vctx, struct sn_tensor *const *in, size_t n_in,
                    struct sn_tensor **out, size_t n_out, struct sn_err *err)
{
    const struct layer_ctx *x = vctx;
    struct sn_model *m = x->m;
    const struct sn_model_config *c = &m->cfg;
    struct sn_model_layer *L = &m->layers[x->li];
    int64_t B = x->B, T = x->T, D = c->hidden_size, Dh = sn_model_config_head_dim(c);
    int64_t Hq = c->num_attention_heads, Hkv = c->num_key_value_heads;
    bool tr = m->training;
    struct scope sc = {0};
    int rc = SN_OK;
    (void)n_in;
    (void)n_out;
    out[0] = NULL;
    const struct sn_tensor *h = in[0];
    struct sn_tensor *a, *qkv, *q, *k, *v, *q4, *k4, *v4, *qt, *kt, *vt, *qr, *kr, *att, *att_t,
        *att2, *h2;
    /* q, k, v read the same normed input, as do gate and up: one GEMM per group (and one
    ** per group for the adapters), outputs side by side (docs/train.md "Speed") */
    const struct sn_lora_linear *l_qkv[3] = {L->lora[SN_LORA_Q_PROJ], L->lora[SN_LORA_K_PROJ],
                                             L->lora[SN_LORA_V_PROJ]};
    const struct sn_tensor *w_qkv[3] = {L->w[SN_LORA_Q_PROJ], L->w[SN_LORA_K_PROJ],
                                        L->w[SN_LORA_V_PROJ]};
    const struct sn_tensor *b_qkv[3] = {L->bq, L->bk, L->bv};
    int64_t sq[4] = {B, T, Hq, Dh}, skv[4] = {B, T, Hkv, Dh}, s3[3] = {B, T, Hq * Dh};

    STEPC(SN_PROF_NORM, sn_aten_rms_norm(h, L->ln1, c->rms_norm_eps, &a, err), a);
    STEPC(SN_PROF_LINEAR, sn_lora_group_forward(l_qkv, w_qkv, L->bq ? b_qkv : NULL, 3, a, tr,
                                                m->gen, &qkv, err), qkv);
    STEPC(SN_PROF_OTHER, sn_aten_narrow(qkv, 2, 0, Hq * Dh, &q, err), q);
    STEP(sn_aten_narrow(qkv, 2, Hq * Dh, Hkv * Dh, &k, err), k);
    STEP(sn_aten_narrow(qkv, 2, (Hq + Hkv) * Dh, Hkv * Dh, &v, err), v);
    STEPC(SN_PROF_OTHER, sn_aten_view(q, sq, 4, &q4, err), q4);
    STEPC(SN_PROF_OTHER, sn_aten_view(k, skv, 4, &k4, err), k4);
    STEPC(SN_PROF_OTHER, sn_aten_view(v, skv, 4, &v4, err), v4);
    STEPC(SN_PROF_OTHER, sn_aten_transpose(q4, 1, 2, &qt, err), qt); /* (B, Hq, T, Dh) */
    STEP(sn_aten_transpose(k4, 1, 2, &kt, err), kt); /* (B, Hkv, T, Dh) */
    STEP(sn_aten_transpose(v4, 1, 2, &vt, err), vt);
    STEPC(SN_PROF_ATTENTION, sn_aten_apply_rotary(qt, x->cos, x->sin, &qr, err), qr);
    STEPC(SN_PROF_ATTENTION, sn_aten_apply_rotary(kt, x->cos, x->sin, &kr, err), kr);
    /* softmax(q kᵀ / sqrt(Dh) + causal + padding) v; GQA handled by the op (h -> h / n_rep) */
    if (x->spans) /* packed rows: block-diagonal causal mask (+ shared prefix) */
        STEPC(SN_PROF_ATTENTION, sn_aten_attention_spans(qr, kr, vt, x->spans, 0.0, &att, err),
              att);
    else
        STEPC(SN_PROF_ATTENTION, sn_aten_attention(qr, kr, vt, x->keep, true, 0.0, 0.0, NULL,
                                                   &att, err), att);
    STEPC(SN_PROF_OTHER, sn_aten_transpose(att, 1, 2, &att_t, err), att_t); /* (B, T, Hq, Dh) */
    STEP(sn_aten_reshape(att_t, s3, 3, &att2, err), att2);
    rc = layer_tail(m, L, h, att2, &h2, err);
    if (rc)
        goto fail;
    (void)D;
    scope_free(&sc);
    out[0] = h2;
    return SN_OK;
fail:
    scope_free(&sc);
    return sn_err_wrap(err, "layer %" PRId64, x->li);
}

/* The last decoder layer, computed for the read-out tokens only: in[0] = h (B, T, D) ->
** out[0] = (n, D), the read-out rows of what layer_fn would return. The reward reads one
** token per sequence, so past the last layer's keys and values no other row of it reaches the
** loss: q, the attention, o_proj and the MLP run on n rows instead of B*T (llama.cpp skips
** the unused rows of its output the same way). Equal to layer_fn's rows up to rounding: each
** read-out query sees the keys x->ro_keep grants it, which are exactly those its padding
** mask, or in packed rows its segment and prefix (sn_aten_attention_spans), grants it in
** layer_fn; in packed rows the keys come as one window per read-out token, from the first key
** it may see to itself (docs/train.md "Speed"). */
static int readout_layer_fn(const struct layer_ctx *x, const struct sn_tensor *h,
                            struct sn_tensor **out, struct sn_err *err)
{
    struct sn_model *m = x->m;
    const struct sn_model_config *c = &m->cfg;
    struct sn_model_layer *L = &m->layers[x->li];
    int64_t B = x->B, T = x->T, n = x->n_ro, W = x->W, D = c->hidden_size;
    int64_t Dh = sn_model_config_head_dim(c), Hq = c->num_attention_heads;
    int64_t Hkv = c->num_key_value_heads;
    bool tr = m->training;
    struct scope sc = {0};
    int rc = SN_OK;
    *out = NULL;
    struct sn_tensor *a, *kv, *k, *v, *k4, *v4, *kt, *vt, *kr, *af, *asel, *q, *q4, *qt, *cf,
        *sf, *cs, *ss, *cs3, *ss3, *qr, *att, *att2, *hf, *hsel;
    const struct sn_tensor *kcos = x->cos, *ksin = x->sin;
    const struct sn_lora_linear *l_qkv[3] = {L->lora[SN_LORA_Q_PROJ], L->lora[SN_LORA_K_PROJ],
                                             L->lora[SN_LORA_V_PROJ]};
    const struct sn_tensor *w_qkv[3] = {L->w[SN_LORA_Q_PROJ], L->w[SN_LORA_K_PROJ],
                                        L->w[SN_LORA_V_PROJ]};
    const struct sn_tensor *b_qkv[3] = {L->bq, L->bk, L->bv};
    int64_t skv[4] = {B, T, Hkv, Dh}, sflat[2] = {B * T, D}, sq[4] = {n, 1, Hq, Dh};
    int64_t sfd[2] = {B * T, Dh}, sc3[3] = {n, 1, Dh}, s2[2] = {n, Hq * Dh};

    STEPC(SN_PROF_NORM, sn_aten_rms_norm(h, L->ln1, c->rms_norm_eps, &a, err), a);
    /* k | v over every token (one GEMM), q over the read-out rows */
    STEPC(SN_PROF_LINEAR, sn_lora_group_forward(l_qkv + 1, w_qkv + 1, L->bq ? b_qkv + 1 : NULL,
                                                2, a, tr, m->gen, &kv, err), kv);
    const struct sn_tensor *kvs = kv; /* where k and v are read: every token, or windows */
    STEPC(SN_PROF_OTHER, sn_aten_reshape(a, sflat, 2, &af, err), af);
    STEP(sn_aten_index_select(af, 0, x->ro, &asel, err), asel);
    STEPC(SN_PROF_LINEAR, sn_lora_group_forward(l_qkv, w_qkv, L->bq ? b_qkv : NULL, 1, asel, tr,
                                                m->gen, &q, err), q);
    /* the RoPE rows of the read-out tokens, and of every key or of the windows' keys */
    STEPC(SN_PROF_OTHER, sn_aten_reshape(x->cos, sfd, 2, &cf, err), cf);
    STEP(sn_aten_reshape(x->sin, sfd, 2, &sf, err), sf);
    STEP(sn_aten_index_select(cf, 0, x->ro, &cs, err), cs);
    STEP(sn_aten_index_select(sf, 0, x->ro, &ss, err), ss);
    STEP(sn_aten_view(cs, sc3, 3, &cs3, err), cs3);
    STEP(sn_aten_view(ss, sc3, 3, &ss3, err), ss3);
    if (x->ro_win) {
        /* packed rows: gather each read-out token's key window, (n, W) keys */
        struct sn_tensor *kvf, *kvw, *kvw3, *cw, *sw, *cw3, *sw3;
        int64_t skvf[2] = {B * T, 2 * Hkv * Dh}, sw2[3] = {n, W, 2 * Hkv * Dh};
        int64_t swd[3] = {n, W, Dh};
        STEPC(SN_PROF_ATTENTION, sn_aten_view(kv, skvf, 2, &kvf, err), kvf);
        STEP(sn_aten_index_select(kvf, 0, x->ro_win, &kvw, err), kvw);
        STEP(sn_aten_view(kvw, sw2, 3, &kvw3, err), kvw3);
        kvs = kvw3;
        STEP(sn_aten_index_select(cf, 0, x->ro_win, &cw, err), cw);
        STEP(sn_aten_index_select(sf, 0, x->ro_win, &sw, err), sw);
        STEP(sn_aten_view(cw, swd, 3, &cw3, err), cw3);
        STEP(sn_aten_view(sw, swd, 3, &sw3, err), sw3);
        kcos = cw3;
        ksin = sw3;
        skv[0] = n;
        skv[1] = W;
    }
    STEPC(SN_PROF_OTHER, sn_aten_narrow(kvs, 2, 0, Hkv * Dh, &k, err), k);
    STEP(sn_aten_narrow(kvs, 2, Hkv * Dh, Hkv * Dh, &v, err), v);
    STEP(sn_aten_view(k, skv, 4, &k4, err), k4);
    STEP(sn_aten_view(v, skv, 4, &v4, err), v4);
    STEP(sn_aten_transpose(k4, 1, 2, &kt, err), kt); /* (B or n, Hkv, T or W, Dh) */
    STEP(sn_aten_transpose(v4, 1, 2, &vt, err), vt);
    STEP(sn_aten_view(q, sq, 4, &q4, err), q4);
    STEP(sn_aten_transpose(q4, 1, 2, &qt, err), qt); /* (n, Hq, 1, Dh) */
    STEPC(SN_PROF_ATTENTION, sn_aten_apply_rotary(qt, cs3, ss3, &qr, err), qr);
    STEPC(SN_PROF_ATTENTION, sn_aten_apply_rotary(kt, kcos, ksin, &kr, err), kr);
    STEPC(SN_PROF_ATTENTION, sn_aten_attention(qr, kr, vt, x->ro_keep, false, 0.0, 0.0, NULL,
                                               &att, err), att); /* (n, Hq, 1, Dh) */
    STEP(sn_aten_reshape(att, s2, 2, &att2, err), att2);
    STEPC(SN_PROF_OTHER, sn_aten_reshape(h, sflat, 2, &hf, err), hf);
    STEP(sn_aten_index_select(hf, 0, x->ro, &hsel, err), hsel);
    rc = layer_tail(m, L, hsel, att2, out, err);
    if (rc)
        goto fail;
    scope_free(&sc);
    return SN_OK;
fail:
    scope_free(&sc);
    return sn_err_wrap(err, "layer %" PRId64 " (read-out rows)", x->li);
}

/* readout_layer_fn in sn_aten_checkpoint's form: in[0] = h -> out[0] = the read-out rows. */
static int readout_layer_ckpt_fn(void *vctx, struct sn_tensor *const *in, size_t n_in,
                                 struct sn_tensor **out, size_t n_out, struct sn_err *err)
{
    (void)n_in;
    (void)n_out;
    return readout_layer_fn(vctx, in[0], &out[0], err);
}

enum { LAYER_GRAD_INPUTS_MAX = 3 * SN_LORA_TARGET_COUNT + 5 };

/* The tensors layer li reads that require grad, which its checkpoint must hand to autograd:
** its LoRA factors, and in full fine-tuning (the trainer's mode full) its own weights, biases
** and norms. Fills params (LAYER_GRAD_INPUTS_MAX entries) and returns their count. */
static size_t layer_grad_inputs(struct sn_model *m, int64_t li, struct sn_tensor **params)
{
    size_t np = 0;
    struct sn_model_layer *L = &m->layers[li];
    for (int t = 0; t < SN_LORA_TARGET_COUNT; t++) {
        struct sn_lora_linear *l = L->lora[t];
        if (l && !l->merged) {
            params[np++] = l->A;
            params[np++] = l->B;
        }
        if (sn_aten_requires_grad(L->w[t]))
            params[np++] = L->w[t];
    }
    struct sn_tensor *extra[5] = {L->ln1, L->ln2, L->bq, L->bk, L->bv};
    for (int e = 0; e < 5; e++)
        if (extra[e] && sn_aten_requires_grad(extra[e]))
            params[np++] = extra[e];
    return np;
}

/* Host-side batch checks and derived arrays: positions (B*T), last token per row (B),
** ids as int64 (B*T), keep flags (B*T). */
static int batch_prepare(const struct sn_model *m, const struct sn_model_batch *b,
                         const struct sn_model_packed *pk, int64_t *pos, int64_t *last_flat,
                         int64_t *ids64, uint8_t *keep, struct sn_err *err)
{
    int64_t V = m->cfg.vocab_size;
    if (pk) {
        /* packed rows: no padding; positions and read-out points given */
        if (!pk->spans || !pk->pos || !pk->readout || b->mask)
            return sn_err_set(err, SN_E_ARG, "packed batch: spans, pos and readout are needed "
                              "and the mask must be NULL (packed rows carry no padding)");
        int64_t BT = b->B * b->T;
        for (int64_t i = 0; i < BT; i++) {
            int32_t id = b->ids[i];
            if (id < 0 || id >= V)
                return sn_err_set(err, SN_E_ARG, "packed batch row %" PRId64 ", position %"
                                  PRId64 ": token id %d outside the vocabulary [0, %" PRId64
                                  ")", i / b->T, i % b->T, id, V);
            if (pk->pos[i] < 0 || pk->pos[i] >= m->cfg.max_position_embeddings)
                return sn_err_set(err, SN_E_ARG, "packed batch row %" PRId64 ", position %"
                                  PRId64 ": RoPE position %d outside [0, %" PRId64 ") (a "
                                  "sequence longer than the model's context)", i / b->T,
                                  i % b->T, pk->pos[i], m->cfg.max_position_embeddings);
            /* the rule of sn_aten_attention_spans, checked here too: the last layer's key
            ** windows (readout_windows) read the spans without that op */
            const int32_t *sp = pk->spans + 3 * i;
            int64_t t = i % b->T;
            if (!(sp[0] >= 0 && sp[0] <= t &&
                  (sp[1] == sp[2] || (sp[1] >= 0 && sp[1] < sp[2] && sp[2] <= sp[0]))))
                return sn_err_set(err, SN_E_ARG, "packed batch row %" PRId64 ", position %"
                                  PRId64 ": span (%d, %d, %d): expected 0 <= start <= "
                                  "position and an empty prefix or 0 <= lo < hi <= start",
                                  i / b->T, t, sp[0], sp[1], sp[2]);
            ids64[i] = id;
            keep[i] = 1;
            pos[i] = pk->pos[i];
        }
        for (int64_t r = 0; r < pk->n_readout; r++) {
            if (pk->readout[r] < 0 || pk->readout[r] >= BT)
                return sn_err_set(err, SN_E_ARG, "packed batch: read-out %" PRId64 " = %" PRId64
                                  " outside [0, %" PRId64 ")", r, pk->readout[r], BT);
            last_flat[r] = pk->readout[r];
        }
        return SN_OK;
    }
    for (int64_t r = 0; r < b->B; r++) {
        int64_t n = 0, last = -1;
        for (int64_t t = 0; t < b->T; t++) {
            int64_t i = r * b->T + t;
            int32_t mk = b->mask ? b->mask[i] : 1;
            if (mk != 0 && mk != 1)
                return sn_err_set(err, SN_E_ARG, "batch row %" PRId64 ", position %" PRId64
                                  ": mask value %d (expected 0 or 1)", r, t, mk);
            int32_t id = b->ids[i];
            if (mk && (id < 0 || id >= V))
                return sn_err_set(err, SN_E_ARG, "batch row %" PRId64 ", position %" PRId64
                                  ": token id %d outside the vocabulary [0, %" PRId64 ")",
                                  r, t, id, V);
            ids64[i] = mk ? id : 0; /* padding ids are never read back; keep them in range */
            keep[i] = (uint8_t)mk;
            pos[i] = mk ? n : 0;
            if (mk) {
                n++;
                last = t;
            }
        }
        if (last < 0)
            return sn_err_set(err, SN_E_ARG, "batch row %" PRId64 " has no tokens (mask all 0)",
                              r);
        if (n > m->cfg.max_position_embeddings)
            return sn_err_set(err, SN_E_ARG, "batch row %" PRId64 ": %" PRId64 " tokens exceed "
                              "max_position_embeddings %" PRId64, r, n,
                              m->cfg.max_position_embeddings);
        last_flat[r] = r * b->T + last;
    }
    return SN_OK;
}

/* The first key a token of a packed row with span sp may see: its prefix start, or its
** segment start without a prefix (spans validated by batch_prepare: lo < hi <= start). */
static int64_t window_start(const int32_t *sp)
{
    return sp[1] < sp[2] ? sp[1] : sp[0];
}

/* The last layer's keys for the read-out tokens of packed rows (readout_layer_fn): for each
** read-out token r (flat index last[r]), the keys from window_start to itself, W of them for
** the widest (shorter windows repeat their last key, masked); *win (n_out * W) I64 flat key
** indices and *see (n_out, W) BOOL, the keys of the window its span grants it. */
static int readout_windows(const struct sn_model *m, const struct sn_model_packed *pk,
                           const int64_t *last, int64_t n_out, int64_t T, struct sn_tensor **win,
                           struct sn_tensor **see, int64_t *W_out, struct sn_err *err)
{
    int64_t W = 1;
    *win = *see = NULL;
    for (int64_t r = 0; r < n_out; r++) {
        int64_t t = last[r] % T, w = t - window_start(pk->spans + 3 * last[r]) + 1;
        W = w > W ? w : W;
    }
    size_t nw;
    if (!sn_mul_ok((size_t)n_out, (size_t)W, &nw) || nw > ((size_t)1 << 40))
        return sn_err_set(err, SN_E_ARG, "forward: read-out windows too large");
    int64_t swin[1] = {(int64_t)nw}, skw[2] = {n_out, W};
    int64_t *idx = sn_malloc(nw * sizeof *idx);
    uint8_t *ok = sn_malloc(nw);
    int rc = SN_OK;
    if (!idx || !ok)
        rc = sn_err_set(err, SN_E_NOMEM, "forward: out of memory");
    for (int64_t r = 0; !rc && r < n_out; r++) {
        int64_t bt = last[r], t = bt % T, row0 = bt - t;
        const int32_t *sp = pk->spans + 3 * bt;
        int64_t w0 = window_start(sp);
        for (int64_t j = 0; j < W; j++) {
            int64_t key = w0 + j, i = r * W + j;
            bool in = key <= t;
            idx[i] = row0 + (in ? key : t);
            ok[i] = (uint8_t)(in && ((sp[0] <= key && key <= t) ||
                                     (sp[1] <= key && key < sp[2])));
        }
    }
    if (!rc)
        rc = sn_aten_from_host(idx, SN_DTYPE_I64, swin, 1, SN_DTYPE_I64, m->p.device, win, err);
    if (!rc)
        rc = sn_aten_from_host(ok, SN_DTYPE_BOOL, skw, 2, SN_DTYPE_BOOL, m->p.device, see, err);
    sn_free(idx);
    sn_free(ok);
    *W_out = W;
    return rc;
}

/* The LM head's weight (vocab, hidden): the embedding when tied or when no lm_head was kept. */
static const struct sn_tensor *lm_head_weight(const struct sn_model *m)
{
    return m->lm_head ? m->lm_head : m->embed;
}

/* The forward of sn_model_forward_packed, or with at (n_at tokens) the LM forward of
** sn_model_forward_lm: every layer on every token, the rows at[] read out, *logits. */
static int forward_impl(struct sn_model *m, const struct sn_model_batch *b,
                        const struct sn_model_packed *pk, const int64_t *at, int64_t n_at,
                        struct sn_tensor **rewards, struct sn_tensor **hidden,
                        struct sn_tensor **logits, struct sn_err *err)
{
    if (rewards)
        *rewards = NULL;
    if (hidden)
        *hidden = NULL;
    if (!b || !b->ids || b->B < 1 || b->T < 1)
        return sn_err_set(err, SN_E_ARG, "forward: empty batch");
    if (rewards && !m->head)
        return sn_err_set(err, SN_E_ARG, "forward: the model has no reward head (score.weight); "
                          "load an adapter with one or initialise it");
    const struct sn_model_config *c = &m->cfg;
    int64_t B = b->B, T = b->T, D = c->hidden_size, BT;
    size_t nbt;
    if (!sn_mul_ok((size_t)B, (size_t)T, &nbt) || nbt > ((size_t)1 << 40))
        return sn_err_set(err, SN_E_ARG, "forward: batch too large");
    BT = (int64_t)nbt;
    /* rows read out: one per row, or the packed batch's read-out points */
    int64_t n_out = at ? n_at : pk ? pk->n_readout : B;
    if (n_out < 1 || n_out > BT)
        return sn_err_set(err, SN_E_ARG, "forward: %" PRId64 " read-out tokens for %" PRId64
                          " tokens", n_out, BT);
    int64_t *pos = sn_malloc(nbt * sizeof *pos), *ids64 = sn_malloc(nbt * sizeof *ids64);
    /* batch_prepare writes a row's last token for each of the B rows first */
    int64_t *last = sn_malloc((size_t)(n_out > B ? n_out : B) * sizeof *last);
    uint8_t *keep = sn_malloc(nbt);
    struct scope sc = {0};
    struct sn_tensor *h = NULL;
    int rc = SN_OK;
    enum sn_dtype prev_autocast = SN_DTYPE_F32;
    bool autocast_on = false;
    if (!pos || !ids64 || !last || !keep) {
        rc = sn_err_set(err, SN_E_NOMEM, "forward: out of memory");
        goto fail;
    }
    if (m->p.autocast != SN_DTYPE_F32) {
        prev_autocast = sn_aten_autocast_enter(m->p.autocast);
        autocast_on = true;
    }
    rc = batch_prepare(m, b, pk, pos, last, ids64, keep, err);
    if (rc)
        goto fail;
    for (int64_t i = 0; at && i < n_at; i++) {
        if (at[i] < 0 || at[i] >= BT || !keep[at[i]]) {
            rc = sn_err_set(err, SN_E_ARG, "LM read-out %" PRId64 " = %" PRId64
                            " is not a token of the batch", i, at[i]);
            goto fail;
        }
        last[i] = at[i];
    }
    int64_t s2[2] = {B, T}, sB[1] = {n_out}, sflat[2] = {BT, D}, s3[3] = {B, T, 3};
    struct sn_tensor *tid, *tpos, *tkeep, *cosv, *sinv, *tlast, *hf, *hl, *hn, *tspans = NULL;
    if (pk)
        STEP(sn_aten_from_host(pk->spans, SN_DTYPE_I32, s3, 3, SN_DTYPE_I32, m->p.device,
                               &tspans, err), tspans);
    STEP(sn_aten_from_host(ids64, SN_DTYPE_I64, s2, 2, SN_DTYPE_I64, m->p.device, &tid, err),
         tid);
    STEP(sn_aten_from_host(pos, SN_DTYPE_I64, s2, 2, SN_DTYPE_I64, m->p.device, &tpos, err),
         tpos);
    STEP(sn_aten_from_host(keep, SN_DTYPE_BOOL, s2, 2, SN_DTYPE_BOOL, m->p.device, &tkeep, err),
         tkeep);
    STEP(sn_aten_from_host(last, SN_DTYPE_I64, sB, 1, SN_DTYPE_I64, m->p.device, &tlast, err),
         tlast);
    rc = sn_aten_rope_tables(tpos, sn_model_config_head_dim(c), c->rope_theta, m->p.dtype,
                             &cosv, &sinv, err);
    if (rc)
        goto fail;
    scope_keep(&sc, cosv);
    scope_keep(&sc, sinv);
    rc = sn_aten_embedding(m->embed, tid, &h, err); /* (B, T, D) */
    if (rc)
        goto fail;
    bool ckpt = m->p.grad_checkpoint && sn_aten_grad_enabled();
    struct layer_ctx *ctxs = NULL;
    if (ckpt) {
        /* The recompute runs inside the later backward: its context and the tensors it reads
        ** (RoPE tables, padding mask) must outlive this call. The model keeps them until
        ** sn_model_release_forward_state or sn_model_free. */
        struct sn_fwd_state *fs = sn_calloc(1, sizeof *fs);
        ctxs = sn_calloc((size_t)c->num_hidden_layers, sizeof *ctxs);
        if (!fs || !ctxs) {
            sn_free(fs);
            sn_free(ctxs);
            rc = sn_err_set(err, SN_E_NOMEM, "forward: out of memory");
            goto fail;
        }
        rc = sn_tensor_alias(cosv, &fs->cos, err);
        if (!rc)
            rc = sn_tensor_alias(sinv, &fs->sin, err);
        if (!rc)
            rc = sn_tensor_alias(tkeep, &fs->keep, err);
        if (!rc && tspans)
            rc = sn_tensor_alias(tspans, &fs->spans, err);
        fs->ctx = ctxs;
        fs->next = m->fwd;
        m->fwd = fs;
        if (rc)
            goto fail;
        for (int64_t i = 0; i < c->num_hidden_layers; i++) {
            struct layer_ctx x = {m, i, fs->cos, fs->sin, fs->keep, B, T, fs->spans,
                                  NULL, NULL, NULL, 0, 0};
            ctxs[i] = x;
        }
    }
    int64_t n_layers = c->num_hidden_layers;
    /* the LM reads every token: the last layer runs in full like the others */
    int64_t n_full = at ? n_layers : n_layers - 1;
    for (int64_t i = 0; i < n_full; i++) {
        struct layer_ctx x = {m, i, cosv, sinv, tkeep, B, T, tspans, NULL, NULL, NULL, 0, 0};
        struct sn_tensor *hn2 = NULL;
        if (ckpt) {
            struct sn_tensor *params[LAYER_GRAD_INPUTS_MAX];
            size_t np = layer_grad_inputs(m, i, params);
            rc = sn_aten_checkpoint(layer_fn, &ctxs[i], &h, 1, params, np, m->gen, &hn2, 1,
                                    err);
        } else {
            rc = layer_fn(&x, &h, 1, &hn2, 1, err);
        }
        if (rc)
            goto fail;
        sn_tensor_free(h);
        h = hn2;
    }
    if (n_layers > 0 && !at) {
        /* The last layer on the read-out rows only (readout_layer_fn) */
        struct layer_ctx x = {m, n_layers - 1, cosv, sinv, tkeep, B, T, tspans, tlast, NULL,
                              tkeep, n_out, T};
        if (pk) {
            /* several read-outs per row: each one's key window (readout_windows) */
            struct sn_tensor *twin = NULL, *tsee = NULL;
            rc = readout_windows(m, pk, last, n_out, T, &twin, &tsee, &x.W, err);
            scope_keep(&sc, twin);
            scope_keep(&sc, tsee);
            if (rc)
                goto fail;
            x.ro_win = twin;
            x.ro_keep = tsee;
        }
        if (ckpt) {
            /* the context and what it reads must outlive this call, as above */
            struct sn_fwd_state *fs = m->fwd;
            rc = sn_tensor_alias(tlast, &fs->ro, err);
            if (!rc && x.ro_win)
                rc = sn_tensor_alias(x.ro_win, &fs->ro_win, err);
            if (!rc)
                rc = sn_tensor_alias(x.ro_keep, &fs->ro_keep, err);
            if (rc)
                goto fail;
            struct layer_ctx xf = {m, n_layers - 1, fs->cos, fs->sin, fs->keep, B, T,
                                   fs->spans, fs->ro, fs->ro_win, fs->ro_keep, n_out, x.W};
            ctxs[n_layers - 1] = xf;
            struct sn_tensor *params[LAYER_GRAD_INPUTS_MAX];
            size_t np = layer_grad_inputs(m, n_layers - 1, params);
            rc = sn_aten_checkpoint(readout_layer_ckpt_fn, &ctxs[n_layers - 1], &h, 1, params,
                                    np, m->gen, &hl, 1, err);
        } else {
            rc = readout_layer_fn(&x, h, &hl, err); /* (n_out, D) */
        }
        if (rc)
            goto fail;
        scope_keep(&sc, hl);
    } else {
        STEP(sn_aten_reshape(h, sflat, 2, &hf, err), hf);
        STEP(sn_aten_index_select(hf, 0, tlast, &hl, err), hl); /* (B, D) */
    }
    rc = sn_aten_rms_norm(hl, m->norm, c->rms_norm_eps, &hn, err);
    if (rc)
        goto fail;
    if (rewards) {
        struct sn_tensor *r1 = NULL;
        /* the head in f32 even under bf16 autocast: a reward rounded to 8 bits would quantise
        ** the margins the loss sees (hidden x 1: nothing to gain from bf16) */
        enum sn_dtype ac = sn_aten_autocast_enter(SN_DTYPE_F32);
        rc = sn_aten_linear(hn, m->head, NULL, &r1, err); /* (B, 1) */
        sn_aten_autocast_exit(ac);
        if (!rc)
            rc = sn_aten_reshape(r1, sB, 1, rewards, err);
        sn_tensor_free(r1);
        if (rc) {
            sn_tensor_free(hn);
            goto fail;
        }
    }
    if (logits) {
        rc = sn_aten_linear(hn, lm_head_weight(m), NULL, logits, err); /* (n_at, V) */
        if (rc) {
            sn_tensor_free(hn);
            goto fail;
        }
    }
    if (hidden)
        *hidden = hn;
    else
        sn_tensor_free(hn);
    if (autocast_on)
        sn_aten_autocast_exit(prev_autocast);
    scope_free(&sc);
    sn_tensor_free(h);
    sn_free(pos);
    sn_free(ids64);
    sn_free(last);
    sn_free(keep);
    return SN_OK;
fail:
    if (autocast_on)
        sn_aten_autocast_exit(prev_autocast);
    scope_free(&sc);
    sn_tensor_free(h);
    sn_free(pos);
    sn_free(ids64);
    sn_free(last);
    sn_free(keep);
    if (rewards) {
        sn_tensor_free(*rewards);
        *rewards = NULL;
    }
    return sn_err_wrap(err, "forward");
}

int sn_model_forward(struct sn_model *m, const struct sn_model_batch *b,
                     struct sn_tensor **rewards, struct sn_tensor **hidden, struct sn_err *err)
{
    return forward_impl(m, b, NULL, NULL, 0, rewards, hidden, NULL, err);
}

int sn_model_forward_packed(struct sn_model *m, const struct sn_model_batch *b,
                            const struct sn_model_packed *pk, struct sn_tensor **rewards,
                            struct sn_tensor **hidden, struct sn_err *err)
{
    return forward_impl(m, b, pk, NULL, 0, rewards, hidden, NULL, err);
}

int sn_model_forward_lm(struct sn_model *m, const struct sn_model_batch *b, const int64_t *at,
                        int64_t n_at, struct sn_tensor **logits, struct sn_err *err)
{
    *logits = NULL;
    if (!at || n_at < 1)
        return sn_err_set(err, SN_E_ARG, "LM forward: no token to predict from");
    return forward_impl(m, b, NULL, at, n_at, NULL, NULL, logits, err);
}

void sn_model_drop_head(struct sn_model *m)
{
    sn_tensor_free(m->head);
    m->head = NULL;
    sn_model_names_free(m);
}

int sn_model_forward_host(struct sn_model *m, const struct sn_model_batch *b, float *rewards,
                          float *hidden, struct sn_err *err)
{
    struct sn_tensor *r = NULL, *h = NULL;
    bool g = sn_aten_no_grad_enter();
    int rc = sn_model_forward(m, b, rewards ? &r : NULL, hidden ? &h : NULL, err);
    if (!rc && rewards)
        rc = sn_aten_to_host(r, rewards, SN_DTYPE_F32, (size_t)b->B, err);
    if (!rc && hidden)
        rc = sn_aten_to_host(h, hidden, SN_DTYPE_F32, (size_t)(b->B * m->cfg.hidden_size), err);
    sn_aten_no_grad_exit(g);
    sn_tensor_free(r);
    sn_tensor_free(h);
    return rc;
}

/* ---- LoRA --------------------------------------------------------------------------------- */

int sn_model_lora_attach(struct sn_model *m, const struct sn_lora_config *c, struct sn_err *err)
{
    int rc = sn_lora_config_check(c, err);
    if (rc)
        return rc;
    free_lora(m);
    struct sn_aten_gen *g = NULL;
    for (int64_t i = 0; !rc && i < m->cfg.num_hidden_layers; i++) {
        for (int t = 0; !rc && t < SN_LORA_TARGET_COUNT; t++) {
            if (!(c->targets & (1u << t)))
                continue;
            int64_t of, inf;
            sn_model_proj_shape(&m->cfg, (enum sn_lora_target)t, &of, &inf);
            struct sn_lora_linear *l = sn_calloc(1, sizeof *l);
            if (!l) {
                rc = sn_err_set(err, SN_E_NOMEM, "lora: out of memory");
                break;
            }
            char label[96];
            snprintf(label, sizeof label, "lora.%" PRId64 ".%s", i, proj_path[t]);
            rc = sn_aten_gen_create(sn_seed_derive(m->p.seed, label, 0), m->p.device, &g, err);
            if (!rc)
                rc = sn_lora_linear_init(l, inf, of, c, m->p.dtype, m->p.device, g, err);
            sn_aten_gen_free(g);
            g = NULL;
            if (rc) {
                sn_free(l);
                break;
            }
            m->layers[i].lora[t] = l;
        }
    }
    if (rc) {
        free_lora(m);
        return rc;
    }
    m->has_lora = true;
    m->lora_cfg = *c;
    return SN_OK;
}

int sn_model_lora_merge(struct sn_model *m, struct sn_err *err)
{
    for (int64_t i = 0; i < m->cfg.num_hidden_layers; i++)
        for (int t = 0; t < SN_LORA_TARGET_COUNT; t++) {
            struct sn_lora_linear *l = m->layers[i].lora[t];
            if (!l)
                continue;
            int rc = sn_lora_merge(l, m->layers[i].w[t], err);
            if (rc)
                return sn_err_wrap(err, "layer %" PRId64 " %s", i, proj_path[t]);
        }
    return SN_OK;
}

int sn_model_lora_unmerge(struct sn_model *m, struct sn_err *err)
{
    for (int64_t i = 0; i < m->cfg.num_hidden_layers; i++)
        for (int t = 0; t < SN_LORA_TARGET_COUNT; t++) {
            struct sn_lora_linear *l = m->layers[i].lora[t];
            if (!l || !l->merged)
                continue;
            int rc = sn_lora_unmerge(l, m->layers[i].w[t], err);
            if (rc)
                return sn_err_wrap(err, "layer %" PRId64 " %s", i, proj_path[t]);
        }
    return SN_OK;
}

/* ---- trainable parameters ----------------------------------------------------------------- */

void sn_model_names_free(struct sn_model *m)
{
    for (size_t i = 0; i < m->n_names; i++)
        sn_free(m->names[i]);
    sn_free(m->names);
    m->names = NULL;
    m->n_names = 0;
}

int sn_model_trainable_params(struct sn_model *m, struct sn_param **out, size_t *n,
                              struct sn_err *err)
{
    *out = NULL;
    *n = 0;
    size_t cap = 1 + (size_t)m->cfg.num_hidden_layers * SN_LORA_TARGET_COUNT * 2;
    struct sn_param *p = sn_calloc(cap, sizeof *p);
    bool fresh = m->names == NULL;
    if (fresh)
        m->names = sn_calloc(cap, sizeof *m->names);
    if (!p || !m->names) {
        sn_free(p);
        return sn_err_set(err, SN_E_NOMEM, "model: out of memory");
    }
    size_t k = 0;
    for (int64_t i = 0; i < m->cfg.num_hidden_layers; i++) {
        for (int t = 0; t < SN_LORA_TARGET_COUNT; t++) {
            struct sn_lora_linear *l = m->layers[i].lora[t];
            if (!l)
                continue;
            for (int ab = 0; ab < 2; ab++, k++) {
                if (fresh) {
                    char nm[160];
                    snprintf(nm, sizeof nm, "base_model.model.model.layers.%" PRId64
                             ".%s.lora_%c.weight", i, proj_path[t], ab ? 'B' : 'A');
                    m->names[k] = sn_strdup(nm);
                    if (!m->names[k]) {
                        m->n_names = k;
                        sn_model_names_free(m);
                        sn_free(p);
                        return sn_err_set(err, SN_E_NOMEM, "model: out of memory");
                    }
                }
                p[k].name = m->names[k];
                p[k].t = ab ? l->B : l->A;
            }
        }
    }
    if (m->head) {
        if (fresh) {
            m->names[k] = sn_strdup("base_model.model.score.weight");
            if (!m->names[k]) {
                m->n_names = k;
                sn_model_names_free(m);
                sn_free(p);
                return sn_err_set(err, SN_E_NOMEM, "model: out of memory");
            }
        }
        p[k].name = m->names[k];
        p[k].t = m->head;
        k++;
    }
    if (fresh)
        m->n_names = k;
    *out = p;
    *n = k;
    return SN_OK;
}

int64_t sn_model_count_params(const struct sn_model *m, bool trainable_only)
{
    int64_t n = 0;
    for (int64_t i = 0; i < m->cfg.num_hidden_layers; i++) {
        const struct sn_model_layer *L = &m->layers[i];
        for (int t = 0; t < SN_LORA_TARGET_COUNT; t++) {
            if (!trainable_only)
                n += sn_tensor_numel(L->w[t]);
            if (L->lora[t])
                n += sn_tensor_numel(L->lora[t]->A) + sn_tensor_numel(L->lora[t]->B);
        }
        if (!trainable_only)
            n += sn_tensor_numel(L->ln1) + sn_tensor_numel(L->ln2) + sn_tensor_numel(L->bq) +
                 sn_tensor_numel(L->bk) + sn_tensor_numel(L->bv);
    }
    if (!trainable_only)
        n += sn_tensor_numel(m->embed) + sn_tensor_numel(m->norm);
    if (m->head)
        n += sn_tensor_numel(m->head);
    return n;
}
