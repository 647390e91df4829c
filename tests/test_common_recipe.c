/* tests/test_common_recipe.c: JSON errors with file:line:col, recipe overrides (--set),
** unknown keys with "did you mean", typed getters. */
#include "common/common.h"
#include "testutil.h"

static void test_bad_json(const char *dir)
{
    char path[1024];
    struct sn_err err = {0};
    snprintf(path, sizeof path, "%s/bad.json", dir);
    sn_test_write_file(path, "{\n  \"simulate\": {\n    \"rounds\": 3,,\n  }\n}\n");
    cJSON *j = NULL;
    CHECK(sn_recipe_load(path, NULL, 0, &j, &err) == SN_E_FORMAT);
    CHECK(j == NULL);
    char want[1100];
    /* cJSON reports the failure where it stopped (col 16-18 on line 3): the line is exact */
    snprintf(want, sizeof want, "%s:3:", path);
    CHECK_MSG(strstr(err.msg, want) != NULL, "msg: %s", err.msg);

    sn_err_clear(&err);
    CHECK(sn_json_parse("{\"a\": [1, 2", 11, "x.json", &j, &err) == SN_E_FORMAT);
    CHECK_MSG(strstr(err.msg, "x.json:1:") && strstr(err.msg, "invalid JSON"), "%s", err.msg);

    sn_err_clear(&err);
    snprintf(path, sizeof path, "%s/array.json", dir);
    sn_test_write_file(path, "[1]");
    CHECK(sn_recipe_load(path, NULL, 0, &j, &err) == SN_E_FORMAT);
    CHECK(strstr(err.msg, "must be a JSON object") != NULL);

    sn_err_clear(&err);
    CHECK(sn_recipe_load("/nonexistent/r.json", NULL, 0, &j, &err) == SN_E_IO);
    CHECK(strstr(err.msg, "/nonexistent/r.json") != NULL);
}

static void test_overrides(const char *dir)
{
    char path[1024];
    struct sn_err err = {0};
    snprintf(path, sizeof path, "%s/r.json", dir);
    sn_test_write_file(path, "{\"train\": {\"lr\": 5e-6, \"epochs\": 5}, \"out_dir\": \"out\"}");
    const char *sets[] = {"train.lr=1e-5", "train.lora.r=16", "simulate.backend=sim",
                          "simulate.rounds=[1,2]", "out_dir=\"runs/a\"", "train.name=a=b"};
    cJSON *j = NULL;
    CHECK(sn_recipe_load(path, sets, 6, &j, &err) == SN_OK);
    const cJSON *train = cJSON_GetObjectItem(j, "train");
    double lr;
    int64_t epochs, r;
    CHECK(sn_json_get_double(train, "train", "lr", 0, &lr, &err) == SN_OK && lr == 1e-5);
    CHECK(sn_json_get_int(train, "train", "epochs", 0, &epochs, &err) == SN_OK && epochs == 5);
    CHECK(sn_json_get_int(cJSON_GetObjectItem(train, "lora"), "train.lora", "r", 0, &r, &err) ==
              SN_OK &&
          r == 16);
    const char *s;
    CHECK(sn_json_get_string(cJSON_GetObjectItem(j, "simulate"), "simulate", "backend", NULL, &s,
                             &err) == SN_OK);
    CHECK_STR(s, "sim");
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "simulate"), "rounds")) ==
          2);
    CHECK_STR(cJSON_GetObjectItem(j, "out_dir")->valuestring, "runs/a");
    CHECK_STR(cJSON_GetObjectItem(train, "name")->valuestring, "a=b");
    /* wrong types name the key */
    sn_err_clear(&err);
    CHECK(sn_json_get_int(train, "train", "lr", 0, &epochs, &err) == SN_E_ARG);
    CHECK(strstr(err.msg, "train.lr") != NULL);
    sn_err_clear(&err);
    CHECK(sn_json_get_string(train, "train", "epochs", NULL, &s, &err) == SN_E_ARG);
    /* bad assignments */
    sn_err_clear(&err);
    CHECK(sn_recipe_apply_override(j, "novalue", &err) == SN_E_ARG);
    sn_err_clear(&err);
    CHECK(sn_recipe_apply_override(j, "train.lr.x=1", &err) == SN_E_ARG);
    CHECK(strstr(err.msg, "not an object") != NULL);
    sn_err_clear(&err);
    CHECK(sn_recipe_apply_override(j, "train..x=1", &err) == SN_E_ARG);
    cJSON_Delete(j);
}

static void test_keys(void)
{
    struct sn_err err = {0};
    cJSON *j = cJSON_Parse("{\"lr\": 1, \"warmup_stpes\": 10}");
    const char *valid[] = {"lr", "warmup_steps", "epochs", NULL};
    CHECK(sn_recipe_check_keys(j, "train", valid, &err) == SN_E_ARG);
    CHECK_STR(err.msg, "recipe: unknown key 'train.warmup_stpes' (did you mean 'warmup_steps'?)");
    cJSON_Delete(j);
    sn_err_clear(&err);
    j = cJSON_Parse("{\"zzzzzzzzzzzz\": 1}");
    CHECK(sn_recipe_check_keys(j, "train", valid, &err) == SN_E_ARG);
    CHECK_STR(err.msg, "recipe: unknown key 'train.zzzzzzzzzzzz'");
    cJSON_Delete(j);
    sn_err_clear(&err);
    j = cJSON_Parse("{\"lr\": 1, \"epochs\": 2}");
    CHECK(sn_recipe_check_keys(j, "train", valid, &err) == SN_OK);
    cJSON_Delete(j);
    CHECK(sn_edit_distance("kitten", "sitting") == 3);
    CHECK(sn_edit_distance("", "abc") == 3);
}

static void test_save_roundtrip(const char *dir)
{
    char path[1024];
    struct sn_err err = {0};
    snprintf(path, sizeof path, "%s/saved.json", dir);
    cJSON *j = cJSON_Parse("{\"a\": [1, 2.5, \"x\"], \"b\": {\"c\": null}}");
    CHECK(sn_json_save(path, j, &err) == SN_OK);
    cJSON *back = NULL;
    CHECK(sn_json_load(path, &back, &err) == SN_OK);
    CHECK(back && cJSON_Compare(j, back, 1));
    cJSON_Delete(j);
    cJSON_Delete(back);
}

int main(void)
{
    const char *dir = sn_test_dir("common_recipe");
    test_bad_json(dir);
    test_overrides(dir);
    test_keys();
    test_save_roundtrip(dir);
    return sn_test_done();
}
