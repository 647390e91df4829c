/* llm/openai_parse.c: reply parsing, server error text, Retry-After and backoff for the
** `openai` backend (llm/openai.c). Pure functions, no I/O; the fuzz target
** fuzz/fuzz_openai_reply.c drives sn_openai_parse_reply with hostile bodies.
** Rules: docs/openai.md ("Retries", "Replies"), which follow the official OpenAI clients'
** retry semantics. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "llm/openai_internal.h"

void sn_openai_sanitize(const char *src, size_t len, const char *secret, char *out, size_t out_n)
{
    if (!out || out_n == 0)
        return;
    size_t o = 0, slen = secret ? strlen(secret) : 0;
    static const char red[] = "[redacted]";
    bool cut = false;
    for (size_t i = 0; i < len; i++) {
        if (slen && len - i >= slen && memcmp(src + i, secret, slen) == 0) {
            if (o + sizeof red - 1 >= out_n) {
                cut = true;
                break;
            }
            memcpy(out + o, red, sizeof red - 1);
            o += sizeof red - 1;
            i += slen - 1;
            continue;
        }
        if (o + 1 >= out_n) {
            cut = true;
            break;
        }
        unsigned char c = (unsigned char)src[i];
        if (c == '\n' || c == '\r' || c == '\t')
            c = ' ';
        out[o++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    if (cut && out_n >= 4) {
        o = o > out_n - 4 ? out_n - 4 : o;
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
    sn_llm_redact(out, out_n); /* credentials a server echoed back in any form */
}

/* A string member, or NULL. */
static const char *str_member(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

void sn_openai_server_message(const char *body, size_t len, const char *secret, char *out,
                              size_t out_n)
{
    cJSON *j = body && len ? cJSON_ParseWithLength(body, len) : NULL;
    const char *msg = NULL;
    if (cJSON_IsObject(j)) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
        if (cJSON_IsObject(e))
            msg = str_member(e, "message");
        else if (cJSON_IsString(e))
            msg = e->valuestring;
        if (!msg)
            msg = str_member(j, "message");
        if (!msg)
            msg = str_member(j, "detail");
    }
    if (msg)
        sn_openai_sanitize(msg, strlen(msg), secret, out, out_n);
    else if (body && len)
        sn_openai_sanitize(body, len, secret, out, out_n);
    else
        sn_openai_sanitize("(empty body)", 12, NULL, out, out_n);
    cJSON_Delete(j);
}

/* content may be a string or (some servers) an array of {"type":"text","text":...} parts. */
static char *content_text(const cJSON *content, bool *ok)
{
    *ok = true;
    if (cJSON_IsString(content))
        return sn_strdup(content->valuestring);
    if (!cJSON_IsArray(content)) {
        *ok = false;
        return NULL;
    }
    struct sn_buf b = { .max = (size_t)64 << 20 };
    struct sn_err e = { 0 };
    const cJSON *part;
    cJSON_ArrayForEach(part, content)
    {
        const char *t = cJSON_IsObject(part) ? str_member(part, "text") : NULL;
        if (t && sn_buf_puts(&b, t, &e) != SN_OK) {
            sn_buf_free(&b);
            return NULL;
        }
    }
    if (!b.data)
        return sn_strdup("");
    return b.data;
}

static int usage_int(const cJSON *usage, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(usage, key);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > 2147483647.0)
        return -1;
    return (int)v->valuedouble;
}

/* Whether s is NULL, empty or only ASCII whitespace. */
static bool blank(const char *s)
{
    if (!s)
        return true;
    for (; *s; s++)
        if (!isspace((unsigned char)*s))
            return false;
    return true;
}

/* A copy of a short string member (server-chosen labels: finish_reason, model, fingerprint),
** sanitized and cut at 255 bytes; NULL when absent. *nomem is set when the copy failed. */
static char *label_member(const cJSON *obj, const char *key, bool *nomem)
{
    const char *v = obj ? str_member(obj, key) : NULL;
    if (!v)
        return NULL;
    char buf[256];
    sn_openai_sanitize(v, strlen(v), NULL, buf, sizeof buf);
    char *c = sn_strdup(buf);
    if (!c)
        *nomem = true;
    return c;
}

enum sn_openai_parse sn_openai_parse_reply(const char *body, size_t len, struct sn_llm_reply *out,
                                           char *finish, size_t finish_n, char *why,
                                           size_t why_n)
{
    if (finish && finish_n)
        finish[0] = '\0';
    cJSON *j = body && len ? cJSON_ParseWithLength(body, len) : NULL;
    enum sn_openai_parse rc = SN_OPENAI_PARSE_MALFORMED;
    char *text = NULL, *refusal = NULL;
    struct sn_llm_reply r = { 0 };
    if (!cJSON_IsObject(j)) {
        const char *what = !len ? "empty reply body" : "reply is not a JSON object";
        sn_openai_sanitize(what, strlen(what), NULL, why, why_n);
        goto done;
    }
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
    if (e && !cJSON_IsNull(e)) { /* some proxies answer 200 with an error object */
        char msg[300];
        sn_openai_server_message(body, len, NULL, msg, sizeof msg);
        snprintf(why, why_n, "server returned an error: %s", msg);
        rc = SN_OPENAI_PARSE_REJECTED;
        goto done;
    }
    const cJSON *choices = cJSON_GetObjectItemCaseSensitive(j, "choices");
    const cJSON *c0 = cJSON_IsArray(choices) ? cJSON_GetArrayItem(choices, 0) : NULL;
    const cJSON *msg = cJSON_IsObject(c0) ? cJSON_GetObjectItemCaseSensitive(c0, "message") : NULL;
    if (!cJSON_IsObject(msg)) {
        snprintf(why, why_n, "reply has no choices[0].message object");
        goto done;
    }
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
    bool ok = true, nomem = false;
    if (content && !cJSON_IsNull(content)) {
        text = content_text(content, &ok);
        if (!ok) {
            snprintf(why, why_n, "choices[0].message.content is neither a string nor an array");
            goto done;
        }
        if (!text)
            nomem = true;
    }
    /* content null, empty or blank: llama-server sends "" with reasoning_content, Ollama ""
    ** with reasoning, vLLM null with reasoning_content; OpenAI null with a refusal */
    const char *fr = str_member(c0, "finish_reason");
    if (!nomem && blank(text)) {
        const char *ref = str_member(msg, "refusal");
        const char *rs = str_member(msg, "reasoning_content");
        if (blank(rs))
            rs = str_member(msg, "reasoning");
        if (!blank(ref)) {
            sn_free(text);
            text = sn_strdup(ref);
            r.refused = true;
        } else if (!blank(rs)) {
            sn_free(text);
            text = sn_strdup(rs);
            r.from_reasoning = true;
        } else if (!text) {
            snprintf(why, why_n,
                     "choices[0].message.content is null and there is no reasoning or refusal "
                     "text (finish_reason %.40s)", fr ? fr : "absent");
            rc = SN_OPENAI_PARSE_REJECTED;
            goto done;
        }
        if (!text)
            nomem = true;
    }
    const char *ref = str_member(msg, "refusal");
    if (ref && !(refusal = sn_strdup(ref)))
        nomem = true;
    r.finish_reason = label_member(c0, "finish_reason", &nomem);
    r.model = label_member(j, "model", &nomem);
    r.system_fingerprint = label_member(j, "system_fingerprint", &nomem);
    if (nomem) {
        snprintf(why, why_n, "out of memory copying the reply text");
        rc = SN_OPENAI_PARSE_REJECTED;
        sn_llm_reply_free(&r);
        goto done;
    }
    /* The text travels as a C string into UTF-8 JSON files: a U+0000 would cut it silently and
    ** invalid UTF-8 would make the trajectory invalid JSON text. Refused (and retried: a
    ** sampled reply may come back clean), never recorded cut or raw. */
    size_t bad;
    if (sn_json_nul_escape(body, len) != (size_t)-1 || memchr(body, 0, len)) {
        snprintf(why, why_n, "reply holds U+0000 (NUL), which would cut the text");
        sn_llm_reply_free(&r);
        goto done;
    }
    if (!sn_utf8_valid(text, strlen(text), &bad) ||
        (refusal && !sn_utf8_valid(refusal, strlen(refusal), &bad))) {
        snprintf(why, why_n, "reply text is not valid UTF-8 (byte %zu of the text)", bad);
        sn_llm_reply_free(&r);
        goto done;
    }
    if (fr && finish && finish_n)
        sn_openai_sanitize(fr, strlen(fr), NULL, finish, finish_n);
    const cJSON *usage = cJSON_GetObjectItemCaseSensitive(j, "usage");
    r.text = text;
    r.refusal = refusal;
    text = refusal = NULL;
    r.prompt_tokens = cJSON_IsObject(usage) ? usage_int(usage, "prompt_tokens") : -1;
    r.completion_tokens = cJSON_IsObject(usage) ? usage_int(usage, "completion_tokens") : -1;
    /* only the parsed fields: latency, attempts and cached are the caller's */
    out->text = r.text;
    out->prompt_tokens = r.prompt_tokens;
    out->completion_tokens = r.completion_tokens;
    out->finish_reason = r.finish_reason;
    out->refusal = r.refusal;
    out->model = r.model;
    out->system_fingerprint = r.system_fingerprint;
    out->refused = r.refused;
    out->from_reasoning = r.from_reasoning;
    rc = SN_OPENAI_PARSE_OK;
done:
    sn_free(text);
    sn_free(refusal);
    cJSON_Delete(j);
    return rc;
}

/* The members of a reply that sn_openai_parse_reply reads, and nothing else. */
char *sn_openai_reply_essentials(const char *body, size_t len)
{
    cJSON *j = body && len ? cJSON_ParseWithLength(body, len) : NULL;
    cJSON *o = cJSON_CreateObject(), *ch = NULL, *c0 = NULL, *m = NULL;
    char *s = NULL;
    if (!cJSON_IsObject(j) || !o || !(ch = cJSON_AddArrayToObject(o, "choices")) ||
        !(c0 = cJSON_CreateObject()) || !cJSON_AddItemToArray(ch, c0) ||
        !(m = cJSON_AddObjectToObject(c0, "message")))
        goto done;
    static const char *const top[] = { "model", "system_fingerprint", "usage" };
    static const char *const inmsg[] = { "content", "reasoning_content", "reasoning", "refusal" };
    const cJSON *jc = cJSON_GetObjectItemCaseSensitive(j, "choices");
    const cJSON *j0 = cJSON_IsArray(jc) ? cJSON_GetArrayItem(jc, 0) : NULL;
    const cJSON *jm = cJSON_IsObject(j0) ? cJSON_GetObjectItemCaseSensitive(j0, "message") : NULL;
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, top[i]);
        if (v && !cJSON_AddItemToObject(o, top[i], cJSON_Duplicate(v, true)))
            goto done;
    }
    const cJSON *fr = j0 ? cJSON_GetObjectItemCaseSensitive(j0, "finish_reason") : NULL;
    if (fr && !cJSON_AddItemToObject(c0, "finish_reason", cJSON_Duplicate(fr, true)))
        goto done;
    for (size_t i = 0; i < sizeof inmsg / sizeof inmsg[0]; i++) {
        const cJSON *v = jm ? cJSON_GetObjectItemCaseSensitive(jm, inmsg[i]) : NULL;
        if (v && !cJSON_AddItemToObject(m, inmsg[i], cJSON_Duplicate(v, true)))
            goto done;
    }
    char *p = cJSON_PrintUnformatted(o);
    if (p) {
        s = sn_strdup(p);
        cJSON_free(p);
    }
done:
    cJSON_Delete(o);
    cJSON_Delete(j);
    return s;
}

/* A decimal number filling the whole string (surrounding blanks allowed). */
static bool parse_number(const char *s, double *out)
{
    while (*s == ' ' || *s == '\t')
        s++;
    if (!*s)
        return false;
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s)
        return false;
    while (*end == ' ' || *end == '\t')
        end++;
    if (*end || !isfinite(v))
        return false;
    *out = v;
    return true;
}

bool sn_openai_retry_after(const char *retry_after_ms, const char *retry_after, time_t now,
                           double *delay_s)
{
    double v;
    if (retry_after_ms && parse_number(retry_after_ms, &v) && v > 0) {
        *delay_s = v / 1000.0;
        return true;
    }
    if (!retry_after || !*retry_after)
        return false;
    if (parse_number(retry_after, &v)) {
        if (v > 0) {
            *delay_s = v;
            return true;
        }
        return false;
    }
    time_t t = curl_getdate(retry_after, NULL);
    if (t == (time_t)-1 || t <= now)
        return false;
    *delay_s = difftime(t, now);
    return true;
}

double sn_openai_backoff(int k, double base_s, double max_s, double u)
{
    double d = base_s * ldexp(1.0, k < 0 ? 0 : (k > 60 ? 60 : k));
    if (d > max_s)
        d = max_s;
    return d * (1.0 - 0.25 * u);
}

bool sn_openai_status_retryable(long status)
{
    return status == 408 || status == 409 || status == 429 || status >= 500;
}

char *sn_openai_public_url(const char *base_url)
{
    const char *scheme_end = strstr(base_url, "://");
    const char *host = scheme_end ? scheme_end + 3 : base_url;
    size_t host_len = strcspn(host, "/?#");
    const char *at = NULL;
    for (const char *p = host; p < host + host_len; p++)
        if (*p == '@')
            at = p;
    struct sn_buf b = { 0 };
    struct sn_err e = { 0 };
    if (sn_buf_append(&b, base_url, (size_t)(host - base_url), &e) ||
        sn_buf_puts(&b, at ? at + 1 : host, &e)) {
        sn_buf_free(&b);
        return NULL;
    }
    while (b.len > 0 && b.data[b.len - 1] == '/')
        b.data[--b.len] = '\0';
    return b.data;
}
