/* tests/link/context.c: a program linked against sn_context alone (tests/layout.cmake), so the
** link check sees everything linking that library brings in: the context a detector sees must
** render without HDF5, libcurl or libtorch (docs/design.md §3). */
#include "context/context.h"

#include <stdio.h>

int main(void)
{
    struct sn_err err = {0};
    struct sn_buf out = {0};
    struct sn_context_params p = sn_context_default_params();
    struct sn_context_msg m = {0, 1, "B", "It is B. FINAL ANSWER: B"};
    int rc = sn_context_from_msgs("Question: ?", &m, 1, &p, &out, &err);
    if (!rc)
        puts(out.data);
    sn_buf_free(&out);
    return rc ? 1 : 0;
}
