/* cli/recipe_check.h: every section of a recipe decoded by its own stage's decoder, before any
** stage runs (cli/recipe_check.c; docs/run.md "Checking a recipe"). */
#ifndef SN_CLI_RECIPE_CHECK_H
#define SN_CLI_RECIPE_CHECK_H
#include "common/common.h"
#include "eval/recipe.h"
#include "export/write_recipe.h"
#include "import/recipe.h"
#include "train/recipe.h"
#include "tuples/recipe.h"

/* Section `tokenize` (docs/run.md "Recipe section `tokenize`"): a byte-level BPE trained by
** `sentinel tokenize train` on the training sets' debates before the build. */
struct sn_cli_tokenize {
    bool    present;
    int64_t vocab_size;    /* --vocab-size, default 8192 */
    int64_t min_frequency; /* --min-frequency, default 2 */
};

/* What the sections decode to (strings and JSON borrowed from the recipe). */
struct sn_cli_recipe {
    struct sn_import_recipe import;
    struct sn_build_params  build;    /* its split lists are owned: sn_cli_recipe_free */
    struct sn_build_recipe  build_r;
    struct sn_train_params  train;
    struct sn_export_recipe export_;
    struct sn_eval_recipe   eval;
    struct sn_cli_tokenize  tokenize;
};
/* Decodes every section of recipe (loaded from path) in pipeline order with each stage's own
** decoder: import, simulate (sn_simulate_check_recipe), build, train, export, eval, and, with
** eval_debates (a run that reaches its eval stage) when that stage simulates fresh debates, the
** simulate recipe it will run (messages prefixed "eval debates ..."). The first problem is
** returned in err with the decoder's message. out is filled either way; sn_cli_recipe_free
** releases it. */
int  sn_cli_recipe_check(const char *path, const cJSON *recipe, bool eval_debates,
                         struct sn_cli_recipe *out, struct sn_err *err);
void sn_cli_recipe_free(struct sn_cli_recipe *r);
/* Whether import set `name` trains the tokenizer of section `tokenize`: every import set that
** eval.sets does not name (those are the held-out debates, docs/run.md "Recipe section
** `tokenize`"). */
bool sn_cli_tokenize_reads(const struct sn_cli_recipe *dec, const char *name);
/* The eval stage's simulate recipe (docs/run.md "Evaluation debates"): the recipe's `simulate`
** section with eval.dataset and eval.experiments in place of defaults.dataset and
** experiments. *out is the caller's (cJSON_Delete). */
int  sn_cli_eval_sim_recipe(const cJSON *recipe, cJSON **out, struct sn_err *err);
/* Prints "sentinel <cmd>: <path>: <message>" (a decoder's "recipe: " prefix replaced by the
** file) and returns SN_EXIT_USAGE for a recipe error (SN_E_ARG, SN_E_FORMAT), else
** SN_EXIT_FAIL. */
int sn_cli_recipe_fail(const char *cmd, const char *path, const struct sn_err *err);

/* Prints what a checked recipe will do (stages, training mode, the Hugging Face names it uses
** with the sentinel keys and values they set), for `sentinel run --check` and `sentinel
** inspect RECIPE.json`. Returns an exit status. */
int sn_cli_recipe_describe(const char *cmd, const char *path, const cJSON *recipe,
                           const struct sn_cli_recipe *dec, const char *stages);
/* `sentinel inspect` of a recipe file: loads and checks it like `sentinel run` does, then
** describes it. Returns an exit status. */
int sn_cli_inspect_recipe(const char *path);

#endif
