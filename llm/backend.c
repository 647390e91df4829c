/* data/sim/backend.c: dispatch of the LLM backend contract (data/sim/backend.h) on the
** config's "kind": "sim" (data/sim/simagent.c) or "openai" (data/sim/openai.c).
** No weak fallback for the openai constructor: in a static library a weak definition would stop
** the linker from pulling the real one out of the archive. */
#include "data/sim/backend.h"

#include <string.h>

int sn_llm_backend_open(const cJSON *config, struct sn_llm_backend **out, struct sn_err *err)
{
    *out = NULL;
    if (!cJSON_IsObject(config))
        return sn_err_set(err, SN_E_ARG, "endpoint: expected an object like {\"kind\":\"sim\"}");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(config, "kind");
    if (!cJSON_IsString(kind))
        return sn_err_set(err, SN_E_ARG, "endpoint: missing \"kind\" (\"sim\" or \"openai\")");
    if (strcmp(kind->valuestring, "sim") == 0)
        return sn_llm_sim_open(config, out, err);
    if (strcmp(kind->valuestring, "openai") == 0)
        return sn_llm_openai_open(config, out, err);
    return sn_err_set(err, SN_E_ARG, "endpoint: unknown kind '%s' (expected \"sim\" or "
                      "\"openai\")", kind->valuestring);
}

void sn_llm_backend_close(struct sn_llm_backend *b)
{
    if (b && b->ops && b->ops->close)
        b->ops->close(b);
}

int sn_llm_complete(struct sn_llm_backend *b, const struct sn_llm_request *req,
                    struct sn_llm_reply *out, struct sn_err *err)
{
    memset(out, 0, sizeof *out);
    if (!b || !b->ops || !b->ops->complete)
        return sn_err_set(err, SN_E_ARG, "sn_llm_complete: no backend");
    return b->ops->complete(b, req, out, err);
}

void sn_llm_reply_free(struct sn_llm_reply *r)
{
    if (!r)
        return;
    sn_free(r->text);
    r->text = NULL;
}

const char *sn_llm_backend_describe(const struct sn_llm_backend *b)
{
    return b ? b->describe : "";
}

struct sn_llm_stats sn_llm_backend_stats(const struct sn_llm_backend *b)
{
    /* relaxed atomic loads: implementations update these from many threads */
    struct sn_llm_stats s = {0};
    if (!b)
        return s;
    const struct sn_llm_stats *t = &b->stats;
    s.requests = __atomic_load_n(&t->requests, __ATOMIC_RELAXED);
    s.completed = __atomic_load_n(&t->completed, __ATOMIC_RELAXED);
    s.failed = __atomic_load_n(&t->failed, __ATOMIC_RELAXED);
    s.retries = __atomic_load_n(&t->retries, __ATOMIC_RELAXED);
    s.cache_hits = __atomic_load_n(&t->cache_hits, __ATOMIC_RELAXED);
    s.prompt_tokens = __atomic_load_n(&t->prompt_tokens, __ATOMIC_RELAXED);
    s.completion_tokens = __atomic_load_n(&t->completion_tokens, __ATOMIC_RELAXED);
    s.in_flight = __atomic_load_n(&t->in_flight, __ATOMIC_RELAXED);
    return s;
}
