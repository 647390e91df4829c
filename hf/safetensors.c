/* hf/safetensors.c: safetensors reader (mmap, every header field validated) and atomic
** writer. Format and the checks made: hf/safetensors.h, docs/formats.md#safetensors. */
#include "hf/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The reference implementation refuses headers above 100 MB (safetensors MAX_HEADER_SIZE). */
#define ST_MAX_HEADER ((uint64_t)100000000)
/* JSON numbers go through double in cJSON: integers above 2^53 cannot be represented exactly. */
#define ST_MAX_JSON_INT 9007199254740992.0

static const struct {
    const char *name;
    size_t      size;
} dtypes[] = {
    [SN_ST_F32] = {"F32", 4},   [SN_ST_F16] = {"F16", 2},   [SN_ST_BF16] = {"BF16", 2},
    [SN_ST_F64] = {"F64", 8},   [SN_ST_I64] = {"I64", 8},   [SN_ST_I32] = {"I32", 4},
    [SN_ST_I16] = {"I16", 2},   [SN_ST_I8] = {"I8", 1},     [SN_ST_U8] = {"U8", 1},
    [SN_ST_BOOL] = {"BOOL", 1}, [SN_ST_U16] = {"U16", 2},   [SN_ST_U32] = {"U32", 4},
    [SN_ST_U64] = {"U64", 8},
};
_Static_assert(sizeof dtypes / sizeof dtypes[0] == SN_ST_DTYPE_COUNT, "dtype table out of sync");

const char *sn_st_dtype_name(enum sn_st_dtype dt)
{
    return (unsigned)dt < SN_ST_DTYPE_COUNT ? dtypes[dt].name : "?";
}

size_t sn_st_dtype_size(enum sn_st_dtype dt)
{
    return (unsigned)dt < SN_ST_DTYPE_COUNT ? dtypes[dt].size : 0;
}

bool sn_st_dtype_parse(const char *name, enum sn_st_dtype *out)
{
    for (int i = 0; i < SN_ST_DTYPE_COUNT; i++) {
        if (!strcmp(name, dtypes[i].name)) {
            *out = (enum sn_st_dtype)i;
            return true;
        }
    }
    return false;
}

/* ---- reader ------------------------------------------------------------------------------- */

struct sn_st_file {
    char                *path;
    void                *map;      /* mmap'ed file, or NULL for memory input */
    size_t               map_len;
    const uint8_t       *bytes;    /* whole input */
    size_t               len;
    struct sn_st_tensor *tensors;  /* sorted by offset */
    size_t               n_tensors;
    char               **meta;     /* key, value pairs */
    size_t               n_meta;
    size_t              *by_name;  /* indices into tensors sorted by name */
};

void sn_st_close(struct sn_st_file *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n_tensors; i++)
        sn_free((char *)f->tensors[i].name);
    sn_free(f->tensors);
    for (size_t i = 0; i < 2 * f->n_meta; i++)
        sn_free(f->meta[i]);
    sn_free(f->meta);
    sn_free(f->by_name);
    if (f->map)
        munmap(f->map, f->map_len);
    sn_free(f->path);
    sn_free(f);
}

static int cmp_offset(const void *a, const void *b)
{
    const struct sn_st_tensor *x = a, *y = b;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    if (x->nbytes != y->nbytes)
        return x->nbytes < y->nbytes ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* qsort_r is not C11; sort indices with a file-scope context-free comparator over pairs. */
struct name_idx {
    const char *name;
    size_t      idx;
};

static int cmp_name_idx(const void *a, const void *b)
{
    return strcmp(((const struct name_idx *)a)->name, ((const struct name_idx *)b)->name);
}

/* A JSON number that must be a non-negative integer representable exactly. */
static bool json_uint(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v))
        return false;
    double d = v->valuedouble;
    if (!(d >= 0.0) || d > ST_MAX_JSON_INT || floor(d) != d)
        return false;
    *out = (uint64_t)d;
    return true;
}

static int parse_tensor(struct sn_st_file *f, const cJSON *ent, struct sn_st_tensor *t,
                        uint64_t data_len, struct sn_err *err)
{
    const char *p = f->path, *name = ent->string;
    if (!cJSON_IsObject(ent))
        return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': header entry is not an object", p,
                          name);
    for (const cJSON *k = ent->child; k; k = k->next) {
        if (strcmp(k->string, "dtype") && strcmp(k->string, "shape") &&
            strcmp(k->string, "data_offsets"))
            return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': unknown header field '%s' "
                              "(expected dtype, shape, data_offsets)", p, name, k->string);
    }
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(ent, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(ent, "shape");
    const cJSON *of = cJSON_GetObjectItemCaseSensitive(ent, "data_offsets");
    if (!cJSON_IsString(dt))
        return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': missing or non-string 'dtype'", p,
                          name);
    if (!sn_st_dtype_parse(dt->valuestring, &t->dtype))
        return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': unknown dtype '%.32s' (expected "
                          "F32, F16, BF16, F64, I64, I32, I16, I8, U8, BOOL, U16, U32 or U64)",
                          p, name, dt->valuestring);
    if (!cJSON_IsArray(sh))
        return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': missing or non-array 'shape'", p,
                          name);
    int nd = cJSON_GetArraySize(sh);
    if (nd > SN_ST_MAX_DIMS)
        return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': %d dimensions (at most %d)", p,
                          name, nd, SN_ST_MAX_DIMS);
    t->n_dims = nd;
    size_t n_el = 1;
    int d = 0;
    for (const cJSON *e = sh->child; e; e = e->next, d++) {
        uint64_t v;
        if (cJSON_IsNumber(e) && e->valuedouble > ST_MAX_JSON_INT &&
            floor(e->valuedouble) == e->valuedouble)
            return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': shape[%d] = %.17g overflows "
                              "(a dimension must be below 2^53)", p, name, d, e->valuedouble);
        if (!json_uint(e, &v))
            return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': shape[%d] is not a "
                              "non-negative integer", p, name, d);
        t->shape[d] = (int64_t)v;
        if (v > SIZE_MAX || !sn_mul_ok(n_el, (size_t)v, &n_el))
            return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': shape overflows: the product "
                              "of its dimensions up to shape[%d] = %" PRIu64 " exceeds %zu "
                              "elements", p, name, d, v, (size_t)SIZE_MAX);
    }
    t->n_elements = n_el;
    size_t nbytes;
    if (!sn_mul_ok(n_el, sn_st_dtype_size(t->dtype), &nbytes))
        return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': byte size overflows", p, name);
    if (!cJSON_IsArray(of) || cJSON_GetArraySize(of) != 2)
        return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': 'data_offsets' must be [begin, "
                          "end]", p, name);
    uint64_t b, e;
    if (!json_uint(of->child, &b) || !json_uint(of->child->next, &e))
        return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': data_offsets are not "
                          "non-negative integers", p, name);
    if (b > e)
        return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': data_offsets [%" PRIu64
                          ", %" PRIu64 ") end before they begin", p, name, b, e);
    if (e > data_len)
        return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': bytes [%" PRIu64 ", %" PRIu64
                          ") run past the data section (%" PRIu64 " bytes); truncated file?",
                          p, name, b, e, data_len);
    if (e - b != nbytes)
        return sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': %s x %" PRIu64 " elements needs "
                          "%zu bytes but data_offsets span %" PRIu64, p, name,
                          sn_st_dtype_name(t->dtype), (uint64_t)n_el, nbytes, e - b);
    t->offset = b;
    t->nbytes = e - b;
    return SN_OK;
}

static int parse_meta(struct sn_st_file *f, const cJSON *m, struct sn_err *err)
{
    if (!cJSON_IsObject(m))
        return sn_err_set(err, SN_E_FORMAT, "%s: '__metadata__' is not an object", f->path);
    size_t n = (size_t)cJSON_GetArraySize(m);
    f->meta = sn_calloc(2 * n + 1, sizeof *f->meta);
    if (!f->meta)
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", f->path);
    for (const cJSON *k = m->child; k; k = k->next) {
        if (!cJSON_IsString(k))
            return sn_err_set(err, SN_E_FORMAT, "%s: __metadata__ '%s' is not a string (the "
                              "format allows only string values)", f->path, k->string);
        for (size_t j = 0; j < f->n_meta; j++)
            if (!strcmp(f->meta[2 * j], k->string))
                return sn_err_set(err, SN_E_FORMAT, "%s: duplicate __metadata__ key '%s'",
                                  f->path, k->string);
        f->meta[2 * f->n_meta] = sn_strdup(k->string);
        f->meta[2 * f->n_meta + 1] = sn_strdup(k->valuestring);
        f->n_meta++;
        if (!f->meta[2 * f->n_meta - 2] || !f->meta[2 * f->n_meta - 1])
            return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", f->path);
    }
    return SN_OK;
}

/* Validates bytes[0..len) and fills f. */
static int parse(struct sn_st_file *f, struct sn_err *err)
{
    const char *p = f->path;
    if (f->len < 8)
        return sn_err_set(err, SN_E_FORMAT, "%s: %zu bytes, too short for a safetensors file "
                          "(needs an 8-byte header length)", p, f->len);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = (hlen << 8) | f->bytes[i];
    if (hlen > ST_MAX_HEADER)
        return sn_err_set(err, SN_E_FORMAT, "%s: header claims %" PRIu64 " bytes (limit %" PRIu64
                          "); not a safetensors file or corrupt", p, hlen, ST_MAX_HEADER);
    if (hlen > f->len - 8)
        return sn_err_set(err, SN_E_FORMAT, "%s: header claims %" PRIu64 " bytes but the file "
                          "holds only %zu after the length field; truncated file?", p, hlen,
                          f->len - 8);
    if (hlen < 2 || f->bytes[8] != '{')
        return sn_err_set(err, SN_E_FORMAT, "%s: header does not start with '{' (offset 8); "
                          "not a safetensors file", p);
    const char *text = (const char *)f->bytes + 8;
    cJSON *root = NULL;
    const char *end = NULL;
    root = cJSON_ParseWithLengthOpts(text, (size_t)hlen, &end, 0);
    if (!root) {
        size_t off = end ? (size_t)(end - text) : 0;
        return sn_err_set(err, SN_E_FORMAT, "%s: header is not valid JSON (at byte %zu of the "
                          "file)", p, 8 + off);
    }
    int rc = SN_OK;
    for (const char *q = end; q < text + hlen; q++) {
        if (*q != ' ' && *q != '\t' && *q != '\n' && *q != '\r') {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: unexpected bytes after the header JSON (at "
                            "byte %zu of the file)", p, (size_t)(8 + (q - text)));
            goto done;
        }
    }
    if (!cJSON_IsObject(root)) {
        rc = sn_err_set(err, SN_E_FORMAT, "%s: header is not a JSON object", p);
        goto done;
    }
    uint64_t data_len = f->len - 8 - hlen;
    size_t n = (size_t)cJSON_GetArraySize(root);
    /* Each tensor entry takes far more than 8 header bytes, so this bounds n by the file. */
    f->tensors = sn_calloc(n + 1, sizeof *f->tensors);
    f->by_name = sn_calloc(n + 1, sizeof *f->by_name);
    if (!f->tensors || !f->by_name) {
        rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", p);
        goto done;
    }
    bool seen_meta = false;
    for (const cJSON *ent = root->child; ent; ent = ent->next) {
        if (!strcmp(ent->string, "__metadata__")) {
            if (seen_meta) {
                rc = sn_err_set(err, SN_E_FORMAT, "%s: duplicate '__metadata__'", p);
                goto done;
            }
            seen_meta = true;
            rc = parse_meta(f, ent, err);
            if (rc)
                goto done;
            continue;
        }
        if (!ent->string[0]) {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: a tensor has an empty name", p);
            goto done;
        }
        struct sn_st_tensor *t = &f->tensors[f->n_tensors];
        rc = parse_tensor(f, ent, t, data_len, err);
        if (rc)
            goto done;
        t->name = sn_strdup(ent->string);
        if (!t->name) {
            rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", p);
            goto done;
        }
        t->data = f->bytes + 8 + hlen + t->offset;
        f->n_tensors++;
    }
    qsort(f->tensors, f->n_tensors, sizeof *f->tensors, cmp_offset);
    /* The ranges must tile the data section: each begins where the previous ended. */
    uint64_t at = 0;
    for (size_t i = 0; i < f->n_tensors; i++) {
        const struct sn_st_tensor *t = &f->tensors[i];
        if (t->offset != at) {
            if (t->offset < at)
                rc = sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': bytes [%" PRIu64 ", %" PRIu64
                                ") overlap the previous tensor '%s' (ends at %" PRIu64 ")", p,
                                t->name, t->offset, t->offset + t->nbytes,
                                i ? f->tensors[i - 1].name : "", at);
            else
                rc = sn_err_set(err, SN_E_FORMAT, "%s: tensor '%s': begins at %" PRIu64 " but "
                                "the previous tensor ends at %" PRIu64 " (gap in the data "
                                "section)", p, t->name, t->offset, at);
            goto done;
        }
        at = t->offset + t->nbytes;
    }
    if (at != data_len) {
        rc = sn_err_set(err, SN_E_FORMAT, "%s: tensors cover %" PRIu64 " bytes of a %" PRIu64
                        "-byte data section (trailing bytes not described by the header)", p,
                        at, data_len);
        goto done;
    }
    /* Names: unique (cJSON keeps duplicate keys) and indexed for sn_st_find. */
    struct name_idx *ni = sn_calloc(f->n_tensors + 1, sizeof *ni);
    if (!ni) {
        rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", p);
        goto done;
    }
    for (size_t i = 0; i < f->n_tensors; i++) {
        ni[i].name = f->tensors[i].name;
        ni[i].idx = i;
    }
    qsort(ni, f->n_tensors, sizeof *ni, cmp_name_idx);
    for (size_t i = 0; i < f->n_tensors; i++) {
        if (i && !strcmp(ni[i].name, ni[i - 1].name)) {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: duplicate tensor name '%s'", p, ni[i].name);
            break;
        }
        f->by_name[i] = ni[i].idx;
    }
    sn_free(ni);
done:
    cJSON_Delete(root);
    return rc;
}

static int open_common(struct sn_st_file *f, struct sn_st_file **out, struct sn_err *err)
{
    int rc = parse(f, err);
    if (rc) {
        sn_st_close(f);
        return rc;
    }
    *out = f;
    return SN_OK;
}

int sn_st_open_memory(const void *data, size_t len, const char *name, struct sn_st_file **out,
                      struct sn_err *err)
{
    *out = NULL;
    struct sn_st_file *f = sn_calloc(1, sizeof *f);
    if (!f)
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", name);
    f->path = sn_strdup(name ? name : "(memory)");
    if (!f->path) {
        sn_free(f);
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", name);
    }
    f->bytes = data;
    f->len = len;
    return open_common(f, out, err);
}

int sn_st_open(const char *path, struct sn_st_file **out, struct sn_err *err)
{
    *out = NULL;
    struct sn_st_file *f = sn_calloc(1, sizeof *f);
    if (!f)
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
    f->path = sn_strdup(path);
    if (!f->path) {
        sn_free(f);
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
    }
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        int rc = sn_err_set(err, SN_E_IO, "%s: %s", path, strerror(errno));
        sn_st_close(f);
        return rc;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int rc = sn_err_set(err, SN_E_IO, "%s: not a regular file", path);
        close(fd);
        sn_st_close(f);
        return rc;
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        close(fd);
        sn_st_close(f);
        return sn_err_set(err, SN_E_NOMEM, "%s: file too large for this platform", path);
    }
    f->len = (size_t)st.st_size;
    if (f->len > 0) {
        void *m = mmap(NULL, f->len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            int rc = sn_err_set(err, SN_E_IO, "%s: mmap: %s", path, strerror(errno));
            close(fd);
            sn_st_close(f);
            return rc;
        }
        f->map = m;
        f->map_len = f->len;
        f->bytes = m;
    } else {
        f->bytes = (const uint8_t *)"";
    }
    close(fd);
    return open_common(f, out, err);
}

size_t sn_st_count(const struct sn_st_file *f) { return f->n_tensors; }
const char *sn_st_path(const struct sn_st_file *f) { return f->path; }

const struct sn_st_tensor *sn_st_get(const struct sn_st_file *f, size_t i)
{
    return i < f->n_tensors ? &f->tensors[i] : NULL;
}

const struct sn_st_tensor *sn_st_find(const struct sn_st_file *f, const char *name)
{
    size_t lo = 0, hi = f->n_tensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct sn_st_tensor *t = &f->tensors[f->by_name[mid]];
        int c = strcmp(name, t->name);
        if (!c)
            return t;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

const char *sn_st_metadata(const struct sn_st_file *f, const char *key)
{
    for (size_t i = 0; i < f->n_meta; i++)
        if (!strcmp(f->meta[2 * i], key))
            return f->meta[2 * i + 1];
    return NULL;
}

size_t sn_st_metadata_count(const struct sn_st_file *f) { return f->n_meta; }

const char *sn_st_metadata_key(const struct sn_st_file *f, size_t i)
{
    return i < f->n_meta ? f->meta[2 * i] : NULL;
}

int sn_st_to_f32(const struct sn_st_tensor *t, float *out, struct sn_err *err)
{
    const uint8_t *b = t->data;
    size_t n = (size_t)t->n_elements;
    switch (t->dtype) {
    case SN_ST_F32:
        memcpy(out, b, n * 4);
        return SN_OK;
    case SN_ST_F64:
        for (size_t i = 0; i < n; i++) {
            double d;
            memcpy(&d, b + 8 * i, 8);
            out[i] = (float)d;
        }
        return SN_OK;
    case SN_ST_BF16:
    case SN_ST_F16:
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, b + 2 * i, 2);
            out[i] = t->dtype == SN_ST_BF16 ? sn_bf16_to_f32(h) : sn_f16_to_f32(h);
        }
        return SN_OK;
    default:
        return sn_err_set(err, SN_E_FORMAT, "tensor '%s': dtype %s is not a float type "
                          "(expected F32, F16, BF16 or F64)", t->name, sn_st_dtype_name(t->dtype));
    }
}

/* ---- writer ------------------------------------------------------------------------------- */

struct st_wtensor {
    char            *name;
    enum sn_st_dtype dtype;
    int              n_dims;
    int64_t          shape[SN_ST_MAX_DIMS];
    size_t           nbytes;
    const void      *data;
};

struct sn_st_writer {
    struct st_wtensor *t;
    size_t             n, cap;
    char             **meta; /* key, value pairs */
    size_t             n_meta, cap_meta;
};

int sn_st_writer_create(struct sn_st_writer **out, struct sn_err *err)
{
    *out = sn_calloc(1, sizeof **out);
    if (!*out)
        return sn_err_set(err, SN_E_NOMEM, "safetensors writer: out of memory");
    return SN_OK;
}

void sn_st_writer_free(struct sn_st_writer *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n; i++)
        sn_free(w->t[i].name);
    sn_free(w->t);
    for (size_t i = 0; i < 2 * w->n_meta; i++)
        sn_free(w->meta[i]);
    sn_free(w->meta);
    sn_free(w);
}

int sn_st_writer_add(struct sn_st_writer *w, const char *name, enum sn_st_dtype dtype,
                     int n_dims, const int64_t *shape, const void *data, struct sn_err *err)
{
    if (!name || !name[0] || !strcmp(name, "__metadata__"))
        return sn_err_set(err, SN_E_ARG, "safetensors writer: invalid tensor name '%s'",
                          name ? name : "(null)");
    if ((unsigned)dtype >= SN_ST_DTYPE_COUNT)
        return sn_err_set(err, SN_E_ARG, "safetensors writer: tensor '%s': bad dtype %d", name,
                          (int)dtype);
    if (n_dims < 0 || n_dims > SN_ST_MAX_DIMS)
        return sn_err_set(err, SN_E_ARG, "safetensors writer: tensor '%s': %d dimensions "
                          "(0..%d)", name, n_dims, SN_ST_MAX_DIMS);
    size_t n_el = 1;
    for (int d = 0; d < n_dims; d++) {
        if (shape[d] < 0 || !sn_mul_ok(n_el, (size_t)shape[d], &n_el))
            return sn_err_set(err, SN_E_ARG, "safetensors writer: tensor '%s': bad shape[%d] "
                              "= %" PRId64, name, d, shape[d]);
    }
    size_t nbytes;
    if (!sn_mul_ok(n_el, sn_st_dtype_size(dtype), &nbytes))
        return sn_err_set(err, SN_E_ARG, "safetensors writer: tensor '%s': too large", name);
    for (size_t i = 0; i < w->n; i++)
        if (!strcmp(w->t[i].name, name))
            return sn_err_set(err, SN_E_ARG, "safetensors writer: duplicate tensor '%s'", name);
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 16;
        struct st_wtensor *t = sn_realloc(w->t, cap * sizeof *t);
        if (!t)
            return sn_err_set(err, SN_E_NOMEM, "safetensors writer: out of memory");
        w->t = t;
        w->cap = cap;
    }
    struct st_wtensor *t = &w->t[w->n];
    memset(t, 0, sizeof *t);
    t->name = sn_strdup(name);
    if (!t->name)
        return sn_err_set(err, SN_E_NOMEM, "safetensors writer: out of memory");
    t->dtype = dtype;
    t->n_dims = n_dims;
    for (int d = 0; d < n_dims; d++)
        t->shape[d] = shape[d];
    t->nbytes = nbytes;
    t->data = data;
    w->n++;
    return SN_OK;
}

int sn_st_writer_set_metadata(struct sn_st_writer *w, const char *key, const char *value,
                              struct sn_err *err)
{
    for (size_t i = 0; i < w->n_meta; i++) {
        if (!strcmp(w->meta[2 * i], key)) {
            char *v = sn_strdup(value);
            if (!v)
                return sn_err_set(err, SN_E_NOMEM, "safetensors writer: out of memory");
            sn_free(w->meta[2 * i + 1]);
            w->meta[2 * i + 1] = v;
            return SN_OK;
        }
    }
    if (w->n_meta == w->cap_meta) {
        size_t cap = w->cap_meta ? 2 * w->cap_meta : 4;
        char **m = sn_realloc(w->meta, 2 * cap * sizeof *m);
        if (!m)
            return sn_err_set(err, SN_E_NOMEM, "safetensors writer: out of memory");
        w->meta = m;
        w->cap_meta = cap;
    }
    char *k = sn_strdup(key), *v = sn_strdup(value);
    if (!k || !v) {
        sn_free(k);
        sn_free(v);
        return sn_err_set(err, SN_E_NOMEM, "safetensors writer: out of memory");
    }
    w->meta[2 * w->n_meta] = k;
    w->meta[2 * w->n_meta + 1] = v;
    w->n_meta++;
    return SN_OK;
}

static int cmp_wtensor(const void *a, const void *b)
{
    return strcmp(((const struct st_wtensor *)a)->name, ((const struct st_wtensor *)b)->name);
}

static int cmp_meta(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends s as a JSON string literal (names and metadata may hold any UTF-8). */
static int json_str(struct sn_buf *b, const char *s, struct sn_err *err)
{
    int rc = sn_buf_puts(b, "\"", err);
    for (const unsigned char *q = (const unsigned char *)s; !rc && *q; q++) {
        if (*q == '"' || *q == '\\')
            rc = sn_buf_printf(b, err, "\\%c", *q);
        else if (*q < 0x20)
            rc = sn_buf_printf(b, err, "\\u%04x", *q);
        else
            rc = sn_buf_append(b, q, 1, err);
    }
    if (!rc)
        rc = sn_buf_puts(b, "\"", err);
    return rc;
}

int sn_st_writer_save(struct sn_st_writer *w, const char *path, struct sn_err *err)
{
    qsort(w->t, w->n, sizeof *w->t, cmp_wtensor);
    /* metadata sorted by key: w->meta holds adjacent (key, value) pairs */
    if (w->n_meta)
        qsort(w->meta, w->n_meta, 2 * sizeof *w->meta, cmp_meta);
    char **pairs = w->meta;
    struct sn_buf h = {0};
    h.max = (size_t)ST_MAX_HEADER;
    int rc = sn_buf_puts(&h, "{", err);
    if (!rc && w->n_meta) {
        rc = sn_buf_puts(&h, "\"__metadata__\":{", err);
        for (size_t i = 0; !rc && i < w->n_meta; i++) {
            if (i)
                rc = sn_buf_puts(&h, ",", err);
            if (!rc)
                rc = json_str(&h, pairs[2 * i], err);
            if (!rc)
                rc = sn_buf_puts(&h, ":", err);
            if (!rc)
                rc = json_str(&h, pairs[2 * i + 1], err);
        }
        if (!rc)
            rc = sn_buf_puts(&h, "}", err);
    }
    uint64_t at = 0;
    for (size_t i = 0; !rc && i < w->n; i++) {
        const struct st_wtensor *t = &w->t[i];
        if (i || w->n_meta)
            rc = sn_buf_puts(&h, ",", err);
        if (!rc)
            rc = json_str(&h, t->name, err);
        if (!rc)
            rc = sn_buf_printf(&h, err, ":{\"dtype\":\"%s\",\"shape\":[", sn_st_dtype_name(t->dtype));
        for (int d = 0; !rc && d < t->n_dims; d++)
            rc = sn_buf_printf(&h, err, d ? ",%" PRId64 : "%" PRId64, t->shape[d]);
        if (!rc)
            rc = sn_buf_printf(&h, err, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", at,
                               at + (uint64_t)t->nbytes);
        at += t->nbytes;
    }
    if (!rc)
        rc = sn_buf_puts(&h, "}", err);
    while (!rc && (h.len % 8) != 0)
        rc = sn_buf_puts(&h, " ", err);
    if (rc) {
        sn_buf_free(&h);
        return sn_err_wrap(err, "%s", path);
    }
    struct sn_atomic_file *af = NULL;
    rc = sn_atomic_open(path, &af, err);
    if (rc) {
        sn_buf_free(&h);
        return rc;
    }
    FILE *fp = sn_atomic_stream(af);
    uint8_t len8[8];
    uint64_t hl = h.len;
    for (int i = 0; i < 8; i++)
        len8[i] = (uint8_t)(hl >> (8 * i));
    bool ok = fwrite(len8, 1, 8, fp) == 8 && fwrite(h.data, 1, h.len, fp) == h.len;
    for (size_t i = 0; ok && i < w->n; i++)
        ok = w->t[i].nbytes == 0 || fwrite(w->t[i].data, 1, w->t[i].nbytes, fp) == w->t[i].nbytes;
    sn_buf_free(&h);
    if (!ok) {
        rc = sn_err_set(err, SN_E_IO, "%s: write failed: %s", path, strerror(errno));
        sn_atomic_abort(af);
        return rc;
    }
    return sn_atomic_commit(af, err);
}
