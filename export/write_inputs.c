/* export/write_inputs.c: what every export reads (export/write.h; docs/export.md): the base's
** config.json and weights and the PEFT adapter, all through hf/ (hf/hf.h: one parser per
** format, shared with train/), and the LoRA merge (PEFT, Hu et al. 2021 "LoRA: Low-Rank
** Adaptation of Large Language Models"):
**   W' = W + s · B A,   A (r, in), B (out, r), s = alpha / r (alpha / sqrt(r) with rsLoRA),
** computed in f32 with one sgemm per projection, before any conversion to F16/BF16. */
#include "export/write_internal.h"

#include <cblas.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

struct sn_export_params sn_export_default_params(void)
{
    struct sn_export_params p = {0};
    p.type = SN_GGML_F32;
    return p;
}

/* ---- inputs ------------------------------------------------------------------------------- */

int sn_exw_join(char *buf, size_t n, const char *dir, const char *name, struct sn_err *err)
{
    int k = snprintf(buf, n, "%s/%s", dir, name);
    if (k < 0 || (size_t)k >= n)
        return sn_err_set(err, SN_E_ARG, "%s/%s: path too long", dir, name);
    return SN_OK;
}

static int read_config(const char *dir, struct sn_exw_config *c, struct sn_err *err)
{
    char path[4096];
    struct sn_model_config mc;
    int rc = sn_exw_join(path, sizeof path, dir, "config.json", err);
    if (!rc)
        rc = sn_model_config_load(path, &mc, err);
    if (rc)
        return rc;
    c->E = mc.hidden_size;
    c->F = mc.intermediate_size;
    c->L = mc.num_hidden_layers;
    c->H = mc.num_attention_heads;
    c->Hkv = mc.num_key_value_heads;
    c->V = mc.vocab_size;
    c->ctx = mc.max_position_embeddings;
    c->eps = mc.rms_norm_eps;
    c->theta = mc.rope_theta;
    return SN_OK;
}

int sn_exw_load_f32(struct sn_hf_weights *w, const char *dir, const char *name, int64_t d0,
                    int64_t d1, bool optional, float **out, struct sn_err *err)
{
    *out = NULL;
    const struct sn_st_tensor *t = sn_hf_weights_find(w, name);
    if (!t && !strncmp(name, "model.", 6))
        t = sn_hf_weights_find(w, name + 6);
    if (!t)
        return optional ? SN_OK : sn_err_set(err, SN_E_FORMAT, "%s: missing tensor '%s'", dir,
                                             name);
    int nd = d1 ? 2 : 1;
    if (t->n_dims != nd || t->shape[0] != d0 || (nd == 2 && t->shape[1] != d1))
        return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s' has %d dims [%" PRId64 ", %" PRId64
                          "], expected [%" PRId64 "%s%" PRId64 "] from config.json", dir, name,
                          t->n_dims, t->shape[0], t->n_dims > 1 ? t->shape[1] : 0, d0,
                          nd == 2 ? ", " : "", nd == 2 ? d1 : (int64_t)0);
    float *buf = sn_malloc((size_t)t->n_elements * sizeof *buf + 1);
    if (!buf)
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory for '%s'", dir, name);
    int rc = sn_st_to_f32(t, buf, err);
    if (rc) {
        sn_free(buf);
        return sn_err_wrap(err, "%s", dir);
    }
    *out = buf;
    return SN_OK;
}

int sn_exw_tensor_f32(const struct sn_st_tensor *t, float **out, struct sn_err *err)
{
    float *f = sn_malloc((size_t)t->n_elements * sizeof *f + 1);
    *out = NULL;
    if (!f)
        return sn_err_set(err, SN_E_NOMEM, "export: out of memory");
    int rc = sn_st_to_f32(t, f, err);
    if (rc) {
        sn_free(f);
        return rc;
    }
    *out = f;
    return SN_OK;
}

const char *sn_exw_last_component(const char *dir, char *buf, size_t n)
{
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        len--;
    size_t s = len;
    while (s > 0 && dir[s - 1] != '/')
        s--;
    snprintf(buf, n, "%.*s", (int)(len - s), dir + s);
    return buf;
}

const struct sn_exw_layer_tensor sn_exw_layer_map[SN_EXW_N_LAYER] = {
    {"input_layernorm.weight", "attn_norm.weight", 0},
    {"self_attn.q_proj.weight", "attn_q.weight", 1},
    {"self_attn.q_proj.bias", "attn_q.bias", 5},
    {"self_attn.k_proj.weight", "attn_k.weight", 2},
    {"self_attn.k_proj.bias", "attn_k.bias", 6},
    {"self_attn.v_proj.weight", "attn_v.weight", 2},
    {"self_attn.v_proj.bias", "attn_v.bias", 6},
    {"self_attn.o_proj.weight", "attn_output.weight", 1},
    {"post_attention_layernorm.weight", "ffn_norm.weight", 0},
    {"mlp.gate_proj.weight", "ffn_gate.weight", 3},
    {"mlp.up_proj.weight", "ffn_up.weight", 3},
    {"mlp.down_proj.weight", "ffn_down.weight", 4},
};

void sn_exw_layer_dims(int kind, int64_t E, int64_t Ekv, int64_t F, int64_t *d0, int64_t *d1)
{
    *d0 = E;
    *d1 = 0;
    switch (kind) {
    case 1: *d1 = E; break;
    case 2: *d1 = Ekv; break;
    case 3: *d1 = F; break;
    case 4: *d1 = E, *d0 = F; break;
    case 6: *d0 = Ekv; break;
    default: break;
    }
}

/* ---- the adapter -------------------------------------------------------------------------- */

int sn_exw_adapter_open(const char *dir, struct sn_exw_adapter *a, struct sn_err *err)
{
    struct sn_hf_adapter_config c;
    int rc = sn_hf_adapter_config_load(dir, &c, err);
    if (!rc) {
        a->r = c.r;
        a->scale = c.scale;
        rc = sn_exw_join(a->path, sizeof a->path, dir, "adapter_model.safetensors", err);
    }
    if (!rc)
        rc = sn_st_open(a->path, &a->st, err);
    return rc;
}

/* The LoRA pair of `module` (e.g. "model.layers.3.self_attn.q_proj") in the adapter, checked
** against the base shape W [out, in]: *A [r, in] and *B [out, r], or both NULL when the adapter
** does not adapt this module. */
static int adapter_pair(const struct sn_exw_adapter *a, const char *module, int64_t out, int64_t in,
                        const struct sn_st_tensor **pa, const struct sn_st_tensor **pb,
                        struct sn_err *err)
{
    char na[640], nb[640];
    snprintf(na, sizeof na, "base_model.model.%s.lora_A.weight", module);
    snprintf(nb, sizeof nb, "base_model.model.%s.lora_B.weight", module);
    const struct sn_st_tensor *A = sn_st_find(a->st, na), *B = sn_st_find(a->st, nb);
    *pa = *pb = NULL;
    if (!A && !B)
        return SN_OK;
    if (!A || !B)
        return sn_err_set(err, SN_E_FORMAT, "%s: '%s' without '%s'", a->path, A ? na : nb,
                          A ? nb : na);
    if (A->n_dims != 2 || B->n_dims != 2 || A->shape[0] != a->r || A->shape[1] != in ||
        B->shape[0] != out || B->shape[1] != a->r)
        return sn_err_set(err, SN_E_FORMAT, "%s: %s is [%" PRId64 ", %" PRId64 "] and %s is [%"
                          PRId64 ", %" PRId64 "]; expected A [r=%d, %" PRId64 "], B [%" PRId64
                          ", r]", a->path, na, A->shape[0], A->n_dims > 1 ? A->shape[1] : 0, nb,
                          B->shape[0], B->n_dims > 1 ? B->shape[1] : 0, a->r, in, out);
    *pa = A;
    *pb = B;
    return SN_OK;
}

int sn_exw_adapter_merge(const struct sn_exw_adapter *a, const char *module, float *W, int64_t out,
                         int64_t in, size_t *used, struct sn_err *err)
{
    const struct sn_st_tensor *A = NULL, *B = NULL;
    int rc0 = adapter_pair(a, module, out, in, &A, &B, err);
    if (rc0 || !A)
        return rc0;
    float *fa = sn_malloc((size_t)A->n_elements * 4 + 1), *fb = sn_malloc((size_t)B->n_elements * 4 + 1);
    int rc = SN_OK;
    if (!fa || !fb)
        rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", a->path);
    if (!rc)
        rc = sn_st_to_f32(A, fa, err);
    if (!rc)
        rc = sn_st_to_f32(B, fb, err);
    if (!rc) {
        /* W (out x in) += s · B (out x r) · A (r x in) */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)out, (int)in, a->r,
                    (float)a->scale, fb, a->r, fa, (int)in, 1.0f, W, (int)in);
        *used += 2;
    }
    sn_free(fa);
    sn_free(fb);
    return rc;
}

int sn_exw_adapter_all_used(const struct sn_exw_adapter *a, size_t used, struct sn_err *err)
{
    if (used == sn_st_count(a->st))
        return SN_OK;
    for (size_t i = 0; i < sn_st_count(a->st); i++) {
        const char *nm = sn_st_get(a->st, i)->name;
        if (!strstr(nm, ".lora_A.weight") && !strstr(nm, ".lora_B.weight") &&
            !strstr(nm, "score"))
            return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s' is not a LoRA pair of a "
                              "Qwen2 projection or the score head", a->path, nm);
    }
    return sn_err_set(err, SN_E_FORMAT, "%s: %zu of its %zu tensors match no projection of "
                      "this base (wrong base model or layer count?)", a->path,
                      sn_st_count(a->st) - used, sn_st_count(a->st));
}

/* The adapter's head tensor (PEFT saves modules_to_save under the module's own name; older
** files keep the wrapper's name), checked to be [1, E]; NULL when it has none. */
int sn_exw_adapter_head(const struct sn_exw_adapter *a, int64_t E, const struct sn_st_tensor **out,
                        struct sn_err *err)
{
    const struct sn_st_tensor *hs = sn_st_find(a->st, "base_model.model.score.weight");
    if (!hs)
        hs = sn_st_find(a->st, "base_model.model.score.modules_to_save.default.weight");
    *out = NULL;
    if (hs && (hs->n_dims != 2 || hs->shape[0] != 1 || hs->shape[1] != E))
        return sn_err_set(err, SN_E_FORMAT, "%s: '%s' must be [1, %" PRId64 "]", a->path,
                          hs->name, E);
    *out = hs;
    return SN_OK;
}

/* ---- buffers and the sources of every export ---------------------------------------------- */

void sn_exw_bufs_free(struct sn_exw_bufs *b)
{
    for (size_t i = 0; i < b->n; i++)
        sn_free(b->v[i]);
    sn_free(b->v);
}

int sn_exw_keep(struct sn_exw_bufs *b, void *p, struct sn_err *err)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 64;
        void **v = sn_realloc(b->v, cap * sizeof *v);
        if (!v) {
            sn_free(p);
            return sn_err_set(err, SN_E_NOMEM, "export: out of memory");
        }
        b->v = v;
        b->cap = cap;
    }
    b->v[b->n++] = p;
    return SN_OK;
}

int sn_exw_sources_open(const struct sn_export_params *p, bool need_adapter, bool allow_q8,
                        struct sn_exw_sources *s, struct sn_err *err)
{
    memset(s, 0, sizeof *s);
    if (!p || !p->base_dir)
        return sn_err_set(err, SN_E_ARG, "export: a base directory is needed");
    if (need_adapter && !p->adapter_dir)
        return sn_err_set(err, SN_E_ARG, "export: an adapter directory (--adapter) is needed");
    if (allow_q8 && p->type != SN_GGML_F32 && p->type != SN_GGML_F16 &&
        p->type != SN_GGML_BF16 && p->type != SN_GGML_Q8_0)
        return sn_err_set(err, SN_E_ARG, "export: type must be f32, f16, bf16 or q8_0");
    if (!allow_q8 && p->type != SN_GGML_F32 && p->type != SN_GGML_F16 &&
        p->type != SN_GGML_BF16)
        return sn_err_set(err, SN_E_ARG, "export: type must be f32, f16 or bf16 (q8_0 is for the "
                          "merged GGUF only)");
    int rc = read_config(p->base_dir, &s->c, err);
    if (!rc)
        rc = sn_hf_weights_open(p->base_dir, &s->wts, err);
    if (!rc && p->adapter_dir)
        rc = sn_exw_adapter_open(p->adapter_dir, &s->ad, err);
    s->Ekv = s->c.H ? s->c.Hkv * (s->c.E / s->c.H) : 0;
    return rc;
}

void sn_exw_sources_close(struct sn_exw_sources *s)
{
    sn_st_close(s->ad.st);
    s->ad.st = NULL;
    sn_hf_weights_close(s->wts);
    s->wts = NULL;
}

int sn_exw_layer_pair(const struct sn_exw_sources *s, int64_t l, size_t k, int64_t *d0,
                      int64_t *d1, const struct sn_st_tensor **A, const struct sn_st_tensor **B,
                      struct sn_err *err)
{
    char name[512];
    *A = *B = NULL;
    sn_exw_layer_dims(sn_exw_layer_map[k].kind, s->c.E, s->Ekv, s->c.F, d0, d1);
    if (!*d1)
        return SN_OK;
    snprintf(name, sizeof name, "model.layers.%" PRId64 ".%.*s", l,
             (int)(strlen(sn_exw_layer_map[k].hf) - strlen(".weight")), sn_exw_layer_map[k].hf);
    return adapter_pair(&s->ad, name, *d1, *d0, A, B, err);
}
