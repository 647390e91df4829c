/* eval/stats.c: streaming aggregation of group-dynamics metrics (docs/design.md §4;
** definitions and every convention in docs/formats.md).
**
** Each trajectory's terms (stats_debate.c) are added to three kinds of accumulator: its group
** (the --by key), the same group's accumulator for its replicate index (for mean ± SD over
** replicates), and, when it carries one of the three panel values, a hidden (group, panel)
** accumulator for the matched-panel arithmetic. Accumulators hold counts and sums only. */
#include "eval/stats_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- small statistics ---- */

void sn_wilson(uint64_t k, uint64_t n, double *lo, double *hi)
{
    if (n == 0 || k > n) {
        *lo = *hi = NAN;
        return;
    }
    sn_wilson_mean((double)k, (double)n, lo, hi);
}

void sn_wilson_mean(double k, double n, double *lo, double *hi)
{
    if (!(n > 0) || !(k >= 0) || k > n) {
        *lo = *hi = NAN;
        return;
    }
    /* Wilson (1927): (p + z²/2n ± z √(p(1−p)/n + z²/4n²)) / (1 + z²/n) */
    double z = SN_Z95, nn = n, p = k / nn, z2 = z * z;
    double den = 1.0 + z2 / nn;
    double center = (p + z2 / (2.0 * nn)) / den;
    double half = z * sqrt(p * (1.0 - p) / nn + z2 / (4.0 * nn * nn)) / den;
    *lo = k == 0 ? 0.0 : fmax(0.0, center - half);
    *hi = k == n ? 1.0 : fmin(1.0, center + half);
}

struct sn_panels sn_panels_compute(double p_base, double p_hon, double p_adv)
{
    struct sn_panels p;
    p.bonus = p_base - p_hon;
    p.penalty = p_adv - p_base;
    p.cost = p.bonus + p.penalty;
    p.q_star = NAN;
    p.q_star_undefined = NULL;
    if (isnan(p.cost))
        p.q_star_undefined = "a panel rate is undefined";
    else if (p.cost <= 0.0)
        /* bonus / (bonus + penalty) with a denominator ≤ 0 is no prior: replacing costs
        ** nothing or gains, so every prior (or none) breaks even */
        p.q_star_undefined = "bonus + penalty <= 0: replacement never costs, no break-even prior";
    else
        p.q_star = 100.0 * p.bonus / p.cost;
    return p;
}

static const char *const majority_names[] = {"plurality", "strict", "judge", "source"};
_Static_assert(sizeof majority_names / sizeof majority_names[0] == SN_MAJORITY_COUNT,
               "majority names out of sync");

const char *sn_majority_name(enum sn_majority m)
{
    return (unsigned)m < SN_MAJORITY_COUNT ? majority_names[m] : "?";
}

int sn_majority_parse(const char *s, enum sn_majority *out, struct sn_err *err)
{
    for (int i = 0; i < SN_MAJORITY_COUNT; i++) {
        if (!strcmp(s, majority_names[i])) {
            *out = (enum sn_majority)i;
            return SN_OK;
        }
    }
    return sn_err_set(err, SN_E_ARG, "--majority: unknown rule '%s' (expected plurality, "
                                     "strict, judge or source)", s);
}

static const char *const kind_names[] = {"rate", "mean", "count", "pp", "diff"};
_Static_assert(sizeof kind_names / sizeof kind_names[0] == SN_STAT_KIND_COUNT, "kinds");

const char *sn_stat_kind_name(enum sn_stat_kind k)
{
    return (unsigned)k < SN_STAT_KIND_COUNT ? kind_names[k] : "?";
}

/* ---- grouping fields ---- */

enum field_kind {
    F_SCENARIO, F_STRATEGY, F_TOPOLOGY, F_DATASET, F_N_AGENTS, F_N_HONEST, F_N_ADVERSARIES,
    F_N_INTERCEPTORS, F_REPLICATE, F_DEFENSE, F_ATTACK, F_EXPERIMENT, F_TASK, F_SUBJECT,
    F_ITEM_ID, F_BACKEND, F_MODEL, F_PANEL, F_N_COLLABORATORS, F_FIXED_COUNT,
    F_MODEL_I = F_FIXED_COUNT, F_PERSONA_I, F_ROLE_I, F_LABEL
};
static const char *const field_names[] = {
    "scenario", "strategy", "topology", "dataset", "n_agents", "n_honest", "n_adversaries",
    "n_interceptors", "replicate", "defense", "attack", "experiment", "task", "subject",
    "item_id", "backend", "model", "panel", "n_collaborators", NULL};
_Static_assert(sizeof field_names / sizeof field_names[0] == F_FIXED_COUNT + 1, "fields");

static const char *const field_help[] = {
    "scenario", "strategy", "topology", "dataset", "n_agents", "n_honest", "n_collaborators",
    "n_adversaries", "n_interceptors", "replicate", "defense", "attack", "experiment", "task",
    "subject", "item_id", "backend", "model", "model[i]", "persona[i]", "role[i]", "panel",
    "labels.KEY", NULL};

const char *const *sn_stats_field_names(void)
{
    return field_help;
}

struct field {
    enum field_kind kind;
    long            slot;  /* for *_I */
    char           *label; /* for F_LABEL (and F_PANEL: "panel") */
    char           *name;
};

static int parse_field(const char *s, struct field *f, struct sn_err *err)
{
    memset(f, 0, sizeof *f);
    for (int i = 0; field_names[i]; i++) {
        if (!strcmp(s, field_names[i])) {
            f->kind = (enum field_kind)i;
            if (f->kind == F_PANEL) {
                f->kind = F_LABEL;
                f->label = sn_strdup("panel");
                if (!f->label)
                    return sn_err_set(err, SN_E_NOMEM, "out of memory");
            }
            goto named;
        }
    }
    if (!strncmp(s, "labels.", 7) && s[7]) {
        f->kind = F_LABEL;
        f->label = sn_strdup(s + 7);
        if (!f->label)
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        goto named;
    }
    static const struct { const char *pfx; enum field_kind k; } slot_fields[] = {
        {"model[", F_MODEL_I}, {"persona[", F_PERSONA_I}, {"role[", F_ROLE_I}};
    for (size_t i = 0; i < sizeof slot_fields / sizeof slot_fields[0]; i++) {
        size_t L = strlen(slot_fields[i].pfx);
        if (!strncmp(s, slot_fields[i].pfx, L)) {
            char *end;
            errno = 0;
            long v = strtol(s + L, &end, 10);
            if (end == s + L || errno || v < 0 || v > 1000000 || strcmp(end, "]") != 0)
                return sn_err_set(err, SN_E_ARG, "--by: bad field '%s' (expected %s<slot>], "
                                                 "e.g. %s0])", s, slot_fields[i].pfx,
                                  slot_fields[i].pfx);
            f->kind = slot_fields[i].k;
            f->slot = v;
            goto named;
        }
    }
    {
        const char *best = NULL;
        size_t bd = (size_t)-1;
        for (int i = 0; field_help[i]; i++) {
            size_t d = sn_edit_distance(s, field_help[i]);
            if (d < bd) {
                bd = d;
                best = field_help[i];
            }
        }
        if (best && bd <= 3)
            return sn_err_set(err, SN_E_ARG, "--by: unknown field '%s' (did you mean '%s'?)", s,
                              best);
        return sn_err_set(err, SN_E_ARG, "--by: unknown field '%s' (fields: scenario, strategy,"
                                         " topology, dataset, n_agents, n_honest, n_adversaries,"
                                         " model[i], panel, labels.KEY, replicate, defense, ...)",
                          s);
    }
named:
    f->name = sn_strdup(s);
    if (!f->name) {
        sn_free(f->label);
        f->label = NULL; /* the caller may free a half-parsed field */
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    }
    return SN_OK;
}

int sn_stats_check_field(const char *field, struct sn_err *err)
{
    struct field f;
    int rc = parse_field(field, &f, err);
    if (!rc) {
        sn_free(f.label);
        sn_free(f.name);
    }
    return rc;
}

#define NONE_VALUE "(none)"

/* The value of field f for t, appended to b. */
static int field_value(const struct field *f, const struct sn_traj *t, struct sn_buf *b,
                       struct sn_err *err)
{
    char num[64];
    const char *v = NULL;
    switch (f->kind) {
    case F_SCENARIO: v = t->scenario; break;
    case F_STRATEGY: v = t->strategy; break;
    case F_TOPOLOGY: v = t->topology_name; break;
    case F_DATASET: v = t->dataset; break;
    case F_N_AGENTS: snprintf(num, sizeof num, "%zu", t->n_agents); v = num; break;
    case F_N_HONEST:
    case F_N_COLLABORATORS: snprintf(num, sizeof num, "%zu", t->n_honest); v = num; break;
    case F_N_ADVERSARIES: snprintf(num, sizeof num, "%zu", t->n_adversary); v = num; break;
    case F_N_INTERCEPTORS: snprintf(num, sizeof num, "%zu", t->n_interceptor); v = num; break;
    case F_REPLICATE: snprintf(num, sizeof num, "%lld", (long long)t->replicate); v = num; break;
    case F_DEFENSE: v = t->defense_name; break;
    case F_ATTACK: v = t->attack_name; break;
    case F_EXPERIMENT: v = t->experiment; break;
    case F_TASK: v = t->task_name; break;
    case F_SUBJECT: v = t->subject; break;
    case F_ITEM_ID: v = t->item_id; break;
    case F_BACKEND: v = t->backend; break;
    case F_MODEL: { /* distinct models in slot order, joined by '+' */
        size_t start = b->len;
        for (size_t a = 0; a < t->n_agents; a++) {
            const char *m = t->agents[a].model ? t->agents[a].model : NONE_VALUE;
            bool seen = false;
            for (size_t j = 0; j < a && !seen; j++)
                seen = !strcmp(t->agents[j].model ? t->agents[j].model : NONE_VALUE, m);
            if (seen)
                continue;
            if ((b->len > start && sn_buf_puts(b, "+", err)) || sn_buf_puts(b, m, err))
                return err->code;
        }
        return SN_OK;
    }
    case F_MODEL_I:
        v = (size_t)f->slot < t->n_agents ? t->agents[f->slot].model : NULL;
        break;
    case F_PERSONA_I:
        v = (size_t)f->slot < t->n_agents ? t->agents[f->slot].persona : NULL;
        break;
    case F_ROLE_I:
        v = (size_t)f->slot < t->n_agents ? sn_role_name(t->agents[f->slot].role) : NULL;
        break;
    case F_LABEL: v = sn_traj_label(t, f->label, num, sizeof num); break;
    default: break;
    }
    return sn_buf_puts(b, v ? v : NONE_VALUE, err);
}

/* ---- accumulators ---- */

struct macc { /* Welford: count, mean, sum of squared deviations */
    uint64_t n;
    double   mean, m2;
};

static void macc_add(struct macc *m, double x)
{
    m->n++;
    double d = x - m->mean;
    m->mean += d / (double)m->n;
    m->m2 += d * (x - m->mean);
}

struct racc {
    uint64_t    hon_k, hon_n, pan_k, pan_n;
    struct macc cons;
    uint64_t    tr[6];
};

struct cell {
    uint64_t k, n;
};

struct acc {
    uint64_t     n_traj;
    uint64_t     sdi_status[4];
    struct macc  sdi, fat, asr, kappa, nac_h;
    struct macc *nac_agent;   /* (cap_agents) */
    struct racc *rounds;      /* (cap_rounds) */
    struct cell *ar;          /* (cap_agents, cap_rounds) accuracy of slot a in round r */
    size_t       cap_agents, cap_rounds, n_agents, n_rounds; /* n_: max seen */
    uint64_t     fin_k, fin_n, fin_nojudge, rec_k, rec_n;
    struct macc  dh[3], dp[3];    /* per-debate deltas (kept for --items and --explain only) */
    uint64_t     last_hon_k, last_hon_n, last_pan_k, last_pan_n; /* each debate's last round */
    size_t       design_N, design_T; /* the first debate's design ... */
    bool         design_stop, design_set, design_mixed; /* ... and whether another differs */
    uint64_t     c0, lost;
    uint64_t     ans_total, ans_unparsed;
};

static void acc_free(struct acc *a)
{
    sn_free(a->nac_agent);
    sn_free(a->rounds);
    sn_free(a->ar);
    memset(a, 0, sizeof *a);
}

static int acc_reserve(struct acc *a, size_t N, size_t T, struct sn_err *err)
{
    if (N <= a->cap_agents && T <= a->cap_rounds)
        return SN_OK;
    size_t cN = N > a->cap_agents ? N : a->cap_agents;
    size_t cT = T > a->cap_rounds ? T : a->cap_rounds;
    size_t NT;
    if (!sn_mul_ok(cN, cT, &NT) || NT > ((size_t)1 << 26))
        return sn_err_set(err, SN_E_NOMEM, "too many agents x rounds (%zu x %zu)", N, T);
    struct macc *na = sn_calloc(cN ? cN : 1, sizeof *na);
    struct racc *rd = sn_calloc(cT ? cT : 1, sizeof *rd);
    struct cell *ar = sn_calloc(NT ? NT : 1, sizeof *ar);
    if (!na || !rd || !ar) {
        sn_free(na);
        sn_free(rd);
        sn_free(ar);
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    }
    if (a->cap_agents)
        memcpy(na, a->nac_agent, a->cap_agents * sizeof *na);
    if (a->cap_rounds)
        memcpy(rd, a->rounds, a->cap_rounds * sizeof *rd);
    for (size_t i = 0; i < a->cap_agents; i++)
        for (size_t r = 0; r < a->cap_rounds; r++)
            ar[i * cT + r] = a->ar[i * a->cap_rounds + r];
    sn_free(a->nac_agent);
    sn_free(a->rounds);
    sn_free(a->ar);
    a->nac_agent = na;
    a->rounds = rd;
    a->ar = ar;
    a->cap_agents = cN;
    a->cap_rounds = cT;
    return SN_OK;
}

static int acc_add(struct acc *a, const struct sn_traj *t, const struct sn_deb *d,
                   struct sn_err *err)
{
    size_t N = d->N, T = d->T;
    int rc = acc_reserve(a, N, T, err);
    if (rc)
        return rc;
    if (N > a->n_agents)
        a->n_agents = N;
    if (T > a->n_rounds)
        a->n_rounds = T;
    a->n_traj++;
    a->sdi_status[d->sdi_status]++;
    if (d->sdi_status == SN_SDI_OK) {
        macc_add(&a->sdi, d->sdi);
        macc_add(&a->fat, d->fat);
        macc_add(&a->asr, d->asr);
        macc_add(&a->kappa, d->kappa);
    }
    for (size_t i = 0; i < N; i++)
        if (d->nac[i] > 0)
            macc_add(&a->nac_agent[i], d->nac[i]);
    /* NAC over collaborators: pooled over honest slots with a parsed answer */
    if (d->nac_h_n) {
        for (size_t i = 0; i < N; i++)
            if (t->agents[i].role == SN_ROLE_HONEST && d->nac[i] > 0)
                macc_add(&a->nac_h, d->nac[i]);
    }
    for (size_t r = 0; r < T; r++) {
        struct racc *rd = &a->rounds[r];
        rd->hon_k += (uint64_t)d->hon_k[r];
        rd->hon_n += (uint64_t)d->hon_n[r];
        if (d->pan[r] >= 0) {
            rd->pan_k += (uint64_t)d->pan[r];
            rd->pan_n++;
        }
        if (d->cons[r] >= 0)
            macc_add(&rd->cons, d->cons[r]);
        for (int c = 1; c < 6; c++)
            rd->tr[c] += (uint64_t)d->tr[c][r];
        for (size_t i = 0; i < N; i++) {
            if (!d->spoke[i * T + r])
                continue;
            struct cell *ce = &a->ar[i * a->cap_rounds + r];
            ce->n++;
            ce->k += d->ans[i * T + r] && d->ans[i * T + r] == d->gold;
        }
    }
    if (d->final_dec >= 0) {
        a->fin_k += (uint64_t)d->final_dec;
        a->fin_n++;
    } else if (T) {
        a->fin_nojudge++;
    }
    a->rec_k += (uint64_t)d->final_rec;
    a->rec_n++;
    if (T) {
        a->last_hon_k += (uint64_t)d->hon_k[T - 1];
        a->last_hon_n += (uint64_t)d->hon_n[T - 1];
        if (d->pan[T - 1] >= 0) {
            a->last_pan_k += (uint64_t)d->pan[T - 1];
            a->last_pan_n++;
        }
    }
    if (!a->design_set) {
        a->design_set = true;
        a->design_N = N;
        a->design_T = T;
        a->design_stop = d->stopped;
    } else if (a->design_N != N || a->design_T != T || a->design_stop != d->stopped) {
        a->design_mixed = true;
    }
    for (int i = 0; i < 3; i++) {
        if (d->dh_ok[i])
            macc_add(&a->dh[i], d->dh[i]);
        if (d->dp_ok[i])
            macc_add(&a->dp[i], d->dp[i]);
    }
    if (d->c0) {
        a->c0++;
        a->lost += !d->cf;
    }
    a->ans_total += d->ans_total;
    a->ans_unparsed += d->ans_unparsed;
    return SN_OK;
}

/* ---- the stats object ---- */

struct rep {
    int64_t    replicate;
    struct acc acc;
};

struct group {
    char       *key;      /* values joined by '\x1f' (+ '\x1e' panel index for hidden ones) */
    char      **values;   /* (n_by) */
    char       *label;    /* "f1=v1,f2=v2" or "all" */
    int         panel;    /* -1 visible group; 0..2 hidden panel accumulator */
    size_t      parent;   /* for panel groups: the visible group */
    struct acc  pooled;
    struct rep *reps;
    size_t      n_reps, cap_reps;
};

struct sn_stats {
    struct sn_stats_params p;
    enum sn_majority majority;
    struct field *fields;  /* (n_by) */
    size_t        n_by;
    struct field  panel_field;
    char         *panel_names[3];
    char         *panel_metric;
    struct group *groups;
    size_t        n_groups, cap_groups;
    struct sn_strmap group_map;
    struct sn_strmap items;   /* --adversary-effective: item -> 1 seen adversary | 2 ineffective */
    struct sn_deb deb;     /* the terms of the last debate added */
    size_t        last_gi; /* its group; (size_t)-1 when it was filtered out */
    struct sn_buf key;
    uint64_t      n_added, n_filtered, n_skipped;
    char         *first_skip;
    char        **inputs;
    size_t        n_inputs;
    /* results */
    struct sn_stat_row *rows;
    size_t        n_rows, cap_rows;
    char        **names;  /* strings owned for rows */
    size_t        n_names, cap_names;
    struct macc  *rep_acc; /* (cap_rows) replicate accumulation per row */
};

struct sn_stats_params sn_stats_default_params(void)
{
    struct sn_stats_params p;
    memset(&p, 0, sizeof p);
    p.majority = SN_MAJORITY_PLURALITY;
    p.tie = SN_VOTE_TIE_NONE;
    p.panel_field = "labels.panel";
    p.panel_names[0] = "baseline";
    p.panel_names[1] = "honest-mixed";
    p.panel_names[2] = "adversarial-mixed";
    p.panel_metric = "revision.r0_r1.p_dm_given_change";
    return p;
}

static void field_free(struct field *f)
{
    sn_free(f->label);
    sn_free(f->name);
}

void sn_stats_free(struct sn_stats *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_by; i++)
        field_free(&s->fields[i]);
    sn_free(s->fields);
    field_free(&s->panel_field);
    for (int i = 0; i < 3; i++)
        sn_free(s->panel_names[i]);
    sn_free(s->panel_metric);
    for (size_t g = 0; g < s->n_groups; g++) {
        struct group *gr = &s->groups[g];
        sn_free(gr->key);
        for (size_t i = 0; gr->values && i < s->n_by; i++)
            sn_free(gr->values[i]);
        sn_free(gr->values);
        sn_free(gr->label);
        acc_free(&gr->pooled);
        for (size_t r = 0; r < gr->n_reps; r++)
            acc_free(&gr->reps[r].acc);
        sn_free(gr->reps);
    }
    sn_free(s->groups);
    sn_strmap_free(&s->group_map);
    sn_strmap_free(&s->items);
    sn_deb_free(&s->deb);
    sn_buf_free(&s->key);
    sn_free(s->first_skip);
    for (size_t i = 0; i < s->n_inputs; i++)
        sn_free(s->inputs[i]);
    sn_free(s->inputs);
    for (size_t i = 0; i < s->n_names; i++)
        sn_free(s->names[i]);
    sn_free(s->names);
    sn_free(s->rows);
    sn_free(s->rep_acc);
    sn_free(s);
}

int sn_stats_create(const struct sn_stats_params *params, struct sn_stats **out,
                    struct sn_err *err)
{
    *out = NULL;
    struct sn_stats *s = sn_calloc(1, sizeof *s);
    if (!s)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    struct sn_stats_params dflt = sn_stats_default_params();
    s->p = params ? *params : dflt;
    s->majority = s->p.majority;
    int rc = SN_OK;
    if ((unsigned)s->majority >= SN_MAJORITY_COUNT) {
        rc = sn_err_set(err, SN_E_ARG, "unknown majority rule %d", (int)s->majority);
        goto fail;
    }
    if ((unsigned)s->p.tie >= SN_VOTE_TIE_COUNT) {
        rc = sn_err_set(err, SN_E_ARG, "unknown tie rule %d", (int)s->p.tie);
        goto fail;
    }
    if (s->majority == SN_MAJORITY_STRICT)
        s->p.tie = SN_VOTE_TIE_NONE; /* strict: ties are no decision whatever .tie says */
    if (s->p.n_by) {
        s->fields = sn_calloc(s->p.n_by, sizeof *s->fields);
        if (!s->fields) {
            rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
            goto fail;
        }
        for (size_t i = 0; i < s->p.n_by; i++) {
            if ((rc = parse_field(s->p.by[i], &s->fields[i], err)))
                goto fail;
            s->n_by = i + 1;
            for (size_t j = 0; j < i; j++) {
                if (!strcmp(s->fields[j].name, s->fields[i].name)) {
                    rc = sn_err_set(err, SN_E_ARG, "--by: field '%s' given twice",
                                    s->fields[i].name);
                    goto fail;
                }
            }
        }
    }
    if ((rc = parse_field(s->p.panel_field ? s->p.panel_field : dflt.panel_field,
                          &s->panel_field, err)))
        goto fail;
    for (int i = 0; i < 3; i++) {
        s->panel_names[i] = sn_strdup(s->p.panel_names[i] ? s->p.panel_names[i]
                                                          : dflt.panel_names[i]);
        if (!s->panel_names[i]) {
            rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
            goto fail;
        }
    }
    s->panel_metric = sn_strdup(s->p.panel_metric ? s->p.panel_metric : dflt.panel_metric);
    if (!s->panel_metric) {
        rc = sn_err_set(err, SN_E_NOMEM, "out of memory");
        goto fail;
    }
    s->p.by = NULL; /* not kept: the caller's strings may go away */
    s->last_gi = (size_t)-1;
    *out = s;
    return SN_OK;
fail:
    sn_stats_free(s);
    return rc;
}

void sn_stats_note_skipped(struct sn_stats *s, uint64_t n_skipped, const char *first_msg)
{
    if (n_skipped && !s->first_skip && first_msg && *first_msg)
        s->first_skip = sn_strdup(first_msg);
    s->n_skipped += n_skipped;
}

int sn_stats_note_input(struct sn_stats *s, const char *path, struct sn_err *err)
{
    char **v = sn_realloc(s->inputs, (s->n_inputs + 1) * sizeof *v);
    if (!v)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    s->inputs = v;
    v[s->n_inputs] = sn_strdup(path);
    if (!v[s->n_inputs])
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    s->n_inputs++;
    return SN_OK;
}

uint64_t sn_stats_n_added(const struct sn_stats *s) { return s->n_added; }
uint64_t sn_stats_n_filtered(const struct sn_stats *s) { return s->n_filtered; }

/* The unit of adversary-effective filtering (docs/formats.md "Adversary-effective
** filtering"): "experiment\x1fdataset\x1fitem_id\x1freplicate". Keyed by experiment, so the
** same recipe's debates are filtered alike whether read alone or beside another experiment's
** files; by replicate, so a replicate whose adversary answered gold at round 0 drops alone. */
static int item_key(struct sn_stats *s, const struct sn_traj *t, struct sn_err *err)
{
    sn_buf_reset(&s->key);
    if (sn_buf_puts(&s->key, t->experiment ? t->experiment : NONE_VALUE, err) ||
        sn_buf_puts(&s->key, "\x1f", err) || sn_buf_puts(&s->key, t->dataset, err) ||
        sn_buf_puts(&s->key, "\x1f", err) || sn_buf_puts(&s->key, t->item_id, err) ||
        sn_buf_printf(&s->key, err, "\x1f%lld", (long long)t->replicate))
        return err->code;
    return SN_OK;
}

int sn_stats_scan_effective(struct sn_stats *s, const struct sn_traj *t, struct sn_err *err)
{
    if (!t->n_adversary)
        return SN_OK;
    bool effective = true;
    for (size_t a = 0; a < t->n_agents; a++) {
        if (t->agents[a].role != SN_ROLE_ADVERSARY)
            continue;
        const struct sn_traj_msg *m = sn_traj_msg_of(t, 0, (int)a);
        effective = effective && m && m->answer && strcmp(m->answer, t->gold) != 0;
    }
    int rc = item_key(s, t, err);
    if (rc)
        return rc;
    size_t *v = sn_strmap_find(&s->items, s->key.data, s->key.len);
    if (!v)
        return sn_strmap_put(&s->items, s->key.data, s->key.len, effective ? 1 : 3, NULL, err);
    *v |= effective ? 1 : 3;
    return SN_OK;
}

static int group_get(struct sn_stats *s, const char *key, size_t len, const struct sn_traj *t,
                     int panel, size_t parent, size_t *out, struct sn_err *err)
{
    size_t *v = sn_strmap_find(&s->group_map, key, len);
    if (v) {
        *out = *v;
        return SN_OK;
    }
    if (s->n_groups == s->cap_groups) {
        size_t nc = s->cap_groups ? s->cap_groups * 2 : 16;
        struct group *g = sn_realloc(s->groups, nc * sizeof *g);
        if (!g)
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        s->groups = g;
        s->cap_groups = nc;
    }
    struct group *g = &s->groups[s->n_groups];
    memset(g, 0, sizeof *g);
    g->panel = panel;
    g->parent = parent;
    s->n_groups++; /* counted now: sn_stats_free copes with a half-built group */
    g->key = sn_strndup(key, len);
    g->values = sn_calloc(s->n_by ? s->n_by : 1, sizeof *g->values);
    struct sn_buf lb = {0};
    if (!g->key || !g->values)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    for (size_t i = 0; i < s->n_by; i++) {
        struct sn_buf vb = {0};
        if (field_value(&s->fields[i], t, &vb, err)) {
            sn_buf_free(&vb);
            sn_buf_free(&lb);
            return err->code;
        }
        g->values[i] = vb.data ? vb.data : sn_strdup("");
        if (!g->values[i] ||
            sn_buf_printf(&lb, err, "%s%s=%s", i ? "," : "", s->fields[i].name, g->values[i])) {
            sn_buf_free(&lb);
            return sn_err_set(err, SN_E_NOMEM, "out of memory");
        }
    }
    if (!s->n_by && sn_buf_puts(&lb, "all", err))
        return err->code;
    g->label = lb.data;
    int rc = sn_strmap_put(&s->group_map, key, len, s->n_groups - 1, NULL, err);
    if (rc)
        return rc;
    *out = s->n_groups - 1;
    return SN_OK;
}

static int group_add(struct sn_stats *s, size_t gi, const struct sn_traj *t, struct sn_err *err)
{
    struct group *g = &s->groups[gi];
    int rc = acc_add(&g->pooled, t, &s->deb, err);
    if (rc)
        return rc;
    struct rep *r = NULL;
    for (size_t i = g->n_reps; i-- > 0;) {
        if (g->reps[i].replicate == t->replicate) {
            r = &g->reps[i];
            break;
        }
    }
    if (!r) {
        if (g->n_reps == g->cap_reps) {
            size_t nc = g->cap_reps ? g->cap_reps * 2 : 4;
            struct rep *nr = sn_realloc(g->reps, nc * sizeof *nr);
            if (!nr)
                return sn_err_set(err, SN_E_NOMEM, "out of memory");
            g->reps = nr;
            g->cap_reps = nc;
        }
        r = &g->reps[g->n_reps++];
        memset(r, 0, sizeof *r);
        r->replicate = t->replicate;
    }
    return acc_add(&r->acc, t, &s->deb, err);
}

int sn_stats_add(struct sn_stats *s, const struct sn_traj *t, struct sn_err *err)
{
    int rc;
    s->last_gi = (size_t)-1;
    if (s->p.adversary_effective && t->n_adversary) {
        if ((rc = item_key(s, t, err)))
            return rc;
        size_t *v = sn_strmap_find(&s->items, s->key.data, s->key.len);
        if (!v || *v != 1) {
            s->n_filtered++;
            s->last_gi = (size_t)-1;
            return SN_OK;
        }
    }
    if ((rc = sn_deb_compute(&s->deb, t, s->majority, s->p.tie, err)))
        return sn_err_wrap(err, "%s", t->id);
    sn_buf_reset(&s->key);
    for (size_t i = 0; i < s->n_by; i++) {
        if ((i && sn_buf_puts(&s->key, "\x1f", err)) || field_value(&s->fields[i], t, &s->key, err))
            return err->code;
    }
    if (!s->key.data && sn_buf_puts(&s->key, "", err))
        return err->code;
    size_t vis_len = s->key.len, gi;
    if ((rc = group_get(s, s->key.data, vis_len, t, -1, 0, &gi, err)) ||
        (rc = group_add(s, gi, t, err)))
        return rc;
    /* hidden panel accumulator */
    size_t mark = s->key.len;
    if ((rc = sn_buf_puts(&s->key, "\x1e", err)) ||
        (rc = field_value(&s->panel_field, t, &s->key, err)))
        return rc;
    const char *pv = s->key.data + mark + 1;
    for (int p = 0; p < 3; p++) {
        if (strcmp(pv, s->panel_names[p]) != 0)
            continue;
        s->key.len = mark;
        char tag[8];
        snprintf(tag, sizeof tag, "\x1e%d", p);
        size_t pg;
        if ((rc = sn_buf_puts(&s->key, tag, err)) ||
            (rc = group_get(s, s->key.data, s->key.len, t, p, gi, &pg, err)) ||
            (rc = group_add(s, pg, t, err)))
            return rc;
        break;
    }
    s->n_added++;
    s->last_gi = gi;
    return SN_OK;
}

const char *sn_stats_item_header(void)
{
    return "id,item_id,dataset,group,replicate,T,sdi_status,sdi,fat,asr,kappa,n_drem,nac_honest,"
           "accuracy_honest_r0,accuracy_honest_last,panel_r0,panel_last,final,flip_c0,flip_cf";
}

static int csv_dbl(struct sn_buf *b, double v, struct sn_err *err)
{
    return isfinite(v) ? sn_buf_printf(b, err, ",%.10g", v) : sn_buf_puts(b, ",", err);
}

int sn_stats_item_row(struct sn_stats *s, const struct sn_traj *t, struct sn_buf *out,
                      struct sn_err *err)
{
    if (s->last_gi == (size_t)-1)
        return SN_OK; /* filtered out: no row */
    const struct sn_deb *d = &s->deb;
    static const char *const st[] = {"ok", "no_target", "empty_drem", "no_rounds"};
    size_t T = d->T;
    double h0 = T && d->hon_n[0] ? (double)d->hon_k[0] / d->hon_n[0] : NAN;
    double hl = T && d->hon_n[T - 1] ? (double)d->hon_k[T - 1] / d->hon_n[T - 1] : NAN;
    double p0 = T && d->pan[0] >= 0 ? d->pan[0] : NAN;
    double pl = T && d->pan[T - 1] >= 0 ? d->pan[T - 1] : NAN;
    int rc;
    if ((rc = sn_stats_csv_field(out, t->id, err)) || (rc = sn_buf_puts(out, ",", err)) ||
        (rc = sn_stats_csv_field(out, t->item_id, err)) || (rc = sn_buf_puts(out, ",", err)) ||
        (rc = sn_stats_csv_field(out, t->dataset, err)) || (rc = sn_buf_puts(out, ",", err)) ||
        (rc = sn_stats_csv_field(out, s->groups[s->last_gi].label, err)) ||
        (rc = sn_buf_printf(out, err, ",%lld,%zu,%s", (long long)t->replicate, T,
                            st[d->sdi_status])) ||
        (rc = csv_dbl(out, d->sdi, err)) || (rc = csv_dbl(out, d->fat, err)) ||
        (rc = csv_dbl(out, d->asr, err)) || (rc = csv_dbl(out, d->kappa, err)) ||
        (rc = sn_buf_printf(out, err, ",%zu", d->n_drem)) ||
        (rc = csv_dbl(out, d->nac_h_n ? d->nac_h_sum / (double)d->nac_h_n : NAN, err)) ||
        (rc = csv_dbl(out, h0, err)) || (rc = csv_dbl(out, hl, err)) ||
        (rc = csv_dbl(out, p0, err)) || (rc = csv_dbl(out, pl, err)) ||
        (rc = csv_dbl(out, d->final_dec >= 0 ? d->final_dec : NAN, err)) ||
        (rc = sn_buf_printf(out, err, ",%d,%d\n", d->c0, d->cf)))
        return rc;
    return SN_OK;
}

/* ---- metrics: one emitter walks an accumulator and names every metric ---- */

struct emitter {
    void (*fn)(struct emitter *e, const char *name, enum sn_stat_kind kind, double value,
               uint64_t n, double k, double sd);
    const char *note; /* attached to the next row emitted, then cleared by the caller */
};

static void emit_rate(struct emitter *e, const char *name, uint64_t k, uint64_t n)
{
    e->fn(e, name, SN_STAT_RATE, n ? (double)k / (double)n : NAN, n, (double)k, NAN);
}

static void emit_mean(struct emitter *e, const char *name, const struct macc *m)
{
    double sd = m->n >= 2 ? sqrt(m->m2 / (double)(m->n - 1)) : NAN;
    e->fn(e, name, SN_STAT_MEAN, m->n ? m->mean : NAN, m->n, NAN, sd);
}

/* a count c out of n things (n = trajectories, or transitions considered) */
static void emit_count(struct emitter *e, const char *name, uint64_t c, uint64_t n)
{
    e->fn(e, name, SN_STAT_COUNT, (double)c, n, NAN, NAN);
}

static void emit_revisions(struct emitter *e, const char *pfx, const uint64_t tr[6])
{
    char nm[96];
    uint64_t valid = tr[SN_TR_KEPT_CORRECT] + tr[SN_TR_KEPT_WRONG] + tr[SN_TR_DC] + tr[SN_TR_DM];
    uint64_t chg = tr[SN_TR_DC] + tr[SN_TR_DM];
    snprintf(nm, sizeof nm, "%s.n_valid", pfx);
    emit_count(e, nm, valid, valid + tr[SN_TR_EXCLUDED]);
    snprintf(nm, sizeof nm, "%s.kept_correct", pfx);
    emit_rate(e, nm, tr[SN_TR_KEPT_CORRECT], valid);
    snprintf(nm, sizeof nm, "%s.kept_wrong", pfx);
    emit_rate(e, nm, tr[SN_TR_KEPT_WRONG], valid);
    snprintf(nm, sizeof nm, "%s.dc", pfx);
    emit_rate(e, nm, tr[SN_TR_DC], valid);
    snprintf(nm, sizeof nm, "%s.dm", pfx);
    emit_rate(e, nm, tr[SN_TR_DM], valid);
    snprintf(nm, sizeof nm, "%s.p_change", pfx);
    emit_rate(e, nm, chg, valid);
    snprintf(nm, sizeof nm, "%s.p_dm_given_change", pfx);
    emit_rate(e, nm, tr[SN_TR_DM], chg);
    snprintf(nm, sizeof nm, "%s.parse_fail", pfx);
    emit_rate(e, nm, tr[SN_TR_EXCLUDED], valid + tr[SN_TR_EXCLUDED]);
}

/* rate(k1/n1) − rate(k0/n0), NaN when either is undefined */
static void emit_diff(struct emitter *e, const char *name, uint64_t k1, uint64_t n1, uint64_t k0,
                      uint64_t n0, const char *note)
{
    double v = n1 && n0 ? (double)k1 / (double)n1 - (double)k0 / (double)n0 : NAN;
    e->note = note;
    e->fn(e, name, SN_STAT_DIFF, v, n1 < n0 ? n1 : n0, NAN, NAN);
    e->note = NULL;
}

#define MIXED_NOTE "the group mixes designs (agent count, round count or early stop): each " \
                   "delta is the difference of the pooled accuracy rows beside it, which " \
                   "cover different debates; group by n_agents and the round count to compare"

static void emit_all(struct emitter *e, const struct acc *a, enum sn_majority majority)
{
    char nm[96];
    static const char *const dnames[3] = {"delta1", "delta2", "delta_total"};
    emit_count(e, "n_trajectories", a->n_traj, a->n_traj);
    e->note = a->design_mixed ? MIXED_NOTE : NULL;
    emit_count(e, "design.mixed", a->design_mixed, a->n_traj);
    e->note = NULL;
    emit_mean(e, "sdi", &a->sdi);
    emit_mean(e, "fat", &a->fat);
    emit_mean(e, "asr", &a->asr);
    emit_mean(e, "kappa", &a->kappa);
    emit_count(e, "sdi.excluded_no_target", a->sdi_status[SN_SDI_NO_TARGET], a->n_traj);
    emit_count(e, "sdi.excluded_empty_drem", a->sdi_status[SN_SDI_EMPTY_DREM],
               a->n_traj);
    emit_mean(e, "nac.honest", &a->nac_h);
    for (size_t i = 0; i < a->n_agents; i++) {
        snprintf(nm, sizeof nm, "nac.agent[%zu]", i);
        emit_mean(e, nm, &a->nac_agent[i]);
    }
    for (size_t r = 0; r < a->n_rounds; r++) {
        snprintf(nm, sizeof nm, "consensus.r%zu", r);
        emit_mean(e, nm, &a->rounds[r].cons);
    }
    for (size_t r = 0; r < a->n_rounds; r++) {
        snprintf(nm, sizeof nm, "accuracy.honest.r%zu", r);
        emit_rate(e, nm, a->rounds[r].hon_k, a->rounds[r].hon_n);
    }
    emit_rate(e, "accuracy.honest.last", a->last_hon_k, a->last_hon_n);
    if (majority != SN_MAJORITY_JUDGE) {
        for (size_t r = 0; r < a->n_rounds; r++) {
            snprintf(nm, sizeof nm, "accuracy.panel.r%zu", r);
            emit_rate(e, nm, a->rounds[r].pan_k, a->rounds[r].pan_n);
        }
        emit_rate(e, "accuracy.panel.last", a->last_pan_k, a->last_pan_n);
    }
    emit_rate(e, "accuracy.final", a->fin_k, a->fin_n);
    if (majority == SN_MAJORITY_JUDGE)
        emit_count(e, "accuracy.final.no_judge", a->fin_nojudge, a->n_traj);
    emit_rate(e, "accuracy.final_recorded", a->rec_k, a->rec_n);
    for (size_t i = 0; i < a->n_agents; i++) {
        for (size_t r = 0; r < a->n_rounds; r++) {
            const struct cell *c = &a->ar[i * a->cap_rounds + r];
            snprintf(nm, sizeof nm, "accuracy.agent[%zu].r%zu", i, r);
            emit_rate(e, nm, c->k, c->n);
        }
    }
    /* Δ1 = acc(r1) − acc(r0), Δ2 = acc(r2) − acc(r1), Δtotal = acc(last) − acc(r0): always
    ** the difference of the pooled accuracy rows printed beside them (docs/formats.md
    ** "Accuracy deltas"), so Δ and the rows never disagree; a group mixing designs says so */
    const char *note = a->design_mixed ? MIXED_NOTE : NULL;
    const struct racc *R = a->rounds;
    size_t nr = a->n_rounds;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && majority == SN_MAJORITY_JUDGE)
            break;
        const char *who = pass ? "panel" : "honest";
        for (int i = 0; i < 3; i++) {
            uint64_t k0, n0, k1, n1;
            size_t r0 = i == 1 ? 1 : 0, r1 = i == 1 ? 2 : 1;
            if (i < 2 && r1 >= nr) {
                k0 = n0 = k1 = n1 = 0;
            } else if (i < 2) {
                k0 = pass ? R[r0].pan_k : R[r0].hon_k;
                n0 = pass ? R[r0].pan_n : R[r0].hon_n;
                k1 = pass ? R[r1].pan_k : R[r1].hon_k;
                n1 = pass ? R[r1].pan_n : R[r1].hon_n;
            } else {
                k0 = nr ? (pass ? R[0].pan_k : R[0].hon_k) : 0;
                n0 = nr ? (pass ? R[0].pan_n : R[0].hon_n) : 0;
                k1 = pass ? a->last_pan_k : a->last_hon_k;
                n1 = pass ? a->last_pan_n : a->last_hon_n;
            }
            snprintf(nm, sizeof nm, "%s.%s", dnames[i], who);
            emit_diff(e, nm, k1, n1, k0, n0, note);
        }
    }
    uint64_t all[6] = {0};
    for (size_t r = 0; r + 1 < a->n_rounds; r++)
        for (int c = 0; c < 6; c++)
            all[c] += a->rounds[r].tr[c];
    emit_revisions(e, "revision.all", all);
    for (size_t r = 0; r + 1 < a->n_rounds; r++) {
        snprintf(nm, sizeof nm, "revision.r%zu_r%zu", r, r + 1);
        emit_revisions(e, nm, a->rounds[r].tr);
    }
    emit_rate(e, "flip_rate", a->lost, a->c0);
    emit_rate(e, "parse_fail.honest_answers", a->ans_unparsed, a->ans_total);
}

/* Building rows: the pooled pass appends rows; replicate passes find the row by name. */
struct row_emitter {
    struct emitter    e;
    struct sn_stats  *s;
    struct group     *g;
    size_t            first, hint; /* the group's rows start at first */
    bool              pooled;
    struct sn_err    *err;
    int               rc;
};

static char *own(struct sn_stats *s, const char *str, struct sn_err *err)
{
    if (s->n_names == s->cap_names) {
        size_t nc = s->cap_names ? s->cap_names * 2 : 256;
        char **v = sn_realloc(s->names, nc * sizeof *v);
        if (!v) {
            sn_err_set(err, SN_E_NOMEM, "out of memory");
            return NULL;
        }
        s->names = v;
        s->cap_names = nc;
    }
    char *c = sn_strdup(str);
    if (!c) {
        sn_err_set(err, SN_E_NOMEM, "out of memory");
        return NULL;
    }
    s->names[s->n_names++] = c;
    return c;
}

static struct sn_stat_row *row_new(struct sn_stats *s, struct sn_err *err)
{
    if (s->n_rows == s->cap_rows) {
        size_t nc = s->cap_rows ? s->cap_rows * 2 : 256;
        struct sn_stat_row *v = sn_realloc(s->rows, nc * sizeof *v);
        if (!v) {
            sn_err_set(err, SN_E_NOMEM, "out of memory");
            return NULL;
        }
        s->rows = v;
        struct macc *m = sn_realloc(s->rep_acc, nc * sizeof *m);
        if (!m) {
            sn_err_set(err, SN_E_NOMEM, "out of memory");
            return NULL;
        }
        s->rep_acc = m;
        s->cap_rows = nc;
    }
    struct sn_stat_row *r = &s->rows[s->n_rows];
    memset(r, 0, sizeof *r);
    memset(&s->rep_acc[s->n_rows], 0, sizeof s->rep_acc[0]);
    s->n_rows++;
    return r;
}

static void fill_interval(struct sn_stat_row *r, double sd)
{
    r->lo = r->hi = NAN;
    if (r->kind == SN_STAT_RATE) {
        sn_wilson((uint64_t)r->k, r->n, &r->lo, &r->hi);
    } else if (r->kind == SN_STAT_MEAN && r->n >= 2 && !isnan(sd)) {
        double h = SN_Z95 * sd / sqrt((double)r->n);
        r->lo = r->value - h;
        r->hi = r->value + h;
    }
}

static void row_emit(struct emitter *e_, const char *name, enum sn_stat_kind kind, double value,
                     uint64_t n, double k, double sd)
{
    struct row_emitter *e = (struct row_emitter *)e_;
    struct sn_stats *s = e->s;
    if (e->rc)
        return;
    if (e->pooled) {
        struct sn_stat_row *r = row_new(s, e->err);
        char *nm = r ? own(s, name, e->err) : NULL;
        if (!r || !nm) {
            e->rc = SN_E_NOMEM;
            return;
        }
        r->group = e->g->label;
        r->group_values = (const char *const *)e->g->values;
        r->metric = nm;
        r->kind = kind;
        r->value = value;
        r->n = n;
        r->k = kind == SN_STAT_RATE ? k : NAN;
        r->note = e_->note;
        fill_interval(r, sd);
        r->rep_mean = r->rep_sd = NAN;
        return;
    }
    if (isnan(value))
        return; /* undefined in this replicate */
    size_t n_g = s->n_rows - e->first;
    for (size_t j = 0; j < n_g; j++) {
        size_t i = e->first + (e->hint + j) % n_g;
        if (!strcmp(s->rows[i].metric, name)) {
            macc_add(&s->rep_acc[i], value);
            e->hint = (i - e->first + 1) % n_g;
            return;
        }
    }
}

static int cmp_value(const char *a, const char *b)
{
    char *ea, *eb;
    double x = strtod(a, &ea), y = strtod(b, &eb);
    if (ea != a && !*ea && eb != b && !*eb && x != y)
        return x < y ? -1 : 1;
    return strcmp(a, b);
}

struct gref {
    const struct group *g;
    size_t              n_by, idx;
};

static int cmp_group(const void *pa, const void *pb)
{
    const struct gref *a = pa, *b = pb;
    for (size_t i = 0; i < a->n_by; i++) {
        int c = cmp_value(a->g->values[i], b->g->values[i]);
        if (c)
            return c;
    }
    return 0;
}

/* Looks a metric up in an accumulator: value, k, n (NaN value when absent/undefined). */
struct find_emitter {
    struct emitter e;
    const char    *name;
    double         value, k;
    uint64_t       n;
    enum sn_stat_kind kind;
    bool           found;
};

static void find_emit(struct emitter *e_, const char *name, enum sn_stat_kind kind,
                      double value, uint64_t n, double k, double sd)
{
    struct find_emitter *e = (struct find_emitter *)e_;
    (void)sd;
    if (e->found || strcmp(name, e->name) != 0)
        return;
    e->found = true;
    e->value = value;
    e->k = k;
    e->n = n;
    e->kind = kind;
}

static struct find_emitter find_metric(const struct acc *a, const char *name,
                                       enum sn_majority majority)
{
    struct find_emitter f = {{find_emit, NULL}, name, NAN, NAN, 0, SN_STAT_COUNT, false};
    emit_all(&f.e, a, majority);
    return f;
}

static struct sn_stat_row *add_row(struct sn_stats *s, const struct group *g, const char *name,
                                   enum sn_stat_kind kind, double value, uint64_t n, double k,
                                   struct sn_err *err)
{
    struct sn_stat_row *r = row_new(s, err);
    if (!r)
        return NULL;
    r->group = g->label;
    r->group_values = (const char *const *)g->values;
    r->metric = name;
    r->kind = kind;
    r->value = value;
    r->n = n;
    r->k = k;
    r->note = NULL;
    fill_interval(r, NAN);
    r->rep_mean = r->rep_sd = NAN;
    return r;
}

/* Matched panels for visible group gi, when all three hidden panel accumulators exist. */
static int panel_rows(struct sn_stats *s, size_t gi, struct sn_err *err)
{
    const struct group *pg[3] = {NULL, NULL, NULL};
    for (size_t j = 0; j < s->n_groups; j++)
        if (s->groups[j].panel >= 0 && s->groups[j].parent == gi)
            pg[s->groups[j].panel] = &s->groups[j];
    if (!pg[0] || !pg[1] || !pg[2])
        return SN_OK;
    const struct group *g = &s->groups[gi];
    struct find_emitter f[3];
    for (int p = 0; p < 3; p++) {
        f[p] = find_metric(&pg[p]->pooled, s->panel_metric, s->majority);
        if (!f[p].found)
            return sn_err_set(err, SN_E_ARG, "--panel-metric: no metric '%s' in the output",
                              s->panel_metric);
        if (f[p].kind != SN_STAT_RATE)
            return sn_err_set(err, SN_E_ARG, "--panel-metric: '%s' is not a rate",
                              s->panel_metric);
    }
    static const char *const rate_names[3] = {"panel.baseline_rate", "panel.honest_rate",
                                              "panel.adversarial_rate"};
    size_t first = s->n_rows;
    for (int p = 0; p < 3; p++)
        if (!add_row(s, g, rate_names[p], SN_STAT_RATE, f[p].value, f[p].n, f[p].k, err))
            return err->code;
    struct sn_panels pp = sn_panels_compute(100.0 * f[0].value, 100.0 * f[1].value,
                                            100.0 * f[2].value);
    static const char *const pp_names[4] = {"panel.honest_bonus", "panel.adversarial_penalty",
                                            "panel.replacement_cost", "panel.break_even_q"};
    double vals[4] = {pp.bonus, pp.penalty, pp.cost, pp.q_star};
    uint64_t nmin = f[0].n < f[1].n ? f[0].n : f[1].n;
    nmin = nmin < f[2].n ? nmin : f[2].n;
    for (int i = 0; i < 4; i++) {
        struct sn_stat_row *r = add_row(s, g, pp_names[i], SN_STAT_PP, vals[i], nmin, NAN, err);
        if (!r)
            return err->code;
        if (i == 3)
            r->note = pp.q_star_undefined;
    }
    /* replicate mean ± SD: over replicate indices present in all three panels */
    for (size_t i = 0; i < pg[0]->n_reps; i++) {
        int64_t rep = pg[0]->reps[i].replicate;
        const struct acc *ra[3] = {&pg[0]->reps[i].acc, NULL, NULL};
        for (int p = 1; p < 3; p++)
            for (size_t j = 0; j < pg[p]->n_reps; j++)
                if (pg[p]->reps[j].replicate == rep)
                    ra[p] = &pg[p]->reps[j].acc;
        if (!ra[1] || !ra[2])
            continue;
        double v[3];
        for (int p = 0; p < 3; p++) {
            v[p] = find_metric(ra[p], s->panel_metric, s->majority).value;
            if (!isnan(v[p]))
                macc_add(&s->rep_acc[first + p], v[p]);
        }
        if (isnan(v[0]) || isnan(v[1]) || isnan(v[2]))
            continue;
        struct sn_panels q = sn_panels_compute(100.0 * v[0], 100.0 * v[1], 100.0 * v[2]);
        double qv[4] = {q.bonus, q.penalty, q.cost, q.q_star};
        for (int k = 0; k < 4; k++)
            if (!isnan(qv[k]))
                macc_add(&s->rep_acc[first + 3 + k], qv[k]);
    }
    return SN_OK;
}

int sn_stats_rows(struct sn_stats *s, const struct sn_stat_row **rows, size_t *n_rows,
                  struct sn_err *err)
{
    *rows = NULL;
    *n_rows = 0;
    for (size_t i = 0; i < s->n_names; i++)
        sn_free(s->names[i]);
    s->n_names = 0;
    s->n_rows = 0;
    size_t nv = 0;
    for (size_t g = 0; g < s->n_groups; g++)
        nv += s->groups[g].panel < 0;
    struct gref *order = sn_calloc(nv ? nv : 1, sizeof *order);
    if (!order)
        return sn_err_set(err, SN_E_NOMEM, "out of memory");
    nv = 0;
    for (size_t g = 0; g < s->n_groups; g++)
        if (s->groups[g].panel < 0)
            order[nv++] = (struct gref){&s->groups[g], s->n_by, g};
    qsort(order, nv, sizeof *order, cmp_group);
    int rc = SN_OK;
    for (size_t oi = 0; oi < nv && !rc; oi++) {
        struct group *g = &s->groups[order[oi].idx];
        struct row_emitter e = {{row_emit, NULL}, s, g, s->n_rows, 0, true, err, SN_OK};
        emit_all(&e.e, &g->pooled, s->majority);
        e.pooled = false;
        for (size_t r = 0; r < g->n_reps && !e.rc; r++) {
            e.hint = 0;
            emit_all(&e.e, &g->reps[r].acc, s->majority);
        }
        rc = e.rc ? e.rc : panel_rows(s, order[oi].idx, err);
    }
    sn_free(order);
    if (rc)
        return rc;
    for (size_t i = 0; i < s->n_rows; i++) {
        struct macc *m = &s->rep_acc[i];
        s->rows[i].rep_n = m->n;
        s->rows[i].rep_mean = m->n ? m->mean : NAN;
        s->rows[i].rep_sd = m->n >= 2 ? sqrt(m->m2 / (double)(m->n - 1)) : NAN;
    }
    *rows = s->rows;
    *n_rows = s->n_rows;
    return SN_OK;
}

/* ---- accessors for the output writers (stats_output.c) ---- */

size_t sn_stats_internal_n_by(const struct sn_stats *s) { return s->n_by; }
const char *sn_stats_internal_by(const struct sn_stats *s, size_t i)
{
    return s->fields[i].name;
}
void sn_stats_internal_meta(const struct sn_stats *s, struct sn_stats_meta *m)
{
    *m = (struct sn_stats_meta){
        .majority = s->majority,
        .tie = s->p.tie,
        .adv_eff = s->p.adversary_effective,
        .n_skipped = s->n_skipped,
        .first_skip = s->first_skip,
        .inputs = (const char *const *)s->inputs,
        .n_inputs = s->n_inputs,
        .panel_field = s->panel_field.name,
        .panel_names = (const char *const *)s->panel_names,
        .panel_metric = s->panel_metric,
    };
}
