/* serve/server.c: the HTTP side of `sentinel serve` (serve/serve.h; docs/agents.md "The
** server"): libmicrohttpd with one thread per connection reads a request, checks it and hands
** the scoring to a bounded queue served by n_workers threads, each with its own detector (a
** detector is used by one thread at a time: export/export.h). The connection's thread waits for
** its job; a job still queued after queue_wait_s is taken back and answered 503. Stopping
** (sn_serve_stop) refuses new work with 503, lets every job taken finish and its reply be
** sent, then closes. Nothing here logs a request's headers or body: the API key never reaches
** a log. */
#include "serve/serve_internal.h"
#include "export/export.h"
#include "tokenizer/tokenizer.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#if MHD_VERSION < 0x00097002
typedef int sn_mhd_result;
#else
typedef enum MHD_Result sn_mhd_result;
#endif

enum job_state { JOB_QUEUED, JOB_RUNNING, JOB_DONE };

struct job {
    struct sn_serve_req      req;
    struct sn_serve_session *session; /* SN_SERVE_ROUND */
    enum job_state state;
    int            status;
    struct sn_buf  reply;
    struct sn_err  err;
    struct job    *next;
};

/* per request (MHD's con_cls) */
struct request {
    struct sn_buf body;
    bool          too_big;
    bool          counted;   /* in s->active */
};

struct sn_serve {
    struct sn_serve_params p;
    char           *path;
    char           *model;
    struct MHD_Daemon *mhd;
    int             port;
    pthread_mutex_t mu;
    pthread_cond_t  work;      /* a job was queued, or stop */
    pthread_cond_t  done;      /* a job finished, the model loaded, or active dropped */
    struct job     *head, *tail;
    int             n_queued, n_running, active;
    bool            stopping, paused;
    int             load_state; /* 0 loading, 1 ready, -1 failed */
    struct sn_err   load_err;
    pthread_t       loader;
    pthread_t      *workers;
    int             n_started;
    struct sn_detector **det;
    struct sn_serve_sessions *sessions;
};

struct sn_serve_params sn_serve_default_params(void)
{
    struct sn_serve_params p;
    memset(&p, 0, sizeof p);
    return p;
}

static void fill_defaults(struct sn_serve_params *p)
{
    if (!p->host || !*p->host)
        p->host = "127.0.0.1";
    if (p->n_workers <= 0)
        p->n_workers = 1;
    if (p->n_threads <= 0)
        p->n_threads = 1;
    if (p->queue_max <= 0)
        p->queue_max = 4 * p->n_workers;
    if (p->queue_wait_s <= 0)
        p->queue_wait_s = 30;
    if (!p->max_body)
        p->max_body = (size_t)1 << 20;
    if (!p->max_tokens)
        p->max_tokens = 65536;
    if (p->max_items <= 0)
        p->max_items = 64;
    if (p->max_connections <= 0)
        p->max_connections = 64;
    if (p->conn_timeout_s <= 0)
        p->conn_timeout_s = 30;
    if (p->max_sessions <= 0)
        p->max_sessions = 256;
    if (p->session_ttl_s <= 0)
        p->session_ttl_s = 3600;
}

/* ---- scoring (worker threads) ---------------------------------------------------------- */

/* Tokens of every text of the request (a shared context once): the max_tokens limit. */
static int count_tokens(struct sn_detector *d, const struct sn_serve_req *r, size_t *total,
                        struct sn_err *err)
{
    const struct sn_tokenizer *tok = sn_detector_tokenizer(d);
    struct sn_ids ids = {0};
    int rc = SN_OK;
    *total = 0;
    for (size_t i = 0; i < r->n && !rc; i++) {
        for (int pass = 0; pass < 2 && !rc; pass++) {
            const char *t = pass ? r->texts[i] : r->contexts ? r->contexts[i] : NULL;
            if (!t || (pass == 0 && r->shared && i > 0))
                continue;
            ids.n = 0;
            rc = sn_tokenizer_encode(tok, t, strlen(t), &ids, err);
            *total += ids.n;
        }
    }
    sn_ids_free(&ids);
    return rc;
}

static int score_job(struct sn_serve *s, struct sn_detector *d, struct job *j, float *sc)
{
    struct sn_serve_req *r = &j->req;
    struct sn_err *err = &j->err;
    int rc = SN_OK;
    size_t tokens = 0;
    if ((rc = count_tokens(d, r, &tokens, err))) {
        j->status = 400;
        return rc;
    }
    if (tokens > s->p.max_tokens) {
        j->status = 413;
        return sn_err_set(err, SN_E_ARG, "the request holds %zu tokens, more than this server "
                          "takes in one request (--max-request-tokens %zu); split it", tokens,
                          s->p.max_tokens);
    }
    if (r->kind == SN_SERVE_ROUND)
        return sn_serve_session_round(j->session, d, r, &j->reply, &j->status, err);
    if (r->shared)
        rc = sn_detector_score_shared(d, r->contexts[0], r->texts, r->n, sc, err);
    else
        rc = sn_detector_score_batch(d, r->contexts, r->texts, r->n, sc, err);
    if (rc) {
        j->status = err->code == SN_E_ARG || err->code == SN_E_FORMAT ? 400 : 500;
        return rc;
    }
    struct sn_buf *b = &j->reply;
    if (r->kind == SN_SERVE_SCORE) {
        rc = sn_buf_printf(b, err, "{\"model\":\"%s\",\"scores\":[", s->model);
        for (size_t i = 0; i < r->n && !rc; i++)
            rc = sn_buf_printf(b, err, "%s%.9g", i ? "," : "", (double)sc[i]);
        if (!rc)
            rc = sn_buf_puts(b, "]}", err);
    } else {
        /* rerank: indices by score, best first (ties: the lower index first) */
        size_t *ix = sn_calloc(r->n, sizeof *ix);
        if (!ix)
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        for (size_t i = 0; i < r->n; i++) {
            size_t k = i;
            while (k > 0 && sc[ix[k - 1]] < sc[i]) {
                ix[k] = ix[k - 1];
                k--;
            }
            ix[k] = i;
        }
        rc = sn_buf_printf(b, err, "{\"model\":\"%s\",\"object\":\"list\",\"results\":[",
                           s->model);
        for (int q = 0; q < r->top_n && !rc; q++) {
            rc = sn_buf_printf(b, err, "%s{\"index\":%zu,\"relevance_score\":%.9g", q ? "," : "",
                               ix[q], (double)sc[ix[q]]);
            if (!rc && r->return_documents) {
                cJSON *t = cJSON_CreateString(r->texts[ix[q]]);
                char *txt = t ? cJSON_PrintUnformatted(t) : NULL;
                rc = txt ? sn_buf_printf(b, err, ",\"document\":{\"text\":%s}", txt)
                         : sn_err_set(err, SN_E_NOMEM, "out of memory");
                cJSON_free(txt);
                cJSON_Delete(t);
            }
            if (!rc)
                rc = sn_buf_puts(b, "}", err);
        }
        if (!rc)
            rc = sn_buf_printf(b, err, "],\"usage\":{\"total_tokens\":%zu}}", tokens);
        sn_free(ix);
    }
    if (rc)
        j->status = 500;
    else
        j->status = 200;
    return rc;
}

struct worker_arg {
    struct sn_serve *s;
    int i;
};

static void *worker_main(void *arg)
{
    struct worker_arg *wa = arg;
    struct sn_serve *s = wa->s;
    int me = wa->i;
    sn_free(wa);
    float *sc = sn_calloc((size_t)s->p.max_items + 1, sizeof *sc);
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!(s->head && !s->paused) && !(s->stopping && !s->head))
            pthread_cond_wait(&s->work, &s->mu);
        if (!s->head)
            break; /* stopping, nothing left */
        struct job *j = s->head;
        s->head = j->next;
        if (!s->head)
            s->tail = NULL;
        s->n_queued--;
        s->n_running++;
        j->state = JOB_RUNNING;
        pthread_mutex_unlock(&s->mu);
        if (!sc) {
            j->status = 503;
            sn_err_set(&j->err, SN_E_NOMEM, "out of memory");
        } else if (score_job(s, s->det[me], j, sc) && j->status < 400) {
            j->status = 500;
        }
        pthread_mutex_lock(&s->mu);
        j->state = JOB_DONE;
        s->n_running--;
        pthread_cond_broadcast(&s->done);
    }
    pthread_mutex_unlock(&s->mu);
    sn_free(sc);
    return NULL;
}

/* Opens the detectors, then starts the workers (the /health "loading" phase). */
static void *loader_main(void *arg)
{
    struct sn_serve *s = arg;
    struct sn_err err = {0};
    int rc = SN_OK;
    struct sn_detector_params dp = sn_detector_default_params();
    dp.n_threads = s->p.n_threads;
    dp.max_batch = s->p.max_items;
    for (int i = 0; i < s->p.n_workers && !rc; i++)
        rc = sn_detector_open(s->path, &dp, &s->det[i], &err);
    for (int i = 0; i < s->p.n_workers && !rc; i++) {
        struct worker_arg *wa = sn_calloc(1, sizeof *wa);
        if (!wa) {
            rc = sn_err_set(&err, SN_E_NOMEM, "out of memory");
            break;
        }
        wa->s = s;
        wa->i = i;
        if (pthread_create(&s->workers[i], NULL, worker_main, wa)) {
            sn_free(wa);
            rc = sn_err_set(&err, SN_E_BACKEND, "cannot start worker thread %d", i);
            break;
        }
        s->n_started++;
    }
    pthread_mutex_lock(&s->mu);
    s->load_state = rc ? -1 : 1;
    s->load_err = err;
    pthread_cond_broadcast(&s->done);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Queues j and waits for it: SN_OK when it ran (j->status set), else *status is the 503. */
static void run_job(struct sn_serve *s, struct job *j)
{
    pthread_mutex_lock(&s->mu);
    if (s->stopping) {
        j->status = 503;
        sn_err_set(&j->err, SN_E_ARG, "the server is stopping");
    } else if (s->load_state != 1) {
        j->status = 503;
        sn_err_set(&j->err, SN_E_ARG, s->load_state < 0 ? "the model failed to load: %s"
                                                        : "the model is loading%s",
                   s->load_state < 0 ? s->load_err.msg : "");
    } else if (s->n_queued >= s->p.queue_max) {
        j->status = 503;
        sn_err_set(&j->err, SN_E_ARG, "the server is busy (%d requests queued, the limit); "
                   "retry after the Retry-After seconds", s->n_queued);
    } else {
        j->state = JOB_QUEUED;
        j->next = NULL;
        if (s->tail)
            s->tail->next = j;
        else
            s->head = j;
        s->tail = j;
        s->n_queued++;
        pthread_cond_signal(&s->work);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        double w = s->p.queue_wait_s;
        until.tv_sec += (time_t)w;
        until.tv_nsec += (long)((w - (double)(time_t)w) * 1e9);
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (j->state != JOB_DONE) {
            int r = pthread_cond_timedwait(&s->done, &s->mu, &until);
            if (r && j->state == JOB_QUEUED) {
                /* waited too long for a worker: take it back */
                struct job **pp = &s->head, *prev = NULL;
                while (*pp != j) {
                    prev = *pp;
                    pp = &(*pp)->next;
                }
                *pp = j->next;
                if (s->tail == j)
                    s->tail = prev;
                s->n_queued--;
                j->status = 503;
                sn_err_set(&j->err, SN_E_ARG, "no worker took the request within %.0f s "
                           "(--queue-wait); the server is overloaded", s->p.queue_wait_s);
                break;
            }
        }
    }
    pthread_mutex_unlock(&s->mu);
}

/* ---- HTTP -------------------------------------------------------------------------------- */

static sn_mhd_result reply(struct MHD_Connection *c, int status, const char *body, size_t len)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "application/json");
    if (status == 503 || status == 429)
        MHD_add_response_header(r, "Retry-After", "1");
    if (status == 405)
        MHD_add_response_header(r, "Allow", "GET, POST, DELETE");
    sn_mhd_result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ok;
}

#define OOM_BODY "{\"error\":{\"code\":503,\"type\":\"unavailable\",\"message\":\"out of memory\"}}"

static sn_mhd_result reply_error(struct MHD_Connection *c, int status, const char *msg)
{
    struct sn_buf b = {0};
    struct sn_err e = {0};
    sn_mhd_result ok;
    if (sn_serve_error_json(status, msg, &b, &e))
        ok = reply(c, 503, OOM_BODY, strlen(OOM_BODY));
    else
        ok = reply(c, status, b.data, b.len);
    sn_buf_free(&b);
    return ok;
}

static bool authorized(struct sn_serve *s, struct MHD_Connection *c)
{
    if (!s->p.api_key || !*s->p.api_key)
        return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    const char *key = NULL;
    if (h && strncasecmp(h, "Bearer ", 7) == 0)
        key = h + 7;
    if (!key)
        key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-API-Key");
    if (!key)
        return false;
    /* compared in full whatever the first difference (no early exit on a prefix) */
    size_t a = strlen(key), b = strlen(s->p.api_key);
    unsigned char diff = a != b;
    for (size_t i = 0; i < a; i++)
        diff |= (unsigned char)(key[i] ^ s->p.api_key[i % (b ? b : 1)]);
    return diff == 0;
}

static sn_mhd_result run_request(struct sn_serve *s, struct MHD_Connection *c, int kind,
                                 const char *session_id, struct request *rq)
{
    struct job *j = sn_calloc(1, sizeof *j);
    if (!j)
        return reply_error(c, 503, "out of memory");
    int rc = sn_serve_parse(kind, rq->body.data ? rq->body.data : "", rq->body.len,
                            s->p.max_items, &j->req, &j->err);
    sn_mhd_result ok;
    if (rc) {
        ok = reply_error(c, rc == SN_E_ARG ? 413 : rc == SN_E_NOMEM ? 503 : 400, j->err.msg);
    } else if (kind == SN_SERVE_DEBATE_NEW) {
        int status = 500;
        rc = sn_serve_session_new(s->sessions, &j->req, &j->reply, &status, &j->err);
        ok = rc ? reply_error(c, status, j->err.msg) : reply(c, status, j->reply.data,
                                                             j->reply.len);
    } else {
        int status = 200;
        if (kind == SN_SERVE_ROUND &&
            (rc = sn_serve_session_acquire(s->sessions, session_id, &j->session, &status,
                                           &j->err))) {
            ok = reply_error(c, status, j->err.msg);
        } else {
            run_job(s, j);
            ok = j->status == 200 ? reply(c, 200, j->reply.data, j->reply.len)
                                  : reply_error(c, j->status, j->err.msg);
            sn_serve_session_release(s->sessions, j->session);
        }
    }
    sn_serve_req_free(&j->req);
    sn_buf_free(&j->reply);
    sn_free(j);
    return ok;
}

static sn_mhd_result handle(void *cls, struct MHD_Connection *c, const char *url,
                            const char *method, const char *version, const char *upload,
                            size_t *upload_size, void **con_cls)
{
    (void)version;
    struct sn_serve *s = cls;
    struct request *rq = *con_cls;
    if (!rq) {
        rq = sn_calloc(1, sizeof *rq);
        if (!rq)
            return MHD_NO;
        *con_cls = rq;
        pthread_mutex_lock(&s->mu);
        s->active++;
        rq->counted = true;
        pthread_mutex_unlock(&s->mu);
        /* a body announced too large is refused before it is read */
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        uint64_t n = 0;
        if (cl && sn_parse_u64(cl, strlen(cl), 0, UINT64_MAX, &n) && n > s->p.max_body) {
            char m[160];
            snprintf(m, sizeof m, "the body (%llu bytes) is larger than this server takes "
                     "(--max-body %zu bytes)", (unsigned long long)n, s->p.max_body);
            return reply_error(c, 413, m);
        }
        return MHD_YES;
    }
    if (*upload_size) {
        if (!rq->too_big && rq->body.len + *upload_size > s->p.max_body)
            rq->too_big = true;
        if (!rq->too_big) {
            struct sn_err e = {0};
            if (sn_buf_append(&rq->body, upload, *upload_size, &e))
                rq->too_big = true;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    char msg[160];
    if (rq->too_big) {
        snprintf(msg, sizeof msg, "the body is larger than this server takes (--max-body %zu "
                 "bytes)", s->p.max_body);
        return reply_error(c, 413, msg);
    }
    bool get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0,
         del = strcmp(method, "DELETE") == 0;
    if (strcmp(url, "/health") == 0) {
        if (!get)
            return reply_error(c, 405, "/health takes GET");
        pthread_mutex_lock(&s->mu);
        int st = s->load_state;
        bool stopping = s->stopping;
        char lerr[sizeof s->load_err.msg];
        snprintf(lerr, sizeof lerr, "%s", s->load_err.msg);
        pthread_mutex_unlock(&s->mu);
        if (stopping)
            return reply_error(c, 503, "the server is stopping");
        if (st == 0)
            return reply(c, 503, "{\"status\":\"loading\"}", 20);
        if (st < 0)
            return reply_error(c, 500, lerr);
        return reply(c, 200, "{\"status\":\"ok\"}", 15);
    }
    if (!authorized(s, c))
        return reply_error(c, 401, "missing or wrong API key (send \"Authorization: Bearer "
                           "KEY\" or \"X-API-Key: KEY\")");
    pthread_mutex_lock(&s->mu);
    bool stopping = s->stopping;
    pthread_mutex_unlock(&s->mu);
    if (stopping)
        return reply_error(c, 503, "the server is stopping");
    if (strcmp(url, "/v1/models") == 0) {
        if (!get)
            return reply_error(c, 405, "/v1/models takes GET");
        struct sn_buf b = {0};
        struct sn_err e = {0};
        sn_mhd_result ok;
        if (sn_buf_printf(&b, &e, "{\"object\":\"list\",\"data\":[{\"id\":\"%s\",\"object\":"
                          "\"model\",\"owned_by\":\"sentinel\"}]}", s->model))
            ok = reply_error(c, 503, "out of memory");
        else
            ok = reply(c, 200, b.data, b.len);
        sn_buf_free(&b);
        return ok;
    }
    if (strcmp(url, "/v1/score") == 0 || strcmp(url, "/v1/rerank") == 0 ||
        strcmp(url, "/v1/debates") == 0) {
        if (!post) {
            snprintf(msg, sizeof msg, "%s takes POST", url);
            return reply_error(c, 405, msg);
        }
        int kind = url[4] == 's' ? SN_SERVE_SCORE
                   : url[4] == 'r' ? SN_SERVE_RERANK
                                   : SN_SERVE_DEBATE_NEW;
        return run_request(s, c, kind, NULL, rq);
    }
    if (strncmp(url, "/v1/debates/", 12) == 0) {
        char id[64];
        const char *rest = url + 12, *slash = strchr(rest, '/');
        size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
        if (n == 0 || n >= sizeof id)
            return reply_error(c, 404, "no such debate session");
        memcpy(id, rest, n);
        id[n] = '\0';
        int status = 200;
        struct sn_err e = {0};
        if (slash && strcmp(slash, "/rounds") == 0) {
            if (!post)
                return reply_error(c, 405, "/v1/debates/ID/rounds takes POST");
            return run_request(s, c, SN_SERVE_ROUND, id, rq);
        }
        if (slash)
            return reply_error(c, 404, "unknown path (try /v1/debates/ID/rounds)");
        if (del) {
            if (sn_serve_session_delete(s->sessions, id, &status, &e))
                return reply_error(c, status, e.msg);
            return reply(c, 204, "", 0);
        }
        if (!get)
            return reply_error(c, 405, "/v1/debates/ID takes GET or DELETE");
        struct sn_buf b = {0};
        sn_mhd_result ok = sn_serve_session_get(s->sessions, id, &b, &status, &e)
                               ? reply_error(c, status, e.msg)
                               : reply(c, 200, b.data, b.len);
        sn_buf_free(&b);
        return ok;
    }
    snprintf(msg, sizeof msg, "unknown path '%.60s' (GET /health, /v1/models; POST /v1/score, "
             "/v1/rerank, /v1/debates)", url);
    return reply_error(c, 404, msg);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode why)
{
    (void)c;
    (void)why;
    struct sn_serve *s = cls;
    struct request *rq = *con_cls;
    if (!rq)
        return;
    if (rq->counted) {
        pthread_mutex_lock(&s->mu);
        s->active--;
        pthread_cond_broadcast(&s->done);
        pthread_mutex_unlock(&s->mu);
    }
    sn_buf_free(&rq->body);
    sn_free(rq);
    *con_cls = NULL;
}

/* libmicrohttpd's own messages (a client that vanished, a malformed request line) go to the
** debug log: they carry no request header, so no key. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char line[256];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    SN_DEBUG("serve: libmicrohttpd: %s", line);
}

/* ---- start and stop ---------------------------------------------------------------------- */

int sn_serve_start(const char *gguf_path, const struct sn_serve_params *params,
                   struct sn_serve **out, struct sn_err *err)
{
    *out = NULL;
    struct sn_serve *s = sn_calloc(1, sizeof *s);
    if (!s)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    s->p = params ? *params : sn_serve_default_params();
    fill_defaults(&s->p);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->done, NULL);
    int rc = SN_OK;
    /* the history settings the detector was trained with (its GGUF), for the sessions */
    struct sn_gguf *g = NULL;
    uint64_t hs = 0, hc = 0;
    if ((rc = sn_gguf_open(gguf_path, &g, err)) ||
        (rc = sn_gguf_get_u64(g, SN_GGUF_KEY_HIST_SENT, false, 0, &hs, err)) ||
        (rc = sn_gguf_get_u64(g, SN_GGUF_KEY_HIST_CHARS, false, 0, &hc, err))) {
        sn_gguf_close(g);
        sn_free(s);
        return rc;
    }
    sn_gguf_close(g);
    const char *base = strrchr(gguf_path, '/');
    s->path = sn_strdup(gguf_path);
    s->model = sn_strdup(s->p.model_name ? s->p.model_name : base ? base + 1 : gguf_path);
    s->det = sn_calloc((size_t)s->p.n_workers, sizeof *s->det);
    s->workers = sn_calloc((size_t)s->p.n_workers, sizeof *s->workers);
    if (!s->path || !s->model || !s->det || !s->workers)
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
    for (const char *q = s->model; !rc && *q; q++)
        if (*q == '"' || *q == '\\' || (unsigned char)*q < 0x20)
            rc = sn_err_set(err, SN_E_ARG, "model name '%s': no quotes, backslashes or "
                            "control characters", s->model);
    struct sn_serve_sessions_params sp = {s->p.max_sessions, s->p.session_ttl_s, (size_t)hs,
                                          (size_t)hc,
                                          s->p.seed ^ (uint64_t)time(NULL) ^
                                              ((uint64_t)(sn_now() * 1e9) << 20)};
    if (!rc)
        rc = sn_serve_sessions_create(&sp, &s->sessions, err);
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)s->p.port);
    if (!rc && inet_pton(AF_INET, s->p.host, &addr.sin_addr) != 1)
        rc = sn_err_set(err, SN_E_ARG, "--host '%s' is not an IPv4 address (e.g. 127.0.0.1, or "
                        "0.0.0.0 for every interface)", s->p.host);
    if (!rc) {
        s->mhd = MHD_start_daemon(
            MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC |
                MHD_USE_ERROR_LOG | MHD_USE_POLL,
            0, NULL, NULL, handle, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
            MHD_OPTION_CONNECTION_LIMIT, (unsigned)s->p.max_connections,
            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)s->p.conn_timeout_s,
            MHD_OPTION_NOTIFY_COMPLETED, completed, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
            MHD_OPTION_END);
        if (!s->mhd)
            rc = sn_err_set(err, SN_E_IO, "cannot listen on %s:%d (in use, or not an address "
                            "of this machine)", s->p.host, s->p.port);
    }
    if (!rc) {
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->mhd,
                                                               MHD_DAEMON_INFO_BIND_PORT);
        s->port = info ? (int)info->port : s->p.port;
        if (pthread_create(&s->loader, NULL, loader_main, s)) {
            rc = sn_err_set(err, SN_E_BACKEND, "cannot start the loader thread");
            MHD_stop_daemon(s->mhd);
            s->mhd = NULL;
        }
    }
    if (rc) {
        sn_serve_sessions_free(s->sessions);
        sn_free(s->det);
        sn_free(s->workers);
        sn_free(s->path);
        sn_free(s->model);
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->work);
        pthread_cond_destroy(&s->done);
        sn_free(s);
        return rc;
    }
    /* the key is only ever compared: a copy that callers may not change underneath us */
    s->p.api_key = s->p.api_key && *s->p.api_key ? sn_strdup(s->p.api_key) : NULL;
    s->p.host = NULL;
    s->p.model_name = NULL;
    *out = s;
    return SN_OK;
}

int sn_serve_wait_ready(struct sn_serve *s, struct sn_err *err)
{
    pthread_mutex_lock(&s->mu);
    while (s->load_state == 0)
        pthread_cond_wait(&s->done, &s->mu);
    int rc = s->load_state > 0 ? SN_OK
                               : sn_err_set(err, s->load_err.code ? s->load_err.code
                                                                  : SN_E_BACKEND,
                                            "%s", s->load_err.msg);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int sn_serve_port(const struct sn_serve *s) { return s ? s->port : 0; }

void sn_serve_pause(struct sn_serve *s, bool paused)
{
    pthread_mutex_lock(&s->mu);
    s->paused = paused;
    pthread_cond_broadcast(&s->work);
    pthread_mutex_unlock(&s->mu);
}

int sn_serve_queued(struct sn_serve *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->n_queued;
    pthread_mutex_unlock(&s->mu);
    return n;
}

void sn_serve_stop(struct sn_serve *s)
{
    if (!s)
        return;
    /* no new connections; requests already read get 503, jobs taken run to the end */
    MHD_socket ls = MHD_quiesce_daemon(s->mhd);
    pthread_join(s->loader, NULL);
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    s->paused = false;
    pthread_cond_broadcast(&s->work);
    /* every request started is answered and its reply sent (MHD's completion callback) */
    while (s->active > 0)
        pthread_cond_wait(&s->done, &s->mu);
    pthread_mutex_unlock(&s->mu);
    MHD_stop_daemon(s->mhd);
    if (ls != MHD_INVALID_SOCKET)
        close(ls);
    for (int i = 0; i < s->n_started; i++)
        pthread_join(s->workers[i], NULL);
    for (int i = 0; i < s->p.n_workers; i++)
        sn_detector_free(s->det[i]);
    sn_serve_sessions_free(s->sessions);
    sn_free(s->det);
    sn_free(s->workers);
    sn_free(s->path);
    sn_free(s->model);
    sn_free((char *)s->p.api_key);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->done);
    sn_free(s);
}
