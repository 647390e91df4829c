/* train/trainer_internal.h: what the trainer's sources share (not for other modules, nor for the
** rest of train/). The trainer is one object split by idea (its settings and their recipe
** section: train/recipe.h):
**   trainer_batches.c  the shards of each split, the data order, a micro-batch's rows
**   trainer_optim.c    the learning-rate schedule, the two weight-decay groups, clip and AdamW
**   trainer_ckpt.c     settings, checkpoints and exact resume, metrics.jsonl
**   trainer_step.c     one optimizer step's forward and backward, evaluation
**   trainer_tb.c       TensorBoard event files (train.report_to "tensorboard")
**   trainer_lm.c       the lm objective: the train split's sequences and its step
**   trainer.c          the object (open in parts, free, stop request) and the loop
** Keys and defaults: docs/train.md; checkpoint and metrics layouts: docs/formats.md
** ("Training output directory"). */
#ifndef SN_TRAINER_INTERNAL_H
#define SN_TRAINER_INTERNAL_H
#include "train/train.h"
#include "train/train_internal.h"

#include "shard/shard.h"

#include <limits.h>
#include <signal.h>

/* The tuples of one split over its shards. */
struct sn_tset {
    struct sn_shard_reader **r;
    char                   **name;   /* file names, for messages */
    size_t                   n_r;
    uint32_t                *shard;  /* tuple k -> reader */
    uint32_t                *local;  /* tuple k -> index in its shard */
    size_t                   n;
};

/* One forward's sequences [chosen × b; rejected × b; reference × k]: padded, one per row,
** right-padded to T; or packed (B = 1, T = the tokens of the micro-batch; docs/train.md,
** "Packed and shared-prefix batches"), the rewards read out in the same order. */
struct sn_rows {
    int32_t *ids, *mask;
    size_t   cap;
    int64_t  b, k, T;
    bool     has_ref[4096];
    int64_t  ref_of[4096];   /* row of the j-th reference -> its tuple */
    int64_t  tokens;         /* tokens the forward processes (padding excluded) */
    bool     packed;
    int32_t *pids, *spans, *pos; /* packed: (T) ids, (T, 3) attention spans, (T) positions */
    size_t   pcap;
    int64_t  readout[3 * 4096]; /* packed: token of each sequence's reward */
};

/* One sequence of the lm objective: field (chosen or rejected) of train tuple `tuple`. */
struct sn_lm_seq {
    uint32_t tuple;
    uint8_t  field;
};

struct sn_trainer {
    struct sn_train_params p;
    bool               lm;                  /* train.objective "lm" (trainer_lm.c) */
    struct sn_lm_seq  *lm_seq;              /* its sequences, identical ones once */
    size_t             n_lm;
    int64_t           *lm_at, *lm_tgt;      /* the tokens that predict, and what they predict */
    int32_t           *lm_ids, *lm_mask;    /* a micro-batch's padded rows (in lm_at's block) */
    size_t             lm_cap;
    char              *out, *shards;
    char               base_path[PATH_MAX]; /* what adapter_config.json names */
    char               base_dir[PATH_MAX];  /* train.base a training run: its last checkpoint */
    char              *tokenizer;           /* resolved tokenizer.json path or NULL */
    char               tok_hash[65];
    struct sn_manifest *man;
    struct sn_tset     data[SN_SPLIT_COUNT];
    int64_t            vocab;
    struct sn_model   *m;
    struct sn_param   *params;
    bool              *decay;
    size_t             n_params;
    struct sn_adamw   *opt[2];              /* [0] decayed, [1] not */
    struct sn_param   *group[2];
    size_t             n_group[2];
    bool               full;
    int64_t            step, total, per_epoch, G;
    size_t            *perm;                /* order of the current epoch */
    int64_t            perm_epoch;
    struct sn_rows     rows;
    int64_t            tokens_seen;
    cJSON             *settings;
    double             best_value;
    char               best_name[64];
    int64_t            last_saved;
    struct sn_device   dev;                 /* train.device, resolved (cuda: LOCAL_RANK) */
    struct sn_dist    *dist;                /* data parallel group (a world of 1 by default) */
    int                rank, world;
    bool               stop_all;            /* some rank was asked to stop */
    FILE              *tb;                  /* TensorBoard events (rank 0), opened on first use */
    char               tb_path[PATH_MAX];
    /* sn_trainer_request_stop's flag: set from a signal handler, so only stored to there */
    volatile sig_atomic_t stop_requested;
};

/* ---- trainer_batches.c --------------------------------------------------------------------- */

/* Opens the shards of one split into s (zeroed first; sn_tset_free frees a half-opened one);
** *hash (in/out) is the tokenizer hash every shard must carry (empty = take the first shard's),
** *vocab grows to the largest vocabulary of the shards. */
int  sn_tset_open(struct sn_tset *s, const struct sn_manifest *man, enum sn_split split,
                  char hash[65], int64_t *vocab, struct sn_err *err);
void sn_tset_free(struct sn_tset *s);
/* Builds the rows of tuples[0..b) of s (b <= 4096) into R, growing R's buffers. */
int  sn_rows_build(struct sn_rows *R, struct sn_tset *s, const size_t *tuples, int64_t b,
                   bool with_ref, int64_t max_pos, enum sn_batching mode, struct sn_err *err);
void sn_rows_free(struct sn_rows *R);
/* Tuple indices (into the train set) of step s, micro-batch k of the global step, into
** out[0..micro_batch). */
int  sn_trainer_step_tuples(struct sn_trainer *t, int64_t s, int64_t k, size_t *out,
                            struct sn_err *err);
/* Sorts tu[0..n) (train-set tuples) longest first, stably (length bucketing). */
int  sn_trainer_sort_by_length(struct sn_trainer *t, size_t *tu, int64_t n, bool with_ref,
                               struct sn_err *err);
/* "shard#i, ..." of n train-set tuples into buf (cut at cap), for messages. */
void sn_trainer_tuple_ids(struct sn_trainer *t, const size_t *tuples, int64_t n, char *buf,
                          size_t cap);

/* What the data order permutes: train tuples, or the lm objective's sequences. */
size_t sn_trainer_n_items(const struct sn_trainer *t);

/* ---- trainer_lm.c -------------------------------------------------------------------------- */

/* The lm objective's sequences (t->lm_seq) from the train split alone: every chosen and
** rejected sequence of at least 2 tokens, identical ones once, in tuple order. */
int  sn_trainer_lm_open(struct sn_trainer *t, struct sn_err *err);
/* sn_trainer_accumulate for the lm objective (its step uses trainer_step.c's reductions). */
int  sn_trainer_lm_accumulate(struct sn_trainer *t, struct sn_train_stats *st,
                              struct sn_err *err);
void sn_trainer_lm_free(struct sn_trainer *t);

/* ---- trainer_step.c ------------------------------------------------------------------------ */

/* Reseeds the model's dropout generator for micro-batch k of the current step (on this rank):
** sn_seed_derive(seed, "dropout", (step·grad_accum + k)·world + rank), so a resumed run draws
** the same masks (docs/formats.md "Training output directory"). */
int  sn_trainer_seed_dropout(struct sn_trainer *t, int64_t k, struct sn_err *err);
/* sn_trainer_accumulate for the reward objective (trainer.c picks by objective). */
int  sn_trainer_reward_accumulate(struct sn_trainer *t, struct sn_train_stats *st,
                                  struct sn_err *err);

/* Sums a host buffer over the ranks (in place; no-op in a world of 1). */
int  sn_trainer_reduce_host(struct sn_trainer *t, double *buf, size_t n, struct sn_err *err);
/* Sums every parameter's gradient over the ranks. */
int  sn_trainer_reduce_grads(struct sn_trainer *t, struct sn_err *err);

/* ---- trainer_optim.c ----------------------------------------------------------------------- */

/* (Re)builds t->params, t->decay, the two groups and their AdamW optimizers from t->m. */
int  sn_trainer_setup_params(struct sn_trainer *t, struct sn_err *err);

/* ---- trainer_ckpt.c ------------------------------------------------------------------------ */

int  sn_train_path_join(char *buf, size_t n, const char *a, const char *b, struct sn_err *err);
bool sn_train_exists(const char *path);
int  sn_train_copy_file(const char *from, const char *to, struct sn_err *err);
/* t->settings: the flat settings object whose equality allows a resume. */
int  sn_trainer_settings_init(struct sn_trainer *t, struct sn_err *err);
/* restart: deletes out's checkpoints, latest, metrics and settings (rank 0). */
void sn_trainer_restart_wipe(struct sn_trainer *t);
/* An existing run in out (settings_path exists): refuses other settings, else finds the newest
** checkpoint that verifies into resume_dir (PATH_MAX; left as is when none) and its
** sentinel_state.json (trainer_state.json before schema /2) into *state (caller deletes). */
int  sn_trainer_find_resume(struct sn_trainer *t, const char *settings_path, char *resume_dir,
                            cJSON **state, struct sn_err *err);
/* Restores the optimizer, the step, the token count and the best checkpoint from resume_dir
** and its state (after the model and the parameter groups are set up from it). */
int  sn_trainer_resume_from(struct sn_trainer *t, const char *resume_dir, const cJSON *state,
                            struct sn_err *err);
int  sn_trainer_write_checkpoint(struct sn_trainer *t, struct sn_err *err);
/* Appends one line to out/metrics.jsonl (rank 0; others do nothing). */
int  sn_trainer_log_line(struct sn_trainer *t, const cJSON *o, struct sn_err *err);
/* Drops metrics lines of steps after `step` (a resumed run rewrites them). */
int  sn_trainer_trim_metrics(struct sn_trainer *t, int64_t step, struct sn_err *err);
/* ---- trainer_tb.c -------------------------------------------------------------------------- */

/* Appends metrics object o (a metrics.jsonl line) as one Event to OUT/runs/events.out.tfevents.*
** when train.report_to has "tensorboard" (rank 0; otherwise nothing). */
int  sn_trainer_tb_log(struct sn_trainer *t, const cJSON *o, struct sn_err *err);
void sn_trainer_tb_close(struct sn_trainer *t);

/* A metrics object of s (keys prefixed), NULL when out of memory; caller deletes. */
cJSON *sn_trainer_stats_json(const struct sn_train_stats *s, const char *prefix, bool train);

#endif
