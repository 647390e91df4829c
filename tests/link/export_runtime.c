/* tests/link/export_runtime.c: a program linked against sn_export_runtime alone (tests/layout.cmake), so the
** link check sees everything linking that library brings in. */
#include "export/export.h"

#include <stdio.h>

int main(void)
{
    puts(sn_ggml_type_name(0));
    return 0;
}
