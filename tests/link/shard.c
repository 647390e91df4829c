/* tests/link/shard.c: a program linked against sn_shard alone (tests/layout.cmake), so the link
** check sees everything linking that library brings in. */
#include "shard/shard.h"

#include <stdio.h>

int main(void)
{
    puts(sn_field_name(SN_FIELD_CHOSEN));
    return 0;
}
