/* llm/backend.c: the backend handle of llm/llm.h: dispatch on the config's "kind" (the
** built-in "openai" of llm/openai.c, or a kind the caller names, such as sim/'s "sim"), the
** calls through the ops table, and the handle that wraps kinds implemented outside llm/.
** No weak fallback for the openai constructor: in a static library a weak definition would stop
** the linker from pulling the real one out of the archive. */
#include "llm/llm_internal.h"

#include <string.h>

/* `"sim" or "openai"`: the names of the given kinds, then the built-in one. */
static void kind_list(const struct sn_llm_kind *kinds, size_t n_kinds, char *out, size_t out_n)
{
    size_t k = 0;
    out[0] = '\0';
    for (size_t i = 0; i <= n_kinds && k < out_n; i++) {
        const char *name = i < n_kinds ? kinds[i].name : "openai";
        int w = snprintf(out + k, out_n - k, "%s\"%s\"", i == 0 ? "" : " or ", name);
        if (w < 0)
            break;
        k += (size_t)w;
    }
}

int sn_llm_backend_open_with(const cJSON *config, const struct sn_llm_kind *kinds, size_t n_kinds,
                             struct sn_llm_backend **out, struct sn_err *err)
{
    *out = NULL;
    char names[160];
    kind_list(kinds, n_kinds, names, sizeof names);
    if (!cJSON_IsObject(config))
        return sn_err_set(err, SN_E_ARG, "endpoint: expected an object like {\"kind\":\"%s\"}",
                          n_kinds ? kinds[0].name : "openai");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(config, "kind");
    if (!cJSON_IsString(kind))
        return sn_err_set(err, SN_E_ARG, "endpoint: missing \"kind\" (%s)", names);
    for (size_t i = 0; i < n_kinds; i++)
        if (kinds[i].name && kinds[i].open && strcmp(kind->valuestring, kinds[i].name) == 0)
            return kinds[i].open(config, out, err);
    if (strcmp(kind->valuestring, "openai") == 0)
        return sn_llm_openai_open(config, out, err);
    return sn_err_set(err, SN_E_ARG, "endpoint: unknown kind '%s' (expected %s)",
                      kind->valuestring, names);
}

int sn_llm_backend_open(const cJSON *config, struct sn_llm_backend **out, struct sn_err *err)
{
    return sn_llm_backend_open_with(config, NULL, 0, out, err);
}

int sn_llm_backend_create(const struct sn_llm_backend_ops *ops, void *impl, const char *describe,
                          struct sn_llm_backend **out, struct sn_err *err)
{
    *out = NULL;
    if (!ops || !ops->kind || !ops->complete || !ops->close)
        return sn_err_set(err, SN_E_ARG, "sn_llm_backend_create: an ops table needs a kind, "
                          "complete and close");
    struct sn_llm_backend *b = sn_calloc(1, sizeof *b);
    if (!b)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    b->ops = ops;
    b->impl = impl;
    b->wrapper = true;
    snprintf(b->describe, sizeof b->describe, "%s", describe ? describe : ops->kind);
    *out = b;
    return SN_OK;
}

void *sn_llm_backend_impl(const struct sn_llm_backend *b)
{
    return b ? b->impl : NULL;
}

struct sn_llm_stats *sn_llm_backend_counters(struct sn_llm_backend *b)
{
    return &b->stats;
}

void sn_llm_backend_close(struct sn_llm_backend *b)
{
    if (!b)
        return;
    bool wrapper = b->wrapper; /* ops->close of a built-in kind frees b itself */
    if (b->ops && b->ops->close)
        b->ops->close(b);
    if (wrapper)
        sn_free(b);
}

int sn_llm_complete(struct sn_llm_backend *b, const struct sn_llm_request *req,
                    struct sn_llm_reply *out, struct sn_err *err)
{
    memset(out, 0, sizeof *out);
    if (!b || !b->ops || !b->ops->complete)
        return sn_err_set(err, SN_E_ARG, "sn_llm_complete: no backend");
    return b->ops->complete(b, req, out, err);
}

const char *sn_llm_backend_describe(const struct sn_llm_backend *b)
{
    return b ? b->describe : "";
}

const char *sn_llm_backend_kind(const struct sn_llm_backend *b)
{
    return b && b->ops && b->ops->kind ? b->ops->kind : "";
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
    s.paused = __atomic_load_n(&t->paused, __ATOMIC_RELAXED);
    return s;
}
