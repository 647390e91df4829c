/* hf/config.c: Qwen2 config.json parsing, validation and writing (hf/hf.h; field meanings:
** transformers Qwen2Config, docs/formats.md#model-directory). The one parser of config.json:
** the trainer and `sentinel export` read it through here. */
#include "hf/hf.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int64_t sn_model_config_head_dim(const struct sn_model_config *c)
{
    return c->num_attention_heads > 0 ? c->hidden_size / c->num_attention_heads : 0;
}

int sn_model_config_check(const struct sn_model_config *c, const char *name, struct sn_err *err)
{
    /* upper bounds (hf/hf.h): the tighter of the trainer's and the exporter's former limits */
    const struct {
        const char *key;
        int64_t     v, max;
    } pos[] = {
        {"hidden_size", c->hidden_size, (int64_t)1 << 16},
        {"intermediate_size", c->intermediate_size, (int64_t)1 << 18},
        {"num_hidden_layers", c->num_hidden_layers, 512},
        {"num_attention_heads", c->num_attention_heads, (int64_t)1 << 12},
        {"num_key_value_heads", c->num_key_value_heads, (int64_t)1 << 12},
        {"vocab_size", c->vocab_size, (int64_t)1 << 24},
        {"max_position_embeddings", c->max_position_embeddings, (int64_t)1 << 24},
    };
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++) {
        if (pos[i].v < 1)
            return sn_err_set(err, SN_E_FORMAT, "%s: '%s' = %lld (expected a positive integer)",
                              name, pos[i].key, (long long)pos[i].v);
        if (pos[i].v > pos[i].max)
            return sn_err_set(err, SN_E_FORMAT, "%s: '%s' = %lld (at most %lld)", name,
                              pos[i].key, (long long)pos[i].v, (long long)pos[i].max);
    }
    if (c->hidden_size % c->num_attention_heads)
        return sn_err_set(err, SN_E_FORMAT, "%s: 'num_attention_heads' = %lld does not divide "
                          "'hidden_size' = %lld", name, (long long)c->num_attention_heads,
                          (long long)c->hidden_size);
    if (c->num_key_value_heads > c->num_attention_heads ||
        c->num_attention_heads % c->num_key_value_heads)
        return sn_err_set(err, SN_E_FORMAT, "%s: 'num_key_value_heads' = %lld must divide "
                          "'num_attention_heads' = %lld (grouped-query attention)", name,
                          (long long)c->num_key_value_heads, (long long)c->num_attention_heads);
    if (sn_model_config_head_dim(c) % 2)
        return sn_err_set(err, SN_E_FORMAT, "%s: head dim hidden_size / num_attention_heads = "
                          "%lld must be even (rotary embedding)", name,
                          (long long)sn_model_config_head_dim(c));
    if (!(c->rms_norm_eps > 0.0) || !isfinite(c->rms_norm_eps) || c->rms_norm_eps > 1.0)
        return sn_err_set(err, SN_E_FORMAT, "%s: 'rms_norm_eps' = %g (expected in (0, 1])",
                          name, c->rms_norm_eps);
    if (!(c->rope_theta > 0.0) || !isfinite(c->rope_theta))
        return sn_err_set(err, SN_E_FORMAT, "%s: 'rope_theta' = %g (expected > 0)", name,
                          c->rope_theta);
    if (c->pad_token_id < -1 || c->pad_token_id >= c->vocab_size)
        return sn_err_set(err, SN_E_FORMAT, "%s: 'pad_token_id' = %lld outside the vocabulary "
                          "(%lld)", name, (long long)c->pad_token_id, (long long)c->vocab_size);
    if (strcmp(c->torch_dtype, "float32") && strcmp(c->torch_dtype, "bfloat16") &&
        strcmp(c->torch_dtype, "float16"))
        return sn_err_set(err, SN_E_FORMAT, "%s: 'torch_dtype' = '%s' (expected float32, "
                          "bfloat16 or float16)", name, c->torch_dtype);
    return SN_OK;
}

static int get_req_int(const cJSON *j, const char *name, const char *key, int64_t *out,
                       struct sn_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!v)
        return sn_err_set(err, SN_E_FORMAT, "%s: missing required field '%s'", name, key);
    if (!cJSON_IsNumber(v) || floor(v->valuedouble) != v->valuedouble ||
        fabs(v->valuedouble) > 9007199254740992.0)
        return sn_err_set(err, SN_E_FORMAT, "%s: '%s' must be an integer", name, key);
    *out = (int64_t)v->valuedouble;
    return SN_OK;
}

static int get_req_double(const cJSON *j, const char *name, const char *key, double *out,
                          struct sn_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!v)
        return sn_err_set(err, SN_E_FORMAT, "%s: missing required field '%s'", name, key);
    if (!cJSON_IsNumber(v))
        return sn_err_set(err, SN_E_FORMAT, "%s: '%s' must be a number", name, key);
    *out = v->valuedouble;
    return SN_OK;
}

int sn_model_config_parse(const cJSON *j, const char *name, struct sn_model_config *c,
                          struct sn_err *err)
{
    memset(c, 0, sizeof *c);
    if (!cJSON_IsObject(j))
        return sn_err_set(err, SN_E_FORMAT, "%s: not a JSON object", name);
    int rc = get_req_int(j, name, "hidden_size", &c->hidden_size, err);
    if (!rc)
        rc = get_req_int(j, name, "intermediate_size", &c->intermediate_size, err);
    if (!rc)
        rc = get_req_int(j, name, "num_hidden_layers", &c->num_hidden_layers, err);
    if (!rc)
        rc = get_req_int(j, name, "num_attention_heads", &c->num_attention_heads, err);
    /* null: transformers' Qwen2Config then uses num_attention_heads (no GQA) */
    const cJSON *kv = cJSON_GetObjectItemCaseSensitive(j, "num_key_value_heads");
    if (!rc && cJSON_IsNull(kv))
        c->num_key_value_heads = c->num_attention_heads;
    else if (!rc)
        rc = get_req_int(j, name, "num_key_value_heads", &c->num_key_value_heads, err);
    if (!rc)
        rc = get_req_int(j, name, "vocab_size", &c->vocab_size, err);
    if (!rc)
        rc = get_req_int(j, name, "max_position_embeddings", &c->max_position_embeddings, err);
    if (!rc)
        rc = get_req_double(j, name, "rms_norm_eps", &c->rms_norm_eps, err);
    if (rc)
        return rc;
    /* RoPE: a top-level rope_theta (transformers < 5) and/or rope_parameters {rope_theta,
    ** rope_type} (current transformers); only the plain ("default") rotation is implemented */
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(j, "rope_parameters");
    if (rp && !cJSON_IsNull(rp) && !cJSON_IsObject(rp))
        return sn_err_set(err, SN_E_FORMAT, "%s: 'rope_parameters' must be an object", name);
    if (cJSON_IsObject(rp)) {
        const cJSON *rt = cJSON_GetObjectItemCaseSensitive(rp, "rope_type");
        if (!rt)
            rt = cJSON_GetObjectItemCaseSensitive(rp, "type");
        if (rt && (!cJSON_IsString(rt) || strcmp(rt->valuestring, "default")))
            return sn_err_set(err, SN_E_UNSUPPORTED, "%s: 'rope_parameters.rope_type' is '%s'; "
                              "only \"default\" RoPE is supported (no scaled or extended "
                              "context variants)", name, cJSON_IsString(rt) ? rt->valuestring
                                                                          : "?");
    }
    if (cJSON_GetObjectItemCaseSensitive(j, "rope_theta") || !cJSON_IsObject(rp))
        rc = get_req_double(j, name, "rope_theta", &c->rope_theta, err);
    else if (!cJSON_GetObjectItemCaseSensitive(rp, "rope_theta"))
        rc = sn_err_set(err, SN_E_FORMAT, "%s: missing required field 'rope_theta' (neither at "
                        "the top level nor in 'rope_parameters')", name);
    else
        rc = get_req_double(rp, name, "rope_theta", &c->rope_theta, err);
    if (rc)
        return rc;
    /* an explicit head_dim must be the one the shapes imply: hidden_size / num_attention_heads */
    const cJSON *hd = cJSON_GetObjectItemCaseSensitive(j, "head_dim");
    if (hd && !cJSON_IsNull(hd)) {
        int64_t h = 0;
        if ((rc = get_req_int(j, name, "head_dim", &h, err)))
            return rc;
        if (c->num_attention_heads > 0 && h * c->num_attention_heads != c->hidden_size)
            return sn_err_set(err, SN_E_UNSUPPORTED, "%s: 'head_dim' = %lld differs from "
                              "hidden_size / num_attention_heads = %lld / %lld; only models "
                              "whose head_dim is that quotient are supported", name,
                              (long long)h, (long long)c->hidden_size,
                              (long long)c->num_attention_heads);
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "tie_word_embeddings");
    if (v && !cJSON_IsBool(v))
        return sn_err_set(err, SN_E_FORMAT, "%s: 'tie_word_embeddings' must be true or false",
                          name);
    c->tie_word_embeddings = v && cJSON_IsTrue(v);
    c->pad_token_id = -1;
    v = cJSON_GetObjectItemCaseSensitive(j, "pad_token_id");
    if (v && !cJSON_IsNull(v)) {
        rc = get_req_int(j, name, "pad_token_id", &c->pad_token_id, err);
        if (rc)
            return rc;
    }
    /* transformers >= 4.56 writes "dtype"; older versions "torch_dtype". */
    v = cJSON_GetObjectItemCaseSensitive(j, "torch_dtype");
    if (!v || cJSON_IsNull(v))
        v = cJSON_GetObjectItemCaseSensitive(j, "dtype");
    snprintf(c->torch_dtype, sizeof c->torch_dtype, "float32");
    if (v && !cJSON_IsNull(v)) {
        if (!cJSON_IsString(v) || strlen(v->valuestring) >= sizeof c->torch_dtype)
            return sn_err_set(err, SN_E_FORMAT, "%s: 'torch_dtype' must be \"float32\", "
                              "\"bfloat16\" or \"float16\"", name);
        snprintf(c->torch_dtype, sizeof c->torch_dtype, "%s", v->valuestring);
    }
    v = cJSON_GetObjectItemCaseSensitive(j, "model_type");
    if (v && (!cJSON_IsString(v) || strcmp(v->valuestring, "qwen2")))
        return sn_err_set(err, SN_E_UNSUPPORTED, "%s: 'model_type' is '%s'; only \"qwen2\" is "
                          "supported", name, cJSON_IsString(v) ? v->valuestring : "?");
    v = cJSON_GetObjectItemCaseSensitive(j, "hidden_act");
    if (v && (!cJSON_IsString(v) || strcmp(v->valuestring, "silu")))
        return sn_err_set(err, SN_E_UNSUPPORTED, "%s: 'hidden_act' must be \"silu\" (SwiGLU)",
                          name);
    v = cJSON_GetObjectItemCaseSensitive(j, "rope_scaling");
    const cJSON *vt = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "rope_type") : NULL;
    if (cJSON_IsObject(v) && !vt)
        vt = cJSON_GetObjectItemCaseSensitive(v, "type");
    bool plain = cJSON_IsString(vt) && !strcmp(vt->valuestring, "default");
    if (v && !cJSON_IsNull(v) && !plain)
        return sn_err_set(err, SN_E_UNSUPPORTED, "%s: 'rope_scaling' is set; only plain RoPE "
                          "is supported", name);
    v = cJSON_GetObjectItemCaseSensitive(j, "use_sliding_window");
    if (v && cJSON_IsTrue(v))
        return sn_err_set(err, SN_E_UNSUPPORTED, "%s: 'use_sliding_window' is true; sliding-"
                          "window attention is not supported", name);
    return sn_model_config_check(c, name, err);
}

int sn_model_config_load(const char *path, struct sn_model_config *c, struct sn_err *err)
{
    cJSON *j = NULL;
    int rc = sn_json_load(path, &j, err);
    if (rc)
        return rc;
    rc = sn_model_config_parse(j, path, c, err);
    cJSON_Delete(j);
    return rc;
}

int sn_model_config_to_json(const struct sn_model_config *c, cJSON **out, struct sn_err *err)
{
    *out = NULL;
    cJSON *j = cJSON_CreateObject();
    cJSON *arch = cJSON_CreateArray();
    bool ok = j && arch;
    if (ok) {
        cJSON_AddItemToArray(arch, cJSON_CreateString("Qwen2ForSequenceClassification"));
        cJSON_AddItemToObject(j, "architectures", arch);
        arch = NULL;
        ok = cJSON_AddStringToObject(j, "model_type", "qwen2") &&
             cJSON_AddStringToObject(j, "hidden_act", "silu") &&
             cJSON_AddNumberToObject(j, "hidden_size", (double)c->hidden_size) &&
             cJSON_AddNumberToObject(j, "intermediate_size", (double)c->intermediate_size) &&
             cJSON_AddNumberToObject(j, "num_hidden_layers", (double)c->num_hidden_layers) &&
             cJSON_AddNumberToObject(j, "num_attention_heads",
                                     (double)c->num_attention_heads) &&
             cJSON_AddNumberToObject(j, "num_key_value_heads",
                                     (double)c->num_key_value_heads) &&
             cJSON_AddNumberToObject(j, "vocab_size", (double)c->vocab_size) &&
             cJSON_AddNumberToObject(j, "max_position_embeddings",
                                     (double)c->max_position_embeddings) &&
             cJSON_AddNumberToObject(j, "rms_norm_eps", c->rms_norm_eps) &&
             cJSON_AddNumberToObject(j, "rope_theta", c->rope_theta) &&
             cJSON_AddBoolToObject(j, "tie_word_embeddings", c->tie_word_embeddings) &&
             cJSON_AddStringToObject(j, "torch_dtype", c->torch_dtype) &&
             cJSON_AddBoolToObject(j, "use_sliding_window", false) &&
             cJSON_AddNullToObject(j, "rope_scaling") &&
             cJSON_AddNumberToObject(j, "initializer_range", 0.02) &&
             cJSON_AddNumberToObject(j, "attention_dropout", 0.0);
        /* one label: transformers derives num_labels = 1 from id2label */
        cJSON *id2 = ok ? cJSON_AddObjectToObject(j, "id2label") : NULL;
        cJSON *l2i = ok ? cJSON_AddObjectToObject(j, "label2id") : NULL;
        ok = id2 && l2i && cJSON_AddStringToObject(id2, "0", "LABEL_0") &&
             cJSON_AddNumberToObject(l2i, "LABEL_0", 0);
        /* always: transformers pools at the rightmost token that is not pad_token_id and
        ** refuses batches > 1 without one (sn_model_save_hf refuses an unknown id) */
        if (ok)
            ok = c->pad_token_id >= 0
                     ? cJSON_AddNumberToObject(j, "pad_token_id", (double)c->pad_token_id) != NULL
                     : cJSON_AddNullToObject(j, "pad_token_id") != NULL;
    }
    if (!ok) {
        cJSON_Delete(j);
        cJSON_Delete(arch);
        return sn_err_set(err, SN_E_NOMEM, "config.json: out of memory");
    }
    *out = j;
    return SN_OK;
}
