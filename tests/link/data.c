/* tests/link/data.c: a program linked against sn_data alone (tests/layout.cmake), so the link
** check sees everything linking that library brings in. */
#include "data/data.h"

#include <stdio.h>

int main(void)
{
    puts(sn_task_name(SN_TASK_MC));
    return 0;
}
