/* export/gguf_writer.c: the GGUF v3 writer of `sentinel export` (export/write.h; layout:
** docs/formats.md#gguf, the same as the reader's in export/gguf.c): KVs and tensors in the
** order they were added, general.alignment 32, written atomically (temp + fsync + rename), and
** ggml's Q8_0 quantization. Part of the export tool (sn_export_write), not of the runtime
** detector library. */
#include "export/write_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ggml's quantize_row_q8_0_ref (ggml-quants.c): per block of 32, d = max|x| / 127 stored as f16,
** q = round(x / d) (x · (1/d), as ggml computes it, so the bytes match ggml's converter). */
void sn_q8_0_quantize(const float *x, size_t n, uint8_t *out)
{
    for (size_t b = 0; b < n / SN_Q8_0_BLOCK; b++) {
        const float *v = x + b * SN_Q8_0_BLOCK;
        uint8_t *blk = out + b * (2 + SN_Q8_0_BLOCK);
        float amax = 0.0f;
        for (int j = 0; j < SN_Q8_0_BLOCK; j++)
            amax = fmaxf(amax, fabsf(v[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        const uint16_t h = sn_f32_to_f16(d);
        memcpy(blk, &h, 2);
        for (int j = 0; j < SN_Q8_0_BLOCK; j++)
            blk[2 + j] = (uint8_t)(int8_t)roundf(v[j] * id);
    }
}

/* ---- writer ------------------------------------------------------------------------------- */

struct wkv {
    char    *key;
    int      type, arr_type;
    uint8_t  scalar[8];
    char    *str;
    void    *arr;        /* numeric elements, or char ** for strings */
    size_t   n;
};

struct wtensor {
    char       *name;
    int         type, n_dims;
    uint64_t    ne[SN_GGUF_MAX_DIMS];
    uint64_t    nbytes;
    const void *data;
};

struct sn_gguf_writer {
    struct wkv     *kvs;
    size_t          n_kv, cap_kv;
    struct wtensor *ts;
    size_t          n_ts, cap_ts;
};

int sn_gguf_writer_create(struct sn_gguf_writer **out, struct sn_err *err)
{
    *out = sn_calloc(1, sizeof **out);
    return *out ? SN_OK : sn_err_set(err, SN_E_NOMEM, "gguf writer: out of memory");
}

static void wkv_clear(struct wkv *kv)
{
    if (kv->type == SN_GGUF_ARRAY && kv->arr_type == SN_GGUF_STRING)
        for (size_t i = 0; i < kv->n; i++)
            sn_free(((char **)kv->arr)[i]);
    sn_free(kv->arr);
    sn_free(kv->str);
    sn_free(kv->key);
    memset(kv, 0, sizeof *kv);
}

void sn_gguf_writer_free(struct sn_gguf_writer *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n_kv; i++)
        wkv_clear(&w->kvs[i]);
    for (size_t i = 0; i < w->n_ts; i++)
        sn_free(w->ts[i].name);
    sn_free(w->kvs);
    sn_free(w->ts);
    sn_free(w);
}

/* A new or replaced KV slot for key (values of a replaced key are freed). */
static struct wkv *wkv_slot(struct sn_gguf_writer *w, const char *key, struct sn_err *err)
{
    if (!key || !*key || strlen(key) > SN_GGUF_MAX_KEY) {
        sn_err_set(err, SN_E_ARG, "gguf writer: key must have 1..%d bytes", SN_GGUF_MAX_KEY);
        return NULL;
    }
    for (size_t i = 0; i < w->n_kv; i++)
        if (!strcmp(w->kvs[i].key, key)) {
            char *k = w->kvs[i].key;
            w->kvs[i].key = NULL;
            wkv_clear(&w->kvs[i]);
            w->kvs[i].key = k;
            return &w->kvs[i];
        }
    if (w->n_kv == w->cap_kv) {
        size_t cap = w->cap_kv ? 2 * w->cap_kv : 32;
        struct wkv *k = sn_realloc(w->kvs, cap * sizeof *k);
        if (!k) {
            sn_err_set(err, SN_E_NOMEM, "gguf writer: out of memory");
            return NULL;
        }
        w->kvs = k;
        w->cap_kv = cap;
    }
    struct wkv *kv = &w->kvs[w->n_kv];
    memset(kv, 0, sizeof *kv);
    if (!(kv->key = sn_strdup(key))) {
        sn_err_set(err, SN_E_NOMEM, "gguf writer: out of memory");
        return NULL;
    }
    w->n_kv++;
    return kv;
}

static int set_scalar(struct sn_gguf_writer *w, const char *key, int type, const void *v,
                      struct sn_err *err)
{
    struct wkv *kv = wkv_slot(w, key, err);
    if (!kv)
        return err ? err->code : SN_E_NOMEM;
    kv->type = type;
    memcpy(kv->scalar, v, sn_gguf_scalar_size(type));
    return SN_OK;
}

int sn_gguf_writer_set_u32(struct sn_gguf_writer *w, const char *key, uint32_t v,
                           struct sn_err *err)
{
    return set_scalar(w, key, SN_GGUF_U32, &v, err);
}

int sn_gguf_writer_set_i32(struct sn_gguf_writer *w, const char *key, int32_t v,
                           struct sn_err *err)
{
    return set_scalar(w, key, SN_GGUF_I32, &v, err);
}

int sn_gguf_writer_set_u64(struct sn_gguf_writer *w, const char *key, uint64_t v,
                           struct sn_err *err)
{
    return set_scalar(w, key, SN_GGUF_U64, &v, err);
}

int sn_gguf_writer_set_f32(struct sn_gguf_writer *w, const char *key, float v,
                           struct sn_err *err)
{
    return set_scalar(w, key, SN_GGUF_F32, &v, err);
}

int sn_gguf_writer_set_bool(struct sn_gguf_writer *w, const char *key, bool v,
                            struct sn_err *err)
{
    uint8_t b = v ? 1 : 0;
    return set_scalar(w, key, SN_GGUF_BOOL, &b, err);
}

int sn_gguf_writer_set_str(struct sn_gguf_writer *w, const char *key, const char *v,
                           struct sn_err *err)
{
    struct wkv *kv = wkv_slot(w, key, err);
    if (!kv)
        return err ? err->code : SN_E_NOMEM;
    kv->type = SN_GGUF_STRING;
    if (!(kv->str = sn_strdup(v ? v : "")))
        return sn_err_set(err, SN_E_NOMEM, "gguf writer: out of memory");
    return SN_OK;
}

static int set_arr(struct sn_gguf_writer *w, const char *key, int et, const void *v, size_t n,
                   struct sn_err *err)
{
    if (n > SN_GGUF_MAX_ARR)
        return sn_err_set(err, SN_E_ARG, "gguf writer: key '%s': %zu elements (limit %u)", key,
                          n, SN_GGUF_MAX_ARR);
    struct wkv *kv = wkv_slot(w, key, err);
    if (!kv)
        return err ? err->code : SN_E_NOMEM;
    kv->type = SN_GGUF_ARRAY;
    kv->arr_type = et;
    size_t el = et == SN_GGUF_STRING ? sizeof(char *) : sn_gguf_scalar_size(et);
    kv->arr = sn_calloc(n + 1, el);
    if (!kv->arr)
        return sn_err_set(err, SN_E_NOMEM, "gguf writer: out of memory");
    if (et != SN_GGUF_STRING) {
        if (n)
            memcpy(kv->arr, v, n * el);
        kv->n = n;
        return SN_OK;
    }
    const char *const *s = v;
    char **d = kv->arr;
    for (size_t i = 0; i < n; i++) {
        if (!(d[i] = sn_strdup(s[i] ? s[i] : "")))
            return sn_err_set(err, SN_E_NOMEM, "gguf writer: out of memory");
        kv->n = i + 1;
    }
    return SN_OK;
}

int sn_gguf_writer_set_arr_str(struct sn_gguf_writer *w, const char *key,
                               const char *const *v, size_t n, struct sn_err *err)
{
    return set_arr(w, key, SN_GGUF_STRING, v, n, err);
}

int sn_gguf_writer_set_arr_i32(struct sn_gguf_writer *w, const char *key, const int32_t *v,
                               size_t n, struct sn_err *err)
{
    return set_arr(w, key, SN_GGUF_I32, v, n, err);
}

int sn_gguf_writer_set_arr_f32(struct sn_gguf_writer *w, const char *key, const float *v,
                               size_t n, struct sn_err *err)
{
    return set_arr(w, key, SN_GGUF_F32, v, n, err);
}

int sn_gguf_writer_add_tensor(struct sn_gguf_writer *w, const char *name, int type,
                              int n_dims, const uint64_t *ne, const void *data,
                              struct sn_err *err)
{
    if (!name || !*name || strlen(name) > SN_GGUF_MAX_NAME)
        return sn_err_set(err, SN_E_ARG, "gguf writer: tensor name must have 1..%d bytes",
                          SN_GGUF_MAX_NAME);
    size_t blk, blk_bytes;
    if (!sn_ggml_type_block(type, &blk, &blk_bytes) || n_dims < 1 || n_dims > SN_GGUF_MAX_DIMS)
        return sn_err_set(err, SN_E_ARG, "gguf writer: tensor '%s': bad type or dims", name);
    if (ne[0] % blk)
        return sn_err_set(err, SN_E_ARG, "gguf writer: tensor '%s': ne[0] = %" PRIu64 " is not "
                          "a multiple of %s's block of %zu", name, ne[0],
                          sn_ggml_type_name(type), blk);
    for (size_t i = 0; i < w->n_ts; i++)
        if (!strcmp(w->ts[i].name, name))
            return sn_err_set(err, SN_E_ARG, "gguf writer: duplicate tensor '%s'", name);
    size_t nel = 1;
    for (int d = 0; d < n_dims; d++)
        if (!ne[d] || !sn_mul_ok(nel, (size_t)ne[d], &nel))
            return sn_err_set(err, SN_E_ARG, "gguf writer: tensor '%s': bad dimensions", name);
    if (w->n_ts == w->cap_ts) {
        size_t cap = w->cap_ts ? 2 * w->cap_ts : 64;
        struct wtensor *t = sn_realloc(w->ts, cap * sizeof *t);
        if (!t)
            return sn_err_set(err, SN_E_NOMEM, "gguf writer: out of memory");
        w->ts = t;
        w->cap_ts = cap;
    }
    struct wtensor *t = &w->ts[w->n_ts];
    memset(t, 0, sizeof *t);
    if (!(t->name = sn_strdup(name)))
        return sn_err_set(err, SN_E_NOMEM, "gguf writer: out of memory");
    t->type = type;
    t->n_dims = n_dims;
    for (int d = 0; d < SN_GGUF_MAX_DIMS; d++)
        t->ne[d] = d < n_dims ? ne[d] : 1;
    t->nbytes = (uint64_t)(nel / blk) * blk_bytes;
    t->data = data;
    w->n_ts++;
    return SN_OK;
}

/* Serialisation through a sink: a growing buffer or a stream. */
struct sink {
    struct sn_buf *buf;
    FILE          *f;
    uint64_t       pos;
    struct sn_err *err;
    int            rc;
};

static void put(struct sink *s, const void *p, size_t n)
{
    if (s->rc || !n)
        return;
    if (s->buf)
        s->rc = sn_buf_append(s->buf, p, n, s->err);
    else if (fwrite(p, 1, n, s->f) != n)
        s->rc = sn_err_set(s->err, SN_E_IO, "gguf writer: write failed: %s", strerror(errno));
    s->pos += n;
}

static void put_u32(struct sink *s, uint32_t v) { put(s, &v, 4); }
static void put_u64(struct sink *s, uint64_t v) { put(s, &v, 8); }
static void put_str(struct sink *s, const char *v)
{
    size_t n = strlen(v);
    put_u64(s, n);
    put(s, v, n);
}

static void put_pad(struct sink *s, uint64_t align)
{
    static const uint8_t zero[64];
    uint64_t k = (align - s->pos % align) % align;
    while (k && !s->rc) {
        size_t m = k > sizeof zero ? sizeof zero : (size_t)k;
        put(s, zero, m);
        k -= m;
    }
}

static int serialise(const struct sn_gguf_writer *w, struct sink *s)
{
    const uint32_t align = 32;
    put(s, SN_GGUF_MAGIC, 4);
    put_u32(s, 3);
    put_u64(s, w->n_ts);
    bool has_align = false;
    for (size_t i = 0; i < w->n_kv; i++)
        has_align |= !strcmp(w->kvs[i].key, "general.alignment");
    put_u64(s, w->n_kv + !has_align);
    for (size_t i = 0; i < w->n_kv; i++) {
        const struct wkv *kv = &w->kvs[i];
        put_str(s, kv->key);
        put_u32(s, (uint32_t)kv->type);
        if (kv->type == SN_GGUF_STRING) {
            put_str(s, kv->str);
        } else if (kv->type == SN_GGUF_ARRAY) {
            put_u32(s, (uint32_t)kv->arr_type);
            put_u64(s, kv->n);
            if (kv->arr_type == SN_GGUF_STRING)
                for (size_t k = 0; k < kv->n; k++)
                    put_str(s, ((char **)kv->arr)[k]);
            else
                put(s, kv->arr, kv->n * sn_gguf_scalar_size(kv->arr_type));
        } else {
            put(s, kv->scalar, sn_gguf_scalar_size(kv->type));
        }
    }
    if (!has_align) {
        put_str(s, "general.alignment");
        put_u32(s, SN_GGUF_U32);
        put_u32(s, align);
    }
    uint64_t off = 0;
    for (size_t i = 0; i < w->n_ts; i++) {
        const struct wtensor *t = &w->ts[i];
        put_str(s, t->name);
        put_u32(s, (uint32_t)t->n_dims);
        for (int d = 0; d < t->n_dims; d++)
            put_u64(s, t->ne[d]);
        put_u32(s, (uint32_t)t->type);
        put_u64(s, off);
        off += (t->nbytes + align - 1) / align * align;
    }
    put_pad(s, align);
    for (size_t i = 0; i < w->n_ts; i++) {
        put(s, w->ts[i].data, w->ts[i].nbytes);
        put_pad(s, align);
    }
    return s->rc;
}

int sn_gguf_writer_to_memory(const struct sn_gguf_writer *w, uint8_t **out, size_t *len,
                             struct sn_err *err)
{
    struct sn_buf b = {0};
    b.max = SIZE_MAX / 2;
    struct sink s = {&b, NULL, 0, err, SN_OK};
    int rc = serialise(w, &s);
    if (rc) {
        sn_buf_free(&b);
        return rc;
    }
    *out = (uint8_t *)b.data;
    *len = b.len;
    return SN_OK;
}

int sn_gguf_writer_save(const struct sn_gguf_writer *w, const char *path, struct sn_err *err)
{
    struct sn_atomic_file *f = NULL;
    int rc = sn_atomic_open(path, &f, err);
    if (rc)
        return rc;
    struct sink s = {NULL, sn_atomic_stream(f), 0, err, SN_OK};
    rc = serialise(w, &s);
    if (rc) {
        sn_atomic_abort(f);
        return sn_err_wrap(err, "%s", path);
    }
    return sn_atomic_commit(f, err);
}
