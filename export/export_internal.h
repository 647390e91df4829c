/* export/export_internal.h: pieces shared inside export/ (the runtime: gguf.c, detector.c; the
** writer part: gguf_writer.c, write_*.c); not for callers. */
#ifndef SN_EXPORT_INTERNAL_H
#define SN_EXPORT_INTERNAL_H
#include "export/export.h"

/* Limits the reader enforces and the writer keeps to (docs/formats.md#gguf). */
#define SN_GGUF_MAGIC    "GGUF"
#define SN_GGUF_MAX_KEY  255
#define SN_GGUF_MAX_ARR  (1u << 24)        /* array elements */
#define SN_GGUF_MAX_NAME 63                /* tensor names (ggml: < GGML_MAX_NAME = 64) */

/* Bytes of one value of a scalar KV type (enum sn_gguf_type); 0 for strings and arrays. */
size_t sn_gguf_scalar_size(int type);
/* ggml's block of a supported type: *n elements in *bytes bytes; false for any other type. */
bool sn_ggml_type_block(int type, size_t *n, size_t *bytes);

/* The qwen2 hyper-parameters of a GGUF (llama.cpp's keys), checked for consistency. */
struct sn_qwen2_hparams {
    int64_t n_embd, n_layer, n_ff, n_head, n_head_kv, head_dim, n_ctx, n_vocab;
    double  eps, theta;
};
int sn_qwen2_hparams_read(const struct sn_gguf *g, struct sn_qwen2_hparams *h,
                          struct sn_err *err);

#endif
