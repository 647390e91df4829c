/* train/hf.c: Hugging Face model directories (config.json + model.safetensors, or shards listed
** by model.safetensors.index.json) into and out of struct sn_model. Layout:
** docs/formats.md#model-directory. config.json, the index and the safetensors files are parsed
** by hf/ (hf/hf.h); weights are read through mmap, so only the tensors we use are touched. */
#include "train/train_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int host_dtype(const struct sn_st_tensor *t, enum sn_dtype *out)
{
    switch (t->dtype) {
    case SN_ST_F32: *out = SN_DTYPE_F32; return 0;
    case SN_ST_F64: *out = SN_DTYPE_F64; return 0;
    case SN_ST_BF16: *out = SN_DTYPE_BF16; return 0;
    case SN_ST_F16: *out = SN_DTYPE_F16; return 0;
    default: return -1;
    }
}

static bool shape_is(const struct sn_st_tensor *t, int ndim, const int64_t *shape)
{
    if (t->n_dims != ndim)
        return false;
    for (int d = 0; d < ndim; d++)
        if (t->shape[d] != shape[d])
            return false;
    return true;
}

static void shape_str(char *buf, size_t n, int ndim, const int64_t *shape)
{
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < ndim && k < n; d++)
        k += (size_t)snprintf(buf + k, n - k, d ? ", %" PRId64 : "%" PRId64, shape[d]);
    if (k < n)
        snprintf(buf + k, n - k, "]");
}

/* Copies one tensor (checked: float dtype, exact shape) into a new model tensor. */
int sn_model_load_tensor(const struct sn_st_tensor *t, const char *file, int ndim,
                         const int64_t *shape, const struct sn_model_params *p,
                         struct sn_tensor **out, struct sn_err *err)
{
    enum sn_dtype hd;
    if (host_dtype(t, &hd))
        return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': dtype %s (expected F32, BF16, F16 "
                          "or F64)", file, t->name, sn_st_dtype_name(t->dtype));
    if (!shape_is(t, ndim, shape)) {
        char want[96], got[96];
        shape_str(want, sizeof want, ndim, shape);
        shape_str(got, sizeof got, t->n_dims, t->shape);
        return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': shape %s, expected %s from the "
                          "config", file, t->name, got, want);
    }
    return sn_aten_from_host(t->data, hd, shape, ndim, p->dtype, p->device, out, err);
}

/* A token name in tokenizer_config.json: a string or {"content": ...}. */
static const char *token_name(const cJSON *v)
{
    if (cJSON_IsObject(v))
        v = cJSON_GetObjectItemCaseSensitive(v, "content");
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The pad id a Hugging Face user gets when config.json has none (TRL: the tokenizer's pad
** token, else its eos): tokenizer_config.json's pad_token, else eos_token, looked up in its
** added_tokens_decoder; else config.json's eos_token_id (an integer or the first of a list).
** -1 when none is found or it is outside the vocabulary. */
static int64_t pad_from_dir(const char *dir, int64_t vocab)
{
    char path[4096];
    struct sn_err e = { 0 };
    cJSON *j = NULL;
    int64_t id = -1;
    if (!sn_path_join(path, sizeof path, dir, "tokenizer_config.json", &e) &&
        sn_path_exists(path) && !sn_json_load(path, &j, &e)) {
        const char *want = token_name(cJSON_GetObjectItemCaseSensitive(j, "pad_token"));
        if (!want)
            want = token_name(cJSON_GetObjectItemCaseSensitive(j, "eos_token"));
        const cJSON *dec = cJSON_GetObjectItemCaseSensitive(j, "added_tokens_decoder"), *t;
        cJSON_ArrayForEach(t, dec)
        {
            const char *nm = token_name(t);
            char *end = NULL;
            long long k = t->string ? strtoll(t->string, &end, 10) : -1;
            if (want && nm && !strcmp(nm, want) && end && !*end && k >= 0) {
                id = k;
                break;
            }
        }
    }
    cJSON_Delete(j);
    j = NULL;
    if (id < 0 && !sn_path_join(path, sizeof path, dir, "config.json", &e) &&
        !sn_json_load(path, &j, &e)) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "eos_token_id");
        if (cJSON_IsArray(v))
            v = cJSON_GetArrayItem(v, 0);
        if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 9e15 &&
            v->valuedouble == (double)(int64_t)v->valuedouble)
            id = (int64_t)v->valuedouble;
    }
    cJSON_Delete(j);
    return id < vocab ? id : -1;
}

int sn_model_set_pad_token_id(struct sn_model *m, int64_t id, struct sn_err *err)
{
    if (id < 0 || id >= m->cfg.vocab_size)
        return sn_err_set(err, SN_E_ARG, "pad_token_id %lld outside the vocabulary (%lld)",
                          (long long)id, (long long)m->cfg.vocab_size);
    m->cfg.pad_token_id = id;
    return SN_OK;
}

int sn_model_open_hf(const char *dir, const struct sn_model_params *p, struct sn_model **out,
                     struct sn_err *err)
{
    *out = NULL;
    char path[4096];
    struct sn_model_config c;
    int rc = sn_path_join(path, sizeof path, dir, "config.json", err);
    if (!rc)
        rc = sn_model_config_load(path, &c, err);
    if (rc)
        return rc;
    if (c.pad_token_id < 0)
        c.pad_token_id = pad_from_dir(dir, c.vocab_size);
    struct sn_model *m = NULL;
    rc = sn_model_alloc(&c, p, &m, err);
    if (rc)
        return rc;
    struct sn_hf_weights *w = NULL;
    struct sn_model_slot *s = NULL;
    size_t n = 0;
    rc = sn_hf_weights_open(dir, &w, err);
    if (!rc)
        rc = sn_model_slots(m, true, &s, &n, err);
    for (size_t i = 0; !rc && i < n; i++) {
        const struct sn_st_tensor *t = sn_hf_weights_find(w, s[i].name);
        if (!t && !strncmp(s[i].name, "model.", 6))
            t = sn_hf_weights_find(w, s[i].name + 6); /* a bare Qwen2Model checkpoint */
        if (!t) {
            if (s[i].kind == SN_SLOT_HEAD)
                continue; /* a causal-LM checkpoint: no head until an adapter brings one */
            char want[96];
            shape_str(want, sizeof want, s[i].ndim, s[i].shape);
            rc = sn_err_set(err, SN_E_FORMAT, "%s: missing tensor '%s' (expected shape %s)", dir,
                            s[i].name, want);
            break;
        }
        rc = sn_model_load_tensor(t, dir, s[i].ndim, s[i].shape, p, s[i].dst, err);
    }
    /* lm_head: no LM use here, but a wrong shape means the file does not match the config */
    if (!rc) {
        const struct sn_st_tensor *t = sn_hf_weights_find(w, "lm_head.weight");
        int64_t shp[2] = {c.vocab_size, c.hidden_size};
        if (t && !shape_is(t, 2, shp))
            rc = sn_err_set(err, SN_E_FORMAT, "%s: tensor 'lm_head.weight' has the wrong shape "
                            "(expected [%" PRId64 ", %" PRId64 "])", dir, c.vocab_size,
                            c.hidden_size);
        /* the LM objective trains an untied head (docs/train.md "Domain-adaptive
        ** pretraining (objective lm)"); a tied config's copy is the embedding already */
        else if (t && p->keep_lm_head && !c.tie_word_embeddings)
            rc = sn_model_load_tensor(t, dir, 2, shp, p, &m->lm_head, err);
    }
    /* anything else is not a Qwen2 weight we know: refuse rather than silently ignore */
    for (size_t f = 0; !rc && f < sn_hf_weights_n_files(w); f++) {
        const struct sn_st_file *sf = sn_hf_weights_file(w, f);
        for (size_t j = 0; j < sn_st_count(sf); j++) {
            const char *nm = sn_st_get(sf, j)->name;
            if (sn_hf_weights_used(w, f, j) || strstr(nm, "rotary_emb.inv_freq"))
                continue;
            rc = sn_err_set(err, SN_E_FORMAT, "%s: unexpected tensor '%s' (not part of a Qwen2 "
                            "model with this config)", sn_st_path(sf), nm);
            break;
        }
    }
    if (!rc && m->head)
        rc = sn_aten_set_requires_grad(m->head, true, err);
    sn_free(s);
    sn_hf_weights_close(w);
    if (rc) {
        sn_model_free(m);
        return rc;
    }
    *out = m;
    return SN_OK;
}

int sn_model_save_hf(const struct sn_model *mc, const char *dir, struct sn_err *err)
{
    struct sn_model *m = (struct sn_model *)mc; /* slots hand out tensor addresses; unchanged */
    const struct sn_model_config *c = &m->cfg;
    enum sn_st_dtype sdt = SN_ST_F32;
    enum sn_dtype hdt = SN_DTYPE_F32;
    if (!strcmp(c->torch_dtype, "bfloat16"))
        sdt = SN_ST_BF16, hdt = SN_DTYPE_BF16;
    else if (!strcmp(c->torch_dtype, "float16"))
        sdt = SN_ST_F16, hdt = SN_DTYPE_F16;
    if (c->pad_token_id < 0)
        return sn_err_set(err, SN_E_ARG, "%s: the model has no pad_token_id; set the tokenizer's "
                          "pad id (else its eos id) with sn_model_set_pad_token_id: Hugging Face "
                          "pools the reward at the rightmost token that is not the pad id and "
                          "cannot score batches without one", dir);
    int rc = sn_mkdirs(dir, err);
    if (rc)
        return rc;
    char path[4096];
    cJSON *j = NULL;
    rc = sn_model_config_to_json(c, &j, err);
    if (!rc)
        rc = sn_path_join(path, sizeof path, dir, "config.json", err);
    if (!rc)
        rc = sn_json_save(path, j, err);
    cJSON_Delete(j);
    if (rc)
        return rc;
    struct sn_model_slot *s = NULL;
    size_t n = 0;
    struct sn_st_writer *w = NULL;
    void **bufs = NULL;
    rc = sn_model_slots(m, m->head != NULL, &s, &n, err);
    if (!rc)
        rc = sn_st_writer_create(&w, err);
    if (!rc) {
        bufs = sn_calloc(n + 1, sizeof *bufs);
        if (!bufs)
            rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", dir);
    }
    /* A merged adapter must not leak into the base weights on disk. */
    bool merged = false;
    for (int64_t i = 0; i < c->num_hidden_layers; i++)
        for (int t = 0; t < SN_LORA_TARGET_COUNT; t++)
            merged |= m->layers[i].lora[t] && m->layers[i].lora[t]->merged;
    if (!rc && merged)
        rc = sn_err_set(err, SN_E_ARG, "%s: unmerge the LoRA adapters before saving the base "
                        "model", dir);
    for (size_t i = 0; !rc && i < n; i++) {
        size_t numel = (size_t)sn_tensor_numel(*s[i].dst);
        bufs[i] = sn_malloc(numel * sn_st_dtype_size(sdt) + 1);
        if (!bufs[i]) {
            rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", dir);
            break;
        }
        rc = sn_aten_to_host(*s[i].dst, bufs[i], hdt, numel, err);
        if (!rc)
            rc = sn_st_writer_add(w, s[i].name, sdt, s[i].ndim, s[i].shape, bufs[i], err);
    }
    if (!rc)
        rc = sn_st_writer_set_metadata(w, "format", "pt", err);
    if (!rc)
        rc = sn_path_join(path, sizeof path, dir, "model.safetensors", err);
    if (!rc)
        rc = sn_st_writer_save(w, path, err);
    for (size_t i = 0; bufs && i < n; i++)
        sn_free(bufs[i]);
    sn_free(bufs);
    sn_free(s);
    sn_st_writer_free(w);
    return rc;
}
