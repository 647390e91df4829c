/* tests/test_export_gguf.c: the GGUF writer and the strict reader (export/export.h).
**   - round trip: every KV type, string and numeric arrays, F32/F16/BF16 tensors; the bytes
**     are checked independently of the reader at fixed places (header, alignment, offsets);
**   - one hand-made corrupt copy per failure kind: each must fail with SN_E_FORMAT and a
**     message naming the problem (and, under ASan, no fault or leak);
**   - qwen2 files: shapes against the hyper-parameters, vocab vs tokens, layer count;
**   - allocation failure at every allocation of the reader: a clean SN_E_NOMEM. */
#include "testutil.h"
#include "hf/hf.h"
#include "export/export.h"
#include "export/write.h"

#include <stdint.h>

static uint8_t *memfind(uint8_t *buf, size_t len, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i + n <= len; i++)
        if (!memcmp(buf + i, s, n))
            return buf + i;
    return NULL;
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static float ta[6] = {1, -2, 3.5f, 0.25f, 1e-3f, -7};
static uint16_t tb[5], tc[4];

/* The generic file: one KV of each kind, three tensors. */
static int make_generic(uint8_t **buf, size_t *len)
{
    struct sn_err err = {0};
    struct sn_gguf_writer *w = NULL;
    int32_t arr[3] = {5, -6, 7};
    const char *strs[2] = {"a", "bc"};
    float f[2] = {0.5f, -1.5f};
    for (int i = 0; i < 5; i++)
        tb[i] = sn_f32_to_f16((float)i - 2.0f);
    for (int i = 0; i < 4; i++)
        tc[i] = sn_f32_to_bf16((float)i * 0.5f);
    uint64_t ne_a[2] = {3, 2}, ne_b[1] = {5}, ne_c[2] = {4, 1};
    int rc = sn_gguf_writer_create(&w, &err);
    if (!rc) rc = sn_gguf_writer_set_str(w, "general.architecture", "test", &err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, "test.u32", 7, &err);
    if (!rc) rc = sn_gguf_writer_set_str(w, "test.str", "hello\nworld", &err);
    if (!rc) rc = sn_gguf_writer_set_arr_i32(w, "test.arr", arr, 3, &err);
    if (!rc) rc = sn_gguf_writer_set_arr_str(w, "test.sar", strs, 2, &err);
    if (!rc) rc = sn_gguf_writer_set_bool(w, "test.bool", true, &err);
    if (!rc) rc = sn_gguf_writer_set_f32(w, "test.f32", 0.125f, &err);
    if (!rc) rc = sn_gguf_writer_set_i32(w, "test.i32", -9, &err);
    if (!rc) rc = sn_gguf_writer_set_u64(w, "test.u64", UINT64_C(1) << 40, &err);
    if (!rc) rc = sn_gguf_writer_set_arr_f32(w, "test.far", f, 2, &err);
    if (!rc) rc = sn_gguf_writer_add_tensor(w, "tensor_a", SN_GGML_F32, 2, ne_a, ta, &err);
    if (!rc) rc = sn_gguf_writer_add_tensor(w, "tensor_b", SN_GGML_F16, 1, ne_b, tb, &err);
    if (!rc) rc = sn_gguf_writer_add_tensor(w, "tensor_c", SN_GGML_BF16, 2, ne_c, tc, &err);
    /* writer refusals */
    if (!rc) {
        struct sn_err e2 = {0};
        CHECK(sn_gguf_writer_add_tensor(w, "tensor_a", SN_GGML_F32, 2, ne_a, ta, &e2) ==
              SN_E_ARG);
        CHECK(sn_gguf_writer_add_tensor(w, "bad", 2, 2, ne_a, ta, &e2) != SN_OK);
    }
    if (!rc) rc = sn_gguf_writer_to_memory(w, buf, len, &err);
    CHECK_MSG(rc == SN_OK, "%s", err.msg);
    sn_gguf_writer_free(w);
    return rc;
}

static void check_generic(const struct sn_gguf *g)
{
    struct sn_err err = {0};
    uint64_t u;
    double f;
    bool b;
    const char *s;
    CHECK(sn_gguf_version(g) == 3 && sn_gguf_alignment(g) == 32);
    CHECK(sn_gguf_n_kv(g) == 11);  /* 10 + general.alignment added by the writer */
    CHECK(sn_gguf_get_u64(g, "test.u32", true, 0, &u, &err) == SN_OK && u == 7);
    CHECK(sn_gguf_get_u64(g, "test.u64", true, 0, &u, &err) == SN_OK && u == UINT64_C(1) << 40);
    CHECK(sn_gguf_get_u64(g, "test.i32", true, 0, &u, &err) == SN_E_FORMAT); /* negative */
    sn_err_clear(&err);
    CHECK(sn_gguf_get_f64(g, "test.f32", true, 0, &f, &err) == SN_OK && f == 0.125);
    CHECK(sn_gguf_get_bool(g, "test.bool", true, false, &b, &err) == SN_OK && b);
    CHECK(sn_gguf_get_str(g, "test.str", true, NULL, &s, &err) == SN_OK && s &&
          !strcmp(s, "hello\nworld"));
    CHECK(sn_gguf_get_str(g, "test.u32", true, NULL, &s, &err) == SN_E_FORMAT &&
          strstr(err.msg, "expected string"));
    sn_err_clear(&err);
    CHECK(sn_gguf_get_u64(g, "test.missing", false, 42, &u, &err) == SN_OK && u == 42);
    CHECK(sn_gguf_get_u64(g, "test.missing", true, 42, &u, &err) == SN_E_FORMAT &&
          strstr(err.msg, "missing key 'test.missing'"));
    sn_err_clear(&err);
    const int32_t *ai;
    const float *af;
    const char *const *as;
    const size_t *al;
    size_t n;
    CHECK(sn_gguf_get_arr_i32(g, "test.arr", &ai, &n, &err) == SN_OK && n == 3 && ai[0] == 5 &&
          ai[1] == -6 && ai[2] == 7);
    CHECK(sn_gguf_get_arr_f32(g, "test.far", &af, &n, &err) == SN_OK && n == 2 &&
          af[1] == -1.5f);
    CHECK(sn_gguf_get_arr_str(g, "test.sar", &as, &al, &n, &err) == SN_OK && n == 2 &&
          !strcmp(as[1], "bc") && al[1] == 2);
    CHECK(sn_gguf_n_tensors(g) == 3);
    const struct sn_gguf_tensor *t = sn_gguf_find_tensor(g, "tensor_a");
    CHECK(t && t->type == SN_GGML_F32 && t->n_dims == 2 && t->ne[0] == 3 && t->ne[1] == 2 &&
          t->offset == 0 && !memcmp(t->data, ta, sizeof ta));
    t = sn_gguf_find_tensor(g, "tensor_b");
    CHECK(t && t->offset == 32 && t->nbytes == 10);
    float out[6];
    if (t) {
        CHECK(sn_gguf_tensor_to_f32(t, out, &err) == SN_OK);
        CHECK(out[0] == -2.0f && out[4] == 2.0f);
    }
    t = sn_gguf_find_tensor(g, "tensor_c");
    CHECK(t && t->offset == 64 && t->type == SN_GGML_BF16);
    if (t) {
        CHECK(sn_gguf_tensor_to_f32(t, out, &err) == SN_OK);
        CHECK(out[3] == 1.5f);
    }
    struct sn_buf d = {0};
    int ki = sn_gguf_find(g, "test.sar");
    CHECK(ki >= 0 && sn_gguf_kv_describe(g, (size_t)ki, &d, &err) == SN_OK && d.data &&
          strstr(d.data, "[string x 2] \"a\", \"bc\""));
    sn_buf_free(&d);
}

/* ---- corrupt copies ----------------------------------------------------------------------- */

struct bad {
    const char *name;
    const char *expect;
};

static void expect_bad(const uint8_t *buf, size_t len, const char *name, const char *expect)
{
    struct sn_gguf *g = NULL;
    struct sn_err err = {0};
    int rc = sn_gguf_open_memory(buf, len, name, &g, &err);
    CHECK_MSG(rc == SN_E_FORMAT && !g && strstr(err.msg, expect), "%s: rc %d, message '%s', "
              "want '%s'", name, rc, err.msg, expect);
    if (rc == SN_E_FORMAT && strstr(err.msg, expect))
        printf("  %-22s -> %s\n", name, err.msg);
    sn_gguf_close(g);
}

static void corrupt_cases(const uint8_t *orig, size_t len)
{
    uint8_t *b = malloc(len + 64);
    uint8_t *p;
#define FRESH() memcpy(b, orig, len)
    FRESH(); b[0] = 'G'; b[1] = 'G'; b[2] = 'M'; b[3] = 'L';
    expect_bad(b, len, "magic", "expected 'GGUF'");
    FRESH(); put32(b + 4, 2);
    expect_bad(b, len, "version 2", "only version 3");
    FRESH(); put32(b + 4, 3u << 24);
    expect_bad(b, len, "version big-endian", "big-endian");
    expect_bad(orig, 3, "truncated header", "truncated file?");
    expect_bad(orig, len / 3, "truncated in KVs", "truncated file");
    FRESH(); put64(b + 16, 5000);
    expect_bad(b, len, "n_kv over the limit", "keys (limit");
    FRESH(); put64(b + 16, 900);
    expect_bad(b, len, "n_kv lying", "cannot fit");
    FRESH(); put64(b + 8, UINT64_C(1) << 40);
    expect_bad(b, len, "n_tensors over limit", "tensors (limit");
    FRESH(); p = memfind(b, len, "test.u32"); put32(p + 8, 99);
    expect_bad(b, len, "unknown value type", "value type 99");
    FRESH(); p = memfind(b, len, "test.str"); put64(p + 12, UINT64_C(1) << 40);
    expect_bad(b, len, "huge string", "over the limit");
    FRESH(); p = memfind(b, len, "test.str"); put64(p + 12, 100000);
    expect_bad(b, len, "string past EOF", "truncated file?");
    FRESH(); p = memfind(b, len, "test.arr"); put32(p + 12, 9);
    expect_bad(b, len, "nested array", "nested array");
    FRESH(); p = memfind(b, len, "test.arr"); put32(p + 12, 77);
    expect_bad(b, len, "unknown element type", "unknown (expected 0..12)");
    FRESH(); p = memfind(b, len, "test.arr"); put64(p + 16, UINT64_C(1) << 30);
    expect_bad(b, len, "array count over limit", "elements (limit");
    FRESH(); p = memfind(b, len, "test.arr"); put64(p + 16, 100000);
    expect_bad(b, len, "array count lying", "truncated file?");
    FRESH(); p = memfind(b, len, "test.sar"); put64(p + 24, 5000);
    expect_bad(b, len, "array string too long", "over the limit");
    FRESH(); p = memfind(b, len, "test.bool"); p[9 + 4] = 2;
    expect_bad(b, len, "bool 2", "expected 0 or 1");
    FRESH(); p = memfind(b, len, "test.str"); memcpy(p, "test.u32", 8);
    expect_bad(b, len, "duplicate key", "duplicate key 'test.u32'");
    FRESH(); p = memfind(b, len, "test.u32"); put64(p - 8, 0);
    expect_bad(b, len, "empty key", "is empty");
    FRESH(); p = memfind(b, len, "test.u32"); p[2] = (char)0xC0;
    expect_bad(b, len, "key not UTF-8", "not valid UTF-8");
    FRESH(); p = memfind(b, len, "general.alignment"); put32(p + 17 + 4, 48);
    expect_bad(b, len, "alignment 48", "power of two");
    FRESH(); p = memfind(b, len, "general.alignment"); put32(p + 17 + 4, 1u << 30);
    expect_bad(b, len, "alignment 1 GiB", "power of two");
    FRESH(); p = memfind(b, len, "general.alignment"); put32(p + 17, 5);
    expect_bad(b, len, "alignment type", "expected u32");
    FRESH(); p = memfind(b, len, "tensor_a"); put32(p + 8, 5);
    expect_bad(b, len, "5 dimensions", "dimensions (expected 1..4)");
    FRESH(); p = memfind(b, len, "tensor_a"); put32(p + 8, 0);
    expect_bad(b, len, "0 dimensions", "dimensions (expected 1..4)");
    FRESH(); p = memfind(b, len, "tensor_a"); put64(p + 12, 0);
    expect_bad(b, len, "dimension 0", "expected >= 1");
    FRESH(); p = memfind(b, len, "tensor_a"); put64(p + 12, UINT64_C(1) << 40);
    put64(p + 20, UINT64_C(1) << 40);
    expect_bad(b, len, "element overflow", "overflows");
    FRESH(); p = memfind(b, len, "tensor_a"); put32(p + 28, 2);
    expect_bad(b, len, "unknown ggml type", "ggml type 2");
    FRESH(); p = memfind(b, len, "tensor_b"); put64(p + 8 + 4 + 8 + 4, 0);
    expect_bad(b, len, "overlapping tensors", "overlapping");
    FRESH(); p = memfind(b, len, "tensor_b"); put64(p + 8 + 4 + 8 + 4, 36);
    expect_bad(b, len, "misaligned offset", "offset 36, expected 32");
    FRESH(); p = memfind(b, len, "tensor_b"); memcpy(p, "tensor_a", 8);
    expect_bad(b, len, "duplicate tensor", "duplicate tensor name 'tensor_a'");
    FRESH(); p = memfind(b, len, "tensor_a"); put64(p - 8, 64);
    expect_bad(b, len, "tensor name too long", "name of 64 bytes");
    FRESH(); p = memfind(b, len, "tensor_c"); put64(p + 12, 400);
    expect_bad(b, len, "tensor past EOF", "run past the data section");
    expect_bad(orig, len - 40, "truncated data", "run past the data section");
    free(b);
#undef FRESH
}

/* ---- qwen2 files -------------------------------------------------------------------------- */

enum spoil { Q_OK, Q_SHAPE, Q_VOCAB, Q_LAYERS, Q_EXTRA, Q_MISSING, Q_HEADS, Q_HEAD_LEN };

/* A tiny qwen2 file: E 8, H 2, Hkv 1, F 16, V 6, 1 layer; spoiled one way. */
static int make_qwen2(enum spoil sp, uint8_t **buf, size_t *len)
{
    static float zeros[16 * 8 * 2];
    struct sn_err err = {0};
    struct sn_gguf_writer *w = NULL;
    const char *tokens[7] = {"a", "b", "c", "d", "e", "f", "g"};
    float head[9] = {0};
    int rc = sn_gguf_writer_create(&w, &err);
    if (!rc) rc = sn_gguf_writer_set_str(w, "general.architecture", "qwen2", &err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, "qwen2.embedding_length", 8, &err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, "qwen2.block_count", sp == Q_LAYERS ? 0 : 1, &err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, "qwen2.feed_forward_length", 16, &err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, "qwen2.attention.head_count", sp == Q_HEADS ? 3 : 2,
                                         &err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, "qwen2.attention.head_count_kv", 1, &err);
    if (!rc) rc = sn_gguf_writer_set_u32(w, "qwen2.context_length", 64, &err);
    if (!rc) rc = sn_gguf_writer_set_f32(w, "qwen2.attention.layer_norm_rms_epsilon", 1e-6f,
                                         &err);
    if (!rc) rc = sn_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", tokens,
                                             sp == Q_VOCAB ? 7 : 6, &err);
    if (!rc) rc = sn_gguf_writer_set_arr_f32(w, SN_GGUF_KEY_HEAD, head, sp == Q_HEAD_LEN ? 9 : 8,
                                             &err);
    struct { const char *n; uint64_t ne0, ne1; } t[] = {
        {"token_embd.weight", 8, 6},       {"blk.0.attn_norm.weight", 8, 0},
        {"blk.0.attn_q.weight", 8, 8},     {"blk.0.attn_q.bias", 8, 0},
        {"blk.0.attn_k.weight", 8, sp == Q_SHAPE ? 8 : 4},
        {"blk.0.attn_k.bias", 4, 0},       {"blk.0.attn_v.weight", 8, 4},
        {"blk.0.attn_v.bias", 4, 0},       {"blk.0.attn_output.weight", 8, 8},
        {"blk.0.ffn_norm.weight", 8, 0},   {"blk.0.ffn_gate.weight", 8, 16},
        {"blk.0.ffn_up.weight", 8, 16},    {"blk.0.ffn_down.weight", 16, 8},
        {"output_norm.weight", 8, 0},      {"cls.output.weight", 8, 1},
    };
    size_t nt = sizeof t / sizeof *t - (sp == Q_EXTRA ? 0 : 1);
    for (size_t i = 0; !rc && i < nt; i++) {
        if (sp == Q_MISSING && !strcmp(t[i].n, "blk.0.ffn_up.weight"))
            continue;
        uint64_t ne[2] = {t[i].ne0, t[i].ne1};
        rc = sn_gguf_writer_add_tensor(w, t[i].n, SN_GGML_F32, t[i].ne1 ? 2 : 1, ne, zeros,
                                       &err);
    }
    if (!rc)
        rc = sn_gguf_writer_to_memory(w, buf, len, &err);
    CHECK_MSG(rc == SN_OK, "%s", err.msg);
    sn_gguf_writer_free(w);
    return rc;
}

int main(void)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    struct sn_err err = {0};
    if (make_generic(&buf, &len))
        return sn_test_done();
    /* bytes, independently of the reader */
    CHECK(!memcmp(buf, "GGUF", 4));
    uint32_t v32;
    uint64_t v64;
    memcpy(&v32, buf + 4, 4);
    CHECK(v32 == 3);
    memcpy(&v64, buf + 8, 8);
    CHECK(v64 == 3);
    memcpy(&v64, buf + 16, 8);
    CHECK(v64 == 11);
    CHECK(len % 32 == 0);
    /* the last tensor (BF16, 8 bytes) sits at data_start + 64, the data section is aligned */
    CHECK(!memcmp(buf + len - 32, tc, sizeof tc));

    struct sn_gguf *g = NULL;
    CHECK_MSG(sn_gguf_open_memory(buf, len, "generic", &g, &err) == SN_OK, "%s", err.msg);
    if (g)
        check_generic(g);
    sn_gguf_close(g);
    g = NULL;

    /* the file route: save, reopen, same bytes */
    char path[1200];
    snprintf(path, sizeof path, "%s/generic.gguf", sn_test_dir("export_gguf"));
    {
        struct sn_gguf_writer *w = NULL;
        uint8_t *b2 = NULL;
        size_t l2 = 0;
        CHECK(sn_gguf_writer_create(&w, &err) == SN_OK);
        uint64_t ne[1] = {6};
        CHECK(sn_gguf_writer_set_str(w, "general.architecture", "test", &err) == SN_OK);
        CHECK(sn_gguf_writer_add_tensor(w, "x", SN_GGML_F32, 1, ne, ta, &err) == SN_OK);
        CHECK(sn_gguf_writer_save(w, path, &err) == SN_OK);
        CHECK(sn_gguf_writer_to_memory(w, &b2, &l2, &err) == SN_OK);
        char *f = NULL;
        size_t fl = 0;
        CHECK(sn_file_read(path, 0, &f, &fl, &err) == SN_OK);
        CHECK(f && fl == l2 && !memcmp(f, b2, l2));
        sn_free(f);
        sn_free(b2);
        sn_gguf_writer_free(w);
        CHECK_MSG(sn_gguf_open(path, &g, &err) == SN_OK, "%s", err.msg);
        CHECK(g && sn_gguf_n_tensors(g) == 1);
        sn_gguf_close(g);
        g = NULL;
    }
    CHECK(sn_gguf_open("/nonexistent/x.gguf", &g, &err) == SN_E_IO && !g);
    sn_err_clear(&err);

    printf("corrupt files:\n");
    corrupt_cases(buf, len);

    /* allocation failure at each allocation of the reader */
    int n_fail = 0;
    for (uint64_t k = 1; k < 200; k++) {
        struct sn_err e2 = {0};
        sn_alloc_fail_after(k);
        int rc = sn_gguf_open_memory(buf, len, "generic", &g, &e2);
        sn_alloc_fail_after(0);
        if (rc == SN_OK) {
            sn_gguf_close(g);
            g = NULL;
            break;
        }
        CHECK_MSG(rc == SN_E_NOMEM && !g, "alloc %d: rc %d (%s)", (int)k, rc, e2.msg);
        n_fail++;
    }
    CHECK(n_fail > 5);
    sn_free(buf);

    /* qwen2 */
    static const struct { enum spoil sp; const char *name, *expect; } q[] = {
        {Q_SHAPE, "qwen2 k shape", "blk.0.attn_k.weight': shape {8, 8}"},
        {Q_VOCAB, "qwen2 vocab", "must be equal"},
        {Q_LAYERS, "qwen2 0 layers", "block_count = 0"},
        {Q_EXTRA, "qwen2 cls.output", "unexpected tensor 'cls.output.weight'"},
        {Q_MISSING, "qwen2 missing", "missing tensor 'blk.0.ffn_up.weight'"},
        {Q_HEADS, "qwen2 heads", "inconsistent qwen2"},
        {Q_HEAD_LEN, "qwen2 head length", "sentinel.score.weight must be"},
    };
    CHECK(make_qwen2(Q_OK, &buf, &len) == SN_OK);
    CHECK_MSG(sn_gguf_open_memory(buf, len, "qwen2", &g, &err) == SN_OK, "%s", err.msg);
    sn_gguf_close(g);
    g = NULL;
    sn_free(buf);
    for (size_t i = 0; i < sizeof q / sizeof *q; i++) {
        if (make_qwen2(q[i].sp, &buf, &len))
            continue;
        expect_bad(buf, len, q[i].name, q[i].expect);
        sn_free(buf);
    }
    return sn_test_done();
}
