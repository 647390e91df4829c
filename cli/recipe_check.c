/* cli/recipe_check.c: a whole recipe checked before anything runs (docs/run.md "Checking a
** recipe"). Each stage decodes its own section in its own library (train/recipe.h,
** export/write_recipe.h, eval/recipe.h, ...); this file only calls them in pipeline order and says
** the first problem with the recipe's file name, so that `sentinel run` fails on a typo at
** once, before simulate, and not after an hour of training. */
#include "cli/cli.h"
#include "cli/recipe_check.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int sn_cli_recipe_fail(const char *cmd, const char *path, const struct sn_err *err)
{
    const char *msg = err->msg;
    if (!strncmp(msg, "recipe: ", 8))
        msg += 8;
    if (path && !strncmp(msg, path, strlen(path))) /* a message that names the file already */
        fprintf(stderr, "sentinel %s: %s\n", cmd, msg);
    else
        fprintf(stderr, "sentinel %s: %s: %s\n", cmd, path ? path : "recipe", msg);
    return err->code == SN_E_ARG || err->code == SN_E_FORMAT ? SN_EXIT_USAGE : SN_EXIT_FAIL;
}

int sn_cli_eval_sim_recipe(const cJSON *recipe, cJSON **out, struct sn_err *err)
{
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(recipe, "eval");
    const cJSON *sim = cJSON_GetObjectItemCaseSensitive(recipe, "simulate");
    const cJSON *ds = ev ? cJSON_GetObjectItemCaseSensitive(ev, "dataset") : NULL;
    const cJSON *ex = ev ? cJSON_GetObjectItemCaseSensitive(ev, "experiments") : NULL;
    *out = NULL;
    if (!cJSON_IsObject(sim) || !cJSON_IsArray(ex) || !cJSON_IsObject(ds))
        return sn_err_set(err, SN_E_ARG, "recipe: the eval stage needs `simulate` and "
                          "`eval.dataset` (object) and `eval.experiments` (list): evaluation "
                          "runs on fresh debates, never on the training items (docs/run.md)");
    cJSON *root = cJSON_CreateObject();
    cJSON *s = cJSON_Duplicate(sim, 1);
    cJSON *d = cJSON_Duplicate(ds, 1), *x = cJSON_Duplicate(ex, 1);
    cJSON *defs = s ? cJSON_GetObjectItemCaseSensitive(s, "defaults") : NULL;
    if (s && !defs)
        defs = cJSON_AddObjectToObject(s, "defaults");
    if (!root || !s || !d || !x || !defs) {
        cJSON_Delete(root);
        cJSON_Delete(s);
        cJSON_Delete(d);
        cJSON_Delete(x);
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    }
    cJSON_AddItemToObject(root, "simulate", s);
    cJSON_DeleteItemFromObjectCaseSensitive(defs, "dataset");
    cJSON_AddItemToObject(defs, "dataset", d);
    cJSON_DeleteItemFromObjectCaseSensitive(s, "experiments");
    cJSON_AddItemToObject(s, "experiments", x);
    *out = root;
    return SN_OK;
}

bool sn_cli_tokenize_reads(const struct sn_cli_recipe *dec, const char *name)
{
    const cJSON *x;
    cJSON_ArrayForEach(x, dec->eval.sets)
        if (cJSON_IsString(x) && !strcmp(x->valuestring, name))
            return false;
    return true;
}

/* Section `tokenize` (docs/run.md "Recipe section `tokenize`"). Only with an import: the sets
** that eval.sets names are the held-out debates and every other set trains, so the tokenizer's
** inputs are known by name before anything runs; a simulated run's held-out questions are only
** known to the build's split, after the tokenizer would have read them. */
static int tokenize_from_recipe(const cJSON *recipe, struct sn_cli_recipe *out,
                                struct sn_err *err)
{
    static const char *const keys[] = {"vocab_size", "min_frequency", NULL};
    const cJSON *sec = cJSON_GetObjectItemCaseSensitive(recipe, "tokenize");
    struct sn_cli_tokenize *t = &out->tokenize;
    int rc;
    if (!sec)
        return SN_OK;
    if (!cJSON_IsObject(sec))
        return sn_err_set(err, SN_E_ARG, "recipe: tokenize: expected an object");
    t->present = true;
    if ((rc = sn_recipe_check_keys(sec, "tokenize", keys, err)) ||
        (rc = sn_json_get_int(sec, "tokenize", "vocab_size", 8192, &t->vocab_size, err)) ||
        (rc = sn_json_get_int(sec, "tokenize", "min_frequency", 2, &t->min_frequency, err)))
        return rc;
    if (t->vocab_size < 259 || t->vocab_size > (int64_t)1 << 24)
        return sn_err_set(err, SN_E_ARG, "recipe: tokenize.vocab_size %" PRId64 ": expected 259 "
                          "(the 256 bytes and the 3 ChatML tokens) to 16777216", t->vocab_size);
    if (t->min_frequency < 1)
        return sn_err_set(err, SN_E_ARG, "recipe: tokenize.min_frequency %" PRId64 ": expected "
                          "1 or more", t->min_frequency);
    if (!out->import.present || !out->eval.present || !out->eval.imported)
        return sn_err_set(err, SN_E_ARG, "recipe: tokenize: needs an `import` section and "
                          "eval.sets: the tokenizer trains on the import sets that eval.sets "
                          "does not name (docs/run.md \"Recipe section `tokenize`\")");
    if (out->build_r.tokenizer)
        return sn_err_set(err, SN_E_ARG, "recipe: tokenize and build.tokenizer exclude each "
                          "other (the tokenize section writes the build's tokenizer)");
    const cJSON *e;
    cJSON_ArrayForEach(e, out->import.sets) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "name");
        if (cJSON_IsString(n) && sn_cli_tokenize_reads(out, n->valuestring))
            return SN_OK;
    }
    return sn_err_set(err, SN_E_ARG, "recipe: tokenize: every import set is named in eval.sets: "
                      "no training set to learn the tokenizer from");
}

int sn_cli_recipe_check(const char *path, const cJSON *recipe, bool eval_debates,
                        struct sn_cli_recipe *out, struct sn_err *err)
{
    memset(out, 0, sizeof *out);
    out->build = sn_build_default_params();
    out->train = sn_train_default_params();
    /* import first: it refuses a recipe with both first stages before either is decoded */
    int rc = sn_import_params_from_recipe(recipe, &out->import, err);
    if (!rc && cJSON_HasObjectItem(recipe, "simulate"))
        rc = sn_simulate_check_recipe(recipe, err);
    if (rc || (rc = sn_build_params_from_recipe(recipe, &out->build, &out->build_r, err)) ||
        (rc = sn_train_params_from_recipe(recipe, &out->train, err)) ||
        (rc = sn_export_params_from_recipe(recipe, &out->export_, err)) ||
        (rc = sn_eval_params_from_recipe(recipe, &out->eval, err)) ||
        (rc = tokenize_from_recipe(recipe, out, err)))
        return rc;
    if (eval_debates && out->eval.present && !out->eval.imported) {
        /* the eval stage's own debates: eval.experiments under simulate's defaults */
        cJSON *er = NULL;
        if ((rc = sn_cli_eval_sim_recipe(recipe, &er, err)) ||
            (rc = sn_simulate_check_recipe(er, err)))
            sn_err_wrap(err, "eval debates (eval.dataset, eval.experiments)");
        cJSON_Delete(er);
    }
    (void)path;
    return rc;
}

void sn_cli_recipe_free(struct sn_cli_recipe *r)
{
    sn_build_recipe_free(&r->build);
}

int sn_cli_recipe_describe(const char *cmd, const char *path, const cJSON *recipe,
                           const struct sn_cli_recipe *dec, const char *stages)
{
    struct sn_err err = {0};
    struct sn_buf b = {0};
    const struct sn_train_params *t = &dec->train;
    int rc = sn_buf_printf(&b, &err, "%s: a recipe; every section checks\n", path);
    if (!rc)
        rc = sn_buf_printf(&b, &err, "stages:     %s\n", stages);
    if (!rc)
        rc = sn_buf_printf(&b, &err, "training:   %s on %s, lr %g%s, %s schedule, micro-batch "
                           "%" PRId64 " x %" PRId64 " accumulation\n",
                           sn_train_is_full(t) ? "full" : "LoRA", t->base, t->sched.lr,
                           t->sched.lr ? "" : " (by mode)", sn_train_sched_name(t->sched.kind),
                           t->micro_batch, t->grad_accum);
    if (!rc && t->objective == SN_OBJECTIVE_LM)
        rc = sn_buf_puts(&b, "objective:  lm (causal language model on the train split's "
                         "sequences; docs/train.md \"Domain-adaptive pretraining\")\n", &err);
    if (!rc && t->pretrain_steps > 0)
        rc = sn_buf_printf(&b, &err, "pretrain:   %" PRId64 " steps of objective lm on the train "
                           "split first (OUT/pretrain, lr %g%s), its checkpoint the reward "
                           "run's base\n", t->pretrain_steps,
                           t->pretrain_lr > 0 ? t->pretrain_lr : t->sched.lr > 0 ? t->sched.lr
                                                                                 : 1e-3,
                           t->pretrain_lr > 0 || t->sched.lr > 0 ? "" : " (full mode's)");
    if (!rc && dec->tokenize.present) {
        rc = sn_buf_printf(&b, &err, "tokenize:   byte-level BPE, vocab %" PRId64 ", min "
                           "frequency %" PRId64 ", trained on the import sets",
                           dec->tokenize.vocab_size, dec->tokenize.min_frequency);
        const cJSON *e;
        cJSON_ArrayForEach(e, dec->import.sets) {
            const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "name");
            if (!rc && cJSON_IsString(n) && sn_cli_tokenize_reads(dec, n->valuestring))
                rc = sn_buf_printf(&b, &err, " %s", n->valuestring);
        }
        if (!rc)
            rc = sn_buf_puts(&b, " (not eval.sets)\n", &err);
    }
    size_t len = b.len;
    if (!rc)
        rc = sn_buf_puts(&b, "Hugging Face names and the sentinel keys they set:\n", &err);
    size_t head = b.len;
    if (!rc)
        rc = sn_train_recipe_aliases(recipe, t, &b, &err);
    if (!rc && b.len == head) /* none used: drop the heading */
        b.len = len;
    if (!rc)
        fwrite(b.data, 1, b.len, stdout);
    sn_buf_free(&b);
    return rc ? sn_cli_fail(cmd, &err) : SN_EXIT_OK;
}

int sn_cli_inspect_recipe(const char *path)
{
    struct sn_err err = {0};
    cJSON *recipe = NULL;
    struct sn_cli_recipe dec;
    if (sn_recipe_load(path, NULL, 0, &recipe, &err))
        return sn_cli_recipe_fail("inspect", path, &err);
    int rc = sn_cli_recipe_check(path, recipe, true, &dec, &err)
                 ? sn_cli_recipe_fail("inspect", path, &err)
                 : sn_cli_recipe_describe("inspect", path, recipe, &dec,
                                          cJSON_HasObjectItem(recipe, "import")
                                              ? "import, build, train, export, eval"
                                              : "simulate, build, train, export, eval");
    sn_cli_recipe_free(&dec);
    cJSON_Delete(recipe);
    return rc;
}
