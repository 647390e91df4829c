/* import/recipe.c: the recipe's `import` section (import/recipe.h). */
#include "import/recipe.h"

#include <string.h>

static const char *const import_keys[] = {"format", "answers", "skip_unsupported", "skip_bad",
                                          "sets", NULL};
static const char *const set_keys[] = {"name", "paths", "group_model", "adv_model", NULL};

/* A set's name becomes a file name in OUT/trajectories: [A-Za-z0-9_-], 1 to 64 bytes. */
static bool set_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > 64)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return false;
    }
    return true;
}

static const char *str_of(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int check_set(const cJSON *sets, const cJSON *e, int i, struct sn_err *err)
{
    char where[48];
    snprintf(where, sizeof where, "import.sets[%d]", i);
    int rc = sn_recipe_check_keys(e, where, set_keys, err);
    if (rc)
        return rc;
    const char *name = str_of(e, "name");
    if (!name || !set_name_ok(name))
        return sn_err_set(err, SN_E_ARG, "recipe: %s.name must be 1 to 64 letters, digits, '_' "
                          "or '-' (it names OUT/trajectories/<name>.jsonl.gz)", where);
    for (const cJSON *o = sets->child; o != e; o = o->next)
        if (str_of(o, "name") && !strcmp(str_of(o, "name"), name))
            return sn_err_set(err, SN_E_ARG, "recipe: import.sets: the name '%s' is used twice",
                              name);
    const cJSON *paths = cJSON_GetObjectItemCaseSensitive(e, "paths"), *p;
    if (!cJSON_IsArray(paths) || !cJSON_GetArraySize(paths) || cJSON_GetArraySize(paths) > 64)
        return sn_err_set(err, SN_E_ARG, "recipe: %s.paths must be a list of 1 to 64 paths",
                          where);
    cJSON_ArrayForEach(p, paths) {
        if (!cJSON_IsString(p) || !p->valuestring[0])
            return sn_err_set(err, SN_E_ARG, "recipe: %s.paths: every entry must be a non-empty "
                              "string", where);
    }
    static const char *const models[] = {"group_model", "adv_model"};
    for (int k = 0; k < 2; k++)
        if (cJSON_HasObjectItem(e, models[k]) && !str_of(e, models[k]))
            return sn_err_set(err, SN_E_ARG, "recipe: %s.%s must be a string", where, models[k]);
    return SN_OK;
}

int sn_import_params_from_recipe(const cJSON *recipe, struct sn_import_recipe *p,
                                 struct sn_err *err)
{
    const cJSON *im = recipe ? cJSON_GetObjectItemCaseSensitive(recipe, "import") : NULL;
    memset(p, 0, sizeof *p);
    if (!im)
        return SN_OK;
    p->present = true;
    if (cJSON_HasObjectItem(recipe, "simulate"))
        return sn_err_set(err, SN_E_ARG, "recipe: `import` and `simulate` are exclusive (the "
                          "first stage either imports debate logs or simulates them)");
    int rc = sn_recipe_check_keys(im, "import", import_keys, err);
    if (rc)
        return rc;
    p->format = str_of(im, "format");
    p->answers = str_of(im, "answers");
    if (!p->format || (strcmp(p->format, "collab-attack") && strcmp(p->format, "chatlog")))
        return sn_err_set(err, SN_E_ARG, "recipe: import.format must be \"collab-attack\" or "
                          "\"chatlog\"");
    if (cJSON_HasObjectItem(im, "answers") &&
        (!p->answers || (strcmp(p->answers, "source") && strcmp(p->answers, "sentinel"))))
        return sn_err_set(err, SN_E_ARG, "recipe: import.answers must be \"source\" or "
                          "\"sentinel\"");
    if ((rc = sn_json_get_bool(im, "import", "skip_unsupported", false, &p->skip_unsupported,
                               err)) ||
        (rc = sn_json_get_bool(im, "import", "skip_bad", false, &p->skip_bad, err)))
        return rc;
    const cJSON *sets = cJSON_GetObjectItemCaseSensitive(im, "sets"), *e;
    if (!cJSON_IsArray(sets) || !cJSON_GetArraySize(sets))
        return sn_err_set(err, SN_E_ARG, "recipe: import.sets must be a non-empty list of "
                          "{\"name\", \"paths\"}");
    int i = 0;
    cJSON_ArrayForEach(e, sets) {
        if ((rc = check_set(sets, e, i++, err)))
            return rc;
    }
    p->sets = sets;
    return SN_OK;
}
