/* serve/serve.h: `sentinel serve`, the runtime detector and Algorithm 1 over HTTP for agents
** written in other languages (docs/agents.md "The server": every endpoint, status and limit).
** HTTP is libmicrohttpd's (its header stays inside serve/server.c); requests and replies are
** JSON (cJSON).
**
**   GET  /health                   200 {"status":"ok"} once the model is loaded, 503 before
**   GET  /v1/models                the one model (OpenAI list shape)
**   POST /v1/score                 {"context", "responses": [...]} | {"context", "response"} |
**                                  {"pairs": [{"context", "response"}, ...]} -> {"scores": [...]}
**   POST /v1/rerank                {"query", "documents", "top_n"} -> {"results": [{"index",
**                                  "relevance_score"}]}, best first; relevance_score is the raw
**                                  reward R (not a sigmoid)
**   POST /v1/debates               {"sentinels": [ids], "k", "rule", "seed", "task" | "question"
**                                  (+ "options")} -> 201 {"id", ...}: a debate session
**   POST /v1/debates/ID/rounds     {"messages": [{"agent", "text", "answer"?}], "round"?} ->
**                                  each sentinel's scores, exclusions and blacklist
**   GET  /v1/debates/ID            the session's state; DELETE removes it
**
** Threads: one per connection reads and answers (libmicrohttpd), n_workers score, each with its
** own detector; a bounded queue sits between them (full: 503 with Retry-After). Sessions live
** in one table under a mutex; a session runs one round at a time (409 while one is running). */
#ifndef SN_SERVE_H
#define SN_SERVE_H
#include "common/common.h"

struct sn_serve;

struct sn_serve_params {
    const char *host;          /* address to bind; NULL = "127.0.0.1" (loopback only) */
    int         port;          /* 0 = a free port (sn_serve_port says which) */
    int         n_workers;     /* scoring workers, one detector each; 0 = 1 */
    int         n_threads;     /* OpenBLAS threads per worker's forward; 0 = 1 */
    int         queue_max;     /* requests waiting for a worker; 0 = 4 * n_workers */
    double      queue_wait_s;  /* a request still waiting after this gets 503; 0 = 30 */
    size_t      max_body;      /* bytes of a request body; 0 = 1 MiB (413 beyond) */
    size_t      max_tokens;    /* tokens of one request, all its texts; 0 = 65536 (413) */
    int         max_items;     /* responses, documents, pairs or messages per request; 0 = 64 */
    int         max_connections; /* 0 = 64 */
    int         conn_timeout_s;  /* an idle or stalled connection is closed; 0 = 30 */
    int         max_sessions;  /* live debate sessions; 0 = 256 (429 beyond) */
    double      session_ttl_s; /* a session unused this long is removed; 0 = 3600 */
    const char *api_key;       /* NULL or "": no authentication; else "Authorization: Bearer
                               ** KEY" (or "X-API-Key: KEY") is required except on /health */
    const char *model_name;    /* /v1/models' id; NULL = the GGUF's file name */
    uint64_t    seed;          /* session ids are drawn from an RNG seeded with this and the
                               ** clock; 0 = clock only */
};
struct sn_serve_params sn_serve_default_params(void);

/* Starts listening at once (GET /health says 503 "loading" until the detectors are open) and
** opens n_workers detectors from gguf_path in the background. A failed load is reported by
** sn_serve_wait_ready. *out is NULL on failure. */
int  sn_serve_start(const char *gguf_path, const struct sn_serve_params *p,
                    struct sn_serve **out, struct sn_err *err);
/* Blocks until the model is loaded (SN_OK) or failed to load (its error). */
int  sn_serve_wait_ready(struct sn_serve *s, struct sn_err *err);
int  sn_serve_port(const struct sn_serve *s);
/* Workers take no new job while paused (queued requests wait; maintenance, and the tests'
** way to fill the queue without depending on timing). */
void sn_serve_pause(struct sn_serve *s, bool paused);
int  sn_serve_queued(struct sn_serve *s);    /* requests waiting for a worker now */
/* Graceful stop: new connections are refused and new requests get 503, requests already taken
** (queued or running) are answered, then everything is freed. NULL is fine. */
void sn_serve_stop(struct sn_serve *s);

/* ---- request bodies (serve/request.c), pure functions, also the fuzz target's entry -------- */

enum sn_serve_kind { SN_SERVE_SCORE, SN_SERVE_RERANK, SN_SERVE_DEBATE_NEW, SN_SERVE_ROUND,
                     SN_SERVE_KIND_COUNT };
/* A parsed request: strings borrowed from `json` (cJSON_Delete it when done). */
struct sn_serve_req {
    cJSON       *json;
    int          kind;             /* enum sn_serve_kind */
    size_t       n;                /* items: responses, documents, pairs or messages */
    const char **contexts;         /* n: score (one per pair, or the shared context), rerank */
    const char **texts;            /* n: responses, documents or message texts */
    const char **answers;          /* n: round messages' answers (NULL: extract) */
    int         *agents;           /* n: round messages' senders */
    bool         shared;           /* score: one context for every response */
    int          top_n;            /* rerank: results returned (n when absent) */
    bool         return_documents; /* rerank */
    int          round;            /* round: -1 = the next one */
    /* debate creation */
    uint64_t     sentinels;        /* bit j: agent j runs Algorithm 1 */
    int          k;
    int          rule;             /* enum sn_defense_rule */
    uint64_t     seed;
    const char  *task;             /* "task", or NULL: question + options */
    const char  *question;
    const char **options;
    size_t       n_options;
};
/* Parses body (len bytes, any bytes) as a request of `kind`; on failure err holds one line
** naming the field and what was expected (the 400 message), and req is empty. max_items bounds
** n (SN_E_ARG past it: the caller answers 413). Free with sn_serve_req_free. */
int  sn_serve_parse(int kind, const char *body, size_t len, int max_items,
                    struct sn_serve_req *req, struct sn_err *err);
void sn_serve_req_free(struct sn_serve_req *req);

#endif
