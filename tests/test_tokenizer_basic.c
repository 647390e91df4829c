/* tests/test_tokenizer_basic.c: BPE merge order on a hand-written tokenizer.json (expected ids
** worked out by hand below), the demo tokenizer (size, ids, determinism, hash), round trips,
** added tokens, errors (bad JSON, missing model, bad merges, invalid UTF-8 offsets, bad ids),
** and concurrent encoding from several threads. Qwen parity: test_tokenizer_golden.c and the
** npm test in tests/tokenizer.cmake. */
#include "testutil.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_internal.h"

#include <pthread.h>

static char dir[1024];

static void path_in(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", dir, name);
}

/* The demo tokenizer the first tests write; NULL if it does not open (reported there). */
static struct sn_tokenizer *open_demo(void)
{
    char p[1100];
    struct sn_err err = {0};
    struct sn_tokenizer *t = NULL;
    path_in(p, sizeof p, "demo.json");
    return sn_tokenizer_open(p, &t, &err) ? NULL : t;
}

/* ByteLevel form of raw bytes s, appended to b as a JSON string body. */
static void put_bl(struct sn_buf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t cp = sn_bytelevel_cp((uint8_t)s[i]);
        char u[3];
        if (cp < 0x80) {
            if (cp == '"' || cp == '\\')
                sn_buf_append(b, "\\", 1, NULL);
            u[0] = (char)cp;
            sn_buf_append(b, u, 1, NULL);
        } else {
            u[0] = (char)(0xC0 | cp >> 6);
            u[1] = (char)(0x80 | (cp & 0x3F));
            sn_buf_append(b, u, 2, NULL);
        }
    }
}

/* A tokenizer.json with the 256 byte tokens (id = byte), then extra tokens and merges.
** extra: NULL-terminated raw strings (ids 256, 257, ...); merges: pairs "left", "right"
** given as raw strings; string_form selects "a b" vs ["a","b"] for merge i when i is odd. */
static void write_hand(const char *path, const char *const *extra, const char *const *merges,
                       const char *normalizer, const char *pretok, const char *added)
{
    struct sn_buf b = {0};
    sn_buf_puts(&b, "{\"version\":\"1.0\",\"added_tokens\":[", NULL);
    sn_buf_puts(&b, added ? added : "", NULL);
    sn_buf_printf(&b, NULL, "],\"normalizer\":%s,\"pre_tokenizer\":%s,", normalizer, pretok);
    sn_buf_puts(&b, "\"decoder\":{\"type\":\"ByteLevel\"},\"model\":{\"type\":\"BPE\","
                    "\"vocab\":{", NULL);
    for (int i = 0; i < 256; i++) {
        char c = (char)i;
        sn_buf_puts(&b, i ? ",\"" : "\"", NULL);
        put_bl(&b, &c, 1);
        sn_buf_printf(&b, NULL, "\":%d", i);
    }
    int id = 256;
    for (int i = 0; extra && extra[i]; i++) {
        sn_buf_puts(&b, ",\"", NULL);
        put_bl(&b, extra[i], strlen(extra[i]));
        sn_buf_printf(&b, NULL, "\":%d", id++);
    }
    sn_buf_puts(&b, "},\"merges\":[", NULL);
    for (int i = 0; merges && merges[2 * i]; i++) {
        const char *l = merges[2 * i], *r = merges[2 * i + 1];
        sn_buf_puts(&b, i ? "," : "", NULL);
        if (i % 2) {
            sn_buf_puts(&b, "\"", NULL);
            put_bl(&b, l, strlen(l));
            sn_buf_puts(&b, " ", NULL);
            put_bl(&b, r, strlen(r));
            sn_buf_puts(&b, "\"", NULL);
        } else {
            sn_buf_puts(&b, "[\"", NULL);
            put_bl(&b, l, strlen(l));
            sn_buf_puts(&b, "\",\"", NULL);
            put_bl(&b, r, strlen(r));
            sn_buf_puts(&b, "\"]", NULL);
        }
    }
    sn_buf_puts(&b, "]}}\n", NULL);
    sn_test_write_file(path, b.data);
    sn_buf_free(&b);
}

#define QWEN_PRETOK                                                                          \
    "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":"  \
    "\"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}| ?"    \
    "[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"},"   \
    "\"behavior\":\"Isolated\",\"invert\":false},{\"type\":\"ByteLevel\","                   \
    "\"add_prefix_space\":false,\"use_regex\":false}]}"

static int enc(struct sn_tokenizer *t, const char *s, int32_t *want, size_t n_want)
{
    struct sn_ids ids = {0};
    struct sn_err err = {0};
    int rc = sn_tokenizer_encode(t, s, strlen(s), &ids, &err);
    int ok = rc == SN_OK && ids.n == n_want && !memcmp(ids.v, want, n_want * sizeof *want);
    if (!ok) {
        fprintf(stderr, "encode(\"%.40s\"): rc %d (%s) got %zu ids:", s, rc, err.msg, ids.n);
        for (size_t i = 0; i < ids.n && i < 40; i++)
            fprintf(stderr, " %d", ids.v[i]);
        fprintf(stderr, "\n");
    }
    sn_ids_free(&ids);
    return ok;
}

static void test_hand_bpe(void)
{
    char p[1100];
    path_in(p, sizeof p, "hand.json");
    /* ids: ab 256, bc 257, abc 258, cc 259, aa 260, abab 261 */
    const char *extra[] = {"ab", "bc", "abc", "cc", "aa", "abab", NULL};
    const char *merges[] = {"a", "b",  "b", "c",  "ab", "c",  "c", "c",
                            "a", "a",  "ab", "ab", NULL, NULL};
    write_hand(p, extra, merges, "null", QWEN_PRETOK,
               "{\"id\":262,\"content\":\"<x>\",\"special\":true},"
               "{\"id\":263,\"content\":\"<xy>\",\"special\":false}");
    struct sn_tokenizer *t = NULL;
    struct sn_err err = {0};
    CHECK_MSG(sn_tokenizer_open(p, &t, &err) == SN_OK, "%s", err.msg);
    if (!t)
        return;
    CHECK(sn_tokenizer_vocab_size(t) == 264);
    /* "abcc": pairs ab(0) bc(1) cc(3) -> merge ab -> [ab c c]: abc(2) cc(3) -> [abc c] */
    CHECK(enc(t, "abcc", (int32_t[]){258, 'c'}, 2));
    /* "bcc": bc(1) cc(3) -> [bc c]; (bc, c) is no merge */
    CHECK(enc(t, "bcc", (int32_t[]){257, 'c'}, 2));
    /* "aaa": a a (4) at 0 and 1: leftmost first -> [aa a] */
    CHECK(enc(t, "aaa", (int32_t[]){260, 'a'}, 2));
    /* "cab": ab(0) first -> [c ab]; (c, ab) no merge */
    CHECK(enc(t, "cab", (int32_t[]){'c', 256}, 2));
    /* (ab)^10 and (ab)^30 (the second takes the heap path, > 48 bytes): every ab first
    ** (rank 0), then abab (rank 5) pairs left to right: 5 and 15 x abab */
    char s[128];
    int32_t w[32];
    for (int i = 0; i < 30; i++)
        memcpy(s + 2 * i, "ab", 2);
    for (int i = 0; i < 15; i++)
        w[i] = 261;
    s[20] = 0;
    CHECK(enc(t, s, w, 5));
    s[20] = 'a';
    s[60] = 0;
    CHECK(enc(t, s, w, 15));
    /* (ab)^3 a then 'c': heap path too with an odd tail: 61 bytes "abab...ab" + "a" */
    s[60] = 'a';
    s[61] = 0;
    w[15] = 'a';
    CHECK(enc(t, s, w, 16));
    /* pre-tokenizer: a space before digits stands alone and digits split one by one;
    ** " abc" is one piece: ' ' a b c -> ab(0) -> [' ' ab c] -> abc(2) -> [' ' abc] */
    CHECK(enc(t, "abc 12", (int32_t[]){258, ' ', '1', '2'}, 4));
    CHECK(enc(t, "1 abc", (int32_t[]){'1', ' ', 258}, 3));
    /* added tokens: leftmost, then longest: "<xy>" beats "<x>" */
    CHECK(enc(t, "a<xy>b<x>", (int32_t[]){'a', 263, 'b', 262}, 4));
    CHECK(enc(t, "<x<x>", (int32_t[]){'<', 'x', 262}, 3));
    CHECK(sn_tokenizer_token_id(t, "<xy>") == 263);
    CHECK(sn_tokenizer_token_id(t, "abc") == 258);
    CHECK(sn_tokenizer_token_id(t, "zzz") == -1);
    CHECK(sn_tokenizer_is_special(t, 262) && !sn_tokenizer_is_special(t, 263));
    sn_tokenizer_free(t);
}

static void test_demo(void)
{
    char p[1100], p2[1100], hex[65];
    struct sn_err err = {0};
    path_in(p, sizeof p, "demo.json");
    path_in(p2, sizeof p2, "demo2.json");
    CHECK_MSG(sn_tokenizer_write_demo(p, &err) == SN_OK, "%s", err.msg);
    CHECK_MSG(sn_tokenizer_write_demo(p2, &err) == SN_OK, "%s", err.msg);
    struct sn_tokenizer *t = NULL, *t2 = NULL;
    CHECK_MSG(sn_tokenizer_open(p, &t, &err) == SN_OK, "%s", err.msg);
    CHECK_MSG(sn_tokenizer_open(p2, &t2, &err) == SN_OK, "%s", err.msg);
    if (!t || !t2)
        return;
    CHECK(sn_tokenizer_vocab_size(t) == SN_TOKENIZER_DEMO_VOCAB);
    CHECK(sn_tokenizer_token_id(t, "<|endoftext|>") == 509);
    CHECK(sn_tokenizer_token_id(t, "<|im_start|>") == 510);
    CHECK(sn_tokenizer_token_id(t, "<|im_end|>") == 511);
    CHECK(sn_tokenizer_token_id(t, "A") == 'A');
    CHECK(sn_tokenizer_token_id(t, " the") >= 256);      /* learned from the built-in text */
    CHECK(sn_tokenizer_is_special(t, 511));
    /* deterministic: two writes, same bytes, same hash; the hash is the file's SHA-256 */
    CHECK_STR(sn_tokenizer_hash(t), sn_tokenizer_hash(t2));
    CHECK(sn_sha256_file(p, hex, &err) == SN_OK);
    CHECK_STR(sn_tokenizer_hash(t), hex);
    CHECK(strlen(sn_tokenizer_hash(t)) == 64);

    const char *texts[] = {
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n",
        "The answer is (B) Jupiter; I'm sure. It's 12345 km.   \t\n\n  x  ",
        "Ünïcödé café naïve — 日本語のテキスト, 한국어, emoji 👩‍👩‍👧 🇫🇷 ✔️",
        "def f(x):\n\treturn x ** 2  # comment\r\n",
        "", " ", "\n", "a", "<|im_end|><|im_end|>", "<|im_end", "\xF0\x9F\x98\x80",
        "tail spaces   ", "\0mid\0nul",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        size_t n = i == sizeof texts / sizeof texts[0] - 1 ? 9 : strlen(texts[i]);
        struct sn_ids ids = {0};
        char *back = NULL;
        size_t bl = 0;
        CHECK_MSG(sn_tokenizer_encode(t, texts[i], n, &ids, &err) == SN_OK, "%s", err.msg);
        CHECK_MSG(sn_tokenizer_decode(t, ids.v, ids.n, &back, &bl, &err) == SN_OK, "%s",
                  err.msg);
        CHECK_MSG(back && bl == n && !memcmp(back, texts[i], n), "round trip of text %zu", i);
        if (n > 4)
            CHECK(ids.n < n); /* merges happened somewhere */
        sn_free(back);
        sn_ids_free(&ids);
    }
    /* NFC: e + U+0301 encodes like é and decodes to é (U+00E9) */
    struct sn_ids a = {0}, b = {0};
    char *back = NULL;
    size_t bl;
    CHECK(sn_tokenizer_encode(t, "cafe\xCC\x81", 6, &a, &err) == SN_OK);
    CHECK(sn_tokenizer_encode(t, "caf\xC3\xA9", 5, &b, &err) == SN_OK);
    CHECK(a.n == b.n && !memcmp(a.v, b.v, a.n * sizeof *a.v));
    CHECK(sn_tokenizer_decode(t, a.v, a.n, &back, &bl, &err) == SN_OK);
    CHECK_STR(back, "caf\xC3\xA9");
    sn_free(back);
    /* encode appends */
    size_t before = a.n;
    CHECK(sn_tokenizer_encode(t, "<|im_end|>", 10, &a, &err) == SN_OK);
    CHECK(a.n == before + 1 && a.v[before] == 511);
    /* decode: bad ids name their position */
    int32_t bad[] = {65, 512};
    sn_err_clear(&err);
    CHECK(sn_tokenizer_decode(t, bad, 2, &back, &bl, &err) == SN_E_ARG);
    CHECK_MSG(strstr(err.msg, "position 1") != NULL, "%s", err.msg);
    CHECK(back == NULL);
    bad[1] = -3;
    sn_err_clear(&err);
    CHECK(sn_tokenizer_decode(t, bad, 2, &back, &bl, &err) == SN_E_ARG);
    sn_ids_free(&a);
    sn_ids_free(&b);
    sn_tokenizer_free(t);
    sn_tokenizer_free(t2);
}

static void test_invalid_utf8(void)
{
    struct sn_err err = {0};
    struct sn_tokenizer *t = open_demo();
    if (!t)
        return;
    static const struct { const char *s; size_t n; size_t off; } cases[] = {
        {"ab\xFF" "cd", 5, 2},              /* byte that never occurs */
        {"abcdefghij\x80", 11, 10},         /* stray continuation after an 8-byte run */
        {"\xE6\x97", 2, 0},                 /* truncated 3-byte sequence */
        {"x\xC0\x80", 3, 1},                /* overlong NUL */
        {"ok \xED\xA0\x80", 6, 3},          /* UTF-16 surrogate */
        {"\xF4\x90\x80\x80", 4, 0},         /* above U+10FFFF */
        {"\xE2\x82\xAC\xE2\x28\xA1", 6, 3}, /* bad continuation after a good euro sign */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct sn_ids ids = {0};
        char want[64];
        sn_err_clear(&err);
        CHECK(sn_tokenizer_encode(t, cases[i].s, cases[i].n, &ids, &err) == SN_E_FORMAT);
        snprintf(want, sizeof want, "byte offset %zu ", cases[i].off);
        CHECK_MSG(strstr(err.msg, want) != NULL, "case %zu: '%s' lacks '%s'", i, err.msg, want);
        CHECK(ids.n == 0);
        sn_ids_free(&ids);
    }
    sn_tokenizer_free(t);
}

static void expect_open_error(const char *name, const char *text, int code, const char *want)
{
    char p[1100];
    struct sn_err err = {0};
    struct sn_tokenizer *t = (struct sn_tokenizer *)1;
    path_in(p, sizeof p, name);
    if (text)
        sn_test_write_file(p, text);
    CHECK_MSG(sn_tokenizer_open(p, &t, &err) == code, "%s: got '%s'", name, err.msg);
    CHECK(t == NULL);
    CHECK_MSG(strstr(err.msg, want) != NULL, "%s: '%s' lacks '%s'", name, err.msg, want);
    CHECK_MSG(strstr(err.msg, name) != NULL, "%s: '%s' does not name the file", name, err.msg);
}

static void test_errors(void)
{
    char p[1100];
    expect_open_error("missing.json", NULL, SN_E_IO, "missing.json");
    expect_open_error("badjson.json", "{\"model\": {\"vocab\": {\"a\": 1,}\n", SN_E_FORMAT,
                      "badjson.json:1:");
    expect_open_error("array.json", "[1, 2]", SN_E_FORMAT, "expected a JSON object");
    expect_open_error("nomodel.json", "{\"version\": \"1.0\"}", SN_E_FORMAT, "no 'model' object");
    expect_open_error("wordpiece.json", "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {}}}",
                      SN_E_UNSUPPORTED, "WordPiece");
    expect_open_error("nobytes.json", "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, "
                      "\"merges\": []}, \"pre_tokenizer\": {\"type\": \"ByteLevel\"}}",
                      SN_E_FORMAT, "no token for byte 0x00");
    expect_open_error("badid.json", "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -1}, "
                      "\"merges\": []}}", SN_E_FORMAT, "id must be an integer");
    /* a merge whose result is missing from the vocabulary names the merge */
    path_in(p, sizeof p, "badmerge.json");
    const char *merges[] = {"a", "b", "x", "y", NULL, NULL};
    const char *extra[] = {"ab", NULL};
    write_hand(p, extra, merges, "null", QWEN_PRETOK, NULL);
    expect_open_error("badmerge.json", NULL, SN_E_FORMAT, "model.merges[1]");
    merges[2] = NULL;
    write_hand(p, extra, merges, "{\"type\":\"Lowercase\"}", QWEN_PRETOK, NULL);
    expect_open_error("badmerge.json", NULL, SN_E_UNSUPPORTED, "Lowercase");
    /* a bad regex is reported with its offset */
    path_in(p, sizeof p, "badre.json");
    write_hand(p, NULL, NULL, "null", "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":"
               "\"Split\",\"pattern\":{\"Regex\":\"(ab\"},\"behavior\":\"Isolated\"},"
               "{\"type\":\"ByteLevel\",\"use_regex\":false}]}", NULL);
    expect_open_error("badre.json", NULL, SN_E_FORMAT, "regex does not compile");
    write_hand(p, NULL, NULL, "null", "{\"type\":\"Whitespace\"}", NULL);
    expect_open_error("badre.json", NULL, SN_E_UNSUPPORTED, "Whitespace");
}

/* Several threads encode the same texts at once (each with its own scratch and cache) and
** must agree with a single-threaded pass. */
struct thr {
    const struct sn_tokenizer *t;
    const char *text;
    size_t n;
    struct sn_ids ids;
    int rc;
};

static void *thr_run(void *arg)
{
    struct thr *a = arg;
    struct sn_err err = {0};
    for (int rep = 0; rep < 5 && !a->rc; rep++) {
        a->ids.n = 0;
        a->rc = sn_tokenizer_encode(a->t, a->text, a->n, &a->ids, &err);
    }
    return NULL;
}

static void test_threads(void)
{
    struct sn_err err = {0};
    struct sn_tokenizer *t = open_demo();
    if (!t)
        return;
    struct sn_buf text = {0};
    struct sn_rng rng;
    sn_rng_seed(&rng, 7);
    static const char *words[] = {"the ", "answer ", "is ", "Jupiter", ", ", "I'm ", "12 ",
                                  "日本 ", "café ", "\n", "<|im_end|>", "  ", "ok."};
    for (int i = 0; i < 20000; i++)
        sn_buf_puts(&text, words[sn_rng_below(&rng, sizeof words / sizeof words[0])], NULL);
    struct sn_ids ref = {0};
    CHECK(sn_tokenizer_encode(t, text.data, text.len, &ref, &err) == SN_OK);
    struct thr a[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (struct thr){t, text.data, text.len, {0}, 0};
        pthread_create(&th[i], NULL, thr_run, &a[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK(a[i].rc == SN_OK);
        CHECK(a[i].ids.n == ref.n && !memcmp(a[i].ids.v, ref.v, ref.n * sizeof *ref.v));
        sn_ids_free(&a[i].ids);
    }
    /* a second round reuses the scratch of the exited threads */
    for (int i = 0; i < 4; i++) {
        a[i] = (struct thr){t, text.data, text.len, {0}, 0};
        pthread_create(&th[i], NULL, thr_run, &a[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK(a[i].rc == SN_OK && a[i].ids.n == ref.n);
        sn_ids_free(&a[i].ids);
    }
    sn_ids_free(&ref);
    sn_buf_free(&text);
    sn_tokenizer_free(t);
}

/* Every allocation through sn_malloc failing in turn: a clean SN_E_NOMEM (or success), no
** leak (ASan), no half-written file, and encode leaves the output as it was. */
static void test_alloc_failures(void)
{
    char p[1100], p2[1100];
    struct sn_err err = {0};
    path_in(p, sizeof p, "demo.json");
    path_in(p2, sizeof p2, "demo-alloc.json");
    int ok_at = 0;
    for (int n = 1; n < 5000 && !ok_at; n++) {
        struct sn_tokenizer *t = NULL;
        sn_err_clear(&err);
        sn_alloc_fail_after((uint64_t)n);
        int rc = sn_tokenizer_open(p, &t, &err);
        sn_alloc_fail_after(0);
        if (rc == SN_OK)
            ok_at = n;
        else
            CHECK_MSG(rc == SN_E_NOMEM && t == NULL, "open, failing alloc %d: %d %s", n, rc,
                      err.msg);
        sn_tokenizer_free(t);
    }
    CHECK(ok_at > 5);
    ok_at = 0;
    /* write_demo makes ~900 allocations and trains BPE each time: every one of the first 40,
    ** then every 23rd */
    for (int n = 1; n < 5000 && !ok_at; n += n < 40 ? 1 : 23) {
        sn_err_clear(&err);
        remove(p2);
        sn_alloc_fail_after((uint64_t)n);
        int rc = sn_tokenizer_write_demo(p2, &err);
        sn_alloc_fail_after(0);
        if (rc == SN_OK)
            ok_at = n;
        else
            CHECK_MSG(rc == SN_E_NOMEM && !sn_path_exists(p2), "write_demo, alloc %d: %s", n,
                      err.msg);
    }
    CHECK(ok_at > 5);
    const char *text = "The answer is (B) Jupiter, I'm sure. <|im_end|> 日本語 cafe\xCC\x81 "
                       "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    ok_at = 0;
    for (int n = 1; n < 5000 && !ok_at; n++) {
        struct sn_tokenizer *t = NULL;
        struct sn_ids ids = {0};
        if (sn_tokenizer_open(p, &t, &err))
            break;
        sn_ids_push(&ids, 7, &err);
        sn_err_clear(&err);
        sn_alloc_fail_after((uint64_t)n);
        int rc = sn_tokenizer_encode(t, text, strlen(text), &ids, &err);
        sn_alloc_fail_after(0);
        if (rc == SN_OK)
            ok_at = n;
        else
            CHECK_MSG(rc == SN_E_NOMEM && ids.n == 1 && ids.v[0] == 7, "encode, alloc %d: %s",
                      n, err.msg);
        sn_ids_free(&ids);
        sn_tokenizer_free(t);
    }
    CHECK(ok_at > 1);
}

/* The ASCII fast path for the exact Qwen2 pattern against PCRE2: the same pattern wrapped in
** (?:...) (which turns the fast path off) must give the same ids on random strings over an
** alphabet of the classes that matter (letters, digits, apostrophes, spaces, CR/LF, other
** ASCII, controls, non-ASCII letters and spaces). */
static void test_fast_path(void)
{
    char p[1100], p2[1100];
    struct sn_err err = {0};
    struct sn_tokenizer *fast = NULL, *slow = NULL;
    path_in(p, sizeof p, "demo.json");
    path_in(p2, sizeof p2, "demo-slow.json");
    char *text = NULL;
    size_t len = 0;
    CHECK(sn_file_read(p, 0, &text, &len, &err) == SN_OK);
    char *at = text ? strstr(text, "\"Regex\":") : NULL;
    CHECK(at != NULL);
    if (!at)
        return;
    at = strchr(at + 8, '"');
    struct sn_buf b = {0};
    sn_buf_append(&b, text, (size_t)(at - text) + 1, NULL);
    sn_buf_puts(&b, "(?:", NULL);
    char *end = strstr(at + 1, "\"\n"); /* the pattern is the last key of its object */
    CHECK(end != NULL);
    if (!end)
        return;
    sn_buf_append(&b, at + 1, (size_t)(end - at - 1), NULL);
    sn_buf_puts(&b, ")", NULL);
    sn_buf_puts(&b, end, NULL);
    sn_test_write_file(p2, b.data);
    CHECK_MSG(sn_tokenizer_open(p, &fast, &err) == SN_OK, "%s", err.msg);
    CHECK_MSG(sn_tokenizer_open(p2, &slow, &err) == SN_OK, "%s", err.msg);
    static const char *alpha[] = {"a", "Z", "q", "s", "t", "re", "LL", "ve", "7", "0", "'", "'",
                                  " ", " ", "  ", "\t", "\n", "\r", "\v", "\f", ".", "!", "(",
                                  "\x01", "\x1c", "\x7f", "\xC3\xA9", "\xC2\xA0", "\xC5\xBF",
                                  "\xE3\x80\x80", "\xE2\x82\xAC", "<|im_end|>"};
    struct sn_rng rng;
    sn_rng_seed(&rng, 99);
    int bad = 0;
    for (int i = 0; i < 3000 && fast && slow; i++) {
        struct sn_buf t = {0};
        struct sn_ids a = {0}, c = {0};
        int k = 1 + (int)sn_rng_below(&rng, 24);
        for (int j = 0; j < k; j++)
            sn_buf_puts(&t, alpha[sn_rng_below(&rng, sizeof alpha / sizeof alpha[0])], NULL);
        CHECK(sn_tokenizer_encode(fast, t.data, t.len, &a, &err) == SN_OK);
        CHECK(sn_tokenizer_encode(slow, t.data, t.len, &c, &err) == SN_OK);
        if (a.n != c.n || memcmp(a.v, c.v, a.n * sizeof *a.v)) {
            if (bad++ < 5)
                fprintf(stderr, "fast path differs on %zu bytes: %s\n", t.len, t.data);
        }
        sn_buf_free(&t);
        sn_ids_free(&a);
        sn_ids_free(&c);
    }
    CHECK_MSG(bad == 0, "%d strings differ", bad);
    sn_buf_free(&b);
    sn_free(text);
    sn_tokenizer_free(fast);
    sn_tokenizer_free(slow);
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s", sn_test_dir("tokenizer_basic"));
    test_hand_bpe();
    test_demo();
    test_invalid_utf8();
    test_errors();
    test_threads();
    test_fast_path();
    test_alloc_failures();
    return sn_test_done();
}
