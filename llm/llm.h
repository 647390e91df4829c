/* data/sim/backend.h: LLM backends for the debate engine (DESIGN.md §2 "LLM endpoints (OpenAI-
** compatible) or simulated agents").
**
** A backend answers chat-completion requests. sn_llm_complete() is blocking and thread-safe:
** the engine runs many debates on many threads and each thread calls it; the backend bounds
** how many requests are in flight per endpoint (its `concurrency`), queueing the rest.
**
** Kinds:
**   "openai"  OpenAI-compatible POST {base_url}/chat/completions over libcurl (vLLM, llama.cpp
**             server, Ollama, hosted APIs), retries with exponential backoff and jitter,
**             Retry-After, an on-disk response cache keyed by the request hash
**             (data/sim/openai.c).
**   "sim"     built-in simulated agents, deterministic by seed, no network. They read the
**             structured `sim_hint` of the request (data/sim/sim.h defines it) rather than the
**             prompt text (data/sim/simagent.c).
**
** Ownership: the backend owns nothing of the request; the reply's text is owned by the reply
** and freed by sn_llm_reply_free. API keys are read from the environment variable the config
** names, kept only in memory, and never written to any file, log or error message. */
#ifndef SN_DATA_SIM_BACKEND_H
#define SN_DATA_SIM_BACKEND_H
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
};

/* Counters for progress lines and benchmarks; read without locking (approximate while busy). */
struct sn_llm_stats {
    uint64_t requests, completed, failed, retries, cache_hits;
    uint64_t prompt_tokens, completion_tokens;
    int      in_flight;
};

struct sn_llm_backend;

/* Opens a backend from one endpoint object of the recipe, e.g.
**   {"kind":"openai","base_url":"http://127.0.0.1:8000/v1","model":"Qwen2.5-7B-Instruct",
**    "api_key_env":"OPENAI_API_KEY","concurrency":64,"timeout_s":120,"max_retries":6,
**    "cache_dir":"out/cache"}
**   {"kind":"sim","competence":0.8,...}
** Unknown keys are an error naming the nearest valid one. */
int  sn_llm_backend_open(const cJSON *config, struct sn_llm_backend **out, struct sn_err *err);
void sn_llm_backend_close(struct sn_llm_backend *b);                /* NULL is fine */
/* Blocking, thread-safe. On failure after all retries: an error naming the endpoint (never
** the key), the last HTTP status or transport error, and the number of attempts. */
int  sn_llm_complete(struct sn_llm_backend *b, const struct sn_llm_request *req,
                     struct sn_llm_reply *out, struct sn_err *err);
void sn_llm_reply_free(struct sn_llm_reply *r);
/* "openai http://127.0.0.1:8000/v1 model=Qwen2.5-7B-Instruct" / "sim v1"; borrowed. */
const char *sn_llm_backend_describe(const struct sn_llm_backend *b);
struct sn_llm_stats sn_llm_backend_stats(const struct sn_llm_backend *b);

/* The vtable each kind fills (implementations live in data/sim/; dispatch in backend.c). */
struct sn_llm_backend_ops {
    const char *kind;
    int  (*complete)(struct sn_llm_backend *b, const struct sn_llm_request *req,
                     struct sn_llm_reply *out, struct sn_err *err);
    void (*close)(struct sn_llm_backend *b);
};
struct sn_llm_backend {
    const struct sn_llm_backend_ops *ops;
    char   describe[256];
    struct sn_llm_stats stats; /* updated by the implementation (atomics or under its lock) */
};
/* Constructors, called by sn_llm_backend_open according to config "kind". Each returns an
** object whose first member is struct sn_llm_backend. */
int sn_llm_openai_open(const cJSON *config, struct sn_llm_backend **out, struct sn_err *err);
int sn_llm_sim_open(const cJSON *config, struct sn_llm_backend **out, struct sn_err *err);

#endif
