/* export/write_recipe.h: the recipe's `export` section (docs/run.md "Recipe section `export`"),
** decoded by the export module itself so that `sentinel run` checks it before any stage runs. */
#ifndef SN_EXPORT_WRITE_RECIPE_H
#define SN_EXPORT_WRITE_RECIPE_H
#include "common/common.h"

struct sn_export_recipe {
    uint32_t max_len; /* the detector's sequence limit; 0 = not set (build.max_len, else 1024) */
};
/* Reads recipe["export"] (absent = nothing set) into p: unknown keys name the nearest valid
** one, max_len is an integer in [1, 1048576]. Messages start "recipe: export.<key>" or
** "export.<key>" (a caller prefixes the recipe's file). */
int sn_export_params_from_recipe(const cJSON *recipe, struct sn_export_recipe *p,
                                 struct sn_err *err);

#endif
