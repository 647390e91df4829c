/* train/adapter.c: PEFT-compatible adapter directories (adapter_config.json +
** adapter_model.safetensors) for a LoRA + score-head reward model. Names, shapes and config
** fields follow PEFT (ecosystem.md §2; docs/formats.md#adapter-checkpoint). */
#include "train/train_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define HEAD_NAME "base_model.model.score.weight"

/* adapter_config.json with PEFT's field names; keys inserted in sorted order (PEFT writes
** json.dumps(sort_keys=True)). */
static int config_json(const struct sn_lora_config *c, const char *base, bool head,
                       cJSON **out, struct sn_err *err)
{
    cJSON *j = cJSON_CreateObject();
    cJSON *tm = cJSON_CreateArray(), *mts = cJSON_CreateArray();
    bool ok = j && tm && mts;
    for (int t = 0; ok && t < SN_LORA_TARGET_COUNT; t++)
        if (c->targets & (1u << t))
            ok = cJSON_AddItemToArray(tm, cJSON_CreateString(sn_lora_target_name(t)));
    if (ok && head)
        ok = cJSON_AddItemToArray(mts, cJSON_CreateString("score"));
    if (ok) {
        ok = cJSON_AddObjectToObject(j, "alpha_pattern") &&
             cJSON_AddNullToObject(j, "auto_mapping") &&
             cJSON_AddStringToObject(j, "base_model_name_or_path", base ? base : "") &&
             cJSON_AddStringToObject(j, "bias", "none") &&
             cJSON_AddBoolToObject(j, "fan_in_fan_out", false) &&
             cJSON_AddBoolToObject(j, "inference_mode", true) &&
             cJSON_AddBoolToObject(j, "init_lora_weights", true) &&
             cJSON_AddNullToObject(j, "layers_pattern") &&
             cJSON_AddNullToObject(j, "layers_to_transform") &&
             cJSON_AddNumberToObject(j, "lora_alpha", c->alpha) &&
             cJSON_AddNumberToObject(j, "lora_dropout", c->dropout);
        if (ok) {
            cJSON_AddItemToObject(j, "modules_to_save", mts);
            mts = NULL;
        }
        ok = ok && cJSON_AddStringToObject(j, "peft_type", "LORA") &&
             cJSON_AddNumberToObject(j, "r", c->r) && cJSON_AddObjectToObject(j, "rank_pattern") &&
             cJSON_AddNullToObject(j, "revision");
        if (ok) {
            cJSON_AddItemToObject(j, "target_modules", tm);
            tm = NULL;
        }
        ok = ok && cJSON_AddStringToObject(j, "task_type", "SEQ_CLS") &&
             cJSON_AddBoolToObject(j, "use_dora", false) &&
             cJSON_AddBoolToObject(j, "use_rslora", c->use_rslora);
    }
    cJSON_Delete(tm);
    cJSON_Delete(mts);
    if (!ok) {
        cJSON_Delete(j);
        return sn_err_set(err, SN_E_NOMEM, "adapter_config.json: out of memory");
    }
    *out = j;
    return SN_OK;
}

int sn_model_adapter_save(const struct sn_model *mc, const char *dir,
                          const char *base_model_name_or_path, struct sn_err *err)
{
    struct sn_model *m = (struct sn_model *)mc; /* trainable_params caches names; no change */
    if (!m->has_lora && !m->head)
        return sn_err_set(err, SN_E_ARG, "%s: nothing to save (no LoRA adapter and no head)",
                          dir);
    /* task_type SEQ_CLS without base_model.model.score.weight: PEFT's loader fails with a
    ** KeyError on the missing head */
    if (!m->head)
        return sn_err_set(err, SN_E_ARG, "%s: the model has no score head; a SEQ_CLS adapter "
                          "without 'base_model.model.score.weight' cannot be loaded by PEFT "
                          "(initialise the head first)", dir);
    struct sn_lora_config c = m->has_lora ? m->lora_cfg : sn_lora_default_config();
    if (!m->has_lora)
        c.targets = 0;
    int rc = sn_mkdirs(dir, err);
    if (rc)
        return rc;
    struct sn_param *ps = NULL;
    size_t n = 0;
    struct sn_st_writer *w = NULL;
    float **bufs = NULL;
    cJSON *j = NULL;
    char path[4096];
    rc = sn_model_trainable_params(m, &ps, &n, err);
    if (!rc)
        rc = sn_st_writer_create(&w, err);
    if (!rc) {
        bufs = sn_calloc(n + 1, sizeof *bufs);
        if (!bufs)
            rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", dir);
    }
    for (size_t i = 0; !rc && i < n; i++) {
        int64_t shape[2];
        int nd = sn_tensor_shape(ps[i].t, shape, 2);
        size_t numel = (size_t)sn_tensor_numel(ps[i].t);
        bufs[i] = sn_malloc(numel * sizeof(float) + 1);
        if (!bufs[i]) {
            rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", dir);
            break;
        }
        /* PEFT keeps adapters in f32 (autocast_adapter_dtype) */
        rc = sn_aten_to_host(ps[i].t, bufs[i], SN_DTYPE_F32, numel, err);
        if (!rc)
            rc = sn_st_writer_add(w, ps[i].name, SN_ST_F32, nd, shape, bufs[i], err);
    }
    if (!rc)
        rc = sn_st_writer_set_metadata(w, "format", "pt", err);
    if (!rc)
        rc = sn_path_join(path, sizeof path, dir, "adapter_model.safetensors", err);
    if (!rc)
        rc = sn_st_writer_save(w, path, err);
    if (!rc)
        rc = config_json(&c, base_model_name_or_path, m->head != NULL, &j, err);
    if (!rc)
        rc = sn_path_join(path, sizeof path, dir, "adapter_config.json", err);
    if (!rc)
        rc = sn_json_save(path, j, err);
    cJSON_Delete(j);
    for (size_t i = 0; bufs && i < n; i++)
        sn_free(bufs[i]);
    sn_free(bufs);
    sn_free(ps);
    sn_st_writer_free(w);
    return rc;
}

/* Fields of PEFT's LoraConfig that change what the adapter computes and that the loader does
** not implement: each refused by name when set, rather than scored as a plain LoRA. */
static int refuse_unimplemented(const cJSON *j, const char *path, struct sn_err *err)
{
    static const struct {
        const char *key, *what;
    } set_means[] = {
        {"alora_invocation_tokens", "activated LoRA (applied only after the invocation tokens)"},
        {"layer_replication", "layer replication (a base model with duplicated layers)"},
        {"target_parameters", "LoRA on nn.Parameter targets (e.g. MoE experts)"},
        {"use_qalora", "QA-LoRA (quantization-aware pooling of the input)"},
        {"lora_bias", "a trained bias on lora_B"},
        {"use_dora", "DoRA (weight-decomposed LoRA)"},
        {"fan_in_fan_out", "transposed (Conv1D-style) weights"},
    };
    for (size_t i = 0; i < sizeof set_means / sizeof set_means[0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, set_means[i].key);
        bool set = v && !cJSON_IsNull(v) && !cJSON_IsFalse(v) &&
                   !(cJSON_IsArray(v) && !v->child) && !(cJSON_IsObject(v) && !v->child);
        if (set)
            return sn_err_set(err, SN_E_UNSUPPORTED, "%s: '%s' is set: %s is not supported",
                              path, set_means[i].key, set_means[i].what);
    }
    /* init_lora_weights: true/false/"gaussian"/"orthogonal" only choose the initial A and B;
    ** PiSSA, OLoRA, EVA, LoftQ and CorDA also rewrite the base weights */
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "init_lora_weights");
    if (v && !cJSON_IsNull(v) && !cJSON_IsBool(v) &&
        !(cJSON_IsString(v) && (!strcmp(v->valuestring, "gaussian") ||
                                !strcmp(v->valuestring, "orthogonal"))))
        return sn_err_set(err, SN_E_UNSUPPORTED, "%s: 'init_lora_weights' is %s%s%s: that "
                          "initialisation changes the base model's weights, which the adapter "
                          "file does not carry; not supported", path,
                          cJSON_IsString(v) ? "'" : "", cJSON_IsString(v) ? v->valuestring
                                                                         : "not a bool",
                          cJSON_IsString(v) ? "'" : "");
    return SN_OK;
}

/* Parses adapter_config.json into c; *has_score: "score" in modules_to_save; *need_head: the
** task type is not SEQ_CLS (TRL's recipe), so the file must carry the head. */
static int config_parse(const cJSON *j, const char *path, struct sn_lora_config *c,
                        bool *has_score, bool *need_head, struct sn_err *err)
{
    memset(c, 0, sizeof *c);
    *has_score = false;
    *need_head = false;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "peft_type");
    if (!cJSON_IsString(v) || strcmp(v->valuestring, "LORA"))
        return sn_err_set(err, SN_E_FORMAT, "%s: 'peft_type' must be \"LORA\"", path);
    /* SEQ_CLS, or TRL's documented recipe: LoraConfig(modules_to_save=["score"]) with no
    ** task_type or CAUSAL_LM, on a sequence-classification model; the head must then be in
    ** the file (checked by the caller) */
    v = cJSON_GetObjectItemCaseSensitive(j, "task_type");
    if (v && !cJSON_IsNull(v) &&
        (!cJSON_IsString(v) ||
         (strcmp(v->valuestring, "SEQ_CLS") && strcmp(v->valuestring, "CAUSAL_LM"))))
        return sn_err_set(err, SN_E_FORMAT, "%s: 'task_type' must be \"SEQ_CLS\" (a sequence-"
                          "classification reward model), or \"CAUSAL_LM\" or absent with the "
                          "trained head saved (modules_to_save [\"score\"])", path);
    *need_head = !cJSON_IsString(v) || strcmp(v->valuestring, "SEQ_CLS") != 0;
    int rc = refuse_unimplemented(j, path, err);
    if (rc)
        return rc;
    v = cJSON_GetObjectItemCaseSensitive(j, "r");
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 1 ||
        v->valuedouble > 65536)
        return sn_err_set(err, SN_E_FORMAT, "%s: 'r' must be an integer in 1..65536", path);
    c->r = (int)v->valuedouble;
    v = cJSON_GetObjectItemCaseSensitive(j, "lora_alpha");
    if (!cJSON_IsNumber(v))
        return sn_err_set(err, SN_E_FORMAT, "%s: 'lora_alpha' must be a number", path);
    c->alpha = v->valuedouble;
    v = cJSON_GetObjectItemCaseSensitive(j, "lora_dropout");
    c->dropout = cJSON_IsNumber(v) ? v->valuedouble : 0.0;
    v = cJSON_GetObjectItemCaseSensitive(j, "use_rslora");
    if (v && !cJSON_IsNull(v) && !cJSON_IsBool(v))
        return sn_err_set(err, SN_E_FORMAT, "%s: 'use_rslora' must be true or false", path);
    c->use_rslora = cJSON_IsTrue(v); /* scale alpha / sqrt(r) (lora/lora.h) */
    v = cJSON_GetObjectItemCaseSensitive(j, "bias");
    if (v && (!cJSON_IsString(v) || strcmp(v->valuestring, "none")))
        return sn_err_set(err, SN_E_UNSUPPORTED, "%s: 'bias' must be \"none\"", path);
    static const char *const must_empty[] = {"rank_pattern", "alpha_pattern"};
    for (size_t i = 0; i < 2; i++) {
        v = cJSON_GetObjectItemCaseSensitive(j, must_empty[i]);
        if (v && !cJSON_IsNull(v) && !(cJSON_IsObject(v) && !v->child))
            return sn_err_set(err, SN_E_UNSUPPORTED, "%s: '%s' is not empty; per-layer ranks are "
                              "not supported", path, must_empty[i]);
    }
    v = cJSON_GetObjectItemCaseSensitive(j, "layers_to_transform");
    if (v && !cJSON_IsNull(v))
        return sn_err_set(err, SN_E_UNSUPPORTED, "%s: 'layers_to_transform' is set; adapters on "
                          "a subset of layers are not supported", path);
    v = cJSON_GetObjectItemCaseSensitive(j, "target_modules");
    if (cJSON_IsString(v) && !strcmp(v->valuestring, "all-linear")) {
        c->targets = SN_LORA_ALL_TARGETS;
    } else if (cJSON_IsArray(v)) {
        for (const cJSON *e = v->child; e; e = e->next) {
            enum sn_lora_target t;
            if (!cJSON_IsString(e) || !sn_lora_target_parse(e->valuestring, &t))
                return sn_err_set(err, SN_E_FORMAT, "%s: target_modules entry '%s' is not one of "
                                  "q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj",
                                  path, cJSON_IsString(e) ? e->valuestring : "?");
            c->targets |= 1u << t;
        }
    } else {
        return sn_err_set(err, SN_E_FORMAT, "%s: 'target_modules' must be a list of module names",
                          path);
    }
    /* PEFT's SEQ_CLS wrapper extends the list: ["score", "classifier", "score"] is normal. */
    v = cJSON_GetObjectItemCaseSensitive(j, "modules_to_save");
    if (cJSON_IsArray(v)) {
        for (const cJSON *e = v->child; e; e = e->next)
            if (cJSON_IsString(e) && !strcmp(e->valuestring, "score"))
                *has_score = true;
    }
    return sn_lora_config_check(c, err) ? sn_err_wrap(err, "%s", path) : SN_OK;
}

int sn_model_adapter_load(struct sn_model *m, const char *dir, struct sn_err *err)
{
    char cpath[4096], spath[4096];
    int rc = sn_path_join(cpath, sizeof cpath, dir, "adapter_config.json", err);
    if (!rc)
        rc = sn_path_join(spath, sizeof spath, dir, "adapter_model.safetensors", err);
    if (rc)
        return rc;
    cJSON *j = NULL;
    struct sn_lora_config c;
    bool has_score = false, need_head = false;
    rc = sn_json_load(cpath, &j, err);
    if (!rc)
        rc = config_parse(j, cpath, &c, &has_score, &need_head, err);
    cJSON_Delete(j);
    if (rc)
        return rc;
    struct sn_st_file *f = NULL;
    rc = sn_st_open(spath, &f, err);
    if (rc)
        return rc;
    bool *used = sn_calloc(sn_st_count(f) + 1, sizeof *used);
    struct sn_tensor *head = NULL, *tmp = NULL;
    if (!used) {
        rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", spath);
        goto done;
    }
    rc = sn_model_lora_attach(m, &c, err);
    bool g = sn_aten_no_grad_enter();
    for (int64_t i = 0; !rc && i < m->cfg.num_hidden_layers; i++) {
        for (int t = 0; !rc && t < SN_LORA_TARGET_COUNT; t++) {
            struct sn_lora_linear *l = m->layers[i].lora[t];
            if (!l)
                continue;
            int64_t of, inf;
            sn_model_proj_shape(&m->cfg, (enum sn_lora_target)t, &of, &inf);
            for (int ab = 0; !rc && ab < 2; ab++) {
                char nm[160];
                snprintf(nm, sizeof nm, "base_model.model.model.layers.%" PRId64
                         ".%s.lora_%c.weight", i, sn_model_proj_path(t), ab ? 'B' : 'A');
                const struct sn_st_tensor *st = sn_st_find(f, nm);
                if (!st) {
                    rc = sn_err_set(err, SN_E_FORMAT, "%s: missing tensor '%s' (target_modules "
                                    "lists %s)", spath, nm, sn_lora_target_name(t));
                    break;
                }
                used[st - sn_st_get(f, 0)] = true;
                int64_t shape[2] = {ab ? of : c.r, ab ? c.r : inf};
                rc = sn_model_load_tensor(st, spath, 2, shape, &m->p, &tmp, err);
                if (!rc)
                    rc = sn_aten_copy_(ab ? l->B : l->A, tmp, err);
                sn_tensor_free(tmp);
                tmp = NULL;
            }
        }
    }
    if (!rc) {
        const struct sn_st_tensor *st = sn_st_find(f, HEAD_NAME);
        if (st) {
            used[st - sn_st_get(f, 0)] = true;
            int64_t shape[2] = {1, m->cfg.hidden_size};
            rc = sn_model_load_tensor(st, spath, 2, shape, &m->p, &head, err);
        } else if (has_score) {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: modules_to_save lists 'score' but there is no "
                            "tensor '" HEAD_NAME "'", spath);
        } else if (need_head) {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: task_type is not SEQ_CLS and there is no "
                            "trained head '" HEAD_NAME "': a causal-LM adapter is not a reward "
                            "model (train with modules_to_save=[\"score\"] or task_type "
                            "SEQ_CLS)", spath);
        }
    }
    sn_aten_no_grad_exit(g);
    for (size_t i = 0; !rc && i < sn_st_count(f); i++)
        if (!used[i])
            rc = sn_err_set(err, SN_E_FORMAT, "%s: unexpected tensor '%s' (not a LoRA factor of "
                            "a targeted module nor the score head)", spath, sn_st_get(f, i)->name);
    if (!rc && head) {
        rc = sn_aten_set_requires_grad(head, true, err);
        if (!rc) {
            sn_tensor_free(m->head);
            m->head = head;
            head = NULL;
            sn_model_names_free(m);
        }
    }
    if (rc) /* never leave a half-loaded adapter behind */
        sn_model_lora_detach(m);
done:
    sn_tensor_free(head);
    sn_free(used);
    sn_st_close(f);
    return rc;
}
