/* shard/shard_hdf5.c: the on-disk names of a shard (field, split, column and group names) and
** the HDF5 helpers the writer and the reader share (shard/shard_internal.h). */
#include "shard/shard_internal.h"

#include <inttypes.h>
#include <string.h>

const char *const sn_shard_field_names[] = {"context", "chosen", "rejected", "reference"};
const char *const sn_shard_split_names[] = {"train", "validation", "test", "ood"};
_Static_assert(sizeof sn_shard_field_names / sizeof sn_shard_field_names[0] == SN_FIELD_COUNT,
               "fields");
_Static_assert(sizeof sn_shard_split_names / sizeof sn_shard_split_names[0] == SN_SPLIT_COUNT,
               "splits");

const char *sn_field_name(enum sn_field f)
{
    return (unsigned)f < SN_FIELD_COUNT ? sn_shard_field_names[f] : "?";
}

const char *sn_split_name(enum sn_split s)
{
    return (unsigned)s < SN_SPLIT_COUNT ? sn_shard_split_names[s] : "?";
}

int sn_split_parse(const char *name, enum sn_split *out, struct sn_err *err)
{
    for (int s = 0; s < SN_SPLIT_COUNT; s++)
        if (name && !strcmp(name, sn_shard_split_names[s])) {
            *out = (enum sn_split)s;
            return SN_OK;
        }
    return sn_err_set(err, SN_E_FORMAT, "unknown split '%s' (expected train, validation or test)",
                      name ? name : "(null)");
}

const char *const sn_shard_str_cols[] = {
    "text/context", "text/chosen", "text/rejected", "text/reference",
    "meta/scenario", "meta/dataset", "meta/trajectory_id", "meta/item_id",
    "meta/chosen_role", "meta/rejected_role", "meta/rejected_kind", "meta/split", "meta/sha256"};
_Static_assert(sizeof sn_shard_str_cols / sizeof sn_shard_str_cols[0] == S_COUNT, "str cols");

const char *const sn_shard_int_cols[] = {
    "meta/round", "meta/chosen_agent", "meta/rejected_agent",
    "meta/cut_history/chosen", "meta/cut_history/rejected", "meta/cut_history/reference",
    "meta/cut_response/chosen", "meta/cut_response/rejected", "meta/cut_response/reference"};
_Static_assert(sizeof sn_shard_int_cols / sizeof sn_shard_int_cols[0] == I_COUNT, "int cols");

const char *const sn_shard_groups[] = {"text", "ids", "offsets", "meta", "meta/cut_history",
                                      "meta/cut_response"};
_Static_assert(sizeof sn_shard_groups / sizeof sn_shard_groups[0] == SN_SHARD_N_GROUPS,
               "groups");

/* ---- HDF5 helpers ------------------------------------------------------------------------- */

void sn_h5_quiet(void)
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

int sn_h5_fail(struct sn_err *err, const char *path, const char *what)
{
    char b[200];
    return sn_err_set(err, SN_E_BACKEND, "%s: %s: %s", path, what, h5msg(b));
}

hid_t sn_h5_vlen_str_type(void)
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

/* A scalar attribute of file type ftype, written from buf as mtype. */
static int attr_write(hid_t obj, const char *name, hid_t ftype, hid_t mtype, const void *buf,
                      const char *path, struct sn_err *err)
{
    hid_t sp = H5Screate(H5S_SCALAR), a = -1;
    int rc = SN_OK;
    a = sp < 0 ? -1 : H5Acreate2(obj, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0 || H5Awrite(a, mtype, buf) < 0)
        rc = sn_h5_fail(err, path, name);
    if (a >= 0)
        H5Aclose(a);
    if (sp >= 0)
        H5Sclose(sp);
    return rc;
}

int sn_h5_attr_write_str(hid_t obj, const char *name, const char *value, const char *path,
                         struct sn_err *err)
{
    hid_t t = sn_h5_vlen_str_type();
    if (t < 0)
        return sn_h5_fail(err, path, "string type");
    int rc = attr_write(obj, name, t, t, &value, path, err);
    H5Tclose(t);
    return rc;
}

int sn_h5_attr_write_i64(hid_t obj, const char *name, int64_t v, const char *path,
                         struct sn_err *err)
{
    return attr_write(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v, path, err);
}

/* Reads the value of the attribute a (type t) into out. */
typedef int (*attr_reader)(hid_t a, hid_t t, void *out, const char *path, const char *name,
                           struct sn_err *err);

/* Opens the attribute name of obj, checks that it holds one value of class cls (else "expected
** one <what>") and reads it with read. missing: the tail of the message when it is absent. */
static int attr_read_one(hid_t obj, const char *name, H5T_class_t cls, const char *what,
                         const char *missing, attr_reader read, void *out, const char *path,
                         struct sn_err *err)
{
    if (H5Aexists(obj, name) <= 0)
        return sn_err_set(err, SN_E_FORMAT, "%s: attribute '%s' is missing%s", path, name,
                          missing);
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0)
        return sn_h5_fail(err, path, name);
    hid_t t = H5Aget_type(a), sp = H5Aget_space(a);
    int rc;
    if (t < 0 || sp < 0 || H5Tget_class(t) != cls || H5Sget_simple_extent_npoints(sp) != 1)
        rc = sn_err_set(err, SN_E_FORMAT, "%s: attribute '%s': expected one %s", path, name,
                        what);
    else
        rc = read(a, t, out, path, name, err);
    if (sp >= 0)
        H5Sclose(sp);
    if (t >= 0)
        H5Tclose(t);
    H5Aclose(a);
    return rc;
}

/* A string (variable or fixed length) into a new string at *(char **)out. */
static int read_str_value(hid_t a, hid_t t, void *out, const char *path, const char *name,
                          struct sn_err *err)
{
    char *s = NULL;
    if (H5Tis_variable_str(t) > 0) {
        hid_t mt = sn_h5_vlen_str_type();
        int rc = mt < 0 || H5Aread(a, mt, &s) < 0 || !s ? sn_h5_fail(err, path, name) : SN_OK;
        if (!rc) {
            char *copy = sn_strdup(s);
            H5free_memory(s);
            s = copy;
        }
        if (mt >= 0)
            H5Tclose(mt);
        if (rc)
            return rc;
    } else {
        size_t n = H5Tget_size(t);
        if (n == 0 || n > (1u << 20))
            return sn_err_set(err, SN_E_FORMAT, "%s: attribute '%s': bad string size %zu", path,
                              name, n);
        s = sn_calloc(1, n + 1);
        if (s && H5Aread(a, t, s) < 0) {
            sn_free(s);
            return sn_h5_fail(err, path, name);
        }
    }
    if (!s)
        return sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
    *(char **)out = s;
    return SN_OK;
}

/* An integer into *(int64_t *)out. */
static int read_i64_value(hid_t a, hid_t t, void *out, const char *path, const char *name,
                          struct sn_err *err)
{
    (void)t;
    return H5Aread(a, H5T_NATIVE_INT64, out) < 0 ? sn_h5_fail(err, path, name) : SN_OK;
}

/* Reads a scalar string attribute (variable or fixed length) into a new string. */
int sn_h5_attr_read_str(hid_t obj, const char *name, char **out, const char *path,
                        struct sn_err *err)
{
    *out = NULL;
    return attr_read_one(obj, name, H5T_STRING, "string", "; not a sentinel shard?",
                         read_str_value, out, path, err);
}

int sn_h5_attr_read_i64(hid_t obj, const char *name, int64_t *out, const char *path,
                        struct sn_err *err)
{
    return attr_read_one(obj, name, H5T_INTEGER, "integer", "", read_i64_value, out, path, err);
}

/* Creates a 1-D chunked, shuffled, deflated dataset of n elements and writes buf. */
int sn_h5_ds_write(hid_t file, const char *name, hid_t ftype, hid_t mtype, size_t n,
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
        rc = sn_h5_fail(err, path, name);
        goto done;
    }
    ds = H5Dcreate2(file, name, ftype, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (ds < 0 || (n && H5Dwrite(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0))
        rc = sn_h5_fail(err, path, name);
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
int sn_h5_ds_open_1d(hid_t file, const char *name, H5T_class_t cls, hsize_t *len, hid_t *out,
                     const char *path, struct sn_err *err)
{
    *out = -1;
    if (H5Lexists(file, name, H5P_DEFAULT) <= 0)
        return sn_err_set(err, SN_E_FORMAT, "%s: dataset '/%s' is missing", path, name);
    hid_t ds = H5Dopen2(file, name, H5P_DEFAULT);
    if (ds < 0)
        return sn_h5_fail(err, path, name);
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
/* Opens the 1-d dataset `name` of class cls, checks that it has `count` entries (note, when
** not "", is added to that message) and selects entry i: *ds, *fs (file space holding the
** selection) and *ms (one-element memory space) are the caller's to close. On failure nothing
** is left open. */
static int ds_select_one(hid_t file, const char *name, H5T_class_t cls, size_t count,
                         const char *note, size_t i, hid_t *ds, hid_t *fs, hid_t *ms,
                         const char *path, struct sn_err *err)
{
    hsize_t len = 0, start[1] = {i}, cnt[1] = {1};
    *fs = *ms = -1;
    int rc = sn_h5_ds_open_1d(file, name, cls, &len, ds, path, err);
    if (rc)
        return rc;
    if (len != count) {
        rc = sn_err_set(err, SN_E_FORMAT, "%s: dataset '/%s' has %" PRIu64 " entries, expected "
                        "%zu%s", path, name, (uint64_t)len, count, note);
    } else {
        *fs = H5Dget_space(*ds);
        *ms = H5Screate_simple(1, cnt, NULL);
        if (*fs < 0 || *ms < 0 ||
            H5Sselect_hyperslab(*fs, H5S_SELECT_SET, start, NULL, cnt, NULL) < 0)
            rc = sn_h5_fail(err, path, name);
    }
    if (rc) {
        if (*ms >= 0)
            H5Sclose(*ms);
        if (*fs >= 0)
            H5Sclose(*fs);
        H5Dclose(*ds);
    }
    return rc;
}

int sn_h5_ds_read_str_at(hid_t file, const char *name, size_t count, size_t i, char **out,
                         const char *path, struct sn_err *err)
{
    hid_t ds, fs, ms, mt;
    char *s = NULL;
    *out = NULL;
    int rc = ds_select_one(file, name, H5T_STRING, count, " (the count attribute)", i, &ds, &fs,
                           &ms, path, err);
    if (rc)
        return rc;
    mt = sn_h5_vlen_str_type();
    if (mt < 0 || H5Dread(ds, mt, ms, fs, H5P_DEFAULT, &s) < 0) {
        rc = sn_h5_fail(err, path, name);
    } else {
        *out = sn_strdup(s ? s : "");
        if (!*out)
            rc = sn_err_set(err, SN_E_NOMEM, "%s: out of memory", path);
        H5Dvlen_reclaim(mt, ms, H5P_DEFAULT, &s);
    }
    if (mt >= 0)
        H5Tclose(mt);
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(ds);
    return rc;
}

int sn_h5_ds_read_i32_at(hid_t file, const char *name, size_t count, size_t i, int32_t *out,
                         const char *path, struct sn_err *err)
{
    hid_t ds, fs, ms;
    int rc = ds_select_one(file, name, H5T_INTEGER, count, "", i, &ds, &fs, &ms, path, err);
    if (rc)
        return rc;
    if (H5Dread(ds, H5T_NATIVE_INT32, ms, fs, H5P_DEFAULT, out) < 0)
        rc = sn_h5_fail(err, path, name);
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(ds);
    return rc;
}

/* ---- growable arrays ---------------------------------------------------------------------- */

int sn_shard_grow(void **p, size_t *cap, size_t need, size_t elem, struct sn_err *err)
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
