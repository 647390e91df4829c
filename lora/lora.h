/* lora/lora.h: LoRA linear layers (Hu et al. 2021, arXiv:2106.09685) over aten/ tensors, with
** PEFT's conventions (docs/formats.md "Adapter checkpoint"):
**
**   y = x Wᵀ + b + scale · (dropout(x) Aᵀ) Bᵀ,   A (r, in), B (out, r), scale = alpha / r
**   (rank-stabilized LoRA, PEFT's use_rslora: scale = alpha / √r)
**
** A is initialised Kaiming-uniform with a = sqrt(5) (bound 1/sqrt(in), as nn.Linear and PEFT's
** init_lora_weights=True), B to zero, so a fresh adapter leaves the layer's output unchanged.
** Dropout (inverted, probability `dropout`) applies to the adapter's input only, and only in
** training mode. The base W and b are never modified except by merge/unmerge, and are expected
** not to require grad (frozen).
**
** Merge: W <- W + scale · B A. Unmerge restores W bit for bit: merge keeps a copy of the
** original W (floating-point W + ΔW − ΔW is not W in general), and unmerge copies it back.
**
** Ownership: a struct sn_lora_linear owns its A, B and the saved copy; free with
** sn_lora_linear_free. Tensors passed to forward/merge are borrowed. */
#ifndef SN_LORA_H
#define SN_LORA_H
#include "aten/aten.h"
#include "lora/lora_config.h"

struct sn_lora_linear {
    struct sn_tensor *A;       /* (r, in), requires grad */
    struct sn_tensor *B;       /* (out, r), requires grad */
    double            scale;   /* sn_lora_scale: alpha / r, or alpha / sqrt(r) (rsLoRA) */
    double            dropout;
    bool              merged;
    struct sn_tensor *w_saved; /* copy of W while merged, else NULL */
};

/* Creates A (Kaiming-uniform from gen) and B (zeros) in dtype dt on dev, both requiring grad.
** On failure *l is left empty (all NULL). */
int  sn_lora_linear_init(struct sn_lora_linear *l, int64_t in, int64_t out,
                         const struct sn_lora_config *c, enum sn_dtype dt, struct sn_device dev,
                         struct sn_aten_gen *gen, struct sn_err *err);
void sn_lora_linear_free(struct sn_lora_linear *l); /* frees the tensors; l itself is the
                                                   ** caller's */
/* y = linear(x, W, bias) (+ the adapter term unless merged). gen is needed only when training
** with dropout > 0. l may be NULL (plain linear). */
int  sn_lora_linear_forward(const struct sn_lora_linear *l, const struct sn_tensor *x,
                            const struct sn_tensor *W, const struct sn_tensor *bias,
                            bool training, struct sn_aten_gen *gen, struct sn_tensor **out,
                            struct sn_err *err);
/* residual + linear(x, W) (+ the adapter term): the decoder's o_proj and down_proj with the
** residual connection folded into the same GEMM (no bias: Qwen2 has none there). */
int  sn_lora_linear_forward_add(const struct sn_lora_linear *l, const struct sn_tensor *residual,
                                const struct sn_tensor *x, const struct sn_tensor *W,
                                bool training, struct sn_aten_gen *gen, struct sn_tensor **out,
                                struct sn_err *err);
/* Projections that read the same x (Qwen2's q, k, v; gate, up) as one GEMM over their
** concatenated weights, and their live adapters as two more (x [A_1; A_2; ...]ᵀ, then a
** block-diagonal B added in the same call): the outputs side by side, (..., Σ out_i), each
** y_i = linear(x, W_i, bias_i) + its adapter term as sn_lora_linear_forward computes it.
** l (may be NULL, as may any l[i]), W and bias (NULL, or n entries all set or all NULL) hold n
** entries in the output's column order. Fewer, larger GEMMs: docs/train.md "Speed". */
int  sn_lora_group_forward(const struct sn_lora_linear *const *l,
                           const struct sn_tensor *const *W, const struct sn_tensor *const *bias,
                           size_t n, const struct sn_tensor *x, bool training,
                           struct sn_aten_gen *gen, struct sn_tensor **out, struct sn_err *err);
/* W (out, in) in place: W += scale · B A (under no-grad), keeping a copy for unmerge.
** Merging twice is SN_E_ARG. */
int  sn_lora_merge(struct sn_lora_linear *l, struct sn_tensor *W, struct sn_err *err);
/* Restores W's original bits. Unmerging an unmerged layer is SN_E_ARG. */
int  sn_lora_unmerge(struct sn_lora_linear *l, struct sn_tensor *W, struct sn_err *err);
/* ΔW = scale · B A as a new tensor (out, in) (for export). */
int  sn_lora_delta(const struct sn_lora_linear *l, struct sn_tensor **out, struct sn_err *err);

#endif /* SN_LORA_H */
