/* train/adapter.c: PEFT-compatible adapter directories (adapter_config.json +
** adapter_model.safetensors) for a LoRA + score-head reward model. Names, shapes and config
** fields follow PEFT (docs/formats.md#adapter-checkpoint); adapter_config.json is parsed by
** hf/peft.c (hf/hf.h). */
#include "train/train_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define HEAD_NAME "base_model.model.score.weight"

/* hf/ parses target_modules into bits in lora/'s order (hf/hf.h, sn_hf_lora_target_name). */
_Static_assert(SN_HF_LORA_TARGETS == SN_LORA_TARGET_COUNT, "hf/ and lora/ list the same "
               "projections");

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

int sn_model_adapter_load(struct sn_model *m, const char *dir, struct sn_err *err)
{
    char cpath[4096], spath[4096];
    int rc = sn_path_join(cpath, sizeof cpath, dir, "adapter_config.json", err);
    if (!rc)
        rc = sn_path_join(spath, sizeof spath, dir, "adapter_model.safetensors", err);
    if (rc)
        return rc;
    struct sn_hf_adapter_config hc;
    rc = sn_hf_adapter_config_load(dir, &hc, err);
    if (rc)
        return rc;
    /* hf/ names the targets in lora/'s order (hf/hf.h) */
    struct sn_lora_config c = {.r = hc.r, .alpha = hc.alpha, .dropout = hc.dropout,
                               .targets = hc.targets, .use_rslora = hc.use_rslora};
    const bool has_score = hc.has_score, need_head = hc.need_head;
    if (sn_lora_config_check(&c, err))
        return sn_err_wrap(err, "%s", cpath);
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
