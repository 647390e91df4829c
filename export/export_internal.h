/* export/export_internal.h: pieces shared inside export/ (gguf.c, export.c, detector.c); not
** for callers. */
#ifndef SN_EXPORT_INTERNAL_H
#define SN_EXPORT_INTERNAL_H
#include "export/export.h"

/* Bytes per element of a supported ggml type, 0 for any other. */
size_t sn_ggml_type_size(int type);

/* The qwen2 hyper-parameters of a GGUF (llama.cpp's keys), checked for consistency. */
struct sn_qwen2_hparams {
    int64_t n_embd, n_layer, n_ff, n_head, n_head_kv, head_dim, n_ctx, n_vocab;
    double  eps, theta;
};
int sn_qwen2_hparams_read(const struct sn_gguf *g, struct sn_qwen2_hparams *h,
                          struct sn_err *err);

#endif
