/* tests/link/lora.c: a program linked against sn_lora alone (tests/layout.cmake), so the
** link check sees everything linking that library brings in. */
#include "lora/lora.h"

#include <stdio.h>

int main(void)
{
    puts(sn_lora_target_name((enum sn_lora_target)0));
    return 0;
}
