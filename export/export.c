/* export/export.c: a Hugging Face Qwen2 directory (+ an optional PEFT LoRA adapter) -> a qwen2
** GGUF that stock llama.cpp loads and our detector reads (export.h; docs/formats.md#gguf).
**
** Names follow llama.cpp's qwen2 loader (docs/formats.md#gguf):
**   model.embed_tokens.weight                      -> token_embd.weight
**   model.layers.{i}.input_layernorm.weight        -> blk.{i}.attn_norm.weight
**   model.layers.{i}.self_attn.{q,k,v}_proj.weight -> blk.{i}.attn_{q,k,v}.weight (+ .bias)
**   model.layers.{i}.self_attn.o_proj.weight       -> blk.{i}.attn_output.weight
**   model.layers.{i}.post_attention_layernorm.weight -> blk.{i}.ffn_norm.weight
**   model.layers.{i}.mlp.{gate,up,down}_proj.weight  -> blk.{i}.ffn_{gate,up,down}.weight
**   model.norm.weight                              -> output_norm.weight
** An HF [out, in] matrix is row-major with `in` innermost, which is GGUF's ne {in, out}: the
** bytes are the same. Qwen2's RoPE is NEOX-style in llama.cpp, the same as HF's rotate_half, so
** Q and K need no permutation.
**
** LoRA (PEFT, Hu et al. 2021 "LoRA: Low-Rank Adaptation of Large Language Models"):
**   W' = W + s · B A,   A (r, in), B (out, r), s = alpha / r (alpha / sqrt(r) with rsLoRA),
** computed in f32 with one sgemm per projection, before any conversion to F16/BF16.
**
** The reward head (hidden -> 1, no bias) goes under our key sentinel.score.weight as f32, with
** qwen2.pooling_type = 3 (LAST): llama.cpp then returns the last token's final-norm state,
** whose dot product with the head is the reward. llama.cpp refuses a qwen2 file with a
** cls.output.weight tensor, so the head is never written as one. --head-as-logit also writes
** output.weight with row 0 = head and every other row 0, so logit 0 is the reward. */
#include "export/export_internal.h"

#include "common/safetensors.h"
#include "tokenizer/template.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_internal.h"

#include <cblas.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAX_SHARDS 1024

struct sn_export_params sn_export_default_params(void)
{
    struct sn_export_params p = {0};
    p.type = SN_GGML_F32;
    return p;
}

struct hf_config {
    int64_t E, F, L, H, Hkv, V, ctx;
    double  eps, theta;
};

/* ---- inputs ------------------------------------------------------------------------------- */

static int join(char *buf, size_t n, const char *dir, const char *name, struct sn_err *err)
{
    int k = snprintf(buf, n, "%s/%s", dir, name);
    if (k < 0 || (size_t)k >= n)
        return sn_err_set(err, SN_E_ARG, "%s/%s: path too long", dir, name);
    return SN_OK;
}

static int get_pos_int(const cJSON *j, const char *file, const char *key, int64_t max,
                       int64_t *out, struct sn_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > (double)max ||
        v->valuedouble != floor(v->valuedouble))
        return sn_err_set(err, SN_E_FORMAT, "%s: '%s' must be an integer in [1, %" PRId64 "]",
                          file, key, max);
    *out = (int64_t)v->valuedouble;
    return SN_OK;
}

static int read_config(const char *dir, struct hf_config *c, struct sn_err *err)
{
    char path[4096];
    cJSON *j = NULL;
    int rc = join(path, sizeof path, dir, "config.json", err);
    if (!rc)
        rc = sn_json_load(path, &j, err);
    if (rc)
        return rc;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(j, "model_type");
    if (mt && (!cJSON_IsString(mt) || strcmp(mt->valuestring, "qwen2")))
        rc = sn_err_set(err, SN_E_UNSUPPORTED, "%s: model_type is not \"qwen2\"", path);
    if (!rc) rc = get_pos_int(j, path, "hidden_size", 1 << 16, &c->E, err);
    if (!rc) rc = get_pos_int(j, path, "intermediate_size", 1 << 18, &c->F, err);
    if (!rc) rc = get_pos_int(j, path, "num_hidden_layers", 512, &c->L, err);
    if (!rc) rc = get_pos_int(j, path, "num_attention_heads", 1 << 12, &c->H, err);
    if (!rc) rc = get_pos_int(j, path, "vocab_size", 1 << 24, &c->V, err);
    if (!rc) rc = get_pos_int(j, path, "max_position_embeddings", 1 << 24, &c->ctx, err);
    c->Hkv = c->H;
    if (!rc && cJSON_GetObjectItemCaseSensitive(j, "num_key_value_heads"))
        rc = get_pos_int(j, path, "num_key_value_heads", 1 << 12, &c->Hkv, err);
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(j, "rms_norm_eps");
    const cJSON *th = cJSON_GetObjectItemCaseSensitive(j, "rope_theta");
    c->eps = cJSON_IsNumber(eps) ? eps->valuedouble : 1e-6;
    c->theta = cJSON_IsNumber(th) ? th->valuedouble : 10000.0;
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(j, "rope_scaling");
    if (!rc && rs && !cJSON_IsNull(rs))
        rc = sn_err_set(err, SN_E_UNSUPPORTED, "%s: rope_scaling is set; only plain RoPE is "
                        "supported", path);
    if (!rc && (c->E % c->H || c->H % c->Hkv || (c->E / c->H) % 2 || !(c->eps > 0) ||
                !(c->theta > 0)))
        rc = sn_err_set(err, SN_E_FORMAT, "%s: inconsistent config (heads must divide "
                        "hidden_size into even head sizes, KV heads must divide heads)", path);
    cJSON_Delete(j);
    return rc;
}

/* The base's safetensors: model.safetensors or the shards of model.safetensors.index.json. */
struct weights {
    struct sn_st_file **f;
    size_t              n;
};

static void weights_close(struct weights *w)
{
    for (size_t i = 0; i < w->n; i++)
        sn_st_close(w->f[i]);
    sn_free(w->f);
    w->f = NULL;
    w->n = 0;
}

static int weights_open(const char *dir, struct weights *w, struct sn_err *err)
{
    char path[4096];
    int rc = join(path, sizeof path, dir, "model.safetensors", err);
    if (rc)
        return rc;
    if (sn_path_exists(path)) {
        w->f = sn_calloc(1, sizeof *w->f);
        if (!w->f)
            return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", dir);
        w->n = 1;
        return sn_st_open(path, &w->f[0], err);
    }
    cJSON *j = NULL;
    if ((rc = join(path, sizeof path, dir, "model.safetensors.index.json", err)))
        return rc;
    if (!sn_path_exists(path))
        return sn_err_set(err, SN_E_IO, "%s: no model.safetensors or model.safetensors.index."
                          "json (a Hugging Face model directory is needed)", dir);
    if ((rc = sn_json_load(path, &j, err)))
        return rc;
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(j, "weight_map"), *e;
    w->f = sn_calloc(MAX_SHARDS, sizeof *w->f);
    const char **names = sn_calloc(MAX_SHARDS, sizeof *names);
    if (!w->f || !names)
        rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
    else if (!cJSON_IsObject(map))
        rc = sn_err_set(err, SN_E_FORMAT, "%s: missing object 'weight_map'", path);
    const cJSON *it = rc ? NULL : map;
    cJSON_ArrayForEach(e, it) {
        if (!cJSON_IsString(e) || !e->valuestring[0] || strchr(e->valuestring, '/')) {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: weight_map['%s'] must be a file name in the "
                            "same directory", path, e->string);
            break;
        }
        size_t k = 0;
        while (k < w->n && strcmp(names[k], e->valuestring))
            k++;
        if (k < w->n)
            continue;
        if (w->n == MAX_SHARDS) {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: more than %d shards", path, MAX_SHARDS);
            break;
        }
        char sp[4096];
        names[w->n] = e->valuestring;
        rc = join(sp, sizeof sp, dir, e->valuestring, err);
        if (!rc)
            rc = sn_st_open(sp, &w->f[w->n], err);
        if (rc)
            break;
        w->n++;
    }
    sn_free(names);
    cJSON_Delete(j);
    return rc;
}

static const struct sn_st_tensor *weights_find(const struct weights *w, const char *name)
{
    for (size_t i = 0; i < w->n; i++) {
        const struct sn_st_tensor *t = sn_st_find(w->f[i], name);
        if (t)
            return t;
    }
    return NULL;
}

/* A tensor of the base as f32 (new buffer, caller frees), checked against the expected shape
** [d0] or [d0, d1] (d1 = 0: 1-D). Looks for `name`, then `name` without "model.". */
static int load_f32(const struct weights *w, const char *dir, const char *name, int64_t d0,
                    int64_t d1, bool optional, float **out, struct sn_err *err)
{
    *out = NULL;
    const struct sn_st_tensor *t = weights_find(w, name);
    if (!t && !strncmp(name, "model.", 6))
        t = weights_find(w, name + 6);
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

/* The tensors of one decoder layer: HF name after "model.layers.{i}.", llama.cpp name after
** "blk.{i}.", and the shape kind: 0 norm [E], 1 q/o [E,E], 2 k/v [Ekv,E], 3 gate/up [F,E],
** 4 down [E,F], 5 q bias [E], 6 k/v bias [Ekv]. Kinds 1..4 are the LoRA targets. */
static const struct {
    const char *hf, *gg;
    int kind;
} layer_map[] = {
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
#define N_LAYER_MAP (sizeof layer_map / sizeof *layer_map)

/* HF shape [d1, d0] of a layer tensor of `kind` (d1 = 0: the 1-D [d0]). */
static void layer_dims(int kind, int64_t E, int64_t Ekv, int64_t F, int64_t *d0, int64_t *d1)
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

struct adapter {
    struct sn_st_file *st;
    double             scale;   /* alpha / r (rsLoRA: alpha / sqrt r) */
    int                r;
    char               path[4096];
};

static int adapter_open(const char *dir, struct adapter *a, struct sn_err *err)
{
    char path[4096];
    cJSON *j = NULL;
    int rc = join(path, sizeof path, dir, "adapter_config.json", err);
    if (!rc)
        rc = sn_json_load(path, &j, err);
    if (rc)
        return rc;
    const cJSON *pt = cJSON_GetObjectItemCaseSensitive(j, "peft_type");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "r");
    const cJSON *al = cJSON_GetObjectItemCaseSensitive(j, "lora_alpha");
    if (!cJSON_IsString(pt) || strcmp(pt->valuestring, "LORA"))
        rc = sn_err_set(err, SN_E_UNSUPPORTED, "%s: peft_type must be \"LORA\"", path);
    else if (!cJSON_IsNumber(r) || r->valuedouble < 1 || r->valuedouble > 65536 ||
             r->valuedouble != floor(r->valuedouble))
        rc = sn_err_set(err, SN_E_FORMAT, "%s: 'r' must be an integer >= 1", path);
    else if (!cJSON_IsNumber(al) || !isfinite(al->valuedouble))
        rc = sn_err_set(err, SN_E_FORMAT, "%s: 'lora_alpha' must be a number", path);
    else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "use_dora")))
        rc = sn_err_set(err, SN_E_UNSUPPORTED, "%s: DoRA adapters are not supported", path);
    else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "fan_in_fan_out")))
        rc = sn_err_set(err, SN_E_UNSUPPORTED, "%s: fan_in_fan_out is not supported", path);
    if (!rc) {
        const cJSON *rp = cJSON_GetObjectItemCaseSensitive(j, "rank_pattern");
        const cJSON *ap = cJSON_GetObjectItemCaseSensitive(j, "alpha_pattern");
        if ((cJSON_IsObject(rp) && rp->child) || (cJSON_IsObject(ap) && ap->child))
            rc = sn_err_set(err, SN_E_UNSUPPORTED, "%s: rank_pattern/alpha_pattern are not "
                            "supported", path);
    }
    if (!rc) {
        a->r = (int)r->valuedouble;
        bool rs = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "use_rslora"));
        a->scale = al->valuedouble / (rs ? sqrt((double)a->r) : (double)a->r);
        rc = join(a->path, sizeof a->path, dir, "adapter_model.safetensors", err);
    }
    if (!rc)
        rc = sn_st_open(a->path, &a->st, err);
    cJSON_Delete(j);
    return rc;
}

/* The LoRA pair of `module` (e.g. "model.layers.3.self_attn.q_proj") in the adapter, checked
** against the base shape W [out, in]: *A [r, in] and *B [out, r], or both NULL when the adapter
** does not adapt this module. */
static int adapter_pair(const struct adapter *a, const char *module, int64_t out, int64_t in,
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

/* W (out, in) += s · B A for the adapter of `module`, if the adapter has one. *used counts the
** tensors consumed. */
static int adapter_merge(const struct adapter *a, const char *module, float *W, int64_t out,
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

/* Every adapter tensor must have been used: an unknown one means a different model. */
static int adapter_all_used(const struct adapter *a, size_t used, struct sn_err *err)
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
static int adapter_head(const struct adapter *a, int64_t E, const struct sn_st_tensor **out,
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

/* ---- the tokenizer ------------------------------------------------------------------------ */

struct tok_arrays {
    char   **tokens;
    int32_t *types;
    size_t   n;
    char   **merges;
    size_t   n_merges;
    const char *pre;
    bool     nfc;
    int32_t  bos, eos, pad;
    char    *chat_template;
    char     hash[65];
};

static void tok_arrays_free(struct tok_arrays *t)
{
    for (size_t i = 0; t->tokens && i < t->n; i++)
        sn_free(t->tokens[i]);
    for (size_t i = 0; t->merges && i < t->n_merges; i++)
        sn_free(t->merges[i]);
    sn_free(t->tokens);
    sn_free(t->types);
    sn_free(t->merges);
    sn_free(t->chat_template);
    memset(t, 0, sizeof *t);
}

/* Which pre-tokenizer (llama.cpp name) a tokenizer.json's pre_tokenizer is: "qwen2" for the
** Split with Qwen2's regex, "gpt2" for a plain ByteLevel with use_regex; NULL otherwise. */
static const char *pre_name(const cJSON *pt)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(pt, "type");
    if (!cJSON_IsString(t))
        return NULL;
    if (!strcmp(t->valuestring, "Sequence")) {
        const cJSON *x, *arr = cJSON_GetObjectItemCaseSensitive(pt, "pretokenizers");
        const char *found = NULL;
        cJSON_ArrayForEach(x, arr) {
            const cJSON *xt = cJSON_GetObjectItemCaseSensitive(x, "type");
            if (cJSON_IsString(xt) && !strcmp(xt->valuestring, "Split")) {
                const cJSON *re = cJSON_GetObjectItemCaseSensitive(
                    cJSON_GetObjectItemCaseSensitive(x, "pattern"), "Regex");
                if (!cJSON_IsString(re) || strcmp(re->valuestring, SN_QWEN2_SPLIT_REGEX))
                    return NULL;
                found = "qwen2";
            } else if (cJSON_IsString(xt) && !strcmp(xt->valuestring, "ByteLevel")) {
                if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(x, "use_regex")))
                    return NULL;  /* a second split after the Split: not Qwen2's */
            } else {
                return NULL;
            }
        }
        return found;
    }
    if (!strcmp(t->valuestring, "ByteLevel")) {
        const cJSON *ur = cJSON_GetObjectItemCaseSensitive(pt, "use_regex");
        return !ur || cJSON_IsTrue(ur) ? "gpt2" : NULL;
    }
    return NULL;
}

static int read_tokenizer(const char *dir, int64_t n_vocab, struct tok_arrays *t,
                          struct sn_err *err)
{
    char path[4096];
    cJSON *j = NULL;
    int rc = join(path, sizeof path, dir, "tokenizer.json", err);
    if (!rc)
        rc = sn_sha256_file(path, t->hash, err);
    if (!rc)
        rc = sn_json_load(path, &j, err);
    if (rc)
        return rc;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(j, "model");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(j, "added_tokens"), *x;
    const cJSON *nz = cJSON_GetObjectItemCaseSensitive(j, "normalizer");
    t->pre = pre_name(cJSON_GetObjectItemCaseSensitive(j, "pre_tokenizer"));
    if (!cJSON_IsObject(vocab) || !cJSON_IsArray(merges)) {
        rc = sn_err_set(err, SN_E_FORMAT, "%s: model.vocab and model.merges are required",
                        path);
        goto done;
    }
    if (!t->pre) {
        rc = sn_err_set(err, SN_E_UNSUPPORTED, "%s: the pre-tokenizer is neither Qwen2's nor "
                        "GPT-2's; llama.cpp could not reproduce it", path);
        goto done;
    }
    /* normalizer: none, NFC, or a Sequence of NFC (what tokenizer/ reproduces) */
    if (nz && !cJSON_IsNull(nz)) {
        const cJSON *nzt = cJSON_GetObjectItemCaseSensitive(nz, "type");
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(nz, "normalizers");
        bool ok = cJSON_IsString(nzt) && !strcmp(nzt->valuestring, "NFC");
        if (cJSON_IsString(nzt) && !strcmp(nzt->valuestring, "Sequence") &&
            cJSON_IsArray(list)) {
            ok = true;
            cJSON_ArrayForEach(x, list) {
                const cJSON *xt = cJSON_GetObjectItemCaseSensitive(x, "type");
                ok &= cJSON_IsString(xt) && !strcmp(xt->valuestring, "NFC");
            }
        }
        if (!ok) {
            rc = sn_err_set(err, SN_E_UNSUPPORTED, "%s: normalizer other than NFC (or a "
                            "Sequence of NFC); the detector could not reproduce it", path);
            goto done;
        }
        t->nfc = true;
    }
    t->n = (size_t)n_vocab;
    t->tokens = sn_calloc(t->n, sizeof *t->tokens);
    t->types = sn_calloc(t->n, sizeof *t->types);
    t->n_merges = (size_t)cJSON_GetArraySize(merges);
    t->merges = sn_calloc(t->n_merges + 1, sizeof *t->merges);
    if (!t->tokens || !t->types || !t->merges) {
        rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
        goto done;
    }
    cJSON_ArrayForEach(x, vocab) {
        double id = cJSON_IsNumber(x) ? x->valuedouble : -1;
        if (!(id >= 0 && id < (double)n_vocab) || id != floor(id)) {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: token \"%s\" has id %g, outside the model's "
                            "vocab_size %" PRId64, path, x->string, id, n_vocab);
            goto done;
        }
        size_t i = (size_t)id;
        if (t->tokens[i]) {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: id %zu is given twice", path, i);
            goto done;
        }
        if (!(t->tokens[i] = sn_strdup(x->string))) {
            rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
            goto done;
        }
        t->types[i] = SN_TOKEN_NORMAL;
    }
    t->bos = t->eos = t->pad = -1;
    cJSON_ArrayForEach(x, added) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(x, "id");
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(x, "content");
        if (!cJSON_IsNumber(id) || !(id->valuedouble >= 0 && id->valuedouble < (double)n_vocab) ||
            !cJSON_IsString(c)) {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: an added token has no content or an id "
                            "outside the model's vocab_size %" PRId64, path, n_vocab);
            goto done;
        }
        size_t i = (size_t)id->valuedouble;
        sn_free(t->tokens[i]);
        if (!(t->tokens[i] = sn_strdup(c->valuestring))) {
            rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
            goto done;
        }
        t->types[i] = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(x, "special"))
                          ? SN_TOKEN_CONTROL : SN_TOKEN_USER_DEFINED;
        if (!strcmp(c->valuestring, "<|endoftext|>"))
            t->bos = t->pad = (int32_t)i;
        if (!strcmp(c->valuestring, "<|im_end|>"))
            t->eos = (int32_t)i;
    }
    for (size_t i = 0; i < t->n; i++)
        if (!t->tokens[i]) {  /* the model's vocab_size pads past the tokenizer: holes */
            char b[32];
            snprintf(b, sizeof b, "[PAD%zu]", i);
            if (!(t->tokens[i] = sn_strdup(b))) {
                rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
                goto done;
            }
            t->types[i] = SN_TOKEN_UNUSED;
        }
    size_t k = 0;
    cJSON_ArrayForEach(x, merges) {
        if (cJSON_IsString(x)) {
            t->merges[k] = sn_strdup(x->valuestring);
        } else if (cJSON_IsArray(x) && cJSON_GetArraySize(x) == 2 &&
                   cJSON_IsString(cJSON_GetArrayItem(x, 0)) &&
                   cJSON_IsString(cJSON_GetArrayItem(x, 1))) {
            const char *l = cJSON_GetArrayItem(x, 0)->valuestring;
            const char *r = cJSON_GetArrayItem(x, 1)->valuestring;
            size_t n = strlen(l) + strlen(r) + 2;
            if ((t->merges[k] = sn_malloc(n)))
                snprintf(t->merges[k], n, "%s %s", l, r);
        } else {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: model.merges[%zu] is not \"a b\" or [a, b]",
                            path, k);
            goto done;
        }
        if (!t->merges[k]) {
            rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
            goto done;
        }
        k++;
    }
    /* chat template: tokenizer_config.json's when present */
    cJSON *tc = NULL;
    char tcp[4096];
    if (!join(tcp, sizeof tcp, dir, "tokenizer_config.json", err) && sn_path_exists(tcp) &&
        sn_json_load(tcp, &tc, err) == SN_OK) {
        const cJSON *ct = cJSON_GetObjectItemCaseSensitive(tc, "chat_template");
        if (cJSON_IsString(ct))
            t->chat_template = sn_strdup(ct->valuestring);
        cJSON_Delete(tc);
    }
done:
    cJSON_Delete(j);
    return rc;
}

/* The template every ChatML Qwen2 model ships (used when the base has no tokenizer_config). */
static const char chatml_template[] =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\\n' }}{% endif %}";

/* ---- writing ------------------------------------------------------------------------------ */

struct out_bufs {
    void  **v;
    size_t  n, cap;
};

static void out_bufs_free(struct out_bufs *b)
{
    for (size_t i = 0; i < b->n; i++)
        sn_free(b->v[i]);
    sn_free(b->v);
}

static int keep(struct out_bufs *b, void *p, struct sn_err *err)
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

/* Adds a tensor from f32 data (ownership of f passes to bufs): 1-D stays F32, matrices are
** converted to `type`. HF shape [d1, d0] (d1 = 0: 1-D [d0]) -> ne {d0, d1}. */
static int add(struct sn_gguf_writer *w, struct out_bufs *bufs, const char *name, float *f,
               int64_t d0, int64_t d1, int type, struct sn_err *err)
{
    int rc = keep(bufs, f, err);
    if (rc)
        return rc;
    uint64_t ne[2] = {(uint64_t)d0, (uint64_t)(d1 ? d1 : 1)};
    size_t n = (size_t)ne[0] * (size_t)ne[1];
    if (!d1 || type == SN_GGML_F32)
        return sn_gguf_writer_add_tensor(w, name, SN_GGML_F32, d1 ? 2 : 1, ne, f, err);
    if (type == SN_GGML_Q8_0 && d0 % SN_Q8_0_BLOCK == 0) {
        uint8_t *q = sn_malloc(n / SN_Q8_0_BLOCK * (2 + SN_Q8_0_BLOCK) + 1);
        if (!q)
            return sn_err_set(err, SN_E_NOMEM, "export: out of memory for '%s'", name);
        sn_q8_0_quantize(f, n, q);
        if ((rc = keep(bufs, q, err)))
            return rc;
        return sn_gguf_writer_add_tensor(w, name, SN_GGML_Q8_0, 2, ne, q, err);
    }
    if (type == SN_GGML_Q8_0)   /* rows not a multiple of the block: F16, as ggml's converter */
        type = SN_GGML_F16;
    uint16_t *h = sn_malloc(n * 2 + 1);
    if (!h)
        return sn_err_set(err, SN_E_NOMEM, "export: out of memory for '%s'", name);
    for (size_t i = 0; i < n; i++)
        h[i] = type == SN_GGML_F16 ? sn_f32_to_f16(f[i]) : sn_f32_to_bf16(f[i]);
    if ((rc = keep(bufs, h, err)))
        return rc;
    return sn_gguf_writer_add_tensor(w, name, type, 2, ne, h, err);
}

/* A new f32 copy of tensor t in *out (NULL on error). */
static int tensor_f32(const struct sn_st_tensor *t, float **out, struct sn_err *err)
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

static const char *last_component(const char *dir, char *buf, size_t n)
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

int sn_export_gguf(const struct sn_export_params *p, const char *out_path, struct sn_err *err)
{
    if (!p || !p->base_dir || !out_path)
        return sn_err_set(err, SN_E_ARG, "export: a base directory and an output path are "
                          "needed");
    if (p->type != SN_GGML_F32 && p->type != SN_GGML_F16 && p->type != SN_GGML_BF16 &&
        p->type != SN_GGML_Q8_0)
        return sn_err_set(err, SN_E_ARG, "export: type must be f32, f16, bf16 or q8_0");
    const char *dir = p->base_dir;
    struct hf_config c = {0};
    struct weights wts = {0};
    struct adapter ad = {0};
    struct tok_arrays tk = {0};
    struct out_bufs bufs = {0};
    struct sn_gguf_writer *w = NULL;
    float *head = NULL;
    size_t used = 0;
    char name[512], hfn[256];
    int rc = read_config(dir, &c, err);
    if (!rc)
        rc = weights_open(dir, &wts, err);
    if (!rc && p->adapter_dir)
        rc = adapter_open(p->adapter_dir, &ad, err);
    if (!rc)
        rc = read_tokenizer(dir, c.V, &tk, err);
    if (!rc)
        rc = sn_gguf_writer_create(&w, err);
    if (rc)
        goto done;
    const int64_t E = c.E, Ekv = c.Hkv * (c.E / c.H), F = c.F;
    uint32_t max_len = p->max_len ? p->max_len : 1024;
    if (max_len > c.ctx)
        max_len = (uint32_t)c.ctx;
    /* llama.cpp's llama_ftype: ALL_F32 0, MOSTLY_F16 1, MOSTLY_Q8_0 7, MOSTLY_BF16 32 */
    int file_type = p->type == SN_GGML_F32 ? 0 : p->type == SN_GGML_F16 ? 1
                  : p->type == SN_GGML_Q8_0 ? 7 : 32;

    /* head: adapter's score, else the base's score.weight */
    const struct sn_st_tensor *hs = NULL;
    if (ad.st && (rc = adapter_head(&ad, E, &hs, err)))
        goto done;
    if (hs) {
        if ((rc = tensor_f32(hs, &head, err)))
            goto done;
        used++;
    }
    if (!head && (rc = load_f32(&wts, dir, "score.weight", 1, E, true, &head, err)))
        goto done;
    if (!head) {
        rc = sn_err_set(err, SN_E_FORMAT, "%s: no reward head: neither %s has "
                        "score.weight (a Qwen2ForSequenceClassification checkpoint or an "
                        "adapter with a trained head is needed)", dir,
                        p->adapter_dir ? "the base nor the adapter" : "the base (no --adapter)");
        goto done;
    }

    /* metadata */
    const char *gname = p->name ? p->name : last_component(dir, name, sizeof name);
    const char *system = p->system ? p->system : SN_TEMPLATE_SYSTEM;
    rc = sn_gguf_writer_set_str(w, "general.architecture", "qwen2", err);
    if (!rc) rc = sn_gguf_writer_set_str(w, "general.name", gname, err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, "general.file_type", (uint32_t)file_type, err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, "qwen2.context_length", (uint32_t)c.ctx, err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, "qwen2.embedding_length", (uint32_t)E, err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, "qwen2.block_count", (uint32_t)c.L, err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, "qwen2.feed_forward_length", (uint32_t)F, err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, "qwen2.attention.head_count", (uint32_t)c.H, err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, "qwen2.attention.head_count_kv", (uint32_t)c.Hkv,
                                         err);
    if (!rc) rc = sn_gguf_writer_set_f32(w, "qwen2.rope.freq_base", (float)c.theta, err);
    if (!rc) rc = sn_gguf_writer_set_f32(w, "qwen2.attention.layer_norm_rms_epsilon",
                                         (float)c.eps, err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, "qwen2.pooling_type", 3, err); /* LAST */
    if (!rc) rc = sn_gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2", err);
    if (!rc) rc = sn_gguf_writer_set_str(w, "tokenizer.ggml.pre", tk.pre, err);
    if (!rc) rc = sn_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens",
                                             (const char *const *)tk.tokens, tk.n, err);
    if (!rc) rc = sn_gguf_writer_set_arr_i32(w, "tokenizer.ggml.token_type", tk.types, tk.n,
                                             err);
    if (!rc) rc = sn_gguf_writer_set_arr_str(w, "tokenizer.ggml.merges",
                                             (const char *const *)tk.merges, tk.n_merges, err);
    if (!rc && tk.bos >= 0)
        rc = sn_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)tk.bos, err);
    if (!rc && tk.eos >= 0)
        rc = sn_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)tk.eos, err);
    if (!rc && tk.pad >= 0)
        rc = sn_gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)tk.pad,
                                    err);
    if (!rc) rc = sn_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", false, err);
    if (!rc) rc = sn_gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", false, err);
    if (!rc) rc = sn_gguf_writer_set_str(w, "tokenizer.chat_template",
                                         tk.chat_template ? tk.chat_template : chatml_template,
                                         err);
    if (!rc) rc = sn_gguf_writer_set_arr_f32(w, SN_GGUF_KEY_HEAD, head, (size_t)E, err);
    if (!rc) rc = sn_gguf_writer_set_str(w, SN_GGUF_KEY_TEMPLATE, SN_TEMPLATE_ID, err);
    if (!rc) rc = sn_gguf_writer_set_str(w, SN_GGUF_KEY_SYSTEM, system, err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, SN_GGUF_KEY_MAX_LEN, max_len, err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, SN_GGUF_KEY_HIST_SENT,
                                         p->history_sentences ? p->history_sentences : 2, err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, SN_GGUF_KEY_HIST_CHARS,
                                         p->history_chars ? p->history_chars : 300, err);
    if (!rc) rc = sn_gguf_writer_set_str(w, SN_GGUF_KEY_TOK_HASH,
                                         p->tokenizer_hash ? p->tokenizer_hash : tk.hash, err);
    if (!rc) rc = sn_gguf_writer_set_bool(w, SN_GGUF_KEY_TOK_NFC, tk.nfc, err);
    if (!rc) rc = sn_gguf_writer_set_str(w, SN_GGUF_KEY_BASE, last_component(dir, hfn,
                                                                             sizeof hfn), err);
    if (!rc && p->adapter_dir)
        rc = sn_gguf_writer_set_str(w, SN_GGUF_KEY_ADAPTER, p->adapter_dir, err);
    if (!rc) rc = sn_gguf_writer_set_f32(w, SN_GGUF_KEY_LORA, ad.st ? (float)ad.scale : 0.0f,
                                         err);
    if (rc)
        goto done;

    /* tensors */
    float *f = NULL;
    if ((rc = load_f32(&wts, dir, "model.embed_tokens.weight", c.V, E, false, &f, err)) ||
        (rc = add(w, &bufs, "token_embd.weight", f, E, c.V, p->type, err)))
        goto done;
    for (int64_t l = 0; l < c.L; l++) {
        if (p->progress)
            p->progress(p->progress_user, (uint64_t)l, (uint64_t)c.L);
        for (size_t k = 0; k < N_LAYER_MAP; k++) {
            int64_t d0, d1;   /* HF [d1 = out, d0 = in]; d1 = 0 for vectors */
            layer_dims(layer_map[k].kind, E, Ekv, F, &d0, &d1);
            snprintf(name, sizeof name, "model.layers.%" PRId64 ".%s", l, layer_map[k].hf);
            bool bias = layer_map[k].kind >= 5;
            if ((rc = load_f32(&wts, dir, name, d1 ? d1 : d0, d1 ? d0 : 0, bias, &f, err)))
                goto done;
            if (!f)
                continue;  /* a Qwen2 without q/k/v biases (llama.cpp: optional) */
            if (ad.st && d1) {
                char module[512];
                size_t cut = strlen(name) - strlen(".weight");
                snprintf(module, sizeof module, "%.*s", (int)cut, name);
                if ((rc = adapter_merge(&ad, module, f, d1, d0, &used, err))) {
                    sn_free(f);
                    goto done;
                }
            }
            char gg[96];
            snprintf(gg, sizeof gg, "blk.%" PRId64 ".%s", l, layer_map[k].gg);
            if ((rc = add(w, &bufs, gg, f, d0, d1, p->type, err)))
                goto done;
        }
    }
    if (p->progress)
        p->progress(p->progress_user, (uint64_t)c.L, (uint64_t)c.L);
    if ((rc = load_f32(&wts, dir, "model.norm.weight", E, 0, false, &f, err)) ||
        (rc = add(w, &bufs, "output_norm.weight", f, E, 0, p->type, err)))
        goto done;
    if (p->head_as_logit) {
        float *o = sn_calloc((size_t)c.V * (size_t)E, sizeof *o);
        if (!o) {
            rc = sn_err_set(err, SN_E_NOMEM, "export: out of memory for output.weight");
            goto done;
        }
        memcpy(o, head, (size_t)E * sizeof *o);
        if ((rc = add(w, &bufs, "output.weight", o, E, c.V, p->type, err)))
            goto done;
    }
    if (ad.st && (rc = adapter_all_used(&ad, used, err)))
        goto done;
    rc = sn_gguf_writer_save(w, out_path, err);
done:
    out_bufs_free(&bufs);
    sn_free(head);
    sn_gguf_writer_free(w);
    tok_arrays_free(&tk);
    sn_st_close(ad.st);
    weights_close(&wts);
    return rc;
}

/* ---- the adapter alone: llama.cpp's LoRA GGUF ---------------------------------------------- */

/* The common inputs of the adapter-only, PEFT and merged-HF writers. */
struct sources {
    struct hf_config c;
    struct weights   wts;
    struct adapter   ad;
    int64_t          Ekv;
};

static int sources_open(const struct sn_export_params *p, bool need_adapter, struct sources *s,
                        struct sn_err *err)
{
    memset(s, 0, sizeof *s);
    if (!p || !p->base_dir)
        return sn_err_set(err, SN_E_ARG, "export: a base directory is needed");
    if (need_adapter && !p->adapter_dir)
        return sn_err_set(err, SN_E_ARG, "export: an adapter directory (--adapter) is needed");
    if (p->type != SN_GGML_F32 && p->type != SN_GGML_F16 && p->type != SN_GGML_BF16)
        return sn_err_set(err, SN_E_ARG, "export: type must be f32, f16 or bf16 (q8_0 is for the "
                          "merged GGUF only)");
    int rc = read_config(p->base_dir, &s->c, err);
    if (!rc)
        rc = weights_open(p->base_dir, &s->wts, err);
    if (!rc && p->adapter_dir)
        rc = adapter_open(p->adapter_dir, &s->ad, err);
    s->Ekv = s->c.Hkv * (s->c.E / s->c.H);
    return rc;
}

static void sources_close(struct sources *s)
{
    sn_st_close(s->ad.st);
    weights_close(&s->wts);
}

/* The adapter's LoRA pair of layer l's tensor layer_map[k], whose HF shape goes to [*d1, *d0]:
** *A and *B both NULL when the tensor is 1-D or the adapter does not adapt it. */
static int layer_pair(const struct sources *s, int64_t l, size_t k, int64_t *d0, int64_t *d1,
                      const struct sn_st_tensor **A, const struct sn_st_tensor **B,
                      struct sn_err *err)
{
    char name[512];
    *A = *B = NULL;
    layer_dims(layer_map[k].kind, s->c.E, s->Ekv, s->c.F, d0, d1);
    if (!*d1)
        return SN_OK;
    snprintf(name, sizeof name, "model.layers.%" PRId64 ".%.*s", l,
             (int)(strlen(layer_map[k].hf) - strlen(".weight")), layer_map[k].hf);
    return adapter_pair(&s->ad, name, *d1, *d0, A, B, err);
}

/* The n values of f as safetensors dtype dt: f itself for F32, else a converted copy that
** bufs keeps. */
static int st_data(struct out_bufs *bufs, const float *f, size_t n, enum sn_st_dtype dt,
                   const void **data, struct sn_err *err)
{
    *data = f;
    if (dt == SN_ST_F32)
        return SN_OK;
    uint16_t *h = sn_malloc(n * 2 + 1);
    int rc = h ? keep(bufs, h, err) : sn_err_set(err, SN_E_NOMEM, "export: out of memory");
    if (rc)
        return rc;
    for (size_t i = 0; i < n; i++)
        h[i] = dt == SN_ST_F16 ? sn_f32_to_f16(f[i]) : sn_f32_to_bf16(f[i]);
    *data = h;
    return SN_OK;
}

/* llama.cpp's adapter convention (docs/formats.md#gguf-lora-adapter): `<base tensor>.lora_a` ne {n_in, r} holds PEFT's A [r, in] as is, `.lora_b` ne
** {r, n_out} holds B [out, r] as is, and llama.cpp adds user_scale · alpha / r · B (A x) with
** r = lora_b.ne[0]. PEFT's rsLoRA scale alpha / sqrt(r) is folded in: alpha' = alpha · sqrt(r).
**
** The head rides along as a rank-1 pair on output.weight: lora_a = (h_adapter - h_base) /
** alpha' (ne {E, 1}), lora_b = e_0 (ne {1, V}), so alpha' / 1 · B A adds h_adapter - h_base to
** row 0 of output.weight and nothing elsewhere. Over a base GGUF exported with --head-as-logit
** from the same base directory (row 0 = h_base), llama.cpp's logit 0 is then the adapted
** reward (h_base = 0 when the base has no score.weight). The full head is also stored under
** sentinel.score.weight. */
int sn_export_adapter_gguf(const struct sn_export_params *p, const char *out_path,
                           struct sn_err *err)
{
    struct sources s;
    struct out_bufs bufs = {0};
    struct sn_gguf_writer *w = NULL;
    float *head = NULL, *hbase = NULL;
    size_t used = 0;
    char name[512], gg[128], hfn[256];
    if (!out_path)
        return sn_err_set(err, SN_E_ARG, "export: an output path is needed");
    int rc = sources_open(p, true, &s, err);
    if (!rc)
        rc = sn_gguf_writer_create(&w, err);
    if (rc)
        goto done;
    const int64_t E = s.c.E;
    const double alpha = s.ad.scale * s.ad.r;   /* llama.cpp: scale = alpha / r */
    const struct sn_st_tensor *hs = NULL;
    if ((rc = adapter_head(&s.ad, E, &hs, err)) ||
        (rc = load_f32(&s.wts, p->base_dir, "score.weight", 1, E, true, &hbase, err)))
        goto done;
    if (hs) {
        if ((rc = tensor_f32(hs, &head, err)))
            goto done;
        used++;
    }
    if (!head && !hbase) {
        rc = sn_err_set(err, SN_E_FORMAT, "%s: no reward head: neither the adapter nor the "
                        "base has score.weight", s.ad.path);
        goto done;
    }
    if (hs && !(alpha > 0)) {
        rc = sn_err_set(err, SN_E_FORMAT, "%s: lora_alpha must be positive to carry the head "
                        "as a LoRA pair (alpha = %g)", s.ad.path, alpha);
        goto done;
    }
    const char *gname = p->name ? p->name : last_component(p->adapter_dir, name, sizeof name);
    rc = sn_gguf_writer_set_str(w, "general.architecture", "qwen2", err);
    if (!rc) rc = sn_gguf_writer_set_str(w, "general.type", "adapter", err);
    if (!rc) rc = sn_gguf_writer_set_str(w, "general.name", gname, err);
    if (!rc) rc = sn_gguf_writer_set_str(w, "adapter.type", "lora", err);
    if (!rc) rc = sn_gguf_writer_set_f32(w, "adapter.lora.alpha", (float)alpha, err);
    if (!rc) rc = sn_gguf_writer_set_arr_f32(w, SN_GGUF_KEY_HEAD, head ? head : hbase,
                                             (size_t)E, err);
    if (!rc) rc = sn_gguf_writer_set_str(w, SN_GGUF_KEY_BASE, last_component(p->base_dir, hfn,
                                                                             sizeof hfn), err);
    if (!rc) rc = sn_gguf_writer_set_str(w, SN_GGUF_KEY_ADAPTER, p->adapter_dir, err);
    if (!rc) rc = sn_gguf_writer_set_f32(w, SN_GGUF_KEY_LORA, (float)s.ad.scale, err);
    if (rc)
        goto done;
    for (int64_t l = 0; l < s.c.L; l++)
        for (size_t k = 0; k < N_LAYER_MAP; k++) {
            int64_t d0, d1;
            const struct sn_st_tensor *A, *B;
            if ((rc = layer_pair(&s, l, k, &d0, &d1, &A, &B, err)))
                goto done;
            if (!A)
                continue;
            float *fa, *fb;
            if ((rc = tensor_f32(A, &fa, err)))
                goto done;
            snprintf(gg, sizeof gg, "blk.%" PRId64 ".%s.lora_a", l, layer_map[k].gg);
            if ((rc = add(w, &bufs, gg, fa, d0, s.ad.r, p->type, err)))   /* ne {in, r} */
                goto done;
            if ((rc = tensor_f32(B, &fb, err)))
                goto done;
            snprintf(gg, sizeof gg, "blk.%" PRId64 ".%s.lora_b", l, layer_map[k].gg);
            if ((rc = add(w, &bufs, gg, fb, s.ad.r, d1, p->type, err)))   /* ne {r, out} */
                goto done;
            used += 2;
        }
    if (hs) {   /* the head pair, in f32: its values are small after the division by alpha */
        float *a = sn_malloc((size_t)E * sizeof *a), *b = sn_calloc((size_t)s.c.V, sizeof *b);
        if (!a || !b) {
            sn_free(a);
            sn_free(b);
            rc = sn_err_set(err, SN_E_NOMEM, "export: out of memory");
            goto done;
        }
        for (int64_t i = 0; i < E; i++)
            a[i] = (float)(((double)head[i] - (hbase ? hbase[i] : 0.0)) / alpha);
        b[0] = 1.0f;
        if ((rc = add(w, &bufs, "output.weight.lora_a", a, E, 1, SN_GGML_F32, err))) {
            sn_free(b);
            goto done;
        }
        if ((rc = add(w, &bufs, "output.weight.lora_b", b, 1, s.c.V, SN_GGML_F32, err)))
            goto done;
    }
    if ((rc = adapter_all_used(&s.ad, used, err)))
        goto done;
    rc = sn_gguf_writer_save(w, out_path, err);
done:
    out_bufs_free(&bufs);
    sn_free(head);
    sn_free(hbase);
    sn_gguf_writer_free(w);
    sources_close(&s);
    return rc;
}

/* ---- the PEFT directory -------------------------------------------------------------------- */

/* Copy-and-validate: the trainer already writes PEFT's layout
** (docs/formats.md#adapter-checkpoint), so the adapter's tensors are checked against the base (every one a LoRA pair of
** a Qwen2 projection with the base's shapes, or the head [1, E]) and re-written unchanged in
** their own dtype, with the head under PEFT's name base_model.model.score.weight (the base's
** score.weight when the adapter has none: a SEQ_CLS adapter without it does not load in PEFT).
** adapter_config.json is the adapter's, with "score" added to modules_to_save. */
int sn_export_peft(const struct sn_export_params *p, const char *out_dir, struct sn_err *err)
{
    struct sources s;
    struct sn_st_writer *w = NULL;
    cJSON *cfg = NULL;
    float *hbase = NULL;
    size_t used = 0;
    char path[4096];
    if (!out_dir)
        return sn_err_set(err, SN_E_ARG, "export: an output directory is needed");
    int rc = sources_open(p, true, &s, err);
    if (!rc)
        rc = sn_st_writer_create(&w, err);
    if (rc)
        goto done;
    const int64_t E = s.c.E;
    for (int64_t l = 0; l < s.c.L; l++)
        for (size_t k = 0; k < N_LAYER_MAP; k++) {
            int64_t d0, d1;
            const struct sn_st_tensor *A, *B;
            if ((rc = layer_pair(&s, l, k, &d0, &d1, &A, &B, err)))
                goto done;
            if (!A)
                continue;
            if ((rc = sn_st_writer_add(w, A->name, A->dtype, 2, A->shape, A->data, err)) ||
                (rc = sn_st_writer_add(w, B->name, B->dtype, 2, B->shape, B->data, err)))
                goto done;
            used += 2;
        }
    const struct sn_st_tensor *hs = NULL;
    if ((rc = adapter_head(&s.ad, E, &hs, err)))
        goto done;
    if (hs) {
        rc = sn_st_writer_add(w, "base_model.model.score.weight", hs->dtype, 2, hs->shape,
                              hs->data, err);
        used++;
    } else {
        const int64_t shape[2] = {1, E};
        rc = load_f32(&s.wts, p->base_dir, "score.weight", 1, E, true, &hbase, err);
        if (!rc && !hbase)
            rc = sn_err_set(err, SN_E_FORMAT, "%s: no reward head: neither the adapter nor the "
                            "base has score.weight", s.ad.path);
        if (!rc)
            rc = sn_st_writer_add(w, "base_model.model.score.weight", SN_ST_F32, 2, shape,
                                  hbase, err);
    }
    if (!rc)
        rc = adapter_all_used(&s.ad, used, err);
    if (!rc)
        rc = sn_st_writer_set_metadata(w, "format", "pt", err);
    if (rc)
        goto done;
    /* adapter_config.json: the adapter's (adapter_open validated it), "score" saved */
    if ((rc = join(path, sizeof path, p->adapter_dir, "adapter_config.json", err)) ||
        (rc = sn_json_load(path, &cfg, err)))
        goto done;
    cJSON *mts = cJSON_GetObjectItemCaseSensitive(cfg, "modules_to_save"), *x;
    bool has_score = false;
    cJSON *list = cJSON_IsArray(mts) ? mts : NULL;
    cJSON_ArrayForEach(x, list)
        has_score |= cJSON_IsString(x) && !strcmp(x->valuestring, "score");
    if (!has_score) {
        if (!cJSON_IsArray(mts)) {
            cJSON_DeleteItemFromObjectCaseSensitive(cfg, "modules_to_save");
            mts = cJSON_AddArrayToObject(cfg, "modules_to_save");
        }
        if (!mts || !cJSON_AddItemToArray(mts, cJSON_CreateString("score"))) {
            rc = sn_err_set(err, SN_E_NOMEM, "export: out of memory");
            goto done;
        }
    }
    if ((rc = sn_mkdirs(out_dir, err)) ||
        (rc = join(path, sizeof path, out_dir, "adapter_model.safetensors", err)) ||
        (rc = sn_st_writer_save(w, path, err)) ||
        (rc = join(path, sizeof path, out_dir, "adapter_config.json", err)))
        goto done;
    rc = sn_json_save(path, cfg, err);
done:
    cJSON_Delete(cfg);
    sn_free(hbase);
    sn_st_writer_free(w);
    sources_close(&s);
    return rc;
}

/* ---- the merged Hugging Face directory ----------------------------------------------------- */

/* Copies dir/name to out/name (atomically) if it exists; `required` makes its absence an error. */
static int copy_file(const char *dir, const char *out, const char *name, bool required,
                     struct sn_err *err)
{
    char src[4096], dst[4096];
    char *data = NULL;
    size_t n = 0;
    int rc = join(src, sizeof src, dir, name, err);
    if (!rc)
        rc = join(dst, sizeof dst, out, name, err);
    if (rc)
        return rc;
    if (!sn_path_exists(src))
        return required ? sn_err_set(err, SN_E_IO, "%s: not found", src) : SN_OK;
    rc = sn_file_read(src, (size_t)1 << 30, &data, &n, err);
    if (!rc)
        rc = sn_atomic_write(dst, data, n, err);
    sn_free(data);
    return rc;
}

static int set_json(cJSON *j, const char *key, cJSON *v, struct sn_err *err)
{
    if (!v)
        return sn_err_set(err, SN_E_NOMEM, "export: out of memory");
    cJSON_DeleteItemFromObjectCaseSensitive(j, key);
    cJSON_AddItemToObject(j, key, v);
    return SN_OK;
}

/* A Qwen2ForSequenceClassification directory with the LoRA merged (W + s · B A in f32, as in
** the GGUF) and the head as score.weight [1, E]: config.json is the base's with architectures,
** num_labels = 1 (id2label/label2id of one label), pad_token_id (the base's, else the
** tokenizer's <|endoftext|>, else <|im_end|>; transformers pools at the last non-pad token),
** torch_dtype of the written type and no tied lm_head; model.safetensors with the HF names;
** the base's tokenizer files copied. */
int sn_export_hf(const struct sn_export_params *p, const char *out_dir, struct sn_err *err)
{
    struct sources s;
    struct sn_st_writer *w = NULL;
    struct out_bufs bufs = {0};
    struct tok_arrays tk = {0};
    cJSON *cfg = NULL;
    float *head = NULL, *f = NULL;
    size_t used = 0;
    char name[512], path[4096];
    if (!out_dir)
        return sn_err_set(err, SN_E_ARG, "export: an output directory is needed");
    int rc = sources_open(p, false, &s, err);
    if (!rc)
        rc = read_tokenizer(p->base_dir, s.c.V, &tk, err);
    if (!rc)
        rc = sn_st_writer_create(&w, err);
    if (rc)
        goto done;
    const int64_t E = s.c.E;
    const enum sn_st_dtype dt = p->type == SN_GGML_F16 ? SN_ST_F16
                              : p->type == SN_GGML_BF16 ? SN_ST_BF16 : SN_ST_F32;
    /* head: the adapter's, else the base's */
    const struct sn_st_tensor *hs = NULL;
    if (s.ad.st && (rc = adapter_head(&s.ad, E, &hs, err)))
        goto done;
    if (hs) {
        if ((rc = tensor_f32(hs, &head, err)))
            goto done;
        used++;
    } else if ((rc = load_f32(&s.wts, p->base_dir, "score.weight", 1, E, true, &head, err))) {
        goto done;
    }
    if (!head) {
        rc = sn_err_set(err, SN_E_FORMAT, "%s: no reward head: neither the base nor the "
                        "adapter has score.weight", p->base_dir);
        goto done;
    }
    /* tensors, in HF names and shapes; converted like the GGUF's matrices (1-D too: HF keeps
    ** one dtype per checkpoint) */
    for (int64_t l = -1; l <= s.c.L; l++) {   /* -1: embeddings, L: the final norm */
        size_t nk = (l < 0 || l == s.c.L) ? 1 : N_LAYER_MAP;
        for (size_t k = 0; k < nk; k++) {
            int64_t d0 = E, d1 = 0;   /* HF [d1 = out, d0 = in]; d1 = 0 for vectors */
            bool lora = false, optional = false;
            if (l < 0) {
                d1 = s.c.V;
                snprintf(name, sizeof name, "model.embed_tokens.weight");
            } else if (l == s.c.L) {
                snprintf(name, sizeof name, "model.norm.weight");
            } else {
                layer_dims(layer_map[k].kind, E, s.Ekv, s.c.F, &d0, &d1);
                lora = d1 != 0;
                optional = layer_map[k].kind >= 5;   /* q/k/v biases */
                snprintf(name, sizeof name, "model.layers.%" PRId64 ".%s", l, layer_map[k].hf);
            }
            if ((rc = load_f32(&s.wts, p->base_dir, name, d1 ? d1 : d0, d1 ? d0 : 0, optional,
                               &f, err)))
                goto done;
            if (!f)
                continue;
            if ((rc = keep(&bufs, f, err)))
                goto done;
            if (lora && s.ad.st) {
                char module[512];
                snprintf(module, sizeof module, "%.*s", (int)(strlen(name) - strlen(".weight")),
                         name);
                if ((rc = adapter_merge(&s.ad, module, f, d1, d0, &used, err)))
                    goto done;
            }
            const int64_t shape[2] = {d1 ? d1 : d0, d0};
            const void *data;
            if ((rc = st_data(&bufs, f, (size_t)(d1 ? d1 : 1) * (size_t)d0, dt, &data, err)) ||
                (rc = sn_st_writer_add(w, name, dt, d1 ? 2 : 1, shape, data, err)))
                goto done;
        }
    }
    {
        const int64_t shape[2] = {1, E};
        const void *data;
        if ((rc = st_data(&bufs, head, (size_t)E, dt, &data, err)) ||
            (rc = sn_st_writer_add(w, "score.weight", dt, 2, shape, data, err)))
            goto done;
    }
    if (s.ad.st && (rc = adapter_all_used(&s.ad, used, err)))
        goto done;
    if ((rc = sn_st_writer_set_metadata(w, "format", "pt", err)))
        goto done;
    /* config.json */
    if ((rc = join(path, sizeof path, p->base_dir, "config.json", err)) ||
        (rc = sn_json_load(path, &cfg, err)))
        goto done;
    const cJSON *pad = cJSON_GetObjectItemCaseSensitive(cfg, "pad_token_id");
    double pad_id = cJSON_IsNumber(pad) && pad->valuedouble >= 0 &&
                    pad->valuedouble < (double)s.c.V ? pad->valuedouble
                  : tk.pad >= 0 ? tk.pad : tk.eos;
    if (pad_id < 0) {
        rc = sn_err_set(err, SN_E_FORMAT, "%s: no pad_token_id, and the tokenizer has neither "
                        "<|endoftext|> nor <|im_end|>; transformers needs one to pool", path);
        goto done;
    }
    cJSON *arch = cJSON_CreateArray(), *i2l = cJSON_CreateObject(), *l2i = cJSON_CreateObject();
    if (arch)
        cJSON_AddItemToArray(arch, cJSON_CreateString("Qwen2ForSequenceClassification"));
    if (i2l)
        cJSON_AddStringToObject(i2l, "0", "LABEL_0");
    if (l2i)
        cJSON_AddNumberToObject(l2i, "LABEL_0", 0);
    if ((rc = set_json(cfg, "architectures", arch, err)) ||
        (rc = set_json(cfg, "num_labels", cJSON_CreateNumber(1), err)) ||
        (rc = set_json(cfg, "id2label", i2l, err)) ||
        (rc = set_json(cfg, "label2id", l2i, err)) ||
        (rc = set_json(cfg, "pad_token_id", cJSON_CreateNumber(pad_id), err)) ||
        (rc = set_json(cfg, "tie_word_embeddings", cJSON_CreateFalse(), err)) ||
        (rc = set_json(cfg, "torch_dtype", cJSON_CreateString(
                           dt == SN_ST_F16 ? "float16" : dt == SN_ST_BF16 ? "bfloat16"
                                                                          : "float32"), err)))
        goto done;
    if ((rc = sn_mkdirs(out_dir, err)) ||
        (rc = join(path, sizeof path, out_dir, "model.safetensors", err)) ||
        (rc = sn_st_writer_save(w, path, err)) ||
        (rc = join(path, sizeof path, out_dir, "config.json", err)) ||
        (rc = sn_json_save(path, cfg, err)) ||
        (rc = copy_file(p->base_dir, out_dir, "tokenizer.json", true, err)) ||
        (rc = copy_file(p->base_dir, out_dir, "tokenizer_config.json", false, err)) ||
        (rc = copy_file(p->base_dir, out_dir, "special_tokens_map.json", false, err)) ||
        (rc = copy_file(p->base_dir, out_dir, "vocab.json", false, err)) ||
        (rc = copy_file(p->base_dir, out_dir, "merges.txt", false, err)))
        goto done;
done:
    out_bufs_free(&bufs);
    sn_free(head);
    cJSON_Delete(cfg);
    tok_arrays_free(&tk);
    sn_st_writer_free(w);
    sources_close(&s);
    return rc;
}
