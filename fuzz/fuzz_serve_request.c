/* fuzz/fuzz_serve_request.c: the request bodies of `sentinel serve` (serve/request.c) on
** arbitrary bytes. The first byte picks the endpoint (score, rerank, debate, round) and the item
** limit (1-8); the rest is the body. Invariants (abort on violation): a failure leaves the
** request empty with a one-line message; a success holds between 1 (0 for a round) and the limit
** items, every text pointer set and UTF-8, shared scoring with one context; parsing is
** deterministic. */
#include "serve/serve.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0 || size > 1 << 16)
        return 0;
    int kind = data[0] % SN_SERVE_KIND_COUNT, max = 1 + (data[0] >> 2) % 8;
    const char *body = (const char *)data + 1;
    size_t len = size - 1;
    struct sn_serve_req a, b;
    struct sn_err ea = {0}, eb = {0};
    int ra = sn_serve_parse(kind, body, len, max, &a, &ea);
    int rb = sn_serve_parse(kind, body, len, max, &b, &eb);
    if (ra != rb || strcmp(ea.msg, eb.msg) != 0)
        abort();
    if (ra) {
        if (a.json || a.texts || a.n || !ea.msg[0] || strchr(ea.msg, '\n'))
            abort();
        return 0;
    }
    if (a.n != b.n || a.n > (size_t)max || (kind != SN_SERVE_ROUND && kind !=
                                            SN_SERVE_DEBATE_NEW && a.n == 0))
        abort();
    for (size_t i = 0; i < a.n; i++) {
        if (!a.texts[i] || !sn_utf8_valid_str(a.texts[i]))
            abort();
        if ((kind == SN_SERVE_SCORE || kind == SN_SERVE_RERANK) &&
            (!a.contexts[i] || (a.shared && a.contexts[i] != a.contexts[0])))
            abort();
    }
    if (kind == SN_SERVE_RERANK && (a.top_n < 1 || (size_t)a.top_n > a.n))
        abort();
    if (kind == SN_SERVE_DEBATE_NEW && (!a.sentinels || a.k < 1 || !a.task == !a.question))
        abort();
    sn_serve_req_free(&a);
    sn_serve_req_free(&b);
    return 0;
}
