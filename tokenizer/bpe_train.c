/* tokenizer/bpe_train.c: learning a byte-level BPE tokenizer (tokenizer.h, sn_bpe_trainer_*)
** and writing it as tokenizer.json (the demo tokenizer, demo.c, is one such training).
**
** Counting: text -> NFC -> cut at special tokens -> Qwen2 split regex -> distinct pre-tokens
** ("words") with their frequencies, in a hash table. Training (Sennrich et al. 2016, §3.1, with
** the incremental bookkeeping of Hugging Face's BpeTrainer):
**   - every word is a sequence of token ids, first its bytes;
**   - pairs: a hash table from (a, b) to its count (sum over words of frequency x occurrences,
**     overlapping occurrences included, as a full recount would give) and the list of words
**     that may hold it (a word is added when it gains the pair; lists may hold stale entries);
**   - a max-heap of (count, pair) with lazy deletion: an entry whose count is no longer the
**     pair's count is pushed again with the current one. Counts only fall, except for pairs
**     holding the token just made, which are pushed after each merge, so every stored count
**     is an upper bound and the first entry that is current is the true best pair; the heap
**     orders equal counts by smallest (left id, right id), the tie rule of a full recount;
**   - a merge revisits only the words on the merged pair's list: each such word's pairs are
**     taken out of the counts, the word is rewritten left to right (a b -> n, not
**     overlapping), and its new pairs are put back.
** The merged token's bytes may already be a token (two merges can spell the same bytes): then
** the merge reuses that id and adds no token, as BpeTrainer does. */
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#define MAX_VOCAB     ((size_t)1 << 24)   /* MAX_IDS in tokenizer_internal.h */
#define MAX_SPECIALS  4096

static const char *const chatml[3] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};

struct word {
    uint64_t freq;
    size_t   off;     /* bytes in words_arena (the key), then ids in syms from sym_off */
    uint32_t len;     /* bytes of the key */
    uint32_t n;       /* current number of tokens */
    size_t   sym_off;
    uint32_t stamp;   /* last merge step that rewrote it */
};

struct pair {
    uint64_t key;     /* a << 32 | b */
    int64_t  count;
    uint32_t *w;      /* words that may hold it */
    uint32_t nw, cap;
    uint64_t tick;    /* last word visit that appended to w */
    uint32_t step;    /* last merge step that put it in `touched` */
};

struct heap_item {
    uint64_t count, key;
};

struct token {
    char    *b;       /* its bytes, owned */
    uint32_t len;
};

struct merge {
    int32_t a, b;
};

struct sn_bpe_trainer {
    struct sn_bpe_train_params p;
    char   **specials;          /* owned copies */
    size_t  *special_len;
    size_t   n_specials;
    pcre2_code       *re;
    pcre2_match_data *md;
    bool              jit;
    struct sn_buf     norm;     /* NFC scratch */
    uint64_t bytes, n_pretokens;
    /* words */
    struct word *words;
    size_t   n_words, cap_words;
    char    *arena;             /* word keys */
    size_t   arena_len, arena_cap;
    uint32_t *wmap;             /* open addressing over word index + 1; 0 empty */
    size_t   wmask;
    bool     trained;
    /* tokens */
    struct token *tok;
    size_t   n_tok, cap_tok;
    int32_t *tmap;              /* open addressing over token ids; -1 empty */
    size_t   tmask;
    struct merge *merges;       /* in rank order */
    size_t   n_merges, cap_merges;
    /* training state */
    int32_t *syms;
    struct pair *pairs;
    size_t   n_pairs, cap_pairs;
    uint32_t *pmap;             /* open addressing over pair index + 1; 0 empty */
    size_t   pmask;
    struct heap_item *heap;
    size_t   n_heap, cap_heap;
    uint32_t *touched;
    size_t   n_touched, cap_touched;
    struct sn_bpe_train_report rep;
};

struct sn_bpe_train_params sn_bpe_train_default_params(void)
{
    struct sn_bpe_train_params p;
    memset(&p, 0, sizeof p);
    p.vocab_size = 8192;
    p.min_frequency = 2;
    return p;
}

/* Grows *v (elements of size sz) to hold at least need; 0 or SN_E_NOMEM. */
static int grow(void **v, size_t *cap, size_t need, size_t sz, struct sn_err *err)
{
    if (need <= *cap)
        return SN_OK;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *n = sn_realloc(*v, c * sz);
    if (!n)
        return sn_err_set(err, SN_E_NOMEM, "tokenizer training: out of memory");
    *v = n;
    *cap = c;
    return SN_OK;
}

void sn_bpe_trainer_free(struct sn_bpe_trainer *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n_specials; i++)
        sn_free(t->specials[i]);
    sn_free(t->specials);
    sn_free(t->special_len);
    pcre2_match_data_free(t->md);
    pcre2_code_free(t->re);
    sn_buf_free(&t->norm);
    sn_free(t->words);
    sn_free(t->arena);
    sn_free(t->wmap);
    for (size_t i = 0; i < t->n_tok; i++)
        sn_free(t->tok[i].b);
    sn_free(t->tok);
    sn_free(t->tmap);
    sn_free(t->merges);
    sn_free(t->syms);
    for (size_t i = 0; i < t->n_pairs; i++)
        sn_free(t->pairs[i].w);
    sn_free(t->pairs);
    sn_free(t->pmap);
    sn_free(t->heap);
    sn_free(t->touched);
    sn_free(t);
}

/* ---- tokens: bytes -> id ------------------------------------------------------------------ */

static int32_t tok_find(const struct sn_bpe_trainer *t, const char *b, size_t n)
{
    size_t i = (size_t)bytes_hash(b, n) & t->tmask;
    for (;;) {
        int32_t id = t->tmap[i];
        if (id < 0 || (t->tok[id].len == n && !memcmp(t->tok[id].b, b, n)))
            return id;
        i = (i + 1) & t->tmask;
    }
}

/* Adds token bytes b[0..n) (owned from now on, freed on failure too) as the next id. */
static int tok_add(struct sn_bpe_trainer *t, char *b, size_t n, struct sn_err *err)
{
    if (grow((void **)&t->tok, &t->cap_tok, t->n_tok + 1, sizeof *t->tok, err)) {
        sn_free(b);
        return err->code;
    }
    t->tok[t->n_tok].b = b;
    t->tok[t->n_tok].len = (uint32_t)n;
    t->n_tok++;
    if (2 * t->n_tok > t->tmask) { /* (re)build the index at under one half load */
        size_t mask = t->tmask ? 2 * t->tmask + 1 : 1023;
        int32_t *m = sn_malloc((mask + 1) * sizeof *m);
        if (!m)
            return sn_err_set(err, SN_E_NOMEM, "tokenizer training: out of memory");
        memset(m, 0xFF, (mask + 1) * sizeof *m);
        sn_free(t->tmap);
        t->tmap = m;
        t->tmask = mask;
        for (size_t id = 0; id < t->n_tok; id++) {
            size_t i = (size_t)bytes_hash(t->tok[id].b, t->tok[id].len) & mask;
            while (m[i] >= 0)
                i = (i + 1) & mask;
            m[i] = (int32_t)id;
        }
        return SN_OK;
    }
    size_t i = (size_t)bytes_hash(b, n) & t->tmask;
    while (t->tmap[i] >= 0)
        i = (i + 1) & t->tmask;
    t->tmap[i] = (int32_t)(t->n_tok - 1);
    return SN_OK;
}

int sn_bpe_trainer_create(const struct sn_bpe_train_params *p, struct sn_bpe_trainer **out,
                          struct sn_err *err)
{
    *out = NULL;
    if (!p)
        return sn_err_set(err, SN_E_ARG, "tokenizer training: no params");
    const char *const *sp = p->specials ? p->specials : chatml;
    size_t n_sp = p->specials ? p->n_specials : 3;
    if (n_sp > MAX_SPECIALS)
        return sn_err_set(err, SN_E_ARG, "tokenizer training: %zu special tokens (at most %d)",
                          n_sp, MAX_SPECIALS);
    if (p->vocab_size < 256 + n_sp || p->vocab_size > MAX_VOCAB)
        return sn_err_set(err, SN_E_ARG, "tokenizer training: vocabulary size %zu is out of "
                          "range: at least %zu (256 byte tokens + %zu special tokens), at most "
                          "%zu", p->vocab_size, 256 + n_sp, n_sp, MAX_VOCAB);
    for (size_t i = 0; i < n_sp; i++) {
        size_t l = sp[i] ? strlen(sp[i]) : 0;
        if (!l)
            return sn_err_set(err, SN_E_ARG, "tokenizer training: special token %zu is empty",
                              i + 1);
        if (sn_tok_utf8_check((const uint8_t *)sp[i], l) != l)
            return sn_err_set(err, SN_E_ARG, "tokenizer training: special token %zu is not "
                              "valid UTF-8", i + 1);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(sp[i], sp[j]))
                return sn_err_set(err, SN_E_ARG, "tokenizer training: special token '%s' is "
                                  "given twice", sp[i]);
    }
    struct sn_bpe_trainer *t = sn_calloc(1, sizeof *t);
    if (!t)
        return sn_err_set(err, SN_E_NOMEM, "tokenizer training: out of memory");
    t->p = *p;
    t->specials = sn_calloc(n_sp ? n_sp : 1, sizeof *t->specials);
    t->special_len = sn_calloc(n_sp ? n_sp : 1, sizeof *t->special_len);
    int rc = SN_OK;
    if (!t->specials || !t->special_len) {
        rc = sn_err_set(err, SN_E_NOMEM, "tokenizer training: out of memory");
        goto fail;
    }
    for (; t->n_specials < n_sp; t->n_specials++) {
        t->special_len[t->n_specials] = strlen(sp[t->n_specials]);
        if (!(t->specials[t->n_specials] = sn_strdup(sp[t->n_specials]))) {
            rc = sn_err_set(err, SN_E_NOMEM, "tokenizer training: out of memory");
            goto fail;
        }
    }
    t->p.specials = NULL; /* the copies above are what counts */
    /* the pattern as encoding runs it (tokenizer.c), so training splits text the same way */
    int ec;
    PCRE2_SIZE eo;
    char *pat = sn_tok_regex_onig(SN_QWEN2_SPLIT_REGEX);
    if (!pat) {
        rc = sn_err_set(err, SN_E_NOMEM, "tokenizer training: out of memory");
        goto fail;
    }
    t->re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &ec,
                          &eo, NULL);
    sn_free(pat);
    t->md = t->re ? pcre2_match_data_create_from_pattern(t->re, NULL) : NULL;
    if (!t->md) {
        rc = sn_err_set(err, SN_E_BACKEND, "tokenizer training: PCRE2 setup failed");
        goto fail;
    }
    t->jit = pcre2_jit_compile(t->re, PCRE2_JIT_COMPLETE) == 0;
    t->wmask = 4095;
    t->wmap = sn_calloc(t->wmask + 1, sizeof *t->wmap);
    if (!t->wmap) {
        rc = sn_err_set(err, SN_E_NOMEM, "tokenizer training: out of memory");
        goto fail;
    }
    *out = t;
    return SN_OK;
fail:
    sn_bpe_trainer_free(t);
    return rc;
}

/* ---- counting pre-tokens ------------------------------------------------------------------ */

static int word_count(struct sn_bpe_trainer *t, const char *w, size_t n, struct sn_err *err)
{
    if (n > UINT32_MAX)
        return sn_err_set(err, SN_E_ARG, "tokenizer training: a pre-token of %zu bytes is too "
                          "long", n);
    uint64_t h = bytes_hash(w, n);
    size_t i = (size_t)h & t->wmask;
    for (uint32_t x; (x = t->wmap[i]); i = (i + 1) & t->wmask) {
        struct word *wd = &t->words[x - 1];
        if (wd->len == n && !memcmp(t->arena + wd->off, w, n)) {
            wd->freq++;
            return SN_OK;
        }
    }
    if (t->n_words >= UINT32_MAX - 1)
        return sn_err_set(err, SN_E_ARG, "tokenizer training: more than 2^32 distinct "
                          "pre-tokens");
    if (grow((void **)&t->words, &t->cap_words, t->n_words + 1, sizeof *t->words, err) ||
        grow((void **)&t->arena, &t->arena_cap, t->arena_len + n + 1, 1, err))
        return err->code;
    struct word *wd = &t->words[t->n_words];
    memset(wd, 0, sizeof *wd);
    wd->freq = 1;
    wd->off = t->arena_len;
    wd->len = (uint32_t)n;
    memcpy(t->arena + t->arena_len, w, n);
    t->arena_len += n;
    t->wmap[i] = (uint32_t)++t->n_words;
    if (2 * t->n_words > t->wmask) { /* keep the load under one half */
        size_t mask = 2 * t->wmask + 1;
        uint32_t *m = sn_calloc(mask + 1, sizeof *m);
        if (!m)
            return sn_err_set(err, SN_E_NOMEM, "tokenizer training: out of memory");
        for (size_t k = 0; k < t->n_words; k++) {
            size_t j = (size_t)bytes_hash(t->arena + t->words[k].off, t->words[k].len) & mask;
            while (m[j])
                j = (j + 1) & mask;
            m[j] = (uint32_t)(k + 1);
        }
        sn_free(t->wmap);
        t->wmap = m;
        t->wmask = mask;
    }
    return SN_OK;
}

/* Pre-tokens of one segment (no special token inside) of NFC text. */
static int count_segment(struct sn_bpe_trainer *t, const char *s, size_t n, struct sn_err *err)
{
    size_t pos = 0;
    t->bytes += n;
    while (pos < n) {
        int m = t->jit ? pcre2_jit_match(t->re, (PCRE2_SPTR)s, n, pos, 0, t->md, NULL)
                       : pcre2_match(t->re, (PCRE2_SPTR)s, n, pos, 0, t->md, NULL);
        if (m < 0)
            break; /* the pattern covers every character; nothing is left over */
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(t->md);
        if (ov[1] <= pos)
            break;
        int rc = word_count(t, s + ov[0], ov[1] - ov[0], err);
        if (rc)
            return rc;
        t->n_pretokens++;
        pos = ov[1];
    }
    return SN_OK;
}

/* NFC text: cut at the special tokens (leftmost, then longest, as encoding matches them). */
static int count_text(struct sn_bpe_trainer *t, const char *s, size_t n, struct sn_err *err)
{
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        size_t best = 0;
        for (size_t k = 0; k < t->n_specials; k++) {
            size_t l = t->special_len[k];
            if (l > best && l <= n - i && s[i] == t->specials[k][0] &&
                !memcmp(s + i, t->specials[k], l))
                best = l;
        }
        if (!best)
            continue;
        int rc = count_segment(t, s + start, i - start, err);
        if (rc)
            return rc;
        i += best - 1;
        start = i + 1;
    }
    return count_segment(t, s + start, n - start, err);
}

int sn_bpe_trainer_add(struct sn_bpe_trainer *t, const char *text, size_t len,
                       struct sn_err *err)
{
    if (t->trained)
        return sn_err_set(err, SN_E_ARG, "tokenizer training: text added after training");
    size_t bad = sn_tok_utf8_check((const uint8_t *)text, len);
    if (bad < len)
        return sn_err_set(err, SN_E_FORMAT, "invalid UTF-8 at byte %zu", bad);
    bool ascii = true;
    for (size_t i = 0; i < len && ascii; i++)
        ascii = (unsigned char)text[i] < 0x80;
    if (ascii || !len)
        return count_text(t, text, len, err);
    if (len > (size_t)PTRDIFF_MAX / 4) /* utf8proc lengths are signed */
        return sn_err_set(err, SN_E_ARG, "tokenizer training: a text of %zu bytes is too long",
                          len);
    utf8proc_uint8_t *norm = NULL;
    utf8proc_ssize_t nn = utf8proc_map((const utf8proc_uint8_t *)text, (utf8proc_ssize_t)len,
                                       &norm, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    if (nn < 0) {
        free(norm);
        return sn_err_set(err, SN_E_FORMAT, "NFC normalization failed: %s",
                          utf8proc_errmsg(nn));
    }
    int rc = count_text(t, (const char *)norm, (size_t)nn, err);
    free(norm); /* allocated by utf8proc with malloc */
    return rc;
}

/* ---- pairs and the heap ------------------------------------------------------------------- */

static inline uint64_t pair_key(int32_t a, int32_t b)
{
    return (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
}

static int pmap_grow(struct sn_bpe_trainer *t, struct sn_err *err)
{
    size_t mask = t->pmask ? 2 * t->pmask + 1 : 4095;
    uint32_t *m = sn_calloc(mask + 1, sizeof *m);
    if (!m)
        return sn_err_set(err, SN_E_NOMEM, "tokenizer training: out of memory");
    for (size_t k = 0; k < t->n_pairs; k++) {
        size_t j = (size_t)mix64(t->pairs[k].key) & mask;
        while (m[j])
            j = (j + 1) & mask;
        m[j] = (uint32_t)(k + 1);
    }
    sn_free(t->pmap);
    t->pmap = m;
    t->pmask = mask;
    return SN_OK;
}

/* Index of pair (a, b), made (count 0) when absent; -1 with err set when out of memory. */
static long pair_get(struct sn_bpe_trainer *t, int32_t a, int32_t b, struct sn_err *err)
{
    uint64_t key = pair_key(a, b);
    size_t i = (size_t)mix64(key) & t->pmask;
    for (uint32_t x; (x = t->pmap[i]); i = (i + 1) & t->pmask)
        if (t->pairs[x - 1].key == key)
            return (long)(x - 1);
    if (t->n_pairs >= UINT32_MAX - 1) {
        sn_err_set(err, SN_E_NOMEM, "tokenizer training: more than 2^32 distinct pairs");
        return -1;
    }
    if (grow((void **)&t->pairs, &t->cap_pairs, t->n_pairs + 1, sizeof *t->pairs, err))
        return -1;
    struct pair *p = &t->pairs[t->n_pairs];
    memset(p, 0, sizeof *p);
    p->key = key;
    p->step = UINT32_MAX;
    t->pmap[i] = (uint32_t)++t->n_pairs;
    if (2 * t->n_pairs > t->pmask && pmap_grow(t, err))
        return -1;
    return (long)(t->n_pairs - 1);
}

/* Adds delta occurrences of (a, b) held by word w; with join, w joins the pair's list (once
** per visit `tick`). Returns the pair's index, or -1 with err set. */
static long pair_add(struct sn_bpe_trainer *t, int32_t a, int32_t b, int64_t delta, bool join,
                     uint32_t w, uint64_t tick, struct sn_err *err)
{
    long k = pair_get(t, a, b, err);
    if (k < 0)
        return -1;
    struct pair *p = &t->pairs[k];
    p->count += delta;
    if (join && p->tick != tick) {
        size_t cap = p->cap;
        if (grow((void **)&p->w, &cap, (size_t)p->nw + 1, sizeof *p->w, err))
            return -1;
        p->cap = (uint32_t)cap;
        p->w[p->nw++] = w;
        p->tick = tick;
    }
    return k;
}

static inline bool heap_before(const struct heap_item *x, const struct heap_item *y)
{
    return x->count > y->count || (x->count == y->count && x->key < y->key);
}

static int heap_push(struct sn_bpe_trainer *t, uint64_t count, uint64_t key, struct sn_err *err)
{
    if (grow((void **)&t->heap, &t->cap_heap, t->n_heap + 1, sizeof *t->heap, err))
        return err->code;
    struct heap_item it = {count, key};
    size_t i = t->n_heap++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!heap_before(&it, &t->heap[up]))
            break;
        t->heap[i] = t->heap[up];
        i = up;
    }
    t->heap[i] = it;
    return SN_OK;
}

static struct heap_item heap_pop(struct sn_bpe_trainer *t)
{
    struct heap_item top = t->heap[0], last = t->heap[--t->n_heap];
    size_t i = 0, n = t->n_heap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && heap_before(&t->heap[c + 1], &t->heap[c]))
            c++;
        if (!heap_before(&t->heap[c], &last))
            break;
        t->heap[i] = t->heap[c];
        i = c;
    }
    if (n)
        t->heap[i] = last;
    return top;
}

/* ---- training ----------------------------------------------------------------------------- */

/* Byte tokens, each word's ids, the pair counts and lists, and the heap. */
static int train_setup(struct sn_bpe_trainer *t, struct sn_err *err)
{
    t->syms = sn_malloc((t->arena_len ? t->arena_len : 1) * sizeof *t->syms);
    if (!t->syms)
        return sn_err_set(err, SN_E_NOMEM, "tokenizer training: out of memory");
    for (int b = 0; b < 256; b++) {
        char *s = sn_malloc(1);
        if (!s)
            return sn_err_set(err, SN_E_NOMEM, "tokenizer training: out of memory");
        s[0] = (char)b;
        if (tok_add(t, s, 1, err))
            return err->code;
    }
    if (pmap_grow(t, err))
        return err->code;
    size_t off = 0;
    for (size_t w = 0; w < t->n_words; w++) {
        struct word *wd = &t->words[w];
        const uint8_t *k = (const uint8_t *)t->arena + wd->off;
        wd->sym_off = off;
        wd->n = wd->len;
        for (uint32_t i = 0; i < wd->len; i++)
            t->syms[off + i] = k[i];
        off += wd->len;
        for (uint32_t i = 0; i + 1 < wd->n; i++)
            if (pair_add(t, t->syms[wd->sym_off + i], t->syms[wd->sym_off + i + 1],
                         (int64_t)wd->freq, true, (uint32_t)w, (uint64_t)w + 1, err) < 0)
                return err->code;
    }
    for (size_t k = 0; k < t->n_pairs; k++)
        if (t->pairs[k].count > 0 &&
            heap_push(t, (uint64_t)t->pairs[k].count, t->pairs[k].key, err))
            return err->code;
    return SN_OK;
}

/* Merges pair k (tokens a, b) everywhere; step counts merges from 1. */
static int train_merge(struct sn_bpe_trainer *t, size_t k, uint32_t step, uint64_t *tick,
                       struct sn_err *err)
{
    int32_t a = (int32_t)(t->pairs[k].key >> 32), b = (int32_t)(t->pairs[k].key & 0xFFFFFFFFu);
    size_t la = t->tok[a].len, lb = t->tok[b].len;
    char *s = sn_malloc(la + lb);
    if (!s)
        return sn_err_set(err, SN_E_NOMEM, "tokenizer training: out of memory");
    memcpy(s, t->tok[a].b, la);
    memcpy(s + la, t->tok[b].b, lb);
    int32_t nid = tok_find(t, s, la + lb);
    if (nid >= 0) {
        sn_free(s);
    } else {
        nid = (int32_t)t->n_tok;
        if (tok_add(t, s, la + lb, err))
            return err->code;
    }
    if (grow((void **)&t->merges, &t->cap_merges, t->n_merges + 1, sizeof *t->merges, err))
        return err->code;
    t->merges[t->n_merges].a = a;
    t->merges[t->n_merges++].b = b;

    /* The list cannot grow while it is walked: only pairs holding nid gain words, and the
    ** merged pair holds a and b, neither of which is nid (nid's bytes are longer). */
    uint32_t nw = t->pairs[k].nw;
    for (uint32_t j = 0; j < nw; j++) {
        uint32_t w = t->pairs[k].w[j];
        struct word *wd = &t->words[w];
        if (wd->stamp == step)
            continue; /* listed twice */
        wd->stamp = step;
        int32_t *x = t->syms + wd->sym_off;
        uint32_t n = wd->n, i = 0;
        while (i + 1 < n && !(x[i] == a && x[i + 1] == b))
            i++;
        if (i + 1 >= n)
            continue; /* a stale entry: the word lost the pair to an earlier merge */
        int64_t f = (int64_t)wd->freq;
        ++*tick;
        for (i = 0; i + 1 < n; i++)
            if (pair_add(t, x[i], x[i + 1], -f, false, w, *tick, err) < 0)
                return err->code;
        uint32_t o = 0;
        for (i = 0; i < n; i++) {
            if (i + 1 < n && x[i] == a && x[i + 1] == b) {
                x[o++] = nid;
                i++;
            } else {
                x[o++] = x[i];
            }
        }
        wd->n = n = o;
        /* Pairs without nid were in the word before, so it is on their lists already. */
        for (i = 0; i + 1 < n; i++) {
            bool fresh = x[i] == nid || x[i + 1] == nid;
            long q = pair_add(t, x[i], x[i + 1], f, fresh, w, *tick, err);
            if (q < 0)
                return err->code;
            if (fresh && t->pairs[q].step != step) {
                t->pairs[q].step = step;
                if (grow((void **)&t->touched, &t->cap_touched, t->n_touched + 1,
                         sizeof *t->touched, err))
                    return err->code;
                t->touched[t->n_touched++] = (uint32_t)q;
            }
        }
    }
    t->pairs[k].nw = 0; /* every word on it was rewritten: none holds (a, b) now */
    for (size_t j = 0; j < t->n_touched; j++) {
        const struct pair *p = &t->pairs[t->touched[j]];
        if (p->count > 0 && heap_push(t, (uint64_t)p->count, p->key, err))
            return err->code;
    }
    t->n_touched = 0;
    return SN_OK;
}

int sn_bpe_trainer_train(struct sn_bpe_trainer *t, struct sn_bpe_train_report *rep,
                         struct sn_err *err)
{
    if (t->trained)
        return sn_err_set(err, SN_E_ARG, "tokenizer training: already trained");
    t->trained = true;
    if (!t->n_words)
        return sn_err_set(err, SN_E_ARG, "empty corpus: no text to learn a tokenizer from");
    int rc = train_setup(t, err);
    if (rc)
        return rc;
    size_t target = t->p.vocab_size - t->n_specials;
    uint64_t min_f = t->p.min_frequency ? t->p.min_frequency : 1, tick = t->n_words + 1;
    uint32_t step = 0;
    t->rep.ran_out = false;
    while (t->n_tok < target) {
        if (!t->n_heap) {
            t->rep.ran_out = true;
            break;
        }
        struct heap_item top = heap_pop(t);
        long k = pair_get(t, (int32_t)(top.key >> 32), (int32_t)(top.key & 0xFFFFFFFFu), err);
        if (k < 0)
            return err->code;
        int64_t c = t->pairs[k].count;
        if ((uint64_t)(c > 0 ? c : 0) != top.count) { /* stale: requeue at its current count */
            if (c > 0 && (rc = heap_push(t, (uint64_t)c, top.key, err)))
                return rc;
            continue;
        }
        if (top.count < min_f) {
            t->rep.ran_out = true;
            break;
        }
        if (step == UINT32_MAX - 1)
            return sn_err_set(err, SN_E_ARG, "tokenizer training: too many merges");
        if ((rc = train_merge(t, (size_t)k, ++step, &tick, err)))
            return rc;
        if (t->p.progress && t->p.progress(t->p.user, t->n_tok, target))
            return sn_err_set(err, SN_E_CANCELLED, "tokenizer training: stopped after %zu "
                              "merges", t->n_merges);
    }
    t->rep.bytes = t->bytes;
    t->rep.n_pretokens = t->n_pretokens;
    t->rep.n_words = t->n_words;
    t->rep.n_merges = t->n_merges;
    t->rep.vocab_size = t->n_tok + t->n_specials;
    if (rep)
        *rep = t->rep;
    return SN_OK;
}

/* ---- tokenizer.json ----------------------------------------------------------------------- */

/* Token bytes written in the ByteLevel alphabet (tokenizer_internal.h). */
static cJSON *bytelevel_string(const char *b, size_t n)
{
    char small[256], *s = n <= (sizeof small - 1) / 2 ? small : sn_malloc(2 * n + 1);
    if (!s)
        return NULL;
    sn_bytelevel_write((const uint8_t *)b, n, s);
    cJSON *j = cJSON_CreateString(s);
    if (s != small)
        sn_free(s);
    return j;
}

static cJSON *json_obj(cJSON *parent, const char *key)
{
    cJSON *o = cJSON_CreateObject();
    if (o)
        cJSON_AddItemToObject(parent, key, o);
    return o;
}

static cJSON *trainer_json(const struct sn_bpe_trainer *t)
{
    cJSON *root = cJSON_CreateObject(), *x, *arr, *model, *vocab, *merges, *pt, *seq;
    if (!root)
        return NULL;
    cJSON_AddStringToObject(root, "version", "1.0");
    cJSON_AddNullToObject(root, "truncation");
    cJSON_AddNullToObject(root, "padding");
    arr = cJSON_AddArrayToObject(root, "added_tokens");
    for (size_t i = 0; arr && i < t->n_specials; i++) {
        x = cJSON_CreateObject();
        if (!x)
            break;
        cJSON_AddItemToArray(arr, x);
        cJSON_AddNumberToObject(x, "id", (double)(t->n_tok + i));
        cJSON_AddStringToObject(x, "content", t->specials[i]);
        cJSON_AddBoolToObject(x, "single_word", 0);
        cJSON_AddBoolToObject(x, "lstrip", 0);
        cJSON_AddBoolToObject(x, "rstrip", 0);
        cJSON_AddBoolToObject(x, "normalized", 0);
        cJSON_AddBoolToObject(x, "special", 1);
    }
    x = json_obj(root, "normalizer");
    if (x)
        cJSON_AddStringToObject(x, "type", "NFC");
    pt = json_obj(root, "pre_tokenizer");
    if (pt) {
        cJSON_AddStringToObject(pt, "type", "Sequence");
        seq = cJSON_AddArrayToObject(pt, "pretokenizers");
        x = cJSON_CreateObject();
        if (seq && x) {
            cJSON_AddItemToArray(seq, x);
            cJSON_AddStringToObject(x, "type", "Split");
            cJSON *pat = json_obj(x, "pattern");
            if (pat)
                cJSON_AddStringToObject(pat, "Regex", SN_QWEN2_SPLIT_REGEX);
            cJSON_AddStringToObject(x, "behavior", "Isolated");
            cJSON_AddBoolToObject(x, "invert", 0);
            x = cJSON_CreateObject();
            if (x) {
                cJSON_AddItemToArray(seq, x);
                cJSON_AddStringToObject(x, "type", "ByteLevel");
                cJSON_AddBoolToObject(x, "add_prefix_space", 0);
                cJSON_AddBoolToObject(x, "trim_offsets", 0);
                cJSON_AddBoolToObject(x, "use_regex", 0);
            }
        } else {
            cJSON_Delete(x);
        }
    }
    cJSON_AddNullToObject(root, "post_processor");
    x = json_obj(root, "decoder");
    if (x) {
        cJSON_AddStringToObject(x, "type", "ByteLevel");
        cJSON_AddBoolToObject(x, "add_prefix_space", 0);
        cJSON_AddBoolToObject(x, "trim_offsets", 0);
        cJSON_AddBoolToObject(x, "use_regex", 0);
    }
    model = json_obj(root, "model");
    if (model) {
        cJSON_AddStringToObject(model, "type", "BPE");
        cJSON_AddNullToObject(model, "dropout");
        cJSON_AddNullToObject(model, "unk_token");
        cJSON_AddStringToObject(model, "continuing_subword_prefix", "");
        cJSON_AddStringToObject(model, "end_of_word_suffix", "");
        cJSON_AddBoolToObject(model, "fuse_unk", 0);
        cJSON_AddBoolToObject(model, "byte_fallback", 0);
        cJSON_AddBoolToObject(model, "ignore_merges", 0);
        vocab = json_obj(model, "vocab");
        for (size_t i = 0; vocab && i < t->n_tok; i++) {
            cJSON *s = bytelevel_string(t->tok[i].b, t->tok[i].len);
            if (!s)
                break;
            cJSON_AddNumberToObject(vocab, s->valuestring, (double)i);
            cJSON_Delete(s);
        }
        merges = cJSON_AddArrayToObject(model, "merges");
        for (size_t m = 0; merges && m < t->n_merges; m++) {
            cJSON *p = cJSON_CreateArray();
            if (!p)
                break;
            cJSON_AddItemToArray(merges, p);
            const struct token *a = &t->tok[t->merges[m].a], *b = &t->tok[t->merges[m].b];
            cJSON_AddItemToArray(p, bytelevel_string(a->b, a->len));
            cJSON_AddItemToArray(p, bytelevel_string(b->b, b->len));
        }
    }
    return root;
}

/* Counts every node so a failed cJSON allocation above (which leaves a node out) is caught. */
static size_t json_count(const cJSON *j)
{
    size_t n = 1;
    for (const cJSON *c = j ? j->child : NULL; c; c = c->next)
        n += json_count(c);
    return n;
}

int sn_bpe_trainer_write(const struct sn_bpe_trainer *t, const char *path, struct sn_err *err)
{
    if (!t->trained || !t->n_tok)
        return sn_err_set(err, SN_E_ARG, "tokenizer training: nothing trained to write");
    cJSON *root = trainer_json(t);
    /* nodes: root 1, its 9 keys, 8 per added token, normalizer 1, pre_tokenizer 13 (2 keys,
    ** 2 steps, Split 4 + pattern 1, ByteLevel 4), decoder 4, model 10 keys, one per vocab
    ** entry, 3 per merge */
    size_t want = 1 + 9 + 8 * t->n_specials + 1 + 13 + 4 + 10 + t->n_tok + 3 * t->n_merges;
    int rc;
    if (!root || json_count(root) != want)
        rc = sn_err_set(err, SN_E_NOMEM, "tokenizer training: out of memory building the JSON");
    else
        rc = sn_json_save(path, root, err);
    cJSON_Delete(root);
    return rc;
}
