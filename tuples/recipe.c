/* tuples/recipe.c: the recipe's `build` section (tuples/recipe.h). */
#include "tuples/recipe.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char *const build_keys[] = {
    "inputs", "out", "tokenizer", "max_len", "shard_size", "max_pairs", "seed",
    "validation_fraction", "test_fraction", "split_seed", "split_by", "validation", "test",
    "history_sentences", "history_chars",
    "dedup", "skip_bad", "deflate_level", "summary", "reference", "summary_endpoint",
    "reference_endpoint", "summary_sentences", "rejected", "chosen", "contrast", "persuasive_correct",
    "format", "max_length", /* TRL RewardConfig's name of max_len (docs/train.md "Hugging Face names") */
    NULL};

/* Reads one integer key of the build section into *out (unchanged when absent). */
static int get_size(const cJSON *sec, const char *key, size_t *out, struct sn_err *err)
{
    int64_t v;
    int rc = sn_json_get_int(sec, "build", key, (int64_t)*out, &v, err);
    if (!rc && v < 0)
        rc = sn_err_set(err, SN_E_ARG, "recipe: build.%s = %" PRId64 " must not be negative",
                        key, v);
    if (!rc)
        *out = (size_t)v;
    return rc;
}

/* The endpoint object named by build.<key>: an inline object, or the name of an entry of
** simulate.endpoints. */
static int resolve_endpoint(const cJSON *recipe, const cJSON *sec, const char *key,
                            const char *why, const cJSON **out, struct sn_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(sec, key);
    *out = NULL;
    if (!v)
        return sn_err_set(err, SN_E_ARG, "recipe: %s needs build.%s (an endpoint object, or the "
                          "name of one in simulate.endpoints)", why, key);
    if (cJSON_IsString(v)) {
        const cJSON *sim = cJSON_GetObjectItemCaseSensitive(recipe, "simulate");
        const cJSON *eps = cJSON_GetObjectItemCaseSensitive(sim, "endpoints");
        const cJSON *e = cJSON_IsObject(eps) ? cJSON_GetObjectItemCaseSensitive(eps, v->valuestring)
                                             : NULL;
        if (!e) {
            const char *best = NULL;
            size_t bd = (size_t)-1;
            const cJSON *c;
            if (cJSON_IsObject(eps))
                cJSON_ArrayForEach(c, eps) {
                    size_t d = sn_edit_distance(v->valuestring, c->string);
                    if (d < bd) {
                        bd = d;
                        best = c->string;
                    }
                }
            if (best)
                return sn_err_set(err, SN_E_ARG, "recipe: build.%s = '%s' is not an endpoint in "
                                  "simulate.endpoints (did you mean '%s'?)", key, v->valuestring,
                                  best);
            return sn_err_set(err, SN_E_ARG, "recipe: build.%s = '%s' is not an endpoint in "
                              "simulate.endpoints (declare it there, or give an object)", key,
                              v->valuestring);
        }
        v = e;
    }
    if (!cJSON_IsObject(v))
        return sn_err_set(err, SN_E_ARG, "recipe: build.%s: expected an endpoint object or the "
                          "name of one in simulate.endpoints", key);
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(v, "kind");
    if (cJSON_IsString(kind) && !strcmp(kind->valuestring, "sim"))
        return sn_err_set(err, SN_E_ARG, "recipe: build.%s: the sim backend cannot write "
                          "summaries or references (its agents answer debate-engine requests "
                          "only); use an openai endpoint", key);
    *out = v;
    return SN_OK;
}

int sn_build_params_from_recipe(const cJSON *recipe, struct sn_build_params *p,
                                struct sn_build_recipe *r, struct sn_err *err)
{
    const cJSON *sec = recipe ? cJSON_GetObjectItemCaseSensitive(recipe, "build") : NULL;
    memset(r, 0, sizeof *r);
    if (!sec)
        return SN_OK;
    if (!cJSON_IsObject(sec))
        return sn_err_set(err, SN_E_ARG, "recipe: 'build' must be an object");
    int rc = sn_recipe_check_keys(sec, "build", build_keys, err);
    if (rc)
        return rc;
    bool hf_len = cJSON_HasObjectItem(sec, "max_length");
    if (hf_len && cJSON_HasObjectItem(sec, "max_len"))
        return sn_err_set(err, SN_E_ARG, "recipe: build.max_len and build.max_length are one "
                          "setting (max_length is its Hugging Face name): keep one");
    const char **tokenizer = &r->tokenizer, **out = &r->out;
    struct sn_tuples_params *t = &p->tuples;
    int64_t seed = 0, split_seed = 0, deflate = p->deflate_level;
    const char *summary = "extractive", *reference = "dataset";
    if ((rc = get_size(sec, hf_len ? "max_length" : "max_len", &p->max_len, err)) ||
        (rc = get_size(sec, "shard_size", &p->shard_size, err)) ||
        (rc = get_size(sec, "max_pairs", &t->max_pairs, err)) ||
        (rc = get_size(sec, "history_sentences", &t->context.history_sentences, err)) ||
        (rc = get_size(sec, "history_chars", &t->context.history_chars, err)) ||
        (rc = get_size(sec, "summary_sentences", &r->summary_sentences, err)) ||
        (rc = sn_json_get_int(sec, "build", "seed", 0, &seed, err)) ||
        (rc = sn_json_get_int(sec, "build", "split_seed", 0, &split_seed, err)) ||
        (rc = sn_json_get_int(sec, "build", "deflate_level", deflate, &deflate, err)) ||
        (rc = sn_json_get_double(sec, "build", "validation_fraction", t->validation_fraction,
                                 &t->validation_fraction, err)) ||
        (rc = sn_json_get_double(sec, "build", "test_fraction", t->test_fraction,
                                 &t->test_fraction, err)) ||
        (rc = sn_json_get_bool(sec, "build", "dedup", t->dedup, &t->dedup, err)) ||
        (rc = sn_json_get_bool(sec, "build", "skip_bad", p->skip_bad, &p->skip_bad, err)) ||
        (rc = sn_json_get_string(sec, "build", "summary", summary, &summary, err)) ||
        (rc = sn_json_get_string(sec, "build", "reference", reference, &reference, err)) ||
        (rc = sn_json_get_string(sec, "build", "tokenizer", *tokenizer, tokenizer, err)) ||
        (rc = sn_json_get_string(sec, "build", "out", *out, out, err)))
        return rc;
    if (deflate < 0 || deflate > 9)
        return sn_err_set(err, SN_E_ARG, "recipe: build.deflate_level = %" PRId64 " must be "
                          "0..9", deflate);
    p->deflate_level = (int)deflate;
    t->seed = (uint64_t)seed;
    t->split_seed = (uint64_t)split_seed;
    const char *split_by = "item", *rejected = sn_rejected_from_name(t->rejected);
    const char *chosen = sn_chosen_from_name(t->chosen);
    if ((rc = sn_json_get_string(sec, "build", "split_by", split_by, &split_by, err)) ||
        (rc = sn_json_get_string(sec, "build", "rejected", rejected, &rejected, err)) ||
        (rc = sn_json_get_string(sec, "build", "chosen", chosen, &chosen, err)) ||
        (rc = sn_json_get_double(sec, "build", "contrast", t->contrast, &t->contrast, err)) ||
        (rc = sn_json_get_double(sec, "build", "persuasive_correct", t->persuasive_correct,
                                 &t->persuasive_correct, err)))
        return rc;
    if ((rc = sn_rejected_from_parse(rejected, &t->rejected, err)) ||
        (rc = sn_chosen_from_parse(chosen, &t->chosen, err)))
        return sn_err_wrap(err, "recipe: build");
    if (t->chosen == SN_CHOSEN_HONEST && t->rejected != SN_REJECTED_ADVERSARY)
        return sn_err_set(err, SN_E_ARG, "recipe: build.chosen = \"honest\" needs "
                          "build.rejected = \"adversary\" (it is \"%s\"): an honest wrong "
                          "answer would be both chosen and rejected (docs/formats.md \"Tuple "
                          "selection\")", rejected);
    if (!(t->contrast >= 0.0 && t->contrast <= 1.0) ||
        !(t->persuasive_correct >= 0.0 && t->persuasive_correct <= 1.0))
        return sn_err_set(err, SN_E_ARG, "recipe: build.contrast and build.persuasive_correct "
                          "are probabilities in [0, 1] (docs/formats.md \"Content-contrastive "
                          "pairs\")");
    if ((rc = sn_split_by_parse(split_by, &t->split_by, err)))
        return sn_err_wrap(err, "recipe: build");
    const char *format = sn_input_format_name(p->format);
    if ((rc = sn_json_get_string(sec, "build", "format", format, &format, err)))
        return rc;
    if ((rc = sn_input_format_parse(format, &p->format, err)))
        return sn_err_wrap(err, "recipe: build");
    static const char *const lists[] = {"validation", "test"};
    for (int l = 0; l < 2; l++) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(sec, lists[l]), *e;
        if (!a)
            continue;
        if (!cJSON_IsArray(a))
            return sn_err_set(err, SN_E_ARG, "recipe: build.%s: expected a list of %s values",
                              lists[l], split_by);
        if (cJSON_HasObjectItem(sec, "validation_fraction") ||
            cJSON_HasObjectItem(sec, "test_fraction"))
            return sn_err_set(err, SN_E_ARG, "recipe: build.%s lists the held-out values; "
                              "drop build.validation_fraction / build.test_fraction", lists[l]);
        size_t n = (size_t)cJSON_GetArraySize(a), k = 0;
        const char **v = calloc(n ? n : 1, sizeof *v);
        if (!v)
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        cJSON_ArrayForEach(e, a) {
            if (!cJSON_IsString(e)) {
                free(v);
                return sn_err_set(err, SN_E_ARG, "recipe: build.%s[%zu]: expected a string",
                                  lists[l], k);
            }
            v[k++] = e->valuestring;
        }
        if (l == 0) {
            t->validation_values = v;
            t->n_validation_values = n;
        } else {
            t->test_values = v;
            t->n_test_values = n;
        }
    }
    if (!strcmp(summary, "llm")) {
        if ((rc = resolve_endpoint(recipe, sec, "summary_endpoint", "build.summary = \"llm\"",
                                   &r->summary_endpoint, err)))
            return rc;
    } else if (strcmp(summary, "extractive")) {
        return sn_err_set(err, SN_E_ARG, "recipe: build.summary = \"%s\": expected "
                          "\"extractive\" or \"llm\"", summary);
    } else if (cJSON_HasObjectItem(sec, "summary_endpoint")) {
        return sn_err_set(err, SN_E_ARG, "recipe: build.summary_endpoint is set but build.summary "
                          "is \"extractive\" (set build.summary = \"llm\" to use it)");
    }
    if (!strcmp(reference, "model")) {
        if ((rc = resolve_endpoint(recipe, sec, "reference_endpoint",
                                   "build.reference = \"model\"", &r->reference_endpoint,
                                   err)))
            return rc;
    } else if (strcmp(reference, "dataset")) {
        return sn_err_set(err, SN_E_ARG, "recipe: build.reference = \"%s\": expected "
                          "\"dataset\" or \"model\"", reference);
    } else if (cJSON_HasObjectItem(sec, "reference_endpoint")) {
        return sn_err_set(err, SN_E_ARG, "recipe: build.reference_endpoint is set but "
                          "build.reference is \"dataset\" (set build.reference = \"model\" to "
                          "use it)");
    }
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(sec, "inputs");
    if (in) {
        bool ok = cJSON_IsString(in) || cJSON_IsArray(in);
        const cJSON *e;
        if (cJSON_IsArray(in))
            cJSON_ArrayForEach(e, in) ok = ok && cJSON_IsString(e);
        if (!ok)
            return sn_err_set(err, SN_E_ARG, "recipe: build.inputs: expected a path or a list "
                              "of paths");
        r->inputs = in;
    }
    return SN_OK;
}

void sn_build_recipe_free(struct sn_build_params *p)
{
    free((void *)p->tuples.validation_values);
    free((void *)p->tuples.test_values);
    p->tuples.validation_values = p->tuples.test_values = NULL;
    p->tuples.n_validation_values = p->tuples.n_test_values = 0;
}

void sn_build_recipe_sets_win(cJSON *recipe, const char *const *sets, size_t n)
{
    static const char *const names[2] = {"max_len", "max_length"};
    cJSON *sec = recipe ? cJSON_GetObjectItemCaseSensitive(recipe, "build") : NULL;
    bool set[2] = {false, false};
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 2; k++)
            set[k] = set[k] || (!strncmp(sets[i], "build.", 6) &&
                                !strncmp(sets[i] + 6, names[k], strlen(names[k])) &&
                                sets[i][6 + strlen(names[k])] == '=');
    for (int k = 0; cJSON_IsObject(sec) && k < 2; k++)
        if (set[k] && !set[1 - k]) /* the file's other name of the setting gives way */
            cJSON_DeleteItemFromObjectCaseSensitive(sec, names[1 - k]);
}
