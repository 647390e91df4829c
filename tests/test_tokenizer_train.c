/* tests/test_tokenizer_train.c: the byte-level BPE trainer (tokenizer.h, sn_bpe_trainer_*):
** a toy corpus whose merges are worked out by hand below; the tie rules; overlapping pairs;
** the incremental counts against a full recount on random corpora; special tokens cut out;
** NFC; the written tokenizer.json loads and encodes the toy words to single ids; determinism;
** refusals of bad params and input; failed allocations. */
#include "tests/testutil.h"
#include "tokenizer/tokenizer.h"

#include <stdlib.h>
#include <string.h>

static char dir[1024];

/* Each text is added n times as its own document: a word of letters only is one pre-token. */
struct doc {
    const char *text;
    int n;
};

static int train(const struct doc *docs, size_t n_docs, size_t vocab, uint64_t min_f,
                 const char *path, struct sn_bpe_train_report *rep, struct sn_err *err)
{
    struct sn_bpe_train_params p = sn_bpe_train_default_params();
    struct sn_bpe_trainer *t = NULL;
    p.vocab_size = vocab;
    p.min_frequency = min_f;
    int rc = sn_bpe_trainer_create(&p, &t, err);
    for (size_t i = 0; !rc && i < n_docs; i++)
        for (int k = 0; !rc && k < docs[i].n; k++)
            rc = sn_bpe_trainer_add(t, docs[i].text, strlen(docs[i].text), err);
    if (!rc)
        rc = sn_bpe_trainer_train(t, rep, err);
    if (!rc)
        rc = sn_bpe_trainer_write(t, path, err);
    sn_bpe_trainer_free(t);
    return rc;
}

/* The merges of the tokenizer.json at path, as sn_tokenizer_to_arrays gives them ("a b" in the
** ByteLevel alphabet), checked against want[0..n_want). */
static void check_merges(const char *path, const char *const *want, size_t n_want,
                         const char *what)
{
    struct sn_err err = {0};
    struct sn_tokenizer *tok = NULL;
    struct sn_tokenizer_arrays a;
    memset(&a, 0, sizeof a);
    CHECK_MSG(sn_tokenizer_open(path, &tok, &err) == SN_OK, "%s: %s", what, err.msg);
    if (!tok)
        return;
    CHECK(sn_tokenizer_to_arrays(tok, sn_tokenizer_vocab_size(tok), &a, &err) == SN_OK);
    CHECK_MSG(a.n_merges == n_want, "%s: %zu merges, want %zu", what, a.n_merges, n_want);
    for (size_t i = 0; i < a.n_merges && i < n_want; i++)
        CHECK_MSG(!strcmp(a.merges[i], want[i]), "%s: merge %zu is '%s', want '%s'", what, i,
                  a.merges[i], want[i]);
    sn_tokenizer_arrays_free(&a);
    sn_tokenizer_free(tok);
}

/* Sennrich et al.'s example: low x5, lower x2, newest x6, widest x3. Initial pair counts
** (byte ids: d 100, e 101, i 105, l 108, n 110, o 111, r 114, s 115, t 116, w 119):
**   lo 7, ow 7, we 8, er 2, ne 6, ew 6, es 9, st 9, wi 3, id 3, de 3.
**  1. es 9 = st 9: left e (101) < s (115): "e s" -> es (256). newest = n e w es t,
**     widest = w i d es t: we 2, st 0, de 0; (es,t) 9, (w,es) 6, (d,es) 3.
**  2. (es,t) 9: "es t" -> est (257).
**  3. lo 7 = ow 7: l < o: "l o" -> lo (258); then (lo,w) 7, ow 0.
**  4. "lo w" -> low (259); lower = low e r: (low,e) 2, er 2.
**  5. ne 6, ew 6, (w,est) 6: smallest left is e: "e w" -> ew (260); (n,ew) 6, (ew,est) 6.
**  6. n (110) < ew (260): "n ew" -> new (261).  7. "new est" -> newest (262).
**  8. wi 3, id 3, (d,est) 3: left d (100) smallest: "d est" -> dest (263).
**  9. wi 3 = (i,dest) 3: i < w: "i dest" -> idest (264).  10. "w idest" -> widest (265).
** 11. (low,e) 2 = er 2: e (101) < low (259): "e r" -> er (266).  12. "low er" -> lower (267).
** Then no pair is left: 268 tokens + 3 ChatML = 271 ids. */
static const struct doc sennrich[] = {{"low", 5}, {"lower", 2}, {"newest", 6}, {"widest", 3}};
static const char *const sennrich_merges[] = {
    "e s", "es t", "l o", "lo w", "e w", "n ew", "new est", "d est", "i dest", "w idest",
    "e r", "low er"};

static void test_golden(void)
{
    char p[1200];
    struct sn_err err = {0};
    struct sn_bpe_train_report rep;
    snprintf(p, sizeof p, "%s/sennrich.json", dir);
    CHECK_MSG(train(sennrich, 4, 1000, 1, p, &rep, &err) == SN_OK, "%s", err.msg);
    check_merges(p, sennrich_merges, 12, "sennrich");
    CHECK(rep.n_merges == 12 && rep.vocab_size == 271 && rep.ran_out);
    CHECK(rep.n_words == 4 && rep.n_pretokens == 16 && rep.bytes == 5 * 3 + 2 * 5 + 6 * 6 + 3 * 6);
    struct sn_tokenizer *tok = NULL;
    CHECK(sn_tokenizer_open(p, &tok, &err) == SN_OK);
    if (tok) {
        static const char *const words[] = {"low", "lower", "newest", "widest"};
        static const int32_t ids[] = {259, 267, 262, 265};
        for (int i = 0; i < 4; i++) {
            struct sn_ids out = {0};
            CHECK(sn_tokenizer_encode(tok, words[i], strlen(words[i]), &out, &err) == SN_OK);
            CHECK_MSG(out.n == 1 && out.v[0] == ids[i], "'%s' encodes to %zu ids", words[i],
                      out.n);
            sn_ids_free(&out);
        }
        CHECK(sn_tokenizer_vocab_size(tok) == 271);
        CHECK(sn_tokenizer_token_id(tok, "<|endoftext|>") == 268);
        CHECK(sn_tokenizer_token_id(tok, "<|im_end|>") == 270 && sn_tokenizer_is_special(tok, 270));
        sn_tokenizer_free(tok);
    }
    /* vocab_size stops it: 256 + 5 learned + 3 specials = 264 ids, the first 5 merges */
    CHECK(train(sennrich, 4, 264, 1, p, &rep, &err) == SN_OK);
    check_merges(p, sennrich_merges, 5, "sennrich, 264 ids");
    CHECK(rep.vocab_size == 264 && !rep.ran_out);
    /* min_frequency 3: merges 11 and 12 (count 2) are not made */
    CHECK(train(sennrich, 4, 1000, 3, p, &rep, &err) == SN_OK);
    check_merges(p, sennrich_merges, 10, "sennrich, min_frequency 3");
    CHECK(rep.ran_out && rep.vocab_size == 256 + 10 + 3);
}

/* Ties on the left id go to the smaller right id: ac x2, ab x2 -> "a b" first (b 98 < c 99).
** Overlapping pairs count each time, as a full recount does: aaaaa has (a,a) 4 times;
** "a a" -> aa leaves aa aa a: (aa,aa) 1 = (aa,a) 1, right a (97) < aa (256): "aa a" -> aaa,
** then "aa aaa". */
static void test_ties(void)
{
    char p[1200];
    struct sn_err err = {0};
    struct sn_bpe_train_report rep;
    snprintf(p, sizeof p, "%s/ties.json", dir);
    static const struct doc d1[] = {{"ac", 2}, {"ab", 2}};
    static const char *const m1[] = {"a b", "a c"};
    CHECK(train(d1, 2, 1000, 1, p, &rep, &err) == SN_OK);
    check_merges(p, m1, 2, "right-id tie");
    static const struct doc d2[] = {{"aaaaa", 1}};
    static const char *const m2[] = {"a a", "aa a", "aa aaa"};
    CHECK(train(d2, 1, 1000, 1, p, &rep, &err) == SN_OK);
    check_merges(p, m2, 3, "overlapping pairs");
}

/* ---- the incremental counts against a full recount ----------------------------------------- */

/* A full recount per merge, the demo tokenizer's original algorithm (ties: smallest left id,
** then smallest right id), on words given as letter strings with counts; fills merges "a|b"
** as token-id pairs. Returns the number of merges. */
static size_t recount_train(char **words, const int *freq, size_t n_words, size_t n_learn,
                            int32_t (*merges)[2])
{
    int32_t **ids = calloc(n_words, sizeof *ids);
    size_t *len = calloc(n_words, sizeof *len), n_merges = 0;
    char **tok = calloc(256 + n_learn, sizeof *tok);
    size_t *tlen = calloc(256 + n_learn, sizeof *tlen), n_tok = 256;
    static int64_t count[256 + 160][256 + 160];
    for (size_t w = 0; w < n_words; w++) {
        len[w] = strlen(words[w]);
        ids[w] = malloc(len[w] * sizeof **ids);
        for (size_t i = 0; i < len[w]; i++)
            ids[w][i] = (uint8_t)words[w][i];
    }
    for (int b = 0; b < 256; b++) {
        tok[b] = malloc(1);
        tok[b][0] = (char)b;
        tlen[b] = 1;
    }
    while (n_tok < 256 + n_learn) {
        memset(count, 0, sizeof count);
        for (size_t w = 0; w < n_words; w++)
            for (size_t i = 0; i + 1 < len[w]; i++)
                count[ids[w][i]][ids[w][i + 1]] += freq[w];
        int32_t ba = -1, bb = -1;
        int64_t best = 0;
        for (int32_t a = 0; a < (int32_t)n_tok; a++)
            for (int32_t b = 0; b < (int32_t)n_tok; b++)
                if (count[a][b] > best) {
                    best = count[a][b];
                    ba = a;
                    bb = b;
                }
        if (ba < 0)
            break;
        char *s = malloc(tlen[ba] + tlen[bb]);
        memcpy(s, tok[ba], tlen[ba]);
        memcpy(s + tlen[ba], tok[bb], tlen[bb]);
        int32_t nid = -1;
        for (size_t t = 0; t < n_tok; t++)
            if (tlen[t] == tlen[ba] + tlen[bb] && !memcmp(tok[t], s, tlen[t]))
                nid = (int32_t)t;
        if (nid < 0) {
            nid = (int32_t)n_tok;
            tok[n_tok] = s;
            tlen[n_tok++] = tlen[ba] + tlen[bb];
        } else {
            free(s);
        }
        merges[n_merges][0] = ba;
        merges[n_merges++][1] = bb;
        for (size_t w = 0; w < n_words; w++) {
            size_t o = 0;
            for (size_t i = 0; i < len[w]; i++) {
                if (i + 1 < len[w] && ids[w][i] == ba && ids[w][i + 1] == bb) {
                    ids[w][o++] = nid;
                    i++;
                } else {
                    ids[w][o++] = ids[w][i];
                }
            }
            len[w] = o;
        }
    }
    for (size_t w = 0; w < n_words; w++)
        free(ids[w]);
    for (size_t t = 0; t < n_tok; t++)
        free(tok[t]);
    free(ids);
    free(len);
    free(tok);
    free(tlen);
    return n_merges;
}

/* Random words over a two- or three-letter alphabet (many repeats, overlapping pairs and ties,
** and stale entries in the trainer's lists and heap): the trainer's merges equal the full
** recount's, merge by merge (up to 150 merges each). */
static void test_recount(void)
{
    uint64_t s = 12345;
    char p[1200];
    snprintf(p, sizeof p, "%s/random.json", dir);
    for (int round = 0; round < 30; round++) {
        enum { NW = 40, LEARN = 150 };
        char *words[NW];
        int freq[NW];
        struct doc docs[NW];
        for (int w = 0; w < NW; w++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            size_t len = 1 + (s >> 33) % 24;
            words[w] = malloc(len + 1);
            for (size_t i = 0; i < len; i++) {
                s = s * 6364136223846793005ull + 1442695040888963407ull;
                words[w][i] = (char)('a' + (s >> 33) % (round % 2 ? 2 : 3));
            }
            words[w][len] = 0;
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            freq[w] = 1 + (int)((s >> 33) % 5);
            docs[w].text = words[w];
            docs[w].n = freq[w];
        }
        static int32_t want[LEARN * 4][2];
        size_t n_want = recount_train(words, freq, NW, LEARN, want);
        struct sn_err err = {0};
        struct sn_bpe_train_report rep;
        CHECK_MSG(train(docs, NW, 256 + LEARN + 3, 1, p, &rep, &err) == SN_OK, "%s", err.msg);
        struct sn_tokenizer *tok = NULL;
        struct sn_tokenizer_arrays a;
        memset(&a, 0, sizeof a);
        CHECK(sn_tokenizer_open(p, &tok, &err) == SN_OK);
        if (tok && sn_tokenizer_to_arrays(tok, sn_tokenizer_vocab_size(tok), &a, &err) == SN_OK) {
            CHECK_MSG(a.n_merges == n_want, "round %d: %zu merges, the recount %zu", round,
                      a.n_merges, n_want);
            for (size_t i = 0; i < a.n_merges && i < n_want; i++) {
                /* the recount's pair as "a b" in the ByteLevel alphabet (letters stand for
                ** themselves) */
                char buf[256];
                size_t o = 0;
                for (int side = 0; side < 2; side++) {
                    const char *t = a.tokens[want[i][side]];
                    size_t l = strlen(t);
                    memcpy(buf + o, t, l);
                    o += l;
                    if (!side)
                        buf[o++] = ' ';
                }
                buf[o] = 0;
                CHECK_MSG(!strcmp(a.merges[i], buf), "round %d merge %zu: '%s', the recount "
                          "'%s'", round, i, a.merges[i], buf);
                if (strcmp(a.merges[i], buf))
                    break;
            }
        }
        sn_tokenizer_arrays_free(&a);
        sn_tokenizer_free(tok);
        for (int w = 0; w < NW; w++)
            free(words[w]);
    }
}

/* ---- text handling ------------------------------------------------------------------------- */

static char *slurp(const char *path, size_t *n)
{
    char *s = NULL;
    struct sn_err err = {0};
    if (sn_file_read(path, 0, &s, n, &err))
        return NULL;
    return s;
}

static void test_text(void)
{
    char p[1200], q[1200];
    struct sn_err err = {0};
    struct sn_bpe_train_report rep;
    snprintf(p, sizeof p, "%s/text1.json", dir);
    snprintf(q, sizeof q, "%s/text2.json", dir);
    /* Special tokens are cut out: no merge ever joins a byte of one to its neighbours, and
    ** the bytes counted leave them out. */
    static const struct doc sp[] = {{"x<|im_end|>y<|im_start|>x<|im_end|>", 3}};
    CHECK(train(sp, 1, 1000, 1, p, &rep, &err) == SN_OK);
    CHECK_MSG(rep.bytes == 9 && rep.n_merges == 0 && rep.ran_out, "bytes %llu merges %zu",
              (unsigned long long)rep.bytes, rep.n_merges);
    /* NFC: e + U+0301 (combining acute) is learned as é (C3 A9), "Ã ©" in the ByteLevel
    ** alphabet */
    static const struct doc nfc[] = {{"e\xcc\x81", 2}};
    static const char *const m_nfc[] = {"\xc3\x83 \xc2\xa9"};
    CHECK(train(nfc, 1, 1000, 1, p, &rep, &err) == SN_OK);
    check_merges(p, m_nfc, 1, "NFC");
    /* Determinism: the same pre-tokens in another order give the same bytes. */
    static const struct doc ord[] = {{"widest", 3}, {"newest", 6}, {"lower", 2}, {"low", 5}};
    CHECK(train(sennrich, 4, 1000, 1, p, &rep, &err) == SN_OK);
    CHECK(train(ord, 4, 1000, 1, q, &rep, &err) == SN_OK);
    size_t n1 = 0, n2 = 0;
    char *a = slurp(p, &n1), *b = slurp(q, &n2);
    CHECK(a && b && n1 == n2 && !memcmp(a, b, n1));
    sn_free(a);
    sn_free(b);
    /* Real text: the pre-tokenizer's pieces, with spaces and newlines; a token may be long */
    struct sn_bpe_train_params prm = sn_bpe_train_default_params();
    struct sn_bpe_trainer *t = NULL;
    prm.vocab_size = 400;
    prm.min_frequency = 2;
    CHECK(sn_bpe_trainer_create(&prm, &t, &err) == SN_OK);
    if (t) {
        struct sn_buf txt = {0};
        for (int i = 0; i < 50; i++)
            sn_buf_printf(&txt, NULL, "The answer is (B) Jupiter, %d.%*s\n", i, 150, "");
        CHECK(sn_bpe_trainer_add(t, txt.data, txt.len, &err) == SN_OK);
        CHECK(sn_bpe_trainer_train(t, &rep, &err) == SN_OK);
        CHECK(sn_bpe_trainer_write(t, p, &err) == SN_OK);
        sn_buf_free(&txt);
        sn_bpe_trainer_free(t);
        struct sn_tokenizer *tok = NULL;
        CHECK(sn_tokenizer_open(p, &tok, &err) == SN_OK);
        if (tok) {
            CHECK(sn_tokenizer_token_id(tok, " Jupiter") >= 256);
            /* 150 spaces and the newline are one pre-token seen 50 times: learned whole, a
            ** token longer than the writer's stack buffer */
            char sp150[152];
            memset(sp150, ' ', 150);
            sp150[150] = '\n';
            sp150[151] = 0;
            CHECK(sn_tokenizer_token_id(tok, sp150) >= 256);
            CHECK(rep.vocab_size <= 400);
            sn_tokenizer_free(tok);
        }
    }
}

/* ---- refusals ------------------------------------------------------------------------------- */

static void test_refusals(void)
{
    struct sn_bpe_train_params p = sn_bpe_train_default_params();
    struct sn_bpe_trainer *t = NULL;
    struct sn_err err = {0};
    /* smaller than the 256 bytes + 3 ChatML tokens */
    p.vocab_size = 258;
    CHECK(sn_bpe_trainer_create(&p, &t, &err) == SN_E_ARG && !t);
    CHECK_MSG(strstr(err.msg, "at least 259"), "%s", err.msg);
    static const char *const dup[] = {"<a>", "<b>", "<a>"};
    static const char *const empty[] = {"<a>", ""};
    p = sn_bpe_train_default_params();
    p.specials = dup;
    p.n_specials = 3;
    memset(&err, 0, sizeof err);
    CHECK(sn_bpe_trainer_create(&p, &t, &err) == SN_E_ARG);
    CHECK_MSG(strstr(err.msg, "'<a>' is given twice"), "%s", err.msg);
    p.specials = empty;
    p.n_specials = 2;
    memset(&err, 0, sizeof err);
    CHECK(sn_bpe_trainer_create(&p, &t, &err) == SN_E_ARG);
    CHECK_MSG(strstr(err.msg, "special token 2 is empty"), "%s", err.msg);
    /* no specials: 256 ids is enough */
    p.specials = empty;
    p.n_specials = 0;
    p.vocab_size = 256;
    memset(&err, 0, sizeof err);
    CHECK(sn_bpe_trainer_create(&p, &t, &err) == SN_OK);
    sn_bpe_trainer_free(t);
    t = NULL;
    /* empty corpus; invalid UTF-8 names the byte */
    p = sn_bpe_train_default_params();
    CHECK(sn_bpe_trainer_create(&p, &t, &err) == SN_OK);
    if (!t)
        return;
    memset(&err, 0, sizeof err);
    CHECK(sn_bpe_trainer_add(t, "ab\xff", 3, &err) == SN_E_FORMAT);
    CHECK_MSG(strstr(err.msg, "invalid UTF-8 at byte 2"), "%s", err.msg);
    CHECK(sn_bpe_trainer_add(t, "", 0, &err) == SN_OK);
    memset(&err, 0, sizeof err);
    CHECK(sn_bpe_trainer_train(t, NULL, &err) == SN_E_ARG && strstr(err.msg, "empty corpus"));
    memset(&err, 0, sizeof err);
    CHECK(sn_bpe_trainer_add(t, "a", 1, &err) == SN_E_ARG);
    sn_bpe_trainer_free(t);
}

/* Every allocation may fail: the error is SN_E_NOMEM, nothing is written, nothing leaks (the
** ASan build checks that); the corpus has enough distinct words to grow every table. */
static void test_alloc_failures(void)
{
    struct sn_buf txt = {0};
    char p[1200];
    snprintf(p, sizeof p, "%s/alloc.json", dir);
    for (int i = 0; i < 3000; i++)
        sn_buf_printf(&txt, NULL, "w%dx%d q%d ", i * 7919 % 1000, i % 37, i % 11);
    int ok_at = 0;
    for (int n = 1; n < 20000 && !ok_at; n += n < 60 ? 1 : 97) {
        struct sn_bpe_train_params prm = sn_bpe_train_default_params();
        struct sn_bpe_trainer *t = NULL;
        struct sn_err err = {0};
        prm.vocab_size = 600;
        remove(p);
        sn_alloc_fail_after((uint64_t)n);
        int rc = sn_bpe_trainer_create(&prm, &t, &err);
        if (!rc)
            rc = sn_bpe_trainer_add(t, txt.data, txt.len, &err);
        if (!rc)
            rc = sn_bpe_trainer_train(t, NULL, &err);
        if (!rc)
            rc = sn_bpe_trainer_write(t, p, &err);
        sn_alloc_fail_after(0);
        sn_bpe_trainer_free(t);
        if (rc == SN_OK)
            ok_at = n;
        else
            CHECK_MSG(rc == SN_E_NOMEM && !sn_path_exists(p), "alloc %d: %d %s", n, rc, err.msg);
    }
    CHECK(ok_at > 100);
    sn_buf_free(&txt);
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s", sn_test_dir("tokenizer_train"));
    test_golden();
    test_ties();
    test_recount();
    test_text();
    test_refusals();
    test_alloc_failures();
    return sn_test_done();
}
