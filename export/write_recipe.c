/* export/write_recipe.c: the recipe's `export` section (export/write_recipe.h). */
#include "export/write_recipe.h"

#include <inttypes.h>
#include <string.h>

int sn_export_params_from_recipe(const cJSON *recipe, struct sn_export_recipe *p,
                                 struct sn_err *err)
{
    static const char *const keys[] = {"max_len", NULL};
    const cJSON *sec = recipe ? cJSON_GetObjectItemCaseSensitive(recipe, "export") : NULL;
    memset(p, 0, sizeof *p);
    if (!sec)
        return SN_OK;
    int rc = sn_recipe_check_keys(sec, "export", keys, err);
    int64_t v = 0;
    if (!rc)
        rc = sn_json_get_int(sec, "export", "max_len", 0, &v, err);
    if (rc)
        return rc;
    if (cJSON_HasObjectItem(sec, "max_len") && (v < 1 || v > 1048576))
        return sn_err_set(err, SN_E_ARG, "recipe: export.max_len = %" PRId64 " (expected 1 to "
                          "1048576 tokens)", v);
    p->max_len = (uint32_t)v;
    return SN_OK;
}
