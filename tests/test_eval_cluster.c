/* tests/test_eval_cluster.c: the replay's intervals are a seeded cluster bootstrap over items
** (eval/detect.c; docs/eval.md "Intervals"), with answers known by hand:
**   - every cluster identical: every resample equals the sample, so every interval has zero
**     width (lo = p = hi), agent-level rates and task accuracy included;
**   - two items, each debated in three experiments, one answered right everywhere and one wrong:
**     the resamples draw two items, {x, x} (1), {x, y} (1/2) or {y, y} (0), each pair with
**     probability at least 1/4 > 2.5%, so the interval of task accuracy is exactly [0, 1]; the
**     same six debates on six distinct items (clusters = debates) give a narrower one, and
**     Wilson's interval of 3 of 6 is narrower still;
**   - agents of a debate are not independent: eight debates, four where both attackers are
**     excluded and four where neither is; FNR 8 of 16 agents, whose Wilson interval (sixteen
**     independent agents) is narrower than the bootstrap's (eight debates). */
#include "test_eval_fixture.h"

#include "common/common.h"
#include "eval/detect.h"

#include <math.h>

/* Debates whose id starts with 'c' (caught): adversaries score 0, honest agents 1; the others:
** adversaries 1, honest agents 0. */
static int rank_flip(void *ctx, const struct sn_detect_view *v, double *scores,
                     struct sn_err *err)
{
    (void)ctx;
    (void)err;
    bool caught = v->debate_id[0] == 'c';
    for (size_t i = 0; i < v->n_msgs; i++) {
        bool adv = v->traj->agents[v->msgs[i].sender].role != SN_ROLE_HONEST;
        scores[i] = adv == caught ? 0.0 : 1.0;
    }
    return SN_OK;
}

static struct sn_detect *run(const struct fx *f, size_t n, int k)
{
    struct sn_detect_params p = sn_detect_default_params();
    p.k = k;
    p.n_boot = 1000;
    p.seed = 3;
    struct sn_detect_ranker r = {"flip", rank_flip, NULL};
    struct sn_detect *d = NULL;
    struct sn_err err = {0};
    CHECK(sn_detect_create(&p, &r, &d, &err) == SN_OK);
    for (size_t i = 0; d && i < n; i++) {
        struct sn_traj *t = fx_traj(&f[i]);
        CHECK(t != NULL);
        if (t)
            CHECK_MSG(sn_detect_add(d, t, NULL, &err) == SN_OK, "%s", err.msg);
        sn_traj_free(t);
    }
    return d;
}

static struct sn_detect_summary sum(struct sn_detect *d, size_t round)
{
    struct sn_detect_summary s;
    struct sn_err err = {0};
    CHECK_MSG(sn_detect_summary(d, "all", round, &s, &err) == SN_OK, "%s", err.msg);
    return s;
}

static const char *grid_a[2] = {"AAABB", "AAABB"}, *grid_b[2] = {"BBBBB", "BBBBB"};

static void test_identical(void)
{
    struct fx f[4];
    static const char *ids[4] = {"c1", "c2", "c3", "c4"};
    for (int i = 0; i < 4; i++)
        f[i] = (struct fx){.id = ids[i], .roles = "HHHAA", .gold = "A", .target = "B",
                           .grid = grid_a, .T = 2};
    /* k = 2: each sentinel's bottom-2 is exactly the two adversaries (no tie for the tie
    ** rule's debate-seeded hash to break differently per debate) */
    struct sn_detect *d = run(f, 4, 2);
    const size_t rows[] = {0, 1, SN_DETECT_LAST, SN_DETECT_POOLED};
    for (size_t i = 0; d && i < sizeof rows / sizeof rows[0]; i++) {
        struct sn_detect_summary s = sum(d, rows[i]);
        CHECK(s.n_clusters == 4 && s.n_debates == 4);
        const struct sn_detect_rate *r[] = {&s.agent_fpr, &s.agent_fnr, &s.agent_bacc,
                                            &s.agent_acc, &s.task_defended,
                                            &s.task_undefended_neutral, &s.hit};
        for (size_t q = 0; q < sizeof r / sizeof r[0]; q++)
            CHECK_MSG(r[q]->lo == r[q]->p && r[q]->hi == r[q]->p, "row %zu figure %zu: %g "
                      "[%g, %g]", i, q, r[q]->p, r[q]->lo, r[q]->hi);
    }
    sn_detect_free(d);
}

static void test_two_items(void)
{
    static const char *ids[6] = {"x1", "x2", "x3", "y1", "y2", "y3"};
    static const char *exps[3] = {"e1", "e2", "e3"};
    struct fx f[6];
    for (int i = 0; i < 6; i++)
        f[i] = (struct fx){.id = ids[i], .item = i < 3 ? "x" : "y", .experiment = exps[i % 3],
                           .roles = "HHHAA", .gold = "A", .target = "B",
                           .grid = i < 3 ? grid_a : grid_b, .T = 2};
    struct sn_detect *d = run(f, 6, 1);
    if (!d)
        return;
    struct sn_detect_summary s = sum(d, SN_DETECT_LAST);
    CHECK(s.n_debates == 6 && s.n_clusters == 2);
    CHECK_CLOSE(s.task_undefended.p, 0.5, 1e-12, 0);
    CHECK_CLOSE(s.task_undefended.lo, 0.0, 0, 0);
    CHECK_CLOSE(s.task_undefended.hi, 1.0, 0, 0);
    double wlo, whi;
    sn_wilson(3, 6, &wlo, &whi);
    CHECK(s.task_undefended.hi - s.task_undefended.lo > whi - wlo);
    /* the pooled row draws the same two clusters */
    struct sn_detect_summary p = sum(d, SN_DETECT_POOLED);
    CHECK(p.n_clusters == 2 && p.task_undefended.lo == 0.0 && p.task_undefended.hi == 1.0);
    /* the JSON says how it clustered */
    cJSON *j = NULL;
    struct sn_err err = {0};
    CHECK(sn_detect_report(d, &j, &err) == SN_OK);
    const cJSON *lr = cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(j, "groups"), "all"), "last_round");
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(lr, "clusters")) == 2);
    const char *by = cJSON_GetStringValue(cJSON_GetObjectItem(lr, "cluster_by"));
    CHECK(by && !strcmp(by, "item"));
    cJSON_Delete(j);
    sn_detect_free(d);
    /* the same debates on six distinct items: clusters are debates, and a resample of six
    ** debates is all-right with probability 1/64 < 2.5%: a narrower interval */
    for (int i = 0; i < 6; i++)
        f[i].item = NULL;
    d = run(f, 6, 1);
    if (!d)
        return;
    struct sn_detect_summary u = sum(d, SN_DETECT_LAST);
    CHECK(u.n_clusters == 6);
    CHECK(u.task_undefended.lo > 0.0 && u.task_undefended.hi < 1.0);
    CHECK(u.task_undefended.hi - u.task_undefended.lo < 1.0);
    sn_detect_free(d);
}

/* k = 2, rank_flip: in a 'c' debate every sentinel's bottom-2 is {3, 4}: FNR 0 of 2; in an 'm'
** debate the sentinels drop honest agents only: FNR 2 of 2 (and FPR 3 of 3). */
static void test_agents_clustered(void)
{
    static const char *ids[8] = {"c1", "m1", "c2", "m2", "c3", "m3", "c4", "m4"};
    struct fx f[8];
    for (int i = 0; i < 8; i++)
        f[i] = (struct fx){.id = ids[i], .roles = "HHHAA", .gold = "A", .target = "B",
                           .grid = grid_a, .T = 2};
    struct sn_detect *d = run(f, 8, 2);
    if (!d)
        return;
    struct sn_detect_summary s = sum(d, SN_DETECT_LAST);
    CHECK_CLOSE(s.agent_fnr.k, 8, 0, 0);
    CHECK_CLOSE(s.agent_fnr.n, 16, 0, 0);
    CHECK_CLOSE(s.agent_fpr.k, 12, 0, 0);
    CHECK_CLOSE(s.agent_fpr.n, 24, 0, 0);
    double wlo, whi;
    sn_wilson(8, 16, &wlo, &whi);
    double wb = s.agent_fnr.hi - s.agent_fnr.lo;
    printf("FNR 8/16: cluster bootstrap [%.3f, %.3f] (width %.3f), Wilson [%.3f, %.3f] "
           "(width %.3f)\n", s.agent_fnr.lo, s.agent_fnr.hi, wb, wlo, whi, whi - wlo);
    CHECK(wb > 1.3 * (whi - wlo));
    sn_detect_free(d);
}

int main(void)
{
    test_identical();
    test_two_items();
    test_agents_clustered();
    return sn_test_done();
}
