/* shard/shard_internal.h: what the parts of the shard module share (not installed, not for users:
** they include shard/shard.h). The parts, one file each: shard_hdf5.c (on-disk names, HDF5
** helpers), shard_writer.c, shard_reader.c, shard_iter.c (batched iterator with a prefetch
** thread), manifest.c, shard_set.c (the resumable shard set `sentinel build` writes).
** Layout: shard/shard.h and docs/formats.md (docs/design.md §5 "Shard").
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
#ifndef SN_SHARD_INTERNAL_H
#define SN_SHARD_INTERNAL_H
#include "shard/shard.h"

#include <hdf5.h>
#include <stdbool.h>
#include <stdint.h>

/* ---- column tables (the on-disk names; docs/formats.md) ------------------------------ */

enum { S_CONTEXT, S_CHOSEN, S_REJECTED, S_REFERENCE, S_SCENARIO, S_DATASET, S_TRAJ, S_ITEM,
       S_CH_ROLE, S_REJ_ROLE, S_REJ_KIND, S_SPLIT, S_SHA, S_COUNT };
enum { I_ROUND, I_CH_AGENT, I_REJ_AGENT, I_CUTH_CH, I_CUTH_REJ, I_CUTH_REF, I_CUTR_CH,
       I_CUTR_REJ, I_CUTR_REF, I_COUNT };

/* Hard limits on what a reader accepts from a file (docs/design.md §7). */
#define MAX_LEN_LIMIT   ((int64_t)1 << 24)
#define MAX_COUNT_LIMIT ((int64_t)1 << 31)
#define MAX_IDS_BYTES   ((uint64_t)8 << 30)

enum { SN_SHARD_N_GROUPS = 6 };
extern const char *const sn_shard_field_names[SN_FIELD_COUNT];
extern const char *const sn_shard_split_names[SN_SPLIT_COUNT];
extern const char *const sn_shard_str_cols[S_COUNT];
extern const char *const sn_shard_int_cols[I_COUNT];
extern const char *const sn_shard_groups[SN_SHARD_N_GROUPS]; /* created before the datasets */

/* ---- HDF5 helpers (shard_hdf5.c) ---------------------------------------------------------- */

void sn_h5_quiet(void);
int sn_h5_fail(struct sn_err *err, const char *path, const char *what);
hid_t sn_h5_vlen_str_type(void);
int sn_h5_attr_write_str(hid_t obj, const char *name, const char *value, const char *path,
                         struct sn_err *err);
int sn_h5_attr_write_i64(hid_t obj, const char *name, int64_t v, const char *path,
                         struct sn_err *err);
int sn_h5_attr_read_str(hid_t obj, const char *name, char **out, const char *path,
                        struct sn_err *err);
int sn_h5_attr_read_i64(hid_t obj, const char *name, int64_t *out, const char *path,
                        struct sn_err *err);
int sn_h5_ds_write(hid_t file, const char *name, hid_t ftype, hid_t mtype, size_t n,
                   const void *buf, size_t chunk, int deflate, const char *path,
                   struct sn_err *err);
int sn_h5_ds_open_1d(hid_t file, const char *name, H5T_class_t cls, hsize_t *len, hid_t *out,
                     const char *path, struct sn_err *err);
int sn_h5_ds_read_str_at(hid_t file, const char *name, size_t count, size_t i, char **out,
                         const char *path, struct sn_err *err);
int sn_h5_ds_read_i32_at(hid_t file, const char *name, size_t count, size_t i, int32_t *out,
                         const char *path, struct sn_err *err);
int sn_shard_grow(void **p, size_t *cap, size_t need, size_t elem, struct sn_err *err);
int sn_shard_reader_open_ex(const char *path, const struct sn_shard_reader_params *params,
                            bool load_ids, struct sn_shard_reader **out, struct sn_err *err);

/* ---- the writer and the reader, as the shard set and the iterator see them --------------- */

struct strcol {
    struct sn_buf bytes;   /* strings back to back, each NUL-terminated */
    size_t *off;
    size_t  n, cap;
};

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

#endif
