/* eval/recipe.c: the recipe's `eval` section (eval/recipe.h; docs/run.md "Recipe section
** `eval`", "Imported debates"). */
#include "eval/recipe.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

static const char *const sim_keys[] = {"dataset", "experiments", "k", "bootstrap", "seed",
                                       "baselines", "defended", "defended_limit",
                                       "gen_tokens_per_s", "allow_overlap", NULL};
static const char *const import_keys[] = {"sets", "k", "bootstrap", "seed", "baselines",
                                          "allow_overlap", NULL};

/* The rankers `sentinel eval --baselines` builds (eval/detect.h; docs/eval.md "Baselines"). */
static int check_baselines(const char *list, struct sn_err *err)
{
    static const char *const names[] = {"random", "shortest", "disagree", "ngram", "judge"};
    const size_t n_names = sizeof names / sizeof names[0];
    bool seen[sizeof names / sizeof names[0]] = {false};
    const char *s = list;
    if (!*s)
        return sn_err_set(err, SN_E_ARG, "recipe: eval.baselines is empty (omit it for eval's "
                          "default rankers)");
    while (*s) {
        size_t len = strcspn(s, ",");
        size_t i;
        for (i = 0; i < n_names && !(strlen(names[i]) == len && !strncmp(s, names[i], len)); i++)
            ;
        if (i == n_names)
            return sn_err_set(err, SN_E_ARG, "recipe: eval.baselines: '%.*s' is not a baseline "
                              "(random, shortest, disagree, ngram, judge; the oracle is always "
                              "reported)", (int)len, s);
        if (seen[i])
            return sn_err_set(err, SN_E_ARG, "recipe: eval.baselines: '%s' given twice",
                              names[i]);
        seen[i] = true;
        s += len;
        if (*s == ',' && !*++s)
            return sn_err_set(err, SN_E_ARG, "recipe: eval.baselines ends with a comma");
    }
    return SN_OK;
}

static int get_range(const cJSON *sec, const char *key, int64_t lo, int64_t hi, bool *has,
                     int64_t *v, struct sn_err *err)
{
    int rc = sn_json_get_int(sec, "eval", key, *v, v, err);
    *has = !rc && cJSON_HasObjectItem(sec, key);
    if (!rc && *has && (*v < lo || *v > hi))
        rc = sn_err_set(err, SN_E_ARG, "recipe: eval.%s = %" PRId64 " (expected %" PRId64
                        " to %" PRId64 ")", key, *v, lo, hi);
    return rc;
}

/* eval.sets: a non-empty list of names of recipe.import.sets. */
static int check_sets(const cJSON *recipe, const cJSON *es, struct sn_err *err)
{
    const cJSON *im = cJSON_GetObjectItemCaseSensitive(recipe, "import");
    const cJSON *sets = cJSON_GetObjectItemCaseSensitive(im, "sets"), *e, *s;
    if (!cJSON_IsArray(es) || !cJSON_GetArraySize(es))
        return sn_err_set(err, SN_E_ARG, "recipe: eval.sets must list the import sets to "
                          "evaluate on (debates held out of training by build.split_by and "
                          "build.test; docs/run.md)");
    cJSON_ArrayForEach(e, es) {
        bool found = false;
        if (!cJSON_IsString(e))
            return sn_err_set(err, SN_E_ARG, "recipe: eval.sets: expected names (strings)");
        cJSON_ArrayForEach(s, sets) {
            const cJSON *n = cJSON_GetObjectItemCaseSensitive(s, "name");
            found = found || (cJSON_IsString(n) && !strcmp(n->valuestring, e->valuestring));
        }
        if (!found)
            return sn_err_set(err, SN_E_ARG, "recipe: eval.sets: '%s' is not the name of an "
                              "import set", e->valuestring);
    }
    return SN_OK;
}

int sn_eval_params_from_recipe(const cJSON *recipe, struct sn_eval_recipe *p,
                               struct sn_err *err)
{
    const cJSON *sec = recipe ? cJSON_GetObjectItemCaseSensitive(recipe, "eval") : NULL;
    memset(p, 0, sizeof *p);
    p->defended = true;
    p->imported = recipe && cJSON_HasObjectItem(recipe, "import");
    if (!sec)
        return SN_OK;
    p->present = true;
    int rc = sn_recipe_check_keys(sec, "eval", p->imported ? import_keys : sim_keys, err);
    if (rc)
        return rc;
    int64_t seed = 0;
    bool has_limit = false;
    if ((rc = get_range(sec, "k", 1, 1000000, &p->has_k, &p->k, err)) ||
        (rc = get_range(sec, "bootstrap", 0, 1000000, &p->has_bootstrap, &p->bootstrap, err)) ||
        (rc = get_range(sec, "seed", 0, INT64_MAX, &p->has_seed, &seed, err)) ||
        (rc = get_range(sec, "defended_limit", 1, INT64_MAX, &has_limit, &p->defended_limit,
                        err)) ||
        (rc = sn_json_get_double(sec, "eval", "gen_tokens_per_s", 0.0, &p->gen_tokens_per_s,
                                 err)) ||
        (rc = sn_json_get_bool(sec, "eval", "defended", true, &p->defended, err)) ||
        (rc = sn_json_get_bool(sec, "eval", "allow_overlap", false, &p->allow_overlap, err)) ||
        (rc = sn_json_get_string(sec, "eval", "baselines", NULL, &p->baselines, err)))
        return rc;
    p->seed = (uint64_t)seed;
    if (cJSON_HasObjectItem(sec, "gen_tokens_per_s") &&
        !(p->gen_tokens_per_s > 0.0 && isfinite(p->gen_tokens_per_s)))
        return sn_err_set(err, SN_E_ARG, "recipe: eval.gen_tokens_per_s = %g (expected > 0)",
                          p->gen_tokens_per_s);
    if (p->baselines && (rc = check_baselines(p->baselines, err)))
        return rc;
    if (p->imported) {
        p->sets = cJSON_GetObjectItemCaseSensitive(sec, "sets");
        return check_sets(recipe, p->sets, err);
    }
    p->dataset = cJSON_GetObjectItemCaseSensitive(sec, "dataset");
    p->experiments = cJSON_GetObjectItemCaseSensitive(sec, "experiments");
    if (!cJSON_IsObject(p->dataset) || !cJSON_IsArray(p->experiments) ||
        !cJSON_GetArraySize(p->experiments))
        return sn_err_set(err, SN_E_ARG, "recipe: the eval section needs eval.dataset (an "
                          "object) and eval.experiments (a non-empty list): evaluation runs on "
                          "fresh debates, never on the training items (docs/run.md)");
    return SN_OK;
}
