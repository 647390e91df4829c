/* export/gguf.c: a strict GGUF v3 reader (export.h; layout and limits: docs/formats.md#gguf).
** The writer, which only `sentinel export` needs, is export/gguf_writer.c.
**
** Layout (ggml's gguf.h): "GGUF", u32 version = 3, u64 n_tensors, u64 n_kv; n_kv of (string
** key, u32 type, value); n_tensors of (string name, u32 n_dims, u64 ne[n_dims], u32 type, u64
** offset); padding to general.alignment (u32, default 32); the data section. A string is a
** u64 length and that many bytes; an array is u32 element type, u64 count, elements.
**
** The reader is at least as strict as ggml's own GGUF reader after its 2025-2026 advisories
** (docs/formats.md#gguf), and
** stricter where a detector has no use for the freedom (caps below): every read is checked
** against the bytes left, counts are bounded by what those bytes could hold before anything is
** allocated, sizes go through overflow-checked arithmetic, keys and tensor names are unique,
** tensor offsets must be exactly the running sum of padded sizes (no gaps, no overlap, no
** reordering: ggml's rule), and every tensor lies inside the file. For a qwen2 file the shapes
** are checked against the hyper-parameters (qwen2_check). */
#include "export/export_internal.h"


#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define GGUF_MAGIC       SN_GGUF_MAGIC
#define MAX_KV           1024
#define MAX_TENSORS      8192
#define MAX_KEY          SN_GGUF_MAX_KEY
#define MAX_STR          (1u << 20)        /* a string value */
#define MAX_ARR_STR      (1u << 12)        /* one string inside an array (tokens, merges) */
#define MAX_ARR          SN_GGUF_MAX_ARR
#define MAX_NAME         SN_GGUF_MAX_NAME
#define MAX_ALIGN        (1u << 20)
#define MAX_LAYERS       512

static const size_t scalar_size[SN_GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
static const char *const type_names[SN_GGUF_TYPE_COUNT] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64",
    "f64"};

struct kv {
    char    *key;
    int      type;        /* enum sn_gguf_type */
    int      arr_type;    /* element type when type == ARRAY */
    size_t   n;           /* array count */
    union {
        uint64_t u;
        int64_t  i;
        double   f;
    } v;                  /* scalars: integers widened (u or i by signedness), floats in f */
    char    *str;         /* STRING: NUL-terminated copy */
    size_t   str_len;
    void    *arr;         /* numeric arrays: an aligned copy of the elements */
    char   **strs;        /* string arrays: pointers into arena */
    size_t  *lens;
    char    *arena;
};

struct sn_gguf {
    char          *name;
    const uint8_t *base;
    size_t         size;
    void          *map;
    size_t         map_len;
    uint32_t       version, alignment;
    struct kv     *kvs;
    size_t         n_kv;
    struct sn_gguf_tensor *tensors;
    char         **tnames;
    size_t         n_tensors;
    uint64_t       data_off;
};

/* ---- shared helpers ----------------------------------------------------------------------- */

/* ggml stores a type in blocks of *n elements taking *bytes bytes (1 element for the float
** types; Q8_0: 32 int8 values and an f16 scale, 34 bytes). False for a type we do not read. */
bool sn_ggml_type_block(int type, size_t *n, size_t *bytes)
{
    switch (type) {
    case SN_GGML_F32: *n = 1, *bytes = 4; return true;
    case SN_GGML_F16: *n = 1, *bytes = 2; return true;
    case SN_GGML_BF16: *n = 1, *bytes = 2; return true;
    case SN_GGML_Q8_0: *n = SN_Q8_0_BLOCK, *bytes = 2 + SN_Q8_0_BLOCK; return true;
    default: *n = *bytes = 0; return false;
    }
}

size_t sn_gguf_scalar_size(int type)
{
    return type >= 0 && type < SN_GGUF_TYPE_COUNT ? scalar_size[type] : 0;
}

const char *sn_ggml_type_name(int type)
{
    switch (type) {
    case SN_GGML_F32: return "F32";
    case SN_GGML_F16: return "F16";
    case SN_GGML_BF16: return "BF16";
    case SN_GGML_Q8_0: return "Q8_0";
    default: return "?";
    }
}

/* Keys and tensor names: strict UTF-8 (common.h) without NUL. */
static bool utf8_ok(const uint8_t *s, size_t n)
{
    return !memchr(s, 0, n) && sn_utf8_valid(s, n, NULL);
}

/* ---- reader: a cursor over untrusted bytes ------------------------------------------------ */

struct cur {
    const uint8_t *p;
    size_t         n, pos;
    const char    *name;
    struct sn_err *err;
};

static int need(struct cur *c, uint64_t k, const char *what)
{
    if (k > c->n - c->pos)
        return sn_err_set(c->err, SN_E_FORMAT, "%s: %s at byte %zu needs %" PRIu64 " bytes, "
                          "only %zu are left; truncated file?", c->name, what, c->pos, k,
                          c->n - c->pos);
    return SN_OK;
}

static int rd(struct cur *c, void *dst, size_t k, const char *what)
{
    int rc = need(c, k, what);
    if (rc)
        return rc;
    memcpy(dst, c->p + c->pos, k);
    c->pos += k;
    return SN_OK;
}

static int rd_u32(struct cur *c, uint32_t *v, const char *what)
{
    return rd(c, v, 4, what);
}

static int rd_u64(struct cur *c, uint64_t *v, const char *what)
{
    return rd(c, v, 8, what);
}

/* A string: *s points into the file, *len its length (<= max). */
static int rd_str(struct cur *c, uint64_t max, const char *what, const uint8_t **s,
                  size_t *len)
{
    uint64_t n;
    size_t at = c->pos;
    int rc = rd_u64(c, &n, what);
    if (rc)
        return rc;
    if (n > max)
        return sn_err_set(c->err, SN_E_FORMAT, "%s: %s at byte %zu has length %" PRIu64
                          ", over the limit of %" PRIu64 " bytes", c->name, what, at, n, max);
    if ((rc = need(c, n, what)))
        return rc;
    *s = c->p + c->pos;
    *len = (size_t)n;
    c->pos += (size_t)n;
    return SN_OK;
}

static char *dup_bytes(const uint8_t *s, size_t n)
{
    char *d = sn_malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

static int rd_scalar(struct cur *c, int type, struct kv *kv, const char *key)
{
    uint8_t b[8] = {0};
    size_t at = c->pos;
    int rc = rd(c, b, scalar_size[type], key);
    if (rc)
        return rc;
    switch (type) {
    case SN_GGUF_U8: kv->v.u = b[0]; break;
    case SN_GGUF_I8: kv->v.i = (int8_t)b[0]; break;
    case SN_GGUF_U16: { uint16_t x; memcpy(&x, b, 2); kv->v.u = x; break; }
    case SN_GGUF_I16: { int16_t x; memcpy(&x, b, 2); kv->v.i = x; break; }
    case SN_GGUF_U32: { uint32_t x; memcpy(&x, b, 4); kv->v.u = x; break; }
    case SN_GGUF_I32: { int32_t x; memcpy(&x, b, 4); kv->v.i = x; break; }
    case SN_GGUF_F32: { float x; memcpy(&x, b, 4); kv->v.f = x; break; }
    case SN_GGUF_U64: memcpy(&kv->v.u, b, 8); break;
    case SN_GGUF_I64: memcpy(&kv->v.i, b, 8); break;
    case SN_GGUF_F64: memcpy(&kv->v.f, b, 8); break;
    case SN_GGUF_BOOL:
        if (b[0] > 1)
            return sn_err_set(c->err, SN_E_FORMAT, "%s: key '%s': bool at byte %zu is %u "
                              "(expected 0 or 1)", c->name, key, at, b[0]);
        kv->v.u = b[0];
        break;
    default:
        break;
    }
    return SN_OK;
}

static int rd_array(struct cur *c, struct kv *kv)
{
    uint32_t et;
    uint64_t n;
    size_t at = c->pos;
    int rc = rd_u32(c, &et, kv->key);
    if (!rc)
        rc = rd_u64(c, &n, kv->key);
    if (rc)
        return rc;
    if (et >= SN_GGUF_TYPE_COUNT || et == SN_GGUF_ARRAY)
        return sn_err_set(c->err, SN_E_FORMAT, "%s: key '%s': array element type %" PRIu32
                          " at byte %zu is %s", c->name, kv->key, et, at,
                          et == SN_GGUF_ARRAY ? "a nested array (not allowed)"
                                              : "unknown (expected 0..12)");
    if (n > MAX_ARR)
        return sn_err_set(c->err, SN_E_FORMAT, "%s: key '%s': array of %" PRIu64 " elements "
                          "(limit %u)", c->name, kv->key, n, MAX_ARR);
    kv->arr_type = (int)et;
    kv->n = (size_t)n;
    /* bound the count by the bytes left before allocating: a string takes >= 8 */
    size_t el = et == SN_GGUF_STRING ? 8 : scalar_size[et];
    if ((rc = need(c, n * el, kv->key)))  /* n <= 2^24, el <= 8: no overflow */
        return rc;
    if (et != SN_GGUF_STRING) {
        kv->arr = sn_malloc(n * el + 1);
        if (!kv->arr)
            return sn_err_set(c->err, SN_E_NOMEM, "%s: key '%s': out of memory", c->name,
                              kv->key);
        memcpy(kv->arr, c->p + c->pos, n * el);
        if (et == SN_GGUF_BOOL)
            for (size_t i = 0; i < n; i++)
                if (((uint8_t *)kv->arr)[i] > 1)
                    return sn_err_set(c->err, SN_E_FORMAT, "%s: key '%s': bool element %zu "
                                      "is %u (expected 0 or 1)", c->name, kv->key, i,
                                      ((uint8_t *)kv->arr)[i]);
        c->pos += n * el;
        return SN_OK;
    }
    /* strings: one pass to validate and size, one to copy */
    size_t start = c->pos, total = 0;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *s;
        size_t len;
        if ((rc = rd_str(c, MAX_ARR_STR, kv->key, &s, &len)))
            return rc;
        total += len + 1;  /* bounded by the file size */
    }
    c->pos = start;
    kv->strs = sn_malloc((n + 1) * sizeof *kv->strs);
    kv->lens = sn_malloc((n + 1) * sizeof *kv->lens);
    kv->arena = sn_malloc(total + 1);
    if (!kv->strs || !kv->lens || !kv->arena)
        return sn_err_set(c->err, SN_E_NOMEM, "%s: key '%s': out of memory for %zu strings",
                          c->name, kv->key, (size_t)n);
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *s;
        size_t len;
        rd_str(c, MAX_ARR_STR, kv->key, &s, &len);
        memcpy(kv->arena + off, s, len);
        kv->arena[off + len] = 0;
        kv->strs[i] = kv->arena + off;
        kv->lens[i] = len;
        off += len + 1;
    }
    return SN_OK;
}

static int cmp_strp(const void *a, const void *b)
{
    return strcmp(**(const char *const *const *)a, **(const char *const *const *)b);
}

/* Index of the first duplicate among n strings reached through ptrs[i] (each a char **), or
** -1. ptrs is sorted in place. */
static long first_dup(const char ***ptrs, size_t n)
{
    qsort(ptrs, n, sizeof *ptrs, cmp_strp);
    for (size_t i = 1; i < n; i++)
        if (!strcmp(*ptrs[i - 1], *ptrs[i]))
            return (long)i;
    return -1;
}

static int parse(struct sn_gguf *g, struct sn_err *err)
{
    struct cur c = {g->base, g->size, 0, g->name, err};
    char magic[4];
    uint32_t version;
    uint64_t n_tensors, n_kv;
    int rc = rd(&c, magic, 4, "magic");
    if (rc)
        return rc;
    if (memcmp(magic, GGUF_MAGIC, 4))
        return sn_err_set(err, SN_E_FORMAT, "%s: bad magic %02x %02x %02x %02x (expected "
                          "'GGUF'); not a GGUF file", g->name, (uint8_t)magic[0],
                          (uint8_t)magic[1], (uint8_t)magic[2], (uint8_t)magic[3]);
    if ((rc = rd_u32(&c, &version, "version")))
        return rc;
    if (version != 3)
        return sn_err_set(err, SN_E_FORMAT, "%s: GGUF version %" PRIu32 " (only version 3 is "
                          "read%s)", g->name, version,
                          (version & 0xFFFF) == 0 ? "; a big-endian file?" : "");
    g->version = version;
    if ((rc = rd_u64(&c, &n_tensors, "tensor count")) || (rc = rd_u64(&c, &n_kv, "key count")))
        return rc;
    if (n_tensors > MAX_TENSORS)
        return sn_err_set(err, SN_E_FORMAT, "%s: %" PRIu64 " tensors (limit %d)", g->name,
                          n_tensors, MAX_TENSORS);
    if (n_kv > MAX_KV)
        return sn_err_set(err, SN_E_FORMAT, "%s: %" PRIu64 " keys (limit %d)", g->name, n_kv,
                          MAX_KV);
    /* a KV takes >= 8 + 1 + 4 + 1 bytes, a tensor info >= 8 + 1 + 4 + 8 + 4 + 8 */
    if (n_kv * 14 + n_tensors * 33 > g->size - c.pos)
        return sn_err_set(err, SN_E_FORMAT, "%s: %" PRIu64 " keys and %" PRIu64 " tensors "
                          "cannot fit in the %zu bytes left; lying counts or truncated file",
                          g->name, n_kv, n_tensors, g->size - c.pos);
    g->kvs = sn_calloc(n_kv + 1, sizeof *g->kvs);
    g->tensors = sn_calloc(n_tensors + 1, sizeof *g->tensors);
    g->tnames = sn_calloc(n_tensors + 1, sizeof *g->tnames);
    if (!g->kvs || !g->tensors || !g->tnames)
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", g->name);

    g->alignment = 32;
    for (size_t i = 0; i < n_kv; i++) {
        struct kv *kv = &g->kvs[i];
        const uint8_t *s;
        size_t len, at = c.pos;
        uint32_t type;
        if ((rc = rd_str(&c, MAX_KEY, "key", &s, &len)))
            return rc;
        if (len == 0 || !utf8_ok(s, len))
            return sn_err_set(err, SN_E_FORMAT, "%s: key %zu at byte %zu is %s", g->name, i, at,
                              len ? "not valid UTF-8 (or holds NUL)" : "empty");
        if (!(kv->key = dup_bytes(s, len)))
            return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", g->name);
        g->n_kv = i + 1;
        at = c.pos;
        if ((rc = rd_u32(&c, &type, kv->key)))
            return rc;
        if (type >= SN_GGUF_TYPE_COUNT)
            return sn_err_set(err, SN_E_FORMAT, "%s: key '%s': value type %" PRIu32 " at byte "
                              "%zu is unknown (expected 0..12)", g->name, kv->key, type, at);
        kv->type = (int)type;
        kv->arr_type = -1;
        if (type == SN_GGUF_STRING) {
            if ((rc = rd_str(&c, MAX_STR, kv->key, &s, &len)))
                return rc;
            if (!(kv->str = dup_bytes(s, len)))
                return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", g->name);
            kv->str_len = len;
        } else if (type == SN_GGUF_ARRAY) {
            if ((rc = rd_array(&c, kv)))
                return rc;
        } else if ((rc = rd_scalar(&c, (int)type, kv, kv->key))) {
            return rc;
        }
    }
    {
        const char ***p = sn_malloc((g->n_kv + 1) * sizeof *p);
        if (!p)
            return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", g->name);
        for (size_t i = 0; i < g->n_kv; i++)
            p[i] = (const char **)&g->kvs[i].key;
        long d = first_dup(p, g->n_kv);
        if (d >= 0)
            rc = sn_err_set(err, SN_E_FORMAT, "%s: duplicate key '%s'", g->name, *p[d]);
        sn_free(p);
        if (rc)
            return rc;
    }
    int ai = sn_gguf_find(g, "general.alignment");
    if (ai >= 0) {
        const struct kv *kv = &g->kvs[ai];
        if (kv->type != SN_GGUF_U32)
            return sn_err_set(err, SN_E_FORMAT, "%s: general.alignment has type %s (expected "
                              "u32)", g->name, type_names[kv->type]);
        if (kv->v.u == 0 || (kv->v.u & (kv->v.u - 1)) || kv->v.u > MAX_ALIGN)
            return sn_err_set(err, SN_E_FORMAT, "%s: general.alignment = %" PRIu64 " (expected "
                              "a power of two in [1, %u])", g->name, kv->v.u, MAX_ALIGN);
        g->alignment = (uint32_t)kv->v.u;
    }

    for (size_t i = 0; i < n_tensors; i++) {
        struct sn_gguf_tensor *t = &g->tensors[i];
        const uint8_t *s;
        size_t len, at = c.pos;
        uint32_t nd, type;
        if ((rc = rd_str(&c, 1u << 16, "tensor name", &s, &len)))
            return rc;
        if (len == 0 || len > MAX_NAME || !utf8_ok(s, len))
            return sn_err_set(err, SN_E_FORMAT, "%s: tensor %zu at byte %zu: name of %zu bytes "
                              "(expected 1..%d bytes of UTF-8 without NUL)", g->name, i, at, len,
                              MAX_NAME);
        if (!(g->tnames[i] = dup_bytes(s, len)))
            return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", g->name);
        t->name = g->tnames[i];
        g->n_tensors = i + 1;
        if ((rc = rd_u32(&c, &nd, t->name)))
            return rc;
        if (nd < 1 || nd > SN_GGUF_MAX_DIMS)
            return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': %" PRIu32 " dimensions "
                              "(expected 1..%d)", g->name, t->name, nd, SN_GGUF_MAX_DIMS);
        t->n_dims = (int)nd;
        uint64_t nel = 1;
        for (uint32_t d = 0; d < nd; d++) {
            if ((rc = rd_u64(&c, &t->ne[d], t->name)))
                return rc;
            if (t->ne[d] == 0 || t->ne[d] > (uint64_t)INT64_MAX)
                return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': dimension %" PRIu32
                                  " is %" PRIu64 " (expected >= 1)", g->name, t->name, d,
                                  t->ne[d]);
            if (nel > (UINT64_C(1) << 62) / t->ne[d])
                return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': element count "
                                  "overflows", g->name, t->name);
            nel *= t->ne[d];
        }
        for (int d = (int)nd; d < SN_GGUF_MAX_DIMS; d++)
            t->ne[d] = 1;
        t->n_elements = nel;
        at = c.pos;
        if ((rc = rd_u32(&c, &type, t->name)) || (rc = rd_u64(&c, &t->offset, t->name)))
            return rc;
        size_t blk, blk_bytes;
        if (!sn_ggml_type_block((int)type, &blk, &blk_bytes))
            return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': ggml type %" PRIu32 " at byte "
                              "%zu is not supported (F32 0, F16 1, Q8_0 8, BF16 30)", g->name,
                              t->name, type, at);
        if (t->ne[0] % blk)
            return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': ne[0] = %" PRIu64 " is not a "
                              "multiple of %s's block of %zu", g->name, t->name, t->ne[0],
                              sn_ggml_type_name((int)type), blk);
        t->type = (int)type;
        t->nbytes = nel / blk * blk_bytes;  /* nel < 2^62, bytes per element <= 4: fits */
    }
    {
        const char ***p = sn_malloc((g->n_tensors + 1) * sizeof *p);
        if (!p)
            return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", g->name);
        for (size_t i = 0; i < g->n_tensors; i++)
            p[i] = (const char **)&g->tnames[i];
        long d = first_dup(p, g->n_tensors);
        if (d >= 0)
            rc = sn_err_set(err, SN_E_FORMAT, "%s: duplicate tensor name '%s'", g->name, *p[d]);
        sn_free(p);
        if (rc)
            return rc;
    }
    /* data section: first multiple of the alignment after the infos (c.pos <= size) */
    uint64_t a = g->alignment;
    g->data_off = ((uint64_t)c.pos + a - 1) / a * a;
    if (g->data_off > g->size && g->n_tensors)
        return sn_err_set(err, SN_E_FORMAT, "%s: the data section would start at byte %" PRIu64
                          ", past the end of the file (%zu bytes); truncated file?", g->name,
                          g->data_off, g->size);
    uint64_t data_size = g->data_off <= g->size ? g->size - g->data_off : 0, expect = 0;
    for (size_t i = 0; i < g->n_tensors; i++) {
        struct sn_gguf_tensor *t = &g->tensors[i];
        if (t->offset != expect)
            return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': offset %" PRIu64 ", expected "
                              "%" PRIu64 " (tensors must follow each other in info order, each "
                              "padded to the alignment %" PRIu32 "; overlapping or misaligned "
                              "tensors are refused)", g->name, t->name, t->offset, expect,
                              g->alignment);
        if (t->offset > data_size || t->nbytes > data_size - t->offset)
            return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': bytes [%" PRIu64 ", +%" PRIu64
                              ") run past the data section (%" PRIu64 " bytes); truncated file?",
                              g->name, t->name, t->offset, t->nbytes, data_size);
        t->data = g->base + g->data_off + t->offset;
        uint64_t padded = (t->nbytes + a - 1) / a * a;   /* nbytes <= file size: no wrap */
        expect = t->offset + padded;
    }
    return SN_OK;
}

/* ---- qwen2: shapes against the hyper-parameters ------------------------------------------- */

static int qwen2_check(struct sn_gguf *g, struct sn_err *err)
{
    struct sn_qwen2_hparams h;
    int rc = sn_qwen2_hparams_read(g, &h, err);
    if (rc)
        return rc;
    const int64_t E = h.n_embd, F = h.n_ff, Ekv = h.n_head_kv * h.head_dim, V = h.n_vocab;
    for (size_t i = 0; i < g->n_tensors; i++) {
        const struct sn_gguf_tensor *t = &g->tensors[i];
        const char *nm = t->name;
        int64_t want0 = 0, want1 = 0;   /* want1 = 0: 1-D */
        unsigned layer;
        char rest[64];
        int used = 0;
        if (!strcmp(nm, "token_embd.weight") || !strcmp(nm, "output.weight")) {
            want0 = E, want1 = V;
        } else if (!strcmp(nm, "output_norm.weight")) {
            want0 = E;
        } else if (sscanf(nm, "blk.%u.%63s%n", &layer, rest, &used) == 2 && used > 0 &&
                   nm[used] == 0) {
            if (layer >= (unsigned)h.n_layer)
                return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': layer %u, but "
                                  "qwen2.block_count is %" PRId64, g->name, nm, layer,
                                  h.n_layer);
            if (!strcmp(rest, "attn_norm.weight") || !strcmp(rest, "ffn_norm.weight") ||
                !strcmp(rest, "attn_q.bias"))
                want0 = E;
            else if (!strcmp(rest, "attn_k.bias") || !strcmp(rest, "attn_v.bias"))
                want0 = Ekv;
            else if (!strcmp(rest, "attn_q.weight") || !strcmp(rest, "attn_output.weight"))
                want0 = E, want1 = E;
            else if (!strcmp(rest, "attn_k.weight") || !strcmp(rest, "attn_v.weight"))
                want0 = E, want1 = Ekv;
            else if (!strcmp(rest, "ffn_gate.weight") || !strcmp(rest, "ffn_up.weight"))
                want0 = E, want1 = F;
            else if (!strcmp(rest, "ffn_down.weight"))
                want0 = F, want1 = E;
        }
        if (!want0)
            return sn_err_set(err, SN_E_FORMAT, "%s: unexpected tensor '%s' in a qwen2 file "
                              "(llama.cpp would refuse it too)", g->name, nm);
        int nd = want1 ? 2 : 1;
        if (t->n_dims != nd || (int64_t)t->ne[0] != want0 || (nd == 2 && (int64_t)t->ne[1] != want1))
            return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': shape {%" PRIu64 ", %" PRIu64
                              "} (%d-D), expected {%" PRId64 ", %" PRId64 "} from the "
                              "hyper-parameters", g->name, nm, t->ne[0], t->ne[1], t->n_dims,
                              want0, nd == 2 ? want1 : 1);
        if (nd == 1 && t->type != SN_GGML_F32)
            return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': 1-D tensors must be F32 "
                              "(found %s)", g->name, nm, sn_ggml_type_name(t->type));
    }
    /* every required tensor is present */
    char nm[96];
    static const char *const per_layer[] = {
        "attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight",
        "attn_output.weight", "ffn_norm.weight", "ffn_gate.weight", "ffn_up.weight",
        "ffn_down.weight"};
    if (!sn_gguf_find_tensor(g, "token_embd.weight"))
        return sn_err_set(err, SN_E_FORMAT, "%s: missing tensor 'token_embd.weight'", g->name);
    if (!sn_gguf_find_tensor(g, "output_norm.weight"))
        return sn_err_set(err, SN_E_FORMAT, "%s: missing tensor 'output_norm.weight'", g->name);
    for (int64_t l = 0; l < h.n_layer; l++)
        for (size_t k = 0; k < sizeof per_layer / sizeof *per_layer; k++) {
            snprintf(nm, sizeof nm, "blk.%" PRId64 ".%s", l, per_layer[k]);
            if (!sn_gguf_find_tensor(g, nm))
                return sn_err_set(err, SN_E_FORMAT, "%s: missing tensor '%s'", g->name, nm);
        }
    return SN_OK;
}

int sn_qwen2_hparams_read(const struct sn_gguf *g, struct sn_qwen2_hparams *h,
                          struct sn_err *err)
{
    memset(h, 0, sizeof *h);
    uint64_t E, L, F, H, Hkv, ctx;
    double eps, theta;
    int rc;
    if ((rc = sn_gguf_get_u64(g, "qwen2.embedding_length", true, 0, &E, err)) ||
        (rc = sn_gguf_get_u64(g, "qwen2.block_count", true, 0, &L, err)) ||
        (rc = sn_gguf_get_u64(g, "qwen2.feed_forward_length", true, 0, &F, err)) ||
        (rc = sn_gguf_get_u64(g, "qwen2.attention.head_count", true, 0, &H, err)) ||
        (rc = sn_gguf_get_u64(g, "qwen2.attention.head_count_kv", false, H, &Hkv, err)) ||
        (rc = sn_gguf_get_u64(g, "qwen2.context_length", true, 0, &ctx, err)) ||
        (rc = sn_gguf_get_f64(g, "qwen2.attention.layer_norm_rms_epsilon", true, 0, &eps,
                              err)) ||
        (rc = sn_gguf_get_f64(g, "qwen2.rope.freq_base", false, 10000.0, &theta, err)))
        return rc;
    if (L == 0 || L > MAX_LAYERS)
        return sn_err_set(err, SN_E_FORMAT, "%s: qwen2.block_count = %" PRIu64 " (expected "
                          "1..%d)", g->name, L, MAX_LAYERS);
    if (E == 0 || E > (1u << 16) || F == 0 || F > (1u << 18) || H == 0 || H > E || Hkv == 0 ||
        E % H || H % Hkv || (E / H) % 2 || ctx == 0 || ctx > (1u << 24))
        return sn_err_set(err, SN_E_FORMAT, "%s: inconsistent qwen2 hyper-parameters: "
                          "embedding_length %" PRIu64 ", feed_forward_length %" PRIu64
                          ", head_count %" PRIu64 ", head_count_kv %" PRIu64 ", context_length %"
                          PRIu64 " (heads must divide the embedding into even head sizes, "
                          "KV heads must divide heads)", g->name, E, F, H, Hkv, ctx);
    if (!(eps > 0 && eps < 1) || !(theta > 0 && theta < 1e12))
        return sn_err_set(err, SN_E_FORMAT, "%s: qwen2 rms epsilon %g or rope base %g out of "
                          "range", g->name, eps, theta);
    const struct sn_gguf_tensor *te = sn_gguf_find_tensor(g, "token_embd.weight");
    if (!te || te->n_dims != 2)
        return sn_err_set(err, SN_E_FORMAT, "%s: missing 2-D tensor 'token_embd.weight'",
                          g->name);
    h->n_vocab = (int64_t)te->ne[1];
    int ti = sn_gguf_find(g, "tokenizer.ggml.tokens");
    if (ti >= 0) {
        if (g->kvs[ti].type != SN_GGUF_ARRAY || g->kvs[ti].arr_type != SN_GGUF_STRING)
            return sn_err_set(err, SN_E_FORMAT, "%s: tokenizer.ggml.tokens must be an array "
                              "of strings", g->name);
        if ((int64_t)g->kvs[ti].n != h->n_vocab)
            return sn_err_set(err, SN_E_FORMAT, "%s: tokenizer.ggml.tokens has %zu entries but "
                              "token_embd.weight has %" PRId64 " rows (they must be equal)",
                              g->name, g->kvs[ti].n, h->n_vocab);
        int ty = sn_gguf_find(g, "tokenizer.ggml.token_type");
        if (ty >= 0 && (g->kvs[ty].type != SN_GGUF_ARRAY || g->kvs[ty].arr_type != SN_GGUF_I32 ||
                        g->kvs[ty].n != g->kvs[ti].n))
            return sn_err_set(err, SN_E_FORMAT, "%s: tokenizer.ggml.token_type must be an i32 "
                              "array as long as tokenizer.ggml.tokens", g->name);
    }
    int hi = sn_gguf_find(g, SN_GGUF_KEY_HEAD);
    if (hi >= 0 && (g->kvs[hi].type != SN_GGUF_ARRAY || g->kvs[hi].arr_type != SN_GGUF_F32 ||
                    g->kvs[hi].n != E))
        return sn_err_set(err, SN_E_FORMAT, "%s: %s must be an f32 array of "
                          "embedding_length = %" PRIu64 " values", g->name, SN_GGUF_KEY_HEAD, E);
    h->n_embd = (int64_t)E;
    h->n_layer = (int64_t)L;
    h->n_ff = (int64_t)F;
    h->n_head = (int64_t)H;
    h->n_head_kv = (int64_t)Hkv;
    h->head_dim = (int64_t)(E / H);
    h->n_ctx = (int64_t)ctx;
    h->eps = eps;
    h->theta = theta;
    return SN_OK;
}

/* ---- LoRA adapters: llama.cpp's convention (docs/formats.md#gguf-lora-adapter) ------------ */

/* general.type = "adapter": adapter.type must be "lora", adapter.lora.alpha (if present) a
** finite f32, and every tensor `<base name>.lora_a` {n_in, r} paired with `<base name>.lora_b`
** {r, n_out} of the same r (llama.cpp refuses anything else: docs/formats.md#gguf-lora-adapter). The base
** shapes are not in the file: llama.cpp checks them against the base model when it applies the
** adapter, and so does our test. */
static int adapter_check(struct sn_gguf *g, struct sn_err *err)
{
    const char *type = NULL;
    double alpha = 0;
    int rc = sn_gguf_get_str(g, "adapter.type", true, NULL, &type, err);
    if (rc)
        return rc;
    if (strcmp(type, "lora"))
        return sn_err_set(err, SN_E_FORMAT, "%s: adapter.type is \"%s\"; only \"lora\" is "
                          "supported", g->name, type);
    if ((rc = sn_gguf_get_f64(g, "adapter.lora.alpha", false, 0.0, &alpha, err)))
        return rc;
    if (!isfinite(alpha))
        return sn_err_set(err, SN_E_FORMAT, "%s: adapter.lora.alpha is not finite", g->name);
    for (size_t i = 0; i < g->n_tensors; i++) {
        const struct sn_gguf_tensor *t = &g->tensors[i];
        size_t n = strlen(t->name);
        bool is_a = n > 7 && !strcmp(t->name + n - 7, ".lora_a");
        bool is_b = n > 7 && !strcmp(t->name + n - 7, ".lora_b");
        if (!is_a && !is_b)
            return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s' in a LoRA adapter: names must "
                              "end in .lora_a or .lora_b", g->name, t->name);
        if (t->n_dims != 2)
            return sn_err_set(err, SN_E_FORMAT, "%s: LoRA tensor '%s' is %d-D, expected 2-D",
                              g->name, t->name, t->n_dims);
        if (!is_a)
            continue;
        char other[80];
        snprintf(other, sizeof other, "%.*s.lora_b", (int)(n - 7), t->name);
        const struct sn_gguf_tensor *b = sn_gguf_find_tensor(g, other);
        if (!b)
            return sn_err_set(err, SN_E_FORMAT, "%s: '%s' has no partner '%s'", g->name,
                              t->name, other);
        if (b->n_dims != 2 || b->ne[0] != t->ne[1] || t->ne[1] == 0)
            return sn_err_set(err, SN_E_FORMAT, "%s: '%s' {%" PRIu64 ", %" PRIu64 "} and '%s' {%"
                              PRIu64 ", %" PRIu64 "} disagree on the rank (expected lora_a "
                              "{n_in, r}, lora_b {r, n_out})", g->name, t->name, t->ne[0],
                              t->ne[1], other, b->ne[0], b->ne[1]);
    }
    for (size_t i = 0; i < g->n_tensors; i++) {  /* every lora_b has its lora_a */
        const char *nm = g->tensors[i].name;
        size_t n = strlen(nm);
        char other[80];
        if (strcmp(nm + n - 7, ".lora_b"))
            continue;
        snprintf(other, sizeof other, "%.*s.lora_a", (int)(n - 7), nm);
        if (!sn_gguf_find_tensor(g, other))
            return sn_err_set(err, SN_E_FORMAT, "%s: '%s' has no partner '%s'", g->name, nm,
                              other);
    }
    return SN_OK;
}

/* ---- open / close ------------------------------------------------------------------------- */

static int finish_open(struct sn_gguf *g, struct sn_gguf **out, struct sn_err *err)
{
    int rc = parse(g, err);
    if (!rc) {
        const char *arch = NULL;
        rc = sn_gguf_get_str(g, "general.architecture", false, NULL, &arch, err);
        const char *gtype = NULL;
        if (!rc)
            rc = sn_gguf_get_str(g, "general.type", false, NULL, &gtype, err);
        if (!rc && gtype && !strcmp(gtype, "adapter"))
            rc = adapter_check(g, err);
        else if (!rc && arch && !strcmp(arch, "qwen2"))
            rc = qwen2_check(g, err);
    }
    if (rc) {
        sn_gguf_close(g);
        return rc;
    }
    *out = g;
    return SN_OK;
}

int sn_gguf_open_memory(const void *data, size_t len, const char *name, struct sn_gguf **out,
                        struct sn_err *err)
{
    *out = NULL;
    struct sn_gguf *g = sn_calloc(1, sizeof *g);
    if (!g)
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", name);
    g->name = sn_strdup(name ? name : "gguf");
    if (!g->name) {
        sn_free(g);
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", name);
    }
    g->base = data;
    g->size = len;
    return finish_open(g, out, err);
}

int sn_gguf_open(const char *path, struct sn_gguf **out, struct sn_err *err)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sn_err_set(err, SN_E_IO, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return sn_err_set(err, SN_E_IO, "%s: not a regular file", path);
    }
    struct sn_gguf *g = sn_calloc(1, sizeof *g);
    if (!g || !(g->name = sn_strdup(path))) {
        close(fd);
        sn_free(g);
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
    }
    g->size = (size_t)st.st_size;
    if (g->size) {
        g->map = mmap(NULL, g->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (g->map == MAP_FAILED) {
            g->map = NULL;
            close(fd);
            sn_gguf_close(g);
            return sn_err_set(err, SN_E_IO, "%s: mmap: %s", path, strerror(errno));
        }
        g->map_len = g->size;
        g->base = g->map;
    } else {
        g->base = (const uint8_t *)"";
    }
    close(fd);
    return finish_open(g, out, err);
}

void sn_gguf_close(struct sn_gguf *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->n_kv; i++) {
        struct kv *kv = &g->kvs[i];
        sn_free(kv->key);
        sn_free(kv->str);
        sn_free(kv->arr);
        sn_free(kv->strs);
        sn_free(kv->lens);
        sn_free(kv->arena);
    }
    sn_free(g->kvs);
    for (size_t i = 0; i < g->n_tensors; i++)
        sn_free(g->tnames[i]);
    sn_free(g->tnames);
    sn_free(g->tensors);
    if (g->map)
        munmap(g->map, g->map_len);
    sn_free(g->name);
    sn_free(g);
}

/* ---- accessors ---------------------------------------------------------------------------- */

uint32_t sn_gguf_version(const struct sn_gguf *g) { return g->version; }
uint32_t sn_gguf_alignment(const struct sn_gguf *g) { return g->alignment; }
size_t sn_gguf_n_kv(const struct sn_gguf *g) { return g->n_kv; }
const char *sn_gguf_key(const struct sn_gguf *g, size_t i) { return i < g->n_kv ? g->kvs[i].key : NULL; }
int sn_gguf_kv_type(const struct sn_gguf *g, size_t i) { return i < g->n_kv ? g->kvs[i].type : -1; }
int sn_gguf_arr_type(const struct sn_gguf *g, size_t i)
{
    return i < g->n_kv && g->kvs[i].type == SN_GGUF_ARRAY ? g->kvs[i].arr_type : -1;
}
size_t sn_gguf_arr_n(const struct sn_gguf *g, size_t i)
{
    return i < g->n_kv && g->kvs[i].type == SN_GGUF_ARRAY ? g->kvs[i].n : 0;
}
size_t sn_gguf_n_tensors(const struct sn_gguf *g) { return g->n_tensors; }
const struct sn_gguf_tensor *sn_gguf_tensor(const struct sn_gguf *g, size_t i)
{
    return i < g->n_tensors ? &g->tensors[i] : NULL;
}

int sn_gguf_find(const struct sn_gguf *g, const char *key)
{
    for (size_t i = 0; i < g->n_kv; i++)
        if (!strcmp(g->kvs[i].key, key))
            return (int)i;
    return -1;
}

const struct sn_gguf_tensor *sn_gguf_find_tensor(const struct sn_gguf *g, const char *name)
{
    for (size_t i = 0; i < g->n_tensors; i++)
        if (!strcmp(g->tensors[i].name, name))
            return &g->tensors[i];
    return NULL;
}

static const struct kv *get(const struct sn_gguf *g, const char *key, bool required,
                            struct sn_err *err, int *rc)
{
    int i = sn_gguf_find(g, key);
    *rc = SN_OK;
    if (i < 0 && required)
        *rc = sn_err_set(err, SN_E_FORMAT, "%s: missing key '%s'", g->name, key);
    return i < 0 ? NULL : &g->kvs[i];
}

static int wrong_type(const struct sn_gguf *g, const struct kv *kv, const char *want,
                      struct sn_err *err)
{
    return sn_err_set(err, SN_E_FORMAT, "%s: key '%s' has type %s%s%s (expected %s)", g->name,
                      kv->key, type_names[kv->type], kv->type == SN_GGUF_ARRAY ? " of " : "",
                      kv->type == SN_GGUF_ARRAY ? type_names[kv->arr_type] : "", want);
}

static bool is_int(int t)
{
    return t == SN_GGUF_U8 || t == SN_GGUF_I8 || t == SN_GGUF_U16 || t == SN_GGUF_I16 ||
           t == SN_GGUF_U32 || t == SN_GGUF_I32 || t == SN_GGUF_U64 || t == SN_GGUF_I64;
}

static bool is_signed(int t)
{
    return t == SN_GGUF_I8 || t == SN_GGUF_I16 || t == SN_GGUF_I32 || t == SN_GGUF_I64;
}

int sn_gguf_get_u64(const struct sn_gguf *g, const char *key, bool required, uint64_t dflt,
                    uint64_t *out, struct sn_err *err)
{
    int rc;
    const struct kv *kv = get(g, key, required, err, &rc);
    if (rc || !kv) {
        *out = dflt;
        return rc;
    }
    if (!is_int(kv->type))
        return wrong_type(g, kv, "an unsigned integer", err);
    if (is_signed(kv->type) && kv->v.i < 0)
        return sn_err_set(err, SN_E_FORMAT, "%s: key '%s' is %" PRId64 " (expected >= 0)",
                          g->name, key, kv->v.i);
    *out = kv->v.u;
    return SN_OK;
}

int sn_gguf_get_f64(const struct sn_gguf *g, const char *key, bool required, double dflt,
                    double *out, struct sn_err *err)
{
    int rc;
    const struct kv *kv = get(g, key, required, err, &rc);
    if (rc || !kv) {
        *out = dflt;
        return rc;
    }
    if (kv->type != SN_GGUF_F32 && kv->type != SN_GGUF_F64)
        return wrong_type(g, kv, "f32 or f64", err);
    *out = kv->v.f;
    return SN_OK;
}

int sn_gguf_get_bool(const struct sn_gguf *g, const char *key, bool required, bool dflt,
                     bool *out, struct sn_err *err)
{
    int rc;
    const struct kv *kv = get(g, key, required, err, &rc);
    if (rc || !kv) {
        *out = dflt;
        return rc;
    }
    if (kv->type != SN_GGUF_BOOL)
        return wrong_type(g, kv, "bool", err);
    *out = kv->v.u != 0;
    return SN_OK;
}

int sn_gguf_get_str(const struct sn_gguf *g, const char *key, bool required, const char *dflt,
                    const char **out, struct sn_err *err)
{
    int rc;
    const struct kv *kv = get(g, key, required, err, &rc);
    if (rc || !kv) {
        *out = dflt;
        return rc;
    }
    if (kv->type != SN_GGUF_STRING)
        return wrong_type(g, kv, "string", err);
    *out = kv->str;
    return SN_OK;
}

static int get_arr(const struct sn_gguf *g, const char *key, int et, const char *want,
                   const struct kv **kvp, struct sn_err *err)
{
    int rc;
    const struct kv *kv = get(g, key, true, err, &rc);
    if (rc)
        return rc;
    if (kv->type != SN_GGUF_ARRAY || kv->arr_type != et)
        return wrong_type(g, kv, want, err);
    *kvp = kv;
    return SN_OK;
}

int sn_gguf_get_arr_str(const struct sn_gguf *g, const char *key, const char *const **v,
                        const size_t **lens, size_t *n, struct sn_err *err)
{
    const struct kv *kv = NULL;
    int rc = get_arr(g, key, SN_GGUF_STRING, "array of string", &kv, err);
    if (rc)
        return rc;
    *v = (const char *const *)kv->strs;
    if (lens)
        *lens = kv->lens;
    *n = kv->n;
    return SN_OK;
}

int sn_gguf_get_arr_i32(const struct sn_gguf *g, const char *key, const int32_t **v, size_t *n,
                        struct sn_err *err)
{
    const struct kv *kv = NULL;
    int rc = get_arr(g, key, SN_GGUF_I32, "array of i32", &kv, err);
    if (rc)
        return rc;
    *v = kv->arr;
    *n = kv->n;
    return SN_OK;
}

int sn_gguf_get_arr_f32(const struct sn_gguf *g, const char *key, const float **v, size_t *n,
                        struct sn_err *err)
{
    const struct kv *kv = NULL;
    int rc = get_arr(g, key, SN_GGUF_F32, "array of f32", &kv, err);
    if (rc)
        return rc;
    *v = kv->arr;
    *n = kv->n;
    return SN_OK;
}

static int describe_scalar(struct sn_buf *o, int type, const void *p, struct sn_err *err)
{
    switch (type) {
    case SN_GGUF_U8: return sn_buf_printf(o, err, "%u", *(const uint8_t *)p);
    case SN_GGUF_I8: return sn_buf_printf(o, err, "%d", *(const int8_t *)p);
    case SN_GGUF_U16: { uint16_t x; memcpy(&x, p, 2); return sn_buf_printf(o, err, "%u", x); }
    case SN_GGUF_I16: { int16_t x; memcpy(&x, p, 2); return sn_buf_printf(o, err, "%d", x); }
    case SN_GGUF_U32: { uint32_t x; memcpy(&x, p, 4); return sn_buf_printf(o, err, "%" PRIu32, x); }
    case SN_GGUF_I32: { int32_t x; memcpy(&x, p, 4); return sn_buf_printf(o, err, "%" PRId32, x); }
    case SN_GGUF_F32: { float x; memcpy(&x, p, 4); return sn_buf_printf(o, err, "%.9g", x); }
    case SN_GGUF_BOOL: return sn_buf_puts(o, *(const uint8_t *)p ? "true" : "false", err);
    case SN_GGUF_U64: { uint64_t x; memcpy(&x, p, 8); return sn_buf_printf(o, err, "%" PRIu64, x); }
    case SN_GGUF_I64: { int64_t x; memcpy(&x, p, 8); return sn_buf_printf(o, err, "%" PRId64, x); }
    case SN_GGUF_F64: { double x; memcpy(&x, p, 8); return sn_buf_printf(o, err, "%.17g", x); }
    default: return sn_buf_puts(o, "?", err);
    }
}

/* A string shown on one line: control bytes escaped, cut at max bytes. */
static int put_quoted(struct sn_buf *o, const char *s, size_t n, size_t max, struct sn_err *err)
{
    int rc = sn_buf_puts(o, "\"", err);
    for (size_t i = 0; !rc && i < n && i < max; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '\n')
            rc = sn_buf_puts(o, "\\n", err);
        else if (ch == '"' || ch == '\\')
            rc = sn_buf_printf(o, err, "\\%c", ch);
        else if (ch < 0x20 || ch == 0x7f)
            rc = sn_buf_printf(o, err, "\\x%02x", ch);
        else
            rc = sn_buf_append(o, &s[i], 1, err);
    }
    if (!rc)
        rc = sn_buf_puts(o, n > max ? "\"..." : "\"", err);
    return rc;
}

int sn_gguf_kv_describe(const struct sn_gguf *g, size_t i, struct sn_buf *o, struct sn_err *err)
{
    if (i >= g->n_kv)
        return sn_err_set(err, SN_E_ARG, "%s: no key %zu", g->name, i);
    const struct kv *kv = &g->kvs[i];
    int rc = sn_buf_printf(o, err, "%s = ", kv->key);
    if (rc)
        return rc;
    if (kv->type == SN_GGUF_STRING)
        return put_quoted(o, kv->str, kv->str_len, 120, err);
    if (kv->type != SN_GGUF_ARRAY) {
        uint8_t b[8];
        switch (kv->type) {  /* back to the on-disk width for the printer */
        case SN_GGUF_F32: { float x = (float)kv->v.f; memcpy(b, &x, 4); break; }
        case SN_GGUF_F64: memcpy(b, &kv->v.f, 8); break;
        default: memcpy(b, &kv->v.u, 8); break;  /* little-endian: low bytes first */
        }
        if (is_signed(kv->type))
            memcpy(b, &kv->v.i, 8);
        return describe_scalar(o, kv->type, b, err);
    }
    rc = sn_buf_printf(o, err, "[%s x %zu]", type_names[kv->arr_type], kv->n);
    size_t show = kv->n < 6 ? kv->n : 6;
    for (size_t k = 0; !rc && k < show; k++) {
        rc = sn_buf_puts(o, k ? ", " : " ", err);
        if (rc)
            break;
        if (kv->arr_type == SN_GGUF_STRING)
            rc = put_quoted(o, kv->strs[k], kv->lens[k], 40, err);
        else
            rc = describe_scalar(o, kv->arr_type,
                                 (const uint8_t *)kv->arr + k * scalar_size[kv->arr_type], err);
    }
    if (!rc && show < kv->n)
        rc = sn_buf_puts(o, ", ...", err);
    return rc;
}

int sn_gguf_tensor_to_f32(const struct sn_gguf_tensor *t, float *out, struct sn_err *err)
{
    const uint8_t *p = t->data;
    switch (t->type) {
    case SN_GGML_F32:
        memcpy(out, p, t->n_elements * 4);
        return SN_OK;
    case SN_GGML_F16:
        for (uint64_t i = 0; i < t->n_elements; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            out[i] = sn_f16_to_f32(h);
        }
        return SN_OK;
    case SN_GGML_BF16:
        for (uint64_t i = 0; i < t->n_elements; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            out[i] = sn_bf16_to_f32(h);
        }
        return SN_OK;
    case SN_GGML_Q8_0:   /* ggml's dequantize_row_q8_0: x = d · q */
        for (uint64_t b = 0; b < t->n_elements / SN_Q8_0_BLOCK; b++) {
            const uint8_t *blk = p + b * (2 + SN_Q8_0_BLOCK);
            uint16_t h;
            memcpy(&h, blk, 2);
            const float d = sn_f16_to_f32(h);
            for (int j = 0; j < SN_Q8_0_BLOCK; j++)
                out[b * SN_Q8_0_BLOCK + j] = d * (float)(int8_t)blk[2 + j];
        }
        return SN_OK;
    default:
        return sn_err_set(err, SN_E_FORMAT, "tensor '%s': type %d cannot be converted", t->name,
                          t->type);
    }
}
