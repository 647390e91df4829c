/* tests/link/export_write.c: a program linked against sn_export_write alone (tests/layout.cmake),
** so the link check sees everything linking that library brings in. */
#include "export/write.h"

#include <stdio.h>

int main(void)
{
    sn_gguf_writer_free(NULL);
    puts(sn_ggml_type_name(0));
    return 0;
}
