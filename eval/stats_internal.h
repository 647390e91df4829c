/* eval/stats_internal.h: the per-debate terms shared by the aggregator (stats.c) and
** --explain (stats_explain.c), so that the explanation is computed by the very code that counts.
** Definitions: docs/formats.md. Round r is the file's 0-based index; the SDI formula's
** t = r + 1 runs over 1..T. */
#ifndef SN_EVAL_STATS_INTERNAL_H
#define SN_EVAL_STATS_INTERNAL_H
#include "eval/eval.h"

enum sn_sdi_status { SN_SDI_OK, SN_SDI_NO_TARGET, SN_SDI_EMPTY_DREM, SN_SDI_NO_ROUNDS };

/* classification of an honest slot's transition r -> r+1 */
enum sn_trans {
    SN_TR_NONE = 0,   /* not an honest slot, or did not speak on one side */
    SN_TR_KEPT_CORRECT,
    SN_TR_KEPT_WRONG,
    SN_TR_DC,         /* wrong -> correct */
    SN_TR_DM,         /* changed and ends wrong (includes correct -> wrong) */
    SN_TR_EXCLUDED    /* an unparsed answer on either side */
};

struct sn_deb {
    size_t T, N;                  /* rounds, agent slots */
    /* (N, T) row-major by agent: answer of slot a in round r; NULL = unparsed or silent.
    ** Interned: equal answers are equal pointers. */
    const char **ans;
    signed char *spoke;           /* (N, T) 1 when slot a has a message in round r */
    /* SDI (t = r + 1 in 1..T) */
    enum sn_sdi_status sdi_status;
    double   sdi, fat, asr, kappa;
    size_t   n_drem;
    int     *first_hit;           /* (N) first t with answer = target, T+1 if never; 0 = not
                                  ** in D_rem */
    int     *hits;                /* (N) Σ_t I(a_{k,i,t} = adv_k) over D_rem members */
    /* NAC */
    int     *nac;                 /* (N) distinct parsed answers held */
    double   nac_h_sum;           /* over honest slots with ≥ 1 parsed answer */
    size_t   nac_h_n;
    /* per round */
    int     *cons;                /* (T) distinct parsed honest answers; -1 = none parsed */
    int     *hon_k, *hon_n;       /* (T) honest slots correct / spoke */
    signed char *pan;             /* (T) panel decision correct 1, wrong 0, -1 not defined */
    const char **pan_ans;         /* (T) decision, NULL = no decision */
    signed char *pan_tie;         /* (T) 1 when the top count was tied */
    int     *tr[6];               /* (T) counts by enum sn_trans for r -> r+1 (index T-1 unused) */
    signed char *tr_of;           /* (N, T) class of slot a's transition r -> r+1 */
    /* final decision by the rule, and as recorded */
    int      final_dec;           /* 1 correct, 0 wrong, -1 excluded (no judge recorded) */
    const char *final_ans;
    int      final_rec;           /* final.correct as recorded */
    /* deltas of honest-slot mean and panel accuracy: Δ1 = R1−R0, Δ2 = R2−R1, Δtotal = R_last−R0 */
    double   dh[3], dp[3];
    bool     dh_ok[3], dp_ok[3];
    /* flip: every honest slot correct at R0 (c0), and still every one at R_last (cf) */
    bool     c0, cf;
    uint64_t ans_total, ans_unparsed; /* honest answers over all rounds */
    const char *gold;             /* t->gold, or the interned answer equal to it */
    const char **distinct_;       /* (N, T) scratch: the interned answers */
    /* scratch capacity */
    size_t   cap_N, cap_T;
};

/* Computes every term of one debate into d (reusing its buffers; d starts zeroed). */
int  sn_deb_compute(struct sn_deb *d, const struct sn_traj *t, enum sn_majority majority,
                    struct sn_err *err);
void sn_deb_free(struct sn_deb *d);
/* The panel decision among honest and adversary slots' parsed answers in round r. */
const char *sn_deb_decide(const struct sn_traj *t, const struct sn_deb *d, size_t r,
                          enum sn_majority majority, bool *tie);

/* Accessors for the output writers (stats_output.c). */
size_t      sn_stats_internal_n_by(const struct sn_stats *s);
const char *sn_stats_internal_by(const struct sn_stats *s, size_t i);
struct sn_stats_meta {
    enum sn_majority    majority;
    bool                adv_eff;     /* --adversary-effective */
    uint64_t            n_skipped;
    const char         *first_skip;
    const char *const  *inputs;
    size_t              n_inputs;
    const char         *panel_field;
    const char *const  *panel_names;
    const char         *panel_metric;
};
void sn_stats_internal_meta(const struct sn_stats *s, struct sn_stats_meta *m);

/* Appends v as one CSV field (RFC 4180: quoted when it holds a comma, quote or newline, with
** quotes doubled). Shared by the --csv and --items writers. */
int sn_stats_csv_field(struct sn_buf *b, const char *v, struct sn_err *err);

#endif
