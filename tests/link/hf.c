/* tests/link/hf.c: a program linked against sn_hf alone (tests/layout.cmake), so the link check
** sees everything linking that library brings in. */
#include "hf/hf.h"

#include <stdio.h>

int main(void)
{
    sn_hf_weights_close(NULL);
    puts(sn_hf_lora_target_name(0));
    return 0;
}
