/* tests/link/aten.c: a program linked against sn_aten alone (tests/layout.cmake), so the
** link check sees everything linking that library brings in. */
#include "aten/aten.h"

#include <stdio.h>

int main(void)
{
    sn_tensor_free(NULL);
    return 0;
}
