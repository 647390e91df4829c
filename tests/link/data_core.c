/* tests/link/data_core.c: a program linked against sn_data_core alone (tests/layout.cmake), so the
** link check sees everything linking that library brings in. */
#include "data/question.h"

#include <stdio.h>

int main(void)
{
    puts(sn_task_name(SN_TASK_MC));
    return 0;
}
