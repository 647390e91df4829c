/* tests/link/import.c: a program linked against sn_import alone (tests/layout.cmake), so the link
** check sees everything linking that library brings in. */
#include "import/import.h"

#include <stdio.h>

int main(void)
{
    puts(sn_import_default_params().format);
    return 0;
}
