/* train/train.h: the training-side reward model R_θ(r ⊕ c) (docs/design.md §4): a Qwen2-family
** decoder built from aten/ ops, LoRA adapters (lora/), a linear reward head, PEFT-compatible
** adapter files, and a minimal AdamW. Formats: docs/formats.md (model directory, adapter
** checkpoint, safetensors).
**
** Architecture (Hugging Face transformers Qwen2Model + GenericForSequenceClassification):
**   h = embed_tokens[ids]
**   per layer: a = RMSNorm(h); q,k,v = a Wqᵀ+bq, a Wkᵀ+bk, a Wvᵀ+bv; RoPE (rotate-half,
**              rope_theta) on q,k; GQA causal attention with the padding mask; h += o Woᵀ;
**              m = RMSNorm(h); h += (silu(m Wgᵀ) ⊙ m Wuᵀ) Wdᵀ
**   reward = score · RMSNorm_final(h[b, last_b])   (score: (1, hidden), no bias)
** RMSNorm is computed in f32 (f64 stays f64) and cast back, as HF does.
**
** Padding and positions: a batch is ids (B, T) plus a mask (B, T) of 1 = token, 0 = padding,
** right or left (or any) padding. Position ids count real tokens: position of token t is the
** number of mask ones before it (HF's `attention_mask.cumsum(-1) - 1`), so a left-padded row
** gets the same positions, hence the same reward, as the unpadded sequence. Padding keys are
** never attended to. The reward is read at last_b = the last position whose mask is 1 (HF
** pools at the last non-pad token id; with a mask the result is the same and pad == eos cannot
** confuse it). A row with no tokens is an error.
**
** Ownership: sn_model_* handles own every tensor they hold; tensors returned through `**out`
** are new handles the caller frees (sn_tensor_free). struct sn_param names are borrowed from
** the model and valid until it is freed or its adapter/head changes. */
#ifndef SN_TRAIN_H
#define SN_TRAIN_H
#include "aten/aten.h"
#include "lora/lora.h"

/* ---- config (config.json) ----------------------------------------------------------------- */

struct sn_model_config {
    int64_t hidden_size;
    int64_t intermediate_size;
    int64_t num_hidden_layers;
    int64_t num_attention_heads;
    int64_t num_key_value_heads;
    int64_t vocab_size;
    int64_t max_position_embeddings;
    double  rms_norm_eps;
    double  rope_theta;
    bool    tie_word_embeddings;
    int64_t pad_token_id;        /* -1 when absent */
    char    torch_dtype[16];     /* "float32", "bfloat16" or "float16": the on-disk dtype */
};

/* The tiny built-in config: 2 layers, hidden 64, 4 heads, 2 KV heads (GQA), intermediate 128,
** rms_norm_eps 1e-6, rope_theta 10000, max positions 2048, float32, the given vocab size. */
struct sn_model_config sn_model_config_tiny(int64_t vocab_size);
/* head_dim = hidden_size / num_attention_heads. */
int64_t sn_model_config_head_dim(const struct sn_model_config *c);
/* Checks every field and their consistency (heads divide hidden, KV heads divide heads, even
** head_dim, ...). Errors name the file (name) and the field. */
int sn_model_config_check(const struct sn_model_config *c, const char *name, struct sn_err *err);
/* Parses a HF config.json object. Required: hidden_size, intermediate_size, num_hidden_layers,
** num_attention_heads, num_key_value_heads, rms_norm_eps, rope_theta, max_position_embeddings,
** vocab_size; rope_theta may instead sit in rope_parameters (current transformers), whose
** rope_type must be "default"; num_key_value_heads null means num_attention_heads. Optional:
** tie_word_embeddings (false), torch_dtype or dtype ("float32"), pad_token_id, head_dim (must
** equal hidden_size / num_attention_heads), model_type (must be "qwen2" if present),
** hidden_act ("silu"), rope_scaling (null or rope_type "default"), use_sliding_window (must be
** false). Then sn_model_config_check. */
int sn_model_config_parse(const cJSON *json, const char *name, struct sn_model_config *c,
                          struct sn_err *err);
int sn_model_config_load(const char *path, struct sn_model_config *c, struct sn_err *err);
/* A config.json object (Qwen2ForSequenceClassification, num_labels 1); caller cJSON_Deletes. */
int sn_model_config_to_json(const struct sn_model_config *c, cJSON **out, struct sn_err *err);

/* ---- the model ---------------------------------------------------------------------------- */

struct sn_model;

struct sn_model_params {
    enum sn_dtype    dtype;           /* compute dtype: F32 (CPU default), BF16 (GPU), F64 */
    struct sn_device device;
    bool             grad_checkpoint; /* recompute each layer in backward (sn_aten_checkpoint) */
    uint64_t         seed;            /* random init, head init, LoRA init and dropout */
    double           init_std;        /* std of the random matrices (HF: 0.02; 0 = 0.02) */
    double           init_noise;      /* > 0: biases ~ N(0, s), norm weights ~ N(1, s) instead
                                      ** of HF's 0 and 1 (tests: every parameter matters) */
};
/* F32, CPU, no checkpointing, seed 0, init_std 0.02, init_noise 0 */
struct sn_model_params sn_model_default_params(void);

/* A randomly initialised model (HF's init: normal(0, 0.02) for matrices, norms 1, biases 0),
** with a reward head. */
int  sn_model_create(const struct sn_model_config *c, const struct sn_model_params *p,
                     struct sn_model **out, struct sn_err *err);
/* Loads a HF model directory: config.json and model.safetensors, or the shards listed by
** model.safetensors.index.json. Every expected tensor must be present with its exact shape and
** a float dtype (F32/BF16/F16/F64); tensors are read through mmap. The head comes from
** score.weight when present (else none: see sn_model_init_head); lm_head.weight is checked for
** shape and ignored (no LM use). Unknown tensors are an error naming them. */
int  sn_model_open_hf(const char *dir, const struct sn_model_params *p, struct sn_model **out,
                      struct sn_err *err);
/* Writes config.json and model.safetensors (weights in c.torch_dtype, score.weight when the
** model has a head) into dir (created), each file atomically. LoRA is not merged in.
** config.json always carries pad_token_id (transformers pools at the rightmost non-pad token):
** a model whose pad id is unknown (built in memory, or loaded from a directory with no pad or
** eos id anywhere) is refused; set it first with sn_model_set_pad_token_id. */
int  sn_model_save_hf(const struct sn_model *m, const char *dir, struct sn_err *err);
void sn_model_free(struct sn_model *m); /* NULL is fine */
/* The id written as pad_token_id: the tokenizer's pad id, else its eos id (what TRL sets).
** sn_model_open_hf fills it from config.json's pad_token_id, else tokenizer_config.json's
** pad_token (else eos_token) through its added_tokens_decoder, else config.json's
** eos_token_id. SN_E_ARG when outside the vocabulary. */
int  sn_model_set_pad_token_id(struct sn_model *m, int64_t id, struct sn_err *err);

const struct sn_model_config *sn_model_get_config(const struct sn_model *m);
const struct sn_model_params *sn_model_get_params(const struct sn_model *m);
bool sn_model_has_head(const struct sn_model *m);
/* Replaces the head with a fresh normal(0, std) one drawn from seed (HF: std 0.02). */
int  sn_model_init_head(struct sn_model *m, double std, uint64_t seed, struct sn_err *err);
/* Sets the head from host floats (hidden_size of them). */
int  sn_model_set_head(struct sn_model *m, const float *w, struct sn_err *err);
/* Training mode turns on LoRA dropout. Default off. */
void sn_model_set_training(struct sn_model *m, bool on);
void sn_model_set_grad_checkpoint(struct sn_model *m, bool on);

/* Forward-phase timing for benchmarks: when set, every decoder-layer op adds its wall time to
** one category (a checkpointed layer's recompute in backward counts again). Backward time is
** not split: it runs inside libtorch's autograd engine. */
enum { SN_PROF_LINEAR, SN_PROF_ATTENTION, SN_PROF_NORM, SN_PROF_OTHER, SN_PROF_COUNT };
struct sn_model_profile {
    double seconds[SN_PROF_COUNT]; /* projections incl. LoRA; RoPE + attention; RMSNorm;
                                   ** SwiGLU, residuals, reshapes */
};
void sn_model_set_profile(struct sn_model *m, struct sn_model_profile *prof); /* NULL = off */

/* A batch on the host: ids (B, T) row-major, mask (B, T) 1/0 (NULL = all ones). */
struct sn_model_batch {
    const int32_t *ids;
    const int32_t *mask;
    int64_t        B, T;
};

/* Forward pass. *rewards (B) (NULL ok) needs a head; *hidden (B, hidden_size) (NULL ok) is the
** final-norm hidden state at each row's last real token. Both are new handles, differentiable
** (w.r.t. head and LoRA parameters) when grad mode is on. */
int  sn_model_forward(struct sn_model *m, const struct sn_model_batch *batch,
                      struct sn_tensor **rewards, struct sn_tensor **hidden, struct sn_err *err);
/* With gradient checkpointing, each grad-mode forward keeps its (small) recompute context in
** the model until the backward has run: call this after backward (the trainer does it once per
** optimizer step). Forwards without checkpointing keep nothing. */
void sn_model_release_forward_state(struct sn_model *m);
/* Convenience: no-grad forward into host floats (rewards: B, hidden: B × hidden_size; either
** NULL ok). */
int  sn_model_forward_host(struct sn_model *m, const struct sn_model_batch *batch,
                           float *rewards, float *hidden, struct sn_err *err);

/* ---- LoRA and adapter files (PEFT layout; ecosystem.md §2) -------------------------------- */

/* Attaches fresh adapters (A Kaiming-uniform from the model's seed, B zero) to the targeted
** projections of every layer; replaces any existing adapter. The head stays trainable. */
int  sn_model_lora_attach(struct sn_model *m, const struct sn_lora_config *c,
                          struct sn_err *err);
bool sn_model_has_lora(const struct sn_model *m);
/* Removes every adapter (a merged one is unmerged first). */
void sn_model_lora_detach(struct sn_model *m);
const struct sn_lora_config *sn_model_lora_config(const struct sn_model *m); /* NULL if none */
/* Merges every adapter into its base weight / restores the exact original weights. */
int  sn_model_lora_merge(struct sn_model *m, struct sn_err *err);
int  sn_model_lora_unmerge(struct sn_model *m, struct sn_err *err);
/* The adapter of one projection of one layer, or NULL. */
struct sn_lora_linear *sn_model_lora_layer(struct sn_model *m, int64_t layer,
                                           enum sn_lora_target t);
/* The frozen base weight (out, in) of one projection (borrowed). */
struct sn_tensor *sn_model_base_weight(struct sn_model *m, int64_t layer,
                                       enum sn_lora_target t);

/* Saves adapter_config.json + adapter_model.safetensors into dir (created). Tensor names are
** PEFT's (base_model.model.model.layers.{i}.self_attn.q_proj.lora_A.weight, ...,
** base_model.model.score.weight), F32, metadata {"format": "pt"}. base_model_name_or_path is
** recorded as given (NULL = ""). */
int  sn_model_adapter_save(const struct sn_model *m, const char *dir,
                           const char *base_model_name_or_path, struct sn_err *err);
/* Loads an adapter directory into m: replaces the LoRA adapters (config from
** adapter_config.json) and the head (base_model.model.score.weight, if present). Checks
** peft_type LORA, task_type SEQ_CLS, every tensor's name and shape; modules_to_save is
** de-duplicated (PEFT writes ["score", "classifier", "score"]). On failure the model is left
** with no adapter (its head unchanged). */
int  sn_model_adapter_load(struct sn_model *m, const char *dir, struct sn_err *err);

/* ---- trainable state (for the optimizer and checkpoints) ---------------------------------- */

struct sn_param {
    const char       *name;  /* PEFT name (as in adapter_model.safetensors) */
    struct sn_tensor *t;     /* borrowed; requires grad */
};
/* Every trainable tensor (LoRA A/B of each adapter, then the head) in a fixed order.
** *out is a new array (sn_free); names and tensors are borrowed from m. */
int  sn_model_trainable_params(struct sn_model *m, struct sn_param **out, size_t *n,
                               struct sn_err *err);
int64_t sn_model_count_params(const struct sn_model *m, bool trainable_only);

/* ---- AdamW (Loshchilov & Hutter, arXiv:1711.05101; torch.optim.AdamW) ---------------------- */

struct sn_adamw_params {
    double beta1, beta2, eps, weight_decay;
};
struct sn_adamw_params sn_adamw_default_params(void); /* 0.9, 0.999, 1e-8, 0.01 (torch) */
struct sn_adamw;
/* Moments are zero tensors shaped like each param. params is copied (the tensors are borrowed
** and must outlive the optimizer). */
int  sn_adamw_create(const struct sn_param *params, size_t n, const struct sn_adamw_params *p,
                     struct sn_adamw **out, struct sn_err *err);
/* One update with learning rate lr from each param's .grad (params without a grad are
** skipped, as torch does):
**   θ ← θ(1 − lr·wd);  m ← β1 m + (1−β1) g;  v ← β2 v + (1−β2) g²;
**   θ ← θ − (lr / (1−β1^t)) · m / (sqrt(v) / sqrt(1−β2^t) + eps) */
int  sn_adamw_step(struct sn_adamw *o, double lr, struct sn_err *err);
int64_t sn_adamw_step_count(const struct sn_adamw *o);
/* Moment tensors of param i (borrowed), for checkpoints. */
int  sn_adamw_state(struct sn_adamw *o, size_t i, struct sn_tensor **m, struct sn_tensor **v);
void sn_adamw_free(struct sn_adamw *o); /* NULL is fine */

#endif /* SN_TRAIN_H */
