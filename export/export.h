/* export/export.h: GGUF files and the runtime detector (docs/design.md §3, §4; the GGUF layout
** we read and write: docs/formats.md#gguf). Pure C + OpenBLAS, no libtorch: a deployer builds
** this module alone (-DSENTINEL_WITH_TORCH=OFF) and embeds the detector in an agent. This
** header is the runtime part (sn_export_runtime, and libsentinel_detector built from its sources):
** it reads GGUF only. The writer part (`sentinel export`: the GGUF writer, and Hugging Face /
** PEFT directories -> GGUF, PEFT or merged HF) is export/write.h.
**
** Two parts here:
**   1. GGUF v3 reader (strict: every count, length, type, dimension, offset and alignment is
**      checked against the file size with overflow-safe arithmetic, names are unique, and for
**      general.architecture = "qwen2" the tensor shapes are checked against the
**      hyper-parameters).
**   2. The detector: R(response ⊕ context) from a qwen2 GGUF written by export/write.h (reward
**      head under our key sentinel.score.weight, qwen2.pooling_type = LAST), with the
**      tokenizer and the prompt template stored in it (tokenizer/template.h). Weights stay in
**      the file's type in its read-only memory map; F32 matrices go to cblas_sgemm,
**      F16/BF16/Q8_0 ones through kernels/ (docs/export.md "Weight formats and kernels");
**      activations are f32.
**
** Ownership: every _open/_create has a _close/_free that accepts NULL; on failure *out is NULL.
** Views returned by the reader are borrowed until sn_gguf_close. A detector is used by one
** thread at a time (its scratch is its own); open one per thread to score in parallel. */
#ifndef SN_EXPORT_H
#define SN_EXPORT_H
#include "common/common.h"

/* ---- GGUF --------------------------------------------------------------------------------- */

/* KV value types (GGUF v3; append-only, on disk). */
enum sn_gguf_type {
    SN_GGUF_U8, SN_GGUF_I8, SN_GGUF_U16, SN_GGUF_I16, SN_GGUF_U32, SN_GGUF_I32, SN_GGUF_F32,
    SN_GGUF_BOOL, SN_GGUF_STRING, SN_GGUF_ARRAY, SN_GGUF_U64, SN_GGUF_I64, SN_GGUF_F64,
    SN_GGUF_TYPE_COUNT
};
/* Tensor types we read and write (ggml's numbering). Q8_0: blocks of 32 values, each an f16
** scale and 32 int8 (34 bytes); ne[0] must be a multiple of 32. */
enum sn_ggml_type { SN_GGML_F32 = 0, SN_GGML_F16 = 1, SN_GGML_Q8_0 = 8, SN_GGML_BF16 = 30 };
#define SN_Q8_0_BLOCK 32

#define SN_GGUF_MAX_DIMS 4

struct sn_gguf;

struct sn_gguf_tensor {
    const char *name;
    int         type;                    /* enum sn_ggml_type */
    int         n_dims;
    uint64_t    ne[SN_GGUF_MAX_DIMS];    /* ne[0] = innermost (HF [out, in] -> ne {in, out}) */
    uint64_t    n_elements;
    uint64_t    offset;                  /* in the data section */
    uint64_t    nbytes;
    const void *data;                    /* borrowed; inside the file */
};

int  sn_gguf_open(const char *path, struct sn_gguf **out, struct sn_err *err);
/* The same over bytes in memory (borrowed: must outlive the handle); name is for messages. */
int  sn_gguf_open_memory(const void *data, size_t len, const char *name, struct sn_gguf **out,
                         struct sn_err *err);
void sn_gguf_close(struct sn_gguf *g);

uint32_t    sn_gguf_version(const struct sn_gguf *g);
uint32_t    sn_gguf_alignment(const struct sn_gguf *g);
size_t      sn_gguf_n_kv(const struct sn_gguf *g);
const char *sn_gguf_key(const struct sn_gguf *g, size_t i);
int         sn_gguf_find(const struct sn_gguf *g, const char *key);  /* index, or -1 */
int         sn_gguf_kv_type(const struct sn_gguf *g, size_t i);      /* enum sn_gguf_type */
/* For arrays: element type and count (other kinds: -1 and 0). */
int         sn_gguf_arr_type(const struct sn_gguf *g, size_t i);
size_t      sn_gguf_arr_n(const struct sn_gguf *g, size_t i);
/* Typed getters by key. SN_E_FORMAT when the key is present with another type; when it is
** absent: `required` gives SN_E_FORMAT naming the key, else *out = dflt and SN_OK. Integers of
** any integer type are accepted when the value fits. */
int sn_gguf_get_u64(const struct sn_gguf *g, const char *key, bool required, uint64_t dflt,
                    uint64_t *out, struct sn_err *err);
int sn_gguf_get_f64(const struct sn_gguf *g, const char *key, bool required, double dflt,
                    double *out, struct sn_err *err);
int sn_gguf_get_bool(const struct sn_gguf *g, const char *key, bool required, bool dflt,
                     bool *out, struct sn_err *err);
/* *out borrowed (NUL-terminated; GGUF strings may hold NUL: *len is the true length). */
int sn_gguf_get_str(const struct sn_gguf *g, const char *key, bool required, const char *dflt,
                    const char **out, struct sn_err *err);
/* Arrays (borrowed views): strings (NUL-terminated, lens may be NULL), i32, f32. */
int sn_gguf_get_arr_str(const struct sn_gguf *g, const char *key, const char *const **v,
                        const size_t **lens, size_t *n, struct sn_err *err);
int sn_gguf_get_arr_i32(const struct sn_gguf *g, const char *key, const int32_t **v, size_t *n,
                        struct sn_err *err);
int sn_gguf_get_arr_f32(const struct sn_gguf *g, const char *key, const float **v, size_t *n,
                        struct sn_err *err);
/* A one-line rendering of KV i for `sentinel inspect` (arrays: type, count, first items). */
int sn_gguf_kv_describe(const struct sn_gguf *g, size_t i, struct sn_buf *out,
                        struct sn_err *err);

size_t sn_gguf_n_tensors(const struct sn_gguf *g);
const struct sn_gguf_tensor *sn_gguf_tensor(const struct sn_gguf *g, size_t i);
const struct sn_gguf_tensor *sn_gguf_find_tensor(const struct sn_gguf *g, const char *name);
/* Converts a tensor (F32/F16/BF16, or Q8_0 dequantized) to n_elements floats. */
int sn_gguf_tensor_to_f32(const struct sn_gguf_tensor *t, float *out, struct sn_err *err);
const char *sn_ggml_type_name(int type); /* "F32", "F16", "BF16", "Q8_0", or "?" */

/* ---- our keys ---------------------------------------------------------------------------- */

/* Our keys (docs/formats.md#gguf). */
#define SN_GGUF_KEY_HEAD        "sentinel.score.weight"     /* f32[n_embd] */
#define SN_GGUF_KEY_TEMPLATE    "sentinel.template.id"      /* "sentinel-chatml/1" */
#define SN_GGUF_KEY_SYSTEM      "sentinel.template.system"
#define SN_GGUF_KEY_MAX_LEN     "sentinel.max_len"          /* u32 */
#define SN_GGUF_KEY_HIST_SENT   "sentinel.history.sentences" /* u32: per history entry */
#define SN_GGUF_KEY_HIST_CHARS  "sentinel.history.chars"     /* u32: bytes per entry */
#define SN_GGUF_KEY_TOK_HASH    "sentinel.tokenizer.sha256"
#define SN_GGUF_KEY_TOK_NFC     "sentinel.tokenizer.nfc"    /* bool */
#define SN_GGUF_KEY_BASE        "sentinel.base_model"
#define SN_GGUF_KEY_ADAPTER     "sentinel.adapter"
#define SN_GGUF_KEY_LORA        "sentinel.lora.scale"       /* f32 alpha/r merged, 0 = none */

/* ---- runtime detector ---------------------------------------------------------------------- */

struct sn_detector;
struct sn_tokenizer;

/* Reproducibility (docs/export.md "Reproducibility"): the same GGUF, input and thread count
** give the same bits in every process of one environment. n_threads = 0 is resolved at open by
** OpenBLAS's default rule from the environment: OPENBLAS_NUM_THREADS, else GOTO_NUM_THREADS,
** else OMP_NUM_THREADS, else one per CPU the process may run on (at most one per CPU). The
** count is applied to OpenBLAS, which keeps one per process, before each forward: detectors
** with different counts may be used in turn, not at the same time from two threads. */
#define SN_DETECTOR_MAX_THREADS 1024
struct sn_detector_params {
    int  n_threads;   /* OpenBLAS threads, 0..SN_DETECTOR_MAX_THREADS; 0 = the default rule */
    int  max_tokens;  /* longest sequence scored; 0 = the file's sentinel.max_len */
    int  max_batch;   /* responses per shared-context call; 0 = 8 */
    /* Kernels (docs/export.md "Weight formats and kernels"): NULL = the environment's
    ** SENTINEL_KERNELS, else "auto" (the widest this CPU runs); "auto", "portable", "avx2",
    ** "avx512", each optionally with "+dot" or "+tile" (BF16 and Q8_0 matrices by BF16 dot
    ** products or by f32 tiles into the sgemm; default: dots where the CPU has AVX512-BF16) or
    ** "+int8" (Q8_0 by int8 dot products against activations quantized to Q8_0).
    ** Naming kernels the CPU lacks fails with SN_E_UNSUPPORTED. */
    const char *kernels;
};
struct sn_detector_params sn_detector_default_params(void);
int  sn_detector_open(const char *gguf_path, const struct sn_detector_params *p,
                      struct sn_detector **out, struct sn_err *err);
void sn_detector_free(struct sn_detector *d);

/* The tokenizer stored in a GGUF (tokenizer.ggml.* keys, byte-level BPE; NFC and the hash
** from our keys) as a new tokenizer the caller frees (sn_tokenizer_free). */
int  sn_gguf_open_tokenizer(const char *gguf_path, struct sn_tokenizer **out,
                            struct sn_err *err);
/* The tokenizer stored in the file (borrowed until sn_detector_free). */
const struct sn_tokenizer *sn_detector_tokenizer(const struct sn_detector *d);
int  sn_detector_n_embd(const struct sn_detector *d);
/* The OpenBLAS thread count every forward of d runs with (n_threads = 0 resolved). */
int  sn_detector_n_threads(const struct sn_detector *d);
/* The kernels chosen at open, in words: the CPU's features, the ISA, how each weight type is
** multiplied (borrowed until sn_detector_free). */
const char *sn_detector_kernels(const struct sn_detector *d);
/* The same words for a detector opened now with params.kernels = spec (NULL: the environment's
** SENTINEL_KERNELS, else "auto"), without a file: for `sentinel inspect`. */
int  sn_detector_kernels_plan(const char *spec, char *out, size_t cap, struct sn_err *err);
/* Bytes of the scratch allocated at open (activations, key/value cache, f32 tile): with the
** GGUF's tensor bytes (memory-mapped, shared), what an open detector holds. */
size_t sn_detector_scratch_bytes(const struct sn_detector *d);

/* Reward of one token sequence (the head on the last token's final-norm state). hidden, if
** not NULL, receives that state (n_embd floats). n must be in [1, max_tokens]. */
int  sn_detector_score_ids(struct sn_detector *d, const int32_t *ids, size_t n, float *score,
                           float *hidden, struct sn_err *err);
/* R(response ⊕ context): the template (tokenizer/template.h) with the file's system prompt,
** context as the task, truncated to max_len by the template's policy. */
int  sn_detector_score(struct sn_detector *d, const char *context, const char *response,
                       float *score, struct sn_err *err);
/* n (context, response) pairs; scores[i] for pair i. */
int  sn_detector_score_batch(struct sn_detector *d, const char *const *contexts,
                             const char *const *responses, size_t n, float *scores,
                             struct sn_err *err);
/* n responses to one context: the tokens the renderings share (the context's prefix) are run
** once and their keys/values reused for every response. Equal to n sn_detector_score calls. */
int  sn_detector_score_shared(struct sn_detector *d, const char *context,
                              const char *const *responses, size_t n, float *scores,
                              struct sn_err *err);
/* n responses to a context given as its parts: the task text and the history entries, oldest
** first (context/context.h renders both). Unlike a rendered context passed to
** sn_detector_score, a sequence longer than max_len drops whole history entries, oldest first,
** as the tuple builder's sequences did in training (tokenizer/template.h). Each response is
** scored on its own (no shared prefix), as `sentinel eval` scores a debate's messages. */
int  sn_detector_score_prompt(struct sn_detector *d, const char *task,
                              const char *const *history, size_t n_history,
                              const char *const *responses, size_t n, float *scores,
                              struct sn_err *err);

#endif
