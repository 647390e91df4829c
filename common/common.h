/* common/common.h: what every sentinel module shares.
**
** Errors (struct sn_err, docs/design.md §7), logging, allocation with an injectable failure for tests,
** growing buffers with a ceiling, whole-file reads, atomic writes (temp + fsync + rename),
** line readers over plain or gzip files, a seeded RNG, SHA-256, a TTY-aware progress bar, and
** JSON recipes with `--set a.b=value` overrides (docs/design.md §1, §5).
**
** Ownership: every _open/_create has a matching _close/_free that accepts NULL. Functions
** that can fail return an enum sn_status and fill the caller's struct sn_err (first failure wins).
** Nothing here prints except the logging and progress functions, and nothing exits. The part the
** runtime library exports and installs (errors, text buffers, seeds) is common/base.h, included
** below; the rest stays inside sentinel (docs/api.md). */
#ifndef SN_COMMON_H
#define SN_COMMON_H

#include <stdarg.h>
#include <stdio.h>

#include "common/base.h" /* errors, text buffers, seeds: what the runtime library exports */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors ------------------------------------------------------------------------------- */

/* enum sn_status, struct sn_err, sn_err_set, sn_err_clear and sn_status_name: common/base.h. */

/* Prefix the held message with "prefix: " (adds context on the way up). Returns err->code. */
int sn_err_wrap(struct sn_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- logging ------------------------------------------------------------------------------ */

enum sn_log_level { SN_LOG_ERROR, SN_LOG_WARN, SN_LOG_INFO, SN_LOG_DEBUG };
/* The level is process state set once by the CLI (--quiet/--verbose, SENTINEL_LOG=debug). */
void sn_log_set_level(enum sn_log_level level);
enum sn_log_level sn_log_get_level(void);
void sn_log(enum sn_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define SN_INFO(...)  sn_log(SN_LOG_INFO, __VA_ARGS__)
#define SN_WARN(...)  sn_log(SN_LOG_WARN, __VA_ARGS__)
#define SN_DEBUG(...) sn_log(SN_LOG_DEBUG, __VA_ARGS__)

/* ---- memory ------------------------------------------------------------------------------- */

/* All allocation in library code goes through these so tests can fail the N-th call
** (sn_alloc_fail_after(N): calls N, N+1, ... return NULL; 0 turns it off). */
void *sn_malloc(size_t n);
void *sn_calloc(size_t count, size_t size);
void *sn_realloc(void *p, size_t n);
char *sn_strdup(const char *s);
char *sn_strndup(const char *s, size_t n);
void  sn_free(void *p);
void  sn_alloc_fail_after(uint64_t n);
/* Bytes asked of sn_malloc/sn_calloc/sn_realloc since the process started (a realloc counts
** its new size): a test hook to check what an operation allocates, e.g. that opening a
** quantized detector makes no f32 copy of its weights. Not synchronised: read it in tests that
** allocate from one thread. */
uint64_t sn_alloc_bytes(void);
/* a * b without overflow: returns false (and leaves *out alone) when it would wrap. */
bool sn_mul_ok(size_t a, size_t b, size_t *out);

/* Keeps large freed blocks in the process instead of returning them to the kernel (glibc:
** mmap threshold, trim threshold and top pad raised to `bytes`, at most 1 GiB). Training
** allocates and frees hundreds of MB of activations per step; with glibc's defaults each such
** block is a fresh mmap that the kernel must zero-fill page by page, which measured at 40% of a
** reward-model step on the CPU (bench/forward_backward.sh). Process-wide by nature: call it
** once at program start, from a program, never from library code. Returns false when the C
** library has no such controls (non-glibc) or refused a value. */
bool sn_tune_host_allocator(size_t bytes);

/* struct sn_buf (a growing byte buffer with a ceiling), sn_buf_reset and sn_buf_free:
** common/base.h. */
int  sn_buf_append(struct sn_buf *b, const void *p, size_t n, struct sn_err *err);
int  sn_buf_puts(struct sn_buf *b, const char *s, struct sn_err *err);
int  sn_buf_printf(struct sn_buf *b, struct sn_err *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- files -------------------------------------------------------------------------------- */

/* Reads a whole file (plain; not gzip) into a new NUL-terminated buffer (*out, caller frees
** with sn_free). Refuses files larger than max_bytes (0 = 1 GiB) with SN_E_NOMEM. */
int sn_file_read(const char *path, size_t max_bytes, char **out, size_t *len,
                 struct sn_err *err);
/* True when f is open on a directory (fopen of a directory for reading succeeds on Linux; the
** reads then fail with EISDIR, which would read as a vague "read error"). */
bool sn_stream_is_dir(FILE *f);
/* Ends an output stream and reports any write that failed on it: ferror, fflush and (except
** for stdout/stderr, which are only flushed) fclose. A full device gives SN_E_IO
** "<name>: write failed: No space left on device". Every command that writes results ends its
** outputs through this, so a lost write never exits 0. f is closed (or flushed) either way. */
int sn_stream_finish(FILE *f, const char *name, struct sn_err *err);
/* mkdir -p. A path the system could not hold (sn_path_check_len) is refused before anything
** is made. */
int sn_mkdirs(const char *path, struct sn_err *err);
/* SN_OK when path, with suffix (may be NULL) appended to its last name, fits the system's
** limits: at most PATH_MAX - 1 bytes in all and NAME_MAX bytes per name. Else SN_E_ARG
** "<path>: file name too long ('<name>' is N bytes; the system allows M per name)" or "(the path
** is N bytes; the system allows M)", a long path shown by its ends around "[...N bytes...]".
** Every output made here (sn_mkdirs, sn_atomic_*) checks first, suffix = its temp suffix, so a
** name too long is refused by name before anything is written; one a file system refuses
** later (some allow fewer than NAME_MAX bytes) gets the same message. */
int sn_path_check_len(const char *path, const char *suffix, struct sn_err *err);
/* printf into a path buffer of cap bytes, then sn_path_check_len: a path that does not fit the
** buffer or the system gives the same "file name too long" error, never a cut path. */
int sn_path_fmt(char *buf, size_t cap, struct sn_err *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
bool sn_path_exists(const char *path);
bool sn_path_is_dir(const char *path);

/* Atomic replacement of a file: bytes go to "<path>.tmp.<pid>", then fsync, rename over path,
** and fsync of the directory. A kill at any point leaves either the old file or the new one,
** never a mix; a leftover temp is ignored by readers and replaced by the next writer. */
struct sn_atomic_file;
int  sn_atomic_open(const char *path, struct sn_atomic_file **out, struct sn_err *err);
FILE *sn_atomic_stream(struct sn_atomic_file *f);           /* borrowed; valid until commit */
const char *sn_atomic_tmp_path(const struct sn_atomic_file *f); /* for libraries (HDF5) that
                                                            ** open by name: write there, then
                                                            ** commit */
int  sn_atomic_commit(struct sn_atomic_file *f, struct sn_err *err); /* frees f */
void sn_atomic_abort(struct sn_atomic_file *f);              /* removes the temp; NULL ok */
int  sn_atomic_write(const char *path, const void *data, size_t n, struct sn_err *err);
/* fsync(path) and its directory; for files written by other libraries, before a rename. */
int  sn_fsync_path(const char *path, struct sn_err *err);
int  sn_rename_durable(const char *from, const char *to, struct sn_err *err);

/* Line reader over a plain or gzip-compressed file (detected by magic, not by name).
** Lines are returned without the trailing newline; *lineno counts from 1. A final line without
** a newline is returned with *complete = false (a kill mid-write leaves one), so callers can
** tell a partial record from a whole one. A gzip file cut short gives SN_E_FORMAT naming the
** file and the last good line. Lines longer than max_line (0 = 256 MiB) give SN_E_FORMAT.
** A pipe, socket or terminal is read with read(2) as bytes arrive (a regular file in whole
** buffers), so each line is returned as soon as its newline is there: a coprocess reading
** requests from a pipe answers one before the next is written. */
struct sn_lines;
int  sn_lines_open(const char *path, size_t max_line, struct sn_lines **out, struct sn_err *err);
/* Returns SN_OK with *line set, SN_OK with *line = NULL at end of file, or an error.
** *line is borrowed until the next call. */
int  sn_lines_next(struct sn_lines *r, const char **line, size_t *len, bool *complete,
                   struct sn_err *err);
uint64_t    sn_lines_lineno(const struct sn_lines *r);
const char *sn_lines_path(const struct sn_lines *r);
void sn_lines_close(struct sn_lines *r);

/* Expands inputs (files or directories, searched recursively for names ending in any of
** the NULL-terminated suffixes) into a sorted, de-duplicated list of paths. Free with
** sn_paths_free. A named file is taken whatever its suffix. */
int  sn_paths_expand(const char *const *inputs, size_t n_inputs, const char *const *suffixes,
                     char ***out, size_t *n_out, struct sn_err *err);
void sn_paths_free(char **paths, size_t n);

/* ---- randomness --------------------------------------------------------------------------- */

/* xoshiro256** seeded through splitmix64 (Blackman & Vigna). Deterministic across platforms:
** the same seed gives the same stream everywhere. Value type, no allocation. */
struct sn_rng {
    uint64_t s[4];
};
void     sn_rng_seed(struct sn_rng *rng, uint64_t seed);
uint64_t sn_rng_u64(struct sn_rng *rng);
double   sn_rng_uniform(struct sn_rng *rng);                /* [0, 1) with 53 random bits */
uint64_t sn_rng_below(struct sn_rng *rng, uint64_t n);      /* uniform in [0, n), unbiased */
double   sn_rng_normal(struct sn_rng *rng);                 /* N(0, 1), Box–Muller */
void     sn_rng_shuffle(struct sn_rng *rng, void *base, size_t n, size_t size);
/* sn_seed_derive (a seed derived from a parent seed and a label): common/base.h. */

/* ---- hashing ------------------------------------------------------------------------------ */

struct sn_sha256 {
    uint32_t h[8];
    uint64_t n_bytes;
    uint8_t  block[64];
    size_t   n_block;
};
void sn_sha256_init(struct sn_sha256 *s);
void sn_sha256_update(struct sn_sha256 *s, const void *data, size_t n);
void sn_sha256_final(struct sn_sha256 *s, uint8_t digest[32]);
void sn_sha256_hex(const void *data, size_t n, char hex[65]); /* one-shot, lower-case */
int  sn_sha256_file(const char *path, char hex[65], struct sn_err *err);
/* 64-bit FNV-1a, for in-memory hash tables (not for anything stored). */
uint64_t sn_hash64(const void *data, size_t n);

/* An open-addressing hash map from byte strings to size_t values (linear probing, load <= 1/2,
** capacity a power of two). Keys are copied (with a NUL after them, so a text key reads as a C
** string); they may hold any bytes, digests included. Zero-initialise; sn_strmap_free releases.
** Slots are not in insertion order: iterate nothing that is printed in slot order. */
struct sn_strmap_slot {
    char  *key; /* NULL: empty slot */
    size_t len;
    size_t val;
};
struct sn_strmap {
    struct sn_strmap_slot *slots;
    size_t cap, n;
};
/* The value stored under key, or NULL when key is absent (borrowed; valid until the next put). */
size_t *sn_strmap_find(const struct sn_strmap *m, const void *key, size_t len);
bool sn_strmap_has(const struct sn_strmap *m, const void *key, size_t len);
/* Inserts key with val unless it is present (then the stored value stays). *added (may be NULL)
** says which happened. Fails only for memory (SN_E_NOMEM, "out of memory"). */
int  sn_strmap_put(struct sn_strmap *m, const void *key, size_t len, size_t val, bool *added,
                   struct sn_err *err);
void sn_strmap_free(struct sn_strmap *m); /* back to the zero state */

/* ---- text and paths ----------------------------------------------------------------------- */

/* Strict UTF-8 (RFC 3629): rejects overlong forms, surrogates (U+D800..DFFF), code points above
** U+10FFFF and truncated sequences; NUL bytes inside the n bytes are valid. On false, *bad (may
** be NULL) is the offset of the first byte of the first invalid sequence. */
bool sn_utf8_valid(const void *s, size_t n, size_t *bad);
/* The same for a NUL-terminated string; NULL counts as the empty string. */
bool sn_utf8_valid_str(const char *s);

/* Parses exactly the n bytes at s as a decimal integer in [lo, hi]: digits only (no sign, no
** spaces, no trailing characters), no overflow. For command-line counts ("-n", "--shard I/N"). */
bool sn_parse_u64(const char *s, size_t n, uint64_t lo, uint64_t hi, uint64_t *out);

/* "dir/name" into buf (n bytes); SN_E_ARG ("<dir>/<name>: path too long") when it does not fit. */
int   sn_path_join(char *buf, size_t n, const char *dir, const char *name, struct sn_err *err);
/* "dir/name" in a new string (caller frees with sn_free); NULL when out of memory. */
char *sn_path_join_new(const char *dir, const char *name);

/* ---- time and progress -------------------------------------------------------------------- */

double sn_now(void); /* monotonic seconds */

/* A progress report for long jobs (docs/design.md §1): on a terminal a live bar on stderr with
** count, rate and ETA, redrawn at most 10 times a second; otherwise one plain line every
** `interval` seconds (default 10). total 0 = unknown. extra, if set, is called to append
** job-specific fields ("tok/s 1234  errors 0"). */
struct sn_progress;
struct sn_progress_params {
    const char *label;      /* "simulate" */
    const char *unit;       /* "debates" */
    uint64_t    total;      /* 0 = unknown */
    double      interval;   /* seconds between plain lines; 0 = 10 */
    int         force_mode; /* 0 = auto (isatty), 1 = bar, 2 = plain lines, 3 = silent */
    FILE       *stream;     /* NULL = stderr */
    uint64_t    initial;    /* already done when the job started (a resume): not in the rate */
};
struct sn_progress_params sn_progress_default_params(void);
int  sn_progress_create(const struct sn_progress_params *p, struct sn_progress **out,
                        struct sn_err *err);
/* done: absolute count so far. extra: optional text appended to the line (copied). */
void sn_progress_update(struct sn_progress *p, uint64_t done, const char *extra);
void sn_progress_finish(struct sn_progress *p, const char *summary); /* prints, then frees */

/* ---- JSON and recipes --------------------------------------------------------------------- */

/* Recipes are JSON (docs/design.md §5). cJSON is exposed here on purpose: it is the recipe's
** in-memory form for every stage. */
#include <cjson/cJSON.h>

/* Parses JSON text; on error the message is "<name>:<line>:<col>: <what>". *out is owned by
** the caller (cJSON_Delete). */
int sn_json_parse(const char *text, size_t len, const char *name, cJSON **out,
                  struct sn_err *err);
int sn_json_load(const char *path, cJSON **out, struct sn_err *err);
/* Offset of the first \u0000 escape inside a JSON string of text, or (size_t)-1. cJSON cuts a
** decoded string at it, so readers that must not lose text refuse it (sn_json_parse does). */
size_t sn_json_nul_escape(const char *text, size_t len);
/* Serialises with 2-space indentation and a final newline and writes it atomically. */
int sn_json_save(const char *path, const cJSON *json, struct sn_err *err);

/* Loads a recipe and applies overrides "a.b.c=value" in order. A value that parses whole as
** JSON is taken as JSON (numbers, true, [1,2], "str"); otherwise as a string ("3x" is a string,
** which a typed getter refuses). Missing objects on the path are created. A duplicate key at
** any level and a top-level key that is not a section (docs/formats.md#recipe) are errors. */
int sn_recipe_load(const char *path, const char *const *overrides, size_t n_overrides,
                   cJSON **out, struct sn_err *err);
int sn_recipe_apply_override(cJSON *root, const char *assignment, struct sn_err *err);
/* Checks that obj holds only keys from valid (NULL-terminated). An unknown key gives
** SN_E_ARG: "recipe: unknown key 'train.lrr' (did you mean 'lr'?)". where = "train". */
int sn_recipe_check_keys(const cJSON *obj, const char *where, const char *const *valid,
                         struct sn_err *err);
/* Typed getters with defaults. A present key of the wrong type is an error naming where.key. */
int sn_json_get_int(const cJSON *obj, const char *where, const char *key, int64_t dflt,
                    int64_t *out, struct sn_err *err);
int sn_json_get_double(const cJSON *obj, const char *where, const char *key, double dflt,
                       double *out, struct sn_err *err);
int sn_json_get_bool(const cJSON *obj, const char *where, const char *key, bool dflt,
                     bool *out, struct sn_err *err);
/* *out is borrowed from obj (or dflt). */
int sn_json_get_string(const cJSON *obj, const char *where, const char *key, const char *dflt,
                       const char **out, struct sn_err *err);
/* Levenshtein distance, for "did you mean". */
size_t sn_edit_distance(const char *a, const char *b);

/* ---- 16-bit floats (common/half.c) ------------------------------------------------------- */
/* IEEE half and bfloat16 to and from f32, rounding to nearest even (NaN stays NaN): the
** safetensors files (hf/) and GGUF tensors (export/) store weights in them. */
float    sn_bf16_to_f32(uint16_t h);
uint16_t sn_f32_to_bf16(float f);
float    sn_f16_to_f32(uint16_t h);
uint16_t sn_f32_to_f16(float f);

#ifdef __cplusplus
}
#endif
#endif /* SN_COMMON_H */
