/* llm/llm.h: the llm module: chat-completion backends behind one opaque handle, used by the
** debate engine (sim/), the tuple builder's LLM summaries and references (tuples/tuples.c)
** and, later, the LLM-judge baseline of `sentinel eval` (docs/design.md §2 "LLM endpoints
** (OpenAI-compatible) or simulated agents", §3 module table). Depends on common and libcurl
** only; no curl type reaches callers.
**
** A backend answers chat-completion requests. sn_llm_complete() is blocking and thread-safe:
** the engine runs many debates on many threads and each thread calls it; the backend bounds
** how many requests are in flight per endpoint (its `concurrency`), queueing the rest.
**
** Kinds:
**   "openai"  built in: OpenAI-compatible POST {base_url}/chat/completions over libcurl (vLLM,
**             llama.cpp server, Ollama, hosted APIs), retries with exponential backoff and
**             jitter, Retry-After, an on-disk response cache keyed by the request hash
**             (llm/openai.c; docs/openai.md).
**   others    implemented outside this module through the ops table below
**             (sn_llm_backend_create) and opened by name with sn_llm_backend_open_with: the
**             built-in simulated agents "sim" of sim/ (sim/simagent.c) read the
**             structured `sim_hint` of the request (sim/sim.h defines it) rather than the
**             prompt text; sn_sim_endpoint_open (sim/sim.h) opens "sim" or "openai".
**
** Ownership: the backend owns nothing of the request; the reply's text is owned by the reply
** and freed by sn_llm_reply_free. API keys are read from the environment variable the config
** names, kept only in memory, and never written to any file, log or error message. */
#ifndef SN_LLM_H
#define SN_LLM_H
#include "common/common.h"

struct sn_chat_msg {
    const char *role;    /* "system", "user" or "assistant" */
    const char *content; /* UTF-8 */
};

struct sn_llm_request {
    const struct sn_chat_msg *messages;
    size_t      n_messages;
    const char *model;        /* NULL = the endpoint's configured model */
    double      temperature;  /* < 0 = not sent (server default) */
    double      top_p;        /* < 0 = not sent */
    int         max_tokens;   /* 0 = not sent */
    bool        has_seed;
    int64_t     seed;
    const void *sim_hint;     /* structured view for the sim backend; others ignore it */
};

struct sn_llm_reply {
    char  *text;              /* owned; NUL-terminated UTF-8 */
    int    prompt_tokens;     /* as reported by the server (or estimated by sim); -1 unknown */
    int    completion_tokens;
    double latency_ms;        /* wall time of the successful attempt */
    int    attempts;          /* 1 + retries */
    bool   cached;            /* served from the response cache */
    /* What the server said besides the text (docs/openai.md "Replies"); each NULL when absent,
    ** owned by the reply. */
    char  *finish_reason;     /* "stop", "length" (cut off by max_tokens), "content_filter" */
    char  *refusal;           /* message.refusal; when refused, text holds the same words */
    char  *model;             /* the model the server says it served */
    char  *system_fingerprint;
    bool   refused;           /* content was null or blank and the server sent a refusal: the
                              ** refusal is the message, not an error */
    bool   from_reasoning;    /* content was null or blank: text is the model's reasoning */
};

/* Counters for progress lines and benchmarks; read without locking (approximate while busy). */
struct sn_llm_stats {
    uint64_t requests, completed, failed, retries, cache_hits;
    uint64_t prompt_tokens, completion_tokens;
    int      in_flight;
    int      paused;          /* 1 while the endpoint is down or loading and requests wait for
                              ** it (openai `ready_timeout_s`) instead of failing */
};

struct sn_llm_backend; /* opaque */

/* Opens a backend of the built-in kind "openai" from one endpoint object of a recipe, e.g.
**   {"kind":"openai","base_url":"http://127.0.0.1:8000/v1","model":"Qwen2.5-7B-Instruct",
**    "api_key_env":"OPENAI_API_KEY","concurrency":64,"timeout_s":120,"max_retries":6,
**    "cache_dir":"out/cache"}
** Unknown keys are an error naming the nearest valid one. Any other "kind" is an error naming
** the kinds known here (open "sim" with sn_sim_endpoint_open of sim/sim.h). */
int  sn_llm_backend_open(const cJSON *config, struct sn_llm_backend **out, struct sn_err *err);
void sn_llm_backend_close(struct sn_llm_backend *b);                /* NULL is fine */
/* Blocking, thread-safe. On failure after all retries: an error naming the endpoint (never
** the key), the last HTTP status or transport error, and the number of attempts. */
int  sn_llm_complete(struct sn_llm_backend *b, const struct sn_llm_request *req,
                     struct sn_llm_reply *out, struct sn_err *err);
void sn_llm_reply_free(struct sn_llm_reply *r);
/* "openai http://127.0.0.1:8000/v1 model=Qwen2.5-7B-Instruct" / "sim v1"; borrowed. */
const char *sn_llm_backend_describe(const struct sn_llm_backend *b);
/* The kind of the backend ("openai", "sim", ...); borrowed, "" for NULL. */
const char *sn_llm_backend_kind(const struct sn_llm_backend *b);
struct sn_llm_stats sn_llm_backend_stats(const struct sn_llm_backend *b);

/* ---- kinds implemented outside llm/ ----------------------------------------------------
** A kind fills an ops table and wraps its own state (impl) with sn_llm_backend_create. The
** functions receive the backend handle; sn_llm_backend_impl gives back impl. */
struct sn_llm_backend_ops {
    const char *kind; /* static string, e.g. "sim" */
    int  (*complete)(struct sn_llm_backend *b, const struct sn_llm_request *req,
                     struct sn_llm_reply *out, struct sn_err *err);
    void (*close)(struct sn_llm_backend *b); /* frees impl; the handle itself is freed by
                                             ** sn_llm_backend_close afterwards */
};
/* A backend of kind ops->kind around impl (borrowed until ops->close). `describe` is copied
** (at most 255 bytes). ops must outlive the backend. On failure *out is NULL and impl is left
** to the caller. */
int  sn_llm_backend_create(const struct sn_llm_backend_ops *ops, void *impl, const char *describe,
                           struct sn_llm_backend **out, struct sn_err *err);
void *sn_llm_backend_impl(const struct sn_llm_backend *b);
/* The counters sn_llm_backend_stats reads, for the implementation to update (relaxed atomics:
** callers read them without locking). */
struct sn_llm_stats *sn_llm_backend_counters(struct sn_llm_backend *b);

/* A kind by name, for sn_llm_backend_open_with. */
struct sn_llm_kind {
    const char *name;
    int (*open)(const cJSON *config, struct sn_llm_backend **out, struct sn_err *err);
};
/* sn_llm_backend_open that also knows the n_kinds given kinds (looked up before "openai"). */
int sn_llm_backend_open_with(const cJSON *config, const struct sn_llm_kind *kinds, size_t n_kinds,
                             struct sn_llm_backend **out, struct sn_err *err);

/* Redacts credentials in the NUL-terminated text s (buffer of cap bytes) in place, for every
** message, log line and file that may quote a request or a server's echo of it: the value
** after an HTTP authorization scheme ("Basic", "Bearer"), of api-key style
** headers and fields ("api-key", "x-api-key", "api_key", "apikey", "Authorization"), the
** userinfo of a URL ("http://user:pass@host" -> "http://[redacted]@host") and secret query
** parameters ("?key=", "&api_key=", "&token=", "&access_token=", "&sig=", ...). Each secret
** becomes "[redacted]"; text that no longer fits in cap is cut at the end. Returns how many
** were redacted. */
size_t sn_llm_redact(char *s, size_t cap);

#endif
