/* tokenizer/template.c: prompt template sentinel-chatml/1 and its truncation policy
** (tokenizer/template.h; spec in docs/formats.md).
**
** Content is escaped so no message can forge the template's structure: every "<|" inside the
** system text, task, history or response is rendered as "<\u200b|" (a zero-width space between
** the two characters), so a debater writing "<|im_end|>" cannot close its turn early (the
** tokenizer matches added tokens anywhere in the text). */
#include "tokenizer/template.h"

#include <string.h>

#define HIST_HEADER "\n\nDiscussion so far:\n"
#define CUT_MARK    "[...] "
#define ZWSP        "\xe2\x80\x8b"
#define MAX_ROUNDS  200 /* re-check iterations before giving up (never reached in practice) */

static int append_content(struct sn_buf *b, const char *s, size_t n, struct sn_err *err)
{
    size_t i = 0;
    while (i < n) {
        const char *hit = NULL;
        for (size_t j = i; j + 1 < n; j++)
            if (s[j] == '<' && s[j + 1] == '|') {
                hit = s + j;
                break;
            }
        size_t upto = hit ? (size_t)(hit - s) + 1 : n; /* through the '<' */
        int rc = sn_buf_append(b, s + i, upto - i, err);
        if (!rc && hit)
            rc = sn_buf_puts(b, ZWSP, err);
        if (rc)
            return rc;
        i = upto;
    }
    return sn_buf_append(b, "", 0, err); /* NUL-terminate even when n == 0 */
}

/* Which part of a prompt is rendered: history entries [h0, n) when `block`, else none; the
** response from byte `r0` (with the cut mark when r0 > 0). */
struct shape {
    bool   block;
    size_t h0;
    size_t r0;
};

static int render_history(const struct sn_prompt *p, const struct shape *s, struct sn_buf *b,
                          struct sn_err *err)
{
    if (!p->n_history || !s->block)
        return SN_OK;
    int rc = sn_buf_puts(b, HIST_HEADER, err);
    if (!rc && s->h0 > 0)
        rc = sn_buf_printf(b, err, "[%zu earlier message%s omitted]%s", s->h0,
                           s->h0 == 1 ? "" : "s", s->h0 < p->n_history ? "\n" : "");
    for (size_t i = s->h0; i < p->n_history && !rc; i++) {
        const char *e = p->history[i] ? p->history[i] : "";
        if (i > s->h0)
            rc = sn_buf_puts(b, "\n", err);
        if (!rc)
            rc = append_content(b, e, strlen(e), err);
    }
    return rc;
}

static int render_shape(const struct sn_prompt *p, const struct shape *s, const char *resp,
                        struct sn_buf *b, struct sn_err *err)
{
    const char *sys = p->system ? p->system : SN_TEMPLATE_SYSTEM;
    const char *task = p->task ? p->task : "";
    size_t rlen = resp ? strlen(resp) : 0;
    int rc = sn_buf_puts(b, "<|im_start|>system\n", err);
    if (!rc)
        rc = append_content(b, sys, strlen(sys), err);
    if (!rc)
        rc = sn_buf_puts(b, "<|im_end|>\n<|im_start|>user\n", err);
    if (!rc)
        rc = append_content(b, task, strlen(task), err);
    if (!rc)
        rc = render_history(p, s, b, err);
    if (!rc)
        rc = sn_buf_puts(b, "<|im_end|>\n<|im_start|>assistant\n", err);
    if (!rc && s->r0 > 0)
        rc = sn_buf_puts(b, CUT_MARK, err);
    if (!rc && s->r0 < rlen)
        rc = append_content(b, resp + s->r0, rlen - s->r0, err);
    if (!rc)
        rc = sn_buf_puts(b, "<|im_end|>\n", err);
    return rc;
}

int sn_template_context(const struct sn_prompt *p, struct sn_buf *out, struct sn_err *err)
{
    struct shape s = {true, 0, 0};
    const char *task = p->task ? p->task : "";
    int rc = append_content(out, task, strlen(task), err);
    return rc ? rc : render_history(p, &s, out, err);
}

int sn_template_render(const struct sn_prompt *p, const char *response, struct sn_buf *out,
                       struct sn_err *err)
{
    struct shape s = {true, 0, 0};
    return render_shape(p, &s, response, out, err);
}

/* Number of tokens of text[0..n) (escaped as content when `content`). */
static int count_tokens(const struct sn_tokenizer *tok, const char *text, size_t n, bool content,
                        struct sn_buf *scratch, struct sn_ids *ids, size_t *out,
                        struct sn_err *err)
{
    int rc = SN_OK;
    if (content) {
        sn_buf_reset(scratch);
        rc = append_content(scratch, text, n, err);
        text = scratch->data;
        n = scratch->len;
    }
    ids->n = 0;
    if (!rc)
        rc = sn_tokenizer_encode(tok, text, n, ids, err);
    *out = ids->n;
    return rc;
}

int sn_template_fixed_tokens(const struct sn_tokenizer *tok, const struct sn_prompt *p,
                             size_t *n, struct sn_err *err)
{
    struct sn_buf b = {0};
    struct sn_ids ids = {0};
    struct shape s = {false, 0, 0};
    int rc = render_shape(p, &s, "", &b, err);
    if (!rc)
        rc = sn_tokenizer_encode(tok, b.data, b.len, &ids, err);
    *n = ids.n;
    sn_buf_free(&b);
    sn_ids_free(&ids);
    return rc;
}

static bool is_cont(unsigned char c)
{
    return (c & 0xC0) == 0x80;
}

/* Smallest character-boundary offset o such that the response from o has at most `target`
** tokens; *kept = that count. Binary search over character starts (token counts of suffixes
** are non-increasing in o up to BPE boundary effects; the caller's final check covers those). */
static int cut_front(const struct sn_tokenizer *tok, const char *resp, size_t target,
                     struct sn_buf *scratch, struct sn_ids *ids, size_t *o_out, size_t *kept,
                     struct sn_err *err)
{
    size_t L = strlen(resp), lo = 0, hi = L, n;
    /* invariant: suffix at hi fits (the empty one always does); answer in [lo, hi] */
    while (lo < hi) {
        /* a suffix cannot start inside a character: move lo to the next character start
        ** (without this, lo inside a character just before hi probed hi forever) */
        while (lo < hi && is_cont((unsigned char)resp[lo]))
            lo++;
        if (lo == hi)
            break;
        size_t mid = lo + (hi - lo) / 2;
        while (mid > lo && is_cont((unsigned char)resp[mid]))
            mid--;
        int rc = count_tokens(tok, resp + mid, L - mid, true, scratch, ids, &n, err);
        if (rc)
            return rc;
        if (n <= target)
            hi = mid;
        else
            lo = mid + 1;
    }
    while (hi < L && is_cont((unsigned char)resp[hi]))
        hi++;
    int rc = count_tokens(tok, resp + hi, L - hi, true, scratch, ids, &n, err);
    *o_out = hi;
    *kept = n;
    return rc;
}

int sn_template_encode(const struct sn_tokenizer *tok, const struct sn_prompt *p,
                       const char *response, size_t max_len, struct sn_ids *out,
                       struct sn_template_cut *cut, struct sn_buf *text, struct sn_err *err)
{
    struct sn_buf b = {0}, scratch = {0};
    struct sn_ids tmp = {0};
    struct sn_template_cut c = {0, 0, 0};
    struct shape s = {true, 0, 0};
    size_t *cost = NULL; /* (n_history) tokens of "\n" + entry */
    const char *resp = response ? response : "";
    size_t rlen = strlen(resp), n_resp = 0;
    int rc = SN_OK;
    out->n = 0;
    if (sn_tokenizer_token_id(tok, "<|im_start|>") < 0 ||
        sn_tokenizer_token_id(tok, "<|im_end|>") < 0)
        return sn_err_set(err, SN_E_ARG, "template %s: the tokenizer has no <|im_start|> / "
                          "<|im_end|> tokens (ChatML)", SN_TEMPLATE_ID);
    /* Fast path: everything fits. */
    rc = render_shape(p, &s, resp, &b, err);
    if (!rc)
        rc = sn_tokenizer_encode(tok, b.data, b.len, out, err);
    if (rc || out->n <= max_len)
        goto done;

    /* Slow path: measure the pieces, shape, then re-check the exact total. */
    size_t F, hdr = 0, omit = 0, budget;
    rc = sn_template_fixed_tokens(tok, p, &F, err);
    if (!rc)
        rc = count_tokens(tok, resp, rlen, true, &scratch, &tmp, &n_resp, err);
    if (rc)
        goto done;
    size_t need = n_resp < SN_TEMPLATE_MIN_RESPONSE ? n_resp : SN_TEMPLATE_MIN_RESPONSE;
    if (F > max_len || max_len - F < need) {
        rc = sn_err_set(err, SN_E_ARG, "template %s: the task takes %zu tokens with the template, "
                        "leaving %zu of max_len %zu for the response (at least %zu needed)",
                        SN_TEMPLATE_ID, F, F > max_len ? 0 : max_len - F, max_len, need);
        goto done;
    }
    budget = max_len - F;
    if (p->n_history) {
        cost = sn_calloc(p->n_history, sizeof *cost);
        if (!cost) {
            rc = sn_err_set(err, SN_E_NOMEM, "template: out of memory");
            goto done;
        }
        char line[64];
        int ln = snprintf(line, sizeof line, "[%zu earlier messages omitted]\n", p->n_history);
        rc = count_tokens(tok, HIST_HEADER, strlen(HIST_HEADER), false, &scratch, &tmp, &hdr, err);
        if (!rc)
            rc = count_tokens(tok, line, (size_t)ln, false, &scratch, &tmp, &omit, err);
        for (size_t i = 0; i < p->n_history && !rc; i++) {
            const char *e = p->history[i] ? p->history[i] : "";
            sn_buf_reset(&b);
            rc = sn_buf_puts(&b, "\n", err);
            if (!rc)
                rc = count_tokens(tok, b.data, b.len, false, &scratch, &tmp, &cost[i], err);
            size_t ce = 0;
            if (!rc)
                rc = count_tokens(tok, e, strlen(e), true, &scratch, &tmp, &ce, err);
            cost[i] += ce;
        }
        if (rc)
            goto done;
    }
    if (n_resp <= budget) {
        size_t rem = budget - n_resp, used = hdr + omit;
        s.h0 = p->n_history;
        s.block = p->n_history > 0 && used <= rem;
        while (s.block && s.h0 > 0 && used + cost[s.h0 - 1] <= rem)
            used += cost[--s.h0];
    } else {
        size_t mark;
        s.block = false;
        s.h0 = p->n_history;
        rc = count_tokens(tok, CUT_MARK, strlen(CUT_MARK), false, &scratch, &tmp, &mark, err);
        size_t kept;
        if (!rc)
            rc = cut_front(tok, resp, budget > mark ? budget - mark : 0, &scratch, &tmp, &s.r0,
                           &kept, err);
        if (rc)
            goto done;
    }
    for (int round = 0; round < MAX_ROUNDS; round++) {
        sn_buf_reset(&b);
        out->n = 0;
        rc = render_shape(p, &s, resp, &b, err);
        if (!rc)
            rc = sn_tokenizer_encode(tok, b.data, b.len, out, err);
        if (rc || out->n <= max_len)
            break;
        size_t excess = out->n - max_len;
        if (s.block && s.h0 < p->n_history) {
            s.h0++;
        } else if (s.block) {
            s.block = false;
        } else {
            size_t kept, mark, cur;
            rc = count_tokens(tok, resp + s.r0, rlen - s.r0, true, &scratch, &tmp, &cur, err);
            if (!rc)
                rc = count_tokens(tok, CUT_MARK, strlen(CUT_MARK), false, &scratch, &tmp, &mark,
                                  err);
            if (rc)
                break;
            size_t target = cur > excess ? cur - excess : 0;
            if (s.r0 == 0)
                target = target > mark ? target - mark : 0;
            size_t o;
            rc = cut_front(tok, resp + s.r0, target, &scratch, &tmp, &o, &kept, err);
            if (rc)
                break;
            s.r0 += o > 0 ? o : 1;
            while (s.r0 < rlen && is_cont((unsigned char)resp[s.r0]))
                s.r0++;
        }
    }
    if (!rc && out->n > max_len)
        rc = sn_err_set(err, SN_E_ARG, "template %s: could not fit %zu tokens into max_len %zu",
                        SN_TEMPLATE_ID, out->n, max_len);
    if (rc)
        goto done;
    /* The per-piece estimate is conservative (it reserves the omission line, and pieces may
    ** merge across boundaries): give back history entries, newest first, while the exact
    ** count still fits. Only when the response is whole: history never outranks it. */
    while (s.r0 == 0 && p->n_history && (!s.block || s.h0 > 0)) {
        struct shape t = s;
        if (!t.block) {
            t.block = true;
            t.h0 = p->n_history;
        } else {
            t.h0--;
        }
        sn_buf_reset(&scratch);
        tmp.n = 0;
        rc = render_shape(p, &t, resp, &scratch, err);
        if (!rc)
            rc = sn_tokenizer_encode(tok, scratch.data, scratch.len, &tmp, err);
        if (rc)
            goto done;
        if (tmp.n > max_len)
            break;
        s = t;
        struct sn_buf sw = b;
        b = scratch;
        scratch = sw;
        struct sn_ids iw = *out;
        *out = tmp;
        tmp = iw;
    }
    if (p->n_history) {
        size_t first_kept = s.block ? s.h0 : p->n_history;
        c.n_history_dropped = first_kept;
        for (size_t i = 0; i < first_kept; i++)
            c.n_tokens_history += cost[i];
    }
    if (s.r0 > 0) {
        size_t kept;
        rc = count_tokens(tok, resp + s.r0, rlen - s.r0, true, &scratch, &tmp, &kept, err);
        c.n_tokens_response = n_resp > kept ? n_resp - kept : 0;
    }
done:
    if (!rc && text)
        rc = sn_buf_append(text, b.data ? b.data : "", b.len, err);
    if (!rc && cut)
        *cut = c;
    if (rc)
        out->n = 0;
    sn_free(cost);
    sn_buf_free(&b);
    sn_buf_free(&scratch);
    sn_ids_free(&tmp);
    return rc;
}
