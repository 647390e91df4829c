/* export/write_internal.h: what the writer part of export/ shares (write_inputs.c reads the
** inputs; write_gguf.c and write_hf.c write the outputs); not for callers. */
#ifndef SN_EXPORT_WRITE_INTERNAL_H
#define SN_EXPORT_WRITE_INTERNAL_H
#include "export/export_internal.h"
#include "export/write.h"
#include "hf/hf.h"

/* The base's hyper-parameters (config.json through hf/, sn_model_config_load). */
struct sn_exw_config {
    int64_t E, F, L, H, Hkv, V, ctx;
    double  eps, theta;
};

/* ggml's quantize_row_q8_0_ref (export/gguf_writer.c): n (a multiple of SN_Q8_0_BLOCK) floats
** -> n / 32 blocks of an f16 scale d = max|x| / 127 and 32 int8 round(x / d). */
void sn_q8_0_quantize(const float *x, size_t n, uint8_t *out);

/* dir/name into buf, or SN_E_ARG when it does not fit. */
int sn_exw_join(char *buf, size_t n, const char *dir, const char *name, struct sn_err *err);
/* The last path component of dir (trailing slashes dropped), in buf. */
const char *sn_exw_last_component(const char *dir, char *buf, size_t n);

/* A tensor of the base as f32 (new buffer, caller frees), checked against the expected shape
** [d0] or [d0, d1] (d1 = 0: 1-D). Looks for `name`, then `name` without "model.". */
int sn_exw_load_f32(struct sn_hf_weights *w, const char *dir, const char *name, int64_t d0,
                    int64_t d1, bool optional, float **out, struct sn_err *err);
/* A new f32 copy of tensor t in *out (NULL on error). */
int sn_exw_tensor_f32(const struct sn_st_tensor *t, float **out, struct sn_err *err);

/* The tensors of one decoder layer: HF name after "model.layers.{i}.", llama.cpp name after
** "blk.{i}.", and the shape kind: 0 norm [E], 1 q/o [E,E], 2 k/v [Ekv,E], 3 gate/up [F,E],
** 4 down [E,F], 5 q bias [E], 6 k/v bias [Ekv]. Kinds 1..4 are the LoRA targets. */
struct sn_exw_layer_tensor {
    const char *hf, *gg;
    int kind;
};
#define SN_EXW_N_LAYER 12
extern const struct sn_exw_layer_tensor sn_exw_layer_map[SN_EXW_N_LAYER];
/* HF shape [d1, d0] of a layer tensor of `kind` (d1 = 0: the 1-D [d0]). */
void sn_exw_layer_dims(int kind, int64_t E, int64_t Ekv, int64_t F, int64_t *d0, int64_t *d1);

/* A PEFT adapter directory: adapter_config.json (hf/, sn_hf_adapter_config_load) and
** adapter_model.safetensors. */
struct sn_exw_adapter {
    struct sn_st_file *st;
    double             scale;   /* alpha / r (rsLoRA: alpha / sqrt r) */
    int                r;
    char               path[4096];
};
int sn_exw_adapter_open(const char *dir, struct sn_exw_adapter *a, struct sn_err *err);
/* W (out, in) += s · B A for the adapter of `module`, if the adapter has one. *used counts the
** tensors consumed. */
int sn_exw_adapter_merge(const struct sn_exw_adapter *a, const char *module, float *W,
                         int64_t out, int64_t in, size_t *used, struct sn_err *err);
/* Every adapter tensor must have been used: an unknown one means a different model. */
int sn_exw_adapter_all_used(const struct sn_exw_adapter *a, size_t used, struct sn_err *err);
/* The adapter's head tensor, checked to be [1, E]; NULL when it has none. */
int sn_exw_adapter_head(const struct sn_exw_adapter *a, int64_t E,
                        const struct sn_st_tensor **out, struct sn_err *err);

/* Buffers an export keeps until its writer has saved. */
struct sn_exw_bufs {
    void  **v;
    size_t  n, cap;
};
void sn_exw_bufs_free(struct sn_exw_bufs *b);
/* Takes ownership of p (freed now on failure). */
int  sn_exw_keep(struct sn_exw_bufs *b, void *p, struct sn_err *err);

/* The inputs every export reads: config, the base's weights and, when given, the adapter. */
struct sn_exw_sources {
    struct sn_exw_config   c;
    struct sn_hf_weights  *wts;
    struct sn_exw_adapter  ad;
    int64_t                Ekv;
};
/* Opens the config, the weights and (when p->adapter_dir) the adapter; need_adapter makes the
** adapter required. Types: f32, f16, bf16, and q8_0 when allow_q8. */
int  sn_exw_sources_open(const struct sn_export_params *p, bool need_adapter, bool allow_q8,
                         struct sn_exw_sources *s, struct sn_err *err);
void sn_exw_sources_close(struct sn_exw_sources *s);
/* The adapter's LoRA pair of layer l's tensor sn_exw_layer_map[k], whose HF shape goes to
** [*d1, *d0]: *A and *B both NULL when the tensor is 1-D or the adapter does not adapt it. */
int  sn_exw_layer_pair(const struct sn_exw_sources *s, int64_t l, size_t k, int64_t *d0,
                       int64_t *d1, const struct sn_st_tensor **A, const struct sn_st_tensor **B,
                       struct sn_err *err);

#endif
