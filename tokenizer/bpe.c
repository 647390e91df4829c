/* tokenizer/bpe.c: the BPE core of the tokenizer (tokenizer/tokenizer.h): UTF-8 checks, the
** per-thread scratch, pre-tokenization, the merge loop and sn_tokenizer_encode. The handle
** (loading, the vocabulary and merge tables, the other calls) is tokenizer/tokenizer.c; the
** pipeline is described there and in docs/formats.md#tokenizerjson. */
#include "tokenizer/tokenizer_internal.h"

#include <stdlib.h>
#include <utf8proc.h>

/* ---- small helpers ------------------------------------------------------------------------ */

int sn_ids_push(struct sn_ids *ids, int32_t id, struct sn_err *err)
{
    if (ids->n == ids->cap) {
        size_t cap = ids->cap ? ids->cap * 2 : 64;
        int32_t *v = sn_realloc(ids->v, cap * sizeof *v);
        if (!v)
            return sn_err_set(err, SN_E_NOMEM, "token ids: out of memory (%zu ids)", cap);
        ids->v = v;
        ids->cap = cap;
    }
    ids->v[ids->n++] = id;
    return SN_OK;
}

void sn_ids_free(struct sn_ids *ids)
{
    if (!ids)
        return;
    sn_free(ids->v);
    ids->v = NULL;
    ids->n = ids->cap = 0;
}

static int ids_reserve(struct sn_ids *ids, size_t extra, struct sn_err *err)
{
    if (ids->cap - ids->n >= extra)
        return SN_OK;
    size_t cap = ids->cap ? ids->cap : 64;
    while (cap - ids->n < extra) {
        if (cap > SIZE_MAX / 8)
            return sn_err_set(err, SN_E_NOMEM, "token ids: too many");
        cap *= 2;
    }
    int32_t *v = sn_realloc(ids->v, cap * sizeof *v);
    if (!v)
        return sn_err_set(err, SN_E_NOMEM, "token ids: out of memory (%zu ids)", cap);
    ids->v = v;
    ids->cap = cap;
    return SN_OK;
}

uint32_t sn_bytelevel_cp(uint8_t b)
{
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)
        return b;
    /* rank of b among the 68 unprintable bytes: 0x00-0x20 (33), 0x7F-0xA0 (34), 0xAD (1) */
    if (b <= 0x20)
        return 0x100 + b;
    if (b <= 0xA0)
        return 0x100 + 33 + (b - 0x7F);
    return 0x100 + 67;
}

size_t sn_bytelevel_write(const uint8_t *b, size_t n, char *dst)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t cp = sn_bytelevel_cp(b[i]);
        if (cp < 0x80) {
            dst[o++] = (char)cp;
        } else {
            dst[o++] = (char)(0xC0 | cp >> 6);
            dst[o++] = (char)(0x80 | (cp & 0x3F));
        }
    }
    dst[o] = 0;
    return o;
}

int sn_bytelevel_byte(uint32_t cp)
{
    if ((cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE && cp <= 0xFF))
        return (int)cp;
    if (cp < 0x100 || cp > 0x143)
        return -1;
    uint32_t r = cp - 0x100;
    if (r < 33)
        return (int)r;
    if (r < 67)
        return (int)(0x7F + r - 33);
    return 0xAD;
}

/* Offset of the first byte of the first invalid UTF-8 sequence in s[0..n) (RFC 3629: no
** overlong forms, no surrogates, nothing above U+10FFFF), or n when all of it is valid. */
size_t sn_tok_utf8_check(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (s[i] < 0x80) {
            while (i + 8 <= n) {
                uint64_t w;
                memcpy(&w, s + i, 8);
                if (w & 0x8080808080808080ull)
                    break;
                i += 8;
            }
            while (i < n && s[i] < 0x80)
                i++;
            continue;
        }
        uint8_t c = s[i];
        size_t k;
        if (c >= 0xC2 && c <= 0xDF)
            k = 1;
        else if (c >= 0xE0 && c <= 0xEF)
            k = 2;
        else if (c >= 0xF0 && c <= 0xF4)
            k = 3;
        else
            return i;
        if (n - i <= k)
            return i;
        uint32_t cp = c & (0x3Fu >> k);
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xC0) != 0x80)
                return i;
            cp = cp << 6 | (s[i + j] & 0x3Fu);
        }
        if (k == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF)))
            return i;
        if (k == 3 && (cp < 0x10000 || cp > 0x10FFFF))
            return i;
        i += k + 1;
    }
    return n;
}

/* Decodes one code point of valid UTF-8 at s (n > 0 bytes left); sets *len. */
uint32_t sn_tok_utf8_next(const uint8_t *s, size_t *len)
{
    uint8_t c = s[0];
    if (c < 0x80) {
        *len = 1;
        return c;
    }
    if (c < 0xE0) {
        *len = 2;
        return (uint32_t)(c & 0x1F) << 6 | (s[1] & 0x3F);
    }
    if (c < 0xF0) {
        *len = 3;
        return (uint32_t)(c & 0x0F) << 12 | (uint32_t)(s[1] & 0x3F) << 6 | (s[2] & 0x3F);
    }
    *len = 4;
    return (uint32_t)(c & 0x07) << 18 | (uint32_t)(s[1] & 0x3F) << 12 |
           (uint32_t)(s[2] & 0x3F) << 6 | (s[3] & 0x3F);
}

/* True when valid UTF-8 s[0..n) is certainly already in NFC, so utf8proc can be skipped.
** Every code point in the ranges below is unchanged by NFC on its own, has combining class 0,
** and is never the second character of a canonical decomposition, so no two of them compose
** (UAX #15); checked for every code point with Python's unicodedata (Unicode 14). Anything
** else sends the segment to utf8proc. Ranges: < U+0300 (Latin), Cyrillic letters, general
** punctuation U+2010-2027, CJK symbols U+3001-3029, kana (without the combining voicing
** marks U+3099/309A), CJK Unified Ideographs, Hangul syllables, fullwidth forms, emoji. */
static bool nfc_surely(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        size_t l;
        uint32_t cp = sn_tok_utf8_next(s + i, &l);
        if (!(cp < 0x300 || (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0xAC00 && cp <= 0xD7A3) ||
              (cp >= 0x3041 && cp <= 0x3096) || (cp >= 0x30A1 && cp <= 0x30FA) ||
              (cp >= 0x3001 && cp <= 0x3029) || (cp >= 0x1F000 && cp <= 0x1FAFF) ||
              (cp >= 0x400 && cp <= 0x482) || (cp >= 0x48A && cp <= 0x4FF) ||
              (cp >= 0x2010 && cp <= 0x2027) || (cp >= 0xFF01 && cp <= 0xFF5E)))
            return false;
        i += l;
    }
    return true;
}

/* ---- per-thread scratch ------------------------------------------------------------------- */

void sn_tok_tstate_destroy(struct tstate *st)
{
    if (!st)
        return;
    pcre2_match_data_free(st->md);
    pcre2_match_context_free(st->mctx);
    pcre2_jit_stack_free(st->jstack);
    free(st->cache); /* posix_memalign */
    sn_free(st->sym);
    sn_free(st->prv);
    sn_free(st->nxt);
    sn_free(st->rk);
    sn_free(st->nw);
    sn_free(st->heap);
    sn_free(st);
}

static struct tstate *tstate_create(const struct sn_tokenizer *tok, bool with_cache)
{
    struct tstate *st = sn_calloc(1, sizeof *st);
    if (!st)
        return NULL;
    if (with_cache) {
        if (posix_memalign((void **)&st->cache, 64, CACHE_SLOTS * sizeof *st->cache))
            goto fail;
        memset(st->cache, 0, CACHE_SLOTS * sizeof *st->cache);
    }
    if (tok->re) {
        st->md = pcre2_match_data_create_from_pattern(tok->re, NULL);
        if (!st->md)
            goto fail;
        if (tok->jit) {
            st->mctx = pcre2_match_context_create(NULL);
            st->jstack = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, NULL);
            if (!st->mctx || !st->jstack)
                goto fail;
            pcre2_jit_stack_assign(st->mctx, NULL, st->jstack);
        }
    }
    return st;
fail:
    sn_tok_tstate_destroy(st);
    return NULL;
}

void sn_tok_tstate_release(void *p)    /* pthread key destructor: the thread exited */
{
    struct tstate *st = p;
    pthread_mutex_lock(&st->tok->mu);
    st->idle = true;
    pthread_mutex_unlock(&st->tok->mu);
}

/* The calling thread's scratch, or NULL when out of memory. *temp is set when the scratch is
** a one-off (no pthread key could be made) that the caller must destroy. The tokenizer is
** const for callers; the registry of scratch blocks is its one mutable part, under tok->mu. */
static struct tstate *tstate_get(const struct sn_tokenizer *ctok, bool *temp)
{
    struct sn_tokenizer *tok = (struct sn_tokenizer *)ctok;
    *temp = false;
    if (!tok->key_ok) {
        *temp = true;
        return tstate_create(tok, false);
    }
    struct tstate *st = pthread_getspecific(tok->key);
    if (st)
        return st;
    pthread_mutex_lock(&tok->mu);
    for (st = tok->states; st && !st->idle; st = st->next_all)
        ;
    if (st)
        st->idle = false;
    pthread_mutex_unlock(&tok->mu);
    if (!st) {
        st = tstate_create(tok, true);
        if (!st)
            return NULL;
        st->tok = tok;
        pthread_mutex_lock(&tok->mu);
        st->next_all = tok->states;
        tok->states = st;
        pthread_mutex_unlock(&tok->mu);
    }
    if (pthread_setspecific(tok->key, st) != 0) {
        pthread_mutex_lock(&tok->mu);
        st->idle = true;
        pthread_mutex_unlock(&tok->mu);
        *temp = true;
        return tstate_create(tok, false);
    }
    return st;
}

/* Reallocates the array *pp (pp: the address of any object pointer) to n elements of size
** sz; false, *pp unchanged, when out of memory. */
static bool grow_array(void *pp, size_t n, size_t sz)
{
    void *old, *a;
    memcpy(&old, pp, sizeof old);
    a = sn_realloc(old, n * sz);
    if (!a)
        return false;
    memcpy(pp, &a, sizeof a);
    return true;
}

static int tstate_reserve(struct tstate *st, size_t n, bool heap, struct sn_err *err)
{
    if (n > st->cap_sym) {
        size_t cap = pow2_at_least(n);
        if (!grow_array(&st->sym, cap, sizeof *st->sym) ||
            !grow_array(&st->prv, cap, sizeof *st->prv) ||
            !grow_array(&st->nxt, cap, sizeof *st->nxt) ||
            !grow_array(&st->rk, cap, sizeof *st->rk) || !grow_array(&st->nw, cap, sizeof *st->nw))
            return sn_err_set(err, SN_E_NOMEM, "tokenizer: out of memory for a %zu-byte word", n);
        st->cap_sym = cap;
    }
    if (heap && 3 * n > st->cap_heap) {
        size_t cap = pow2_at_least(3 * n);
        if (!grow_array(&st->heap, cap, sizeof *st->heap))
            return sn_err_set(err, SN_E_NOMEM, "tokenizer: out of memory for a %zu-byte word", n);
        st->cap_heap = cap;
    }
    return SN_OK;
}

/* ---- BPE ---------------------------------------------------------------------------------- */

/* Merges sym[0..m) in place (array form, for short words); returns the new count. */
static size_t bpe_small(const struct sn_tokenizer *tok, const uint8_t *w, int32_t *sym,
                        uint32_t *rk, int32_t *nw, size_t m)
{
    for (size_t i = 0; i + 1 < m; i++) {
        const struct merge_val *v = &tok->byte_merges[w[i] * 256 + w[i + 1]];
        rk[i] = v->rank;
        nw[i] = v->nid;
    }
    while (m > 1) {
        uint32_t best = NO_RANK;
        size_t bi = 0;
        for (size_t i = 0; i + 1 < m; i++) {
            if (rk[i] < best) {
                best = rk[i];
                bi = i;
            }
        }
        if (best == NO_RANK)
            break;
        sym[bi] = nw[bi];
        /* drop symbol bi+1 and pair bi+1; pairs after it shift down by one */
        memmove(sym + bi + 1, sym + bi + 2, (m - bi - 2) * sizeof *sym);
        if (m >= bi + 3) {
            memmove(rk + bi + 1, rk + bi + 2, (m - bi - 3) * sizeof *rk);
            memmove(nw + bi + 1, nw + bi + 2, (m - bi - 3) * sizeof *nw);
        }
        m--;
        if (bi > 0)
            rk[bi - 1] = merge_find(tok, sym[bi - 1], sym[bi], &nw[bi - 1]);
        if (bi + 1 < m)
            rk[bi] = merge_find(tok, sym[bi], sym[bi + 1], &nw[bi]);
    }
    return m;
}

static inline bool heap_less(struct heap_entry a, struct heap_entry b)
{
    return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos);
}

static void heap_push(struct heap_entry *h, size_t *n, struct heap_entry e)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!heap_less(e, h[p]))
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = e;
}

static struct heap_entry heap_pop(struct heap_entry *h, size_t *n)
{
    struct heap_entry top = h[0], e = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && heap_less(h[c + 1], h[c]))
            c++;
        if (!heap_less(h[c], e))
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = e;
    return top;
}

/* Linked-list BPE with a (rank, position) min-heap for long words; same merge order as
** bpe_small: lowest rank first, leftmost among equals. Returns the count left in sym. */
static size_t bpe_large(const struct sn_tokenizer *tok, struct tstate *st, const uint8_t *w,
                        size_t m)
{
    int32_t *sym = st->sym, *prv = st->prv, *nxt = st->nxt, nid = 0;
    struct heap_entry *h = st->heap;
    size_t nh = 0;
    for (size_t i = 0; i < m; i++) {
        prv[i] = (int32_t)i - 1;
        nxt[i] = i + 1 < m ? (int32_t)i + 1 : -1;
    }
    for (size_t i = 0; i + 1 < m; i++) {
        uint32_t r = tok->byte_merges[w[i] * 256 + w[i + 1]].rank;
        if (r != NO_RANK)
            heap_push(h, &nh, (struct heap_entry){r, (uint32_t)i});
    }
    while (nh) {
        struct heap_entry e = heap_pop(h, &nh);
        int32_t p = (int32_t)e.pos, q;
        if (sym[p] < 0)
            continue;
        q = nxt[p];
        if (q < 0 || merge_find(tok, sym[p], sym[q], &nid) != e.rank)
            continue;
        sym[p] = nid;
        sym[q] = -1;
        nxt[p] = nxt[q];
        if (nxt[q] >= 0)
            prv[nxt[q]] = p;
        uint32_t r;
        if (prv[p] >= 0 && (r = merge_find(tok, sym[prv[p]], sym[p], &nid)) != NO_RANK)
            heap_push(h, &nh, (struct heap_entry){r, (uint32_t)prv[p]});
        if (nxt[p] >= 0 && (r = merge_find(tok, sym[p], sym[nxt[p]], &nid)) != NO_RANK)
            heap_push(h, &nh, (struct heap_entry){r, (uint32_t)p});
    }
    size_t k = 0;
    for (int32_t i = 0; i >= 0; i = nxt[i])
        sym[k++] = sym[i];
    return k;
}

/* Appends the BPE ids of one pre-token w[0..n) (n > 0); h = bytes_hash(w, n) when
** n <= CACHE_KEY (the caller computed it to prefetch the cache slot). */
static int bpe_word(const struct sn_tokenizer *tok, struct tstate *st, const uint8_t *w,
                    size_t n, uint64_t h, struct sn_ids *out, struct sn_err *err)
{
    int rc;
    if (n == 1) {
        if ((rc = ids_reserve(out, 1, err)))
            return rc;
        out->v[out->n++] = tok->byte_id[w[0]];
        return SN_OK;
    }
    struct cache_slot *slot = NULL;
    uint32_t h32 = 0;
    if (st->cache && n <= CACHE_KEY) {
        h32 = (uint32_t)(h >> 32);
        slot = &st->cache[h & (CACHE_SLOTS - 1)];
        if (slot->klen == n && slot->h == h32 && !memcmp(slot->key, w, n)) {
            if ((rc = ids_reserve(out, slot->n_ids, err)))
                return rc;
            memcpy(out->v + out->n, slot->ids, slot->n_ids * sizeof(int32_t));
            out->n += slot->n_ids;
            return SN_OK;
        }
    }
    if (tok->ignore_merges) {
        int32_t id = vocab_find(tok, (const char *)w, n);
        if (id >= 0) {
            if ((rc = ids_reserve(out, 1, err)))
                return rc;
            out->v[out->n++] = id;
            return SN_OK;
        }
    }
    bool large = n > SMALL_WORD;
    if (n > UINT32_MAX / 4) /* heap positions are 32-bit */
        return sn_err_set(err, SN_E_NOMEM, "tokenizer: a single pre-token of %zu bytes is too "
                          "long", n);
    if ((rc = tstate_reserve(st, n, large, err)))
        return rc;
    for (size_t i = 0; i < n; i++)
        st->sym[i] = tok->byte_id[w[i]];
    size_t m = large ? bpe_large(tok, st, w, n) : bpe_small(tok, w, st->sym, st->rk, st->nw, n);
    if ((rc = ids_reserve(out, m, err)))
        return rc;
    memcpy(out->v + out->n, st->sym, m * sizeof(int32_t));
    out->n += m;
    if (slot && m <= CACHE_IDS) {
        slot->h = h32;
        slot->klen = (uint8_t)n;
        slot->n_ids = (uint8_t)m;
        memcpy(slot->key, w, n);
        memcpy(slot->ids, st->sym, m * sizeof(int32_t));
    }
    return SN_OK;
}

/* Pre-tokens found but not yet encoded: their cache slots are prefetched as a batch, so the
** memory latency of the (L2-sized) cache overlaps instead of adding up. */
#define PIECE_BATCH 32
struct pieces {
    size_t   n;
    uint32_t off[PIECE_BATCH], len[PIECE_BATCH];
    uint64_t h[PIECE_BATCH];
};

static int pieces_flush(const struct sn_tokenizer *tok, struct tstate *st, const uint8_t *s,
                        struct pieces *p, struct sn_ids *out, struct sn_err *err)
{
    for (size_t i = 0; i < p->n; i++) {
        p->h[i] = 0;
        if (st->cache && p->len[i] > 1 && p->len[i] <= CACHE_KEY) {
            p->h[i] = bytes_hash(s + p->off[i], p->len[i]);
            __builtin_prefetch(&st->cache[p->h[i] & (CACHE_SLOTS - 1)]);
        }
    }
    for (size_t i = 0; i < p->n; i++) {
        int rc = bpe_word(tok, st, s + p->off[i], p->len[i], p->h[i], out, err);
        if (rc)
            return rc;
    }
    p->n = 0;
    return SN_OK;
}

static int piece_add(const struct sn_tokenizer *tok, struct tstate *st, const uint8_t *s,
                     struct pieces *p, size_t off, size_t len, struct sn_ids *out,
                     struct sn_err *err)
{
    if (len > UINT32_MAX || off > UINT32_MAX) { /* beyond the batch's offsets: do it now */
        int rc = pieces_flush(tok, st, s, p, out, err);
        if (rc)
            return rc;
        return bpe_word(tok, st, s + off, len, len <= CACHE_KEY ? bytes_hash(s + off, len) : 0,
                        out, err);
    }
    p->off[p->n] = (uint32_t)off;
    p->len[p->n++] = (uint32_t)len;
    return p->n == PIECE_BATCH ? pieces_flush(tok, st, s, p, out, err) : SN_OK;
}

/* ASCII fast path of the Qwen2 split pattern (SN_QWEN2_SPLIT_REGEX), alternatives in order:
**   1 (?i:'s|'t|'re|'ve|'m|'ll|'d)     2 [^\r\n\p{L}\p{N}]?\p{L}+     3 \p{N}
**   4  ?[^\s\p{L}\p{N}]+[\r\n]*     5 \s*[\r\n]+     6 \s+(?!\S)     7 \s+
** Returns the end of the match that PCRE2 would find at pos (the pattern matches at every
** position), or 0 when the answer depends on a byte outside the plain ASCII classes below
** (non-ASCII, or a control character other than \t\n\v\f\r): then PCRE2 decides.
** test_tokenizer_basic checks it against PCRE2 on random strings. */
enum { AC_UNK, AC_LETTER, AC_DIGIT, AC_OTHER, AC_SPACE, AC_NL };

static inline int ascii_class(uint8_t c)
{
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')
        return AC_LETTER;
    if (c >= '0' && c <= '9')
        return AC_DIGIT;
    if (c == '\r' || c == '\n')
        return AC_NL;
    if (c == ' ' || c == '\t' || c == '\v' || c == '\f')
        return AC_SPACE;
    if (c > 0x20 && c < 0x7F)
        return AC_OTHER;
    return AC_UNK;
}

static size_t qwen2_ascii_match(const uint8_t *s, size_t n, size_t pos)
{
    int c0 = ascii_class(s[pos]), c1 = pos + 1 < n ? ascii_class(s[pos + 1]) : -1;
    size_t e;
    if (c0 == AC_UNK || c1 == AC_UNK)
        return 0;
    if (s[pos] == '\'' && c1 == AC_LETTER) {                          /* 1 */
        uint8_t a = s[pos + 1] | 0x20, b = pos + 2 < n ? s[pos + 2] | 0x20 : 0;
        if (a == 's' || a == 't' || a == 'm' || a == 'd')
            return pos + 2;
        if (((a == 'r' || a == 'v') && b == 'e') || (a == 'l' && b == 'l'))
            return pos + 3;
    }
    if (c0 == AC_LETTER || ((c0 == AC_OTHER || c0 == AC_SPACE) && c1 == AC_LETTER)) { /* 2 */
        e = c0 == AC_LETTER ? pos + 1 : pos + 2;
        while (e < n && ascii_class(s[e]) == AC_LETTER)
            e++;
        return e < n && s[e] >= 0x80 ? 0 : e;  /* a non-ASCII letter may go on */
    }
    if (c0 == AC_DIGIT)                                                   /* 3 */
        return pos + 1;
    e = pos;
    if (s[pos] == ' ' && c1 == AC_OTHER)                                  /* 4 */
        e++;
    if (ascii_class(s[e]) == AC_OTHER) {
        while (e < n && ascii_class(s[e]) == AC_OTHER)
            e++;
        if (e < n && ascii_class(s[e]) == AC_UNK)
            return 0;
        while (e < n && (s[e] == '\r' || s[e] == '\n'))
            e++;
        return e;
    }
    size_t last_nl = SIZE_MAX;                                            /* 5, 6, 7 */
    for (e = pos; e < n; e++) {
        int c = ascii_class(s[e]);
        if (c == AC_NL)
            last_nl = e;
        else if (c != AC_SPACE)
            break;
    }
    if (e < n && ascii_class(s[e]) == AC_UNK)
        return 0;                            /* may be more white space (U+00A0, ...) */
    if (last_nl != SIZE_MAX)
        return last_nl + 1;
    if (e == n || e - pos == 1)
        return e;
    return e - 1;
}

/* Pre-tokenizes a normalized segment and BPE-encodes each piece. */
static int encode_normalized(const struct sn_tokenizer *tok, struct tstate *st, const uint8_t *s,
                             size_t n, struct sn_ids *out, struct sn_err *err)
{
    struct pieces p;
    p.n = 0;
    if (!n)
        return SN_OK;
    if (!tok->re)
        return bpe_word(tok, st, s, n, n <= CACHE_KEY ? bytes_hash(s, n) : 0, out, err);
    size_t done = 0, search = 0;
    int rc;
    while (search < n) {
        if (tok->qwen2_ascii && search == done) {
            size_t b = qwen2_ascii_match(s, n, search);
            if (b) {
                if ((rc = piece_add(tok, st, s, &p, search, b - search, out, err)))
                    return rc;
                done = search = b;
                continue;
            }
        }
        int m = tok->jit ? pcre2_jit_match(tok->re, s, n, search, 0, st->md, st->mctx)
                         : pcre2_match(tok->re, s, n, search, PCRE2_NO_UTF_CHECK, st->md, NULL);
        if (m == PCRE2_ERROR_NOMATCH)
            break;
        if (m < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(m, msg, sizeof msg);
            return sn_err_set(err, SN_E_BACKEND, "tokenizer: pre-tokenizer regex failed at byte "
                              "%zu: %s", search, (const char *)msg);
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(st->md);
        size_t a = ov[0], b = ov[1];
        if (b <= a) { /* an empty match makes no pre-token: go on after the next character */
            size_t l;
            sn_tok_utf8_next(s + a, &l);
            search = a + l;
            continue;
        }
        if (a > done && (rc = piece_add(tok, st, s, &p, done, a - done, out, err)))
            return rc;
        if ((rc = piece_add(tok, st, s, &p, a, b - a, out, err)))
            return rc;
        done = search = b;
    }
    if (done < n && (rc = piece_add(tok, st, s, &p, done, n - done, out, err)))
        return rc;
    return pieces_flush(tok, st, s, &p, out, err);
}

static int encode_segment(const struct sn_tokenizer *tok, struct tstate *st, const uint8_t *s,
                          size_t n, size_t base, struct sn_ids *out, struct sn_err *err)
{
    if (!n)
        return SN_OK;
    if (!tok->nfc || nfc_surely(s, n))
        return encode_normalized(tok, st, s, n, out, err);
    utf8proc_uint8_t *norm = NULL;
    utf8proc_ssize_t nn = utf8proc_map(s, (utf8proc_ssize_t)n, &norm,
                                       UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    if (nn < 0) {
        free(norm);
        return sn_err_set(err, SN_E_FORMAT, "tokenizer: NFC normalization of the text at byte "
                          "%zu failed: %s", base, utf8proc_errmsg(nn));
    }
    int rc = encode_normalized(tok, st, norm, (size_t)nn, out, err);
    free(norm); /* allocated by utf8proc with malloc */
    return rc;
}

/* Leftmost-longest added token at or after pos: returns its start (n when none), sets *k. */
static size_t find_added(const struct sn_tokenizer *tok, const uint8_t *s, size_t n, size_t pos,
                         size_t *k)
{
    for (size_t p = pos; p < n; p++) {
        if (tok->n_first == 1) {
            const uint8_t *q = memchr(s + p, tok->only_first, n - p);
            if (!q)
                return n;
            p = (size_t)(q - s);
        } else if (!tok->added_first[s[p]]) {
            continue;
        }
        for (size_t j = 0; j < tok->n_added; j++) { /* longest first within a first byte */
            const struct added_token *a = &tok->added[j];
            if ((uint8_t)a->text[0] != s[p] || a->len > n - p || memcmp(a->text, s + p, a->len))
                continue;
            *k = j;
            return p;
        }
    }
    return n;
}

int sn_tokenizer_encode(const struct sn_tokenizer *tok, const char *text, size_t len,
                        struct sn_ids *out, struct sn_err *err)
{
    const uint8_t *s = (const uint8_t *)text;
    size_t bad = sn_tok_utf8_check(s, len);
    if (bad < len)
        return sn_err_set(err, SN_E_FORMAT, "invalid UTF-8 at byte offset %zu (byte 0x%02x)",
                          bad, s[bad]);
    bool temp;
    struct tstate *st = tstate_get(tok, &temp);
    if (!st)
        return sn_err_set(err, SN_E_NOMEM, "tokenizer: out of memory for thread scratch");
    size_t pos = 0, n0 = out->n;
    int rc = SN_OK;
    while (pos < len && !rc) {
        size_t k = 0, p = tok->n_added ? find_added(tok, s, len, pos, &k) : len;
        rc = encode_segment(tok, st, s + pos, p - pos, pos, out, err);
        if (!rc && p < len) {
            rc = sn_ids_push(out, tok->added[k].id, err);
            p += tok->added[k].len;
        }
        pos = p;
    }
    if (temp)
        sn_tok_tstate_destroy(st);
    if (rc)
        out->n = n0; /* nothing half-appended */
    return rc;
}
