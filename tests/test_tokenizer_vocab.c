/* tests/test_tokenizer_vocab.c: sn_tokenizer_create (a tokenizer from in-memory vocab, merges
** and token types, the GGUF route) against sn_tokenizer_open on the same tokenizer.json.
** The arrays are converted here, independently of export/, the way llama.cpp's converter
** does it: model.vocab entries are NORMAL (ByteLevel strings), added tokens CONTROL (special)
** or USER_DEFINED (raw text), holes UNUSED "[PAD{i}]"; merges as "a b".
**   - demo tokenizer: every golden string of tests/ref/tokenizer_golden.json gives the same
**     ids both ways, and both equal the golden HF ids; the hash given is reported back.
**   - the Qwen tokenizer.json when present (as in test_tokenizer_golden.c), else skipped.
**   - broken arrays: each is refused with a message naming the problem.
**   - a vocabulary entry holding U+FFFD (valid UTF-8, EF BF BD) and one holding invalid UTF-8,
**     in a tokenizer.json and in arrays: two different messages, the entry named and escaped. */
#include "testutil.h"
#include "tokenizer/tokenizer.h"

struct arrays {
    char   **tokens;
    int32_t *types;
    size_t   n;
    char   **merges;
    size_t   n_merges;
};

static void arrays_free(struct arrays *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->tokens[i]);
    for (size_t i = 0; i < a->n_merges; i++)
        free(a->merges[i]);
    free(a->tokens);
    free(a->types);
    free(a->merges);
    memset(a, 0, sizeof *a);
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    memcpy(d, s, n + 1);
    return d;
}

static int to_arrays(const char *path, struct arrays *a)
{
    cJSON *root = NULL;
    struct sn_err err = {0};
    memset(a, 0, sizeof *a);
    if (sn_json_load(path, &root, &err))
        return -1;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens"), *x;
    int max = -1;
    cJSON_ArrayForEach(x, vocab) max = x->valueint > max ? x->valueint : max;
    cJSON_ArrayForEach(x, added) {
        int id = cJSON_GetObjectItemCaseSensitive(x, "id")->valueint;
        max = id > max ? id : max;
    }
    a->n = (size_t)max + 1;
    a->tokens = calloc(a->n, sizeof *a->tokens);
    a->types = calloc(a->n, sizeof *a->types);
    cJSON_ArrayForEach(x, vocab) {
        a->tokens[x->valueint] = dup_str(x->string);
        a->types[x->valueint] = SN_TOKEN_NORMAL;
    }
    cJSON_ArrayForEach(x, added) {
        int id = cJSON_GetObjectItemCaseSensitive(x, "id")->valueint;
        free(a->tokens[id]);
        a->tokens[id] = dup_str(cJSON_GetObjectItemCaseSensitive(x, "content")->valuestring);
        a->types[id] = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(x, "special"))
                           ? SN_TOKEN_CONTROL : SN_TOKEN_USER_DEFINED;
    }
    for (size_t i = 0; i < a->n; i++)
        if (!a->tokens[i]) {
            char b[32];
            snprintf(b, sizeof b, "[PAD%zu]", i);
            a->tokens[i] = dup_str(b);
            a->types[i] = SN_TOKEN_UNUSED;
        }
    a->n_merges = (size_t)cJSON_GetArraySize(merges);
    a->merges = calloc(a->n_merges + 1, sizeof *a->merges);
    size_t k = 0;
    cJSON_ArrayForEach(x, merges) {
        if (cJSON_IsString(x)) {
            a->merges[k++] = dup_str(x->valuestring);
        } else {
            const char *l = cJSON_GetArrayItem(x, 0)->valuestring;
            const char *r = cJSON_GetArrayItem(x, 1)->valuestring;
            a->merges[k] = malloc(strlen(l) + strlen(r) + 2);
            snprintf(a->merges[k], strlen(l) + strlen(r) + 2, "%s %s", l, r);
            k++;
        }
    }
    cJSON_Delete(root);
    return 0;
}

static struct sn_tokenizer_vocab vocab_of(const struct arrays *a)
{
    struct sn_tokenizer_vocab v = {0};
    v.tokens = (const char *const *)a->tokens;
    v.types = a->types;
    v.n_tokens = a->n;
    v.merges = (const char *const *)a->merges;
    v.n_merges = a->n_merges;
    v.pre = "qwen2";
    v.nfc = true;
    return v;
}

/* Both tokenizers on every golden string (and its golden ids when field != NULL). */
static void compare(const struct sn_tokenizer *a, const struct sn_tokenizer *b,
                    const cJSON *cases, const char *field)
{
    const cJSON *c;
    int i = 0, bad = 0;
    cJSON_ArrayForEach(c, cases) {
        const char *text = cJSON_GetObjectItemCaseSensitive(c, "text")->valuestring;
        const cJSON *want = field ? cJSON_GetObjectItemCaseSensitive(c, field) : NULL;
        struct sn_ids x = {0}, y = {0};
        struct sn_err err = {0};
        CHECK_MSG(sn_tokenizer_encode(a, text, strlen(text), &x, &err) == SN_OK, "%s", err.msg);
        CHECK_MSG(sn_tokenizer_encode(b, text, strlen(text), &y, &err) == SN_OK, "%s", err.msg);
        bool same = x.n == y.n && (x.n == 0 || !memcmp(x.v, y.v, x.n * sizeof *x.v));
        if (want && (size_t)cJSON_GetArraySize(want) == y.n) {
            for (size_t k = 0; k < y.n; k++)
                same &= y.v[k] == (int32_t)cJSON_GetArrayItem(want, (int)k)->valuedouble;
        } else if (want) {
            same = false;
        }
        CHECK_MSG(same, "case %d (%.50s): json %zu ids, arrays %zu ids", i, text, x.n, y.n);
        bad += !same;
        sn_ids_free(&x);
        sn_ids_free(&y);
        i++;
    }
    printf("%d strings, %d differ\n", i, bad);
}

static void expect_fail(const struct sn_tokenizer_vocab *v, const char *what, const char *needle)
{
    struct sn_tokenizer *t = NULL;
    struct sn_err err = {0};
    int rc = sn_tokenizer_create(v, &t, &err);
    CHECK_MSG(rc != SN_OK && !t && strstr(err.msg, needle), "%s: rc %d, message '%s', want "
              "'%s'", what, rc, err.msg, needle);
    sn_tokenizer_free(t);
}

/* demo.json with one more model.vocab entry `token` (id 512), written to dir/name; the path
** goes to out. */
static void write_with_entry(const char *demo, const char *dir, const char *name,
                             const char *token, char *out, size_t cap)
{
    cJSON *root = NULL;
    struct sn_err err = {0};
    CHECK_MSG(sn_json_load(demo, &root, &err) == SN_OK, "%s", err.msg);
    cJSON *vocab = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(root, "model"), "vocab");
    cJSON_AddNumberToObject(vocab, token, 512);
    char *text = cJSON_PrintUnformatted(root);
    snprintf(out, cap, "%s/%s", dir, name);
    sn_test_write_file(out, text);
    cJSON_free(text);
    cJSON_Delete(root);
}

/* The tokenizer.json at path is refused; the message holds every needle and not `absent`. */
static void expect_open_fail(const char *path, const char *const *needles, const char *absent)
{
    struct sn_tokenizer *t = NULL;
    struct sn_err err = {0};
    int rc = sn_tokenizer_open(path, &t, &err);
    CHECK_MSG(rc != SN_OK && !t, "%s: rc %d", path, rc);
    for (; *needles; needles++)
        CHECK_MSG(strstr(err.msg, *needles), "message '%s', want '%s'", err.msg, *needles);
    CHECK_MSG(!strstr(err.msg, absent), "message '%s' holds '%s'", err.msg, absent);
    sn_tokenizer_free(t);
}

/* U+FFFD is a code point (valid UTF-8) that ByteLevel has no byte for; invalid UTF-8 is no code
** point at all. Each gets its own message naming the entry and the byte offset. */
static void test_replacement_char(const char *demo, const char *dir)
{
    char path[1200];
    write_with_entry(demo, dir, "fffd.json", "a\xEF\xBF\xBD" "b", path, sizeof path);
    const char *fffd[] = {"model.vocab token 512 (\"a\\uFFFDb\")",
                          "holds the code point U+FFFD (REPLACEMENT CHARACTER) at byte offset 1",
                          "refused: U+FFFD is not one of the 256 ByteLevel code points", NULL};
    expect_open_fail(path, fffd, "invalid UTF-8");
    write_with_entry(demo, dir, "bad_utf8.json", "a\xC3(b", path, sizeof path);
    const char *bad[] = {"model.vocab token 512 (\"a\\xc3(b\") is not valid UTF-8",
                         "invalid UTF-8 at byte offset 1 of the token (byte 0xc3)", NULL};
    expect_open_fail(path, bad, "U+FFFD");
    /* a long entry is shown by its start and length; the offset is still exact */
    char longtok[400];
    memset(longtok, 'q', 300);
    memcpy(longtok + 300, "\xEF\xBF\xBD", 4);
    write_with_entry(demo, dir, "fffd_long.json", longtok, path, sizeof path);
    const char *lng[] = {"model.vocab token 512 (\"qqqq", "...\" (303 bytes))",
                         "U+FFFD (REPLACEMENT CHARACTER) at byte offset 300", NULL};
    expect_open_fail(path, lng, "invalid UTF-8");
}

int main(void)
{
    char path[2048], demo[1200];
    struct sn_err err = {0};
    cJSON *root = sn_test_load_ref("tokenizer_golden.json");
    if (!root)
        return sn_test_done();
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(root, "cases");

    char tdir[1024];
    snprintf(tdir, sizeof tdir, "%s", sn_test_dir("tokenizer_vocab"));
    snprintf(demo, sizeof demo, "%s/demo.json", tdir);
    CHECK(sn_tokenizer_write_demo(demo, &err) == SN_OK);
    struct sn_tokenizer *tj = NULL, *ta = NULL;
    struct arrays a;
    CHECK_MSG(sn_tokenizer_open(demo, &tj, &err) == SN_OK, "%s", err.msg);
    CHECK(to_arrays(demo, &a) == 0);
    struct sn_tokenizer_vocab v = vocab_of(&a);
    v.hash = sn_tokenizer_hash(tj);
    CHECK_MSG(sn_tokenizer_create(&v, &ta, &err) == SN_OK, "%s", err.msg);
    if (tj && ta) {
        printf("demo: ");
        compare(tj, ta, cases, "demo");
        CHECK_STR(sn_tokenizer_hash(ta), sn_tokenizer_hash(tj));
        CHECK(sn_tokenizer_vocab_size(ta) == sn_tokenizer_vocab_size(tj));
        CHECK(sn_tokenizer_token_id(ta, "<|im_end|>") == 511);
        CHECK(sn_tokenizer_is_special(ta, 511) && !sn_tokenizer_is_special(ta, 97));
        /* decode agrees too */
        int32_t ids[5] = {510, 97, 300, 10, 511};
        char *d1 = NULL, *d2 = NULL;
        CHECK(sn_tokenizer_decode(tj, ids, 5, &d1, NULL, &err) == SN_OK);
        CHECK(sn_tokenizer_decode(ta, ids, 5, &d2, NULL, &err) == SN_OK);
        CHECK(d1 && d2 && !strcmp(d1, d2));
        sn_free(d1);
        sn_free(d2);
    }
    sn_tokenizer_free(ta);
    ta = NULL;
    /* without a hash: a stable one over the arrays, different from the json's */
    v.hash = NULL;
    CHECK(sn_tokenizer_create(&v, &ta, &err) == SN_OK);
    if (ta && tj) {
        CHECK(strlen(sn_tokenizer_hash(ta)) == 64);
        CHECK(strcmp(sn_tokenizer_hash(ta), sn_tokenizer_hash(tj)) != 0);
    }
    sn_tokenizer_free(ta);
    ta = NULL;

    /* broken arrays */
    {
        struct sn_tokenizer_vocab b = vocab_of(&a);
        int32_t keep = a.types[97];
        a.types[97] = 7;
        expect_fail(&b, "bad type", "has type 7");
        a.types[97] = SN_TOKEN_UNUSED;      /* byte 'a' missing */
        expect_fail(&b, "missing byte", "no token for byte 0x61");
        a.types[97] = keep;
        char *km = a.merges[3];
        a.merges[3] = "Ġ nosuchtoken";
        expect_fail(&b, "merge", "merge 3");
        a.merges[3] = "nospace";
        expect_fail(&b, "merge format", "one space");
        a.merges[3] = km;
        char *kt = a.tokens[98];
        a.tokens[98] = a.tokens[97];        /* "a" twice */
        expect_fail(&b, "duplicate", "appears twice");
        a.tokens[98] = kt;
        b.pre = "llama3";
        expect_fail(&b, "pre", "pre-tokenizer 'llama3'");
        b.pre = "qwen2";
        size_t lens[512];
        for (size_t i = 0; i < 512 && i < a.n; i++)
            lens[i] = strlen(a.tokens[i]);
        lens[5]++;
        b.token_lens = lens;
        expect_fail(&b, "nul", "token 5 contains a NUL");
        b.token_lens = NULL;
        char *k300 = a.tokens[300];
        a.tokens[300] = "\xEF\xBF\xBD";     /* U+FFFD: a code point, not a byte */
        expect_fail(&b, "U+FFFD", "token 300 (\"\\uFFFD\") holds the code point U+FFFD "
                    "(REPLACEMENT CHARACTER) at byte offset 0");
        a.tokens[300] = "x\xFF";               /* not UTF-8 */
        expect_fail(&b, "invalid UTF-8", "token 300 (\"x\\xff\") is not valid UTF-8: invalid "
                    "UTF-8 at byte offset 1 of the token (byte 0xff)");
        a.tokens[300] = k300;
    }
    test_replacement_char(demo, tdir);
    arrays_free(&a);
    sn_tokenizer_free(tj);
    tj = NULL;

    const cJSON *qsha = cJSON_GetObjectItemCaseSensitive(root, "qwen_sha256");
    if (!sn_test_qwen_tokenizer(qsha->valuestring, path, sizeof path)) {
        printf("qwen: skipped (no Qwen tokenizer.json at %s)\n", path);
    } else {
        CHECK_MSG(sn_tokenizer_open(path, &tj, &err) == SN_OK, "%s", err.msg);
        CHECK(to_arrays(path, &a) == 0);
        v = vocab_of(&a);
        CHECK_MSG(sn_tokenizer_create(&v, &ta, &err) == SN_OK, "%s", err.msg);
        if (tj && ta) {
            printf("qwen: ");
            compare(tj, ta, cases, "qwen");
        }
        sn_tokenizer_free(ta);
        sn_tokenizer_free(tj);
        arrays_free(&a);
    }
    cJSON_Delete(root);
    return sn_test_done();
}
