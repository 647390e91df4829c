/* data/question.c: question sets: the recipe's dataset spec, subject filters and seeded
** sampling (data/data.h; docs/simulate.md#datasets). The on-disk formats are read by
** data/datasets.c, the built-in generator lives in data/synthetic.c, and what a set owns
** (its append and free) in data/qset.c. */
#include "data/data.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static const char *const spec_keys[] = {"kind", "path", "n", "seed", "subjects", "name",
                                        "numeric_share", "cop_base", "part", "novel_share",
                                        NULL};

static const char *const kinds[] = {"mmlu", "commonsenseqa", "gsm8k", "truthfulqa", "medmcqa",
                                    "jsonl", "synthetic", "facts", NULL};

static int subject_matches(const cJSON *subjects, const char *subject)
{
    if (!subjects)
        return 1;
    if (!subject)
        return 0;
    if (cJSON_IsString(subjects))
        return strcmp(subjects->valuestring, subject) == 0;
    const cJSON *s;
    cJSON_ArrayForEach(s, subjects)
    {
        if (cJSON_IsString(s) && strcmp(s->valuestring, subject) == 0)
            return 1;
    }
    return 0;
}

int sn_qset_load(const cJSON *spec, const char *where, size_t limit, struct sn_qset **out,
                 struct sn_err *err)
{
    *out = NULL;
    if (!cJSON_IsObject(spec))
        return sn_err_set(err, SN_E_ARG, "recipe: '%s' must be an object like "
                          "{\"kind\":\"synthetic\",\"n\":20}", where);
    int rc = sn_recipe_check_keys(spec, where, spec_keys, err);
    if (rc)
        return rc;
    const char *kind, *path, *name;
    int64_t n, seed;
    double numeric_share;
    if ((rc = sn_json_get_string(spec, where, "kind", NULL, &kind, err)) ||
        (rc = sn_json_get_string(spec, where, "path", NULL, &path, err)) ||
        (rc = sn_json_get_int(spec, where, "n", 0, &n, err)) ||
        (rc = sn_json_get_int(spec, where, "seed", 0, &seed, err)) ||
        (rc = sn_json_get_double(spec, where, "numeric_share", 0.5, &numeric_share, err)))
        return rc;
    if (!kind)
        return sn_err_set(err, SN_E_ARG, "recipe: '%s.kind' is missing (one of mmlu, "
                          "commonsenseqa, gsm8k, truthfulqa, medmcqa, jsonl, synthetic, facts)", where);
    bool known = false;
    for (const char *const *k = kinds; *k; k++)
        known = known || strcmp(*k, kind) == 0;
    if (!known)
        return sn_err_set(err, SN_E_ARG, "recipe: '%s.kind' = '%s' is not a dataset kind "
                          "(mmlu, commonsenseqa, gsm8k, truthfulqa, medmcqa, jsonl, synthetic, facts)",
                          where, kind);
    if (n < 0)
        return sn_err_set(err, SN_E_ARG, "recipe: '%s.n' must be >= 0", where);
    if (n > SN_QSET_MAX_N) /* bound before anything is sized by it */
        return sn_err_set(err, SN_E_ARG, "recipe: '%s.n' = %" PRId64 " exceeds the bound of %d "
                          "questions", where, n, SN_QSET_MAX_N);
    const cJSON *subjects = cJSON_GetObjectItemCaseSensitive(spec, "subjects");
    if (subjects && !cJSON_IsString(subjects) && !cJSON_IsArray(subjects))
        return sn_err_set(err, SN_E_ARG, "recipe: '%s.subjects' must be a string or a list "
                          "of strings", where);
    if ((rc = sn_json_get_string(spec, where, "name", kind, &name, err)))
        return rc;
    size_t want = (size_t)n;
    if (limit && (want == 0 || limit < want))
        want = limit;

    struct sn_qset *all = sn_calloc(1, sizeof *all);
    if (!all)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    if (strcmp(kind, "synthetic") == 0) {
        if (numeric_share < 0.0 || numeric_share > 1.0) {
            sn_qset_free(all);
            return sn_err_set(err, SN_E_ARG, "recipe: '%s.numeric_share' must be in [0, 1]",
                              where);
        }
        rc = sn_synthetic_generate(all, want ? want : 20, (uint64_t)seed, numeric_share, name,
                                   err);
        if (rc) {
            sn_qset_free(all);
            return rc;
        }
        *out = all;
        return SN_OK;
    }
    if (strcmp(kind, "facts") == 0) {
        const char *part;
        struct sn_facts_params fp = {.n = want ? want : 20, .seed = (uint64_t)seed,
                                     .numeric_share = numeric_share};
        if ((rc = sn_json_get_string(spec, where, "part", "train", &part, err)) ||
            (rc = sn_json_get_double(spec, where, "novel_share", 0.5, &fp.novel_share, err))) {
            sn_qset_free(all);
            return rc;
        }
        if (strcmp(part, "train") && strcmp(part, "eval")) {
            sn_qset_free(all);
            return sn_err_set(err, SN_E_ARG, "recipe: '%s.part' = '%s': expected \"train\" "
                              "(known facts) or \"eval\" (held-out phrasings, novel facts)",
                              where, part);
        }
        if (!(numeric_share >= 0.0 && numeric_share <= 1.0) ||
            !(fp.novel_share >= 0.0 && fp.novel_share <= 1.0)) {
            sn_qset_free(all);
            return sn_err_set(err, SN_E_ARG, "recipe: '%s.numeric_share' and '%s.novel_share' "
                              "must be in [0, 1]", where, where);
        }
        fp.eval = strcmp(part, "eval") == 0;
        if ((rc = sn_facts_generate(all, &fp, name, err))) {
            sn_qset_free(all);
            return rc;
        }
        *out = all;
        return SN_OK;
    }
    if (!path) {
        sn_qset_free(all);
        return sn_err_set(err, SN_E_ARG, "recipe: '%s.path' is missing: the %s dataset is read "
                          "from files you supply (see docs/simulate.md#datasets)",
                          where, kind);
    }
    const char *suffixes_csv[] = {".csv", ".jsonl", ".json", NULL};
    const char *suffixes_json[] = {".jsonl", ".json", NULL};
    char **paths = NULL;
    size_t n_paths = 0;
    rc = sn_paths_expand(&path, 1, strcmp(kind, "mmlu") == 0 ? suffixes_csv : suffixes_json,
                         &paths, &n_paths, err);
    if (rc)
        sn_err_wrap(err, "%s.path (the %s files are yours to supply; see "
                    "docs/simulate.md#datasets)", where, kind);
    if (!rc && n_paths == 0)
        rc = sn_err_set(err, SN_E_IO, "%s: no dataset files found (%s.path)", path, where);
    for (size_t i = 0; !rc && i < n_paths; i++)
        rc = sn_dataset_read_file(kind, paths[i], name, spec, all, err);
    sn_paths_free(paths, n_paths);
    if (rc) {
        sn_qset_free(all);
        return rc;
    }
    /* ids must be unique: they key resume and trajectory ids */
    if (all->n > 1) {
        char **ids = sn_malloc(all->n * sizeof *ids);
        if (!ids) {
            sn_qset_free(all);
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        }
        for (size_t i = 0; i < all->n; i++)
            ids[i] = all->items[i].id;
        qsort(ids, all->n, sizeof *ids, cmp_str);
        for (size_t i = 1; i < all->n; i++) {
            if (strcmp(ids[i - 1], ids[i]) == 0) {
                rc = sn_err_set(err, SN_E_FORMAT, "%s: duplicate item id '%s'", path, ids[i]);
                break;
            }
        }
        sn_free(ids);
        if (rc) {
            sn_qset_free(all);
            return rc;
        }
    }
    /* subject filter, then seeded sample kept in file order */
    size_t n_keep = 0;
    size_t *idx = sn_malloc((all->n ? all->n : 1) * sizeof *idx);
    if (!idx) {
        sn_qset_free(all);
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < all->n; i++)
        if (subject_matches(subjects, all->items[i].subject))
            idx[n_keep++] = i;
    if (n_keep == 0) {
        sn_free(idx);
        sn_qset_free(all);
        return sn_err_set(err, SN_E_FORMAT, "%s: no items%s", path,
                          subjects ? " match the subject filter" : "");
    }
    if (want && want < n_keep) {
        struct sn_rng rng;
        sn_rng_seed(&rng, sn_seed_derive((uint64_t)seed, "dataset-sample", 0));
        for (size_t i = 0; i < want; i++) { /* partial Fisher–Yates */
            size_t j = i + (size_t)sn_rng_below(&rng, n_keep - i);
            size_t t = idx[i];
            idx[i] = idx[j];
            idx[j] = t;
        }
        n_keep = want;
        /* back to file order */
        for (size_t i = 1; i < n_keep; i++) {
            size_t v = idx[i], j = i;
            while (j > 0 && idx[j - 1] > v) {
                idx[j] = idx[j - 1];
                j--;
            }
            idx[j] = v;
        }
    }
    struct sn_qset *res = sn_calloc(1, sizeof *res);
    rc = res ? SN_OK : sn_err_set(err, SN_E_NOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n_keep; i++)
        rc = sn_qset_push(res, &all->items[idx[i]], err);
    sn_free(idx);
    sn_qset_free(all);
    if (rc) {
        sn_qset_free(res);
        return rc;
    }
    *out = res;
    return SN_OK;
}
