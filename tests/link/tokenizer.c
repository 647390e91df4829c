/* tests/link/tokenizer.c: a program linked against sn_tokenizer alone (tests/layout.cmake), so the
** link check sees everything linking that library brings in. */
#include "tokenizer/tokenizer.h"

#include <stdio.h>

int main(void)
{
    sn_tokenizer_free(NULL);
    return 0;
}
