/* tests/test_train_peft.c: PEFT adapter files as other tools write them (train/adapter.c,
** lora/lora.c; docs/peft.md):
**   - TRL's documented recipe, LoraConfig(modules_to_save=["score"]) with no task_type or
**     CAUSAL_LM, loads when base_model.model.score.weight is present, and is refused without it;
**   - a model without a head cannot be saved as a SEQ_CLS adapter (PEFT would fail to load it);
**   - LoraConfig fields that change the computation and are not implemented are refused by
**     name (alora_invocation_tokens, init_lora_weights pissa/olora/eva/loftq/corda,
**     layer_replication, use_qalora, target_parameters, lora_bias);
**   - rsLoRA: scale alpha / sqrt(r), checked against the formula through the rewards: an rsLoRA
**     adapter (alpha, r) scores exactly like a plain one with alpha' = alpha · sqrt(r), and
**     unlike the plain one with the same alpha. */
#include <math.h>
#include <string.h>

#include "train/train_internal.h"
#include "tests/testutil.h"

static char root[512];

static void copy_st(const char *src, const char *dst, const char *drop);

static const char *pj(const char *dir, const char *name)
{
    static char buf[4][1024];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* Copies adapter dir src to dst, applying edit to adapter_config.json (cJSON in place) and
** leaving out tensor `drop` (NULL: none). */
static void clone_adapter(const char *src, const char *dst, void (*edit)(cJSON *, const void *),
                          const void *arg, const char *drop)
{
    struct sn_err err = {0};
    CHECK(sn_test_sh("rm -rf '%s' && mkdir -p '%s'", dst, dst) == 0);
    cJSON *j = NULL;
    CHECK(sn_json_load(pj(src, "adapter_config.json"), &j, &err) == SN_OK);
    if (edit)
        edit(j, arg);
    CHECK(sn_json_save(pj(dst, "adapter_config.json"), j, &err) == SN_OK);
    cJSON_Delete(j);
    copy_st(pj(src, "adapter_model.safetensors"), pj(dst, "adapter_model.safetensors"), drop);
}

/* Copies a safetensors file, leaving out tensor `drop` (NULL: none). */
static void copy_st(const char *src, const char *dst, const char *drop)
{
    struct sn_err err = {0};
    struct sn_st_file *f = NULL;
    struct sn_st_writer *w = sn_test_st_copy(src, drop, &f);
    if (!w)
        return;
    CHECK(sn_st_writer_set_metadata(w, "format", "pt", &err) == SN_OK);
    CHECK(sn_st_writer_save(w, dst, &err) == SN_OK);
    sn_st_writer_free(w);
    sn_st_close(f);
}

struct kv {
    const char *key, *json; /* json NULL: delete the key */
};
static void set_key(cJSON *j, const void *arg)
{
    const struct kv *kv = arg;
    cJSON_DeleteItemFromObjectCaseSensitive(j, kv->key);
    if (kv->json)
        cJSON_AddItemToObject(j, kv->key, cJSON_Parse(kv->json));
}
static void set_two(cJSON *j, const void *arg)
{
    const struct kv *kv = arg;
    set_key(j, &kv[0]);
    set_key(j, &kv[1]);
}

static int try_load(struct sn_model *m, const char *dir, struct sn_err *err)
{
    sn_err_clear(err);
    int rc = sn_model_adapter_load(m, dir, err);
    if (rc == SN_OK)
        sn_model_lora_detach(m);
    return rc;
}

static void rewards(struct sn_model *m, float r[3])
{
    static const int32_t ids[12] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8};
    struct sn_model_batch b = {ids, NULL, 3, 4};
    struct sn_err err = {0};
    CHECK_MSG(sn_model_forward_host(m, &b, r, NULL, &err) == SN_OK, "%s", err.msg);
}

int main(void)
{
    snprintf(root, sizeof root, "%s", sn_test_dir("train_peft"));
    struct sn_err err = {0};
    struct sn_model_config c = sn_model_config_tiny(100);
    c.pad_token_id = 0;
    struct sn_model_params p = sn_model_default_params();
    p.seed = 11;
    p.init_std = 0.1;
    struct sn_model *m = NULL, *m2 = NULL;
    char base[600], a1[600], bad[600];
    snprintf(base, sizeof base, "%s/base", root);
    snprintf(a1, sizeof a1, "%s/a1", root);
    snprintf(bad, sizeof bad, "%s/bad", root);
    CHECK(sn_model_create(&c, &p, &m, &err) == SN_OK);
    if (!m)
        return sn_test_done();
    CHECK(sn_model_save_hf(m, base, &err) == SN_OK);

    struct sn_lora_config lc = sn_lora_default_config();
    lc.r = 4;
    lc.alpha = 8;
    lc.use_rslora = true;
    /* no head: nothing PEFT could load as SEQ_CLS */
    char nohead[600];
    snprintf(nohead, sizeof nohead, "%s/nohead", root);
    CHECK(sn_test_sh("mkdir -p '%s' && cp '%s' '%s'", nohead, pj(base, "config.json"),
                     pj(nohead, "config.json")) == 0);
    copy_st(pj(base, "model.safetensors"), pj(nohead, "model.safetensors"), "score.weight");
    struct sn_model *m0 = NULL;
    CHECK_MSG(sn_model_open_hf(nohead, &p, &m0, &err) == SN_OK, "%s", err.msg);
    if (m0) {
        CHECK(!sn_model_has_head(m0));
        CHECK(sn_model_lora_attach(m0, &lc, &err) == SN_OK);
        sn_err_clear(&err);
        CHECK(sn_model_adapter_save(m0, a1, "sentinel/tiny", &err) == SN_E_ARG);
        CHECK_MSG(strstr(err.msg, "score") != NULL, "%s", err.msg);
        sn_model_free(m0);
    }
    CHECK(sn_model_lora_attach(m, &lc, &err) == SN_OK);

    /* rsLoRA scale */
    struct sn_lora_config plain = lc;
    plain.use_rslora = false;
    CHECK(fabs(sn_lora_scale(&lc) - 8.0 / 2.0) < 1e-12);
    CHECK(fabs(sn_lora_scale(&plain) - 8.0 / 4.0) < 1e-12);
    CHECK(m->layers[0].lora[SN_LORA_Q_PROJ] &&
          fabs(m->layers[0].lora[SN_LORA_Q_PROJ]->scale - 4.0) < 1e-12);

    CHECK(sn_model_init_head(m, 1.0, 4, &err) == SN_OK);
    struct sn_param *ps = NULL;
    size_t np = 0;
    CHECK(sn_model_trainable_params(m, &ps, &np, &err) == SN_OK);
    bool g = sn_aten_no_grad_enter();
    for (size_t i = 0; i < np; i++)
        if (strstr(ps[i].name, "lora_B"))
            CHECK(sn_aten_add_scalar_(ps[i].t, 0.05 * (double)(i + 1), &err) == SN_OK);
    sn_aten_no_grad_exit(g);
    free(ps);
    CHECK_MSG(sn_model_adapter_save(m, a1, "sentinel/tiny", &err) == SN_OK, "%s", err.msg);
    CHECK(sn_test_sh("grep -q '\"use_rslora\": true' '%s'", pj(a1, "adapter_config.json")) == 0);
    float r_rs[3], r_load[3], r_equiv[3], r_plain[3];
    rewards(m, r_rs);

    CHECK(sn_model_open_hf(base, &p, &m2, &err) == SN_OK);
    if (!m2)
        return sn_test_done();
    CHECK_MSG(sn_model_adapter_load(m2, a1, &err) == SN_OK, "%s", err.msg);
    CHECK(sn_model_lora_config(m2) && sn_model_lora_config(m2)->use_rslora);
    rewards(m2, r_load);
    sn_model_lora_detach(m2);
    for (int i = 0; i < 3; i++)
        CHECK_MSG(r_load[i] == r_rs[i], "row %d: %g vs %g", i, r_load[i], r_rs[i]);
    /* plain LoRA with alpha' = alpha · sqrt(r) = 16: the same scale, the same rewards */
    struct kv eq[2] = {{"use_rslora", "false"}, {"lora_alpha", "16"}};
    clone_adapter(a1, bad, set_two, eq, NULL);
    CHECK(sn_model_adapter_load(m2, bad, &err) == SN_OK);
    rewards(m2, r_equiv);
    sn_model_lora_detach(m2);
    /* plain LoRA with the same alpha: half the update, different rewards */
    struct kv pl = {"use_rslora", "false"};
    clone_adapter(a1, bad, set_key, &pl, NULL);
    CHECK(sn_model_adapter_load(m2, bad, &err) == SN_OK);
    rewards(m2, r_plain);
    sn_model_lora_detach(m2);
    int differ = 0;
    for (int i = 0; i < 3; i++) {
        CHECK_MSG(fabsf(r_equiv[i] - r_rs[i]) <= 1e-5f * (1 + fabsf(r_rs[i])),
                  "row %d: rsLoRA %g vs plain alpha 16 %g", i, r_rs[i], r_equiv[i]);
        differ += fabsf(r_plain[i] - r_rs[i]) > 1e-4f;
    }
    CHECK_MSG(differ > 0, "the scale made no difference to the rewards");

    /* TRL's recipe: no task_type, or CAUSAL_LM, with the head saved */
    struct kv tt_none = {"task_type", NULL}, tt_null = {"task_type", "null"},
              tt_causal = {"task_type", "\"CAUSAL_LM\""};
    const struct kv *ok_tt[] = {&tt_none, &tt_null, &tt_causal};
    for (size_t i = 0; i < 3; i++) {
        clone_adapter(a1, bad, set_key, ok_tt[i], NULL);
        CHECK_MSG(try_load(m2, bad, &err) == SN_OK, "task_type case %zu: %s", i, err.msg);
    }
    /* ... and refused without the head, with modules_to_save not listing it either */
    struct kv tt_nohead[2] = {{"task_type", "\"CAUSAL_LM\""}, {"modules_to_save", "null"}};
    clone_adapter(a1, bad, set_two, tt_nohead, "base_model.model.score.weight");
    CHECK(try_load(m2, bad, &err) == SN_E_FORMAT);
    CHECK_MSG(strstr(err.msg, "base_model.model.score.weight") && strstr(err.msg, "task_type"),
              "%s", err.msg);
    CHECK(!sn_model_has_lora(m2));
    /* a SEQ_CLS adapter without the head still loads (the base model's head is used) */
    struct kv mts_null = {"modules_to_save", "null"};
    clone_adapter(a1, bad, set_key, &mts_null, "base_model.model.score.weight");
    CHECK_MSG(try_load(m2, bad, &err) == SN_OK, "%s", err.msg);

    /* fields that change the computation: refused by name */
    static const struct kv refused[] = {
        {"alora_invocation_tokens", "[151644, 77091]"},
        {"init_lora_weights", "\"pissa\""},
        {"init_lora_weights", "\"pissa_niter_16\""},
        {"init_lora_weights", "\"olora\""},
        {"init_lora_weights", "\"eva\""},
        {"init_lora_weights", "\"loftq\""},
        {"init_lora_weights", "\"corda\""},
        {"layer_replication", "[[0, 2], [1, 2]]"},
        {"use_qalora", "true"},
        {"target_parameters", "[\"mlp.experts.gate_up_proj\"]"},
        {"lora_bias", "true"},
        {"use_dora", "true"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        clone_adapter(a1, bad, set_key, &refused[i], NULL);
        CHECK_MSG(try_load(m2, bad, &err) == SN_E_UNSUPPORTED, "%s = %s loaded",
                  refused[i].key, refused[i].json);
        CHECK_MSG(strstr(err.msg, refused[i].key) != NULL, "%s: '%s'", refused[i].key, err.msg);
    }
    /* ... and their harmless values accepted */
    static const struct kv harmless[] = {
        {"alora_invocation_tokens", "null"}, {"init_lora_weights", "false"},
        {"init_lora_weights", "\"gaussian\""}, {"layer_replication", "null"},
        {"use_qalora", "false"}, {"target_parameters", "null"}, {"target_parameters", "[]"},
        {"lora_bias", "false"},
    };
    for (size_t i = 0; i < sizeof harmless / sizeof harmless[0]; i++) {
        clone_adapter(a1, bad, set_key, &harmless[i], NULL);
        CHECK_MSG(try_load(m2, bad, &err) == SN_OK, "%s = %s: %s", harmless[i].key,
                  harmless[i].json, err.msg);
    }
    sn_model_free(m);
    sn_model_free(m2);
    return sn_test_done();
}
