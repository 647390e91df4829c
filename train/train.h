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
#include "hf/hf.h"
#include "lora/lora.h"
#include "train/recipe.h"

/* ---- config (config.json: struct sn_model_config and its parser, hf/hf.h) ---------------- */

/* The tiny built-in config: 2 layers, hidden 64, 4 heads, 2 KV heads (GQA), intermediate 128,
** rms_norm_eps 1e-6, rope_theta 10000, max positions 2048, float32, the given vocab size. */
struct sn_model_config sn_model_config_tiny(int64_t vocab_size);
/* Between tiny and small: 4 layers, hidden 128, 4 heads, 2 KV heads, intermediate 384
** (0.79M parameters besides the vocab × 128 embedding). */
struct sn_model_config sn_model_config_mini(int64_t vocab_size);
/* The seeded config a train.base names ("tiny", "mini", "small"; anything else: small). */
struct sn_model_config sn_model_config_seeded(const char *name, int64_t vocab_size);

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
    enum sn_dtype    autocast;        /* BF16: the projections multiply in bf16
                                      ** (sn_aten_autocast_enter) while weights, norms,
                                      ** attention, the head and rewards stay in dtype (F32);
                                      ** F32 = off */
    bool             keep_lm_head;    /* sn_model_open_hf keeps an untied lm_head.weight (the
                                      ** LM objective trains and saves it); false: checked
                                      ** and dropped, as a reward model never reads it */
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

/* Packed rows (docs/train.md, "Packed and shared-prefix batches"): a row holds several
** sequences. spans (B, T, 3) says which keys each token attends
** (sn_aten_attention_spans: its own segment causally, plus an optional shared prefix), pos
** (B, T) gives each token's RoPE position (restarting per sequence; checked against
** max_position_embeddings), and the rewards are read at the n_readout flat token indices
** readout[i] = row · T + t, in that order. The batch's mask must be NULL (no padding). */
struct sn_model_packed {
    const int32_t *spans;     /* (B, T, 3) */
    const int32_t *pos;       /* (B, T) */
    const int64_t *readout;   /* (n_readout) */
    int64_t        n_readout;
};

/* Forward pass. *rewards (B) (NULL ok) needs a head; *hidden (B, hidden_size) (NULL ok) is the
** final-norm hidden state at each row's last real token. Both are new handles, differentiable
** (w.r.t. head and LoRA parameters) when grad mode is on. Only those tokens are read, so the
** last decoder layer computes its keys and values on every token and the rest of it on them
** alone (docs/train.md "Speed"). */
int  sn_model_forward(struct sn_model *m, const struct sn_model_batch *batch,
                      struct sn_tensor **rewards, struct sn_tensor **hidden, struct sn_err *err);
/* The same over packed rows: *rewards (n_readout), *hidden (n_readout, hidden_size). */
int  sn_model_forward_packed(struct sn_model *m, const struct sn_model_batch *batch,
                             const struct sn_model_packed *packed, struct sn_tensor **rewards,
                             struct sn_tensor **hidden, struct sn_err *err);
/* With gradient checkpointing, each grad-mode forward keeps its (small) recompute context in
** the model until the backward has run: call this after backward (the trainer does it once per
** optimizer step). Forwards without checkpointing keep nothing. */
void sn_model_release_forward_state(struct sn_model *m);
/* The causal-LM forward (docs/train.md "Domain-adaptive pretraining (objective lm)"): every
** decoder layer on every token, the final norm on the n_at flat token indices at[i] = row · T
** + t (each a real token of the padded batch), then the LM head: *logits (n_at, vocab_size).
** The head is the input embedding when the config ties them (tie_word_embeddings, and always
** for a model with no lm_head.weight: the seeded bases), else the kept lm_head
** (keep_lm_head). Differentiable when grad mode is on; no reward head needed. */
int  sn_model_forward_lm(struct sn_model *m, const struct sn_model_batch *batch,
                         const int64_t *at, int64_t n_at, struct sn_tensor **logits,
                         struct sn_err *err);
/* Removes the reward head (an LM run's checkpoint has none: a reward run initialises one). */
void sn_model_drop_head(struct sn_model *m);
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

/* Sets the step count t (resume from a checkpoint; the moments are restored through
** sn_adamw_state). */
void sn_adamw_set_step_count(struct sn_adamw *o, int64_t t);

/* ---- the trainer (train/trainer*.c; docs/train.md, checkpoint layout docs/formats.md) ------ */

/* A small seeded-init config: 4 layers, hidden 256, 8 heads, 4 KV heads, intermediate 768. */
struct sn_model_config sn_model_config_small(int64_t vocab_size);

/* The lr of optimizer step s (0-based) under schedule s (train/recipe.h). */
double sn_lr_at(const struct sn_lr_schedule *s, int64_t step);

/* One optimizer step's (or one evaluation's) numbers, TRL names where they exist. */
struct sn_train_stats {
    int64_t step;                  /* optimizer steps done after this one */
    double  epoch;                 /* fractional */
    double  loss, loss_pref, loss_align, accuracy, align_accuracy, margin;
    double  mean_reward, min_reward, max_reward;  /* over chosen and rejected rewards */
    double  learning_rate, grad_norm;
    int64_t num_tokens;            /* tokens processed so far (padding excluded) */
    double  tokens_per_s, step_time, data_wait, peak_rss_mb;
    int64_t n;                     /* tuples (lm objective: sequences) */
    bool    lm;                    /* an lm-objective step: loss is the next-token
                                   ** cross-entropy, and perplexity = exp(loss); the reward
                                   ** figures are not computed */
    double  perplexity;
};

struct sn_trainer;
/* Data parallelism: when the environment names a process group (torchrun's RANK/WORLD_SIZE or
** Slurm's SLURM_PROCID/SLURM_NTASKS, + MASTER_ADDR/MASTER_PORT; aten/aten.h), every process
** opens the same trainer; each takes 1/world of every step's tuples, gradients are summed
** over the ranks before the update, and rank 0 alone writes in out.
** Prepares a run of p on the shards in `shards` (a `sentinel build` directory) into `out`:
** writes out/train_settings.json and (seeded init) out/base/, or resumes from out/latest when
** the settings are equal (refusing with the differing keys otherwise; restart = start over,
** deleting earlier checkpoints and metrics). */
int  sn_trainer_open(const struct sn_train_params *p, const char *shards, const char *out,
                     bool restart, struct sn_trainer **t, struct sn_err *err);
/* Trains to the end (or until sn_trainer_request_stop: then SN_E_CANCELLED after writing a
** checkpoint). Writes metrics.jsonl, checkpoints, final_metrics.json. */
int  sn_trainer_run(struct sn_trainer *t, struct sn_err *err);
/* Forward + backward of the next optimizer step's micro-batches (gradients accumulate in the
** parameters' .grad; nothing is updated, the cursor does not move). For tests. */
int  sn_trainer_accumulate(struct sn_trainer *t, struct sn_train_stats *st, struct sn_err *err);
/* Clip and AdamW (two groups: with and without weight decay) on the current gradients at
** learning rate lr; *grad_norm (NULL ok) is the norm before clipping. For tests. */
int  sn_trainer_update(struct sn_trainer *t, double lr, double *grad_norm, struct sn_err *err);
/* Evaluates a split (SN_SPLIT_VALIDATION, SN_SPLIT_TEST) without gradients. */
int  sn_trainer_evaluate(struct sn_trainer *t, int split, struct sn_train_stats *st,
                         struct sn_err *err);
int64_t sn_trainer_step(const struct sn_trainer *t);          /* optimizer steps done */
int64_t sn_trainer_total_steps(const struct sn_trainer *t);
struct sn_model *sn_trainer_model(struct sn_trainer *t);     /* borrowed */
/* The trained parameters in order and whether weight decay applies to each (borrowed). */
void sn_trainer_params(struct sn_trainer *t, const struct sn_param **p, const bool **decay,
                       size_t *n);
void sn_trainer_free(struct sn_trainer *t); /* NULL is fine */
/* Asks t's running sn_trainer_run to checkpoint and stop after the current step (with several
** ranks, after the first step whose all-reduce carries the request, so that they agree on
** it). Async-signal-safe: it only stores to a flag of t, so a signal handler may call it on a
** trainer its program keeps in a static pointer; NULL is fine. The flag is t's alone: no
** other trainer, and no later one, sees it. */
void sn_trainer_request_stop(struct sn_trainer *t);
/* Whether a weight (HF name, e.g. "model.layers.0.input_layernorm.weight") decays by default:
** false for biases, norm weights and the head (score.weight), true otherwise. */
bool sn_train_default_decay(const char *name);

#endif /* SN_TRAIN_H */
