/* tokenizer/tokenizer.c: byte-level BPE from a Hugging Face tokenizer.json (tokenizer.h).
**
** The pipeline follows HF tokenizers' encode with add_special_tokens = false
** (docs/formats.md#tokenizerjson):
**   1. the text is checked to be UTF-8 (first bad byte offset reported);
**   2. added tokens (special or not) are cut out of the raw text, leftmost match first and
**      the longest one at that position (HF's AddedVocabulary uses Aho-Corasick LeftmostLongest);
**   3. each remaining segment is normalized (NFC via utf8proc, when the normalizer asks for it);
**   4. the Split pre-tokenizer's regex (PCRE2, UTF + UCP, JIT) cuts it into pre-tokens,
**      behaviour "Isolated": both matches and the text between them are pre-tokens;
**   5. ByteLevel maps bytes to its alphabet: we skip that step by storing the vocabulary as
**      raw bytes (tokenizer_internal.h), so BPE runs on bytes directly;
**   6. BPE: repeatedly merge the adjacent pair with the lowest merge rank, leftmost first
**      (HF's Word::merge_all). Short words use a linear scan over a compact array; long ones
**      a binary heap of (rank, position) with lazy invalidation (the same order).
**
** Threads: the tokenizer is immutable after open. Each thread that encodes gets its own scratch
** (PCRE2 match data and JIT stack, BPE arrays, a bounded direct-mapped cache of recent
** pre-tokens) through a pthread key; the scratch of a thread that exits is recycled, and all
** scratch is freed by sn_tokenizer_free. */
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_internal.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#define MAX_IDS      (1 << 24)   /* sanity bound on vocabulary ids from the file */
#define SMALL_WORD   48          /* words up to this many bytes use the array scan */
#define CACHE_SLOTS  8192        /* per-thread pre-token cache (direct mapped) */
#define CACHE_KEY    26          /* longest pre-token (bytes) kept in the cache */
#define CACHE_IDS    8           /* most ids of a cached pre-token */
#define NO_RANK      UINT32_MAX

/* GPT-2 / HF ByteLevel pre-tokenizer pattern, used when ByteLevel has use_regex = true. */
#define GPT2_REGEX "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"

struct added_token {
    char    *text;       /* raw (not ByteLevel-mapped) content, owned */
    size_t   len;
    int32_t  id;
    bool     special;
};

struct cache_slot {             /* 64 bytes: one cache line */
    uint32_t h;                 /* low bits of the word hash; klen 0 = empty */
    uint8_t  klen, n_ids;
    char     key[CACHE_KEY];
    int32_t  ids[CACHE_IDS];
};

struct merge_slot {
    uint64_t key;               /* (a << 32 | b) + 1; 0 = empty */
    uint32_t rank;
    int32_t  nid;               /* the merged token */
};

struct merge_val {
    uint32_t rank;              /* NO_RANK = no merge */
    int32_t  nid;
};

_Static_assert(sizeof(struct cache_slot) == 64, "cache slot is one cache line");

struct heap_entry {
    uint32_t rank, pos;
};

struct tstate {                 /* one thread's scratch; see the file comment */
    struct sn_tokenizer  *tok;
    struct tstate        *next_all;
    bool                  idle;  /* its thread exited: may be handed to a new thread */
    pcre2_match_data     *md;
    pcre2_match_context  *mctx;
    pcre2_jit_stack      *jstack;
    struct cache_slot    *cache;
    int32_t              *sym, *prv, *nxt;  /* BPE symbols (ids) and links, cap_sym each */
    uint32_t             *rk;               /* ranks of adjacent pairs (small words) */
    int32_t              *nw;               /* ids those pairs merge into */
    size_t                cap_sym;
    struct heap_entry    *heap;
    size_t                cap_heap;
};

struct sn_tokenizer {
    char      hash[65];
    size_t    n_ids;           /* max id + 1 */
    char     *arena;           /* bytes of every vocabulary token */
    uint32_t *tok_off, *tok_len;  /* per id; tok_len UINT32_MAX = no token with that id */
    uint8_t  *tok_added;       /* per id: 1 when it is an added token */
    int32_t  *vmap;            /* open addressing over vocab ids, keyed by their bytes; -1 empty */
    size_t    vmap_mask;
    struct merge_slot *merges; /* open addressing over merges of two tokens */
    size_t    mmask;
    struct merge_val *byte_merges; /* [256 * 256]: merges of two single-byte tokens, direct */
    size_t    n_merges;
    int32_t   byte_id[256];
    struct added_token *added;  /* sorted by first byte, then longest first */
    size_t    n_added;
    uint8_t   added_first[256]; /* 1 when some added token starts with this byte */
    int       n_first;          /* how many distinct first bytes */
    uint8_t   only_first;       /* the first byte when n_first == 1 */
    bool      nfc;
    bool      ignore_merges;
    bool      qwen2_ascii;      /* the pattern is exactly Qwen2's: ASCII fast path (below) */
    pcre2_code *re;             /* NULL = no split (the whole segment is one pre-token) */
    bool      jit;
    bool      key_ok;
    pthread_key_t   key;
    pthread_mutex_t mu;         /* guards states */
    struct tstate  *states;
};

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
static size_t utf8_check(const uint8_t *s, size_t n)
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
static uint32_t utf8_next(const uint8_t *s, size_t *len)
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
        uint32_t cp = utf8_next(s + i, &l);
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

static uint64_t mix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

static uint64_t bytes_hash(const void *p_, size_t n)
{
    const uint8_t *p = p_;
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xbf58476d1ce4e5b9ull);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
        h ^= h >> 31;
        p += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, n);
    h = (h ^ w) * 0x94d049bb133111ebull;
    h ^= h >> 29;
    return h;
}

static size_t pow2_at_least(size_t n)
{
    size_t c = 16;
    while (c < n)
        c *= 2;
    return c;
}

/* ---- vocabulary and merge tables ---------------------------------------------------------- */

static int32_t vocab_find(const struct sn_tokenizer *tok, const char *b, size_t n)
{
    size_t i = (size_t)bytes_hash(b, n) & tok->vmap_mask;
    for (;;) {
        int32_t id = tok->vmap[i];
        if (id < 0)
            return -1;
        if (tok->tok_len[id] == n && !memcmp(tok->arena + tok->tok_off[id], b, n))
            return id;
        i = (i + 1) & tok->vmap_mask;
    }
}

/* Rank of merging tokens a and b (and the merged id in *nid), or NO_RANK. One cache line per
** probe: the table of 151k Qwen merges is 4 MB, so misses, not arithmetic, set the cost. */
static inline uint32_t merge_find(const struct sn_tokenizer *tok, int32_t a, int32_t b,
                                  int32_t *nid)
{
    uint64_t key = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1;
    size_t i = (size_t)mix64(key) & tok->mmask;
    for (;;) {
        const struct merge_slot *m = &tok->merges[i];
        if (m->key == key) {
            *nid = m->nid;
            return m->rank;
        }
        if (!m->key)
            return NO_RANK;
        i = (i + 1) & tok->mmask;
    }
}

/* A later duplicate of a pair replaces the earlier one, as in HF (merges collected into a map). */
static void merge_put(struct sn_tokenizer *tok, int32_t a, int32_t b, uint32_t rank, int32_t nid)
{
    uint64_t key = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1;
    size_t i = (size_t)mix64(key) & tok->mmask;
    while (tok->merges[i].key && tok->merges[i].key != key)
        i = (i + 1) & tok->mmask;
    tok->merges[i] = (struct merge_slot){key, rank, nid};
}

/* ---- per-thread scratch ------------------------------------------------------------------- */

static void tstate_destroy(struct tstate *st)
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
    tstate_destroy(st);
    return NULL;
}

static void tstate_release(void *p)    /* pthread key destructor: the thread exited */
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
            utf8_next(s + a, &l);
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
    size_t bad = utf8_check(s, len);
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
        tstate_destroy(st);
    if (rc)
        out->n = n0; /* nothing half-appended */
    return rc;
}

int sn_tokenizer_decode(const struct sn_tokenizer *tok, const int32_t *ids, size_t n,
                        char **text, size_t *len, struct sn_err *err)
{
    *text = NULL;
    if (len)
        *len = 0;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || (size_t)ids[i] >= tok->n_ids || tok->tok_len[ids[i]] == UINT32_MAX)
            return sn_err_set(err, SN_E_ARG, "token id %ld at position %zu is not in the "
                              "vocabulary (ids 0..%zu)", (long)ids[i], i, tok->n_ids - 1);
        total += tok->tok_len[ids[i]];
    }
    char *t = sn_malloc(total + 1);
    if (!t)
        return sn_err_set(err, SN_E_NOMEM, "decode: out of memory (%zu bytes)", total);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(t + o, tok->arena + tok->tok_off[ids[i]], tok->tok_len[ids[i]]);
        o += tok->tok_len[ids[i]];
    }
    t[o] = 0;
    *text = t;
    if (len)
        *len = o;
    return SN_OK;
}

size_t sn_tokenizer_vocab_size(const struct sn_tokenizer *tok)
{
    return tok->n_ids;
}

int32_t sn_tokenizer_token_id(const struct sn_tokenizer *tok, const char *token)
{
    size_t n = strlen(token);
    for (size_t j = 0; j < tok->n_added; j++)
        if (tok->added[j].len == n && !memcmp(tok->added[j].text, token, n))
            return tok->added[j].id;
    return n ? vocab_find(tok, token, n) : -1;
}

bool sn_tokenizer_is_special(const struct sn_tokenizer *tok, int32_t id)
{
    for (size_t j = 0; j < tok->n_added; j++)
        if (tok->added[j].id == id)
            return tok->added[j].special;
    return false;
}

const char *sn_tokenizer_hash(const struct sn_tokenizer *tok)
{
    return tok->hash;
}

/* ---- loading ------------------------------------------------------------------------------ */

void sn_tokenizer_free(struct sn_tokenizer *tok)
{
    if (!tok)
        return;
    if (tok->key_ok) {
        pthread_key_delete(tok->key);
        pthread_mutex_destroy(&tok->mu);
    }
    for (struct tstate *st = tok->states, *nx; st; st = nx) {
        nx = st->next_all;
        tstate_destroy(st);
    }
    pcre2_code_free(tok->re);
    for (size_t j = 0; j < tok->n_added; j++)
        sn_free(tok->added[j].text);
    sn_free(tok->added);
    sn_free(tok->arena);
    sn_free(tok->tok_off);
    sn_free(tok->tok_len);
    sn_free(tok->tok_added);
    sn_free(tok->vmap);
    sn_free(tok->merges);
    sn_free(tok->byte_merges);
    sn_free(tok);
}

/* Why bytelevel_decode refused a string. Invalid UTF-8 and a code point outside the ByteLevel
** alphabet are different faults and get different messages (bytelevel_refusal): U+FFFD, the
** replacement character, is valid UTF-8, and must not read like a decoding error. */
struct bl_bad {
    bool     invalid_utf8; /* no code point at all: invalid UTF-8 starts at byte `off` */
    size_t   off;          /* byte offset of the fault inside the string */
    uint32_t cp;           /* when !invalid_utf8: the code point at `off` */
};

/* ByteLevel string s (UTF-8) → raw bytes written at dst (room for strlen(s) bytes); returns
** the count, or -1 with *bad saying what is wrong and where. */
static long bytelevel_decode(const char *s, uint8_t *dst, struct bl_bad *bad)
{
    const uint8_t *u = (const uint8_t *)s;
    size_t n = strlen(s), i = 0, o = 0;
    size_t k = utf8_check(u, n);
    if (k != n) {
        *bad = (struct bl_bad){.invalid_utf8 = true, .off = k, .cp = 0};
        return -1;
    }
    while (i < n) {
        size_t l;
        uint32_t cp = utf8_next(u + i, &l);
        int b = sn_bytelevel_byte(cp);
        if (b < 0) {
            *bad = (struct bl_bad){.invalid_utf8 = false, .off = i, .cp = cp};
            return -1;
        }
        dst[o++] = (uint8_t)b;
        i += l;
    }
    return (long)o;
}

/* s quoted for an error message, safe in a terminal and inside the message: printable ASCII
** as is (backslash and quote escaped), other code points as \uXXXX (\UXXXXXXXX above the BMP),
** bytes that are not UTF-8 as \xNN. A terminal draws U+FFFD and a bad byte as the same glyph;
** here one reads \uFFFD and the other \xNN. A long text ends in ..." and its size in bytes. */
static const char *esc_text(const char *s, char *buf, size_t cap)
{
    const uint8_t *u = (const uint8_t *)s;
    size_t n = strlen(s), i = 0, o = 1, room = cap - 24; /* room for ..." (N bytes) */
    buf[0] = '"';
    while (i < n) {
        size_t l = 1;
        char e[16];
        if (u[i] >= 0x20 && u[i] < 0x7F) {
            if (u[i] == '"' || u[i] == '\\')
                snprintf(e, sizeof e, "\\%c", u[i]);
            else
                snprintf(e, sizeof e, "%c", u[i]);
        } else if (u[i] < 0x80 || utf8_check(u + i, n - i > 4 ? 4 : n - i) == 0) {
            snprintf(e, sizeof e, "\\x%02x", u[i]);    /* control byte, or not UTF-8 here */
        } else {
            uint32_t cp = utf8_next(u + i, &l);
            snprintf(e, sizeof e, cp > 0xFFFF ? "\\U%08X" : "\\u%04X", (unsigned)cp);
        }
        size_t el = strlen(e);
        if (o + el > room)
            break;
        memcpy(buf + o, e, el);
        o += el;
        i += l;
    }
    if (i < n)
        snprintf(buf + o, cap - o, "...\" (%zu bytes)", n);
    else
        snprintf(buf + o, cap - o, "\"");
    return buf;
}

/* The error for a vocabulary string bytelevel_decode refused. what names the entry ("model.vocab
** token 7", "token 7"). */
static int bytelevel_refusal(struct sn_err *err, const char *src, const char *what,
                             const char *s, const struct bl_bad *b)
{
    char q[96];
    esc_text(s, q, sizeof q);
    if (b->invalid_utf8)
        return sn_err_set(err, SN_E_FORMAT, "%s: %s (%s) is not valid UTF-8: invalid UTF-8 at "
                          "byte offset %zu of the token (byte 0x%02x)", src, what, q, b->off,
                          (unsigned)(uint8_t)s[b->off]);
    /* U+FFFD is valid UTF-8 but stands for bytes a lossy decoder threw away. ByteLevel writes
    ** every byte as one of 256 printable code points (docs/formats.md#tokenizerjson, "ByteLevel
    ** alphabet"); U+FFFD is not one of them, so no byte-level BPE (GPT-2, Qwen2) has it in a
    ** token and there is no byte this token could decode to: accepting it would mean inventing
    ** one, and encode could never produce the token anyway. */
    if (b->cp == 0xFFFD)
        return sn_err_set(err, SN_E_FORMAT, "%s: %s (%s) holds the code point U+FFFD "
                          "(REPLACEMENT CHARACTER) at byte offset %zu; refused: U+FFFD is not "
                          "one of the 256 ByteLevel code points, so it stands for no byte (real "
                          "byte-level vocabularies never contain it; the file was probably made "
                          "by a converter that replaced undecodable bytes)", src, what, q,
                          b->off);
    return sn_err_set(err, SN_E_UNSUPPORTED, "%s: %s (%s) has U+%04X at byte offset %zu, which "
                      "is not in the ByteLevel alphabet; only byte-level BPE is supported", src,
                      what, q, (unsigned)b->cp, b->off);
}

static int get_id(const cJSON *v, const char *path, const char *what, int32_t *out,
                  struct sn_err *err)
{
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble < MAX_IDS) ||
        v->valuedouble != (double)(int64_t)v->valuedouble)
        return sn_err_set(err, SN_E_FORMAT, "%s: %s: id must be an integer in [0, %d)", path,
                          what, MAX_IDS);
    *out = (int32_t)v->valuedouble;
    return SN_OK;
}

static const char *type_of(const cJSON *o)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type");
    return cJSON_IsString(t) ? t->valuestring : NULL;
}

static bool json_true(const cJSON *o, const char *key)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static int load_normalizer(struct sn_tokenizer *tok, const cJSON *nz, const char *path,
                           struct sn_err *err)
{
    if (!nz || cJSON_IsNull(nz))
        return SN_OK;
    const char *t = type_of(nz);
    if (t && !strcmp(t, "NFC")) {
        tok->nfc = true;
        return SN_OK;
    }
    if (t && !strcmp(t, "Sequence")) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(nz, "normalizers"), *x;
        if (!cJSON_IsArray(arr))
            return sn_err_set(err, SN_E_FORMAT, "%s: normalizer Sequence without a "
                              "'normalizers' array", path);
        cJSON_ArrayForEach(x, arr) {
            int rc = load_normalizer(tok, x, path, err);
            if (rc)
                return rc;
        }
        return SN_OK;
    }
    return sn_err_set(err, SN_E_UNSUPPORTED, "%s: normalizer type '%s' is not supported "
                      "(supported: NFC, Sequence of NFC, none)", path, t ? t : "?");
}

static int load_pretok(struct sn_tokenizer *tok, const cJSON *pt, const char *path,
                       const char **pattern, bool *bytelevel, struct sn_err *err)
{
    const char *t = type_of(pt);
    if (t && !strcmp(t, "Sequence")) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(pt, "pretokenizers"), *x;
        if (!cJSON_IsArray(arr))
            return sn_err_set(err, SN_E_FORMAT, "%s: pre_tokenizer Sequence without a "
                              "'pretokenizers' array", path);
        cJSON_ArrayForEach(x, arr) {
            int rc = load_pretok(tok, x, path, pattern, bytelevel, err);
            if (rc)
                return rc;
        }
        return SN_OK;
    }
    const char *p = NULL;
    if (t && !strcmp(t, "Split")) {
        const cJSON *pat = cJSON_GetObjectItemCaseSensitive(pt, "pattern");
        const cJSON *re = cJSON_GetObjectItemCaseSensitive(pat, "Regex");
        const cJSON *beh = cJSON_GetObjectItemCaseSensitive(pt, "behavior");
        if (!cJSON_IsString(re))
            return sn_err_set(err, SN_E_UNSUPPORTED, "%s: Split pre-tokenizer: only "
                              "pattern.Regex is supported", path);
        if (!cJSON_IsString(beh) || strcmp(beh->valuestring, "Isolated") || json_true(pt, "invert"))
            return sn_err_set(err, SN_E_UNSUPPORTED, "%s: Split pre-tokenizer: only behavior "
                              "'Isolated' without invert is supported", path);
        p = re->valuestring;
    } else if (t && !strcmp(t, "ByteLevel")) {
        if (json_true(pt, "add_prefix_space"))
            return sn_err_set(err, SN_E_UNSUPPORTED, "%s: ByteLevel add_prefix_space = true is "
                              "not supported", path);
        *bytelevel = true;
        const cJSON *ur = cJSON_GetObjectItemCaseSensitive(pt, "use_regex");
        if (!ur || cJSON_IsTrue(ur)) /* HF's default is true */
            p = GPT2_REGEX;
    } else {
        return sn_err_set(err, SN_E_UNSUPPORTED, "%s: pre_tokenizer type '%s' is not supported "
                          "(supported: Split with a Regex, ByteLevel, Sequence)", path,
                          t ? t : "?");
    }
    if (p) {
        if (*pattern)
            return sn_err_set(err, SN_E_UNSUPPORTED, "%s: more than one splitting regex in the "
                              "pre_tokenizer is not supported", path);
        *pattern = p;
    }
    return SN_OK;
}

/* HF tokenizers runs the pattern with Oniguruma, whose \s is the Unicode White_Space
** property; PCRE2's \s (with UCP) also takes U+180E MONGOLIAN VOWEL SEPARATOR (a Perl
** tradition), which splits text differently (seen against HF and the JS port). So \s and \S
** become \p{White_Space} and \P{White_Space}, which PCRE2 accepts inside classes too.
** Escaped backslashes are copied as pairs, so "\\s" stays a backslash and an 's'. */
static char *regex_onig_spaces(const char *p)
{
    size_t n = strlen(p), o = 0;
    char *q = sn_malloc(n * 8 + 1);    /* each 2-byte escape grows to at most 16 bytes */
    if (!q)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\\' && i + 1 < n) {
            if (p[i + 1] == 's' || p[i + 1] == 'S') {
                memcpy(q + o, p[i + 1] == 's' ? "\\p{White_Space}" : "\\P{White_Space}", 15);
                o += 15;
            } else {
                q[o++] = p[i];
                q[o++] = p[i + 1];
            }
            i++;
        } else {
            q[o++] = p[i];
        }
    }
    q[o] = 0;
    return q;
}

static int compile_regex(struct sn_tokenizer *tok, const char *pattern, const char *path,
                         struct sn_err *err)
{
    int ec;
    PCRE2_SIZE eo;
    char *pat = regex_onig_spaces(pattern);
    if (!pat)
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
    tok->re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                            &ec, &eo, NULL);
    sn_free(pat);
    if (!tok->re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ec, msg, sizeof msg);
        return sn_err_set(err, SN_E_FORMAT, "%s: pre-tokenizer regex does not compile at "
                          "offset %zu: %s", path, (size_t)eo, (const char *)msg);
    }
    tok->jit = pcre2_jit_compile(tok->re, PCRE2_JIT_COMPLETE) == 0;
    return SN_OK;
}

static int cmp_added(const void *a_, const void *b_)
{
    const struct added_token *a = a_, *b = b_;
    uint8_t fa = (uint8_t)a->text[0], fb = (uint8_t)b->text[0];
    if (fa != fb)
        return fa < fb ? -1 : 1;
    if (a->len != b->len)
        return a->len > b->len ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* Sorts the added tokens for the longest-match scan and notes which first bytes can start one
 * (most text has none of them, and then the scan is skipped). */
static void index_added(struct sn_tokenizer *tok)
{
    qsort(tok->added, tok->n_added, sizeof *tok->added, cmp_added);
    for (size_t j = 0; j < tok->n_added; j++) {
        uint8_t f = (uint8_t)tok->added[j].text[0];
        if (!tok->added_first[f]) {
            tok->added_first[f] = 1;
            tok->n_first++;
            tok->only_first = f;
        }
    }
}

static int load_model(struct sn_tokenizer *tok, const cJSON *root, const char *path,
                      struct sn_err *err)
{
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!cJSON_IsObject(model))
        return sn_err_set(err, SN_E_FORMAT, "%s: no 'model' object; is this a Hugging Face "
                          "tokenizer.json?", path);
    const char *mt = type_of(model);
    if (mt && strcmp(mt, "BPE"))
        return sn_err_set(err, SN_E_UNSUPPORTED, "%s: model.type '%s' is not supported "
                          "(only BPE)", path, mt);
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(model, "dropout");
    if (x && !cJSON_IsNull(x))
        return sn_err_set(err, SN_E_UNSUPPORTED, "%s: model.dropout is not supported", path);
    if (json_true(model, "byte_fallback"))
        return sn_err_set(err, SN_E_UNSUPPORTED, "%s: model.byte_fallback is not supported",
                          path);
    const char *affix[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        x = cJSON_GetObjectItemCaseSensitive(model, affix[i]);
        if (x && !cJSON_IsNull(x) && !(cJSON_IsString(x) && !x->valuestring[0]))
            return sn_err_set(err, SN_E_UNSUPPORTED, "%s: model.%s is not supported", path,
                              affix[i]);
    }
    tok->ignore_merges = json_true(model, "ignore_merges");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    if (!cJSON_IsObject(vocab))
        return sn_err_set(err, SN_E_FORMAT, "%s: model.vocab must be an object", path);
    if (!cJSON_IsArray(merges))
        return sn_err_set(err, SN_E_FORMAT, "%s: model.merges must be an array", path);
    if (added && !cJSON_IsNull(added) && !cJSON_IsArray(added))
        return sn_err_set(err, SN_E_FORMAT, "%s: added_tokens must be an array", path);

    /* sizes: max id, arena bytes (a ByteLevel string never has more bytes than its UTF-8) */
    int32_t id, max_id = -1;
    size_t arena = 0, n_vocab = 0, n_added = 0;
    int rc;
    cJSON_ArrayForEach(x, vocab) {
        if ((rc = get_id(x, path, x->string, &id, err)))
            return rc;
        max_id = id > max_id ? id : max_id;
        arena += strlen(x->string);
        n_vocab++;
    }
    cJSON_ArrayForEach(x, added) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(x, "content");
        if (!cJSON_IsString(c) || !c->valuestring[0])
            return sn_err_set(err, SN_E_FORMAT, "%s: added_tokens[%zu]: 'content' must be a "
                              "non-empty string", path, n_added);
        if ((rc = get_id(cJSON_GetObjectItemCaseSensitive(x, "id"), path, c->valuestring, &id,
                         err)))
            return rc;
        max_id = id > max_id ? id : max_id;
        arena += strlen(c->valuestring);
        n_added++;
    }
    if (max_id < 0)
        return sn_err_set(err, SN_E_FORMAT, "%s: empty vocabulary", path);
    tok->n_ids = (size_t)max_id + 1;
    tok->arena = sn_malloc(arena + 1);
    tok->tok_off = sn_calloc(tok->n_ids, sizeof *tok->tok_off);
    tok->tok_len = sn_malloc(tok->n_ids * sizeof *tok->tok_len);
    tok->tok_added = sn_calloc(tok->n_ids, 1);
    tok->vmap_mask = pow2_at_least(2 * n_vocab) - 1;
    tok->vmap = sn_malloc((tok->vmap_mask + 1) * sizeof *tok->vmap);
    size_t n_merges = (size_t)cJSON_GetArraySize(merges);
    tok->mmask = pow2_at_least(n_merges + n_merges / 2 + 2) - 1; /* load <= 2/3 */
    tok->merges = sn_calloc(tok->mmask + 1, sizeof *tok->merges);
    tok->byte_merges = sn_malloc(256 * 256 * sizeof *tok->byte_merges);
    tok->added = sn_calloc(n_added ? n_added : 1, sizeof *tok->added);
    if (!tok->arena || !tok->tok_off || !tok->tok_len || !tok->tok_added || !tok->vmap ||
        !tok->merges || !tok->byte_merges || !tok->added)
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory for a vocabulary of %zu ids",
                          path, tok->n_ids);
    memset(tok->tok_len, 0xFF, tok->n_ids * sizeof *tok->tok_len);
    memset(tok->vmap, 0xFF, (tok->vmap_mask + 1) * sizeof *tok->vmap);

    size_t off = 0;
    cJSON_ArrayForEach(x, vocab) {
        struct bl_bad bad;
        get_id(x, path, x->string, &id, err);
        if (tok->tok_len[id] != UINT32_MAX)
            return sn_err_set(err, SN_E_FORMAT, "%s: model.vocab: id %d is given to two tokens",
                              path, (int)id);
        long nb = bytelevel_decode(x->string, (uint8_t *)tok->arena + off, &bad);
        if (nb < 0) {
            char what[48];
            snprintf(what, sizeof what, "model.vocab token %d", (int)id);
            return bytelevel_refusal(err, path, what, x->string, &bad);
        }
        if (nb == 0)
            return sn_err_set(err, SN_E_FORMAT, "%s: model.vocab has an empty token (id %d)",
                              path, (int)id);
        if (vocab_find(tok, tok->arena + off, (size_t)nb) >= 0)
            return sn_err_set(err, SN_E_FORMAT, "%s: model.vocab token \"%s\" appears twice",
                              path, x->string);
        tok->tok_off[id] = (uint32_t)off;
        tok->tok_len[id] = (uint32_t)nb;
        size_t i = (size_t)bytes_hash(tok->arena + off, (size_t)nb) & tok->vmap_mask;
        while (tok->vmap[i] >= 0)
            i = (i + 1) & tok->vmap_mask;
        tok->vmap[i] = id;
        off += (size_t)nb;
    }
    for (int b = 0; b < 256; b++) {
        char c = (char)b;
        tok->byte_id[b] = vocab_find(tok, &c, 1);
        if (tok->byte_id[b] < 0)
            return sn_err_set(err, SN_E_FORMAT, "%s: model.vocab has no token for byte 0x%02x "
                              "(ByteLevel U+%04X); a byte-level BPE needs all 256", path, b,
                              (unsigned)sn_bytelevel_cp((uint8_t)b));
    }

    /* merges: "a b" strings or ["a", "b"] pairs, rank = position */
    uint8_t *tmp = sn_malloc(arena + 1);
    if (!tmp)
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
    size_t rank = 0;
    rc = SN_OK;
    cJSON_ArrayForEach(x, merges) {
        const char *a = NULL, *b = NULL;
        char *dup = NULL;
        if (cJSON_IsString(x)) {
            const char *sp = strchr(x->valuestring, ' ');
            if (!sp || strchr(sp + 1, ' ') || sp == x->valuestring || !sp[1]) {
                rc = sn_err_set(err, SN_E_FORMAT, "%s: model.merges[%zu] = \"%s\": expected "
                                "two tokens separated by one space", path, rank, x->valuestring);
                break;
            }
            dup = sn_strdup(x->valuestring);
            if (!dup) {
                rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
                break;
            }
            dup[sp - x->valuestring] = 0;
            a = dup;
            b = dup + (sp - x->valuestring) + 1;
        } else if (cJSON_IsArray(x) && cJSON_GetArraySize(x) == 2 &&
                   cJSON_IsString(cJSON_GetArrayItem(x, 0)) &&
                   cJSON_IsString(cJSON_GetArrayItem(x, 1))) {
            a = cJSON_GetArrayItem(x, 0)->valuestring;
            b = cJSON_GetArrayItem(x, 1)->valuestring;
        } else {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: model.merges[%zu]: expected \"a b\" or "
                            "[\"a\", \"b\"]", path, rank);
            break;
        }
        struct bl_bad bad;
        long na = bytelevel_decode(a, tmp, &bad);
        int32_t ia = na > 0 ? vocab_find(tok, (char *)tmp, (size_t)na) : -1;
        long nb = na > 0 ? bytelevel_decode(b, tmp + na, &bad) : -1;
        int32_t ib = nb > 0 ? vocab_find(tok, (char *)tmp + na, (size_t)nb) : -1;
        int32_t in = ia >= 0 && ib >= 0 ? vocab_find(tok, (char *)tmp, (size_t)(na + nb)) : -1;
        if (in < 0) {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: model.merges[%zu] (\"%s\" + \"%s\"): %s is "
                            "not in model.vocab", path, rank, a, b,
                            ia < 0 ? "the first token" : ib < 0 ? "the second token"
                                                                : "the merged token");
            sn_free(dup);
            break;
        }
        merge_put(tok, ia, ib, (uint32_t)rank, in);
        sn_free(dup);
        rank++;
    }
    sn_free(tmp);
    if (rc)
        return rc;
    tok->n_merges = rank;
    for (int a = 0; a < 256; a++)
        for (int b = 0; b < 256; b++) {
            struct merge_val *v = &tok->byte_merges[a * 256 + b];
            v->nid = -1;
            v->rank = merge_find(tok, tok->byte_id[a], tok->byte_id[b], &v->nid);
        }

    /* added tokens: raw text; their id decodes to that text even if the vocab has it too */
    size_t j = 0;
    cJSON_ArrayForEach(x, added) {
        const char *c = cJSON_GetObjectItemCaseSensitive(x, "content")->valuestring;
        get_id(cJSON_GetObjectItemCaseSensitive(x, "id"), path, c, &id, err);
        if (json_true(x, "single_word") || json_true(x, "lstrip") || json_true(x, "rstrip"))
            return sn_err_set(err, SN_E_UNSUPPORTED, "%s: added token \"%s\": single_word, "
                              "lstrip and rstrip are not supported", path, c);
        size_t n = strlen(c);
        struct bl_bad bad = {.invalid_utf8 = true, .off = utf8_check((const uint8_t *)c, n)};
        if (bad.off != n) {
            char what[48];
            snprintf(what, sizeof what, "added token %d", (int)id);
            return bytelevel_refusal(err, path, what, c, &bad);
        }
        for (size_t k = 0; k < j; k++)
            if (tok->added[k].id == id || (tok->added[k].len == n && !memcmp(tok->added[k].text,
                                                                             c, n)))
                return sn_err_set(err, SN_E_FORMAT, "%s: added token \"%s\" (id %d) duplicates "
                                  "another added token's id or content", path, c, (int)id);
        /* The same id in model.vocab must be the same token: one id, two strings would make
        ** encode and decode disagree (a shard's ids would decode to another text). */
        if (tok->tok_len[id] != UINT32_MAX && !tok->tok_added[id] &&
            (tok->tok_len[id] != n || memcmp(tok->arena + tok->tok_off[id], c, n)))
            return sn_err_set(err, SN_E_FORMAT, "%s: added token \"%s\" has id %d, which "
                              "model.vocab gives to a different token \"%.*s\"", path, c,
                              (int)id, (int)(tok->tok_len[id] > 64 ? 64 : tok->tok_len[id]),
                              tok->arena + tok->tok_off[id]);
        tok->added[j].text = sn_strdup(c);
        if (!tok->added[j].text)
            return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
        tok->added[j].len = n;
        tok->added[j].id = id;
        tok->added[j].special = json_true(x, "special");
        tok->n_added = ++j;
        memcpy(tok->arena + off, c, n);
        tok->tok_off[id] = (uint32_t)off;
        tok->tok_len[id] = (uint32_t)n;
        tok->tok_added[id] = 1;
        off += n;
    }
    index_added(tok);
    return SN_OK;
}

int sn_tokenizer_open(const char *path, struct sn_tokenizer **out, struct sn_err *err)
{
    *out = NULL;
    char *buf = NULL;
    size_t len = 0;
    cJSON *root = NULL;
    struct sn_tokenizer *tok = sn_calloc(1, sizeof *tok);
    if (!tok)
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
    int rc = sn_file_read(path, 1u << 30, &buf, &len, err);
    if (rc)
        goto fail;
    sn_sha256_hex(buf, len, tok->hash);
    rc = sn_json_parse(buf, len, path, &root, err);
    sn_free(buf);
    buf = NULL;
    if (rc)
        goto fail;
    if (!cJSON_IsObject(root)) {
        rc = sn_err_set(err, SN_E_FORMAT, "%s: expected a JSON object (a Hugging Face "
                        "tokenizer.json)", path);
        goto fail;
    }
    if ((rc = load_model(tok, root, path, err)))
        goto fail;
    if ((rc = load_normalizer(tok, cJSON_GetObjectItemCaseSensitive(root, "normalizer"), path,
                              err)))
        goto fail;
    const cJSON *pt = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer");
    const char *pattern = NULL;
    bool bytelevel = false;
    if (pt && !cJSON_IsNull(pt) && (rc = load_pretok(tok, pt, path, &pattern, &bytelevel, err)))
        goto fail;
    if (!bytelevel) {
        rc = sn_err_set(err, SN_E_UNSUPPORTED, "%s: the pre_tokenizer has no ByteLevel step; "
                        "only byte-level BPE is supported", path);
        goto fail;
    }
    const cJSON *dec = cJSON_GetObjectItemCaseSensitive(root, "decoder");
    if (dec && !cJSON_IsNull(dec) && (!type_of(dec) || strcmp(type_of(dec), "ByteLevel"))) {
        rc = sn_err_set(err, SN_E_UNSUPPORTED, "%s: decoder type '%s' is not supported (only "
                        "ByteLevel)", path, type_of(dec) ? type_of(dec) : "?");
        goto fail;
    }
    if (pattern && (rc = compile_regex(tok, pattern, path, err)))
        goto fail;
    tok->qwen2_ascii = pattern && !strcmp(pattern, SN_QWEN2_SPLIT_REGEX);
    cJSON_Delete(root);
    root = NULL;
    if (pthread_mutex_init(&tok->mu, NULL) == 0) {
        if (pthread_key_create(&tok->key, tstate_release) == 0)
            tok->key_ok = true;
        else
            pthread_mutex_destroy(&tok->mu);
    }
    *out = tok;
    return SN_OK;
fail:
    sn_free(buf);
    cJSON_Delete(root);
    sn_tokenizer_free(tok);
    return rc;
}

/* ---- from in-memory arrays (tokenizer.h, sn_tokenizer_create) ----------------------------- */

#define MAX_ADDED (1 << 16)     /* added (control / user-defined) tokens; Qwen has 26 */

static int cmp_added_text(const void *a_, const void *b_)
{
    const struct added_token *a = *(const struct added_token *const *)a_;
    const struct added_token *b = *(const struct added_token *const *)b_;
    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    return memcmp(a->text, b->text, a->len);
}

/* Identity of a tokenizer given as arrays when the caller has none: SHA-256 over the types,
** tokens and merges, each string preceded by its length. */
static void arrays_hash(const struct sn_tokenizer_vocab *v, char hex[65])
{
    struct sn_sha256 s;
    uint8_t d[32];
    sn_sha256_init(&s);
    for (size_t i = 0; i < v->n_tokens; i++) {
        uint64_t n = strlen(v->tokens[i]);
        int32_t t = v->types ? v->types[i] : SN_TOKEN_NORMAL;
        sn_sha256_update(&s, &t, sizeof t);
        sn_sha256_update(&s, &n, sizeof n);
        sn_sha256_update(&s, v->tokens[i], n);
    }
    for (size_t i = 0; i < v->n_merges; i++) {
        uint64_t n = strlen(v->merges[i]);
        sn_sha256_update(&s, &n, sizeof n);
        sn_sha256_update(&s, v->merges[i], n);
    }
    sn_sha256_final(&s, d);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

static int arrays_load(struct sn_tokenizer *tok, const struct sn_tokenizer_vocab *v,
                       struct sn_err *err)
{
    const char *src = "tokenizer arrays";
    size_t arena = 0, n_vocab = 0, n_added = 0, longest = 0;
    for (size_t i = 0; i < v->n_tokens; i++) {
        const char *s = v->tokens[i];
        if (!s)
            return sn_err_set(err, SN_E_ARG, "%s: token %zu is NULL", src, i);
        size_t n = strlen(s);
        if (v->token_lens && v->token_lens[i] != n)
            return sn_err_set(err, SN_E_FORMAT, "%s: token %zu contains a NUL byte", src, i);
        int32_t t = v->types ? v->types[i] : SN_TOKEN_NORMAL;
        switch (t) {
        case SN_TOKEN_NORMAL:
            n_vocab++;
            break;
        case SN_TOKEN_CONTROL:
        case SN_TOKEN_USER_DEFINED:
            n_added++;
            break;
        case SN_TOKEN_UNUSED:
            continue;
        default:
            return sn_err_set(err, SN_E_UNSUPPORTED, "%s: token %zu (\"%.40s\") has type %d; "
                              "only normal (1), control (3), user-defined (4) and unused (5) "
                              "tokens of a byte-level BPE are supported", src, i, s, (int)t);
        }
        if (n == 0)
            return sn_err_set(err, SN_E_FORMAT, "%s: token %zu is empty", src, i);
        arena += n;
        longest = n > longest ? n : longest;
    }
    if (n_added > MAX_ADDED)
        return sn_err_set(err, SN_E_FORMAT, "%s: %zu control/user-defined tokens (at most %d)",
                          src, n_added, MAX_ADDED);
    tok->n_ids = v->n_tokens;
    tok->arena = sn_malloc(arena + 1);
    tok->tok_off = sn_calloc(tok->n_ids, sizeof *tok->tok_off);
    tok->tok_len = sn_malloc(tok->n_ids * sizeof *tok->tok_len);
    tok->tok_added = sn_calloc(tok->n_ids, 1);
    tok->vmap_mask = pow2_at_least(2 * n_vocab) - 1;
    tok->vmap = sn_malloc((tok->vmap_mask + 1) * sizeof *tok->vmap);
    tok->mmask = pow2_at_least(v->n_merges + v->n_merges / 2 + 2) - 1; /* load <= 2/3 */
    tok->merges = sn_calloc(tok->mmask + 1, sizeof *tok->merges);
    tok->byte_merges = sn_malloc(256 * 256 * sizeof *tok->byte_merges);
    tok->added = sn_calloc(n_added ? n_added : 1, sizeof *tok->added);
    uint8_t *tmp = sn_malloc(3 * longest + 3);
    if (!tok->arena || !tok->tok_off || !tok->tok_len || !tok->tok_added || !tok->vmap ||
        !tok->merges || !tok->byte_merges || !tok->added || !tmp) {
        sn_free(tmp);
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory for a vocabulary of %zu ids",
                          src, tok->n_ids);
    }
    memset(tok->tok_len, 0xFF, tok->n_ids * sizeof *tok->tok_len);
    memset(tok->vmap, 0xFF, (tok->vmap_mask + 1) * sizeof *tok->vmap);
    int rc = SN_OK;
    size_t off = 0;
    for (size_t i = 0; i < v->n_tokens && !rc; i++) {
        if ((v->types ? v->types[i] : SN_TOKEN_NORMAL) != SN_TOKEN_NORMAL)
            continue;
        struct bl_bad bad;
        long nb = bytelevel_decode(v->tokens[i], (uint8_t *)tok->arena + off, &bad);
        if (nb < 0) {
            char what[48];
            snprintf(what, sizeof what, "token %zu", i);
            rc = bytelevel_refusal(err, src, what, v->tokens[i], &bad);
        } else if (vocab_find(tok, tok->arena + off, (size_t)nb) >= 0) {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: token %zu (\"%.40s\") appears twice", src, i,
                            v->tokens[i]);
        }
        if (rc)
            break;
        tok->tok_off[i] = (uint32_t)off;
        tok->tok_len[i] = (uint32_t)nb;
        size_t h = (size_t)bytes_hash(tok->arena + off, (size_t)nb) & tok->vmap_mask;
        while (tok->vmap[h] >= 0)
            h = (h + 1) & tok->vmap_mask;
        tok->vmap[h] = (int32_t)i;
        off += (size_t)nb;
    }
    for (int b = 0; b < 256 && !rc; b++) {
        char c = (char)b;
        tok->byte_id[b] = vocab_find(tok, &c, 1);
        if (tok->byte_id[b] < 0)
            rc = sn_err_set(err, SN_E_FORMAT, "%s: no token for byte 0x%02x (ByteLevel U+%04X); "
                            "a byte-level BPE needs all 256", src, b,
                            (unsigned)sn_bytelevel_cp((uint8_t)b));
    }
    for (size_t k = 0; k < v->n_merges && !rc; k++) {
        const char *m = v->merges[k];
        const char *sp = m ? strchr(m, ' ') : NULL;
        if (!sp || sp == m || !sp[1] || strchr(sp + 1, ' ')) {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: merge %zu (\"%.60s\"): expected two tokens "
                            "separated by one space", src, k, m ? m : "(null)");
            break;
        }
        size_t la = (size_t)(sp - m), lb = strlen(sp + 1);
        if (la > longest || lb > longest) {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: merge %zu (\"%.60s\"): a part is longer "
                            "than every token", src, k, m);
            break;
        }
        /* both halves decode into tmp[0..na+nb) (ByteLevel bytes <= UTF-8 bytes) */
        char *pa = (char *)tmp + 2 * longest + 2; /* the text half, apart from both */
        memcpy(pa, m, la);
        pa[la] = 0;
        struct bl_bad bad;
        long na = bytelevel_decode(pa, tmp, &bad);
        int32_t ia = na > 0 ? vocab_find(tok, (char *)tmp, (size_t)na) : -1;
        memcpy(pa, sp + 1, lb + 1);
        long nb = na > 0 ? bytelevel_decode(pa, tmp + na, &bad) : -1;
        int32_t ib = nb > 0 ? vocab_find(tok, (char *)tmp + na, (size_t)nb) : -1;
        int32_t in = ia >= 0 && ib >= 0 ? vocab_find(tok, (char *)tmp, (size_t)(na + nb)) : -1;
        if (in < 0) {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: merge %zu (\"%.60s\"): %s is not a token",
                            src, k, m, ia < 0 ? "the first part" : ib < 0 ? "the second part"
                                                                        : "the merged token");
            break;
        }
        merge_put(tok, ia, ib, (uint32_t)k, in);
    }
    sn_free(tmp);
    if (rc)
        return rc;
    tok->n_merges = v->n_merges;
    for (int a = 0; a < 256; a++)
        for (int b = 0; b < 256; b++) {
            struct merge_val *mv = &tok->byte_merges[a * 256 + b];
            mv->nid = -1;
            mv->rank = merge_find(tok, tok->byte_id[a], tok->byte_id[b], &mv->nid);
        }
    size_t j = 0;
    for (size_t i = 0; i < v->n_tokens; i++) {
        int32_t t = v->types ? v->types[i] : SN_TOKEN_NORMAL;
        if (t != SN_TOKEN_CONTROL && t != SN_TOKEN_USER_DEFINED)
            continue;
        const char *c = v->tokens[i];
        size_t n = strlen(c);
        struct bl_bad bad = {.invalid_utf8 = true, .off = utf8_check((const uint8_t *)c, n)};
        if (bad.off != n) {
            char what[48];
            snprintf(what, sizeof what, "added token %zu", i);
            return bytelevel_refusal(err, src, what, c, &bad);
        }
        tok->added[j].text = sn_strdup(c);
        if (!tok->added[j].text)
            return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", src);
        tok->added[j].len = n;
        tok->added[j].id = (int32_t)i;
        tok->added[j].special = t == SN_TOKEN_CONTROL;
        tok->n_added = ++j;
        memcpy(tok->arena + off, c, n);
        tok->tok_off[i] = (uint32_t)off;
        tok->tok_len[i] = (uint32_t)n;
        tok->tok_added[i] = 1;
        off += n;
    }
    /* two added tokens with the same text: which one matches would be arbitrary */
    struct added_token **byt = sn_malloc((tok->n_added + 1) * sizeof *byt);
    if (!byt)
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", src);
    for (j = 0; j < tok->n_added; j++)
        byt[j] = &tok->added[j];
    qsort(byt, tok->n_added, sizeof *byt, cmp_added_text);
    for (j = 1; j < tok->n_added && !rc; j++)
        if (!cmp_added_text(&byt[j - 1], &byt[j]))
            rc = sn_err_set(err, SN_E_FORMAT, "%s: added tokens %d and %d have the same text "
                            "\"%.40s\"", src, (int)byt[j - 1]->id, (int)byt[j]->id, byt[j]->text);
    sn_free(byt);
    if (rc)
        return rc;
    index_added(tok);
    return SN_OK;
}

int sn_tokenizer_create(const struct sn_tokenizer_vocab *v, struct sn_tokenizer **out,
                        struct sn_err *err)
{
    *out = NULL;
    if (!v || !v->tokens || v->n_tokens == 0)
        return sn_err_set(err, SN_E_ARG, "tokenizer arrays: no tokens");
    if (v->n_tokens > MAX_IDS)
        return sn_err_set(err, SN_E_FORMAT, "tokenizer arrays: %zu tokens (at most %d)",
                          v->n_tokens, MAX_IDS);
    if (v->n_merges && !v->merges)
        return sn_err_set(err, SN_E_ARG, "tokenizer arrays: merges missing");
    const char *pre = v->pre ? v->pre : "qwen2";
    const char *pattern = NULL;
    if (!strcmp(pre, "qwen2"))
        pattern = SN_QWEN2_SPLIT_REGEX;
    else if (!strcmp(pre, "gpt2") || !strcmp(pre, "default"))
        pattern = GPT2_REGEX;
    else
        return sn_err_set(err, SN_E_UNSUPPORTED, "tokenizer arrays: pre-tokenizer '%s' is not "
                          "supported (qwen2, gpt2, default)", pre);
    struct sn_tokenizer *tok = sn_calloc(1, sizeof *tok);
    if (!tok)
        return sn_err_set(err, SN_E_NOMEM, "tokenizer arrays: out of memory");
    int rc = arrays_load(tok, v, err);
    if (!rc)
        rc = compile_regex(tok, pattern, "tokenizer arrays", err);
    if (rc) {
        sn_tokenizer_free(tok);
        return rc;
    }
    tok->nfc = v->nfc;
    tok->qwen2_ascii = !strcmp(pattern, SN_QWEN2_SPLIT_REGEX);
    if (v->hash)
        snprintf(tok->hash, sizeof tok->hash, "%s", v->hash);
    else
        arrays_hash(v, tok->hash);
    if (pthread_mutex_init(&tok->mu, NULL) == 0) {
        if (pthread_key_create(&tok->key, tstate_release) == 0)
            tok->key_ok = true;
        else
            pthread_mutex_destroy(&tok->mu);
    }
    *out = tok;
    return SN_OK;
}
