/* tokenizer/tokenizer_internal.h: what the tokenizer's files share (the handle in tokenizer.c,
** the BPE core in bpe.c, demo.c); not for callers.
**
** ByteLevel alphabet (GPT-2's bytes_to_unicode, used by HF tokenizers' ByteLevel
** pre-tokenizer and decoder): the 188 printable bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF map
** to the code point of the same value; the other 68 bytes map, in increasing byte order, to
** U+0100, U+0101, ... U+0143. Vocabulary strings in tokenizer.json are written in this
** alphabet (a space is "Ġ" = U+0120). */
#ifndef SN_TOKENIZER_INTERNAL_H
#define SN_TOKENIZER_INTERNAL_H
#include "tokenizer/tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

/* Code point that byte b is written as. */
uint32_t sn_bytelevel_cp(uint8_t b);
/* Writes b[0..n) in the alphabet, UTF-8, NUL-terminated, into dst (room for 2 n + 1 bytes:
** every code point of the alphabet is below U+0800); returns the length. */
size_t sn_bytelevel_write(const uint8_t *b, size_t n, char *dst);
/* Byte that code point cp stands for, or -1 when cp is not in the alphabet. */
int sn_bytelevel_byte(uint32_t cp);

/* The Qwen2 pre-tokenizer split pattern (tokenizer.json pre_tokenizer Split.pattern.Regex),
** used by the demo tokenizer so that it goes through the same code path as Qwen's. */
#define SN_QWEN2_SPLIT_REGEX                                                                 \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+" \
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

/* ---- the handle (tokenizer.c) and what the BPE core (bpe.c) reads of it ------------------- */

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
    int32_t  *merge_pairs;     /* [2 * n_merges]: the pair of each rank (sn_tokenizer_to_arrays) */
    const char *pre;           /* "qwen2", "gpt2" (llama.cpp's names) or NULL: another split */
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

/* ---- shared helpers ------------------------------------------------------------------------ */

static inline uint64_t mix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

static inline uint64_t bytes_hash(const void *p_, size_t n)
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

static inline size_t pow2_at_least(size_t n)
{
    size_t c = 16;
    while (c < n)
        c *= 2;
    return c;
}

static inline int32_t vocab_find(const struct sn_tokenizer *tok, const char *b, size_t n)
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

/* tokenizer.c: a split pattern as HF tokenizers (Oniguruma) runs it, for PCRE2: \s and \S
** become \p{White_Space} and \P{White_Space} (docs/formats.md#tokenizerjson, "Regex
** dialect"). A new string (sn_free), or NULL when out of memory. */
char *sn_tok_regex_onig(const char *p);

/* bpe.c: UTF-8 checks, and the per-thread scratch the handle frees. */
/* Offset of the first byte of the first invalid UTF-8 sequence in s[0..n), or n. */
size_t   sn_tok_utf8_check(const uint8_t *s, size_t n);
/* Decodes one code point of valid UTF-8 at s (n > 0 bytes left); sets *len. */
uint32_t sn_tok_utf8_next(const uint8_t *s, size_t *len);
void     sn_tok_tstate_destroy(struct tstate *st);
void     sn_tok_tstate_release(void *p);    /* pthread key destructor: the thread exited */

#endif
