/* import/recipe.h: the recipe's `import` section (docs/run.md "Imported debates"), decoded
** by the importers' own library so that `sentinel run` checks it before any stage runs. */
#ifndef SN_IMPORT_RECIPE_H
#define SN_IMPORT_RECIPE_H
#include "common/common.h"

struct sn_import_recipe {
    bool        present;          /* the recipe has an import section */
    const char *format;           /* "collab-attack" or "chatlog" */
    const char *answers;          /* "source", "sentinel" or NULL (the format's default) */
    bool        skip_unsupported, skip_bad;
    const cJSON *sets;            /* [{name, paths, group_model?, adv_model?}], checked */
};
/* Reads recipe["import"] into p (absent: p->present false): unknown keys name the nearest
** valid one (in the section and in each set), format and answers are known names, the flags
** booleans, each set has a name of 1 to 64 of [A-Za-z0-9_-] used once (it names a file) and 1
** to 64 non-empty paths, group_model and adv_model are strings; a recipe with both `import`
** and `simulate` is refused. Messages start "recipe: import..." (a caller prefixes the recipe's
** file). Pointers in p are borrowed from recipe. */
int sn_import_params_from_recipe(const cJSON *recipe, struct sn_import_recipe *p,
                                 struct sn_err *err);

#endif
