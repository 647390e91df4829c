/* tests/link/llm_open.c: the llm module as a program linked against sn_llm alone (see
** tests/layout.cmake): opens an `openai` backend (no request is sent), prints its description,
** and checks that an unknown kind is refused. */
#include "llm/llm.h"

int main(void)
{
    struct sn_err err = {0};
    struct sn_llm_backend *b = NULL;
    cJSON *cfg = cJSON_Parse("{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:9/v1\","
                             "\"model\":\"m\",\"cache\":false}");
    int rc = sn_llm_backend_open(cfg, &b, &err);
    if (!rc)
        printf("%s: %s\n", sn_llm_backend_kind(b), sn_llm_backend_describe(b));
    sn_llm_backend_close(b);
    cJSON_Delete(cfg);
    if (rc) {
        fprintf(stderr, "llm_open: %s\n", err.msg);
        return 1;
    }
    cfg = cJSON_Parse("{\"kind\":\"sim\"}"); /* "sim" lives in sim/, unknown here */
    rc = sn_llm_backend_open(cfg, &b, &err);
    cJSON_Delete(cfg);
    if (rc != SN_E_ARG || b) {
        fprintf(stderr, "llm_open: kind \"sim\" was not refused\n");
        return 1;
    }
    return 0;
}
