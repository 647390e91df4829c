/* hf/peft.c: adapter_config.json, PEFT's LoraConfig (hf/hf.h;
** docs/formats.md#adapter-checkpoint). The one parser of the file: the trainer
** (train/adapter.c) and `sentinel export` read adapters through here, so both refuse the same
** configurations. */
#include "hf/hf.h"

#include <math.h>
#include <string.h>

/* lora/'s enum sn_lora_target order (train/adapter.c checks the count). */
static const char *const target_names[SN_HF_LORA_TARGETS] = {
    "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj",
};

const char *sn_hf_lora_target_name(int t)
{
    return t >= 0 && t < SN_HF_LORA_TARGETS ? target_names[t] : NULL;
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

int sn_hf_adapter_config_parse(const cJSON *j, const char *path,
                               struct sn_hf_adapter_config *c, struct sn_err *err)
{
    memset(c, 0, sizeof *c);
    if (!cJSON_IsObject(j))
        return sn_err_set(err, SN_E_FORMAT, "%s: not a JSON object", path);
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
    c->need_head = !cJSON_IsString(v) || strcmp(v->valuestring, "SEQ_CLS") != 0;
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
        c->targets = (1u << SN_HF_LORA_TARGETS) - 1u;
    } else if (cJSON_IsArray(v)) {
        for (const cJSON *e = v->child; e; e = e->next) {
            int t = 0;
            while (t < SN_HF_LORA_TARGETS && cJSON_IsString(e) &&
                   strcmp(e->valuestring, target_names[t]))
                t++;
            if (!cJSON_IsString(e) || t == SN_HF_LORA_TARGETS)
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
                c->has_score = true;
    }
    /* the ranges lora/ checks (sn_lora_config_check), with its messages */
    if (!(c->alpha > 0.0) || !isfinite(c->alpha))
        rc = sn_err_set(err, SN_E_ARG, "lora: lora_alpha = %g (expected > 0)", c->alpha);
    else if (!(c->dropout >= 0.0 && c->dropout < 1.0))
        rc = sn_err_set(err, SN_E_ARG, "lora: lora_dropout = %g (expected in [0, 1))",
                        c->dropout);
    else if (c->targets == 0)
        rc = sn_err_set(err, SN_E_ARG, "lora: target_modules must name at least one of "
                        "q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj");
    if (rc)
        return sn_err_wrap(err, "%s", path);
    c->scale = c->alpha / (c->use_rslora ? sqrt((double)c->r) : (double)c->r);
    return SN_OK;
}

int sn_hf_adapter_config_load(const char *dir, struct sn_hf_adapter_config *c,
                              struct sn_err *err)
{
    char path[4096];
    cJSON *j = NULL;
    memset(c, 0, sizeof *c);
    int rc = sn_path_join(path, sizeof path, dir, "adapter_config.json", err);
    if (!rc)
        rc = sn_json_load(path, &j, err);
    if (!rc)
        rc = sn_hf_adapter_config_parse(j, path, c, err);
    cJSON_Delete(j);
    return rc;
}
