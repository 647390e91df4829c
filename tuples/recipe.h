/* tuples/recipe.h: the recipe's `build` section (README.md "CLI reference", `sentinel
** build`; selection rules docs/formats.md#shard), decoded by the builder's own library so that
** `sentinel run` checks it before any stage runs and `sentinel build` reads it the same way. */
#ifndef SN_TUPLES_RECIPE_H
#define SN_TUPLES_RECIPE_H
#include "tuples/tuples.h"

/* What the section sets besides struct sn_build_params (borrowed from the recipe). */
struct sn_build_recipe {
    const char  *tokenizer;          /* build.tokenizer; NULL = not set */
    const char  *out;                /* build.out; NULL = not set */
    const cJSON *inputs;             /* build.inputs: a path or a list of paths; NULL = not set */
    const cJSON *summary_endpoint;   /* with summary "llm": the endpoint object (inline, or the
                                     ** entry of simulate.endpoints it names), else NULL */
    const cJSON *reference_endpoint; /* with reference "model": likewise */
    size_t       summary_sentences;  /* 0 = not set */
};
/* Reads recipe["build"] (absent = nothing changes) into p and r: unknown keys name the nearest
** valid one, types and ranges are checked, endpoint names are resolved in simulate.endpoints
** (the sim backend refused), and TRL's `max_length` is accepted for `max_len` (not both).
** Messages start "recipe: build.<key>" or "build.<key>" (a caller prefixes the recipe's file).
** p->tuples.validation_values and test_values are allocated: sn_build_recipe_free frees them,
** on success and failure alike. */
int  sn_build_params_from_recipe(const cJSON *recipe, struct sn_build_params *p,
                                 struct sn_build_recipe *r, struct sn_err *err);
void sn_build_recipe_free(struct sn_build_params *p);
/* A `--set build.max_len=N` or `--set build.max_length=N` replaces the setting whatever name the
** recipe file gave it (the file's other name is dropped from recipe after sn_recipe_load);
** only both names on the command line are an error. */
void sn_build_recipe_sets_win(cJSON *recipe, const char *const *sets, size_t n);

#endif
