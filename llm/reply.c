/* llm/reply.c: what a completion owns (llm/llm.h, struct sn_llm_reply) and its free. Below
** the backend handle (backend.c) and the OpenAI client's reply parser (openai_parse.c), which
** both hand replies back and free them on failure. */
#include "llm/llm.h"

void sn_llm_reply_free(struct sn_llm_reply *r)
{
    if (!r)
        return;
    sn_free(r->text);
    sn_free(r->finish_reason);
    sn_free(r->refusal);
    sn_free(r->model);
    sn_free(r->system_fingerprint);
    r->text = r->finish_reason = r->refusal = r->model = r->system_fingerprint = NULL;
}
