/* tests/test_tuples_recipe.c: the build and import sections decoded by their own libraries
** (tuples/recipe.h, import/recipe.h) and the simulate section checked without running
** (sn_simulate_check_recipe): values, TRL's max_length for max_len, unknown keys with the nearest
** one, wrong types and ranges, each message naming the key path (docs/run.md "Checking a
** recipe"). */
#include "import/recipe.h"
#include "sim/sim.h"
#include "tuples/recipe.h"
#include "testutil.h"

static int build_of(const char *json, struct sn_build_params *p, struct sn_build_recipe *r,
                    struct sn_err *err)
{
    cJSON *j = NULL;
    *p = sn_build_default_params();
    sn_err_clear(err);
    int rc = sn_json_parse(json, strlen(json), "r.json", &j, err);
    if (!rc)
        rc = sn_build_params_from_recipe(j, p, r, err);
    r->inputs = r->summary_endpoint = r->reference_endpoint = NULL; /* borrowed from j */
    r->tokenizer = r->out = NULL;
    sn_build_recipe_free(p);
    cJSON_Delete(j);
    return rc;
}

#define FAILS(fn, json, want)                                                                \
    do {                                                                                     \
        int rc_ = fn(json, &err);                                                            \
        CHECK_MSG(rc_ == SN_E_ARG && strstr(err.msg, want), "%s: rc %d '%s', want '%s'",     \
                  json, rc_, err.msg, want);                                                 \
    } while (0)

static int build_fn(const char *json, struct sn_err *err)
{
    struct sn_build_params p;
    struct sn_build_recipe r;
    return build_of(json, &p, &r, err);
}

static int import_fn(const char *json, struct sn_err *err)
{
    cJSON *j = NULL;
    struct sn_import_recipe p;
    sn_err_clear(err);
    int rc = sn_json_parse(json, strlen(json), "r.json", &j, err);
    if (!rc)
        rc = sn_import_params_from_recipe(j, &p, err);
    cJSON_Delete(j);
    return rc;
}

static int sim_fn(const char *json, struct sn_err *err)
{
    cJSON *j = NULL;
    sn_err_clear(err);
    int rc = sn_json_parse(json, strlen(json), "r.json", &j, err);
    if (!rc)
        rc = sn_simulate_check_recipe(j, err);
    cJSON_Delete(j);
    return rc;
}

static void test_build(void)
{
    struct sn_err err = {0};
    struct sn_build_params p;
    struct sn_build_recipe r;
    CHECK(build_of("{\"build\": {\"max_length\": 96, \"shard_size\": 7, \"validation\": "
                   "[\"a\"], \"test\": [\"b\"], \"split_by\": \"dataset\"}}", &p, &r, &err) ==
          SN_OK);
    CHECK(p.max_len == 96 && p.shard_size == 7);
    CHECK(build_of("{\"build\": {\"max_len\": 96}}", &p, &r, &err) == SN_OK && p.max_len == 96);
    CHECK(build_of("{}", &p, &r, &err) == SN_OK && p.max_len == sn_build_default_params().max_len);
    FAILS(build_fn, "{\"build\": {\"max_len\": 96, \"max_length\": 96}}",
          "build.max_len and build.max_length are one setting");
    FAILS(build_fn, "{\"build\": {\"shard_sise\": 4}}",
          "unknown key 'build.shard_sise' (did you mean 'shard_size'?)");
    FAILS(build_fn, "{\"build\": {\"max_len\": -1}}", "build.max_len = -1 must not be negative");
    FAILS(build_fn, "{\"build\": {\"max_length\": \"long\"}}", "build.max_length: expected an");
    FAILS(build_fn, "{\"build\": {\"deflate_level\": 10}}", "build.deflate_level = 10");
    FAILS(build_fn, "{\"build\": {\"summary\": \"llm\"}}", "needs build.summary_endpoint");
    FAILS(build_fn, "{\"build\": {\"summary\": \"llm\", \"summary_endpoint\": \"vlm\"}, "
          "\"simulate\": {\"endpoints\": {\"vllm\": {\"kind\": \"openai\"}}}}",
          "did you mean 'vllm'?");
    FAILS(build_fn, "{\"build\": {\"reference\": \"model\", \"reference_endpoint\": "
          "{\"kind\": \"sim\"}}}", "the sim backend cannot write");
    FAILS(build_fn, "{\"build\": {\"test\": \"b\"}}", "build.test: expected a list");
    CHECK(build_of("{\"build\": {\"chosen\": \"honest\", \"rejected\": \"adversary\"}}", &p,
                   &r, &err) == SN_OK &&
          p.tuples.chosen == SN_CHOSEN_HONEST && p.tuples.rejected == SN_REJECTED_ADVERSARY);
    FAILS(build_fn, "{\"build\": {\"chosen\": \"honest\"}}",
          "build.chosen = \"honest\" needs build.rejected = \"adversary\" (it is \"all\")");
    FAILS(build_fn, "{\"build\": {\"chosen\": \"any\"}}", "chosen = \"any\": expected correct");
}

static void test_import(void)
{
    struct sn_err err = {0};
    const char *ok = "{\"import\": {\"format\": \"chatlog\", \"skip_bad\": true, \"sets\": "
                     "[{\"name\": \"a-1\", \"paths\": [\"x\"], \"group_model\": \"m\"}]}}";
    CHECK_MSG(import_fn(ok, &err) == SN_OK, "%s", err.msg);
    CHECK(import_fn("{}", &err) == SN_OK);
    FAILS(import_fn, "{\"import\": {\"formt\": \"chatlog\"}}",
          "unknown key 'import.formt' (did you mean 'format'?)");
    FAILS(import_fn, "{\"import\": {\"format\": \"csv\"}}", "import.format must be");
    FAILS(import_fn, "{\"import\": {\"format\": \"chatlog\", \"skip_bad\": 1, \"sets\": []}}",
          "import.skip_bad: expected");
    FAILS(import_fn, "{\"import\": {\"format\": \"chatlog\", \"sets\": []}}",
          "import.sets must be a non-empty list");
    FAILS(import_fn, "{\"import\": {\"format\": \"chatlog\", \"sets\": [{\"name\": \"a/b\", "
          "\"paths\": [\"x\"]}]}}", "import.sets[0].name must be 1 to 64");
    FAILS(import_fn, "{\"import\": {\"format\": \"chatlog\", \"sets\": [{\"name\": \"a\", "
          "\"paths\": [\"x\"]}, {\"name\": \"a\", \"paths\": [\"y\"]}]}}", "used twice");
    FAILS(import_fn, "{\"import\": {\"format\": \"chatlog\", \"sets\": [{\"name\": \"a\", "
          "\"paths\": [\"x\"], \"adv_modle\": \"m\"}]}}",
          "unknown key 'import.sets[0].adv_modle' (did you mean 'adv_model'?)");
    FAILS(import_fn, "{\"import\": {\"format\": \"chatlog\", \"sets\": [{\"name\": \"a\", "
          "\"paths\": [\"\"]}]}}", "every entry must be a non-empty string");
    FAILS(import_fn, "{\"simulate\": {}, \"import\": {}}", "are exclusive");
}

static void test_simulate(void)
{
    struct sn_err err = {0};
    const char *ok = "{\"simulate\": {\"defaults\": {\"backend\": \"sim\", \"dataset\": "
                     "{\"kind\": \"synthetic\", \"n\": 2}}, \"experiments\": [{\"name\": \"a\", "
                     "\"scenario\": \"none\"}]}}";
    CHECK_MSG(sim_fn(ok, &err) == SN_OK, "%s", err.msg);
    FAILS(sim_fn, "{\"simulate\": {\"defaults\": {\"backend\": \"sim\", \"dataset\": "
          "{\"kind\": \"synthetic\", \"n\": 2}}, \"experiments\": [{\"name\": \"a\", "
          "\"scenarioo\": \"none\"}]}}", "scenarioo");
    FAILS(sim_fn, "{\"simulate\": {\"defaults\": {\"backend\": \"sim\", \"rounds\": \"3x\", "
          "\"dataset\": {\"kind\": \"synthetic\", \"n\": 2}}, \"experiments\": [{\"name\": "
          "\"a\"}]}}", "rounds: expected an integer");
    FAILS(sim_fn, "{\"simulate\": {\"experiments\": []}}", "must be a non-empty list");
}

int main(void)
{
    test_build();
    test_import();
    test_simulate();
    return sn_test_done();
}
