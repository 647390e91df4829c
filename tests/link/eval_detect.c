/* tests/link/eval_detect.c: a program linked against sn_eval_detect alone (tests/layout.cmake), so the
** link check sees everything linking that library brings in. */
#include "eval/detect.h"

#include <stdio.h>

int main(void)
{
    puts(sn_arm_name((enum sn_arm)0));
    return 0;
}
