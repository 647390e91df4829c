/* tokenizer/tokenizer.c: the tokenizer handle (tokenizer.h): loading a Hugging Face
** tokenizer.json or in-memory arrays into the vocabulary and merge tables, decode, lookups, and
** the arrays back out (sn_tokenizer_to_arrays). The BPE core that encodes is tokenizer/bpe.c.
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
#include "tokenizer/tokenizer_internal.h"

#include <stdio.h>
#include <stdlib.h>

/* A later duplicate of a pair replaces the earlier one, as in HF (merges collected into a map). */
static void merge_put(struct sn_tokenizer *tok, int32_t a, int32_t b, uint32_t rank, int32_t nid)
{
    uint64_t key = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1;
    size_t i = (size_t)mix64(key) & tok->mmask;
    while (tok->merges[i].key && tok->merges[i].key != key)
        i = (i + 1) & tok->mmask;
    tok->merges[i] = (struct merge_slot){key, rank, nid};
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
        sn_tok_tstate_destroy(st);
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
    sn_free(tok->merge_pairs);
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
    size_t k = sn_tok_utf8_check(u, n);
    if (k != n) {
        *bad = (struct bl_bad){.invalid_utf8 = true, .off = k, .cp = 0};
        return -1;
    }
    while (i < n) {
        size_t l;
        uint32_t cp = sn_tok_utf8_next(u + i, &l);
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
        } else if (u[i] < 0x80 || sn_tok_utf8_check(u + i, n - i > 4 ? 4 : n - i) == 0) {
            snprintf(e, sizeof e, "\\x%02x", u[i]);    /* control byte, or not UTF-8 here */
        } else {
            uint32_t cp = sn_tok_utf8_next(u + i, &l);
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
char *sn_tok_regex_onig(const char *p)
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
    char *pat = sn_tok_regex_onig(pattern);
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
    tok->merge_pairs = sn_malloc((2 * n_merges + 1) * sizeof *tok->merge_pairs);
    tok->byte_merges = sn_malloc(256 * 256 * sizeof *tok->byte_merges);
    tok->added = sn_calloc(n_added ? n_added : 1, sizeof *tok->added);
    if (!tok->arena || !tok->tok_off || !tok->tok_len || !tok->tok_added || !tok->vmap ||
        !tok->merges || !tok->merge_pairs || !tok->byte_merges || !tok->added)
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
        tok->merge_pairs[2 * rank] = ia;
        tok->merge_pairs[2 * rank + 1] = ib;
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
        struct bl_bad bad = {.invalid_utf8 = true, .off = sn_tok_utf8_check((const uint8_t *)c, n)};
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
    tok->pre = tok->qwen2_ascii ? "qwen2" : pattern && !strcmp(pattern, GPT2_REGEX) ? "gpt2"
                                                                                   : NULL;
    cJSON_Delete(root);
    root = NULL;
    if (pthread_mutex_init(&tok->mu, NULL) == 0) {
        if (pthread_key_create(&tok->key, sn_tok_tstate_release) == 0)
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
    tok->merge_pairs = sn_malloc((2 * v->n_merges + 1) * sizeof *tok->merge_pairs);
    tok->byte_merges = sn_malloc(256 * 256 * sizeof *tok->byte_merges);
    tok->added = sn_calloc(n_added ? n_added : 1, sizeof *tok->added);
    uint8_t *tmp = sn_malloc(3 * longest + 3);
    if (!tok->arena || !tok->tok_off || !tok->tok_len || !tok->tok_added || !tok->vmap ||
        !tok->merges || !tok->merge_pairs || !tok->byte_merges || !tok->added || !tmp) {
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
        tok->merge_pairs[2 * k] = ia;
        tok->merge_pairs[2 * k + 1] = ib;
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
        struct bl_bad bad = {.invalid_utf8 = true, .off = sn_tok_utf8_check((const uint8_t *)c, n)};
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
    tok->pre = tok->qwen2_ascii ? "qwen2" : "gpt2";
    if (v->hash)
        snprintf(tok->hash, sizeof tok->hash, "%s", v->hash);
    else
        arrays_hash(v, tok->hash);
    if (pthread_mutex_init(&tok->mu, NULL) == 0) {
        if (pthread_key_create(&tok->key, sn_tok_tstate_release) == 0)
            tok->key_ok = true;
        else
            pthread_mutex_destroy(&tok->mu);
    }
    *out = tok;
    return SN_OK;
}

/* ---- the arrays back out (tokenizer.h, sn_tokenizer_to_arrays) ----------------------------- */

void sn_tokenizer_arrays_free(struct sn_tokenizer_arrays *a)
{
    if (!a)
        return;
    for (size_t i = 0; a->tokens && i < a->n_tokens; i++)
        sn_free(a->tokens[i]);
    for (size_t i = 0; a->merges && i < a->n_merges; i++)
        sn_free(a->merges[i]);
    sn_free(a->tokens);
    sn_free(a->types);
    sn_free(a->merges);
    memset(a, 0, sizeof *a);
}

/* Token id's bytes in the ByteLevel alphabet (tokenizer_internal.h), a new string. */
static char *bytelevel_encode(const struct sn_tokenizer *tok, int32_t id)
{
    size_t n = tok->tok_len[id];
    char *s = sn_malloc(2 * n + 1);
    if (s)
        sn_bytelevel_write((const uint8_t *)tok->arena + tok->tok_off[id], n, s);
    return s;
}

int sn_tokenizer_to_arrays(const struct sn_tokenizer *tok, size_t n_ids,
                           struct sn_tokenizer_arrays *out, struct sn_err *err)
{
    memset(out, 0, sizeof *out);
    if (n_ids < tok->n_ids)
        return sn_err_set(err, SN_E_ARG, "tokenizer: %zu ids do not hold its vocabulary of %zu",
                          n_ids, tok->n_ids);
    out->pre = tok->pre;
    out->nfc = tok->nfc;
    out->n_tokens = n_ids;
    out->n_merges = tok->n_merges;
    out->tokens = sn_calloc(n_ids + 1, sizeof *out->tokens);
    out->types = sn_calloc(n_ids + 1, sizeof *out->types);
    out->merges = sn_calloc(tok->n_merges + 1, sizeof *out->merges);
    bool ok = out->tokens && out->types && out->merges;
    for (size_t i = 0; ok && i < n_ids; i++) {
        if (i >= tok->n_ids || tok->tok_len[i] == UINT32_MAX) {
            char b[32];   /* a hole: the model's vocab_size pads past the tokenizer */
            snprintf(b, sizeof b, "[PAD%zu]", i);
            out->tokens[i] = sn_strdup(b);
            out->types[i] = SN_TOKEN_UNUSED;
        } else if (tok->tok_added[i]) {
            size_t n = tok->tok_len[i];
            if ((out->tokens[i] = sn_malloc(n + 1))) {
                memcpy(out->tokens[i], tok->arena + tok->tok_off[i], n);
                out->tokens[i][n] = 0;
            }
            out->types[i] = sn_tokenizer_is_special(tok, (int32_t)i) ? SN_TOKEN_CONTROL
                                                                     : SN_TOKEN_USER_DEFINED;
        } else {
            out->tokens[i] = bytelevel_encode(tok, (int32_t)i);
            out->types[i] = SN_TOKEN_NORMAL;
        }
        ok = out->tokens[i] != NULL;
    }
    for (size_t k = 0; ok && k < tok->n_merges; k++) {
        char *a = bytelevel_encode(tok, tok->merge_pairs[2 * k]);
        char *b = bytelevel_encode(tok, tok->merge_pairs[2 * k + 1]);
        size_t n = a && b ? strlen(a) + strlen(b) + 2 : 0;
        if (n && (out->merges[k] = sn_malloc(n)))
            snprintf(out->merges[k], n, "%s %s", a, b);
        ok = out->merges[k] != NULL;
        sn_free(a);
        sn_free(b);
    }
    if (!ok) {
        sn_tokenizer_arrays_free(out);
        return sn_err_set(err, SN_E_NOMEM, "tokenizer: out of memory for %zu ids", n_ids);
    }
    return SN_OK;
}
