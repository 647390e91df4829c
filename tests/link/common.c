/* tests/link/common.c: a program linked against sn_common alone (tests/layout.cmake), so the
** link check sees everything linking that library brings in. */
#include "common/common.h"

#include <stdio.h>

int main(void)
{
    puts(sn_status_name(SN_E_IO));
    return 0;
}
