/* tests/link/train_recipe.c: a program linked against sn_train_recipe alone (tests/layout.cmake):
** the train section's decoder, which the `sentinel` executable uses, brings in no libtorch. */
#include "train/recipe.h"

#include <stdio.h>

int main(void)
{
    struct sn_train_params p = sn_train_default_params();
    struct sn_err err = {0};
    if (sn_train_params_from_recipe(NULL, &p, &err))
        return 1;
    printf("%s %s\n", sn_train_is_full(&p) ? "full" : "lora", sn_dtype_name(p.dtype));
    return 0;
}
