/* eval/eval.h: evaluation of debates (docs/design.md §4 "Group metrics").
**
** Group dynamics (`sentinel stats`): SDI, FAT, NAC, consensus per round, accuracy per round and
** its deltas, revision regimes (kept-correct, kept-wrong, DC, DM), flip rate, Wilson 95%
** intervals, mean ± SD over replicates, matched panels. Every definition, convention and
** tie-break is written down in docs/formats.md; the output formats (JSON, CSV) too.
**
** Streaming: sn_stats_add folds one trajectory into per-group accumulators (counts and sums
** only), so memory grows with the number of groups × replicates × rounds × agents, never with
** the number of trajectories. One sn_stats, one thread at a time. */
#ifndef SN_EVAL_H
#define SN_EVAL_H
#include "common/common.h"
#include "data/data.h"

/* ---- small statistics --------------------------------------------------------------------- */

#define SN_Z95 1.959963984540054 /* Φ⁻¹(0.975) */

/* Wilson score interval for k successes in n trials at z = SN_Z95. n = 0 gives NaN, NaN.
** k = 0 gives lo = 0 exactly, k = n gives hi = 1 exactly. */
void sn_wilson(uint64_t k, uint64_t n, double *lo, double *hi);
/* The same interval for the mean k / n of n independent units each scoring in [0, 1] (k may be
** fractional: the tie-neutral task accuracy of docs/eval.md). A [0, 1] variable of mean p has a
** variance of at most p(1 − p), the Bernoulli variance the Wilson score test assumes, so the
** interval is conservative there; for integer k it equals sn_wilson. NaN, NaN when n = 0 or k is
** outside [0, n]. */
void sn_wilson_mean(double k, double n, double *lo, double *hi);

/* Matched panels (percentage points in, percentage points out): honest bonus p_base − p_hon,
** adversarial penalty p_adv − p_base, replacement cost = bonus + penalty, break-even prior
** q* = bonus / (bonus + penalty) as a percentage. q* is undefined (NaN, and q_star_undefined
** says why) when bonus + penalty ≤ 0: replacing an agent then costs nothing or gains, and
** no prior breaks even (docs/formats.md "Matched panels"). */
struct sn_panels {
    double bonus, penalty, cost, q_star;
    const char *q_star_undefined; /* NULL when q_star is defined; a static string otherwise */
};
struct sn_panels sn_panels_compute(double p_base, double p_hon, double p_adv);

/* ---- group statistics --------------------------------------------------------------------- */

/* Panel decision rule (docs/formats.md "Panel decision"). Plurality settles ties with the
** tie rule of the params (data/data.h; default: a tie is no decision, counted wrong). */
enum sn_majority {
    SN_MAJORITY_PLURALITY, /* most votes (sn_vote_plurality); ties by sn_stats_params.tie */
    SN_MAJORITY_STRICT,    /* most votes; a tie is no decision, counted wrong, whatever .tie */
    SN_MAJORITY_JUDGE,     /* the recorded judge's answer (final decision only) */
    SN_MAJORITY_SOURCE,    /* the Collaboration-attack evaluation's vote: unparsed answers are
                           ** one value of their own, a strict plurality of at least 2 wins,
                           ** a winning unparsed value or a tie is no decision */
    SN_MAJORITY_COUNT
};
const char *sn_majority_name(enum sn_majority m);
int sn_majority_parse(const char *s, enum sn_majority *out, struct sn_err *err);

struct sn_stats_params {
    enum sn_majority   majority;
    enum sn_vote_tie   tie;    /* plurality ties; default SN_VOTE_TIE_NONE (no decision) */
    const char *const *by;     /* grouping fields (sn_stats_check_field); NULL/0 = one group */
    size_t             n_by;
    bool adversary_effective;  /* keep only debates whose unit (experiment, dataset, item,
                               ** replicate) sn_stats_scan_effective found effective (two
                               ** passes: scan all, then add all); debates without
                               ** adversaries are always kept */
    const char *panel_field;   /* default "labels.panel" */
    const char *panel_names[3]; /* values of panel_field for baseline, honest-mixed,
                               ** adversarial-mixed; default "baseline", "honest-mixed",
                               ** "adversarial-mixed" */
    const char *panel_metric;  /* a rate metric; default "revision.r0_r1.p_dm_given_change"
                               ** (the first revision step, as the heterogeneous-debate paper's
                               ** §3.1 uses); "revision.all.p_dm_given_change" pools all rounds */
};
struct sn_stats_params sn_stats_default_params(void);

/* Checks one --by field name: SN_OK or SN_E_ARG naming it and the nearest valid one. */
int sn_stats_check_field(const char *field, struct sn_err *err);
/* A NULL-terminated list of the fixed field names (for --help). */
const char *const *sn_stats_field_names(void);

struct sn_stats;
int  sn_stats_create(const struct sn_stats_params *params, struct sn_stats **out,
                     struct sn_err *err);
void sn_stats_free(struct sn_stats *s); /* NULL is fine */

/* Pass 1 of --adversary-effective: records whether the adversaries of each unit (experiment,
** dataset, item id, replicate) were effective: every adversary's round-0 answer parsed and not
** gold, in every debate of the unit. Debates without adversaries (baseline and honest panels,
** interceptor-only AITM debates: interceptors never answer) are not scanned and never
** filtered (docs/formats.md "Adversary-effective filtering"). */
int sn_stats_scan_effective(struct sn_stats *s, const struct sn_traj *t, struct sn_err *err);
/* Folds one trajectory into its group (and replicate, and panel) accumulators. t is not kept. */
int sn_stats_add(struct sn_stats *s, const struct sn_traj *t, struct sn_err *err);
/* --items: one CSV line per debate (its own SDI_k, FAT, ...; docs/formats.md "Per-debate
** rows") for the trajectory t just passed to sn_stats_add (nothing when it was filtered out). */
const char *sn_stats_item_header(void); /* no newline */
int sn_stats_item_row(struct sn_stats *s, const struct sn_traj *t, struct sn_buf *out,
                      struct sn_err *err);
/* Bookkeeping shown in the report: lines skipped by the reader (--skip-bad), input names. */
void sn_stats_note_skipped(struct sn_stats *s, uint64_t n_skipped, const char *first_msg);
int  sn_stats_note_input(struct sn_stats *s, const char *path, struct sn_err *err);

/* One output row: one group × one metric. Kind says how to read value. */
enum sn_stat_kind {
    SN_STAT_RATE,  /* k/n, Wilson 95% interval */
    SN_STAT_MEAN,  /* mean of n values, normal 95% interval mean ± z·sd/√n (n ≥ 2) */
    SN_STAT_COUNT, /* a count; no interval */
    SN_STAT_PP,    /* percentage points (matched panels) */
    SN_STAT_DIFF,  /* a difference of two rates printed beside it (Δ1, Δ2, Δtotal) */
    SN_STAT_KIND_COUNT
};
const char *sn_stat_kind_name(enum sn_stat_kind k);

struct sn_stat_row {
    const char *group;         /* "strategy=simultaneous,n_honest=3" or "all" */
    const char *const *group_values; /* (n_by) */
    const char *metric;        /* "sdi", "revision.r0_r1.dm", ... (docs/formats.md) */
    enum sn_stat_kind kind;
    double   value;            /* NaN = undefined (n = 0, or e.g. no changes for P(DM|D=1)) */
    const char *note;          /* why value is undefined when that is not n = 0, or a warning
                               ** (e.g. a group mixing designs); NULL when none. Static. */
    uint64_t n;                /* denominator / number of values */
    double   k;                /* numerator for rates (NaN otherwise) */
    double   lo, hi;           /* 95% interval; NaN when none */
    uint64_t rep_n;            /* replicates where the metric is defined */
    double   rep_mean, rep_sd; /* over replicates; rep_sd NaN when rep_n < 2 */
};

/* Computes every row. The rows are owned by s and valid until the next call on s. */
int sn_stats_rows(struct sn_stats *s, const struct sn_stat_row **rows, size_t *n_rows,
                  struct sn_err *err);
/* Writes rows as JSON / CSV (docs/formats.md), atomically. */
int sn_stats_write_json(struct sn_stats *s, const char *path, struct sn_err *err);
int sn_stats_write_csv(struct sn_stats *s, const char *path, struct sn_err *err);
/* A readable table for a terminal. full = every row, else the headline metrics. */
int sn_stats_format_table(struct sn_stats *s, bool full, struct sn_buf *out, struct sn_err *err);
uint64_t sn_stats_n_added(const struct sn_stats *s);
uint64_t sn_stats_n_filtered(const struct sn_stats *s); /* dropped by --adversary-effective */

/* --explain: for one debate, each agent's parsed answer per round and how every metric term
** was counted, appended to out as text. */
int sn_stats_explain(const struct sn_traj *t, enum sn_majority majority, enum sn_vote_tie tie,
                     struct sn_buf *out, struct sn_err *err);

#endif
