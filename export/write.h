/* export/write.h: the writer part of export/ (`sentinel export`; docs/export.md): the GGUF
** writer, and the exports of a Hugging Face Qwen2 directory (+ an optional PEFT LoRA adapter) to
** a detector GGUF, a llama.cpp LoRA GGUF, a PEFT directory or a merged Hugging Face directory.
** Built as sn_export_write (docs/design.md §3), which reads the Hugging Face files through hf/;
** the runtime detector library (export/export.h, libsentinel_detector) reads GGUF only and has
** none of this. Ownership as in export/export.h. */
#ifndef SN_EXPORT_WRITE_H
#define SN_EXPORT_WRITE_H
#include "export/export.h"

/* ---- GGUF writer (export/gguf_writer.c) ---------------------------------------------------- */

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

/* ---- export (export/write_gguf.c, export/write_hf.c) ------------------------------------- */

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
    /* sn_export_gguf, sn_export_peft and sn_export_hf call it before each transformer layer
    ** and after the last (done of total layers converted), for a progress display; NULL =
    ** none. */
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

#endif
