/* tests/link/serve.c: a program linked against sn_serve alone (tests/layout.cmake): the HTTP
** server needs libmicrohttpd and the detector, never HDF5, libcurl or libtorch
** (docs/design.md §3; docs/agents.md "The server"). */
#include "serve/serve.h"

#include <stdio.h>
#include <string.h>

int main(void)
{
    struct sn_err err = {0};
    struct sn_serve_req req;
    const char *body = "{\"context\":\"c\",\"response\":\"r\"}";
    int rc = sn_serve_parse(SN_SERVE_SCORE, body, strlen(body), 8, &req, &err);
    if (!rc)
        printf("%zu\n", req.n);
    sn_serve_req_free(&req);
    return rc ? 1 : 0;
}
