/* serve/request.c: the request bodies of `sentinel serve` (serve/serve.h; docs/agents.md "The
** server"), parsed and checked into struct sn_serve_req. Bodies come from the network: any
** bytes, so the text must be UTF-8 (the tokenizer's input), every field has its type checked
** and every count its bound, and a failure names the field. */
#include "serve/serve_internal.h"
#include "defense/defense.h"

#include <math.h>
#include <string.h>

void sn_serve_req_free(struct sn_serve_req *req)
{
    if (!req)
        return;
    cJSON_Delete(req->json);
    sn_free(req->contexts);
    sn_free(req->texts);
    sn_free(req->answers);
    sn_free(req->agents);
    sn_free(req->options);
    memset(req, 0, sizeof *req);
}

static int alloc_items(struct sn_serve_req *r, size_t n, struct sn_err *err)
{
    r->n = n;
    r->contexts = sn_calloc(n + 1, sizeof *r->contexts);
    r->texts = sn_calloc(n + 1, sizeof *r->texts);
    r->answers = sn_calloc(n + 1, sizeof *r->answers);
    r->agents = sn_calloc(n + 1, sizeof *r->agents);
    if (!r->contexts || !r->texts || !r->answers || !r->agents)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    return SN_OK;
}

/* a string field: required, or absent = NULL */
static int get_str(const cJSON *o, const char *key, bool required, const char **out,
                   struct sn_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = NULL;
    if (!v) {
        if (required)
            return sn_err_set(err, SN_E_FORMAT, "missing field \"%s\" (a string)", key);
        return SN_OK;
    }
    if (!cJSON_IsString(v))
        return sn_err_set(err, SN_E_FORMAT, "field \"%s\" must be a string", key);
    *out = v->valuestring;
    return SN_OK;
}

/* an integer field in [lo, hi]; absent = dflt */
static int get_int(const cJSON *o, const char *key, long long lo, long long hi, long long dflt,
                   long long *out, struct sn_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = dflt;
    if (!v || cJSON_IsNull(v))
        return SN_OK;
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!cJSON_IsNumber(v) || !(d >= (double)lo && d <= (double)hi) || d != floor(d))
        return sn_err_set(err, SN_E_FORMAT, "field \"%s\" must be an integer in [%lld, %lld]",
                          key, lo, hi);
    *out = (long long)d;
    return SN_OK;
}

/* an array of n strings (n in [1, max]) */
static int get_str_array(const cJSON *o, const char *key, int max, const cJSON **arr,
                         size_t *n, struct sn_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *arr = v;
    *n = 0;
    if (!cJSON_IsArray(v))
        return sn_err_set(err, SN_E_FORMAT, "field \"%s\" must be an array of strings", key);
    int m = cJSON_GetArraySize(v);
    if (m < 1)
        return sn_err_set(err, SN_E_FORMAT, "field \"%s\" is empty", key);
    if (m > max)
        return sn_err_set(err, SN_E_ARG, "field \"%s\" has %d items (at most %d per request)",
                          key, m, max);
    size_t i = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, v) {
        if (!cJSON_IsString(x))
            return sn_err_set(err, SN_E_FORMAT, "%s[%zu] must be a string", key, i);
        i++;
    }
    *n = (size_t)m;
    return SN_OK;
}

static int check_keys(const cJSON *o, const char *const *keys, struct sn_err *err)
{
    const cJSON *x;
    cJSON_ArrayForEach(x, o) {
        bool ok = false;
        for (size_t i = 0; keys[i] && !ok; i++)
            ok = strcmp(x->string, keys[i]) == 0;
        if (!ok)
            return sn_err_set(err, SN_E_FORMAT, "unknown field \"%.64s\"", x->string);
    }
    return SN_OK;
}

static int parse_score(struct sn_serve_req *r, int max, struct sn_err *err)
{
    static const char *const keys[] = {"context", "response", "responses", "pairs", "model",
                                       NULL};
    const cJSON *o = r->json, *arr, *x;
    int rc = check_keys(o, keys, err);
    if (rc)
        return rc;
    const cJSON *pairs = cJSON_GetObjectItemCaseSensitive(o, "pairs");
    if (pairs) {
        if (cJSON_GetObjectItemCaseSensitive(o, "context") ||
            cJSON_GetObjectItemCaseSensitive(o, "response") ||
            cJSON_GetObjectItemCaseSensitive(o, "responses"))
            return sn_err_set(err, SN_E_FORMAT, "give either \"pairs\" or \"context\" with "
                              "\"response\"/\"responses\", not both");
        if (!cJSON_IsArray(pairs) || cJSON_GetArraySize(pairs) < 1)
            return sn_err_set(err, SN_E_FORMAT, "field \"pairs\" must be a non-empty array of "
                              "{\"context\": string, \"response\": string}");
        int m = cJSON_GetArraySize(pairs);
        if (m > max)
            return sn_err_set(err, SN_E_ARG, "field \"pairs\" has %d items (at most %d per "
                              "request)", m, max);
        if ((rc = alloc_items(r, (size_t)m, err)))
            return rc;
        size_t i = 0;
        cJSON_ArrayForEach(x, pairs) {
            const cJSON *c = cJSON_GetObjectItemCaseSensitive(x, "context");
            const cJSON *s = cJSON_GetObjectItemCaseSensitive(x, "response");
            if (!cJSON_IsObject(x) || !cJSON_IsString(c) || !cJSON_IsString(s) ||
                cJSON_GetArraySize(x) != 2)
                return sn_err_set(err, SN_E_FORMAT, "pairs[%zu] must be {\"context\": string, "
                                  "\"response\": string}", i);
            r->contexts[i] = c->valuestring;
            r->texts[i] = s->valuestring;
            i++;
        }
        return SN_OK;
    }
    const char *ctx, *one;
    if ((rc = get_str(o, "context", true, &ctx, err)) ||
        (rc = get_str(o, "response", false, &one, err)))
        return rc;
    bool many = cJSON_GetObjectItemCaseSensitive(o, "responses") != NULL;
    if (one && many)
        return sn_err_set(err, SN_E_FORMAT, "give \"response\" or \"responses\", not both");
    if (!one && !many)
        return sn_err_set(err, SN_E_FORMAT, "missing field \"responses\" (an array of strings) "
                          "or \"response\" (a string)");
    size_t n = 1;
    if (many && (rc = get_str_array(o, "responses", max, &arr, &n, err)))
        return rc;
    if ((rc = alloc_items(r, n, err)))
        return rc;
    r->shared = true;
    if (one) {
        r->contexts[0] = ctx;
        r->texts[0] = one;
        return SN_OK;
    }
    size_t i = 0;
    cJSON_ArrayForEach(x, arr) {
        r->contexts[i] = ctx;
        r->texts[i++] = x->valuestring;
    }
    return SN_OK;
}

static int parse_rerank(struct sn_serve_req *r, int max, struct sn_err *err)
{
    static const char *const keys[] = {"query", "documents", "top_n", "return_documents",
                                       "model", NULL};
    const cJSON *o = r->json, *arr, *x;
    const char *q;
    size_t n;
    long long top;
    int rc = check_keys(o, keys, err);
    if (rc || (rc = get_str(o, "query", true, &q, err)) ||
        (rc = get_str_array(o, "documents", max, &arr, &n, err)) ||
        (rc = get_int(o, "top_n", 1, 1 << 30, (long long)n, &top, err)) ||
        (rc = alloc_items(r, n, err)))
        return rc;
    const cJSON *rd = cJSON_GetObjectItemCaseSensitive(o, "return_documents");
    if (rd && !cJSON_IsBool(rd))
        return sn_err_set(err, SN_E_FORMAT, "field \"return_documents\" must be true or false");
    r->return_documents = cJSON_IsTrue(rd);
    r->top_n = top > (long long)n ? (int)n : (int)top;
    r->shared = true;
    size_t i = 0;
    cJSON_ArrayForEach(x, arr) {
        r->contexts[i] = q;
        r->texts[i++] = x->valuestring;
    }
    return SN_OK;
}

static int parse_debate(struct sn_serve_req *r, struct sn_err *err)
{
    static const char *const keys[] = {"sentinels", "k", "rule", "seed", "task", "question",
                                       "options", NULL};
    const cJSON *o = r->json, *x;
    long long k, seed;
    const char *rule;
    int rc = check_keys(o, keys, err);
    if (rc || (rc = get_int(o, "k", 1, SN_SENTINEL_MAX_AGENTS - 1, 1, &k, err)) ||
        (rc = get_int(o, "seed", 0, (1LL << 53), 0, &seed, err)) ||
        (rc = get_str(o, "rule", false, &rule, err)) ||
        (rc = get_str(o, "task", false, &r->task, err)) ||
        (rc = get_str(o, "question", false, &r->question, err)))
        return rc;
    r->k = (int)k;
    r->seed = (uint64_t)seed;
    r->rule = SN_DEFENSE_RULE_ALL;
    if (rule && strcmp(rule, "all") != 0) {
        if (strcmp(rule, "unlisted") != 0)
            return sn_err_set(err, SN_E_FORMAT, "field \"rule\": unknown rule \"%.32s\" "
                              "(\"all\" or \"unlisted\")", rule);
        r->rule = SN_DEFENSE_RULE_UNLISTED;
    }
    if (!r->task == !r->question)
        return sn_err_set(err, SN_E_FORMAT, "give the task as \"task\" (the text) or as "
                          "\"question\" (with \"options\" for multiple choice), exactly one");
    const cJSON *opts = cJSON_GetObjectItemCaseSensitive(o, "options");
    if (opts && r->task)
        return sn_err_set(err, SN_E_FORMAT, "\"options\" goes with \"question\", not \"task\"");
    if (opts) {
        const cJSON *arr;
        if ((rc = get_str_array(o, "options", 26, &arr, &r->n_options, err))) {
            err->code = SN_E_FORMAT; /* a bad request (400), not an oversized one */
            return SN_E_FORMAT;
        }
        r->options = sn_calloc(r->n_options + 1, sizeof *r->options);
        if (!r->options)
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        size_t i = 0;
        cJSON_ArrayForEach(x, arr)
            r->options[i++] = x->valuestring;
    }
    const cJSON *sn = cJSON_GetObjectItemCaseSensitive(o, "sentinels");
    if (!cJSON_IsArray(sn) || cJSON_GetArraySize(sn) < 1)
        return sn_err_set(err, SN_E_FORMAT, "field \"sentinels\" must be a non-empty array of "
                          "agent ids (the agents that run Algorithm 1)");
    size_t i = 0;
    cJSON_ArrayForEach(x, sn) {
        if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble >= SN_SENTINEL_MAX_AGENTS
            || x->valuedouble != floor(x->valuedouble))
            return sn_err_set(err, SN_E_FORMAT, "sentinels[%zu] must be an agent id in [0, %d]",
                              i, SN_SENTINEL_MAX_AGENTS - 1);
        uint64_t bit = 1ULL << (int)x->valuedouble;
        if (r->sentinels & bit)
            return sn_err_set(err, SN_E_FORMAT, "sentinels[%zu]: agent %d listed twice", i,
                              (int)x->valuedouble);
        r->sentinels |= bit;
        i++;
    }
    return SN_OK;
}

/* "answer": a string; null = explicitly none parsed (stored as ""); absent = NULL (extract) */
static int get_answer(const cJSON *x, const char **out, struct sn_err *err)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(x, "answer");
    *out = NULL;
    if (cJSON_IsNull(a)) {
        *out = "";
        return SN_OK;
    }
    int rc = get_str(x, "answer", false, out, err);
    if (!rc && *out && (!**out || strlen(*out) >= 32))
        rc = sn_err_set(err, SN_E_FORMAT, "field \"answer\" must be 1 to 31 bytes (or null)");
    return rc;
}

static int parse_round(struct sn_serve_req *r, int max, struct sn_err *err)
{
    static const char *const keys[] = {"messages", "round", NULL};
    static const char *const mkeys[] = {"agent", "text", "answer", NULL};
    const cJSON *o = r->json, *x;
    long long round;
    int rc = check_keys(o, keys, err);
    if (rc || (rc = get_int(o, "round", 0, 1 << 20, -1, &round, err)))
        return rc;
    r->round = (int)round;
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(o, "messages");
    if (!cJSON_IsArray(ms))
        return sn_err_set(err, SN_E_FORMAT, "field \"messages\" must be an array of {\"agent\": "
                          "id, \"text\": string, \"answer\": string (optional)}");
    int m = cJSON_GetArraySize(ms);
    if (m > max)
        return sn_err_set(err, SN_E_ARG, "field \"messages\" has %d items (at most %d per "
                          "request)", m, max);
    if ((rc = alloc_items(r, (size_t)m, err)))
        return rc;
    size_t i = 0;
    uint64_t seen = 0;
    cJSON_ArrayForEach(x, ms) {
        char where[32];
        snprintf(where, sizeof where, "messages[%zu]", i);
        long long agent;
        if (!cJSON_IsObject(x))
            return sn_err_set(err, SN_E_FORMAT, "%s must be an object", where);
        if ((rc = check_keys(x, mkeys, err)) ||
            (rc = get_int(x, "agent", 0, SN_SENTINEL_MAX_AGENTS - 1, -1, &agent, err)) ||
            (rc = get_str(x, "text", true, &r->texts[i], err)) ||
            (rc = get_answer(x, &r->answers[i], err)))
            return sn_err_wrap(err, "%s", where);
        if (agent < 0)
            return sn_err_set(err, SN_E_FORMAT, "%s: missing field \"agent\" (the sender's id)",
                              where);
        if ((seen >> agent) & 1)
            return sn_err_set(err, SN_E_FORMAT, "%s: agent %lld sent two messages this round",
                              where, agent);
        seen |= 1ULL << agent;
        r->agents[i] = (int)agent;
        i++;
    }
    return SN_OK;
}

int sn_serve_parse(int kind, const char *body, size_t len, int max_items,
                   struct sn_serve_req *req, struct sn_err *err)
{
    memset(req, 0, sizeof *req);
    req->kind = kind;
    req->round = -1;
    size_t bad = 0;
    if (!sn_utf8_valid(body, len, &bad))
        return sn_err_set(err, SN_E_FORMAT, "the body is not UTF-8 (invalid byte sequence at "
                          "byte %zu)", bad);
    int rc = sn_json_parse(body, len, "body", &req->json, err);
    if (rc)
        return rc;
    if (!cJSON_IsObject(req->json))
        rc = sn_err_set(err, SN_E_FORMAT, "the body must be a JSON object");
    else if (kind == SN_SERVE_SCORE)
        rc = parse_score(req, max_items, err);
    else if (kind == SN_SERVE_RERANK)
        rc = parse_rerank(req, max_items, err);
    else if (kind == SN_SERVE_DEBATE_NEW)
        rc = parse_debate(req, err);
    else if (kind == SN_SERVE_ROUND)
        rc = parse_round(req, max_items, err);
    else
        rc = sn_err_set(err, SN_E_ARG, "unknown request kind %d", kind);
    if (rc)
        sn_serve_req_free(req);
    return rc;
}

/* The error body (docs/agents.md "Errors"): the OpenAI-style shape most clients read. */
int sn_serve_error_json(int status, const char *msg, struct sn_buf *out, struct sn_err *err)
{
    const char *type = status == 401   ? "authentication_error"
                       : status == 404 ? "not_found"
                       : status == 405 ? "method_not_allowed"
                       : status == 409 ? "conflict"
                       : status == 413 ? "request_too_large"
                       : status == 429 ? "too_many_sessions"
                       : status == 503 ? "unavailable"
                       : status >= 500 ? "server_error"
                                       : "invalid_request";
    cJSON *o = cJSON_CreateObject(), *e = cJSON_CreateObject();
    int rc = SN_OK;
    if (!o || !e || !cJSON_AddItemToObject(o, "error", e)) {
        cJSON_Delete(e);
        e = NULL;
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
    }
    if (!rc && (!cJSON_AddNumberToObject(e, "code", status) ||
                !cJSON_AddStringToObject(e, "type", type) ||
                !cJSON_AddStringToObject(e, "message", msg ? msg : "")))
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
    char *txt = rc ? NULL : cJSON_PrintUnformatted(o);
    if (!rc && !txt)
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
    if (!rc)
        rc = sn_buf_puts(out, txt, err);
    cJSON_free(txt);
    cJSON_Delete(o);
    return rc;
}
