/* llm/openai_internal.h: the pure pieces of the `openai` backend (llm/openai.c),
** exposed for tests and the reply-parser fuzz target. Nothing here does I/O.
** Rules and formats: docs/openai.md. */
#ifndef SN_LLM_OPENAI_INTERNAL_H
#define SN_LLM_OPENAI_INTERNAL_H
#include <time.h>

#include "llm/llm_internal.h"

/* What sn_openai_parse_reply found. */
enum sn_openai_parse {
    SN_OPENAI_PARSE_OK = 0,
    SN_OPENAI_PARSE_MALFORMED, /* not JSON, or no choices[0].message: retried (server/proxy glitch) */
    SN_OPENAI_PARSE_REJECTED,  /* well-formed but unusable (an "error" object, no content): not
                               ** retried */
};

/* Parses a chat-completion reply body (len bytes, need not be NUL-terminated).
** On SN_OPENAI_PARSE_OK: out->text (owned; free with sn_llm_reply_free) is
** choices[0].message.content (a string, or the concatenated "text" parts of an array). When the
** content is null, absent, empty or only whitespace: a non-blank "refusal" is the text
** (out->refused), else a non-blank reasoning ("reasoning_content" from vLLM and llama.cpp,
** "reasoning" from Ollama) is (out->from_reasoning), else an empty or blank string content is
** kept as is and a null one is REJECTED. prompt_tokens/completion_tokens from "usage" (-1 when
** absent); finish_reason, refusal, model and system_fingerprint into the reply's fields (NULL
** when absent). finish_reason (may be NULL) is also copied into `finish` (NUL-terminated).
** Otherwise `why` gets a one-line reason (server text sanitized, at most why_n - 1 bytes) and out
** is untouched. */
enum sn_openai_parse sn_openai_parse_reply(const char *body, size_t len, struct sn_llm_reply *out,
                                           char *finish, size_t finish_n, char *why,
                                           size_t why_n);

/* A compact JSON object holding only what sn_openai_parse_reply reads of a reply body (model,
** system_fingerprint, usage, choices[0].finish_reason and message content, reasoning_content,
** reasoning, refusal): the raw fields the response cache stores, so that a cached reply is
** parsed again by the same rules. Owned (sn_free); NULL when the body is not a JSON object or
** memory ran out. */
char *sn_openai_reply_essentials(const char *body, size_t len);

/* The server's own error text from an error reply body, for messages: error.message (OpenAI,
** llama.cpp), message (vLLM), error (string; Ollama), detail (FastAPI), else the raw body.
** Sanitized into out (NUL-terminated, at most out_n - 1 bytes, "..." when cut): control and
** non-ASCII bytes become '?', and every occurrence of `secret` (if non-NULL and non-empty)
** becomes "[redacted]". */
void sn_openai_server_message(const char *body, size_t len, const char *secret, char *out,
                              size_t out_n);

/* Copies src into out (same bounds and rules as above: printable ASCII, secret redacted). */
void sn_openai_sanitize(const char *src, size_t len, const char *secret, char *out, size_t out_n);

/* The server's requested delay in seconds from the values of the `retry-after-ms` (float
** milliseconds) and `retry-after` (float seconds or an HTTP date, relative to `now`) headers;
** either may be NULL. retry-after-ms wins. Returns false when neither gives a delay > 0. */
bool sn_openai_retry_after(const char *retry_after_ms, const char *retry_after, time_t now,
                           double *delay_s);

/* Backoff before retry number k (0 = the first retry): min(base · 2^k, max) · (1 − 0.25·u),
** u in [0, 1) (the OpenAI clients' schedule, docs/openai.md "Retries"). */
double sn_openai_backoff(int k, double base_s, double max_s, double u);

/* Whether an HTTP status is retried: 408, 409, 429 and every status >= 500. */
bool sn_openai_status_retryable(long status);

/* base_url with any "user:password@" removed, and without a trailing '/'. Owned (sn_free). */
char *sn_openai_public_url(const char *base_url);

#endif
