/* hf/safetensors.h: a pure C reader and writer of the safetensors format
** (https://huggingface.co/docs/safetensors; layout notes in docs/formats.md#safetensors).
**
** Layout: an 8-byte little-endian u64 N, then N bytes of UTF-8 JSON (an object mapping tensor
** names to {"dtype", "shape", "data_offsets": [begin, end]} plus an optional "__metadata__"
** object of string -> string), then the data section. Offsets are relative to the start of the
** data section.
**
** The reader treats the file as untrusted (docs/design.md §7): the header length is checked against
** the file size (and capped at 100 MB, as the reference implementation does), every offset pair
** must have begin <= end and lie inside the data section, dtype x shape must equal the byte count
** (overflow-checked), the ranges must tile the data section exactly (no overlap, no gap, nothing
** left over: the reference implementation's rule), names must be unique and non-empty. The order
** of entries in the JSON header is free. Files are mapped with mmap, so opening reads only the
** header and a tensor's bytes are read from disk when first touched.
**
** The writer stores tensors sorted by name (deterministic bytes for the same content), with
** "__metadata__" first, pads the header with spaces to a multiple of 8 (data stays aligned),
** and writes atomically (sn_atomic_*: temp + fsync + rename).
**
** Ownership: a reader owns its mapping; tensor views and their data are borrowed until
** sn_st_close. A writer borrows tensor data until sn_st_writer_save returns. */
#ifndef SN_HF_SAFETENSORS_H
#define SN_HF_SAFETENSORS_H
#include "common/common.h"

/* Append-only (values never renumbered); names are the on-disk dtype strings. */
enum sn_st_dtype {
    SN_ST_F32,
    SN_ST_F16,
    SN_ST_BF16,
    SN_ST_F64,
    SN_ST_I64,
    SN_ST_I32,
    SN_ST_I16,
    SN_ST_I8,
    SN_ST_U8,
    SN_ST_BOOL,
    SN_ST_U16,
    SN_ST_U32,
    SN_ST_U64,
    SN_ST_DTYPE_COUNT
};

#define SN_ST_MAX_DIMS 8

const char *sn_st_dtype_name(enum sn_st_dtype dt); /* "F32", "BF16", ... */
size_t      sn_st_dtype_size(enum sn_st_dtype dt); /* bytes per element */
/* Parses an on-disk dtype name; returns false for an unknown one. */
bool        sn_st_dtype_parse(const char *name, enum sn_st_dtype *out);

struct sn_st_tensor {
    const char      *name;
    enum sn_st_dtype dtype;
    int              n_dims;                  /* 0 = scalar (one element) */
    int64_t          shape[SN_ST_MAX_DIMS];
    uint64_t         n_elements;
    uint64_t         offset;                  /* from the start of the data section */
    uint64_t         nbytes;
    const void      *data;                    /* borrowed, may be unaligned for odd layouts */
};

/* ---- reader ------------------------------------------------------------------------------- */

struct sn_st_file;

/* Opens and validates a file (mmap). On failure *out is NULL and err names the file, the tensor
** and byte offsets involved. */
int  sn_st_open(const char *path, struct sn_st_file **out, struct sn_err *err);
/* The same over bytes in memory (borrowed: must outlive the handle). name is used in messages. */
int  sn_st_open_memory(const void *data, size_t len, const char *name, struct sn_st_file **out,
                       struct sn_err *err);
void sn_st_close(struct sn_st_file *f);                       /* NULL is fine */

size_t sn_st_count(const struct sn_st_file *f);
/* Tensors in data-offset order. Borrowed until sn_st_close. */
const struct sn_st_tensor *sn_st_get(const struct sn_st_file *f, size_t i);
const struct sn_st_tensor *sn_st_find(const struct sn_st_file *f, const char *name); /* or NULL */
/* Value of a "__metadata__" key, or NULL. Borrowed. */
const char *sn_st_metadata(const struct sn_st_file *f, const char *key);
size_t      sn_st_metadata_count(const struct sn_st_file *f);
const char *sn_st_metadata_key(const struct sn_st_file *f, size_t i);
const char *sn_st_path(const struct sn_st_file *f);

/* Converts a tensor's elements (F32, F16, BF16 or F64) to float: out holds n_elements floats.
** Other dtypes give SN_E_FORMAT naming the tensor. */
int sn_st_to_f32(const struct sn_st_tensor *t, float *out, struct sn_err *err);

/* Scalar conversions (sn_bf16_to_f32, sn_f32_to_f16, ...): common/common.h. */

/* ---- writer ------------------------------------------------------------------------------- */

struct sn_st_writer;

int  sn_st_writer_create(struct sn_st_writer **out, struct sn_err *err);
void sn_st_writer_free(struct sn_st_writer *w);               /* NULL is fine */
/* Adds a tensor; data (nbytes = product(shape) x dtype size) is borrowed until save. A duplicate
** name, a negative dimension or n_dims > SN_ST_MAX_DIMS is SN_E_ARG. */
int  sn_st_writer_add(struct sn_st_writer *w, const char *name, enum sn_st_dtype dtype,
                      int n_dims, const int64_t *shape, const void *data, struct sn_err *err);
/* Sets (or replaces) a "__metadata__" entry; both strings are copied. */
int  sn_st_writer_set_metadata(struct sn_st_writer *w, const char *key, const char *value,
                               struct sn_err *err);
/* Writes the file atomically. The writer stays usable (save again elsewhere, or free). */
int  sn_st_writer_save(struct sn_st_writer *w, const char *path, struct sn_err *err);

#endif /* SN_HF_SAFETENSORS_H */
