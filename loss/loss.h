/* loss/loss.h: the SentinelNet training loss and the metrics a trainer logs (docs/design.md §4).
**
**   L = L_pref + α · L_align
**   L_pref  = −mean_i log σ(R_ch,i − R_rej,i)
**   L_align = −(Σ_i m_i log σ(R_ch,i − R_ref,i)) / Σ_i m_i
**
** m_i = 1 when tuple i has a reference response and 0 when it has none, so a missing reference
** skips that tuple's alignment term; L_align = 0 when no tuple in the batch has one. α = 0
** turns alignment off (R_ref is then not needed: pass NULL). log σ is computed stably
** (log σ(z) = −(max(−z, 0) + log1p(exp(−|z|)))), so huge margins give finite losses.
**
** Metrics (from the detached values, in double): pairwise accuracy (R_ch > R_rej, strict:
** ties count as wrong, as TRL does), alignment accuracy (R_ch > R_ref over tuples with a
** reference), mean margin (R_ch − R_rej), mean reward of each kind, and counts. */
#ifndef SN_LOSS_H
#define SN_LOSS_H
#include "aten/aten.h"

struct sn_loss_result {
    struct sn_tensor *loss;      /* scalar, differentiable; owned (sn_loss_result_free) */
    double loss_value;           /* L */
    double pref;                 /* L_pref */
    double align;                /* L_align (0 when no tuple has a reference or α = 0) */
    double acc_pref;             /* fraction with R_ch > R_rej */
    double acc_align;            /* fraction with R_ch > R_ref among tuples with a reference;
                                 ** NaN when there are none */
    double margin_mean;          /* mean R_ch − R_rej */
    double reward_chosen_mean;
    double reward_rejected_mean;
    double reward_reference_mean; /* over tuples with a reference; NaN when none */
    int64_t n;                   /* tuples */
    int64_t n_align;             /* tuples whose alignment term counted */
};

/* r_ch, r_rej, r_ref: (B) rewards (any float dtype; r_ref NULL ok when alpha == 0 or no tuple
** has a reference). has_ref: B flags on the host (NULL = every tuple has one when r_ref is
** given). On success out->loss is a new handle. */
int  sn_loss_compute(const struct sn_tensor *r_ch, const struct sn_tensor *r_rej,
                     const struct sn_tensor *r_ref, const bool *has_ref, double alpha,
                     struct sn_loss_result *out, struct sn_err *err);
void sn_loss_result_free(struct sn_loss_result *r); /* frees r->loss; NULL ok */

/* The same quantities on host doubles, no autograd (evaluation, tests, the runtime side). */
int  sn_loss_host(const double *r_ch, const double *r_rej, const double *r_ref,
                  const bool *has_ref, size_t n, double alpha, struct sn_loss_result *out,
                  struct sn_err *err);
/* The causal language-model loss (docs/train.md "Domain-adaptive pretraining (objective
** lm)"): next-token cross-entropy averaged over the n predicted tokens,
**   L_lm = −(1/n) Σ_i log softmax(logits_i)[target_i]
** logits (n, V) are the LM head's outputs at the positions that predict a token (padding and
** each sequence's last token are not among them: the caller selects the rows, so padding is
** masked by construction); targets (n) host ids in [0, V). The log-softmax runs in f32 at
** least (a bf16 logit row would round the normaliser). *loss: a new differentiable scalar;
** *value (NULL ok): its value. */
int  sn_loss_lm(const struct sn_tensor *logits, const int64_t *targets, int64_t n,
                struct sn_tensor **loss, double *value, struct sn_err *err);
/* log σ(z), stable for any finite z. */
double sn_log_sigmoid(double z);

#endif /* SN_LOSS_H */
