/* fuzz/fuzz_openai_reply.c: the `openai` backend's handling of what a server sends
** (llm/openai_parse.c) on arbitrary bytes: the reply parser, the error-text extractor and
** the Retry-After parser. Invariants (abort on violation): parsing is deterministic; a success
** yields a NUL-terminated text and token counts >= -1, and the raw fields the response cache
** keeps (sn_openai_reply_essentials) parse to the same text and flags; a failure leaves the
** reply untouched and a bounded reason; error text is bounded, printable ASCII, and never
** holds the secret; a Retry-After delay is positive and finite. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "llm/openai_internal.h"

#define SECRET "sk-fuzz-SECRET"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 20)
        return 0;
    const char *body = (const char *)data;
    struct sn_llm_reply a = { 0 }, b = { 0 };
    char fa[32], fb[32], wa[300], wb[300];
    enum sn_openai_parse pa = sn_openai_parse_reply(body, size, &a, fa, sizeof fa, wa, sizeof wa);
    enum sn_openai_parse pb = sn_openai_parse_reply(body, size, &b, fb, sizeof fb, wb, sizeof wb);
    if (pa != pb)
        abort();
    if (pa == SN_OPENAI_PARSE_OK) {
        if (!a.text || !b.text || strcmp(a.text, b.text) != 0 || strcmp(fa, fb) != 0)
            abort();
        if (a.prompt_tokens < -1 || a.completion_tokens < -1 ||
            a.prompt_tokens != b.prompt_tokens || a.completion_tokens != b.completion_tokens)
            abort();
        if (strlen(fa) >= sizeof fa)
            abort();
        /* the cache's raw fields parse to the same reply */
        char *ess = sn_openai_reply_essentials(body, size);
        struct sn_llm_reply c = { 0 };
        char fc[32], wc[300];
        if (ess && (sn_openai_parse_reply(ess, strlen(ess), &c, fc, sizeof fc, wc, sizeof wc) !=
                        SN_OPENAI_PARSE_OK ||
                    strcmp(c.text, a.text) != 0 || c.refused != a.refused ||
                    c.from_reasoning != a.from_reasoning || strcmp(fc, fa) != 0))
            abort();
        sn_llm_reply_free(&c);
        sn_free(ess);
    } else {
        if (a.text || b.text || strlen(wa) >= sizeof wa || strcmp(wa, wb) != 0)
            abort();
    }
    sn_llm_reply_free(&a);
    sn_llm_reply_free(&b);

    char msg[200];
    sn_openai_server_message(body, size, SECRET, msg, sizeof msg);
    size_t n = strlen(msg);
    if (n >= sizeof msg || strstr(msg, SECRET))
        abort();
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)msg[i] < 0x20 || (unsigned char)msg[i] >= 0x7f)
            abort();

    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    double d = -1;
    if (sn_openai_retry_after(s, NULL, 1700000000, &d) && !(d > 0 && isfinite(d)))
        abort();
    if (sn_openai_retry_after(NULL, s, 1700000000, &d) && !(d > 0 && isfinite(d)))
        abort();
    free(s);
    return 0;
}
