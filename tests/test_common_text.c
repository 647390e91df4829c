/* tests/test_common_text.c: strict UTF-8 validity (RFC 3629) against an independent rule
** (a sequence is valid iff it is the shortest encoding of a scalar value), and path joining. */
#include "common/common.h"
#include "testutil.h"

#include <stdint.h>

/* The reference encoder: the one encoding of a scalar value. */
static size_t encode(uint32_t cp, unsigned char out[4])
{
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | cp >> 6);
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | cp >> 12);
        out[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | cp >> 18);
    out[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

static bool is_scalar(uint32_t cp)
{
    return cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
}

/* Every scalar value encodes to a valid sequence; every surrogate, encoded the same way, is
** rejected. */
static void test_all_code_points(void)
{
    size_t wrong = 0;
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        unsigned char b[4];
        size_t n = encode(cp, b);
        if (sn_utf8_valid(b, n, NULL) != is_scalar(cp))
            wrong++;
    }
    CHECK_MSG(wrong == 0, "%zu code points judged wrongly", wrong);
}

/* Every 1-, 2- and 3-byte string: valid iff it is a concatenation of reference encodings. For
** lengths up to 3 it suffices to try each split into first sequence + rest. */
static bool ref_valid(const unsigned char *s, size_t n)
{
    if (n == 0)
        return true;
    for (size_t k = 1; k <= n && k <= 4; k++) {
        /* is s[0..k) the encoding of some scalar value? decode by the bit pattern of its
        ** length, then compare with the reference encoding */
        uint32_t cp;
        if (k == 1)
            cp = s[0];
        else {
            cp = s[0] & (0x7Fu >> k);
            for (size_t j = 1; j < k; j++)
                cp = cp << 6 | (s[j] & 0x3Fu);
        }
        unsigned char e[4];
        if (is_scalar(cp) && encode(cp, e) == k && !memcmp(e, s, k) && ref_valid(s + k, n - k))
            return true;
    }
    return false;
}

static void test_exhaustive_short(void)
{
    size_t wrong = 0;
    unsigned char b[3];
    for (unsigned x = 0; x < 256; x++) {
        b[0] = (unsigned char)x;
        wrong += sn_utf8_valid(b, 1, NULL) != ref_valid(b, 1);
        for (unsigned y = 0; y < 256; y++) {
            b[1] = (unsigned char)y;
            wrong += sn_utf8_valid(b, 2, NULL) != ref_valid(b, 2);
            if (x < 0xE0 || x > 0xF4) /* 3 bytes after a 3- or 4-byte lead only */
                continue;
            for (unsigned z = 0; z < 256; z++) {
                b[2] = (unsigned char)z;
                wrong += sn_utf8_valid(b, 3, NULL) != ref_valid(b, 3);
            }
        }
    }
    CHECK_MSG(wrong == 0, "%zu short strings judged wrongly", wrong);
}

static void test_named_cases(void)
{
    size_t bad = 99;
    CHECK(sn_utf8_valid("", 0, &bad) && bad == 99);
    CHECK(sn_utf8_valid("a\0b", 3, NULL)); /* NUL inside the length is a character */
    CHECK(sn_utf8_valid("h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80", 15, NULL));
    /* overlong forms */
    CHECK(!sn_utf8_valid("\xC0\xAF", 2, &bad) && bad == 0);
    CHECK(!sn_utf8_valid("ab\xC1\xBF", 4, &bad) && bad == 2);
    CHECK(!sn_utf8_valid("\xE0\x80\xAF", 3, NULL));
    CHECK(!sn_utf8_valid("\xF0\x8F\xBF\xBF", 4, NULL));
    /* surrogates */
    CHECK(!sn_utf8_valid("x\xED\xA0\x80", 4, &bad) && bad == 1);
    CHECK(!sn_utf8_valid("\xED\xBF\xBF", 3, NULL));
    CHECK(sn_utf8_valid("\xED\x9F\xBF", 3, NULL)); /* U+D7FF, just below */
    CHECK(sn_utf8_valid("\xEE\x80\x80", 3, NULL)); /* U+E000, just above */
    /* beyond U+10FFFF */
    CHECK(sn_utf8_valid("\xF4\x8F\xBF\xBF", 4, NULL)); /* U+10FFFF */
    CHECK(!sn_utf8_valid("\xF4\x90\x80\x80", 4, NULL)); /* U+110000 */
    CHECK(!sn_utf8_valid("\xF5\x80\x80\x80", 4, NULL));
    CHECK(!sn_utf8_valid("\xFF", 1, NULL));
    /* truncated sequences, at the end and followed by more text */
    CHECK(!sn_utf8_valid("ok\xE2\x82", 4, &bad) && bad == 2);
    CHECK(!sn_utf8_valid("\xF0\x9F\x98", 3, &bad) && bad == 0);
    CHECK(!sn_utf8_valid("\xE2\x82z", 3, &bad) && bad == 0);
    CHECK(!sn_utf8_valid("\xC3", 1, NULL));
    /* the length counts, not a NUL: the same bytes cut short are truncated */
    CHECK(sn_utf8_valid("\xC3\xA9", 2, NULL) && !sn_utf8_valid("\xC3\xA9", 1, NULL));
    /* lone continuation byte */
    CHECK(!sn_utf8_valid("a\x80", 2, &bad) && bad == 1);
    /* the C-string form */
    CHECK(sn_utf8_valid_str(NULL));
    CHECK(sn_utf8_valid_str(""));
    CHECK(sn_utf8_valid_str("caf\xC3\xA9"));
    CHECK(!sn_utf8_valid_str("caf\xC3"));
    CHECK(!sn_utf8_valid_str("\xED\xA0\x80"));
}

static void test_path_join(void)
{
    struct sn_err err = {0};
    char buf[16];
    CHECK(sn_path_join(buf, sizeof buf, "dir", "file.json", &err) == SN_OK);
    CHECK_STR(buf, "dir/file.json");
    CHECK(sn_path_join(buf, sizeof buf, "", "x", &err) == SN_OK); /* joined as written */
    CHECK_STR(buf, "/x");
    CHECK(sn_path_join(buf, sizeof buf, "a", "", &err) == SN_OK);
    CHECK_STR(buf, "a/");
    /* the longest that fits: 15 characters + NUL */
    CHECK(sn_path_join(buf, sizeof buf, "1234567", "1234567", &err) == SN_OK);
    CHECK_STR(buf, "1234567/1234567");
    CHECK(err.code == SN_OK);
    /* one more does not fit */
    CHECK(sn_path_join(buf, sizeof buf, "1234567", "12345678", &err) == SN_E_ARG);
    CHECK_STR(err.msg, "1234567/12345678: path too long");
    sn_err_clear(&err);
    CHECK(sn_path_join(buf, 1, "a", "b", &err) == SN_E_ARG);

    char *p = sn_path_join_new("runs/exp1", "manifest.json");
    CHECK_STR(p, "runs/exp1/manifest.json");
    sn_free(p);
    p = sn_path_join_new("", "");
    CHECK_STR(p, "/");
    sn_free(p);
    char longdir[300];
    memset(longdir, 'd', sizeof longdir - 1);
    longdir[sizeof longdir - 1] = '\0';
    p = sn_path_join_new(longdir, "f");
    CHECK(p && strlen(p) == 301 && p[299] == '/' && p[300] == 'f');
    sn_free(p);
    sn_alloc_fail_after(1);
    CHECK(sn_path_join_new("a", "b") == NULL);
    sn_alloc_fail_after(0);
}

int main(void)
{
    test_all_code_points();
    test_exhaustive_short();
    test_named_cases();
    test_path_join();
    return sn_test_done();
}
