/* shard/shard.h: tokenized (context, chosen, rejected, reference) tuples in HDF5 shards, the
** manifest that lists them, and readers for training (docs/design.md §5 "Shard").
** Exact layout: docs/formats.md (merged into docs/formats.md#shard).
**
**   shard file  <split>-<NNNNN>.h5, root attributes schema = "sentinel.tuples/1",
**               tokenizer_hash, template_id, max_len, vocab_size, count, split, shard_index;
**               /text/<field>      UTF-8 variable-length strings, (count)
**               /ids/<field>       int32, flat: every sequence of the field back to back
**               /offsets/<field>   int64, (count + 1): tuple i is ids[offsets[i], offsets[i+1])
**               /meta/...          per-tuple metadata (scenario, dataset, trajectory id, ...)
**   manifest    manifest.json: schema "sentinel.manifest/1", the build's settings, the shard
**               list with counts and SHA-256, counts per split, skip counts, complete flag.
**
** The token sequences are R's input: the template rendering of context ⊕ response
** (tokenizer/template.h), already truncated to max_len; the reward is read at the last token.
** /ids/context does not exist: the context is inside every sequence.
**
** Ownership: writers copy what they are given. Reader views are borrowed and valid until the
** reader is closed; batches from an iterator are valid until the next sn_shard_iter_next or
** close. One reader or iterator, one thread at a time (an iterator runs its own prefetch
** thread internally; calling HDF5 elsewhere while it runs needs a thread-safe libhdf5, which
** Debian's is). Nothing here prints. */
#ifndef SN_SHARD_H
#define SN_SHARD_H
#include "common/common.h"

#define SN_SHARD_SCHEMA    "sentinel.tuples/1"
#define SN_MANIFEST_SCHEMA "sentinel.manifest/1"
#define SN_MANIFEST_NAME   "manifest.json"

/* The four texts of a tuple. Enum values reach disk only through their names. */
enum sn_field { SN_FIELD_CONTEXT, SN_FIELD_CHOSEN, SN_FIELD_REJECTED, SN_FIELD_REFERENCE,
                SN_FIELD_COUNT };
const char *sn_field_name(enum sn_field f); /* "context", "chosen", "rejected", "reference" */

/* Deterministic split by trajectory (tuples/tuples.h: sn_tuples_split). */
enum sn_split { SN_SPLIT_TRAIN, SN_SPLIT_VALIDATION, SN_SPLIT_TEST, SN_SPLIT_OOD,
                SN_SPLIT_COUNT };
const char *sn_split_name(enum sn_split s); /* "train", "validation", "test", "ood" */
int sn_split_parse(const char *name, enum sn_split *out, struct sn_err *err);

/* Per-tuple metadata. Strings may be NULL (stored as ""). cut_* are indexed by field; the
** CONTEXT entry is unused (0): cut_history[f] = tokens of dialogue dropped from the prompt of
** field f's sequence, cut_response[f] = tokens cut from the front of f's response. */
struct sn_tuple_meta {
    const char   *scenario, *dataset, *trajectory_id, *item_id;
    int32_t       round;                          /* 0-based debate round */
    int32_t       chosen_agent, rejected_agent;   /* slot ids; -1 = none */
    const char   *chosen_role, *rejected_role;    /* "honest", "adversary", "interceptor" */
    const char   *rejected_kind;                  /* tuples/tuples.h: "adversary", "tampered", ... */
    enum sn_split split;
    int32_t       cut_history[SN_FIELD_COUNT];
    int32_t       cut_response[SN_FIELD_COUNT];
    const char   *sha256;                         /* content hash of the four texts (hex) */
};

/* One tuple to write. text[f] is UTF-8, NUL-terminated; ids[f]/n_ids[f] for f != CONTEXT. */
struct sn_shard_tuple {
    const char    *text[SN_FIELD_COUNT];
    const int32_t *ids[SN_FIELD_COUNT];
    size_t         n_ids[SN_FIELD_COUNT];
    struct sn_tuple_meta meta;
};

/* The identity of a shard: what its root attributes say. Strings borrowed. */
struct sn_shard_info {
    const char   *schema;          /* reader side only: SN_SHARD_SCHEMA */
    const char   *tokenizer_hash;  /* sn_tokenizer_hash(): SHA-256 hex of tokenizer.json */
    const char   *template_id;     /* SN_TEMPLATE_ID */
    int64_t       max_len;         /* every sequence has at most this many ids */
    int64_t       vocab_size;      /* every id is in [0, vocab_size) */
    enum sn_split split;
    int64_t       shard_index;     /* position among the split's shards */
    int64_t       count;           /* reader side only */
};

/* ---- writer ---------------------------------------------------------------------------- */

struct sn_shard_writer_params {
    struct sn_shard_info info;
    int    deflate_level;          /* 0..9; default 1 (4: ~7% smaller, ~2x slower) */
    size_t chunk_tuples;           /* chunk length of per-tuple datasets; default 1024 */
    size_t chunk_ids;              /* chunk length of /ids datasets; default 65536 */
};
struct sn_shard_writer_params sn_shard_writer_default_params(void);

struct sn_shard_writer;
/* Starts a shard that will be written to `path` at commit. Nothing touches the disk before
** commit: tuples are buffered in memory. */
int    sn_shard_writer_create(const char *path, const struct sn_shard_writer_params *params,
                              struct sn_shard_writer **out, struct sn_err *err);
/* Copies t. Fails (SN_E_ARG) on a sequence longer than max_len or an id out of range. */
int    sn_shard_writer_add(struct sn_shard_writer *w, const struct sn_shard_tuple *t,
                           struct sn_err *err);
size_t sn_shard_writer_count(const struct sn_shard_writer *w);
/* Writes the file to "<path>.tmp.<pid>", fsyncs it, renames it over path and fsyncs the
** directory; fills sha256_hex (may be NULL) with the file's SHA-256. Frees w in every case; on
** failure nothing is left at path (an older file there is untouched). Same tuples in the same
** order give a byte-identical file (no timestamps are stored). */
int    sn_shard_writer_commit(struct sn_shard_writer *w, char sha256_hex[65], struct sn_err *err);
void   sn_shard_writer_abort(struct sn_shard_writer *w); /* NULL is fine */

/* ---- reader (random access) ------------------------------------------------------------ */

/* What a reader insists on. A NULL string or 0 accepts anything. */
struct sn_shard_reader_params {
    const char *tokenizer_hash;    /* refuse shards built with another tokenizer */
    const char *template_id;       /* refuse shards rendered with another template */
    int64_t     max_len;           /* refuse shards whose max_len is larger */
};
struct sn_shard_reader_params sn_shard_reader_default_params(void);

struct sn_tuple_view {
    const int32_t *ids[SN_FIELD_COUNT];   /* prompt ⊕ response; ids[CONTEXT] = NULL */
    size_t         n_ids[SN_FIELD_COUNT];
};

struct sn_shard_reader;
/* Opens and validates a shard: schema (a foreign one is refused naming it), the expectations
** in params (a mismatch names which attribute and both values), dataset shapes, offsets
** (start at 0, non-decreasing, end at the ids length, each sequence <= max_len) and every id
** against vocab_size. All ids and offsets are loaded into memory; texts and metadata are read
** on demand. params may be NULL. */
int    sn_shard_reader_open(const char *path, const struct sn_shard_reader_params *params,
                            struct sn_shard_reader **out, struct sn_err *err);
size_t sn_shard_reader_count(const struct sn_shard_reader *r);
const struct sn_shard_info *sn_shard_reader_info(const struct sn_shard_reader *r);
int    sn_shard_reader_get(struct sn_shard_reader *r, size_t i, struct sn_tuple_view *view,
                           struct sn_err *err);
/* Text of field f of tuple i in a new string (*text, caller frees with sn_free). */
int    sn_shard_reader_text(struct sn_shard_reader *r, size_t i, enum sn_field f, char **text,
                            struct sn_err *err);
/* Metadata of tuple i; its strings are valid until the next call on r. */
int    sn_shard_reader_meta(struct sn_shard_reader *r, size_t i, struct sn_tuple_meta *meta,
                            struct sn_err *err);
void   sn_shard_reader_close(struct sn_shard_reader *r); /* NULL is fine */

/* ---- sequential batched iterator with prefetch ----------------------------------------- */

struct sn_shard_iter_params {
    struct sn_shard_reader_params expect;
    size_t   batch_size;           /* default 8 */
    bool     drop_last;            /* drop a final short batch */
    bool     shuffle;              /* permute shard order and tuples within each shard */
    uint64_t seed;                 /* for shuffle */
    size_t   prefetch;             /* batches prepared ahead by the background thread; default 4 */
};
struct sn_shard_iter_params sn_shard_iter_default_params(void);

/* A batch: field f's sequences back to back in ids[f], sequence j = ids[f][offsets[f][j] ..
** offsets[f][j+1]) (offsets[f][0] = 0). index[j] = position of the tuple in the concatenation
** of the shards (in the order given). CONTEXT has no ids (NULL). */
struct sn_shard_batch {
    size_t          n;
    const int32_t  *ids[SN_FIELD_COUNT];
    const int64_t  *offsets[SN_FIELD_COUNT];
    const uint64_t *index;
};

struct sn_shard_iter;
/* Reads the shards in order (or shuffled) on a background thread, keeping up to `prefetch`
** batches ready. Errors found by the thread (a refused shard, a read failure) are returned by
** the sn_shard_iter_next call that would have used the data. */
int  sn_shard_iter_open(const char *const *paths, size_t n_paths,
                        const struct sn_shard_iter_params *params, struct sn_shard_iter **out,
                        struct sn_err *err);
/* *batch = the next batch, or NULL at the end. */
int  sn_shard_iter_next(struct sn_shard_iter *it, const struct sn_shard_batch **batch,
                        struct sn_err *err);
uint64_t sn_shard_iter_total(const struct sn_shard_iter *it); /* tuples in all shards */
void sn_shard_iter_close(struct sn_shard_iter *it); /* NULL is fine; joins the thread */

/* ---- manifest -------------------------------------------------------------------------- */

struct sn_manifest_shard {
    char         *file;            /* name relative to the manifest's directory */
    enum sn_split split;
    int64_t       count;
    int64_t       index;           /* shard_index within its split */
    char          sha256[65];
};
struct sn_manifest {
    char   *dir;                   /* directory holding the manifest */
    bool    complete;              /* false while a build is running or was interrupted */
    struct sn_manifest_shard *shards;
    size_t  n_shards;
    int64_t counts[SN_SPLIT_COUNT];
    cJSON  *json;                  /* the whole document (settings, skip counts, ...) */
};
/* Loads <dir>/manifest.json (or the file itself when path names a file). */
int  sn_manifest_load(const char *path, struct sn_manifest **out, struct sn_err *err);
/* The manifest's train_questions (docs/formats.md "Manifest"): the content keys of the train
** split's questions (sn_question_keys, tuples/tuples.h), added to *questions (question text) and
** *items (question + options + gold; may be NULL), values unused. SN_E_FORMAT, naming the fix,
** when the build is not complete, predates the field, or records another key rule; a key that
** is not 64 lower-case hex digits is SN_E_FORMAT naming it. */
#define SN_QUESTION_KEY_ID "sentinel-question/1"
int  sn_manifest_train_questions(const struct sn_manifest *m, struct sn_strmap *questions,
                                 struct sn_strmap *items, struct sn_err *err);
/* Paths ("<dir>/<file>") of the shards of one split in order (split = SN_SPLIT_COUNT: all).
** Free with sn_paths_free. */
int  sn_manifest_paths(const struct sn_manifest *m, enum sn_split split, char ***paths,
                       size_t *n, struct sn_err *err);
/* Recomputes every listed shard's SHA-256 and compares. */
int  sn_manifest_verify(const struct sn_manifest *m, struct sn_err *err);
void sn_manifest_free(struct sn_manifest *m);

/* ---- a resumable set of shards (what `sentinel build` writes) -------------------------- */

struct sn_shard_set_params {
    const char *dir;               /* output directory (created) */
    size_t      shard_size;        /* tuples per shard; default 4096 */
    struct sn_shard_writer_params writer; /* info.split/shard_index are set per shard */
    const cJSON *settings;         /* the build's identity (inputs, tokenizer, template, ...):
                                   ** stored in the manifest; a resume requires it equal */
    /* Called before every manifest write to add job fields (e.g. "skipped") to the
    ** document; may be NULL. */
    void (*annotate)(void *user, cJSON *manifest);
    void *user;
};
struct sn_shard_set_params sn_shard_set_default_params(void);

struct sn_shard_set;
/* Opens dir for writing. When dir holds a manifest of a build with equal settings it resumes:
** the listed shards are checked (size and SHA-256) and kept, and the tuples that belong to
** them are skipped by sn_shard_set_add. Different settings are refused (SN_E_ARG) naming the
** first setting that differs. Stale temp files of an interrupted writer are removed. */
int  sn_shard_set_open(const struct sn_shard_set_params *params, struct sn_shard_set **out,
                       struct sn_err *err);
/* True when the manifest was already complete (nothing to do; counts are final). */
bool sn_shard_set_was_complete(const struct sn_shard_set *s);
/* True when the next tuple of this split belongs to an already committed shard (a resumed
** build), so the caller may skip the work of making it. */
bool sn_shard_set_skips_next(const struct sn_shard_set *s, enum sn_split split);
/* Adds a tuple to its split's current shard; a full shard is committed and the manifest
** rewritten (atomically) before returning. A tuple of an already committed shard is
** counted and dropped. */
int  sn_shard_set_add(struct sn_shard_set *s, const struct sn_shard_tuple *t,
                      struct sn_err *err);
/* Commits the last (short) shard of each split and writes the manifest with complete = true. */
int  sn_shard_set_finish(struct sn_shard_set *s, struct sn_err *err);
/* Tuples per split so far (committed or buffered, resumed ones included). */
int64_t sn_shard_set_count(const struct sn_shard_set *s, enum sn_split split);
size_t  sn_shard_set_n_shards(const struct sn_shard_set *s);
/* Drops the buffered partial shards (nothing is written) and frees s. NULL is fine. */
void sn_shard_set_close(struct sn_shard_set *s);

#endif
