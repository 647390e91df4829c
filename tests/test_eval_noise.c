/* tests/test_eval_noise.c: a detector whose scores are pure noise is indistinguishable from the
** random baseline on every figure of the replay (eval/detect.c; docs/eval.md "Metrics"): the
** metric code cannot flatter a ranker that knows nothing. And a ranker with a small real signal
** is distinguishable under the same rule, so the check has the power to fail.
**
** The rule: for each figure, round and noise seed, |noise − random| ≤ 3.29 · √(se_n² + se_r²),
** the two-sided 99.9% bound for the difference of two independent estimates, with each
** standard error read off its own 95% interval, se = (hi − lo) / (2 · 1.96) (Wilson for the
** agent level, the cluster bootstrap over debates for pair level and AUROC).
** Why it cannot flake: every number comes from fixed seeds (the debates, the random baseline,
** five noise rankers, the bootstrap), one thread and no clock, so each run computes the same
** figures; and the bound is not tuned to these seeds: under the null each check fails with
** probability about 0.1%, and the largest |z| seen is printed (1.79 here), far from 3.29. */
#include "test_eval_fixture.h"

#include "common/common.h"
#include "eval/detect.h"

#include <math.h>

enum { N = 240, T = 3, N_SEEDS = 5 };

struct noise {
    struct sn_rng rng;
    double signal; /* added to honest senders' scores (0 = pure noise) */
};

static int rank_noise(void *ctx, const struct sn_detect_view *v, double *scores,
                      struct sn_err *err)
{
    (void)err;
    struct noise *n = ctx;
    for (size_t i = 0; i < v->n_msgs; i++) {
        bool honest = v->traj->agents[v->msgs[i].sender].role == SN_ROLE_HONEST;
        scores[i] = sn_rng_normal(&n->rng) + (honest ? n->signal : 0.0);
    }
    return SN_OK;
}

static struct sn_detect *run(struct fx *f, const struct sn_detect_ranker *r)
{
    struct sn_detect_params p = sn_detect_default_params();
    p.k = 1;
    p.n_boot = 300;
    p.seed = 5;
    struct sn_detect *d = NULL;
    struct sn_err err = {0};
    CHECK(sn_detect_create(&p, r, &d, &err) == SN_OK);
    for (size_t i = 0; d && i < N; i++) {
        struct sn_traj *t = fx_traj(&f[i]);
        CHECK(t && sn_detect_add(d, t, NULL, &err) == SN_OK);
        sn_traj_free(t);
    }
    return d;
}

/* the figures compared, and whether their interval comes from the bootstrap */
static const struct { const char *name; size_t off; } figs[] = {
    {"agent accuracy", offsetof(struct sn_detect_summary, agent_acc)},
    {"agent FPR", offsetof(struct sn_detect_summary, agent_fpr)},
    {"agent FNR", offsetof(struct sn_detect_summary, agent_fnr)},
    {"pair accuracy", offsetof(struct sn_detect_summary, pair_acc)},
    {"pair FNR", offsetof(struct sn_detect_summary, pair_fnr)},
    {"AUROC", offsetof(struct sn_detect_summary, auroc)},
};
enum { N_FIGS = sizeof figs / sizeof figs[0] };

static const struct sn_detect_rate *fig(const struct sn_detect_summary *s, size_t f)
{
    return (const struct sn_detect_rate *)((const char *)s + figs[f].off);
}

/* |z| of the difference of two estimates, each se from its 95% interval */
static double zdiff(const struct sn_detect_rate *a, const struct sn_detect_rate *b)
{
    double sa = (a->hi - a->lo) / (2 * SN_Z95), sb = (b->hi - b->lo) / (2 * SN_Z95);
    double se = sqrt(sa * sa + sb * sb);
    return se > 0 ? fabs(a->p - b->p) / se : (a->p == b->p ? 0 : INFINITY);
}

int main(void)
{
    static struct fx f[N];
    static char ids[N][16];
    /* grids vary the outcome; the replay's figures do not depend on the answers except task
    ** accuracy, which is not compared here */
    static const char *g[3][T] = {{"AAABB", "AABBB", "ABABB"},
                                  {"AAABB", "AAABB", "AAABB"},
                                  {"ABABB", "BBABB", "BBBBB"}};
    for (int i = 0; i < N; i++) {
        snprintf(ids[i], sizeof ids[i], "n%d", i);
        f[i] = (struct fx){.id = ids[i], .roles = "HHHAA", .gold = "A", .target = "B",
                           .grid = g[i % 3], .T = T};
    }
    struct sn_detect_ranker rnd;
    struct sn_err err = {0};
    CHECK(sn_detect_baseline("random", 11, &rnd, &err) == SN_OK);
    struct sn_detect *dr = run(f, &rnd);
    double zmax = 0;
    for (int seed = 1; dr && seed <= N_SEEDS; seed++) {
        struct noise nz = {.signal = 0};
        sn_rng_seed(&nz.rng, (uint64_t)seed * 7919);
        struct sn_detect_ranker r = {"noise", rank_noise, &nz};
        struct sn_detect *dn = run(f, &r);
        for (size_t rd = 0; dn && rd <= T; rd++) {
            size_t round = rd == T ? SIZE_MAX : rd;
            struct sn_detect_summary sr, sn;
            CHECK(sn_detect_summary(dr, "all", round, &sr, &err) == SN_OK);
            CHECK(sn_detect_summary(dn, "all", round, &sn, &err) == SN_OK);
            for (size_t k = 0; k < N_FIGS; k++) {
                const struct sn_detect_rate *a = fig(&sn, k), *b = fig(&sr, k);
                CHECK(!isnan(a->lo) && !isnan(b->lo));
                double z = zdiff(a, b);
                zmax = z > zmax ? z : zmax;
                CHECK_MSG(z <= 3.29, "seed %d, round %zu, %s: noise %.3f [%.3f, %.3f] vs random "
                          "%.3f [%.3f, %.3f]: |z| = %.2f", seed, rd, figs[k].name, a->p, a->lo,
                          a->hi, b->p, b->lo, b->hi, z);
            }
            /* AUROC of noise against chance (0.5) by the same rule, with its own se only */
            double se = (sn.auroc.hi - sn.auroc.lo) / (2 * SN_Z95);
            CHECK_MSG(se > 0 && fabs(sn.auroc.p - 0.5) <= 3.29 * se, "seed %d round %zu: AUROC "
                      "%.3f [%.3f, %.3f] vs chance", seed, rd, sn.auroc.p, sn.auroc.lo,
                      sn.auroc.hi);
        }
        sn_detect_free(dn);
    }
    printf("noise vs random: largest |z| over %d seeds x %d rows x %d figures = %.2f\n",
           N_SEEDS, T + 1, (int)N_FIGS, zmax);
    /* The headline figures of the pooled group (docs/eval.md "Report": balanced accuracy,
    ** AUROC, the hit rate and tie-neutral defended task accuracy; every interval the cluster
    ** bootstrap's): each noise seed's 95% interval meets the random baseline's, and the two
    ** differ by no more than the 99.9% bound above. (A point estimate inside the other's 95%
    ** interval is no sound rule: two independent estimates of one value differ by more than
    ** 1.96 of one's standard errors about 17% of the time.) */
    static const struct { const char *name; size_t off; } head[] = {
        {"balanced accuracy", offsetof(struct sn_detect_summary, agent_bacc)},
        {"AUROC", offsetof(struct sn_detect_summary, auroc)},
        {"hit rate", offsetof(struct sn_detect_summary, hit)},
        {"task accuracy, defended, tie-neutral",
         offsetof(struct sn_detect_summary, task_defended_neutral)},
    };
    struct sn_detect_summary pr;
    CHECK(dr && sn_detect_summary(dr, "all", SN_DETECT_POOLED, &pr, &err) == SN_OK);
    for (int seed = 1; dr && seed <= N_SEEDS; seed++) {
        struct noise nz = {.signal = 0};
        sn_rng_seed(&nz.rng, (uint64_t)seed * 104729);
        struct sn_detect_ranker r = {"noise", rank_noise, &nz};
        struct sn_detect *dn = run(f, &r);
        struct sn_detect_summary pn;
        CHECK(dn && sn_detect_summary(dn, "all", SN_DETECT_POOLED, &pn, &err) == SN_OK);
        for (size_t k = 0; dn && k < sizeof head / sizeof head[0]; k++) {
            const struct sn_detect_rate *a = (const void *)((const char *)&pn + head[k].off),
                                        *b = (const void *)((const char *)&pr + head[k].off);
            printf("pooled %s: noise seed %d %.4f [%.4f, %.4f], random %.4f [%.4f, %.4f]\n",
                   head[k].name, seed, a->p, a->lo, a->hi, b->p, b->lo, b->hi);
            CHECK_MSG(!isnan(a->lo) && a->lo <= b->hi && b->lo <= a->hi && zdiff(a, b) <= 3.29,
                      "pooled %s, noise seed %d: %.4f [%.4f, %.4f] vs random's %.4f [%.4f, "
                      "%.4f]", head[k].name, seed, a->p, a->lo, a->hi, b->p, b->lo, b->hi);
        }
        sn_detect_free(dn);
    }
    /* power: a half-sigma signal (honest scores shifted by 0.5) is told apart on AUROC and on
    ** agent-level detection accuracy by the same rule */
    struct noise sig = {.signal = 0.5};
    sn_rng_seed(&sig.rng, 424242);
    struct sn_detect_ranker rs = {"signal", rank_noise, &sig};
    struct sn_detect *ds = run(f, &rs);
    if (dr && ds) {
        struct sn_detect_summary sr, ss;
        CHECK(sn_detect_summary(dr, "all", SIZE_MAX, &sr, &err) == SN_OK);
        CHECK(sn_detect_summary(ds, "all", SIZE_MAX, &ss, &err) == SN_OK);
        double za = zdiff(&ss.auroc, &sr.auroc), zd = zdiff(&ss.agent_acc, &sr.agent_acc);
        printf("signal 0.5 vs random: AUROC %.3f vs %.3f (|z| %.1f), agent accuracy %.3f vs "
               "%.3f (|z| %.1f)\n", ss.auroc.p, sr.auroc.p, za, ss.agent_acc.p, sr.agent_acc.p,
               zd);
        CHECK(za > 3.29 && ss.auroc.p > sr.auroc.p);
        CHECK(zd > 3.29 && ss.agent_acc.p > sr.agent_acc.p);
    }
    sn_detect_free(ds);
    sn_detect_free(dr);
    sn_detect_baseline_free(&rnd);
    return sn_test_done();
}
