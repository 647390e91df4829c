/* export/detector.h: the runtime detector, R(response ⊕ context) from a detector GGUF written by
** `sentinel export` (docs/export.md "Embedding the detector"; the model and its reward:
** export/export.h). The public part of export/: libsentinel_detector installs this header as
** <export/detector.h> and exports exactly its functions (docs/api.md); export/export.h includes
** it and adds the GGUF reader and the token-level calls the rest of sentinel uses.
**
** Ownership: sn_detector_open fills *out (NULL on failure, nothing leaked); sn_detector_free
** accepts NULL. A detector is used by one thread at a time (its scratch is its own); open one
** per thread to score in parallel. Strings are borrowed for the call. */
#ifndef SN_EXPORT_DETECTOR_H
#define SN_EXPORT_DETECTOR_H
#include "common/base.h"

#ifdef __cplusplus
extern "C" {
#endif

struct sn_detector;

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
    ** "+int8" (Q8_0 by int8 dot products against activations quantized to Q8_0), and
    ** optionally "+blas" (F32 matrices and f32 tiles by OpenBLAS's sgemm instead of kernels/'s
    ** AVX-512F one, the default where the set is avx512). Naming kernels the CPU lacks fails
    ** with SN_E_UNSUPPORTED. */
    const char *kernels;
};
struct sn_detector_params sn_detector_default_params(void);
int  sn_detector_open(const char *gguf_path, const struct sn_detector_params *p,
                      struct sn_detector **out, struct sn_err *err);
void sn_detector_free(struct sn_detector *d);

int  sn_detector_n_embd(const struct sn_detector *d); /* the model's hidden width */
/* The OpenBLAS thread count every forward of d runs with (n_threads = 0 resolved). */
int  sn_detector_n_threads(const struct sn_detector *d);
/* The kernels chosen at open, in words: the CPU's features, the ISA, how each weight type is
** multiplied (borrowed until sn_detector_free). */
const char *sn_detector_kernels(const struct sn_detector *d);
/* Bytes of the scratch allocated at open (activations, key/value cache, f32 tile): with the
** GGUF's tensor bytes (memory-mapped, shared), what an open detector holds. */
size_t sn_detector_scratch_bytes(const struct sn_detector *d);

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

#ifdef __cplusplus
}
#endif
#endif /* SN_EXPORT_DETECTOR_H */
