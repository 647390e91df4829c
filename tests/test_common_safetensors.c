/* tests/test_common_safetensors.c: safetensors writer/reader round trip (exact header bytes),
** dtype conversions against hand-computed values, one spoiled file per failure kind (each must
** fail with SN_E_FORMAT and a message naming the problem), and allocation failure at every
** step of open. */
#include "hf/hf.h"
#include "tests/testutil.h"

#include <stdint.h>

/* A file from a header string and a data section; the length prefix is the header's own
** length unless claim != 0. */
static void make_file(const char *path, const char *header, uint64_t claim, const void *data,
                      size_t n_data)
{
    FILE *f = fopen(path, "wb");
    uint64_t hl = claim ? claim : strlen(header);
    uint8_t l8[8];
    for (int i = 0; i < 8; i++)
        l8[i] = (uint8_t)(hl >> (8 * i));
    fwrite(l8, 1, 8, f);
    fwrite(header, 1, strlen(header), f);
    if (n_data)
        fwrite(data, 1, n_data, f);
    fclose(f);
}

static void expect_bad(const char *dir, const char *what, const char *header, uint64_t claim,
                       size_t n_data, const char *expect)
{
    static uint8_t zeros[256];
    const char *p = sn_test_path(dir, "bad.safetensors");
    make_file(p, header, claim, zeros, n_data);
    struct sn_err err = {0};
    struct sn_st_file *f = (struct sn_st_file *)1;
    int rc = sn_st_open(p, &f, &err);
    CHECK_MSG(rc == SN_E_FORMAT, "%s: rc %d (%s)", what, rc, err.msg);
    CHECK_MSG(f == NULL, "%s: handle not NULL on failure", what);
    CHECK_MSG(strstr(err.msg, expect) != NULL, "%s: message '%s' lacks '%s'", what, err.msg,
              expect);
    sn_st_close(f);
}

static void test_roundtrip(const char *dir)
{
    struct sn_err err = {0};
    struct sn_st_writer *w;
    CHECK(sn_st_writer_create(&w, &err) == SN_OK);
    float a[6] = {1, 2, 3, 4, 5, -6.5f};
    uint16_t b[2] = {0x3f80, 0xc000}; /* bf16 1.0, -2.0 */
    int32_t c[1] = {-7};
    int64_t sa[2] = {2, 3}, sb[1] = {2};
    CHECK(sn_st_writer_add(w, "z.weight", SN_ST_F32, 2, sa, a, &err) == SN_OK);
    CHECK(sn_st_writer_add(w, "a.bias", SN_ST_BF16, 1, sb, b, &err) == SN_OK);
    CHECK(sn_st_writer_add(w, "m.scalar", SN_ST_I32, 0, NULL, c, &err) == SN_OK);
    CHECK(sn_st_writer_add(w, "a.bias", SN_ST_F32, 1, sb, a, &err) == SN_E_ARG);
    CHECK(strstr(err.msg, "duplicate") != NULL);
    sn_err_clear(&err);
    int64_t neg[1] = {-1};
    CHECK(sn_st_writer_add(w, "neg", SN_ST_F32, 1, neg, a, &err) == SN_E_ARG);
    sn_err_clear(&err);
    CHECK(sn_st_writer_set_metadata(w, "format", "np", &err) == SN_OK);
    CHECK(sn_st_writer_set_metadata(w, "format", "pt", &err) == SN_OK);     /* replaces */
    CHECK(sn_st_writer_set_metadata(w, "author", "a \"q\"", &err) == SN_OK); /* escaped */
    const char *p1 = sn_test_path(dir, "one.safetensors");
    const char *p2 = sn_test_path(dir, "two.safetensors");
    CHECK(sn_st_writer_save(w, p1, &err) == SN_OK);
    CHECK(sn_st_writer_save(w, p2, &err) == SN_OK);
    sn_st_writer_free(w);

    /* Exact bytes: metadata first (keys sorted), tensors sorted by name, offsets contiguous,
    ** header padded with spaces to a multiple of 8. */
    const char *want_hdr =
        "{\"__metadata__\":{\"author\":\"a \\\"q\\\"\",\"format\":\"pt\"},"
        "\"a.bias\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]},"
        "\"m.scalar\":{\"dtype\":\"I32\",\"shape\":[],\"data_offsets\":[4,8]},"
        "\"z.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[8,32]}}";
    char *bytes = NULL, *bytes2 = NULL;
    size_t n = 0, n2 = 0;
    CHECK(sn_file_read(p1, 0, &bytes, &n, &err) == SN_OK);
    CHECK(sn_file_read(p2, 0, &bytes2, &n2, &err) == SN_OK);
    CHECK(n == n2 && bytes && bytes2 && !memcmp(bytes, bytes2, n));
    size_t wl = strlen(want_hdr), padded = (wl + 7) / 8 * 8;
    CHECK(n == 8 + padded + 32);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--)
        hl = (hl << 8) | (uint8_t)bytes[i];
    CHECK(hl == padded);
    CHECK(n >= 8 + wl && !memcmp(bytes + 8, want_hdr, wl));
    for (size_t i = wl; i < padded && 8 + i < n; i++)
        CHECK(bytes[8 + i] == ' ');
    CHECK(!memcmp(bytes + 8 + padded, b, 4));
    CHECK(!memcmp(bytes + 8 + padded + 8, a, 24));
    sn_free(bytes);
    sn_free(bytes2);

    struct sn_st_file *f;
    CHECK(sn_st_open(p1, &f, &err) == SN_OK);
    if (!f)
        return;
    CHECK(sn_st_count(f) == 3);
    CHECK_STR(sn_st_metadata(f, "format"), "pt");
    CHECK_STR(sn_st_metadata(f, "author"), "a \"q\"");
    CHECK(sn_st_metadata(f, "nope") == NULL);
    CHECK(sn_st_metadata_count(f) == 2);
    const struct sn_st_tensor *t = sn_st_find(f, "z.weight");
    CHECK(t && t->dtype == SN_ST_F32 && t->n_dims == 2 && t->shape[0] == 2 && t->shape[1] == 3);
    CHECK(t && t->n_elements == 6 && t->nbytes == 24 && !memcmp(t->data, a, 24));
    t = sn_st_find(f, "m.scalar");
    CHECK(t && t->n_dims == 0 && t->n_elements == 1 && *(const int32_t *)t->data == -7);
    t = sn_st_find(f, "a.bias");
    float fb[2] = {0};
    CHECK(t && sn_st_to_f32(t, fb, &err) == SN_OK);
    CHECK(fb[0] == 1.0f && fb[1] == -2.0f);
    CHECK(sn_st_find(f, "missing") == NULL);
    CHECK(sn_st_get(f, 0) && !strcmp(sn_st_get(f, 0)->name, "a.bias")); /* offset order */
    t = sn_st_find(f, "m.scalar");
    CHECK(t && sn_st_to_f32(t, fb, &err) == SN_E_FORMAT);
    sn_st_close(f);
}

static void test_conversions(void)
{
    /* bf16: upper half of the f32 bits, round to nearest even */
    CHECK(sn_f32_to_bf16(1.0f) == 0x3f80);
    CHECK(sn_f32_to_bf16(-2.0f) == 0xc000);
    CHECK(sn_f32_to_bf16(1.00390625f) == 0x3f80);  /* 1 + 2^-8: tie, rounds to even (down) */
    CHECK(sn_f32_to_bf16(1.01171875f) == 0x3f82);  /* 1 + 3·2^-8: tie, rounds to even (up) */
    CHECK(sn_bf16_to_f32(0x4049) == 3.140625f);
    CHECK(isnan(sn_bf16_to_f32(sn_f32_to_bf16(NAN))));
    /* f16: IEEE binary16 */
    CHECK(sn_f32_to_f16(1.0f) == 0x3c00);
    CHECK(sn_f32_to_f16(-2.0f) == 0xc000);
    CHECK(sn_f32_to_f16(65504.0f) == 0x7bff);
    CHECK(sn_f32_to_f16(65520.0f) == 0x7c00);          /* rounds to +inf */
    CHECK(sn_f32_to_f16(5.9604644775390625e-8f) == 0x0001); /* smallest subnormal */
    CHECK(sn_f32_to_f16(6.103515625e-05f) == 0x0400);   /* smallest normal */
    CHECK(sn_f16_to_f32(0x0001) == 5.9604644775390625e-8f);
    CHECK(sn_f16_to_f32(0x3555) == 0.333251953125f);
    CHECK(sn_f16_to_f32(0xfc00) == -INFINITY);
    /* every finite half round-trips exactly */
    int bad = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7c00) == 0x7c00)
            continue;
        if (sn_f32_to_f16(sn_f16_to_f32((uint16_t)h)) != h)
            bad++;
    }
    CHECK_MSG(bad == 0, "%d halves do not round-trip", bad);
}

static void test_malformed(const char *dir)
{
    const char *ok1 = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    /* sanity: the template itself loads */
    {
        uint8_t d[8] = {0};
        const char *p = sn_test_path(dir, "good.safetensors");
        make_file(p, ok1, 0, d, 8);
        struct sn_err err = {0};
        struct sn_st_file *f;
        CHECK(sn_st_open(p, &f, &err) == SN_OK);
        sn_st_close(f);
    }
    expect_bad(dir, "truncated data", ok1, 0, 4, "run past the data section");
    expect_bad(dir, "lying header length", ok1, 4096, 8, "truncated file?");
    expect_bad(dir, "huge header claim", ok1, (uint64_t)1 << 40, 8, "limit");
    expect_bad(dir, "wrong dtype",
               "{\"w\":{\"dtype\":\"F31\",\"shape\":[2],\"data_offsets\":[0,8]}}", 0, 8,
               "unknown dtype 'F31'");
    expect_bad(dir, "dtype vs bytes",
               "{\"w\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,8]}}", 0, 8,
               "needs 16 bytes");
    expect_bad(dir, "negative dim",
               "{\"w\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 0, 8,
               "shape[0]");
    expect_bad(dir, "begin after end",
               "{\"w\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]}}", 0, 8,
               "end before they begin");
    expect_bad(dir, "overlap",
               "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 0, 12,
               "overlap");
    expect_bad(dir, "gap",
               "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 0, 12, "gap");
    expect_bad(dir, "trailing data", ok1, 0, 16, "trailing bytes");
    expect_bad(dir, "duplicate name",
               "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 0, 8,
               "duplicate tensor name 'a'");
    expect_bad(dir, "not json", "{\"a\":{\"dtype\":", 0, 0, "not valid JSON");
    expect_bad(dir, "not an object", "[1,2]", 0, 0, "does not start with '{'");
    expect_bad(dir, "garbage after json", "{} x", 0, 0, "unexpected bytes");
    expect_bad(dir, "metadata not string", "{\"__metadata__\":{\"k\":1}}", 0, 0,
               "is not a string");
    expect_bad(dir, "offsets not ints",
               "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8.5]}}", 0, 8,
               "non-negative integers");
    expect_bad(dir, "unknown field",
               "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":1}}", 0, 8,
               "unknown header field 'x'");
    expect_bad(dir, "shape overflow",
               "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],"
               "\"data_offsets\":[0,8]}}", 0, 8, "overflows");
    /* too short for the length field */
    {
        const char *p = sn_test_path(dir, "short.safetensors");
        FILE *f = fopen(p, "wb");
        fwrite("abc", 1, 3, f);
        fclose(f);
        struct sn_err err = {0};
        struct sn_st_file *h;
        CHECK(sn_st_open(p, &h, &err) == SN_E_FORMAT && strstr(err.msg, "too short"));
        sn_err_clear(&err);
        CHECK(sn_st_open(sn_test_path(dir, "absent.safetensors"), &h, &err) == SN_E_IO);
    }
}

/* Fail the N-th allocation for N = 1, 2, ... until open succeeds: every failure must be a clean
** SN_E_NOMEM (ASan checks for leaks). */
static void test_alloc_failures(const char *dir)
{
    const char *p = sn_test_path(dir, "one.safetensors");
    int ok = 0;
    for (uint64_t n = 1; n < 200 && !ok; n++) {
        struct sn_err err = {0};
        struct sn_st_file *f;
        sn_alloc_fail_after(n);
        int rc = sn_st_open(p, &f, &err);
        sn_alloc_fail_after(0);
        if (rc == SN_OK) {
            ok = 1;
            CHECK(sn_st_count(f) == 3);
            sn_st_close(f);
        } else {
            CHECK_MSG(rc == SN_E_NOMEM, "fail-after %d: rc %d (%s)", (int)n, rc, err.msg);
            CHECK(f == NULL);
        }
    }
    CHECK(ok);
}

int main(void)
{
    const char *dir = sn_test_dir("common_safetensors");
    test_roundtrip(dir);
    test_conversions();
    test_malformed(dir);
    test_alloc_failures(dir);
    return sn_test_done();
}
