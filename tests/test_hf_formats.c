/* tests/test_hf_formats.c: hf/ (hf/hf.h), the one parser per Hugging Face / PEFT format, and
** the checks `sentinel export` now shares with the trainer (docs/export.md "The PEFT
** directory"):
**   - model.safetensors.index.json: a sharded base exports to the same GGUF bytes as the single
**     file; a weight_map naming "..", an empty weight_map, a mapping to the wrong shard and a
**     tensor in two shards are refused by sn_export_gguf with a message naming the index;
**   - config.json: a missing rope_theta (export used to assume 10000) and a hidden_size above
**     the bound are refused naming config.json and the field;
**   - adapter_config.json: settings the trainer refuses (bias, layers_to_transform, a non-empty
**     rank_pattern, lora_dropout out of range) are refused by the export too, naming the file;
**   - tokenizer.json as arrays: sn_tokenizer_to_arrays of the demo tokenizer builds (through
**     sn_tokenizer_create) a tokenizer that encodes a text to the same ids, and
**     sn_hf_tokenizer_load pads the vocabulary to the model's vocab_size with UNUSED holes. */
#include "testutil.h"
#include "export/export.h"
#include "export/write.h"
#include "hf/hf.h"
#include "tests/testutil_qwen2.h"
#include "tokenizer/tokenizer.h"

static struct sn_err E;

static const struct sn_test_qwen2 cfg = {
    .E = 32, .L = 2, .H = 4, .Hkv = 2, .F = 64, .V = 520, .ctx = 256, .theta = 10000.0,
    .std = 0.05, .seed = 7, .tokenizer_json = NULL,
};

/* sn_export_gguf of base (with adapter, or NULL) into out; the status. */
static int export_to(const char *base, const char *adapter, const char *out)
{
    struct sn_export_params p = sn_export_default_params();
    p.base_dir = base;
    p.adapter_dir = adapter;
    sn_err_clear(&E);
    return sn_export_gguf(&p, out, &E);
}

/* The export of base fails with SN_E_FORMAT (or code) and a message holding both parts. */
static void expect_refused(const char *what, const char *base, const char *adapter, int code,
                           const char *part1, const char *part2)
{
    char out[1200];
    snprintf(out, sizeof out, "%s/refused.gguf", base);
    int rc = export_to(base, adapter, out);
    CHECK_MSG(rc == code, "%s: rc %d (%s)", what, rc, E.msg);
    CHECK_MSG(strstr(E.msg, part1) != NULL, "%s: '%s' not in: %s", what, part1, E.msg);
    CHECK_MSG(strstr(E.msg, part2) != NULL, "%s: '%s' not in: %s", what, part2, E.msg);
}

static void test_index(const char *root, const char *good)
{
    char shard[1100], idx_path[1200], g1[1200], g2[1200];
    snprintf(shard, sizeof shard, "%s/sharded", root);
    snprintf(idx_path, sizeof idx_path, "%s/model.safetensors.index.json", shard);
    CHECK(sn_test_sh("rm -rf '%s' && mkdir -p '%s' && cp '%s/config.json' '%s/tokenizer.json' "
                     "'%s/'", shard, shard, good, good, shard) == 0);
    struct sn_st_file *f = NULL;
    CHECK_MSG(sn_st_open(sn_test_path(good, "model.safetensors"), &f, &E) == SN_OK, "%s", E.msg);
    if (!f)
        return;
    struct sn_st_writer *w1 = NULL, *w2 = NULL;
    CHECK(sn_st_writer_create(&w1, &E) == SN_OK && sn_st_writer_create(&w2, &E) == SN_OK);
    cJSON *idx = cJSON_CreateObject(), *map = cJSON_AddObjectToObject(idx, "weight_map");
    for (size_t i = 0; i < sn_st_count(f); i++) {
        const struct sn_st_tensor *t = sn_st_get(f, i);
        bool second = strstr(t->name, "layers.1.") || strstr(t->name, "score");
        CHECK(sn_st_writer_add(second ? w2 : w1, t->name, t->dtype, t->n_dims, t->shape,
                               t->data, &E) == SN_OK);
        cJSON_AddStringToObject(map, t->name, second ? "model-00002-of-00002.safetensors"
                                                     : "model-00001-of-00002.safetensors");
    }
    CHECK(sn_st_writer_save(w1, sn_test_path(shard, "model-00001-of-00002.safetensors"), &E) ==
          SN_OK);
    CHECK(sn_st_writer_save(w2, sn_test_path(shard, "model-00002-of-00002.safetensors"), &E) ==
          SN_OK);
    CHECK(sn_json_save(idx_path, idx, &E) == SN_OK);

    /* the sharded base exports like the single file */
    snprintf(g1, sizeof g1, "%s/single.gguf", root);
    snprintf(g2, sizeof g2, "%s/sharded.gguf", root);
    struct sn_export_params p = sn_export_default_params();
    p.name = "m";
    p.base_dir = good;
    CHECK_MSG(sn_export_gguf(&p, g1, &E) == SN_OK, "%s", E.msg);
    p.base_dir = shard;
    CHECK_MSG(sn_export_gguf(&p, g2, &E) == SN_OK, "%s", E.msg);
    /* the same tensors, byte for byte (sentinel.base_model names the directory, so the files
    ** differ there) */
    struct sn_gguf *ga = NULL, *gb = NULL;
    CHECK(sn_gguf_open(g1, &ga, &E) == SN_OK && sn_gguf_open(g2, &gb, &E) == SN_OK);
    CHECK(ga && gb && sn_gguf_n_tensors(ga) == sn_gguf_n_tensors(gb) &&
          sn_gguf_n_tensors(ga) > 10);
    for (size_t i = 0; ga && gb && i < sn_gguf_n_tensors(ga); i++) {
        const struct sn_gguf_tensor *ta = sn_gguf_tensor(ga, i), *tb = sn_gguf_tensor(gb, i);
        CHECK(tb && !strcmp(ta->name, tb->name) && ta->nbytes == tb->nbytes &&
              !memcmp(ta->data, tb->data, ta->nbytes));
    }
    sn_gguf_close(ga);
    sn_gguf_close(gb);

    /* ".." as a shard: refused before anything is opened */
    cJSON_ReplaceItemInObject(map, "model.norm.weight", cJSON_CreateString(".."));
    CHECK(sn_json_save(idx_path, idx, &E) == SN_OK);
    expect_refused("weight_map ..", shard, NULL, SN_E_FORMAT, "model.safetensors.index.json",
                   "weight_map['model.norm.weight'] must be a file name in the same directory");
    cJSON_ReplaceItemInObject(map, "model.norm.weight", cJSON_CreateString("../x.safetensors"));
    CHECK(sn_json_save(idx_path, idx, &E) == SN_OK);
    expect_refused("weight_map ../x", shard, NULL, SN_E_FORMAT, "model.safetensors.index.json",
                   "must be a file name in the same directory");
    /* a mapping to the shard that does not hold the tensor */
    cJSON_ReplaceItemInObject(map, "model.norm.weight",
                              cJSON_CreateString("model-00002-of-00002.safetensors"));
    CHECK(sn_json_save(idx_path, idx, &E) == SN_OK);
    expect_refused("wrong shard", shard, NULL, SN_E_FORMAT, "model.safetensors.index.json",
                   "weight_map says 'model.norm.weight' is in model-00002-of-00002");
    /* an empty map */
    cJSON *empty = cJSON_CreateObject();
    cJSON_AddObjectToObject(empty, "weight_map");
    CHECK(sn_json_save(idx_path, empty, &E) == SN_OK);
    expect_refused("empty map", shard, NULL, SN_E_FORMAT, "model.safetensors.index.json",
                   "empty weight_map");
    cJSON_Delete(empty);
    /* the same tensor in both shards */
    CHECK(sn_st_writer_add(w2, "model.norm.weight", SN_ST_F32, 1,
                           sn_st_find(f, "model.norm.weight")->shape,
                           sn_st_find(f, "model.norm.weight")->data, &E) == SN_OK);
    CHECK(sn_st_writer_save(w2, sn_test_path(shard, "model-00002-of-00002.safetensors"), &E) ==
          SN_OK);
    cJSON_ReplaceItemInObject(map, "model.norm.weight",
                              cJSON_CreateString("model-00001-of-00002.safetensors"));
    CHECK(sn_json_save(idx_path, idx, &E) == SN_OK);
    expect_refused("tensor in two shards", shard, NULL, SN_E_FORMAT,
                   "tensor 'model.norm.weight' appears in both", "model-00002-of-00002");
    cJSON_Delete(idx);
    sn_st_writer_free(w1);
    sn_st_writer_free(w2);
    sn_st_close(f);
}

/* Rewrites dir/name with key set to the JSON text value (NULL: the key removed). */
static void edit_json(const char *dir, const char *name, const char *key, const char *value)
{
    cJSON *j = NULL;
    CHECK_MSG(sn_json_load(sn_test_path(dir, name), &j, &E) == SN_OK, "%s", E.msg);
    if (!j)
        return;
    cJSON_DeleteItemFromObjectCaseSensitive(j, key);
    if (value)
        cJSON_AddItemToObject(j, key, cJSON_Parse(value));
    CHECK(sn_json_save(sn_test_path(dir, name), j, &E) == SN_OK);
    cJSON_Delete(j);
}

static void test_config(const char *root, const char *good)
{
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/cfg", root);
    CHECK(sn_test_sh("rm -rf '%s' && cp -r '%s' '%s'", dir, good, dir) == 0);
    edit_json(dir, "config.json", "rope_theta", NULL);
    expect_refused("no rope_theta", dir, NULL, SN_E_FORMAT, "config.json",
                   "missing required field 'rope_theta'");
    edit_json(dir, "config.json", "rope_theta", "10000.0");
    edit_json(dir, "config.json", "hidden_size", "131072");
    expect_refused("hidden_size bound", dir, NULL, SN_E_FORMAT, "config.json",
                   "'hidden_size' = 131072 (at most 65536)");
    edit_json(dir, "config.json", "hidden_size", "32");
    edit_json(dir, "config.json", "use_sliding_window", "true");
    expect_refused("sliding window", dir, NULL, SN_E_UNSUPPORTED, "config.json",
                   "'use_sliding_window' is true");
}

static void test_adapter(const char *root, const char *good)
{
    char ad[1100];
    snprintf(ad, sizeof ad, "%s/adapter", root);
    const struct sn_test_peft a = {.r = 4, .alpha = 8, .std = 0.05, .seed = 3};
    CHECK(sn_test_sh("rm -rf '%s'", ad) == 0);
    CHECK_MSG(sn_test_peft_write(&cfg, &a, ad, NULL, &E) == SN_OK, "%s", E.msg);
    char out[1200];
    snprintf(out, sizeof out, "%s/adapted.gguf", root);
    CHECK_MSG(export_to(good, ad, out) == SN_OK, "%s", E.msg);
    struct sn_hf_adapter_config c;
    CHECK_MSG(sn_hf_adapter_config_load(ad, &c, &E) == SN_OK, "%s", E.msg);
    CHECK(c.r == 4 && c.alpha == 8.0 && c.scale == 2.0 && c.has_score && !c.need_head);
    CHECK(c.targets == (1u << SN_HF_LORA_TARGETS) - 1u);
    CHECK_STR(sn_hf_lora_target_name(4), "gate_proj");
    CHECK(sn_hf_lora_target_name(SN_HF_LORA_TARGETS) == NULL);

    edit_json(ad, "adapter_config.json", "bias", "\"all\"");
    expect_refused("bias", good, ad, SN_E_UNSUPPORTED, "adapter_config.json",
                   "'bias' must be \"none\"");
    edit_json(ad, "adapter_config.json", "bias", "\"none\"");
    edit_json(ad, "adapter_config.json", "layers_to_transform", "[0]");
    expect_refused("layers_to_transform", good, ad, SN_E_UNSUPPORTED, "adapter_config.json",
                   "'layers_to_transform' is set");
    edit_json(ad, "adapter_config.json", "layers_to_transform", "null");
    edit_json(ad, "adapter_config.json", "lora_dropout", "1.5");
    expect_refused("dropout", good, ad, SN_E_ARG, "adapter_config.json",
                   "lora_dropout = 1.5");
    edit_json(ad, "adapter_config.json", "lora_dropout", "0.0");
    edit_json(ad, "adapter_config.json", "lora_bias", "true");
    expect_refused("lora_bias", good, ad, SN_E_UNSUPPORTED, "adapter_config.json",
                   "'lora_bias' is set");
    edit_json(ad, "adapter_config.json", "lora_bias", NULL);
    CHECK_MSG(export_to(good, ad, out) == SN_OK, "%s", E.msg);
}

static void test_arrays(const char *good)
{
    struct sn_tokenizer *tok = NULL, *back = NULL;
    CHECK_MSG(sn_tokenizer_open(sn_test_path(good, "tokenizer.json"), &tok, &E) == SN_OK, "%s",
              E.msg);
    if (!tok)
        return;
    struct sn_tokenizer_arrays a;
    CHECK_MSG(sn_tokenizer_to_arrays(tok, sn_tokenizer_vocab_size(tok), &a, &E) == SN_OK, "%s",
              E.msg);
    CHECK_STR(a.pre, "qwen2");
    CHECK(a.nfc);
    CHECK(a.n_tokens == SN_TOKENIZER_DEMO_VOCAB && a.n_merges > 0);
    CHECK_STR(a.tokens[32], "\xc4\xa0");     /* the space byte in ByteLevel: U+0120 */
    CHECK(a.types[510] == SN_TOKEN_CONTROL);
    CHECK_STR(a.tokens[510], "<|im_start|>");
    struct sn_tokenizer_vocab v = {
        .tokens = (const char *const *)a.tokens, .types = a.types, .n_tokens = a.n_tokens,
        .merges = (const char *const *)a.merges, .n_merges = a.n_merges, .pre = a.pre,
        .nfc = a.nfc, .hash = sn_tokenizer_hash(tok),
    };
    CHECK_MSG(sn_tokenizer_create(&v, &back, &E) == SN_OK, "%s", E.msg);
    const char *text = "<|im_start|>user\nThe quick brown fox, 12 345 caf\xc3\xa9s.<|im_end|>";
    struct sn_ids x = {0}, y = {0};
    CHECK(sn_tokenizer_encode(tok, text, strlen(text), &x, &E) == SN_OK);
    CHECK(back && sn_tokenizer_encode(back, text, strlen(text), &y, &E) == SN_OK);
    CHECK(x.n > 5 && x.n == y.n && !memcmp(x.v, y.v, x.n * sizeof *x.v));
    sn_ids_free(&x);
    sn_ids_free(&y);
    sn_tokenizer_free(back);
    sn_tokenizer_arrays_free(&a);
    /* too few ids for the vocabulary */
    CHECK(sn_tokenizer_to_arrays(tok, 100, &a, &E) == SN_E_ARG);
    sn_tokenizer_free(tok);

    /* the model's vocab_size pads past the tokenizer: holes */
    struct sn_hf_tokenizer t;
    CHECK_MSG(sn_hf_tokenizer_load(good, cfg.V, &t, &E) == SN_OK, "%s", E.msg);
    CHECK(t.n == (size_t)cfg.V && t.types[515] == SN_TOKEN_UNUSED);
    CHECK_STR(t.tokens[515], "[PAD515]");
    CHECK(t.bos == 509 && t.pad == 509 && t.eos == 511);
    CHECK(strlen(t.hash) == 64);
    sn_hf_tokenizer_free(&t);
    sn_err_clear(&E);
    CHECK(sn_hf_tokenizer_load(good, 100, &t, &E) == SN_E_FORMAT);
    CHECK_MSG(strstr(E.msg, "tokenizer.json") && strstr(E.msg, "vocab_size 100"), "%s", E.msg);
}

int main(void)
{
    const char *root = sn_test_dir("hf_formats");
    char good[1100];
    snprintf(good, sizeof good, "%s/good", root);
    CHECK_MSG(sn_test_qwen2_write(&cfg, good, NULL, &E) == SN_OK, "%s", E.msg);
    test_index(root, good);
    test_config(root, good);
    test_adapter(root, good);
    test_arrays(good);
    return sn_test_done();
}
