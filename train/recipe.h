/* train/recipe.h: the recipe's `train` section, without libtorch (docs/design.md §3, library
** train_recipe): the settings of a training run (struct sn_train_params) with their defaults,
** the section's decoder with the Hugging Face names it accepts (docs/train.md "The `train`
** section", "Hugging Face names"), the rule that decides full or LoRA training, and which
** checkpoint of a training output directory the later stages take (docs/formats.md "Training
** output directory"). `sentinel run` checks a recipe with it before any stage runs; the
** trainer (train/train.h) runs what it decodes. */
#ifndef SN_TRAIN_RECIPE_H
#define SN_TRAIN_RECIPE_H
#include "common/common.h"
#include "aten/dtype.h"
#include "lora/lora_config.h"

/* ---- AdamW settings (Loshchilov & Hutter, arXiv:1711.05101; torch.optim.AdamW) ------------- */

struct sn_adamw_params {
    double beta1, beta2, eps, weight_decay;
};
struct sn_adamw_params sn_adamw_default_params(void); /* 0.9, 0.999, 1e-8, 0.01 (torch) */

/* ---- learning-rate schedule ---------------------------------------------------------------- */

/* Learning-rate schedules (the lambdas of transformers' get_{constant,linear,cosine}_schedule_
** with_warmup). The lr used by optimizer step s (0-based) is
**   s < W:  lr · s / W                      (linear warmup from 0, as HF)
**   else    p = (s − W) / max(1, N − W)
**           constant: lr;  linear: lr · max(0, 1 − p);
**           cosine:   lr · (m + (1 − m) · 0.5 · (1 + cos(π p))),  m = min_ratio (HF: 0)
** with W = warmup steps and N = total steps. */
enum sn_lr_kind { SN_LR_CONSTANT, SN_LR_LINEAR, SN_LR_COSINE, SN_LR_KIND_COUNT };
struct sn_lr_schedule {
    enum sn_lr_kind kind;
    double          lr;
    int64_t         warmup_steps;
    int64_t         total_steps;
    double          min_ratio;
};
const char *sn_train_sched_name(enum sn_lr_kind k); /* "constant", "linear", "cosine" */

/* ---- the train section --------------------------------------------------------------------- */

enum sn_train_mode { SN_TRAIN_MODE_DEFAULT, SN_TRAIN_FULL, SN_TRAIN_LORA };

/* How a micro-batch's sequences become rows (docs/train.md, "Packed and shared-prefix
** batches"). All three give the same rewards and gradients up to rounding
** (tests/test_train_packing.c). */
enum sn_batching {
    SN_BATCH_PADDED,        /* one sequence per row, right-padded to the longest */
    SN_BATCH_PACKED,        /* every sequence in one row, block-diagonal causal mask */
    SN_BATCH_SHARED_PREFIX, /* packed, and a tuple's common prefix encoded once */
    SN_BATCH_COUNT
};
const char *sn_batching_name(enum sn_batching b); /* "padded", "packed", "shared_prefix" */

/* What a run trains (docs/train.md): the reward model of docs/design.md §4, or a causal
** language model on the train split's sequences ("Domain-adaptive pretraining (objective
** lm)"), whose checkpoint a reward run then takes as its train.base. */
enum sn_train_objective { SN_OBJECTIVE_REWARD, SN_OBJECTIVE_LM };

/* Every setting of the recipe's `train` section (docs/train.md lists keys and defaults). */
struct sn_train_params {
    const char *base;            /* HF model directory, "tiny", "mini" or "small" (seeded) */
    enum sn_train_objective objective; /* "reward" (default) or "lm" */
    int64_t  pretrain_steps;     /* `sentinel run`: > 0 runs an lm stage of this many steps
                                 ** before the reward training, its checkpoint the base */
    double   pretrain_lr;        /* that stage's lr (0 = train.lr's rule) */
    enum sn_train_mode mode;     /* DEFAULT: full for a seeded init, lora for an HF base */
    struct sn_lora_config lora;  /* paper: r 64, alpha 128, dropout 0.05 */
    struct sn_adamw_params adamw;
    bool     decay_all;          /* weight decay also on biases, norms and the head */
    struct sn_lr_schedule sched; /* total_steps is derived (epochs or max_steps) */
    double   warmup_ratio;       /* > 0: warmup = ceil(ratio · total), overrides warmup_steps */
    int64_t  epochs;             /* used when max_steps is 0 */
    int64_t  max_steps;          /* 0 = epochs × steps per epoch */
    int64_t  micro_batch;        /* tuples per forward */
    int64_t  grad_accum;         /* micro-batches per optimizer step */
    double   max_grad_norm;      /* clip by global norm; 0 = off (norm still logged) */
    double   alpha;              /* weight of the alignment loss */
    double   center_rewards;     /* TRL center_rewards_coefficient: + c·mean((r_ch + r_rej)²) */
    uint64_t seed;
    enum sn_dtype dtype;         /* F32 (default), F64, or BF16: bf16 GEMMs with f32 master
                                 ** weights, optimizer state and loss (docs/train.md) */
    bool     grad_checkpoint;
    const char *device;          /* "cpu" (default), "cuda" (each rank takes cuda:LOCAL_RANK)
                                 ** or "cuda:N"; CUDA needs a CUDA libtorch (docs/train.md) */
    const char *dist_backend;    /* "auto" (default: Gloo on the CPU, NCCL on CUDA), "gloo"
                                 ** (also on CUDA: several ranks on one GPU) or "nccl"; a named
                                 ** backend opens a group of one too under a launcher */
    int      threads;            /* intra-op threads; 0 = libtorch's default */
    int64_t  eval_every;         /* steps; 0 = only at the end */
    int64_t  eval_batch;         /* tuples per eval forward */
    int64_t  save_every;         /* steps; 0 = only at the end (and on SIGINT/SIGTERM) */
    int64_t  keep_last;          /* checkpoints kept (besides the best); 0 = all */
    int64_t  log_every;          /* metrics.jsonl line every N steps (1) */
    const char *best_metric;     /* eval metric for the best checkpoint ("eval_accuracy") */
    bool     best_greater;       /* higher is better (true, false for eval_loss) */
    const char *tokenizer;       /* tokenizer.json (copied next to seeded base and checkpoints) */
    const char *init_adapter;    /* continue from this adapter (lora mode) */
    enum sn_batching batching;   /* rows of a micro-batch (padded) */
    bool     length_bucketing;   /* sort each step's tuples by length before splitting it
                                 ** into micro-batches (same step gradient, less padding) */
    int      progress_mode;      /* sn_progress force_mode: 0 auto, 2 plain, 3 silent */
    bool     tensorboard;        /* train.report_to has "tensorboard": event files in OUT/runs
                                 ** beside metrics.jsonl (always written; docs/train.md) */
    /* Called after every optimizer step, before its evaluation and checkpoint; NULL = none. */
    void   (*on_step)(void *user, int64_t step);
    void    *user;
};
struct sn_train_params sn_train_default_params(void);
/* Reads recipe["train"] (absent = defaults) into p: every key's type and range, the names of
** mode, schedule, dtype and batching, and train.lora. Hugging Face TrainingArguments / TRL
** RewardConfig names are accepted for their sentinel keys (docs/train.md "Hugging Face
** names"): both names of one setting given is an error, a name sentinel cannot honour is
** refused with the reason, and an unknown key names the nearest valid one. Messages start
** "recipe: train.<key>" (a caller prefixes the recipe's file). Strings in p are borrowed from
** recipe or static. */
int sn_train_params_from_recipe(const cJSON *recipe, struct sn_train_params *p,
                                struct sn_err *err);
/* A `--set train.<name>=V` replaces its setting whatever name the recipe file gave it: after
** sn_recipe_load(path, sets, n, &recipe), drops from recipe's train section each key of the
** file that names the same setting as one of sets under another name (lr in the file, --set
** train.learning_rate=...), so that only giving both names on the command line is an error.
** The commands that load a recipe with --set call it (sentinel run passes the same --set to
** every stage). */
void sn_train_recipe_sets_win(cJSON *recipe, const char *const *sets, size_t n);
/* Appends one line per Hugging Face name used in recipe's train section to b, saying the
** sentinel key it sets and the value p (decoded from recipe) holds for it:
** "  train.learning_rate = 0.0001  ->  train.lr = 0.0001". Nothing when none is used. */
int sn_train_recipe_aliases(const cJSON *recipe, const struct sn_train_params *p,
                            struct sn_buf *b, struct sn_err *err);

/* The base is a seeded initialisation ("tiny", "mini", "small") rather than a model
** directory. */
bool sn_train_base_is_seeded(const char *base);
/* Whether p trains every parameter (full mode) rather than LoRA adapters and the head: mode
** "full", objective "lm" (it trains every weight), or no mode on a seeded base (LoRA on a
** random frozen base learns little). The one
** place this rule lives (docs/train.md "What trains"). */
bool sn_train_is_full(const struct sn_train_params *p);
const char *sn_train_objective_name(enum sn_train_objective o); /* "reward", "lm" */

/* ---- which checkpoint the stages after training take --------------------------------------- */

/* What a checkpoint directory holds, decided from its files (docs/formats.md "Checkpoint"):
** adapter_config.json + adapter_model.safetensors, or config.json + model.safetensors (or
** model.safetensors.index.json). */
enum sn_ckpt_kind { SN_CKPT_ADAPTER, SN_CKPT_FULL };
enum sn_ckpt_which { SN_CKPT_BEST, SN_CKPT_LAST };
struct sn_ckpt_choice {
    char dir[4096];           /* the checkpoint (or model) directory */
    char base[4096];          /* adapter: the model it applies to (adapter_config.json's
                              ** base_model_name_or_path); full: dir itself */
    enum sn_ckpt_kind kind;
    bool best;                /* dir is the run's best checkpoint */
};
/* path is a training output directory (`sentinel train -o`: latest, final_metrics.json) or a
** checkpoint or model directory. A training directory gives its best checkpoint
** (final_metrics.json's best_checkpoint, else that of the last checkpoint's
** sentinel_state.json or transformers-shaped trainer_state.json) for
** SN_CKPT_BEST, falling back to the last one when no best was recorded, and its last one
** (`latest`) for SN_CKPT_LAST; any other directory is taken as it is. Then the kind from the
** files. SN_E_ARG naming the path and what is missing when neither kind is there. The one
** place this choice is made: `sentinel run`, export, score and eval call it. */
int sn_train_checkpoint_pick(const char *path, enum sn_ckpt_which which,
                             struct sn_ckpt_choice *out, struct sn_err *err);

#endif /* SN_TRAIN_RECIPE_H */
