/* tests/link/tuples.c: a program linked against sn_tuples alone (tests/layout.cmake), so the link
** check sees everything linking that library brings in. */
#include "tuples/tuples.h"

#include <stdio.h>

int main(void)
{
    struct sn_tuples_params p = sn_tuples_default_params();
    (void)p;
    return 0;
}
