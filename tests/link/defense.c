/* tests/link/defense.c: a program linked against sn_defense alone (tests/layout.cmake): Algorithm
** 1 (the bottom-k step, the sentinel) must link without OpenBLAS, HDF5, libcurl or libtorch, so
** the debate engine uses it without the detector and the runtime library ships it
** (docs/design.md §3). */
#include "defense/defense.h"

#include <stdio.h>

int main(void)
{
    struct sn_err err = {0};
    struct sn_sentinel *s = NULL;
    struct sn_sentinel_params p = sn_sentinel_default_params();
    int snd[2] = {1, 2};
    float sc[2] = {0.5f, -0.5f};
    int rc = sn_sentinel_create(&p, "Question: ?", &s, &err);
    if (!rc)
        rc = sn_sentinel_update(s, 0, snd, sc, 2, NULL, &err);
    if (!rc)
        printf("%llx\n", (unsigned long long)sn_sentinel_blacklist(s));
    sn_sentinel_free(s);
    return rc ? 1 : 0;
}
