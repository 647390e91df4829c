/* export/export.h: GGUF files and the runtime detector (docs/design.md §3, §4; the GGUF layout
** we read and write: docs/formats.md#gguf). Pure C + OpenBLAS, no libtorch: a deployer builds
** this module alone (-DSENTINEL_WITH_TORCH=OFF) and embeds the detector in an agent.
**
** Three parts:
**   1. GGUF v3 reader (strict: every count, length, type, dimension, offset and alignment is
**      checked against the file size with overflow-safe arithmetic, names are unique, and for
**      general.architecture = "qwen2" the tensor shapes are checked against the
**      hyper-parameters) and writer (atomic: temp + fsync + rename).
**   2. Export: a Hugging Face Qwen2 directory (+ optional PEFT LoRA adapter, merged as
**      W + alpha/r · B·A) -> a qwen2 GGUF that stock llama.cpp loads, with the reward head
**      under our key sentinel.score.weight and qwen2.pooling_type = LAST.
**   3. The detector: R(response ⊕ context) from such a GGUF, with the tokenizer and the prompt
**      template stored in it (tokenizer/template.h), forward in f32 with cblas_sgemm.
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

/* Writer: KVs and tensors are written in the order they were added; general.alignment is 32.
** Values are copied; tensor data is borrowed until save returns. */
struct sn_gguf_writer;
int  sn_gguf_writer_create(struct sn_gguf_writer **out, struct sn_err *err);
void sn_gguf_writer_free(struct sn_gguf_writer *w);
int  sn_gguf_writer_set_str(struct sn_gguf_writer *w, const char *key, const char *v,
                            struct sn_err *err);
int  sn_gguf_writer_set_u32(struct sn_gguf_writer *w, const char *key, uint32_t v,
                            struct sn_err *err);
int  sn_gguf_writer_set_i32(struct sn_gguf_writer *w, const char *key, int32_t v,
                            struct sn_err *err);
int  sn_gguf_writer_set_u64(struct sn_gguf_writer *w, const char *key, uint64_t v,
                            struct sn_err *err);
int  sn_gguf_writer_set_f32(struct sn_gguf_writer *w, const char *key, float v,
                            struct sn_err *err);
int  sn_gguf_writer_set_bool(struct sn_gguf_writer *w, const char *key, bool v,
                             struct sn_err *err);
int  sn_gguf_writer_set_arr_str(struct sn_gguf_writer *w, const char *key,
                                const char *const *v, size_t n, struct sn_err *err);
int  sn_gguf_writer_set_arr_i32(struct sn_gguf_writer *w, const char *key, const int32_t *v,
                                size_t n, struct sn_err *err);
int  sn_gguf_writer_set_arr_f32(struct sn_gguf_writer *w, const char *key, const float *v,
                                size_t n, struct sn_err *err);
/* ne as GGUF stores it (ne[0] innermost); data holds the elements in `type`. */
int  sn_gguf_writer_add_tensor(struct sn_gguf_writer *w, const char *name, int type,
                               int n_dims, const uint64_t *ne, const void *data,
                               struct sn_err *err);
/* Serialises to memory (*out, caller sn_free) or writes a file atomically. */
int  sn_gguf_writer_to_memory(const struct sn_gguf_writer *w, uint8_t **out, size_t *len,
                              struct sn_err *err);
int  sn_gguf_writer_save(const struct sn_gguf_writer *w, const char *path, struct sn_err *err);

/* ---- export -------------------------------------------------------------------------------- */

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

struct sn_export_params {
    const char *base_dir;       /* HF Qwen2 directory: config.json, *.safetensors, tokenizer.json */
    const char *adapter_dir;    /* PEFT adapter directory (adapter_config.json +
                                ** adapter_model.safetensors), or NULL */
    int         type;           /* enum sn_ggml_type of the matrices: F32 (default), F16, BF16,
                                ** Q8_0 (GGUF only; a matrix whose rows are not a multiple of 32
                                ** long stays F16, as llama.cpp's converter does) */
    bool        head_as_logit;  /* also write output.weight with row 0 = head, others 0 */
    uint32_t    max_len;        /* tokens per scored sequence; 0 = 1024 (the tuple builder's) */
    uint32_t    history_sentences; /* the tuple builder's history settings; 0 = 2 */
    uint32_t    history_chars;     /* 0 = 300 */
    const char *tokenizer_hash; /* the shards' tokenizer hash; NULL = SHA-256 of the base's
                                ** tokenizer.json (what `sentinel build` records) */
    const char *system;         /* NULL = SN_TEMPLATE_SYSTEM */
    const char *name;           /* general.name; NULL = the base directory's last component */
    /* sn_export_gguf calls it before each transformer layer and after the last (done of total
    ** layers converted), for a progress display; NULL = none. */
    void      (*progress)(void *user, uint64_t done, uint64_t total);
    void       *progress_user;
};
struct sn_export_params sn_export_default_params(void);
/* Writes the GGUF at out_path atomically. Every input file is validated; errors name the
** file and the tensor or key. */
int sn_export_gguf(const struct sn_export_params *p, const char *out_path, struct sn_err *err);

/* A LoRA adapter GGUF in llama.cpp's convention (general.type = "adapter", adapter.type =
** "lora", adapter.lora.alpha; `blk.N.<name>.weight.lora_a` ne {n_in, r} and `.lora_b` ne {r,
** n_out}: docs/formats.md#gguf-lora-adapter) from p->adapter_dir (required), checked against
** p->base_dir. rsLoRA's alpha / sqrt(r) is folded into alpha. The head rides along as the rank-1
** pair output.weight.lora_a/.lora_b adding (head - base head) to row 0 of output.weight, and in
** full under SN_GGUF_KEY_HEAD: over a base GGUF written with head_as_logit from the same base,
** llama.cpp's logit 0 is the adapted reward. p->type applies to the LoRA matrices. */
int sn_export_adapter_gguf(const struct sn_export_params *p, const char *out_path,
                           struct sn_err *err);
/* The PEFT adapter directory (adapter_config.json + adapter_model.safetensors) of
** p->adapter_dir (required), validated against p->base_dir and re-written (tensors unchanged,
** the head under base_model.model.score.weight, "score" in modules_to_save). */
int sn_export_peft(const struct sn_export_params *p, const char *out_dir, struct sn_err *err);
/* A merged Hugging Face Qwen2ForSequenceClassification directory (config.json with num_labels
** 1 and pad_token_id, model.safetensors with the LoRA of p->adapter_dir, if any, merged and
** score.weight, the base's tokenizer files), in p->type (f32, f16 or bf16). */
int sn_export_hf(const struct sn_export_params *p, const char *out_dir, struct sn_err *err);

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

#endif
