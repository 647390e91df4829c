/* eval/recipe.h: the recipe's `eval` section (docs/run.md "Recipe section `eval`"), decoded by
** the eval module itself so that `sentinel run` checks it before any stage runs. Two shapes:
** after simulate, fresh debates (`dataset`, `experiments`) and the defended arms; after an
** import, the imported sets to replay (`sets`). */
#ifndef SN_EVAL_RECIPE_H
#define SN_EVAL_RECIPE_H
#include "common/common.h"

struct sn_eval_recipe {
    bool        present;         /* the recipe has an eval section */
    bool        imported;        /* the recipe has an import section: the `sets` shape */
    const cJSON *dataset;        /* simulate shape: the dataset object (borrowed), else NULL */
    const cJSON *experiments;    /* simulate shape: the experiments list (borrowed) */
    const cJSON *sets;           /* import shape: the names of import sets (borrowed) */
    bool        has_k, has_bootstrap, has_seed;
    int64_t     k;               /* bottom-k per round, >= 1 (`sentinel eval --k`) */
    int64_t     bootstrap;       /* resamples, 0..1000000 */
    uint64_t    seed;
    const char *baselines;       /* comma-separated ranker names; NULL = eval's default */
    bool        defended;        /* simulate shape: the defended arms (default true) */
    int64_t     defended_limit;  /* items per experiment in the arms; 0 = all */
    double      gen_tokens_per_s; /* 0 = eval's default */
    bool        allow_overlap;
};
/* Reads recipe["eval"] into p (absent: p->present false, nothing else set): unknown keys name
** the nearest valid one (the keys of the shape the recipe has), types and ranges are checked,
** baselines are known ranker names, each once, and in the import shape every name of `sets`
** is an import set's. Messages start "recipe: eval.<key>" or "eval.<key>" (a caller prefixes
** the recipe's file). Pointers in p are borrowed from recipe. */
int sn_eval_params_from_recipe(const cJSON *recipe, struct sn_eval_recipe *p,
                               struct sn_err *err);

#endif
