/* tests/test_train_hfconfig.c: Hugging Face config.json as current transformers writes it
** (train/config.c, train/hf.c; docs/formats.md#model-directory): rope_theta inside
** rope_parameters, rope types other than "default" refused by name, num_key_value_heads null,
** an explicit head_dim; sn_model_save_hf always writing pad_token_id, and sn_model_open_hf
** finding the pad id the way TRL does (tokenizer pad token, else eos) when config.json has
** none. */
#include <string.h>

#include "train/train.h"
#include "tests/testutil.h"

#define BASE "\"hidden_size\":64,\"intermediate_size\":128,\"num_hidden_layers\":2," \
             "\"num_attention_heads\":4,\"vocab_size\":100,\"max_position_embeddings\":256," \
             "\"rms_norm_eps\":1e-6,\"model_type\":\"qwen2\""

static int parse(const char *extra, struct sn_model_config *c, struct sn_err *err)
{
    char text[2048];
    snprintf(text, sizeof text, "{" BASE "%s}", extra);
    cJSON *j = cJSON_Parse(text);
    CHECK_MSG(j != NULL, "bad test JSON %s", text);
    sn_err_clear(err);
    int rc = sn_model_config_parse(j, "config.json", c, err);
    cJSON_Delete(j);
    return rc;
}

static void test_parse(void)
{
    struct sn_model_config c;
    struct sn_err err = {0};
    /* transformers 5: rope_parameters only */
    CHECK_MSG(parse(",\"num_key_value_heads\":2,\"rope_parameters\":{\"rope_theta\":1000000.0,"
                    "\"rope_type\":\"default\"}", &c, &err) == SN_OK, "%s", err.msg);
    CHECK(c.rope_theta == 1000000.0 && c.num_key_value_heads == 2);
    /* both layouts: the top level wins, and the type is still checked */
    CHECK(parse(",\"num_key_value_heads\":2,\"rope_theta\":5000,\"rope_parameters\":"
                "{\"rope_theta\":5000,\"rope_type\":\"default\"}", &c, &err) == SN_OK);
    CHECK(c.rope_theta == 5000);
    CHECK(parse(",\"num_key_value_heads\":2,\"rope_theta\":5000,\"rope_parameters\":"
                "{\"rope_theta\":5000,\"rope_type\":\"yarn\",\"factor\":4}", &c, &err) ==
          SN_E_UNSUPPORTED);
    CHECK_MSG(strstr(err.msg, "rope_type") && strstr(err.msg, "yarn"), "%s", err.msg);
    CHECK(parse(",\"num_key_value_heads\":2,\"rope_parameters\":{\"rope_theta\":1e4,"
                "\"rope_type\":\"llama3\"}", &c, &err) == SN_E_UNSUPPORTED);
    /* neither layout: still an error naming rope_theta */
    CHECK(parse(",\"num_key_value_heads\":2,\"rope_parameters\":{\"rope_type\":\"default\"}",
                &c, &err) == SN_E_FORMAT);
    CHECK(strstr(err.msg, "rope_theta") != NULL);
    CHECK(parse(",\"num_key_value_heads\":2", &c, &err) == SN_E_FORMAT);
    CHECK(strstr(err.msg, "rope_theta") != NULL);
    /* rope_scaling: null or a default type pass, anything else is refused */
    CHECK(parse(",\"num_key_value_heads\":2,\"rope_theta\":1e4,\"rope_scaling\":{\"rope_type\":"
                "\"default\",\"rope_theta\":1e4}", &c, &err) == SN_OK);
    CHECK(parse(",\"num_key_value_heads\":2,\"rope_theta\":1e4,\"rope_scaling\":{\"type\":"
                "\"linear\",\"factor\":2}", &c, &err) == SN_E_UNSUPPORTED);
    /* num_key_value_heads null: one KV head per attention head */
    CHECK_MSG(parse(",\"num_key_value_heads\":null,\"rope_theta\":1e4", &c, &err) == SN_OK, "%s",
              err.msg);
    CHECK(c.num_key_value_heads == c.num_attention_heads && c.num_attention_heads == 4);
    /* explicit head_dim: accepted when it is hidden / heads, refused by name otherwise */
    CHECK(parse(",\"num_key_value_heads\":2,\"rope_theta\":1e4,\"head_dim\":16", &c, &err) ==
          SN_OK);
    CHECK(parse(",\"num_key_value_heads\":2,\"rope_theta\":1e4,\"head_dim\":32", &c, &err) ==
          SN_E_UNSUPPORTED);
    CHECK_MSG(strstr(err.msg, "head_dim") != NULL, "%s", err.msg);
    CHECK(parse(",\"num_key_value_heads\":2,\"rope_theta\":1e4,\"head_dim\":null", &c, &err) ==
          SN_OK);
}

static int64_t config_pad(const char *dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/config.json", dir);
    cJSON *j = NULL;
    struct sn_err err = {0};
    if (sn_json_load(path, &j, &err) != SN_OK)
        return -2;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "pad_token_id");
    int64_t id = cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -3;
    cJSON_Delete(j);
    return id;
}

static void test_pad(void)
{
    const char *root = sn_test_dir("train_hfconfig");
    char a[1024], b[1024], c2[1024];
    snprintf(a, sizeof a, "%s/a", root);
    snprintf(b, sizeof b, "%s/b", root);
    snprintf(c2, sizeof c2, "%s/c", root);
    struct sn_err err = {0};
    struct sn_model_config c = sn_model_config_tiny(100);
    struct sn_model_params p = sn_model_default_params();
    struct sn_model *m = NULL, *m2 = NULL;
    CHECK(sn_model_create(&c, &p, &m, &err) == SN_OK);
    if (!m)
        return;
    /* unknown pad id: refused, naming the fix */
    CHECK(sn_model_save_hf(m, a, &err) == SN_E_ARG);
    CHECK_MSG(strstr(err.msg, "pad_token_id") != NULL, "%s", err.msg);
    CHECK(sn_model_set_pad_token_id(m, 100, &err) == SN_E_ARG);
    CHECK(sn_model_set_pad_token_id(m, 97, &err) == SN_OK);
    CHECK_MSG(sn_model_save_hf(m, a, &err) == SN_OK, "%s", err.msg);
    CHECK(config_pad(a) == 97);
    sn_model_free(m);

    /* a directory whose config has no pad id: the tokenizer's pad token, else eos */
    CHECK(sn_test_sh("mkdir -p %s && cp %s/model.safetensors %s/ && sed 's/\"pad_token_id\": "
                     "97/\"eos_token_id\": [42, 43]/' %s/config.json > %s/config.json", b, a, b,
                     a, b) == 0);
    CHECK(sn_test_sh("! grep -q pad_token_id %s/config.json", b) == 0);
    CHECK_MSG(sn_model_open_hf(b, &p, &m2, &err) == SN_OK, "%s", err.msg);
    if (m2)
        CHECK(sn_model_get_config(m2)->pad_token_id == 42); /* config eos_token_id */
    sn_model_free(m2);
    m2 = NULL;
    CHECK(sn_test_sh("printf '%%s' '{\"pad_token\": \"<|endoftext|>\", \"eos_token\": "
                     "\"<|im_end|>\", \"added_tokens_decoder\": {\"90\": {\"content\": "
                     "\"<|endoftext|>\"}, \"91\": {\"content\": \"<|im_end|>\"}}}' > "
                     "%s/tokenizer_config.json", b) == 0);
    CHECK(sn_model_open_hf(b, &p, &m2, &err) == SN_OK);
    if (m2) {
        CHECK(sn_model_get_config(m2)->pad_token_id == 90);
        CHECK_MSG(sn_model_save_hf(m2, c2, &err) == SN_OK, "%s", err.msg);
        CHECK(config_pad(c2) == 90);
    }
    sn_model_free(m2);
    m2 = NULL;
    /* no pad token in the tokenizer config: its eos token */
    CHECK(sn_test_sh("sed -i 's/\"pad_token\": \"<|endoftext|>\", //' %s/tokenizer_config.json",
                     b) == 0);
    CHECK(sn_model_open_hf(b, &p, &m2, &err) == SN_OK);
    if (m2)
        CHECK(sn_model_get_config(m2)->pad_token_id == 91);
    sn_model_free(m2);
}

int main(void)
{
    test_parse();
    test_pad();
    return sn_test_done();
}
