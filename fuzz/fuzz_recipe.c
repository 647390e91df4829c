/* fuzz/fuzz_recipe.c: recipe loading (common.h sn_recipe_load) on arbitrary bytes: JSON with
** positioned errors, NUL bytes and \u0000 refused, duplicate keys at any level and unknown
** top-level sections refused (docs/formats.md#recipe). Every input must either load as an
** object of known sections without duplicates, or be refused with a message; a loaded one then
** goes through the stages' own section decoders (train, export, eval), which must accept it or
** say why. */
#include "common/common.h"
#include "eval/recipe.h"
#include "export/write_recipe.h"
#include "train/recipe.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[64];
    if (!path[0])
        snprintf(path, sizeof path, "/tmp/sn-fuzz-recipe-%ld.json", (long)getpid());
    struct sn_err err = {0};
    FILE *f = fopen(path, "wb"); /* no fsync: thousands of inputs per run */
    if (!f)
        return 0;
    bool ok = fwrite(data, 1, size, f) == size;
    if (fclose(f) != 0 || !ok)
        return 0;
    cJSON *j = NULL;
    int rc = sn_recipe_load(path, NULL, 0, &j, &err);
    if (rc != SN_OK) {
        if (j || !err.msg[0])
            abort(); /* failure must leave no tree and say why */
        return 0;
    }
    if (!cJSON_IsObject(j) || memchr(data, 0, size))
        abort();
    for (const cJSON *c = j->child; c; c = c->next)
        for (const cJSON *d = c->next; d; d = d->next)
            if (!strcmp(c->string, d->string))
                abort(); /* a duplicate got through */
    struct sn_train_params tp = sn_train_default_params();
    struct sn_export_recipe xp;
    struct sn_eval_recipe ep;
    struct sn_err e[3] = {{0}};
    if ((sn_train_params_from_recipe(j, &tp, &e[0]) && !e[0].msg[0]) ||
        (sn_export_params_from_recipe(j, &xp, &e[1]) && !e[1].msg[0]) ||
        (sn_eval_params_from_recipe(j, &ep, &e[2]) && !e[2].msg[0]))
        abort(); /* a decoder refused without saying why */
    cJSON_Delete(j);
    return 0;
}
