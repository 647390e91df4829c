/* tests/link/loss.c: a program linked against sn_loss alone (tests/layout.cmake), so the
** link check sees everything linking that library brings in. */
#include "loss/loss.h"

#include <stdio.h>

int main(void)
{
    sn_loss_result_free(NULL);
    return 0;
}
