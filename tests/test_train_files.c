/* tests/test_train_files.c: model directories and adapter checkpoints on disk.
**  - PEFT adapter layout: tensor names, shapes, metadata, adapter_config.json fields; load then
**    save again gives byte-identical tensors; PEFT's ["score", "classifier", "score"] loads;
**  - a sharded model (model.safetensors.index.json) loads and scores like the single file;
**  - malformed inputs each fail with a message naming the problem, and leave nothing behind
**    (run under ASan for leaks): truncated safetensors, lying header, wrong dtype, wrong shape,
**    missing and unexpected tensors, config.json missing a field or with inconsistent heads,
**    bad adapters; bad batches (ids out of range, empty rows). */
#include "hf/hf.h"
#include "tests/testutil.h"
#include "train/train.h"

#include <stdint.h>

static void copy_file(const char *from, const char *to)
{
    CHECK(sn_test_sh("cp '%s' '%s'", from, to) == 0);
}

/* Copies model dir src to dst, then edits config.json with a python-free sed-like replace. */
static void clone_dir(const char *src, const char *dst)
{
    CHECK(sn_test_sh("rm -rf '%s' && cp -r '%s' '%s'", dst, src, dst) == 0);
}

static void expect_open_fail(const char *dir, const char *what, const char *expect)
{
    struct sn_err err = {0};
    struct sn_model_params p = sn_model_default_params();
    struct sn_model *m = (struct sn_model *)1;
    int rc = sn_model_open_hf(dir, &p, &m, &err);
    CHECK_MSG(rc != SN_OK, "%s: opened", what);
    CHECK_MSG(m == NULL, "%s: handle not NULL", what);
    CHECK_MSG(strstr(err.msg, expect) != NULL, "%s: message '%s' lacks '%s'", what, err.msg,
              expect);
    if (rc == SN_OK)
        sn_model_free(m);
}

/* Rewrites config.json: replace the first occurrence of `from` by `to`. */
static void edit_config(const char *dir, const char *from, const char *to)
{
    char *text = NULL;
    size_t n = 0;
    struct sn_err err = {0};
    CHECK(sn_file_read(sn_test_path(dir, "config.json"), 0, &text, &n, &err) == SN_OK);
    if (!text)
        return;
    char *at = strstr(text, from);
    CHECK_MSG(at != NULL, "config.json lacks '%s'", from);
    if (at) {
        struct sn_buf b = {0};
        sn_buf_append(&b, text, (size_t)(at - text), &err);
        sn_buf_puts(&b, to, &err);
        sn_buf_puts(&b, at + strlen(from), &err);
        CHECK(sn_atomic_write(sn_test_path(dir, "config.json"), b.data, b.len, &err) == SN_OK);
        sn_buf_free(&b);
    }
    sn_free(text);
}

/* Writes a safetensors file holding the tensors of src except `drop`, plus extra (if any). */
static void rewrite_weights(const char *src_path, const char *dst_path, const char *drop,
                            const char *extra_name, enum sn_st_dtype extra_dt, int nd,
                            const int64_t *shape, const void *extra_data)
{
    struct sn_err err = {0};
    struct sn_st_file *f = NULL;
    struct sn_st_writer *w = sn_test_st_copy(src_path, drop, &f);
    if (!w)
        return;
    if (extra_name)
        CHECK_MSG(sn_st_writer_add(w, extra_name, extra_dt, nd, shape, extra_data, &err) == SN_OK,
                  "%s", err.msg);
    CHECK(sn_st_writer_save(w, dst_path, &err) == SN_OK);
    sn_st_writer_free(w);
    sn_st_close(f);
}

static void test_model_dirs(const char *root, const char *good)
{
    struct sn_err err = {0};
    char bad[1024];
    snprintf(bad, sizeof bad, "%s/bad", root);
    char src_w[1100], bad_w[1100]; /* sn_test_path's buffers rotate: keep our own copies */
    snprintf(src_w, sizeof src_w, "%s/model.safetensors", good);
    snprintf(bad_w, sizeof bad_w, "%s/model.safetensors", bad);

    /* config.json problems, one spoiled copy of good each */
    static const struct {
        const char *from, *to, *what, *expect;
    } config_cases[] = {
        {"\"num_key_value_heads\"", "\"num_key_value_headz\"", "missing field",
         "missing required field 'num_key_value_heads'"},
        {"\"num_attention_heads\": 4", "\"num_attention_heads\": 5", "heads vs hidden",
         "'num_attention_heads' = 5 does not divide"},
        {"\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3", "kv heads",
         "'num_key_value_heads' = 3 must divide"},
        {"\"hidden_size\": 64", "\"hidden_size\": \"64\"", "wrong type",
         "'hidden_size' must be an integer"},
        {"\"model_type\": \"qwen2\"", "\"model_type\": \"llama\"", "model type", "only \"qwen2\""},
        {"{", "{,", "invalid json", "config.json:1:"},
        /* the config says 3 layers, the weights hold 2 */
        {"\"num_hidden_layers\": 2", "\"num_hidden_layers\": 3", "layer count",
         "missing tensor 'model.layers.2.input_layernorm.weight'"},
    };
    for (size_t i = 0; i < sizeof config_cases / sizeof config_cases[0]; i++) {
        clone_dir(good, bad);
        edit_config(bad, config_cases[i].from, config_cases[i].to);
        expect_open_fail(bad, config_cases[i].what, config_cases[i].expect);
    }

    /* truncated weights */
    clone_dir(good, bad);
    CHECK(sn_test_sh("truncate -s -100 '%s'", bad_w) == 0);
    expect_open_fail(bad, "truncated", "truncated file?");
    /* a header that claims more than the file holds */
    clone_dir(good, bad);
    CHECK(sn_test_sh("printf '\\377\\377\\377\\000' | dd of='%s' bs=1 seek=0 count=4 "
                     "conv=notrunc 2>/dev/null", bad_w) == 0);
    expect_open_fail(bad, "lying header", "header claims");
    /* weights rewritten: drop a tensor, add one (name, dtype, shape, data), or both */
    static int32_t ints[64];
    static float f63[63];
    static const int64_t s64[1] = {64}, s63[1] = {63};
    static const struct {
        const char *drop, *add;
        enum sn_st_dtype dt;
        int nd;
        const int64_t *shape;
        const void *data;
        const char *what, *expect;
    } weight_cases[] = {
        {"model.norm.weight", "model.norm.weight", SN_ST_I32, 1, s64, ints, "wrong dtype",
         "tensor 'model.norm.weight': dtype I32"},
        {"model.norm.weight", "model.norm.weight", SN_ST_F32, 1, s63, f63, "wrong shape",
         "'model.norm.weight': shape [63], expected [64]"},
        {"model.layers.1.self_attn.k_proj.bias", NULL, SN_ST_F32, 0, NULL, NULL, "missing",
         "missing tensor 'model.layers.1.self_attn.k_proj.bias'"},
        /* an o_proj bias does not exist in Qwen2 */
        {NULL, "model.layers.0.self_attn.o_proj.bias", SN_ST_F32, 1, s64, ints, "unexpected",
         "unexpected tensor 'model.layers.0.self_attn.o_proj.bias'"},
    };
    for (size_t i = 0; i < sizeof weight_cases / sizeof weight_cases[0]; i++) {
        clone_dir(good, bad);
        rewrite_weights(src_w, bad_w, weight_cases[i].drop, weight_cases[i].add,
                        weight_cases[i].dt, weight_cases[i].nd, weight_cases[i].shape,
                        weight_cases[i].data);
        expect_open_fail(bad, weight_cases[i].what, weight_cases[i].expect);
    }
    /* lm_head is accepted (and ignored) with the right shape, refused with a wrong one */
    clone_dir(good, bad);
    float *lm = calloc(100 * 64, sizeof *lm);
    int64_t slm[2] = {100, 64}, slm_bad[2] = {99, 64};
    rewrite_weights(src_w, bad_w, NULL, "lm_head.weight", SN_ST_F32, 2, slm, lm);
    struct sn_model_params p = sn_model_default_params();
    struct sn_model *m = NULL;
    CHECK_MSG(sn_model_open_hf(bad, &p, &m, &err) == SN_OK, "%s", err.msg);
    sn_model_free(m);
    m = NULL;
    rewrite_weights(src_w, bad_w, NULL, "lm_head.weight", SN_ST_F32, 2, slm_bad, lm);
    expect_open_fail(bad, "lm_head shape", "'lm_head.weight' has the wrong shape");
    free(lm);
    /* no weights at all */
    clone_dir(good, bad);
    CHECK(sn_test_sh("rm '%s'", bad_w) == 0);
    expect_open_fail(bad, "no weights", "no model.safetensors");

    /* a causal-LM checkpoint without score.weight loads; scoring needs a head */
    clone_dir(good, bad);
    rewrite_weights(src_w, bad_w, "score.weight", NULL, SN_ST_F32, 0, NULL, NULL);
    CHECK(sn_model_open_hf(bad, &p, &m, &err) == SN_OK);
    if (m) {
        CHECK(!sn_model_has_head(m));
        int32_t ids[3] = {1, 2, 3};
        struct sn_model_batch b = {ids, NULL, 1, 3};
        float r;
        CHECK(sn_model_forward_host(m, &b, &r, NULL, &err) == SN_E_ARG);
        CHECK(strstr(err.msg, "no reward head") != NULL);
        sn_model_free(m);
        m = NULL;
    }

    /* sharded: two files plus an index, same rewards as the single file */
    char shard[1024];
    snprintf(shard, sizeof shard, "%s/sharded", root);
    CHECK(sn_test_sh("rm -rf '%s' && mkdir -p '%s' && cp '%s' '%s'", shard, shard,
                     sn_test_path(good, "config.json"), sn_test_path(shard, "config.json")) == 0);
    struct sn_st_file *f = NULL;
    CHECK(sn_st_open(src_w, &f, &err) == SN_OK);
    struct sn_st_writer *w1 = NULL, *w2 = NULL;
    sn_st_writer_create(&w1, &err);
    sn_st_writer_create(&w2, &err);
    cJSON *idx = cJSON_CreateObject(), *map = cJSON_AddObjectToObject(idx, "weight_map");
    for (size_t i = 0; f && i < sn_st_count(f); i++) {
        const struct sn_st_tensor *t = sn_st_get(f, i);
        bool second = strstr(t->name, "layers.1.") || strstr(t->name, "score");
        sn_st_writer_add(second ? w2 : w1, t->name, t->dtype, t->n_dims, t->shape, t->data, &err);
        cJSON_AddStringToObject(map, t->name, second ? "model-00002-of-00002.safetensors"
                                                     : "model-00001-of-00002.safetensors");
    }
    CHECK(sn_st_writer_save(w1, sn_test_path(shard, "model-00001-of-00002.safetensors"), &err) ==
          SN_OK);
    CHECK(sn_st_writer_save(w2, sn_test_path(shard, "model-00002-of-00002.safetensors"), &err) ==
          SN_OK);
    CHECK(sn_json_save(sn_test_path(shard, "model.safetensors.index.json"), idx, &err) == SN_OK);
    sn_st_writer_free(w1);
    sn_st_writer_free(w2);
    sn_st_close(f);
    struct sn_model *m1 = NULL, *m2 = NULL;
    sn_err_clear(&err);
    CHECK(sn_model_open_hf(good, &p, &m1, &err) == SN_OK);
    CHECK_MSG(sn_model_open_hf(shard, &p, &m2, &err) == SN_OK, "%s", err.msg);
    if (m1 && m2) {
        int32_t ids[8] = {5, 9, 2, 77, 31, 0, 4, 8};
        struct sn_model_batch b = {ids, NULL, 2, 4};
        float r1[2], r2[2];
        CHECK(sn_model_forward_host(m1, &b, r1, NULL, &err) == SN_OK);
        CHECK_MSG(sn_model_forward_host(m2, &b, r2, NULL, &err) == SN_OK, "%s", err.msg);
        CHECK(r1[0] == r2[0] && r1[1] == r2[1]);
        /* bad batches */
        sn_err_clear(&err);
        int32_t bad_ids[4] = {1, 2, 100, 3};
        struct sn_model_batch bb = {bad_ids, NULL, 1, 4};
        CHECK(sn_model_forward_host(m1, &bb, r1, NULL, &err) == SN_E_ARG);
        CHECK_MSG(strstr(err.msg, "token id 100 outside the vocabulary") != NULL, "%s", err.msg);
        sn_err_clear(&err);
        int32_t zmask[4] = {0, 0, 0, 0};
        struct sn_model_batch bz = {ids, zmask, 1, 4};
        CHECK(sn_model_forward_host(m1, &bz, r1, NULL, &err) == SN_E_ARG);
        CHECK(strstr(err.msg, "has no tokens") != NULL);
        sn_err_clear(&err);
    }
    sn_model_free(m1);
    sn_model_free(m2);
    /* an index pointing at the wrong shard */
    cJSON_ReplaceItemInObject(map, "model.norm.weight",
                              cJSON_CreateString("model-00002-of-00002.safetensors"));
    CHECK(sn_json_save(sn_test_path(shard, "model.safetensors.index.json"), idx, &err) == SN_OK);
    expect_open_fail(shard, "index mismatch", "weight_map says 'model.norm.weight'");
    cJSON_ReplaceItemInObject(map, "model.norm.weight", cJSON_CreateString("../x.safetensors"));
    CHECK(sn_json_save(sn_test_path(shard, "model.safetensors.index.json"), idx, &err) == SN_OK);
    expect_open_fail(shard, "index escape", "must be a file name in the same directory");
    cJSON_Delete(idx);
}

static void test_adapter(const char *root, const char *good)
{
    struct sn_err err = {0};
    struct sn_model_params p = sn_model_default_params();
    struct sn_model *m = NULL, *m2 = NULL;
    CHECK(sn_model_open_hf(good, &p, &m, &err) == SN_OK);
    CHECK(sn_model_open_hf(good, &p, &m2, &err) == SN_OK);
    if (!m || !m2)
        return;
    struct sn_lora_config lc = sn_lora_default_config();
    lc.r = 4;
    lc.alpha = 8;
    lc.dropout = 0.05;
    lc.targets = (1u << SN_LORA_Q_PROJ) | (1u << SN_LORA_V_PROJ) | (1u << SN_LORA_DOWN_PROJ);
    CHECK(sn_model_lora_attach(m, &lc, &err) == SN_OK);
    /* make B non-zero by one optimizer-free edit: B += 0.01 */
    struct sn_param *ps = NULL;
    size_t np = 0;
    CHECK(sn_model_trainable_params(m, &ps, &np, &err) == SN_OK);
    CHECK(np == 2 * 3 * 2 + 1);
    CHECK_STR(ps[0].name, "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight");
    CHECK_STR(ps[1].name, "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight");
    CHECK_STR(ps[5].name, "base_model.model.model.layers.0.mlp.down_proj.lora_B.weight");
    CHECK_STR(ps[np - 1].name, "base_model.model.score.weight");
    bool g = sn_aten_no_grad_enter();
    for (size_t i = 0; i < np; i++)
        if (strstr(ps[i].name, "lora_B"))
            CHECK(sn_aten_add_scalar_(ps[i].t, 0.01 * (double)(i + 1), &err) == SN_OK);
    sn_aten_no_grad_exit(g);
    free(ps);
    char a1[1024], a2[1024];
    snprintf(a1, sizeof a1, "%s/ckpt1", root);
    snprintf(a2, sizeof a2, "%s/ckpt2", root);
    CHECK(sn_model_adapter_save(m, a1, "sentinel/tiny", &err) == SN_OK);
    /* names, shapes, metadata */
    struct sn_st_file *f = NULL;
    CHECK(sn_st_open(sn_test_path(a1, "adapter_model.safetensors"), &f, &err) == SN_OK);
    if (f) {
        CHECK(sn_st_count(f) == 13);
        CHECK_STR(sn_st_metadata(f, "format"), "pt");
        const struct sn_st_tensor *t =
            sn_st_find(f, "base_model.model.model.layers.1.self_attn.v_proj.lora_A.weight");
        CHECK(t && t->dtype == SN_ST_F32 && t->shape[0] == 4 && t->shape[1] == 64);
        t = sn_st_find(f, "base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight");
        CHECK(t && t->shape[0] == 32 && t->shape[1] == 4); /* 2 KV heads × 16 */
        t = sn_st_find(f, "base_model.model.model.layers.0.mlp.down_proj.lora_A.weight");
        CHECK(t && t->shape[0] == 4 && t->shape[1] == 128);
        t = sn_st_find(f, "base_model.model.score.weight");
        CHECK(t && t->shape[0] == 1 && t->shape[1] == 64);
        sn_st_close(f);
    }
    cJSON *ac = NULL;
    CHECK(sn_json_load(sn_test_path(a1, "adapter_config.json"), &ac, &err) == SN_OK);
    if (ac) {
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(ac, "peft_type")), "LORA");
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(ac, "task_type")), "SEQ_CLS");
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(ac, "bias")), "none");
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(ac, "base_model_name_or_path")),
                  "sentinel/tiny");
        CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(ac, "r")) == 4);
        CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(ac, "lora_alpha")) == 8);
        CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(ac, "lora_dropout")) == 0.05);
        cJSON *tm = cJSON_GetObjectItem(ac, "target_modules");
        CHECK(cJSON_GetArraySize(tm) == 3);
        CHECK_STR(cJSON_GetStringValue(cJSON_GetArrayItem(tm, 2)), "down_proj");
        cJSON *mts = cJSON_GetObjectItem(ac, "modules_to_save");
        CHECK(cJSON_GetArraySize(mts) == 1);
        CHECK_STR(cJSON_GetStringValue(cJSON_GetArrayItem(mts, 0)), "score");
        cJSON_Delete(ac);
    }
    /* load into a fresh model, save again: identical bytes */
    CHECK_MSG(sn_model_adapter_load(m2, a1, &err) == SN_OK, "%s", err.msg);
    CHECK(sn_model_has_lora(m2) && sn_model_lora_config(m2)->r == 4);
    CHECK(sn_model_adapter_save(m2, a2, "sentinel/tiny", &err) == SN_OK);
    CHECK(sn_test_sh("cmp -s '%s' '%s'", sn_test_path(a1, "adapter_model.safetensors"),
                     sn_test_path(a2, "adapter_model.safetensors")) == 0);
    CHECK(sn_test_sh("cmp -s '%s' '%s'", sn_test_path(a1, "adapter_config.json"),
                     sn_test_path(a2, "adapter_config.json")) == 0);
    int32_t ids[6] = {3, 1, 4, 1, 5, 9};
    struct sn_model_batch b = {ids, NULL, 2, 3};
    float r1[2], r2[2];
    CHECK(sn_model_forward_host(m, &b, r1, NULL, &err) == SN_OK);
    CHECK(sn_model_forward_host(m2, &b, r2, NULL, &err) == SN_OK);
    CHECK(r1[0] == r2[0] && r1[1] == r2[1]);

    /* PEFT writes modules_to_save = ["score", "classifier", "score"] for SEQ_CLS */
    CHECK(sn_test_sh("sed -i 's/\"score\"/\"score\", \"classifier\", \"score\"/' '%s'",
                     sn_test_path(a2, "adapter_config.json")) == 0);
    CHECK_MSG(sn_model_adapter_load(m2, a2, &err) == SN_OK, "%s", err.msg);

    /* bad adapters: each refused, and the model is left without a half-loaded adapter */
    char bad[1024];
    snprintf(bad, sizeof bad, "%s/badckpt", root);
    struct {
        const char *what, *shell, *expect;
    } cases[] = {
        {"task type", "sed -i 's/SEQ_CLS/TOKEN_CLS/' '%s/adapter_config.json'", "SEQ_CLS"},
        {"rank", "sed -i 's/\"r\": 4/\"r\": 5/' '%s/adapter_config.json'",
         "lora_A.weight': shape [4, 64], expected [5, 64]"},
        {"target", "sed -i 's/\"down_proj\"/\"up_proj\"/' '%s/adapter_config.json'",
         "missing tensor 'base_model.model.model.layers.0.mlp.up_proj.lora_A.weight'"},
        {"dora", "sed -i 's/\"use_dora\": false/\"use_dora\": true/' "
                 "'%s/adapter_config.json'", "use_dora"},
        {"truncated", "truncate -s -8 '%s/adapter_model.safetensors'", "truncated file?"},
        {"no config", "rm '%s/adapter_config.json'", "adapter_config.json"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        clone_dir(a1, bad);
        CHECK(sn_test_sh(cases[i].shell, bad) == 0);
        sn_err_clear(&err);
        int rc = sn_model_adapter_load(m2, bad, &err);
        CHECK_MSG(rc != SN_OK, "%s: loaded", cases[i].what);
        CHECK_MSG(strstr(err.msg, cases[i].expect) != NULL, "%s: message '%s' lacks '%s'",
                  cases[i].what, err.msg, cases[i].expect);
    }
    /* the "target" case got through attach before failing: the adapter must be gone */
    clone_dir(a1, bad);
    CHECK(sn_test_sh(cases[2].shell, bad) == 0);
    CHECK(sn_model_adapter_load(m2, bad, &err) != SN_OK);
    CHECK(!sn_model_has_lora(m2));
    /* an unexpected tensor in the adapter */
    clone_dir(a1, bad);
    static float junk[4];
    int64_t s4[1] = {4};
    rewrite_weights(sn_test_path(a1, "adapter_model.safetensors"),
                    sn_test_path(bad, "adapter_model.safetensors"),
                    NULL, "base_model.model.lm_head.weight", SN_ST_F32, 1, s4, junk);
    sn_err_clear(&err);
    CHECK(sn_model_adapter_load(m2, bad, &err) != SN_OK);
    CHECK(strstr(err.msg, "unexpected tensor 'base_model.model.lm_head.weight'") != NULL);
    (void)copy_file;
    sn_model_free(m);
    sn_model_free(m2);
}

int main(void)
{
    const char *root = sn_test_dir("train_files");
    struct sn_err err = {0};
    char good[1024];
    snprintf(good, sizeof good, "%s/good", root);
    struct sn_model_config c = sn_model_config_tiny(100);
    c.pad_token_id = 0; /* sn_model_save_hf refuses a model without one */
    struct sn_model_params p = sn_model_default_params();
    p.seed = 5;
    struct sn_model *m = NULL;
    CHECK(sn_model_create(&c, &p, &m, &err) == SN_OK);
    CHECK(m && sn_model_save_hf(m, good, &err) == SN_OK);
    sn_model_free(m);
    /* the config written is what a user would bring: check two fields as text */
    char *text = NULL;
    size_t n = 0;
    CHECK(sn_file_read(sn_test_path(good, "config.json"), 0, &text, &n, &err) == SN_OK);
    CHECK(text && strstr(text, "\"Qwen2ForSequenceClassification\""));
    CHECK(text && strstr(text, "\"torch_dtype\": \"float32\""));
    sn_free(text);
    /* f16 and bf16 on disk: the loaded weights are the rounded ones, rewards stay close */
    const char *dts[2] = {"float16", "bfloat16"};
    for (int k = 0; k < 2; k++) {
        struct sn_model_config ch = c;
        snprintf(ch.torch_dtype, sizeof ch.torch_dtype, "%s", dts[k]);
        struct sn_model *mh = NULL, *ml = NULL;
        char hdir[1100];
        snprintf(hdir, sizeof hdir, "%s/%s", root, dts[k]);
        CHECK(sn_model_create(&ch, &p, &mh, &err) == SN_OK);
        CHECK(mh && sn_model_save_hf(mh, hdir, &err) == SN_OK);
        CHECK(sn_model_open_hf(hdir, &p, &ml, &err) == SN_OK);
        struct sn_st_file *f = NULL;
        CHECK(sn_st_open(sn_test_path(hdir, "model.safetensors"), &f, &err) == SN_OK);
        CHECK(f && sn_st_get(f, 0)->dtype == (k ? SN_ST_BF16 : SN_ST_F16));
        sn_st_close(f);
        if (mh && ml) {
            int32_t ids[8] = {5, 9, 2, 77, 31, 0, 4, 8};
            struct sn_model_batch b = {ids, NULL, 2, 4};
            float r1[2], r2[2];
            CHECK(sn_model_forward_host(mh, &b, r1, NULL, &err) == SN_OK);
            CHECK(sn_model_forward_host(ml, &b, r2, NULL, &err) == SN_OK);
            /* rewards are ~0.02 in size; half-precision weights move them by far less */
            CHECK_CLOSE(r2[0], r1[0], 2e-3, 5e-2);
            CHECK_CLOSE(r2[1], r1[1], 2e-3, 5e-2);
            CHECK(r2[0] != r1[0] || r2[1] != r1[1]); /* really rounded */
        }
        sn_model_free(mh);
        sn_model_free(ml);
    }
    test_model_dirs(root, good);
    test_adapter(root, good);
    return sn_test_done();
}
