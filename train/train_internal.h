/* train/train_internal.h: what the train/ sources share (not for other modules). */
#ifndef SN_TRAIN_INTERNAL_H
#define SN_TRAIN_INTERNAL_H
#include "train/train.h"
#include "hf/hf.h"

struct sn_model_layer {
    struct sn_tensor      *ln1, *ln2;                /* (D) input / post-attention RMSNorm */
    struct sn_tensor      *w[SN_LORA_TARGET_COUNT];  /* (out, in) per projection, frozen */
    struct sn_tensor      *bq, *bk, *bv;             /* (Hq·Dh), (Hkv·Dh), (Hkv·Dh) */
    struct sn_lora_linear *lora[SN_LORA_TARGET_COUNT]; /* NULL when not targeted */
};

/* What a checkpointed forward leaves for its backward's recompute (train/model.c). */
struct layer_ctx;
struct sn_fwd_state {
    struct sn_tensor    *cos, *sin, *keep; /* RoPE tables (B, T, Dh), mask (B, T) */
    struct sn_tensor    *spans;            /* packed rows (B, T, 3) or NULL */
    struct sn_tensor    *ro, *ro_win, *ro_keep; /* the last layer's read-out tokens, key
                                                ** windows (or NULL) and masks */
    struct layer_ctx    *ctx;              /* one per layer */
    struct sn_fwd_state *next;
};

struct sn_model {
    struct sn_model_config cfg;
    struct sn_model_params p;
    struct sn_tensor      *embed;   /* (V, D) */
    struct sn_model_layer *layers;  /* num_hidden_layers */
    struct sn_tensor      *norm;    /* (D) final RMSNorm */
    struct sn_tensor      *head;    /* (1, D) score.weight, requires grad; NULL = none */
    struct sn_tensor      *lm_head; /* untied LM head, kept for the lm objective only
                                    ** (keep_lm_head); else NULL (shape checked at load) */
    bool                   training;
    bool                   has_lora;
    struct sn_lora_config  lora_cfg;
    struct sn_aten_gen    *gen;     /* LoRA dropout */
    struct sn_model_profile *prof;  /* NULL = not profiling */
    struct sn_fwd_state   *fwd;     /* checkpointed forwards awaiting their backward */
    char                 **names;   /* cached PEFT names of the trainable params */
    size_t                 n_names;
};

enum sn_slot_kind { SN_SLOT_MATRIX, SN_SLOT_NORM, SN_SLOT_BIAS, SN_SLOT_HEAD };

/* One named weight of the HF layout and where it lives in the model. */
struct sn_model_slot {
    char               name[128];
    enum sn_slot_kind  kind;
    struct sn_tensor **dst;
    int                ndim;
    int64_t            shape[2];
};

/* Every HF weight name of m in file order (embed, layers, norm[, score]); *out: sn_free. */
int  sn_model_slots(struct sn_model *m, bool with_head, struct sn_model_slot **out, size_t *n,
                    struct sn_err *err);
const char *sn_model_proj_path(enum sn_lora_target t); /* "self_attn.q_proj", "mlp.up_proj" */
void sn_model_proj_shape(const struct sn_model_config *c, enum sn_lora_target t,
                         int64_t *out_f, int64_t *in_f);
void sn_model_names_free(struct sn_model *m);
/* model_alloc for the loaders (hf.c): an empty model (no tensors) for a checked config. */
int  sn_model_alloc(const struct sn_model_config *c, const struct sn_model_params *p,
                    struct sn_model **out, struct sn_err *err);

/* One safetensors tensor (float dtype, exact shape checked; errors name file and tensor) into a
** new tensor in the model's compute dtype and device. */
int  sn_model_load_tensor(const struct sn_st_tensor *t, const char *file, int ndim,
                          const int64_t *shape, const struct sn_model_params *p,
                          struct sn_tensor **out, struct sn_err *err);

#endif
