/* tests/link/train.c: a program linked against sn_train alone (tests/layout.cmake), so the
** link check sees everything linking that library brings in. */
#include "train/train.h"

#include <stdio.h>

int main(void)
{
    puts(sn_batching_name((enum sn_batching)0));
    return 0;
}
