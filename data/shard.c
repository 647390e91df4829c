/* data/shard.c: HDF5 tuple shards, their manifest, a random-access reader, a batched iterator
** with a prefetch thread, and the resumable shard set `sentinel build` writes.
** Layout: data/shard.h and docs/formats.md (DESIGN.md §5 "Shard").
**
** Determinism: shards carry no timestamps (object time tracking is off for every group and
** dataset), so the same tuples in the same order give a byte-identical file; a resumed build
** therefore reproduces an uninterrupted one byte for byte, and the manifest's SHA-256s match.
**
** HDF5 notes. Debian's libhdf5 is built thread-safe (one global lock), so the prefetch thread
** may read while the caller uses another reader. The automatic error printing of HDF5 is
** switched off at every entry point (library code never prints); the innermost message of the
** HDF5 error stack is put into our struct sn_err. Variable-length strings live in HDF5's global
** heap, which filters do not compress: the deflate filter on /text only packs the heap
** references. That is the price of texts h5py returns as plain `str`. */
#include "data/shard.h"

#include <dirent.h>
#include <errno.h>
#include <hdf5.h>
#include <inttypes.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const field_names[] = {"context", "chosen", "rejected", "reference"};
static const char *const split_names[] = {"train", "validation", "test"};
_Static_assert(sizeof field_names / sizeof field_names[0] == SN_FIELD_COUNT, "fields");
_Static_assert(sizeof split_names / sizeof split_names[0] == SN_SPLIT_COUNT, "splits");

const char *sn_field_name(enum sn_field f)
{
    return (unsigned)f < SN_FIELD_COUNT ? field_names[f] : "?";
}

const char *sn_split_name(enum sn_split s)
{
    return (unsigned)s < SN_SPLIT_COUNT ? split_names[s] : "?";
}

int sn_split_parse(const char *name, enum sn_split *out, struct sn_err *err)
{
    for (int s = 0; s < SN_SPLIT_COUNT; s++)
        if (name && !strcmp(name, split_names[s])) {
            *out = (enum sn_split)s;
            return SN_OK;
        }
    return sn_err_set(err, SN_E_FORMAT, "unknown split '%s' (expected train, validation or test)",
                      name ? name : "(null)");
}

/* ---- column tables (the on-disk names; docs/formats.md) ------------------------------ */

enum { S_CONTEXT, S_CHOSEN, S_REJECTED, S_REFERENCE, S_SCENARIO, S_DATASET, S_TRAJ, S_ITEM,
       S_CH_ROLE, S_REJ_ROLE, S_REJ_KIND, S_SPLIT, S_SHA, S_COUNT };
static const char *const str_cols[] = {
    "text/context", "text/chosen", "text/rejected", "text/reference",
    "meta/scenario", "meta/dataset", "meta/trajectory_id", "meta/item_id",
    "meta/chosen_role", "meta/rejected_role", "meta/rejected_kind", "meta/split", "meta/sha256"};
_Static_assert(sizeof str_cols / sizeof str_cols[0] == S_COUNT, "str cols");

enum { I_ROUND, I_CH_AGENT, I_REJ_AGENT, I_CUTH_CH, I_CUTH_REJ, I_CUTH_REF, I_CUTR_CH,
       I_CUTR_REJ, I_CUTR_REF, I_COUNT };
static const char *const int_cols[] = {
    "meta/round", "meta/chosen_agent", "meta/rejected_agent",
    "meta/cut_history/chosen", "meta/cut_history/rejected", "meta/cut_history/reference",
    "meta/cut_response/chosen", "meta/cut_response/rejected", "meta/cut_response/reference"};
_Static_assert(sizeof int_cols / sizeof int_cols[0] == I_COUNT, "int cols");

static const char *const groups[] = {"text", "ids", "offsets", "meta", "meta/cut_history",
                                     "meta/cut_response"};

/* Hard limits on what a reader accepts from a file (STYLE.md §4). */
#define MAX_LEN_LIMIT   ((int64_t)1 << 24)
#define MAX_COUNT_LIMIT ((int64_t)1 << 31)
#define MAX_IDS_BYTES   ((uint64_t)8 << 30)

/* ---- HDF5 helpers ------------------------------------------------------------------------- */

static void h5_quiet(void)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

static herr_t walk_cb(unsigned n, const H5E_error2_t *e, void *ud)
{
    char *buf = ud;
    if (n == 0 && e->desc)
        snprintf(buf, 200, "%s", e->desc);
    return 0;
}

/* Innermost message of the HDF5 error stack (the most specific one). */
static const char *h5msg(char buf[200])
{
    buf[0] = '\0';
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_cb, buf);
    if (!buf[0])
        snprintf(buf, 200, "HDF5 call failed");
    return buf;
}

static int h5fail(struct sn_err *err, const char *path, const char *what)
{
    char b[200];
    return sn_err_set(err, SN_E_BACKEND, "%s: %s: %s", path, what, h5msg(b));
}

static hid_t vlen_str_type(void)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0)
        return t;
    if (H5Tset_size(t, H5T_VARIABLE) < 0 || H5Tset_cset(t, H5T_CSET_UTF8) < 0) {
        H5Tclose(t);
        return -1;
    }
    return t;
}

static int attr_write_str(hid_t obj, const char *name, const char *value, const char *path,
                          struct sn_err *err)
{
    hid_t t = vlen_str_type(), sp = H5Screate(H5S_SCALAR), a = -1;
    int rc = SN_OK;
    if (t < 0 || sp < 0)
        rc = h5fail(err, path, "string type");
    if (!rc) {
        a = H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
        if (a < 0 || H5Awrite(a, t, &value) < 0)
            rc = h5fail(err, path, name);
    }
    if (a >= 0)
        H5Aclose(a);
    if (sp >= 0)
        H5Sclose(sp);
    if (t >= 0)
        H5Tclose(t);
    return rc;
}

static int attr_write_i64(hid_t obj, const char *name, int64_t v, const char *path,
                          struct sn_err *err)
{
    hid_t sp = H5Screate(H5S_SCALAR), a = -1;
    int rc = SN_OK;
    a = sp < 0 ? -1 : H5Acreate2(obj, name, H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0 || H5Awrite(a, H5T_NATIVE_INT64, &v) < 0)
        rc = h5fail(err, path, name);
    if (a >= 0)
        H5Aclose(a);
    if (sp >= 0)
        H5Sclose(sp);
    return rc;
}

/* Reads a scalar string attribute (variable or fixed length) into a new string. */
static int attr_read_str(hid_t obj, const char *name, char **out, const char *path,
                         struct sn_err *err)
{
    *out = NULL;
    if (H5Aexists(obj, name) <= 0)
        return sn_err_set(err, SN_E_FORMAT, "%s: attribute '%s' is missing; not a sentinel "
                          "shard?", path, name);
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT), t = -1, sp = -1, mt = -1;
    int rc = SN_OK;
    if (a < 0)
        return h5fail(err, path, name);
    t = H5Aget_type(a);
    sp = H5Aget_space(a);
    if (t < 0 || sp < 0 || H5Tget_class(t) != H5T_STRING || H5Sget_simple_extent_npoints(sp) != 1) {
        rc = sn_err_set(err, SN_E_FORMAT, "%s: attribute '%s': expected one string", path, name);
        goto done;
    }
    if (H5Tis_variable_str(t) > 0) {
        char *s = NULL;
        mt = vlen_str_type();
        if (mt < 0 || H5Aread(a, mt, &s) < 0 || !s) {
            rc = h5fail(err, path, name);
            goto done;
        }
        *out = sn_strdup(s);
        H5free_memory(s);
    } else {
        size_t n = H5Tget_size(t);
        if (n == 0 || n > (1u << 20)) {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: attribute '%s': bad string size %zu", path,
                            name, n);
            goto done;
        }
        char *s = sn_calloc(1, n + 1);
        if (!s) {
            rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
            goto done;
        }
        if (H5Aread(a, t, s) < 0) {
            sn_free(s);
            rc = h5fail(err, path, name);
            goto done;
        }
        *out = s;
    }
    if (!*out && !rc)
        rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
done:
    if (mt >= 0)
        H5Tclose(mt);
    if (sp >= 0)
        H5Sclose(sp);
    if (t >= 0)
        H5Tclose(t);
    H5Aclose(a);
    return rc;
}

static int attr_read_i64(hid_t obj, const char *name, int64_t *out, const char *path,
                         struct sn_err *err)
{
    if (H5Aexists(obj, name) <= 0)
        return sn_err_set(err, SN_E_FORMAT, "%s: attribute '%s' is missing", path, name);
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT), t = -1, sp = -1;
    int rc = SN_OK;
    if (a < 0)
        return h5fail(err, path, name);
    t = H5Aget_type(a);
    sp = H5Aget_space(a);
    if (t < 0 || sp < 0 || H5Tget_class(t) != H5T_INTEGER ||
        H5Sget_simple_extent_npoints(sp) != 1)
        rc = sn_err_set(err, SN_E_FORMAT, "%s: attribute '%s': expected one integer", path, name);
    else if (H5Aread(a, H5T_NATIVE_INT64, out) < 0)
        rc = h5fail(err, path, name);
    if (sp >= 0)
        H5Sclose(sp);
    if (t >= 0)
        H5Tclose(t);
    H5Aclose(a);
    return rc;
}

/* Creates a 1-D chunked, shuffled, deflated dataset of n elements and writes buf. */
static int ds_write(hid_t file, const char *name, hid_t ftype, hid_t mtype, size_t n,
                    const void *buf, size_t chunk, int deflate, const char *path,
                    struct sn_err *err)
{
    hsize_t dims[1] = {n}, maxd[1] = {H5S_UNLIMITED};
    hsize_t ch[1] = {chunk < n ? chunk : (n ? n : 1)};
    hid_t sp = H5Screate_simple(1, dims, maxd), dcpl = H5Pcreate(H5P_DATASET_CREATE), ds = -1;
    int rc = SN_OK;
    if (sp < 0 || dcpl < 0 || H5Pset_chunk(dcpl, 1, ch) < 0 ||
        H5Pset_obj_track_times(dcpl, 0) < 0 ||
        (deflate > 0 &&
         (H5Pset_shuffle(dcpl) < 0 || H5Pset_deflate(dcpl, (unsigned)deflate) < 0))) {
        rc = h5fail(err, path, name);
        goto done;
    }
    ds = H5Dcreate2(file, name, ftype, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (ds < 0 || (n && H5Dwrite(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0))
        rc = h5fail(err, path, name);
done:
    if (ds >= 0)
        H5Dclose(ds);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (sp >= 0)
        H5Sclose(sp);
    return rc;
}

/* Opens a 1-D dataset, checks its class and length. */
static int ds_open_1d(hid_t file, const char *name, H5T_class_t cls, hsize_t *len, hid_t *out,
                      const char *path, struct sn_err *err)
{
    *out = -1;
    if (H5Lexists(file, name, H5P_DEFAULT) <= 0)
        return sn_err_set(err, SN_E_FORMAT, "%s: dataset '/%s' is missing", path, name);
    hid_t ds = H5Dopen2(file, name, H5P_DEFAULT);
    if (ds < 0)
        return h5fail(err, path, name);
    hid_t t = H5Dget_type(ds), sp = H5Dget_space(ds);
    int rc = SN_OK;
    if (t < 0 || sp < 0 || H5Tget_class(t) != cls || H5Sget_simple_extent_ndims(sp) != 1 ||
        (cls == H5T_STRING && H5Tis_variable_str(t) <= 0)) {
        rc = sn_err_set(err, SN_E_FORMAT, "%s: dataset '/%s': expected a 1-D %s array", path,
                        name, cls == H5T_STRING ? "variable-length string" : "integer");
    } else {
        H5Sget_simple_extent_dims(sp, len, NULL);
    }
    if (t >= 0)
        H5Tclose(t);
    if (sp >= 0)
        H5Sclose(sp);
    if (rc)
        H5Dclose(ds);
    else
        *out = ds;
    return rc;
}

/* Reads element i of a 1-D dataset (string into a new C string, or integer). */
static int ds_read_str_at(hid_t file, const char *name, size_t count, size_t i, char **out,
                          const char *path, struct sn_err *err)
{
    hsize_t len = 0, start[1] = {i}, cnt[1] = {1};
    hid_t ds, fs = -1, ms = -1, mt = -1;
    char *s = NULL;
    *out = NULL;
    int rc = ds_open_1d(file, name, H5T_STRING, &len, &ds, path, err);
    if (rc)
        return rc;
    if (len != count) {
        rc = sn_err_set(err, SN_E_FORMAT, "%s: dataset '/%s' has %" PRIu64 " entries, expected "
                        "%zu (the count attribute)", path, name, (uint64_t)len, count);
        goto done;
    }
    fs = H5Dget_space(ds);
    ms = H5Screate_simple(1, cnt, NULL);
    mt = vlen_str_type();
    if (fs < 0 || ms < 0 || mt < 0 ||
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, cnt, NULL) < 0 ||
        H5Dread(ds, mt, ms, fs, H5P_DEFAULT, &s) < 0) {
        rc = h5fail(err, path, name);
        goto done;
    }
    *out = sn_strdup(s ? s : "");
    if (!*out)
        rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
    H5Dvlen_reclaim(mt, ms, H5P_DEFAULT, &s);
done:
    if (mt >= 0)
        H5Tclose(mt);
    if (ms >= 0)
        H5Sclose(ms);
    if (fs >= 0)
        H5Sclose(fs);
    H5Dclose(ds);
    return rc;
}

static int ds_read_i32_at(hid_t file, const char *name, size_t count, size_t i, int32_t *out,
                          const char *path, struct sn_err *err)
{
    hsize_t len = 0, start[1] = {i}, cnt[1] = {1};
    hid_t ds, fs = -1, ms = -1;
    int rc = ds_open_1d(file, name, H5T_INTEGER, &len, &ds, path, err);
    if (rc)
        return rc;
    if (len != count) {
        rc = sn_err_set(err, SN_E_FORMAT, "%s: dataset '/%s' has %" PRIu64 " entries, expected "
                        "%zu", path, name, (uint64_t)len, count);
        goto done;
    }
    fs = H5Dget_space(ds);
    ms = H5Screate_simple(1, cnt, NULL);
    if (fs < 0 || ms < 0 || H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, cnt, NULL) < 0 ||
        H5Dread(ds, H5T_NATIVE_INT32, ms, fs, H5P_DEFAULT, out) < 0)
        rc = h5fail(err, path, name);
done:
    if (ms >= 0)
        H5Sclose(ms);
    if (fs >= 0)
        H5Sclose(fs);
    H5Dclose(ds);
    return rc;
}

/* ---- growable arrays ---------------------------------------------------------------------- */

static int grow(void **p, size_t *cap, size_t need, size_t elem, struct sn_err *err)
{
    if (need <= *cap)
        return SN_OK;
    size_t nc = *cap ? *cap : 64, bytes;
    while (nc < need)
        nc *= 2;
    if (!sn_mul_ok(nc, elem, &bytes))
        return sn_err_set(err, SN_E_NOMEM, "array of %zu elements too large", nc);
    void *q = sn_realloc(*p, bytes);
    if (!q)
        return sn_err_set(err, SN_E_NOMEM, "out of memory (%zu bytes)", bytes);
    *p = q;
    *cap = nc;
    return SN_OK;
}

struct strcol {
    struct sn_buf bytes;   /* strings back to back, each NUL-terminated */
    size_t *off;
    size_t  n, cap;
};

static int strcol_push(struct strcol *c, const char *s, struct sn_err *err)
{
    if (!s)
        s = "";
    int rc = grow((void **)&c->off, &c->cap, c->n + 1, sizeof *c->off, err);
    if (rc)
        return rc;
    c->off[c->n] = c->bytes.len;
    rc = sn_buf_append(&c->bytes, s, strlen(s) + 1, err);
    if (!rc)
        c->n++;
    return rc;
}

/* ---- writer ------------------------------------------------------------------------------ */

struct sn_shard_writer {
    char *path;
    struct sn_shard_writer_params p;
    char *tok_hash, *template_id;
    size_t count;
    struct strcol s[S_COUNT];
    int32_t *icol[I_COUNT];
    size_t icap[I_COUNT];
    int32_t *ids[SN_FIELD_COUNT];
    size_t n_ids[SN_FIELD_COUNT], cap_ids[SN_FIELD_COUNT];
    int64_t *off[SN_FIELD_COUNT];
    size_t cap_off[SN_FIELD_COUNT];
};

struct sn_shard_writer_params sn_shard_writer_default_params(void)
{
    struct sn_shard_writer_params p;
    memset(&p, 0, sizeof p);
    p.deflate_level = 1;
    p.chunk_tuples = 1024;
    p.chunk_ids = 65536;
    return p;
}

void sn_shard_writer_abort(struct sn_shard_writer *w)
{
    if (!w)
        return;
    for (int i = 0; i < S_COUNT; i++) {
        sn_buf_free(&w->s[i].bytes);
        sn_free(w->s[i].off);
    }
    for (int i = 0; i < I_COUNT; i++)
        sn_free(w->icol[i]);
    for (int f = 0; f < SN_FIELD_COUNT; f++) {
        sn_free(w->ids[f]);
        sn_free(w->off[f]);
    }
    sn_free(w->tok_hash);
    sn_free(w->template_id);
    sn_free(w->path);
    sn_free(w);
}

int sn_shard_writer_create(const char *path, const struct sn_shard_writer_params *params,
                           struct sn_shard_writer **out, struct sn_err *err)
{
    *out = NULL;
    const struct sn_shard_info *in = &params->info;
    if (!in->tokenizer_hash || !in->template_id)
        return sn_err_set(err, SN_E_ARG, "%s: shard needs a tokenizer hash and a template id",
                          path);
    if (in->max_len <= 0 || in->max_len > MAX_LEN_LIMIT || in->vocab_size <= 0 ||
        in->vocab_size > INT32_MAX || (unsigned)in->split >= SN_SPLIT_COUNT)
        return sn_err_set(err, SN_E_ARG, "%s: bad shard parameters (max_len %" PRId64
                          ", vocab_size %" PRId64 ")", path, in->max_len, in->vocab_size);
    struct sn_shard_writer *w = sn_calloc(1, sizeof *w);
    if (!w)
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
    w->p = *params;
    if (w->p.deflate_level < 0 || w->p.deflate_level > 9)
        w->p.deflate_level = 1;
    if (!w->p.chunk_tuples)
        w->p.chunk_tuples = 1024;
    if (!w->p.chunk_ids)
        w->p.chunk_ids = 65536;
    w->path = sn_strdup(path);
    w->tok_hash = sn_strdup(in->tokenizer_hash);
    w->template_id = sn_strdup(in->template_id);
    int rc = SN_OK;
    if (!w->path || !w->tok_hash || !w->template_id)
        rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
    for (int f = 0; f < SN_FIELD_COUNT && !rc; f++) {
        rc = grow((void **)&w->off[f], &w->cap_off[f], 1, sizeof(int64_t), err);
        if (!rc)
            w->off[f][0] = 0;
    }
    if (rc) {
        sn_shard_writer_abort(w);
        return rc;
    }
    w->p.info.tokenizer_hash = w->tok_hash;
    w->p.info.template_id = w->template_id;
    *out = w;
    return SN_OK;
}

size_t sn_shard_writer_count(const struct sn_shard_writer *w)
{
    return w->count;
}

int sn_shard_writer_add(struct sn_shard_writer *w, const struct sn_shard_tuple *t,
                        struct sn_err *err)
{
    const struct sn_tuple_meta *m = &t->meta;
    for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT; f++) {
        if (t->n_ids[f] > (size_t)w->p.info.max_len)
            return sn_err_set(err, SN_E_ARG, "%s: tuple %zu: %s sequence has %zu ids, more than "
                              "max_len %" PRId64, w->path, w->count, field_names[f], t->n_ids[f],
                              w->p.info.max_len);
        for (size_t j = 0; j < t->n_ids[f]; j++)
            if (t->ids[f][j] < 0 || t->ids[f][j] >= w->p.info.vocab_size)
                return sn_err_set(err, SN_E_ARG, "%s: tuple %zu: %s id %" PRId32 " at %zu is "
                                  "outside [0, %" PRId64 ")", w->path, w->count, field_names[f],
                                  t->ids[f][j], j, w->p.info.vocab_size);
    }
    if ((unsigned)m->split >= SN_SPLIT_COUNT)
        return sn_err_set(err, SN_E_ARG, "%s: tuple %zu: bad split", w->path, w->count);
    if (w->count >= (size_t)MAX_COUNT_LIMIT)
        return sn_err_set(err, SN_E_ARG, "%s: too many tuples in one shard", w->path);
    const char *sv[S_COUNT] = {
        t->text[SN_FIELD_CONTEXT], t->text[SN_FIELD_CHOSEN], t->text[SN_FIELD_REJECTED],
        t->text[SN_FIELD_REFERENCE], m->scenario, m->dataset, m->trajectory_id, m->item_id,
        m->chosen_role, m->rejected_role, m->rejected_kind, split_names[m->split], m->sha256};
    int32_t iv[I_COUNT] = {
        m->round, m->chosen_agent, m->rejected_agent,
        m->cut_history[SN_FIELD_CHOSEN], m->cut_history[SN_FIELD_REJECTED],
        m->cut_history[SN_FIELD_REFERENCE], m->cut_response[SN_FIELD_CHOSEN],
        m->cut_response[SN_FIELD_REJECTED], m->cut_response[SN_FIELD_REFERENCE]};
    int rc = SN_OK;
    /* Reserve everything first so a failure leaves the writer unchanged (columns aligned). */
    for (int i = 0; i < I_COUNT && !rc; i++)
        rc = grow((void **)&w->icol[i], &w->icap[i], w->count + 1, sizeof(int32_t), err);
    for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT && !rc; f++) {
        rc = grow((void **)&w->off[f], &w->cap_off[f], w->count + 2, sizeof(int64_t), err);
        if (!rc)
            rc = grow((void **)&w->ids[f], &w->cap_ids[f], w->n_ids[f] + t->n_ids[f] + 1,
                      sizeof(int32_t), err);
    }
    size_t saved_len[S_COUNT];
    for (int i = 0; i < S_COUNT; i++)
        saved_len[i] = w->s[i].bytes.len;
    for (int i = 0; i < S_COUNT && !rc; i++)
        rc = strcol_push(&w->s[i], sv[i], err);
    if (rc) {
        for (int i = 0; i < S_COUNT; i++) {
            w->s[i].n = w->count;
            w->s[i].bytes.len = saved_len[i];
        }
        return sn_err_wrap(err, "%s", w->path);
    }
    for (int i = 0; i < I_COUNT; i++)
        w->icol[i][w->count] = iv[i];
    for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT; f++) {
        if (t->n_ids[f])
            memcpy(w->ids[f] + w->n_ids[f], t->ids[f], t->n_ids[f] * sizeof(int32_t));
        w->n_ids[f] += t->n_ids[f];
        w->off[f][w->count + 1] = (int64_t)w->n_ids[f];
    }
    w->count++;
    return SN_OK;
}

static int write_file(struct sn_shard_writer *w, const char *tmp, struct sn_err *err)
{
    const struct sn_shard_info *in = &w->p.info;
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE), gcpl = H5Pcreate(H5P_GROUP_CREATE), file = -1;
    hid_t st = vlen_str_type();
    const char **ptrs = NULL;
    int rc = SN_OK;
    if (fcpl < 0 || gcpl < 0 || st < 0 || H5Pset_obj_track_times(gcpl, 0) < 0) {
        rc = h5fail(err, tmp, "property lists");
        goto done;
    }
    /* The root group's object header follows the fcpl; no timestamps there either. */
    H5Pset_obj_track_times(fcpl, 0);
    file = H5Fcreate(tmp, H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
    if (file < 0) {
        rc = h5fail(err, tmp, "create");
        goto done;
    }
    if ((rc = attr_write_str(file, "schema", SN_SHARD_SCHEMA, tmp, err)) ||
        (rc = attr_write_str(file, "tokenizer_hash", in->tokenizer_hash, tmp, err)) ||
        (rc = attr_write_str(file, "template_id", in->template_id, tmp, err)) ||
        (rc = attr_write_i64(file, "max_len", in->max_len, tmp, err)) ||
        (rc = attr_write_i64(file, "vocab_size", in->vocab_size, tmp, err)) ||
        (rc = attr_write_i64(file, "count", (int64_t)w->count, tmp, err)) ||
        (rc = attr_write_str(file, "split", split_names[in->split], tmp, err)) ||
        (rc = attr_write_i64(file, "shard_index", in->shard_index, tmp, err)))
        goto done;
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        hid_t gid = H5Gcreate2(file, groups[g], H5P_DEFAULT, gcpl, H5P_DEFAULT);
        if (gid < 0) {
            rc = h5fail(err, tmp, groups[g]);
            goto done;
        }
        H5Gclose(gid);
    }
    ptrs = sn_malloc((w->count ? w->count : 1) * sizeof *ptrs);
    if (!ptrs) {
        rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", tmp);
        goto done;
    }
    for (int c = 0; c < S_COUNT; c++) {
        for (size_t i = 0; i < w->count; i++)
            ptrs[i] = w->s[c].bytes.data + w->s[c].off[i];
        rc = ds_write(file, str_cols[c], st, st, w->count, ptrs, w->p.chunk_tuples,
                      w->p.deflate_level, tmp, err);
        if (rc)
            goto done;
    }
    for (int c = 0; c < I_COUNT; c++) {
        rc = ds_write(file, int_cols[c], H5T_STD_I32LE, H5T_NATIVE_INT32, w->count, w->icol[c],
                      w->p.chunk_tuples, w->p.deflate_level, tmp, err);
        if (rc)
            goto done;
    }
    for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT; f++) {
        char name[64];
        snprintf(name, sizeof name, "ids/%s", field_names[f]);
        rc = ds_write(file, name, H5T_STD_I32LE, H5T_NATIVE_INT32, w->n_ids[f], w->ids[f],
                      w->p.chunk_ids, w->p.deflate_level, tmp, err);
        if (rc)
            goto done;
        snprintf(name, sizeof name, "offsets/%s", field_names[f]);
        rc = ds_write(file, name, H5T_STD_I64LE, H5T_NATIVE_INT64, w->count + 1, w->off[f],
                      w->p.chunk_tuples, w->p.deflate_level, tmp, err);
        if (rc)
            goto done;
    }
done:
    sn_free(ptrs);
    if (file >= 0 && H5Fclose(file) < 0 && !rc)
        rc = h5fail(err, tmp, "close");
    if (st >= 0)
        H5Tclose(st);
    if (gcpl >= 0)
        H5Pclose(gcpl);
    if (fcpl >= 0)
        H5Pclose(fcpl);
    return rc;
}

int sn_shard_writer_commit(struct sn_shard_writer *w, char sha256_hex[65], struct sn_err *err)
{
    h5_quiet();
    size_t n = strlen(w->path) + 32;
    char *tmp = sn_malloc(n);
    int rc = SN_OK;
    if (!tmp) {
        rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", w->path);
        goto done;
    }
    snprintf(tmp, n, "%s.tmp.%ld", w->path, (long)getpid());
    rc = write_file(w, tmp, err);
    if (!rc)
        rc = sn_fsync_path(tmp, err);
    if (!rc && sha256_hex)
        rc = sn_sha256_file(tmp, sha256_hex, err);
    if (!rc)
        rc = sn_rename_durable(tmp, w->path, err);
    if (rc)
        unlink(tmp);
done:
    sn_free(tmp);
    sn_shard_writer_abort(w);
    return rc;
}

/* ---- reader ------------------------------------------------------------------------------ */

struct sn_shard_reader {
    char *path;
    hid_t file;
    struct sn_shard_info info;
    char *schema, *tok_hash, *template_id, *split;
    size_t count;
    int32_t *ids[SN_FIELD_COUNT];
    size_t n_ids[SN_FIELD_COUNT];
    int64_t *off[SN_FIELD_COUNT];
    char *meta_str[S_COUNT];       /* last sn_shard_reader_meta strings */
};

struct sn_shard_reader_params sn_shard_reader_default_params(void)
{
    struct sn_shard_reader_params p;
    memset(&p, 0, sizeof p);
    return p;
}

void sn_shard_reader_close(struct sn_shard_reader *r)
{
    if (!r)
        return;
    if (r->file >= 0)
        H5Fclose(r->file);
    for (int f = 0; f < SN_FIELD_COUNT; f++) {
        sn_free(r->ids[f]);
        sn_free(r->off[f]);
    }
    for (int i = 0; i < S_COUNT; i++)
        sn_free(r->meta_str[i]);
    sn_free(r->schema);
    sn_free(r->tok_hash);
    sn_free(r->template_id);
    sn_free(r->split);
    sn_free(r->path);
    sn_free(r);
}

/* Reads and checks the root attributes against params (the identity check). */
static int read_info(struct sn_shard_reader *r, const struct sn_shard_reader_params *p,
                     struct sn_err *err)
{
    const char *path = r->path;
    int rc = attr_read_str(r->file, "schema", &r->schema, path, err);
    if (rc)
        return rc;
    if (strcmp(r->schema, SN_SHARD_SCHEMA) != 0)
        return sn_err_set(err, SN_E_FORMAT, "%s: foreign schema '%s' (this sentinel reads '%s')",
                          path, r->schema, SN_SHARD_SCHEMA);
    int64_t count;
    if ((rc = attr_read_str(r->file, "tokenizer_hash", &r->tok_hash, path, err)) ||
        (rc = attr_read_str(r->file, "template_id", &r->template_id, path, err)) ||
        (rc = attr_read_str(r->file, "split", &r->split, path, err)) ||
        (rc = attr_read_i64(r->file, "max_len", &r->info.max_len, path, err)) ||
        (rc = attr_read_i64(r->file, "vocab_size", &r->info.vocab_size, path, err)) ||
        (rc = attr_read_i64(r->file, "count", &count, path, err)) ||
        (rc = attr_read_i64(r->file, "shard_index", &r->info.shard_index, path, err)))
        return rc;
    if ((rc = sn_split_parse(r->split, &r->info.split, err)))
        return sn_err_wrap(err, "%s: attribute 'split'", path);
    if (count < 0 || count > MAX_COUNT_LIMIT)
        return sn_err_set(err, SN_E_FORMAT, "%s: attribute 'count' = %" PRId64 " is out of range",
                          path, count);
    if (r->info.max_len <= 0 || r->info.max_len > MAX_LEN_LIMIT)
        return sn_err_set(err, SN_E_FORMAT, "%s: attribute 'max_len' = %" PRId64 " is out of "
                          "range (1..%" PRId64 ")", path, r->info.max_len, MAX_LEN_LIMIT);
    if (r->info.vocab_size <= 0 || r->info.vocab_size > INT32_MAX)
        return sn_err_set(err, SN_E_FORMAT, "%s: attribute 'vocab_size' = %" PRId64 " is out of "
                          "range", path, r->info.vocab_size);
    if (p && p->tokenizer_hash && strcmp(p->tokenizer_hash, r->tok_hash) != 0)
        return sn_err_set(err, SN_E_FORMAT, "%s: built with another tokenizer: tokenizer_hash "
                          "'%.16s…' differs from the tokenizer's '%.16s…'; rebuild the shards "
                          "with this tokenizer or use the one they were built with", path,
                          r->tok_hash, p->tokenizer_hash);
    if (p && p->template_id && strcmp(p->template_id, r->template_id) != 0)
        return sn_err_set(err, SN_E_FORMAT, "%s: rendered with template '%s', expected '%s'",
                          path, r->template_id, p->template_id);
    if (p && p->max_len > 0 && r->info.max_len > p->max_len)
        return sn_err_set(err, SN_E_FORMAT, "%s: max_len %" PRId64 " exceeds the %" PRId64
                          " this run accepts", path, r->info.max_len, p->max_len);
    r->count = (size_t)count;
    r->info.schema = r->schema;
    r->info.tokenizer_hash = r->tok_hash;
    r->info.template_id = r->template_id;
    r->info.count = count;
    return SN_OK;
}

static int open_file(const char *path, hid_t *file, struct sn_err *err)
{
    *file = -1;
    if (!sn_path_exists(path))
        return sn_err_set(err, SN_E_IO, "%s: no such file", path);
    if (H5Fis_hdf5(path) <= 0)
        return sn_err_set(err, SN_E_FORMAT, "%s: not an HDF5 file", path);
    *file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (*file < 0)
        return h5fail(err, path, "open");
    return SN_OK;
}

static int load_field(struct sn_shard_reader *r, int f, struct sn_err *err)
{
    const char *path = r->path;
    char name[64];
    hsize_t len = 0;
    hid_t ds;
    snprintf(name, sizeof name, "offsets/%s", field_names[f]);
    int rc = ds_open_1d(r->file, name, H5T_INTEGER, &len, &ds, path, err);
    if (rc)
        return rc;
    if (len != (hsize_t)r->count + 1) {
        H5Dclose(ds);
        return sn_err_set(err, SN_E_FORMAT, "%s: '/%s' has %" PRIu64 " entries, expected count + "
                          "1 = %zu", path, name, (uint64_t)len, r->count + 1);
    }
    r->off[f] = sn_malloc((r->count + 1) * sizeof(int64_t));
    if (!r->off[f]) {
        H5Dclose(ds);
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
    }
    if (H5Dread(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, r->off[f]) < 0)
        rc = h5fail(err, path, name);
    H5Dclose(ds);
    if (rc)
        return rc;
    const int64_t *o = r->off[f];
    if (o[0] != 0)
        return sn_err_set(err, SN_E_FORMAT, "%s: '/%s'[0] = %" PRId64 ", expected 0", path, name,
                          o[0]);
    for (size_t i = 0; i < r->count; i++)
        if (o[i + 1] < o[i] || o[i + 1] - o[i] > r->info.max_len)
            return sn_err_set(err, SN_E_FORMAT, "%s: '/%s': tuple %zu spans [%" PRId64 ", %" PRId64
                              "): decreasing or longer than max_len %" PRId64, path, name, i,
                              o[i], o[i + 1], r->info.max_len);
    uint64_t total = (uint64_t)o[r->count];
    if (total * sizeof(int32_t) > MAX_IDS_BYTES)
        return sn_err_set(err, SN_E_FORMAT, "%s: '/%s' claims %" PRIu64 " ids; too large", path,
                          name, total);
    snprintf(name, sizeof name, "ids/%s", field_names[f]);
    rc = ds_open_1d(r->file, name, H5T_INTEGER, &len, &ds, path, err);
    if (rc)
        return rc;
    if (len != total) {
        H5Dclose(ds);
        return sn_err_set(err, SN_E_FORMAT, "%s: '/%s' has %" PRIu64 " ids but the offsets end at "
                          "%" PRIu64, path, name, (uint64_t)len, total);
    }
    r->ids[f] = sn_malloc((size_t)(total ? total : 1) * sizeof(int32_t));
    if (!r->ids[f]) {
        H5Dclose(ds);
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory for %" PRIu64 " ids", path, total);
    }
    if (total && H5Dread(ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, r->ids[f]) < 0)
        rc = h5fail(err, path, name);
    H5Dclose(ds);
    if (rc)
        return rc;
    r->n_ids[f] = (size_t)total;
    for (size_t j = 0; j < total; j++)
        if (r->ids[f][j] < 0 || r->ids[f][j] >= r->info.vocab_size)
            return sn_err_set(err, SN_E_FORMAT, "%s: '/%s'[%zu] = %" PRId32 " is outside the "
                              "vocabulary [0, %" PRId64 ")", path, name, j, r->ids[f][j],
                              r->info.vocab_size);
    return SN_OK;
}

static int reader_open(const char *path, const struct sn_shard_reader_params *params,
                       bool load_ids, struct sn_shard_reader **out, struct sn_err *err)
{
    *out = NULL;
    h5_quiet();
    struct sn_shard_reader *r = sn_calloc(1, sizeof *r);
    if (!r)
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
    r->file = -1;
    r->path = sn_strdup(path);
    int rc = r->path ? SN_OK : sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
    if (!rc)
        rc = open_file(path, &r->file, err);
    if (!rc)
        rc = read_info(r, params, err);
    for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT && !rc && load_ids; f++)
        rc = load_field(r, f, err);
    if (rc) {
        sn_shard_reader_close(r);
        return rc;
    }
    *out = r;
    return SN_OK;
}

int sn_shard_reader_open(const char *path, const struct sn_shard_reader_params *params,
                         struct sn_shard_reader **out, struct sn_err *err)
{
    return reader_open(path, params, true, out, err);
}

size_t sn_shard_reader_count(const struct sn_shard_reader *r)
{
    return r->count;
}

const struct sn_shard_info *sn_shard_reader_info(const struct sn_shard_reader *r)
{
    return &r->info;
}

int sn_shard_reader_get(struct sn_shard_reader *r, size_t i, struct sn_tuple_view *view,
                        struct sn_err *err)
{
    if (i >= r->count)
        return sn_err_set(err, SN_E_ARG, "%s: tuple %zu out of range (count %zu)", r->path, i,
                          r->count);
    view->ids[SN_FIELD_CONTEXT] = NULL;
    view->n_ids[SN_FIELD_CONTEXT] = 0;
    for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT; f++) {
        view->ids[f] = r->ids[f] + r->off[f][i];
        view->n_ids[f] = (size_t)(r->off[f][i + 1] - r->off[f][i]);
    }
    return SN_OK;
}

int sn_shard_reader_text(struct sn_shard_reader *r, size_t i, enum sn_field f, char **text,
                         struct sn_err *err)
{
    *text = NULL;
    if (i >= r->count || (unsigned)f >= SN_FIELD_COUNT)
        return sn_err_set(err, SN_E_ARG, "%s: tuple %zu out of range (count %zu)", r->path, i,
                          r->count);
    h5_quiet();
    return ds_read_str_at(r->file, str_cols[S_CONTEXT + f], r->count, i, text, r->path, err);
}

int sn_shard_reader_meta(struct sn_shard_reader *r, size_t i, struct sn_tuple_meta *m,
                         struct sn_err *err)
{
    memset(m, 0, sizeof *m);
    if (i >= r->count)
        return sn_err_set(err, SN_E_ARG, "%s: tuple %zu out of range (count %zu)", r->path, i,
                          r->count);
    h5_quiet();
    int rc = SN_OK;
    for (int c = S_SCENARIO; c < S_COUNT && !rc; c++) {
        sn_free(r->meta_str[c]);
        r->meta_str[c] = NULL;
        rc = ds_read_str_at(r->file, str_cols[c], r->count, i, &r->meta_str[c], r->path, err);
    }
    int32_t iv[I_COUNT] = {0};
    for (int c = 0; c < I_COUNT && !rc; c++)
        rc = ds_read_i32_at(r->file, int_cols[c], r->count, i, &iv[c], r->path, err);
    if (rc)
        return rc;
    m->scenario = r->meta_str[S_SCENARIO];
    m->dataset = r->meta_str[S_DATASET];
    m->trajectory_id = r->meta_str[S_TRAJ];
    m->item_id = r->meta_str[S_ITEM];
    m->chosen_role = r->meta_str[S_CH_ROLE];
    m->rejected_role = r->meta_str[S_REJ_ROLE];
    m->rejected_kind = r->meta_str[S_REJ_KIND];
    m->sha256 = r->meta_str[S_SHA];
    rc = sn_split_parse(r->meta_str[S_SPLIT], &m->split, err);
    if (rc)
        return sn_err_wrap(err, "%s: tuple %zu: meta/split", r->path, i);
    m->round = iv[I_ROUND];
    m->chosen_agent = iv[I_CH_AGENT];
    m->rejected_agent = iv[I_REJ_AGENT];
    m->cut_history[SN_FIELD_CHOSEN] = iv[I_CUTH_CH];
    m->cut_history[SN_FIELD_REJECTED] = iv[I_CUTH_REJ];
    m->cut_history[SN_FIELD_REFERENCE] = iv[I_CUTH_REF];
    m->cut_response[SN_FIELD_CHOSEN] = iv[I_CUTR_CH];
    m->cut_response[SN_FIELD_REJECTED] = iv[I_CUTR_REJ];
    m->cut_response[SN_FIELD_REFERENCE] = iv[I_CUTR_REF];
    return SN_OK;
}

/* ---- iterator ---------------------------------------------------------------------------- */

struct slot {
    struct sn_shard_batch b;
    int32_t  *ids[SN_FIELD_COUNT];
    size_t    n_ids[SN_FIELD_COUNT], cap_ids[SN_FIELD_COUNT];
    int64_t  *off[SN_FIELD_COUNT];
    size_t    cap_off[SN_FIELD_COUNT];
    uint64_t *index;
    size_t    cap_index;
};

struct sn_shard_iter {
    char   **paths;
    size_t   n_paths;
    uint64_t *base;                /* (n_paths) global index of each shard's first tuple */
    uint64_t total;
    struct sn_shard_iter_params p;
    char    *tok_hash, *template_id;
    struct slot *slots;
    size_t   n_slots, prod, cons, filled;
    bool     holding, done, stop, started;
    int      thread_rc;
    struct sn_err thread_err;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t  cv;
};

struct sn_shard_iter_params sn_shard_iter_default_params(void)
{
    struct sn_shard_iter_params p;
    memset(&p, 0, sizeof p);
    p.batch_size = 8;
    p.prefetch = 4;
    return p;
}

static void slot_reset(struct slot *s)
{
    s->b.n = 0;
    for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT; f++)
        s->n_ids[f] = 0;
}

static int slot_append(struct slot *s, const struct sn_shard_reader *r, size_t i, uint64_t gi,
                       struct sn_err *err)
{
    size_t n = s->b.n;
    int rc = grow((void **)&s->index, &s->cap_index, n + 1, sizeof(uint64_t), err);
    for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT && !rc; f++) {
        size_t len = (size_t)(r->off[f][i + 1] - r->off[f][i]);
        rc = grow((void **)&s->off[f], &s->cap_off[f], n + 2, sizeof(int64_t), err);
        if (!rc)
            rc = grow((void **)&s->ids[f], &s->cap_ids[f], s->n_ids[f] + len + 1,
                      sizeof(int32_t), err);
        if (rc)
            break;
        memcpy(s->ids[f] + s->n_ids[f], r->ids[f] + r->off[f][i], len * sizeof(int32_t));
        s->off[f][0] = 0;
        s->n_ids[f] += len;
        s->off[f][n + 1] = (int64_t)s->n_ids[f];
    }
    if (rc)
        return rc;
    s->index[n] = gi;
    s->b.n = n + 1;
    return SN_OK;
}

/* Waits for a free slot; returns NULL when the consumer is closing. */
static struct slot *acquire(struct sn_shard_iter *it)
{
    pthread_mutex_lock(&it->mu);
    while (it->filled == it->n_slots && !it->stop)
        pthread_cond_wait(&it->cv, &it->mu);
    struct slot *s = it->stop ? NULL : &it->slots[it->prod];
    pthread_mutex_unlock(&it->mu);
    if (s)
        slot_reset(s);
    return s;
}

static void publish(struct sn_shard_iter *it, struct slot *s)
{
    for (int f = 0; f < SN_FIELD_COUNT; f++) {
        s->b.ids[f] = f == SN_FIELD_CONTEXT ? NULL : s->ids[f];
        s->b.offsets[f] = f == SN_FIELD_CONTEXT ? NULL : s->off[f];
    }
    s->b.index = s->index;
    pthread_mutex_lock(&it->mu);
    it->prod = (it->prod + 1) % it->n_slots;
    it->filled++;
    pthread_cond_broadcast(&it->cv);
    pthread_mutex_unlock(&it->mu);
}

static void *producer(void *arg)
{
    struct sn_shard_iter *it = arg;
    struct sn_err err = {0};
    struct sn_rng rng;
    size_t *order = sn_malloc((it->n_paths ? it->n_paths : 1) * sizeof *order);
    size_t *perm = NULL, cap_perm = 0;
    int rc = order ? SN_OK : sn_err_set(&err, SN_E_NOMEM, "shard iterator: out of memory");
    struct slot *s = NULL;
    h5_quiet();
    sn_rng_seed(&rng, it->p.seed);
    for (size_t k = 0; k < it->n_paths && !rc; k++)
        order[k] = k;
    if (!rc && it->p.shuffle)
        sn_rng_shuffle(&rng, order, it->n_paths, sizeof *order);
    if (!rc)
        s = acquire(it);
    for (size_t k = 0; k < it->n_paths && !rc && s; k++) {
        struct sn_shard_reader *r = NULL;
        struct sn_shard_reader_params rp = it->p.expect;
        rp.tokenizer_hash = it->tok_hash;
        rp.template_id = it->template_id;
        rc = sn_shard_reader_open(it->paths[order[k]], &rp, &r, &err);
        if (!rc && r->count != (size_t)(it->base[order[k] + 1] - it->base[order[k]]))
            rc = sn_err_set(&err, SN_E_FORMAT, "%s: changed while being read", r->path);
        if (!rc)
            rc = grow((void **)&perm, &cap_perm, r->count + 1, sizeof *perm, &err);
        if (!rc) {
            for (size_t i = 0; i < r->count; i++)
                perm[i] = i;
            if (it->p.shuffle)
                sn_rng_shuffle(&rng, perm, r->count, sizeof *perm);
        }
        for (size_t j = 0; !rc && s && j < r->count; j++) {
            rc = slot_append(s, r, perm[j], it->base[order[k]] + perm[j], &err);
            if (!rc && s->b.n == it->p.batch_size) {
                publish(it, s);
                s = acquire(it);
            }
        }
        sn_shard_reader_close(r);
    }
    if (!rc && s && s->b.n > 0 && !it->p.drop_last)
        publish(it, s);
    sn_free(order);
    sn_free(perm);
    pthread_mutex_lock(&it->mu);
    it->done = true;
    it->thread_rc = rc;
    it->thread_err = err;
    pthread_cond_broadcast(&it->cv);
    pthread_mutex_unlock(&it->mu);
    return NULL;
}

void sn_shard_iter_close(struct sn_shard_iter *it)
{
    if (!it)
        return;
    if (it->started) {
        pthread_mutex_lock(&it->mu);
        it->stop = true;
        pthread_cond_broadcast(&it->cv);
        pthread_mutex_unlock(&it->mu);
        pthread_join(it->th, NULL);
        pthread_mutex_destroy(&it->mu);
        pthread_cond_destroy(&it->cv);
    }
    for (size_t k = 0; k < it->n_slots; k++) {
        struct slot *s = &it->slots[k];
        for (int f = 0; f < SN_FIELD_COUNT; f++) {
            sn_free(s->ids[f]);
            sn_free(s->off[f]);
        }
        sn_free(s->index);
    }
    sn_free(it->slots);
    if (it->paths)
        sn_paths_free(it->paths, it->n_paths);
    sn_free(it->base);
    sn_free(it->tok_hash);
    sn_free(it->template_id);
    sn_free(it);
}

int sn_shard_iter_open(const char *const *paths, size_t n_paths,
                       const struct sn_shard_iter_params *params, struct sn_shard_iter **out,
                       struct sn_err *err)
{
    *out = NULL;
    struct sn_shard_iter *it = sn_calloc(1, sizeof *it);
    if (!it)
        return sn_err_set(err, SN_E_NOMEM, "shard iterator: out of memory");
    it->p = params ? *params : sn_shard_iter_default_params();
    if (!it->p.batch_size)
        it->p.batch_size = 8;
    if (!it->p.prefetch)
        it->p.prefetch = 4;
    it->n_slots = it->p.prefetch + 1; /* + the one the consumer holds */
    it->slots = sn_calloc(it->n_slots, sizeof *it->slots);
    it->paths = sn_calloc(n_paths ? n_paths : 1, sizeof *it->paths);
    it->base = sn_calloc(n_paths + 1, sizeof *it->base);
    int rc = (it->slots && it->paths && it->base) ? SN_OK
             : sn_err_set(err, SN_E_NOMEM, "shard iterator: out of memory");
    for (size_t k = 0; k < n_paths && !rc; k++) {
        it->paths[k] = sn_strdup(paths[k]);
        it->n_paths = k + 1;
        if (!it->paths[k])
            rc = sn_err_set(err, SN_E_NOMEM, "shard iterator: out of memory");
    }
    /* Identity of every shard up front: a foreign one is refused here, by name. All shards
    ** must agree with each other (the first fixes tokenizer and template when params don't). */
    for (size_t k = 0; k < n_paths && !rc; k++) {
        struct sn_shard_reader *r = NULL;
        struct sn_shard_reader_params rp = it->p.expect;
        if (it->tok_hash)
            rp.tokenizer_hash = it->tok_hash;
        if (it->template_id)
            rp.template_id = it->template_id;
        rc = reader_open(paths[k], &rp, false, &r, err);
        if (rc)
            break;
        it->base[k + 1] = it->base[k] + r->count;
        if (!it->tok_hash) {
            it->tok_hash = sn_strdup(r->tok_hash);
            it->template_id = sn_strdup(r->template_id);
            if (!it->tok_hash || !it->template_id)
                rc = sn_err_set(err, SN_E_NOMEM, "shard iterator: out of memory");
        }
        sn_shard_reader_close(r);
    }
    if (!rc) {
        it->total = it->base[n_paths];
        pthread_mutex_init(&it->mu, NULL);
        pthread_cond_init(&it->cv, NULL);
        if (pthread_create(&it->th, NULL, producer, it) != 0) {
            pthread_mutex_destroy(&it->mu);
            pthread_cond_destroy(&it->cv);
            rc = sn_err_set(err, SN_E_IO, "shard iterator: cannot start the prefetch thread");
        } else {
            it->started = true;
        }
    }
    if (rc) {
        sn_shard_iter_close(it);
        return rc;
    }
    *out = it;
    return SN_OK;
}

uint64_t sn_shard_iter_total(const struct sn_shard_iter *it)
{
    return it->total;
}

int sn_shard_iter_next(struct sn_shard_iter *it, const struct sn_shard_batch **batch,
                       struct sn_err *err)
{
    *batch = NULL;
    pthread_mutex_lock(&it->mu);
    if (it->holding) {
        it->cons = (it->cons + 1) % it->n_slots;
        it->filled--;
        it->holding = false;
        pthread_cond_broadcast(&it->cv);
    }
    while (it->filled == 0 && !it->done)
        pthread_cond_wait(&it->cv, &it->mu);
    int rc = SN_OK;
    if (it->filled > 0) {
        *batch = &it->slots[it->cons].b;
        it->holding = true;
    } else if (it->thread_rc) {
        rc = sn_err_set(err, it->thread_rc, "%s", it->thread_err.msg);
    }
    pthread_mutex_unlock(&it->mu);
    return rc;
}

/* ---- manifest ---------------------------------------------------------------------------- */

void sn_manifest_free(struct sn_manifest *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_shards; i++)
        sn_free(m->shards[i].file);
    sn_free(m->shards);
    sn_free(m->dir);
    cJSON_Delete(m->json);
    sn_free(m);
}

static bool is_hex64(const char *s)
{
    if (!s || strlen(s) != 64)
        return false;
    for (int i = 0; i < 64; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

static char *join_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = sn_malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}

int sn_manifest_load(const char *path, struct sn_manifest **out, struct sn_err *err)
{
    *out = NULL;
    struct sn_manifest *m = sn_calloc(1, sizeof *m);
    char *file = NULL;
    if (!m)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    int rc = SN_OK;
    if (sn_path_is_dir(path)) {
        m->dir = sn_strdup(path);
        file = join_path(path, SN_MANIFEST_NAME);
    } else {
        const char *slash = strrchr(path, '/');
        m->dir = slash ? sn_strndup(path, (size_t)(slash - path) ? (size_t)(slash - path) : 1)
                       : sn_strdup(".");
        file = sn_strdup(path);
    }
    if (!m->dir || !file) {
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
        goto done;
    }
    rc = sn_json_load(file, &m->json, err);
    if (rc)
        goto done;
    const cJSON *j = m->json, *sch = cJSON_GetObjectItemCaseSensitive(j, "schema");
    if (!cJSON_IsObject(j) || !cJSON_IsString(sch) ||
        strcmp(sch->valuestring, SN_MANIFEST_SCHEMA) != 0) {
        rc = sn_err_set(err, SN_E_FORMAT, "%s: schema '%s' is not '%s'", file,
                        cJSON_IsString(sch) ? sch->valuestring : "(missing)", SN_MANIFEST_SCHEMA);
        goto done;
    }
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(j, "complete");
    m->complete = cJSON_IsTrue(c);
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "shards");
    if (!cJSON_IsArray(arr)) {
        rc = sn_err_set(err, SN_E_FORMAT, "%s: 'shards': expected an array", file);
        goto done;
    }
    size_t n = (size_t)cJSON_GetArraySize(arr);
    m->shards = sn_calloc(n ? n : 1, sizeof *m->shards);
    if (!m->shards) {
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
        goto done;
    }
    size_t k = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(e, "file");
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(e, "split");
        const cJSON *ct = cJSON_GetObjectItemCaseSensitive(e, "count");
        const cJSON *ix = cJSON_GetObjectItemCaseSensitive(e, "index");
        const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "sha256");
        struct sn_manifest_shard *s = &m->shards[k];
        if (!cJSON_IsString(fn) || !fn->valuestring[0] || strchr(fn->valuestring, '/') ||
            !strcmp(fn->valuestring, "..") || !cJSON_IsString(sp) || !cJSON_IsNumber(ct) ||
            ct->valuedouble < 0 || ct->valuedouble > (double)MAX_COUNT_LIMIT ||
            !cJSON_IsNumber(ix) || ix->valuedouble < 0 || !cJSON_IsString(sh) ||
            !is_hex64(sh->valuestring)) {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: shards[%zu]: expected {file (a name in the "
                            "manifest's directory), split, index, count >= 0, sha256 (64 hex)}",
                            file, k);
            goto done;
        }
        if ((rc = sn_split_parse(sp->valuestring, &s->split, err))) {
            sn_err_wrap(err, "%s: shards[%zu]", file, k);
            goto done;
        }
        s->file = sn_strdup(fn->valuestring);
        if (!s->file) {
            rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
            goto done;
        }
        s->count = (int64_t)ct->valuedouble;
        s->index = (int64_t)ix->valuedouble;
        memcpy(s->sha256, sh->valuestring, 65);
        m->counts[s->split] += s->count;
        m->n_shards = ++k;
    }
done:
    sn_free(file);
    if (rc) {
        sn_manifest_free(m);
        return rc;
    }
    *out = m;
    return SN_OK;
}

int sn_manifest_paths(const struct sn_manifest *m, enum sn_split split, char ***paths, size_t *n,
                      struct sn_err *err)
{
    *paths = NULL;
    *n = 0;
    char **v = sn_calloc(m->n_shards ? m->n_shards : 1, sizeof *v);
    if (!v)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < m->n_shards; i++) {
        if (split != SN_SPLIT_COUNT && m->shards[i].split != split)
            continue;
        v[k] = join_path(m->dir, m->shards[i].file);
        if (!v[k]) {
            sn_paths_free(v, k);
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        }
        k++;
    }
    *paths = v;
    *n = k;
    return SN_OK;
}

int sn_manifest_verify(const struct sn_manifest *m, struct sn_err *err)
{
    for (size_t i = 0; i < m->n_shards; i++) {
        char *p = join_path(m->dir, m->shards[i].file), hex[65];
        if (!p)
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        int rc = sn_sha256_file(p, hex, err);
        if (!rc && strcmp(hex, m->shards[i].sha256) != 0)
            rc = sn_err_set(err, SN_E_FORMAT, "%s: SHA-256 %.16s… does not match the manifest's "
                            "%.16s…; the file changed after it was written", p, hex,
                            m->shards[i].sha256);
        sn_free(p);
        if (rc)
            return rc;
    }
    return SN_OK;
}

/* ---- shard set ---------------------------------------------------------------------------- */

struct sn_shard_set {
    struct sn_shard_set_params p;
    char   *dir;
    cJSON  *settings;
    char   *tok_hash, *template_id;
    struct sn_manifest_shard *shards;   /* committed, in commit order */
    size_t  n_shards, cap_shards;
    int64_t committed[SN_SPLIT_COUNT];  /* tuples in committed shards */
    int64_t seen[SN_SPLIT_COUNT];       /* tuples offered so far */
    int64_t next_index[SN_SPLIT_COUNT];
    struct sn_shard_writer *cur[SN_SPLIT_COUNT];
    bool    was_complete;
};

struct sn_shard_set_params sn_shard_set_default_params(void)
{
    struct sn_shard_set_params p;
    memset(&p, 0, sizeof p);
    p.shard_size = 4096;
    p.writer = sn_shard_writer_default_params();
    return p;
}

void sn_shard_set_close(struct sn_shard_set *s)
{
    if (!s)
        return;
    for (int k = 0; k < SN_SPLIT_COUNT; k++)
        sn_shard_writer_abort(s->cur[k]);
    for (size_t i = 0; i < s->n_shards; i++)
        sn_free(s->shards[i].file);
    sn_free(s->shards);
    cJSON_Delete(s->settings);
    sn_free(s->tok_hash);
    sn_free(s->template_id);
    sn_free(s->dir);
    sn_free(s);
}

static int write_manifest(struct sn_shard_set *s, bool complete, struct sn_err *err)
{
    cJSON *j = cJSON_CreateObject(), *arr = NULL, *counts = NULL;
    int rc = SN_OK;
    if (!j)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    const struct sn_shard_info *in = &s->p.writer.info;
    int64_t total = 0;
    cJSON_AddStringToObject(j, "schema", SN_MANIFEST_SCHEMA);
    cJSON_AddStringToObject(j, "tuples_schema", SN_SHARD_SCHEMA);
    cJSON_AddBoolToObject(j, "complete", complete);
    cJSON_AddStringToObject(j, "tokenizer_hash", in->tokenizer_hash);
    cJSON_AddStringToObject(j, "template_id", in->template_id);
    cJSON_AddNumberToObject(j, "max_len", (double)in->max_len);
    cJSON_AddNumberToObject(j, "vocab_size", (double)in->vocab_size);
    cJSON_AddNumberToObject(j, "shard_size", (double)s->p.shard_size);
    counts = cJSON_AddObjectToObject(j, "counts");
    for (int k = 0; counts && k < SN_SPLIT_COUNT; k++) {
        cJSON_AddNumberToObject(counts, split_names[k], (double)s->committed[k]);
        total += s->committed[k];
    }
    if (counts)
        cJSON_AddNumberToObject(counts, "total", (double)total);
    arr = cJSON_AddArrayToObject(j, "shards");
    for (size_t i = 0; arr && i < s->n_shards; i++) {
        cJSON *e = cJSON_CreateObject();
        if (!e)
            break;
        cJSON_AddStringToObject(e, "file", s->shards[i].file);
        cJSON_AddStringToObject(e, "split", split_names[s->shards[i].split]);
        cJSON_AddNumberToObject(e, "index", (double)s->shards[i].index);
        cJSON_AddNumberToObject(e, "count", (double)s->shards[i].count);
        cJSON_AddStringToObject(e, "sha256", s->shards[i].sha256);
        cJSON_AddItemToArray(arr, e);
    }
    cJSON *set = s->settings ? cJSON_Duplicate(s->settings, 1) : cJSON_CreateObject();
    if (set)
        cJSON_AddItemToObject(j, "settings", set);
    if (s->p.annotate)
        s->p.annotate(s->p.user, j);
    char *mp = join_path(s->dir, SN_MANIFEST_NAME);
    if (!mp || !counts || !arr || !set)
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
    else
        rc = sn_json_save(mp, j, err);
    sn_free(mp);
    cJSON_Delete(j);
    return rc;
}

/* First key of a that differs in b, for the "different settings" message. */
static void first_diff(const cJSON *a, const cJSON *b, char *buf, size_t n)
{
    const cJSON *e;
    snprintf(buf, n, "(settings)");
    cJSON_ArrayForEach(e, a) {
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(b, e->string);
        if (!o || !cJSON_Compare(e, o, 1)) {
            char *x = cJSON_PrintUnformatted(e), *y = o ? cJSON_PrintUnformatted(o) : NULL;
            snprintf(buf, n, "'%s' was %.60s, now %.60s", e->string ? e->string : "?",
                     y ? y : "(absent)", x ? x : "?");
            cJSON_free(x);
            cJSON_free(y);
            return;
        }
    }
    cJSON_ArrayForEach(e, b) {
        if (!cJSON_GetObjectItemCaseSensitive(a, e->string)) {
            snprintf(buf, n, "'%s' is no longer set", e->string ? e->string : "?");
            return;
        }
    }
}

/* Removes temp files an interrupted writer left: "<name>.h5.tmp.<pid>", "manifest.json.tmp.*". */
static void remove_stale_temps(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *t = strstr(e->d_name, ".tmp.");
        if (!t)
            continue;
        size_t stem = (size_t)(t - e->d_name);
        bool ours = (stem > 3 && !strncmp(t - 3, ".h5", 3)) ||
                    (stem == strlen(SN_MANIFEST_NAME) &&
                     !strncmp(e->d_name, SN_MANIFEST_NAME, stem));
        for (const char *q = t + 5; ours && *q; q++)
            ours = *q >= '0' && *q <= '9';
        if (ours) {
            char *p = join_path(dir, e->d_name);
            if (p)
                unlink(p);
            sn_free(p);
        }
    }
    closedir(d);
}

static int resume(struct sn_shard_set *s, struct sn_err *err)
{
    struct sn_manifest *m = NULL;
    int rc = sn_manifest_load(s->dir, &m, err);
    if (rc)
        return sn_err_wrap(err, "cannot resume the build in %s (delete it to start over)", s->dir);
    const cJSON *old = cJSON_GetObjectItemCaseSensitive(m->json, "settings");
    const cJSON *ss = cJSON_GetObjectItemCaseSensitive(m->json, "shard_size");
    if (!old || !s->settings || !cJSON_Compare(old, s->settings, 1) || !cJSON_IsNumber(ss) ||
        (size_t)ss->valuedouble != s->p.shard_size) {
        char d[200];
        if (cJSON_IsNumber(ss) && (size_t)ss->valuedouble != s->p.shard_size)
            snprintf(d, sizeof d, "'shard_size' was %.0f, now %zu", ss->valuedouble,
                     s->p.shard_size);
        else if (old && s->settings)
            first_diff(s->settings, old, d, sizeof d);
        else
            snprintf(d, sizeof d, "no settings recorded");
        rc = sn_err_set(err, SN_E_ARG, "%s holds a build with different settings (%s); use "
                        "another output directory or delete it", s->dir, d);
        goto done;
    }
    rc = sn_manifest_verify(m, err);
    if (rc) {
        sn_err_wrap(err, "cannot resume the build in %s (delete it to start over)", s->dir);
        goto done;
    }
    s->shards = m->shards;
    s->n_shards = s->cap_shards = m->n_shards;
    m->shards = NULL;
    m->n_shards = 0;
    for (size_t i = 0; i < s->n_shards; i++) {
        enum sn_split k = s->shards[i].split;
        if (s->shards[i].index != s->next_index[k] ||
            (s->committed[k] % (int64_t)s->p.shard_size) != 0) {
            rc = sn_err_set(err, SN_E_FORMAT, "%s: the manifest's shard list is inconsistent at "
                            "%s (delete the directory to start over)", s->dir,
                            s->shards[i].file);
            goto done;
        }
        s->committed[k] += s->shards[i].count;
        s->next_index[k]++;
    }
    s->was_complete = m->complete;
done:
    sn_manifest_free(m);
    return rc;
}

int sn_shard_set_open(const struct sn_shard_set_params *params, struct sn_shard_set **out,
                      struct sn_err *err)
{
    *out = NULL;
    struct sn_shard_set *s = sn_calloc(1, sizeof *s);
    if (!s)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    s->p = *params;
    if (!s->p.shard_size)
        s->p.shard_size = 4096;
    s->dir = sn_strdup(params->dir ? params->dir : ".");
    s->settings = params->settings ? cJSON_Duplicate(params->settings, 1) : NULL;
    s->tok_hash = sn_strdup(params->writer.info.tokenizer_hash ? params->writer.info.tokenizer_hash
                                                               : "");
    s->template_id = sn_strdup(params->writer.info.template_id ? params->writer.info.template_id
                                                               : "");
    int rc = SN_OK;
    if (!s->dir || !s->tok_hash || !s->template_id || (params->settings && !s->settings))
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
    s->p.dir = s->dir;
    s->p.settings = s->settings;
    s->p.writer.info.tokenizer_hash = s->tok_hash;
    s->p.writer.info.template_id = s->template_id;
    if (!rc)
        rc = sn_mkdirs(s->dir, err);
    if (!rc) {
        remove_stale_temps(s->dir);
        char *mp = join_path(s->dir, SN_MANIFEST_NAME);
        if (!mp)
            rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
        else if (sn_path_exists(mp))
            rc = resume(s, err);
        sn_free(mp);
    }
    if (rc) {
        sn_shard_set_close(s);
        return rc;
    }
    *out = s;
    return SN_OK;
}

bool sn_shard_set_was_complete(const struct sn_shard_set *s)
{
    return s->was_complete;
}

bool sn_shard_set_skips_next(const struct sn_shard_set *s, enum sn_split split)
{
    return (unsigned)split < SN_SPLIT_COUNT && s->seen[split] < s->committed[split];
}

int64_t sn_shard_set_count(const struct sn_shard_set *s, enum sn_split split)
{
    return (unsigned)split < SN_SPLIT_COUNT ? s->seen[split] : 0;
}

size_t sn_shard_set_n_shards(const struct sn_shard_set *s)
{
    return s->n_shards;
}

static int commit_current(struct sn_shard_set *s, enum sn_split k, struct sn_err *err)
{
    struct sn_shard_writer *w = s->cur[k];
    s->cur[k] = NULL;
    int64_t count = (int64_t)w->count;
    const char *slash = strrchr(w->path, '/');
    char *file = sn_strdup(slash ? slash + 1 : w->path);
    char hex[65];
    int rc = file ? grow((void **)&s->shards, &s->cap_shards, s->n_shards + 1,
                         sizeof *s->shards, err)
                  : sn_err_set(err, SN_E_NOMEM, "out of memory");
    if (rc) {
        sn_free(file);
        sn_shard_writer_abort(w);
        return rc;
    }
    rc = sn_shard_writer_commit(w, hex, err);
    if (rc) {
        sn_free(file);
        return rc;
    }
    struct sn_manifest_shard *e = &s->shards[s->n_shards++];
    e->file = file;
    e->split = k;
    e->count = count;
    e->index = s->next_index[k]++;
    memcpy(e->sha256, hex, 65);
    s->committed[k] += count;
    return write_manifest(s, false, err);
}

int sn_shard_set_add(struct sn_shard_set *s, const struct sn_shard_tuple *t, struct sn_err *err)
{
    enum sn_split k = t->meta.split;
    if ((unsigned)k >= SN_SPLIT_COUNT)
        return sn_err_set(err, SN_E_ARG, "shard set: bad split %d", (int)k);
    if (s->was_complete)
        return sn_err_set(err, SN_E_ARG, "%s: the build is already complete", s->dir);
    if (s->seen[k] < s->committed[k]) { /* belongs to a shard a previous run committed */
        s->seen[k]++;
        return SN_OK;
    }
    int rc;
    if (!s->cur[k]) {
        char name[64];
        snprintf(name, sizeof name, "%s-%05" PRId64 ".h5", split_names[k], s->next_index[k]);
        char *path = join_path(s->dir, name);
        if (!path)
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        struct sn_shard_writer_params wp = s->p.writer;
        wp.info.split = k;
        wp.info.shard_index = s->next_index[k];
        rc = sn_shard_writer_create(path, &wp, &s->cur[k], err);
        sn_free(path);
        if (rc)
            return rc;
    }
    rc = sn_shard_writer_add(s->cur[k], t, err);
    if (rc)
        return rc;
    s->seen[k]++;
    if (s->cur[k]->count >= s->p.shard_size)
        return commit_current(s, k, err);
    return SN_OK;
}

int sn_shard_set_finish(struct sn_shard_set *s, struct sn_err *err)
{
    if (s->was_complete)
        return SN_OK;
    for (int k = 0; k < SN_SPLIT_COUNT; k++)
        if (s->cur[k] && s->cur[k]->count > 0) {
            int rc = commit_current(s, (enum sn_split)k, err);
            if (rc)
                return rc;
        }
    int rc = write_manifest(s, true, err);
    if (!rc)
        s->was_complete = true;
    return rc;
}
