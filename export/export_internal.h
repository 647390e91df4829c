/* export/export_internal.h: pieces shared inside export/ (gguf.c, export.c, detector.c); not
** for callers. */
#ifndef SN_EXPORT_INTERNAL_H
#define SN_EXPORT_INTERNAL_H
#include "export/export.h"

/* ggml's block of a supported type: *n elements in *bytes bytes; false for any other type. */
bool sn_ggml_type_block(int type, size_t *n, size_t *bytes);
/* ggml's quantize_row_q8_0_ref: n (a multiple of SN_Q8_0_BLOCK) floats -> n / 32 blocks of an
** f16 scale d = max|x| / 127 and 32 int8 round(x / d). */
void sn_q8_0_quantize(const float *x, size_t n, uint8_t *out);

/* The qwen2 hyper-parameters of a GGUF (llama.cpp's keys), checked for consistency. */
struct sn_qwen2_hparams {
    int64_t n_embd, n_layer, n_ff, n_head, n_head_kv, head_dim, n_ctx, n_vocab;
    double  eps, theta;
};
int sn_qwen2_hparams_read(const struct sn_gguf *g, struct sn_qwen2_hparams *h,
                          struct sn_err *err);

#endif
