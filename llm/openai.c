/* llm/openai.c: the `openai` LLM backend (llm/llm.h): OpenAI-compatible
** POST {base_url}/chat/completions over libcurl, for vLLM, llama.cpp server, Ollama and hosted
** APIs. Config keys, retry rules, cache layout and what is recorded: docs/openai.md.
**
** Threads. sn_llm_complete() is called from many engine threads. Each call builds its request
** body, looks in the on-disk cache, and otherwise queues a job and sleeps on the job's condition
** variable. One event-loop thread per backend owns a curl multi handle: it starts queued jobs
** while fewer than `concurrency` transfers are active, drives them, and on completion either
** wakes the caller or puts the job back in the queue with a ready time (backoff or
** Retry-After). Jobs live on their caller's stack; the loop touches a job only while it is
** queued or active, and hands it back (done = true) under the lock. Close the backend only
** after every caller has returned (llm/llm.h); jobs still queued then fail with
** SN_E_CANCELLED.
**
** Secrets. The API key is read once from the environment variable named by `api_key_env` and
** lives only in the Authorization header list. Messages that quote server text pass through
** sn_openai_sanitize, which redacts the key should a server echo it. The key never enters the
** cache key, cache files, describe() text or error messages. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "llm/openai_internal.h"

#define OA_CACHE_SCHEMA  "sentinel.openai_cache/2"
#define OA_KEY_PREFIX    "sentinel.openai.request/1\n"
#define OA_CACHE_STRIPES 64

struct oa_job {
    struct oa_job *next;
    /* request (owned by the caller's frame) */
    const char *body;
    size_t      body_len;
    /* scheduling (loop thread, under lock while queued) */
    double ready_at; /* sn_now() time before which the job must not start */
    int    attempts; /* started so far */
    /* one attempt (loop thread only while active) */
    CURL         *easy;
    struct sn_buf resp;
    bool          overflow, nomem;
    char          retry_after[64], retry_after_ms[32], should_retry[8];
    char          errbuf[CURL_ERROR_SIZE];
    double        t_start;
    /* result (written by the loop thread, then done = true under lock) */
    bool                done;
    int                 rc;
    struct sn_err       err;
    struct sn_llm_reply reply;
    char                finish[32];
    char               *raw;  /* sn_openai_reply_essentials of the body, for the cache */
    pthread_cond_t      cond;
};

struct oa_backend {
    struct sn_llm_backend base; /* first member (llm/llm_internal.h) */
    /* configuration (read-only after open) */
    char   *url;        /* {base_url}/chat/completions, credentials included if given */
    char   *models_url; /* {base_url}/models: the readiness probe */
    char   *public_url; /* base_url without credentials: messages, cache key, describe */
    char   *model;      /* NULL = the request must name one */
    char   *api_key;    /* NULL = no Authorization header; never printed */
    int     concurrency, max_retries, max_tokens;
    double  timeout_s, connect_timeout_s, temperature, top_p;
    double  retry_after_max_s, backoff_base_s, backoff_max_s;
    double  ready_timeout_s; /* 0 = no readiness poll, no pause */
    double  down_since;      /* loop thread: sn_now() of the first "down" failure, 0 = up */
    size_t  max_reply_bytes;
    char   *cache_dir;  /* NULL = no cache */
    bool    cache_fsync; /* entries durable (sn_atomic_write) or only atomic (rename) */
    cJSON  *extra_body; /* keys sorted recursively, or NULL */
    struct curl_slist *headers;
    /* event loop */
    CURLM          *multi;
    pthread_t       thread;
    bool            thread_started;
    pthread_mutex_t lock;
    struct oa_job  *queue_head, *queue_tail; /* waiting jobs, FIFO */
    bool            stop;
    int             n_active;
    CURL          **idle;   /* reusable easy handles (keep their connection state) */
    int             n_idle;
    struct oa_job **active; /* transfers in progress (loop thread only), n_active of them */
    struct sn_rng   jitter; /* loop thread only */
    pthread_mutex_t cache_lock[OA_CACHE_STRIPES]; /* same key -> same stripe */
};

static const char *const oa_keys[] = {
    "kind", "name", "base_url", "model", "api_key_env", "concurrency", "timeout_s",
    "connect_timeout_s", "max_retries", "cache_dir", "cache", "temperature", "top_p",
    "max_tokens", "extra_body", "headers", "retry_after_max_s", "backoff_base_s",
    "backoff_max_s", "max_reply_bytes", "cache_fsync", "ready_timeout_s", NULL
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode       curl_init_rc = CURLE_OK;
static void           curl_init(void) { curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

#define STAT_ADD(b, field, v) __atomic_fetch_add(&(b)->base.stats.field, (v), __ATOMIC_RELAXED)

/* ---- configuration ------------------------------------------------------------------------ */

/* Sorts an object's members by key, recursively, so that the request body (and so the cache
** key) does not depend on the order keys were written in the recipe. */
static void sort_object(cJSON *o)
{
    if (!o)
        return;
    for (cJSON *c = o->child; c; c = c->next)
        sort_object(c);
    if (!cJSON_IsObject(o))
        return;
    cJSON *sorted = NULL;
    cJSON *c = o->child;
    while (c) {
        cJSON *next = c->next;
        c->prev = c->next = NULL;
        if (!sorted || strcmp(c->string, sorted->string) < 0) {
            c->next = sorted;
            sorted = c;
        } else {
            cJSON *p = sorted;
            while (p->next && strcmp(p->next->string, c->string) <= 0)
                p = p->next;
            c->next = p->next;
            p->next = c;
        }
        c = next;
    }
    /* cJSON keeps child->prev pointing at the last element */
    cJSON *last = sorted, *prev = NULL;
    for (cJSON *p = sorted; p; p = p->next) {
        if (prev)
            p->prev = prev;
        prev = p;
        last = p;
    }
    if (sorted)
        sorted->prev = last;
    o->child = sorted;
}

static bool header_text_ok(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return false;
    return true;
}

static int read_config(struct oa_backend *o, const cJSON *cfg, const char *where,
                       struct sn_err *err)
{
    int64_t i64;
    double d;
    bool cache = true;
    const char *s;
    int rc;

    if ((rc = sn_recipe_check_keys(cfg, where, oa_keys, err)))
        return rc;
    if ((rc = sn_json_get_string(cfg, where, "base_url", NULL, &s, err)))
        return rc;
    if (!s || (strncmp(s, "http://", 7) != 0 && strncmp(s, "https://", 8) != 0))
        return sn_err_set(err, SN_E_ARG,
                          "recipe: %s.base_url must be an http:// or https:// URL such as "
                          "\"http://127.0.0.1:8000/v1\"%s", where, s ? "" : " (missing)");
    o->public_url = sn_openai_public_url(s);
    size_t n = strlen(s);
    while (n > 0 && s[n - 1] == '/')
        n--;
    o->url = sn_malloc(n + sizeof "/chat/completions");
    if (!o->public_url || !o->url)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    memcpy(o->url, s, n);
    memcpy(o->url + n, "/chat/completions", sizeof "/chat/completions");
    if (!(o->models_url = sn_malloc(n + sizeof "/models")))
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    memcpy(o->models_url, s, n);
    memcpy(o->models_url + n, "/models", sizeof "/models");

    if ((rc = sn_json_get_string(cfg, where, "model", NULL, &s, err)))
        return rc;
    if (s && !(o->model = sn_strdup(s)))
        return sn_err_set(err, SN_E_NOMEM, "out of memory");

    if ((rc = sn_json_get_int(cfg, where, "concurrency", 8, &i64, err)))
        return rc;
    if (i64 < 1 || i64 > 4096)
        return sn_err_set(err, SN_E_ARG, "recipe: %s.concurrency must be in [1, 4096], got %"
                          PRId64, where, i64);
    o->concurrency = (int)i64;
    if ((rc = sn_json_get_int(cfg, where, "max_retries", 6, &i64, err)))
        return rc;
    if (i64 < 0 || i64 > 100)
        return sn_err_set(err, SN_E_ARG, "recipe: %s.max_retries must be in [0, 100], got %"
                          PRId64, where, i64);
    o->max_retries = (int)i64;
    if ((rc = sn_json_get_int(cfg, where, "max_tokens", 0, &i64, err)))
        return rc;
    if (i64 < 0 || i64 > INT32_MAX)
        return sn_err_set(err, SN_E_ARG, "recipe: %s.max_tokens must be >= 0 (0 = not sent), "
                          "got %" PRId64, where, i64);
    o->max_tokens = (int)i64;
    if ((rc = sn_json_get_int(cfg, where, "max_reply_bytes", 8 << 20, &i64, err)))
        return rc;
    if (i64 < 1024 || i64 > ((int64_t)1 << 30))
        return sn_err_set(err, SN_E_ARG, "recipe: %s.max_reply_bytes must be in [1024, 2^30], "
                          "got %" PRId64, where, i64);
    o->max_reply_bytes = (size_t)i64;

    static const struct { const char *key; double dflt, lo, hi; size_t off; } dbl[] = {
        { "timeout_s", 600, 0.001, 86400, offsetof(struct oa_backend, timeout_s) },
        { "connect_timeout_s", 5, 0.001, 3600, offsetof(struct oa_backend, connect_timeout_s) },
        { "retry_after_max_s", 120, 0, 86400, offsetof(struct oa_backend, retry_after_max_s) },
        { "backoff_base_s", 0.5, 0, 3600, offsetof(struct oa_backend, backoff_base_s) },
        { "backoff_max_s", 8, 0, 3600, offsetof(struct oa_backend, backoff_max_s) },
        { "ready_timeout_s", 0, 0, 86400, offsetof(struct oa_backend, ready_timeout_s) },
    };
    for (size_t k = 0; k < sizeof dbl / sizeof dbl[0]; k++) {
        if ((rc = sn_json_get_double(cfg, where, dbl[k].key, dbl[k].dflt, &d, err)))
            return rc;
        if (!(d >= dbl[k].lo && d <= dbl[k].hi))
            return sn_err_set(err, SN_E_ARG, "recipe: %s.%s must be in [%g, %g], got %g", where,
                              dbl[k].key, dbl[k].lo, dbl[k].hi, d);
        *(double *)((char *)o + dbl[k].off) = d;
    }
    if ((rc = sn_json_get_double(cfg, where, "temperature", -1, &o->temperature, err)))
        return rc;
    if (cJSON_HasObjectItem(cfg, "temperature") && !(o->temperature >= 0 && o->temperature <= 2))
        return sn_err_set(err, SN_E_ARG, "recipe: %s.temperature must be in [0, 2], got %g",
                          where, o->temperature);
    if ((rc = sn_json_get_double(cfg, where, "top_p", -1, &o->top_p, err)))
        return rc;
    if (cJSON_HasObjectItem(cfg, "top_p") && !(o->top_p >= 0 && o->top_p <= 1))
        return sn_err_set(err, SN_E_ARG, "recipe: %s.top_p must be in [0, 1], got %g", where,
                          o->top_p);

    /* cache */
    if ((rc = sn_json_get_bool(cfg, where, "cache", true, &cache, err)))
        return rc;
    if ((rc = sn_json_get_bool(cfg, where, "cache_fsync", true, &o->cache_fsync, err)))
        return rc;
    if ((rc = sn_json_get_string(cfg, where, "cache_dir", NULL, &s, err)))
        return rc;
    if (cache && s && *s) {
        if (!(o->cache_dir = sn_strdup(s)))
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        if ((rc = sn_mkdirs(o->cache_dir, err)))
            return sn_err_wrap(err, "%s.cache_dir", where);
    }

    /* extra_body: merged into every request body (vLLM extras such as top_k) */
    const cJSON *eb = cJSON_GetObjectItemCaseSensitive(cfg, "extra_body");
    if (eb && !cJSON_IsNull(eb)) {
        if (!cJSON_IsObject(eb))
            return sn_err_set(err, SN_E_ARG, "recipe: %s.extra_body must be an object", where);
        static const char *const reserved[] = { "model", "messages", "stream", "n" };
        for (size_t k = 0; k < sizeof reserved / sizeof reserved[0]; k++)
            if (cJSON_HasObjectItem(eb, reserved[k]))
                return sn_err_set(err, SN_E_ARG,
                                  "recipe: %s.extra_body.%s is not allowed (the backend sets "
                                  "model and messages itself and needs one non-streamed choice)",
                                  where, reserved[k]);
        if (!(o->extra_body = cJSON_Duplicate(eb, true)))
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        sort_object(o->extra_body);
    }

    /* headers */
    struct curl_slist *h = NULL;
    static const char *const fixed[] = { "Content-Type: application/json",
                                         "Accept: application/json", "Expect:" };
    for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; k++) {
        struct curl_slist *t = curl_slist_append(h, fixed[k]);
        if (!t)
            goto nomem;
        h = t;
    }
    o->headers = h;
    const cJSON *hdrs = cJSON_GetObjectItemCaseSensitive(cfg, "headers");
    if (hdrs && !cJSON_IsObject(hdrs))
        return sn_err_set(err, SN_E_ARG, "recipe: %s.headers must be an object of strings",
                          where);
    const cJSON *c;
    cJSON_ArrayForEach(c, hdrs)
    {
        if (!cJSON_IsString(c))
            return sn_err_set(err, SN_E_ARG, "recipe: %s.headers.%s must be a string", where,
                              c->string);
        if (!strcasecmp(c->string, "authorization") || !strcasecmp(c->string, "api-key") ||
            !strcasecmp(c->string, "x-api-key"))
            return sn_err_set(err, SN_E_ARG,
                              "recipe: %s.headers.%s would put a secret in the recipe; name the "
                              "environment variable that holds the key in %s.api_key_env",
                              where, c->string, where);
        if (!*c->string || strchr(c->string, ':') || !header_text_ok(c->string) ||
            !header_text_ok(c->valuestring))
            return sn_err_set(err, SN_E_ARG,
                              "recipe: %s.headers: bad header name or value for '%.60s'", where,
                              c->string);
        struct sn_buf line = { 0 };
        struct sn_err e = { 0 };
        if (sn_buf_printf(&line, &e, "%s: %s", c->string, c->valuestring)) {
            sn_buf_free(&line);
            goto nomem;
        }
        struct curl_slist *t = curl_slist_append(o->headers, line.data);
        sn_buf_free(&line);
        if (!t)
            goto nomem;
        o->headers = t;
    }

    /* the key: only in memory, only in the Authorization header */
    if ((rc = sn_json_get_string(cfg, where, "api_key_env", NULL, &s, err)))
        return rc;
    if (s && *s) {
        const char *key = getenv(s);
        if (key && *key) {
            if (!header_text_ok(key))
                return sn_err_set(err, SN_E_ARG, "the environment variable %s (%s.api_key_env) "
                                  "holds control characters", s, where);
            if (!(o->api_key = sn_strdup(key)))
                goto nomem;
            struct sn_buf line = { 0 };
            struct sn_err e = { 0 };
            if (sn_buf_printf(&line, &e, "Authorization: Bearer %s", key)) {
                sn_buf_free(&line);
                goto nomem;
            }
            struct curl_slist *t = curl_slist_append(o->headers, line.data);
            /* wipe our copy of the header line; curl keeps its own */
            memset(line.data, 0, line.len);
            sn_buf_free(&line);
            if (!t)
                goto nomem;
            o->headers = t;
        } else {
            SN_WARN("%s: environment variable %s (api_key_env) is not set; sending no "
                    "Authorization header", where, s);
        }
    }
    return SN_OK;
nomem:
    return sn_err_set(err, SN_E_NOMEM, "out of memory building request headers");
}

/* ---- request body and cache key ----------------------------------------------------------- */

/* Builds the JSON body of one request into *body (owned, sn_free). Fields in a fixed order:
** model (when known), messages, temperature, top_p, max_tokens, seed, then extra_body (sorted; its keys
** replace the standard ones). */
static int build_body(const struct oa_backend *o, const struct sn_llm_request *req, char **body,
                      struct sn_err *err)
{
    *body = NULL;
    const char *model = req->model ? req->model : o->model;
    if (!req->messages || req->n_messages == 0)
        return sn_err_set(err, SN_E_ARG, "openai %s: request has no messages", o->public_url);
    cJSON *j = cJSON_CreateObject();
    cJSON *msgs = NULL;
    /* no model anywhere: the field is left out, and single-model servers (llama-server,
    ** vLLM) answer with the one they serve */
    if (!j || (model && !cJSON_AddStringToObject(j, "model", model)) ||
        !(msgs = cJSON_AddArrayToObject(j, "messages")))
        goto nomem;
    for (size_t i = 0; i < req->n_messages; i++) {
        const struct sn_chat_msg *m = &req->messages[i];
        if (!m->role || !m->content) {
            cJSON_Delete(j);
            return sn_err_set(err, SN_E_ARG, "openai %s: message %zu has no %s", o->public_url,
                              i, m->role ? "content" : "role");
        }
        cJSON *mo = cJSON_CreateObject();
        if (!mo || !cJSON_AddItemToArray(msgs, mo))
            goto nomem_item;
        if (!cJSON_AddStringToObject(mo, "role", m->role) ||
            !cJSON_AddStringToObject(mo, "content", m->content))
            goto nomem;
        continue;
    nomem_item:
        cJSON_Delete(mo);
        goto nomem;
    }
    double temperature = req->temperature >= 0 ? req->temperature : o->temperature;
    double top_p = req->top_p >= 0 ? req->top_p : o->top_p;
    int max_tokens = req->max_tokens > 0 ? req->max_tokens : o->max_tokens;
    if (temperature >= 0 && !cJSON_AddNumberToObject(j, "temperature", temperature))
        goto nomem;
    if (top_p >= 0 && !cJSON_AddNumberToObject(j, "top_p", top_p))
        goto nomem;
    if (max_tokens > 0 && !cJSON_AddNumberToObject(j, "max_tokens", max_tokens))
        goto nomem;
    if (req->has_seed) { /* raw: a double would round seeds above 2^53 */
        char num[32];
        snprintf(num, sizeof num, "%" PRId64, req->seed);
        if (!cJSON_AddRawToObject(j, "seed", num))
            goto nomem;
    }
    const cJSON *c;
    cJSON_ArrayForEach(c, o->extra_body)
    {
        cJSON *dup = cJSON_Duplicate(c, true);
        if (!dup)
            goto nomem;
        if (cJSON_HasObjectItem(j, c->string)) {
            if (!cJSON_ReplaceItemInObjectCaseSensitive(j, c->string, dup)) {
                cJSON_Delete(dup);
                goto nomem;
            }
        } else if (!cJSON_AddItemToObject(j, c->string, dup)) {
            cJSON_Delete(dup);
            goto nomem;
        }
    }
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!s)
        return sn_err_set(err, SN_E_NOMEM, "out of memory printing a request body");
    /* cJSON allocates with malloc; hand the caller an sn_malloc'd copy */
    *body = sn_strdup(s);
    cJSON_free(s);
    return *body ? SN_OK : sn_err_set(err, SN_E_NOMEM, "out of memory");
nomem:
    cJSON_Delete(j);
    return sn_err_set(err, SN_E_NOMEM, "out of memory building a request body");
}

/* SHA-256 over a versioned prefix, the credential-free base URL and the body. The body already
** holds model, messages, sampling parameters, seed and extra_body; the key is not in it. */
static void cache_key(const struct oa_backend *o, const char *body, size_t len, char hex[65])
{
    struct sn_sha256 s;
    uint8_t d[32];
    sn_sha256_init(&s);
    sn_sha256_update(&s, OA_KEY_PREFIX, sizeof OA_KEY_PREFIX - 1);
    sn_sha256_update(&s, o->public_url, strlen(o->public_url));
    sn_sha256_update(&s, "\n", 1);
    sn_sha256_update(&s, body, len);
    sn_sha256_final(&s, d);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

static char *cache_path(const struct oa_backend *o, const char *hex, bool dir_only)
{
    struct sn_buf b = { 0 };
    struct sn_err e = { 0 };
    int rc = dir_only ? sn_buf_printf(&b, &e, "%s/%.2s", o->cache_dir, hex)
                      : sn_buf_printf(&b, &e, "%s/%.2s/%s.json", o->cache_dir, hex, hex);
    if (rc) {
        sn_buf_free(&b);
        return NULL;
    }
    return b.data;
}

/* A hit fills *out and returns true. A missing, unreadable or invalid entry is a miss (it is
** rewritten after the request succeeds). */
static bool cache_get(const struct oa_backend *o, const char *hex, struct sn_llm_reply *out)
{
    char *path = cache_path(o, hex, false);
    char *text = NULL;
    size_t len = 0;
    struct sn_err e = { 0 };
    bool hit = false;
    if (!path || !sn_path_exists(path) ||
        sn_file_read(path, o->max_reply_bytes * 7 + 4096, &text, &len, &e) != SN_OK)
        goto done;
    cJSON *j = cJSON_ParseWithLength(text, len);
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(j, "schema");
    const cJSON *key = cJSON_GetObjectItemCaseSensitive(j, "key");
    const cJSON *raw = cJSON_GetObjectItemCaseSensitive(j, "reply");
    char *rawtext = NULL;
    if (cJSON_IsString(schema) && !strcmp(schema->valuestring, OA_CACHE_SCHEMA) &&
        cJSON_IsString(key) && !strcmp(key->valuestring, hex) && cJSON_IsObject(raw) &&
        (rawtext = cJSON_PrintUnformatted(raw))) {
        /* the raw fields are parsed again, by today's rules (docs/openai.md "Replies") */
        char finish[32], why[300];
        if (sn_openai_parse_reply(rawtext, strlen(rawtext), out, finish, sizeof finish, why,
                                  sizeof why) == SN_OPENAI_PARSE_OK) {
            out->latency_ms = 0;
            out->attempts = 0;
            out->cached = true;
            hit = true;
        } else {
            SN_DEBUG("openai cache: ignoring entry %s: %s", path, why);
        }
    } else {
        SN_DEBUG("openai cache: ignoring invalid entry %s", path);
    }
    cJSON_free(rawtext);
    cJSON_Delete(j);
done:
    sn_free(text);
    sn_free(path);
    return hit;
}

/* Writes one entry atomically (and durably unless cache_fsync is false). Callers hold the
** key's stripe lock: the temp file name is per process, so two threads must not write the
** same key at once. */
static int cache_put(const struct oa_backend *o, const char *hex, const char *model,
                     const struct sn_llm_reply *r, const char *finish, const char *raw,
                     struct sn_err *err)
{
    cJSON *rawj = raw ? cJSON_Parse(raw) : NULL;
    char *dir = cache_path(o, hex, true);
    char *path = cache_path(o, hex, false);
    char *s = NULL, *tmp = NULL;
    int rc = SN_OK;
    cJSON *j = cJSON_CreateObject();
    if (!dir || !path || !j || !cJSON_AddStringToObject(j, "schema", OA_CACHE_SCHEMA) ||
        !cJSON_AddStringToObject(j, "key", hex) ||
        !cJSON_AddStringToObject(j, "endpoint", o->public_url) ||
        !cJSON_AddStringToObject(j, "model", model) ||
        !cJSON_AddStringToObject(j, "text", r->text) ||
        !cJSON_AddNumberToObject(j, "prompt_tokens", r->prompt_tokens) ||
        !cJSON_AddNumberToObject(j, "completion_tokens", r->completion_tokens) ||
        !cJSON_AddStringToObject(j, "finish_reason", finish) ||
        !cJSON_AddNumberToObject(j, "latency_ms", r->latency_ms) ||
        !cJSON_AddNumberToObject(j, "attempts", r->attempts) ||
        !cJSON_AddNumberToObject(j, "created", (double)time(NULL)) ||
        !cJSON_IsObject(rawj) || !cJSON_AddItemToObject(j, "reply", rawj) || (rawj = NULL) != NULL ||
        !(s = cJSON_PrintUnformatted(j))) {
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory writing a cache entry");
        goto done;
    }
    if ((rc = sn_mkdirs(dir, err)))
        goto done;
    if (o->cache_fsync) {
        rc = sn_atomic_write(path, s, strlen(s), err);
        goto done;
    }
    /* atomic but not durable: temp file + rename, no fsync. A crash may leave an empty or
    ** short entry; cache_get rejects it (JSON, schema and key are checked) and the request is
    ** simply made again. */
    size_t n = strlen(path) + 32;
    tmp = sn_malloc(n);
    if (!tmp) {
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
        goto done;
    }
    snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        rc = sn_err_set(err, SN_E_IO, "%s: %s", tmp, strerror(errno));
        goto done;
    }
    size_t len = strlen(s);
    bool ok = fwrite(s, 1, len, f) == len;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        rc = sn_err_set(err, SN_E_IO, "%s: cannot write the cache entry: %s", path,
                        strerror(errno));
        unlink(tmp);
    }
done:
    sn_free(tmp);
    cJSON_free(s);
    cJSON_Delete(rawj);
    cJSON_Delete(j);
    sn_free(dir);
    sn_free(path);
    return rc;
}

/* ---- the event loop ----------------------------------------------------------------------- */

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    struct oa_job *job = ud;
    struct sn_err e = { 0 };
    if (sn_buf_append(&job->resp, p, n, &e) != SN_OK) {
        /* past max_reply_bytes, or out of memory: either aborts with CURLE_WRITE_ERROR */
        job->overflow = n > job->resp.max || job->resp.len > job->resp.max - n;
        job->nomem = !job->overflow;
        return 0;
    }
    (void)size; /* always 1 */
    return n;
}

/* Copies the value of header `name` from a header line into dst (trimmed). */
static void grab_header(const char *line, size_t n, const char *name, char *dst, size_t dst_n)
{
    size_t k = strlen(name);
    if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':')
        return;
    const char *v = line + k + 1;
    const char *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
        end--;
    size_t m = (size_t)(end - v) < dst_n - 1 ? (size_t)(end - v) : dst_n - 1;
    memcpy(dst, v, m);
    dst[m] = '\0';
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    struct oa_job *job = ud;
    grab_header(p, n, "retry-after", job->retry_after, sizeof job->retry_after);
    grab_header(p, n, "retry-after-ms", job->retry_after_ms, sizeof job->retry_after_ms);
    grab_header(p, n, "x-should-retry", job->should_retry, sizeof job->should_retry);
    (void)size;
    return n;
}

/* Prepares job->easy for one attempt. */
static int start_attempt(struct oa_backend *o, struct oa_job *job)
{
    CURL *e = o->n_idle ? o->idle[--o->n_idle] : curl_easy_init();
    if (!e)
        return -1;
    curl_easy_reset(e);
    job->easy = e;
    sn_buf_reset(&job->resp);
    job->overflow = job->nomem = false;
    job->retry_after[0] = job->retry_after_ms[0] = job->should_retry[0] = '\0';
    job->errbuf[0] = '\0';
    job->attempts++;
    curl_easy_setopt(e, CURLOPT_URL, o->url);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, job->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)job->body_len);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, o->headers);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, job);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, job);
    curl_easy_setopt(e, CURLOPT_PRIVATE, job);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, job->errbuf);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)ceil(o->timeout_s * 1000.0));
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)ceil(o->connect_timeout_s * 1000.0));
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "sentinel/" SENTINEL_VERSION);
    job->t_start = sn_now();
    if (curl_multi_add_handle(o->multi, e) != CURLM_OK) {
        job->easy = NULL;
        curl_easy_cleanup(e);
        return -1;
    }
    return 0;
}

static void release_easy(struct oa_backend *o, struct oa_job *job)
{
    if (!job->easy)
        return;
    for (int i = 0; i < o->n_active; i++)
        if (o->active[i] == job) {
            o->active[i] = o->active[o->n_active - 1];
            o->active[--o->n_active] = NULL;
            break;
        }
    curl_multi_remove_handle(o->multi, job->easy);
    /* forget the job's buffers (error buffer, callbacks' data); the multi handle keeps the
    ** connection for the next transfer */
    curl_easy_reset(job->easy);
    if (o->n_idle < o->concurrency)
        o->idle[o->n_idle++] = job->easy;
    else
        curl_easy_cleanup(job->easy);
    job->easy = NULL;
}

/* Hands a finished job back to its caller. Lock held. */
static void finish_locked(struct oa_job *job)
{
    job->done = true;
    pthread_cond_signal(&job->cond);
}

static void enqueue_locked(struct oa_backend *o, struct oa_job *job)
{
    job->next = NULL;
    if (o->queue_tail)
        o->queue_tail->next = job;
    else
        o->queue_head = job;
    o->queue_tail = job;
}

/* Decides what a completed attempt means: success, retry (requeue with a delay) or failure. */
static void complete_attempt(struct oa_backend *o, struct oa_job *job, CURLcode cc)
{
    long status = 0;
    char what[400];
    bool retry = false;
    double server_delay = 0;
    bool has_server_delay = false;
    double now = sn_now();

    curl_easy_getinfo(job->easy, CURLINFO_RESPONSE_CODE, &status);
    double latency_ms = (now - job->t_start) * 1000.0;
    release_easy(o, job);
    __atomic_fetch_sub(&o->base.stats.in_flight, 1, __ATOMIC_RELAXED);

    if (cc == CURLE_OK && status >= 200 && status < 300) {
        char why[300];
        enum sn_openai_parse p = sn_openai_parse_reply(job->resp.data, job->resp.len, &job->reply,
                                                       job->finish, sizeof job->finish, why,
                                                       sizeof why);
        if (p == SN_OPENAI_PARSE_OK) {
            o->down_since = 0;
            __atomic_store_n(&o->base.stats.paused, 0, __ATOMIC_RELAXED);
            if (o->cache_dir)
                job->raw = sn_openai_reply_essentials(job->resp.data, job->resp.len);
            job->reply.latency_ms = latency_ms;
            job->reply.attempts = job->attempts;
            job->reply.cached = false;
            job->rc = SN_OK;
            pthread_mutex_lock(&o->lock);
            finish_locked(job);
            pthread_mutex_unlock(&o->lock);
            return;
        }
        sn_openai_sanitize(why, strlen(why), o->api_key, what, sizeof what);
        retry = p == SN_OPENAI_PARSE_MALFORMED;
        if (p == SN_OPENAI_PARSE_MALFORMED) {
            size_t l = strlen(what);
            snprintf(what + l, sizeof what - l, " (HTTP %ld, %zu bytes)", status, job->resp.len);
        }
    } else if (cc == CURLE_OK) {
        char msg[300];
        sn_openai_server_message(job->resp.data, job->resp.len, o->api_key, msg, sizeof msg);
        snprintf(what, sizeof what, "HTTP %ld: %s", status, msg);
        retry = sn_openai_status_retryable(status);
        has_server_delay = sn_openai_retry_after(job->retry_after_ms, job->retry_after,
                                                 time(NULL), &server_delay);
    } else if (job->overflow) {
        snprintf(what, sizeof what, "reply larger than max_reply_bytes (%zu bytes)",
                 o->max_reply_bytes);
    } else if (job->nomem) {
        snprintf(what, sizeof what, "out of memory receiving the reply");
    } else {
        char eb[CURL_ERROR_SIZE + 64];
        snprintf(eb, sizeof eb, "%s", job->errbuf[0] ? job->errbuf : curl_easy_strerror(cc));
        char safe[300];
        sn_openai_sanitize(eb, strlen(eb), o->api_key, safe, sizeof safe);
        snprintf(what, sizeof what, "transport error %d: %s", (int)cc, safe);
        retry = cc != CURLE_UNSUPPORTED_PROTOCOL && cc != CURLE_URL_MALFORMAT &&
                cc != CURLE_OUT_OF_MEMORY && cc != CURLE_FUNCTION_NOT_FOUND;
    }
    if (job->should_retry[0]) { /* the server's word wins over the status (OpenAI clients) */
        if (!strcasecmp(job->should_retry, "true"))
            retry = true;
        else if (!strcasecmp(job->should_retry, "false"))
            retry = false;
    }
    /* the endpoint is down or loading (connection refused, 503): with ready_timeout_s the
    ** request waits for it, without spending its retries, for up to ready_timeout_s from the
    ** first such failure; any other outcome means the endpoint is up again */
    bool down = (cc == CURLE_COULDNT_CONNECT) || (cc == CURLE_OK && status == 503);
    if (!down) {
        o->down_since = 0;
        __atomic_store_n(&o->base.stats.paused, 0, __ATOMIC_RELAXED);
    } else if (o->ready_timeout_s > 0) {
        if (o->down_since == 0)
            o->down_since = now;
        if (now - o->down_since <= o->ready_timeout_s) {
            if (!__atomic_exchange_n(&o->base.stats.paused, 1, __ATOMIC_RELAXED))
                SN_INFO("openai %s: endpoint down or loading (%s); requests wait for it, up "
                        "to ready_timeout_s = %g s", o->public_url, what, o->ready_timeout_s);
            double delay = has_server_delay && server_delay <= o->retry_after_max_s
                               ? server_delay
                               : 0.25 + 0.75 * sn_rng_uniform(&o->jitter);
            job->attempts--; /* a pause is not an attempt */
            pthread_mutex_lock(&o->lock);
            job->ready_at = now + delay;
            enqueue_locked(o, job);
            pthread_mutex_unlock(&o->lock);
            return;
        }
    }
    if (retry && has_server_delay && server_delay > o->retry_after_max_s) {
        size_t l = strlen(what);
        snprintf(what + l, sizeof what - l,
                 "; server asked to retry after %.0f s, more than retry_after_max_s (%g s)",
                 server_delay, o->retry_after_max_s);
        retry = false;
    }
    if (retry && job->attempts <= o->max_retries) {
        double delay = has_server_delay
                           ? server_delay
                           : sn_openai_backoff(job->attempts - 1, o->backoff_base_s,
                                               o->backoff_max_s, sn_rng_uniform(&o->jitter));
        SN_DEBUG("openai %s: attempt %d failed (%s); retrying in %.3f s", o->public_url,
                 job->attempts, what, delay);
        STAT_ADD(o, retries, 1);
        pthread_mutex_lock(&o->lock);
        job->ready_at = now + delay;
        enqueue_locked(o, job);
        pthread_mutex_unlock(&o->lock);
        return;
    }
    pthread_mutex_lock(&o->lock);
    sn_err_set(&job->err, SN_E_BACKEND, "openai %s: %s after %d attempt%s", o->public_url, what,
               job->attempts, job->attempts == 1 ? "" : "s");
    job->rc = SN_E_BACKEND;
    finish_locked(job);
    pthread_mutex_unlock(&o->lock);
}

static void fail_job_locked(struct oa_job *job, int code, const char *why, const char *url)
{
    sn_err_set(&job->err, code, "openai %s: %s", url, why);
    job->rc = code;
    finish_locked(job);
}

static void *event_loop(void *arg)
{
    struct oa_backend *o = arg;
    struct oa_job *start[64];
    for (;;) {
        int n_start = 0;
        double now = sn_now();
        pthread_mutex_lock(&o->lock);
        if (o->stop) {
            for (struct oa_job *j = o->queue_head, *nx; j; j = nx) {
                nx = j->next;
                fail_job_locked(j, SN_E_CANCELLED, "backend closed", o->public_url);
            }
            o->queue_head = o->queue_tail = NULL;
            pthread_mutex_unlock(&o->lock);
            break;
        }
        /* take ready jobs in FIFO order while slots are free */
        struct oa_job **pp = &o->queue_head, *prev = NULL;
        while (*pp && n_start < 64 && o->n_active + n_start < o->concurrency) {
            struct oa_job *j = *pp;
            if (j->ready_at <= now) {
                *pp = j->next;
                if (o->queue_tail == j)
                    o->queue_tail = prev;
                start[n_start++] = j;
                continue;
            }
            prev = j;
            pp = &j->next;
        }
        pthread_mutex_unlock(&o->lock);

        for (int i = 0; i < n_start; i++) {
            if (start_attempt(o, start[i]) != 0) {
                pthread_mutex_lock(&o->lock);
                fail_job_locked(start[i], SN_E_NOMEM, "could not start a transfer",
                                o->public_url);
                pthread_mutex_unlock(&o->lock);
                continue;
            }
            o->active[o->n_active++] = start[i];
            __atomic_fetch_add(&o->base.stats.in_flight, 1, __ATOMIC_RELAXED);
        }

        int running = 0;
        curl_multi_perform(o->multi, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(o->multi, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            struct oa_job *job = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&job);
            complete_attempt(o, job, msg->data.result);
        }

        /* sleep until curl needs us, a queued job becomes ready while a slot is free, or a
        ** caller wakes us (curl_multi_wakeup) */
        long timeout_ms = 1000;
        long ct = -1;
        curl_multi_timeout(o->multi, &ct);
        if (ct >= 0 && ct < timeout_ms)
            timeout_ms = ct;
        pthread_mutex_lock(&o->lock);
        if (o->stop)
            timeout_ms = 0;
        if (o->n_active < o->concurrency) {
            now = sn_now();
            for (struct oa_job *j = o->queue_head; j && timeout_ms > 0; j = j->next) {
                double w = (j->ready_at - now) * 1000.0;
                long wl = w <= 0 ? 0 : (long)ceil(w);
                if (wl < timeout_ms)
                    timeout_ms = wl;
            }
        }
        pthread_mutex_unlock(&o->lock);
        if (timeout_ms > 0)
            curl_multi_poll(o->multi, NULL, 0, (int)timeout_ms, NULL);
    }
    /* abandon transfers still running (only when closed with callers waiting) */
    while (o->n_active > 0) {
        struct oa_job *job = o->active[o->n_active - 1];
        release_easy(o, job);
        __atomic_fetch_sub(&o->base.stats.in_flight, 1, __ATOMIC_RELAXED);
        pthread_mutex_lock(&o->lock);
        fail_job_locked(job, SN_E_CANCELLED, "backend closed", o->public_url);
        pthread_mutex_unlock(&o->lock);
    }
    return NULL;
}

/* ---- readiness ---------------------------------------------------------------------------- */

static size_t discard_body(char *p, size_t size, size_t n, void *ud)
{
    (void)p;
    (void)size;
    (void)ud;
    return n;
}

/* Polls GET {base_url}/models until it answers 2xx, for up to ready_timeout_s: vLLM refuses
** connections while it loads, llama-server answers 503 "Loading model" on every path. A 4xx
** other than 408/429 means the server is up (it may just not serve /models). */
static int wait_ready(struct oa_backend *o, struct sn_err *err)
{
    CURL *e = curl_easy_init();
    if (!e)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    double t0 = sn_now(), deadline = t0 + o->ready_timeout_s;
    char errbuf[CURL_ERROR_SIZE], last[300] = "no answer";
    bool told = false;
    int rc = SN_OK;
    for (;;) {
        errbuf[0] = '\0';
        double left = deadline - sn_now();
        double tmo = left < o->connect_timeout_s + 5 ? left : o->connect_timeout_s + 5;
        curl_easy_reset(e);
        curl_easy_setopt(e, CURLOPT_URL, o->models_url);
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, o->headers);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard_body);
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)ceil((tmo > 0.05 ? tmo : 0.05) * 1000.0));
        curl_easy_setopt(e, CURLOPT_USERAGENT, "sentinel/" SENTINEL_VERSION);
        CURLcode cc = curl_easy_perform(e);
        long status = 0;
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
        if (cc == CURLE_OK && status < 500 && status != 408 && status != 429)
            break;
        if (cc == CURLE_OK) {
            snprintf(last, sizeof last, "HTTP %ld", status);
        } else {
            char safe[200];
            const char *m = errbuf[0] ? errbuf : curl_easy_strerror(cc);
            sn_openai_sanitize(m, strlen(m), o->api_key, safe, sizeof safe);
            snprintf(last, sizeof last, "transport error %d: %s", (int)cc, safe);
        }
        if (cc == CURLE_UNSUPPORTED_PROTOCOL || cc == CURLE_URL_MALFORMAT ||
            sn_now() + 0.5 > deadline) {
            rc = sn_err_set(err, SN_E_BACKEND, "openai %s: endpoint not ready after %.1f s "
                            "(ready_timeout_s = %g; GET /models: %s)", o->public_url,
                            sn_now() - t0, o->ready_timeout_s, last);
            break;
        }
        if (!told) {
            SN_INFO("openai %s: waiting for the endpoint (GET /models: %s), up to %g s",
                    o->public_url, last, o->ready_timeout_s);
            told = true;
        }
        struct timespec ts = { 0, 500 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    curl_easy_cleanup(e);
    return rc;
}

/* ---- the backend vtable ------------------------------------------------------------------- */

static int oa_complete(struct sn_llm_backend *b, const struct sn_llm_request *req,
                       struct sn_llm_reply *out, struct sn_err *err)
{
    struct oa_backend *o = (struct oa_backend *)b;
    char *body = NULL;
    char hex[65];
    int rc;

    memset(out, 0, sizeof *out);
    out->prompt_tokens = out->completion_tokens = -1;
    STAT_ADD(o, requests, 1);
    if ((rc = build_body(o, req, &body, err)))
        goto fail;
    size_t body_len = strlen(body);
    pthread_mutex_t *stripe = NULL;
    if (o->cache_dir) {
        cache_key(o, body, body_len, hex);
        stripe = &o->cache_lock[strtoul((char[]){ hex[0], hex[1], 0 }, NULL, 16) %
                                OA_CACHE_STRIPES];
        if (cache_get(o, hex, out)) {
            STAT_ADD(o, cache_hits, 1);
            STAT_ADD(o, completed, 1);
            sn_free(body);
            return SN_OK;
        }
    }

    struct oa_job job = { .body = body, .body_len = body_len };
    job.resp.max = o->max_reply_bytes;
    job.reply.prompt_tokens = job.reply.completion_tokens = -1;
    pthread_cond_init(&job.cond, NULL);
    pthread_mutex_lock(&o->lock);
    if (o->stop) {
        pthread_mutex_unlock(&o->lock);
        pthread_cond_destroy(&job.cond);
        rc = sn_err_set(err, SN_E_CANCELLED, "openai %s: backend closed", o->public_url);
        goto fail;
    }
    job.ready_at = 0;
    enqueue_locked(o, &job);
    pthread_mutex_unlock(&o->lock);
    curl_multi_wakeup(o->multi);

    pthread_mutex_lock(&o->lock);
    while (!job.done)
        pthread_cond_wait(&job.cond, &o->lock);
    pthread_mutex_unlock(&o->lock);
    pthread_cond_destroy(&job.cond);
    sn_buf_free(&job.resp);

    if (job.rc != SN_OK) {
        rc = sn_err_set(err, job.rc, "%s", job.err.msg);
        goto fail;
    }
    *out = job.reply;
    if (out->prompt_tokens > 0)
        STAT_ADD(o, prompt_tokens, (uint64_t)out->prompt_tokens);
    if (out->completion_tokens > 0)
        STAT_ADD(o, completion_tokens, (uint64_t)out->completion_tokens);
    if (o->cache_dir) {
        struct sn_err ce = { 0 };
        const char *model = req->model ? req->model : o->model ? o->model : "";
        pthread_mutex_lock(stripe);
        int crc = cache_put(o, hex, model, out, job.finish, job.raw, &ce);
        pthread_mutex_unlock(stripe);
        if (crc) /* the reply is good; a cache we cannot write only costs a re-run */
            SN_WARN("openai cache: %s", ce.msg);
    }
    sn_free(job.raw);
    STAT_ADD(o, completed, 1);
    sn_free(body);
    return SN_OK;
fail:
    STAT_ADD(o, failed, 1);
    sn_free(body);
    return rc;
}

static void oa_close(struct sn_llm_backend *b)
{
    struct oa_backend *o = (struct oa_backend *)b;
    if (!o)
        return;
    if (o->thread_started) {
        pthread_mutex_lock(&o->lock);
        o->stop = true;
        pthread_mutex_unlock(&o->lock);
        curl_multi_wakeup(o->multi);
        pthread_join(o->thread, NULL);
    }
    for (int i = 0; i < o->n_idle; i++)
        curl_easy_cleanup(o->idle[i]);
    sn_free(o->idle);
    sn_free(o->active);
    if (o->multi)
        curl_multi_cleanup(o->multi);
    curl_slist_free_all(o->headers); /* holds the key: curl frees it; we wiped our copy */
    if (o->api_key) {
        memset(o->api_key, 0, strlen(o->api_key));
        sn_free(o->api_key);
    }
    pthread_mutex_destroy(&o->lock);
    for (int i = 0; i < OA_CACHE_STRIPES; i++)
        pthread_mutex_destroy(&o->cache_lock[i]);
    cJSON_Delete(o->extra_body);
    sn_free(o->url);
    sn_free(o->models_url);
    sn_free(o->public_url);
    sn_free(o->model);
    sn_free(o->cache_dir);
    sn_free(o);
}

static const struct sn_llm_backend_ops oa_ops = { "openai", oa_complete, oa_close };

int sn_llm_openai_open(const cJSON *config, struct sn_llm_backend **out, struct sn_err *err)
{
    *out = NULL;
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK)
        return sn_err_set(err, SN_E_BACKEND, "libcurl initialisation failed: %s",
                          curl_easy_strerror(curl_init_rc));
    struct oa_backend *o = sn_calloc(1, sizeof *o);
    if (!o)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    o->base.ops = &oa_ops;
    pthread_mutex_init(&o->lock, NULL);
    for (int i = 0; i < OA_CACHE_STRIPES; i++)
        pthread_mutex_init(&o->cache_lock[i], NULL);

    /* messages name the endpoint as the recipe does when it is a member of an object
    ** ("endpoints.big"); sn_recipe_check_keys appends ".key" */
    char where[96] = "endpoint";
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(config, "name");
    if (config && config->string)
        snprintf(where, sizeof where, "endpoints.%.60s", config->string);
    else if (cJSON_IsString(name))
        snprintf(where, sizeof where, "endpoints.%.60s", name->valuestring);
    int rc;
    if (!cJSON_IsObject(config)) {
        rc = sn_err_set(err, SN_E_ARG, "recipe: an openai endpoint must be a JSON object");
        goto fail;
    }
    if ((rc = read_config(o, config, where, err)))
        goto fail;
    if (o->ready_timeout_s > 0 && (rc = wait_ready(o, err)))
        goto fail;
    snprintf(o->base.describe, sizeof o->base.describe, "openai %s model=%s", o->public_url,
             o->model ? o->model : "(server default)");
    sn_rng_seed(&o->jitter, ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid() ^
                                (uint64_t)(uintptr_t)o);
    o->idle = sn_calloc((size_t)o->concurrency, sizeof *o->idle);
    o->active = sn_calloc((size_t)o->concurrency, sizeof *o->active);
    o->multi = curl_multi_init();
    if (!o->idle || !o->active || !o->multi) {
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory creating the transfer pool");
        goto fail;
    }
    /* connections: one per transfer, kept open between requests */
    curl_multi_setopt(o->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)o->concurrency);
    curl_multi_setopt(o->multi, CURLMOPT_MAXCONNECTS, (long)o->concurrency);
    if (pthread_create(&o->thread, NULL, event_loop, o) != 0) {
        rc = sn_err_set(err, SN_E_BACKEND, "openai %s: cannot start the event-loop thread",
                        o->public_url);
        goto fail;
    }
    o->thread_started = true;
    *out = &o->base;
    return SN_OK;
fail:
    oa_close(&o->base);
    return rc;
}
