/* tests/test_eval_accuracy.c: accuracy per round (per agent, honest-slot mean, panel decision),
** the deltas Δ1, Δ2, Δtotal, and the panel decision rules plurality / strict / judge
** (docs/formats.md "Panel decision"); values by hand. */
#include "test_eval_fixture.h"

static char dir[1024];

static struct sn_stats *run(const char *name, const struct fx *f, size_t n, enum sn_majority m)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.jsonl", dir, name);
    fx_write(path, f, n);
    struct sn_stats_params p = sn_stats_default_params();
    p.majority = m;
    return fx_stats(path, &p);
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s", sn_test_dir("eval_accuracy"));

    /* gold A, slots 0-2 honest, 3-4 adversaries; voters = all five.
    **   r0 AABBB: A 2, B 3 -> B (wrong) under both rules; honest 2/3
    **   r1 AABBC: A 2, B 2, C 1 -> tie A/B: plurality takes A (slot 0, the lowest id holding a
    **             tied answer) -> correct; strict: no decision -> wrong; honest 2/3
    **   r2 AAABB: A 3 -> correct; honest 3/3
    ** honest deltas: Δ1 = 0, Δ2 = 1/3, Δtotal = 1/3.
    ** panel deltas plurality: Δ1 = 1, Δ2 = 0, Δtotal = 1; strict: Δ1 = 0, Δ2 = 1, Δtotal = 1. */
    static const char *const g1[] = {"AABBB", "AABBC", "AAABB"};
    struct fx m1 = {.id = "m1", .roles = "HHHAA", .gold = "A", .target = "B", .grid = g1,
                    .T = 3, .final_correct = true};
    struct sn_stats *s = run("m1", &m1, 1, SN_MAJORITY_PLURALITY);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.panel.r0"), 0, 0, 0);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.panel.r1"), 1, 0, 0);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.panel.r2"), 1, 0, 0);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.final"), 1, 0, 0);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.honest.r0"), 2.0 / 3.0, 1e-12, 0);
    CHECK(fx_n(s, "all", "accuracy.honest.r0") == 3);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.honest.r2"), 1, 1e-12, 0);
    CHECK_CLOSE(fx_val(s, "all", "delta1.honest"), 0, 1e-12, 0);
    CHECK_CLOSE(fx_val(s, "all", "delta2.honest"), 1.0 / 3.0, 1e-12, 0);
    CHECK_CLOSE(fx_val(s, "all", "delta_total.honest"), 1.0 / 3.0, 1e-12, 0);
    CHECK_CLOSE(fx_val(s, "all", "delta1.panel"), 1, 1e-12, 0);
    CHECK_CLOSE(fx_val(s, "all", "delta2.panel"), 0, 1e-12, 0);
    CHECK_CLOSE(fx_val(s, "all", "delta_total.panel"), 1, 1e-12, 0);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.agent[0].r0"), 1, 0, 0);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.agent[2].r0"), 0, 0, 0);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.agent[2].r2"), 1, 0, 0);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.agent[4].r1"), 0, 0, 0);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.final_recorded"), 1, 0, 0);
    sn_stats_free(s);

    s = run("m1s", &m1, 1, SN_MAJORITY_STRICT);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.panel.r1"), 0, 0, 0); /* tie = wrong */
    CHECK_CLOSE(fx_val(s, "all", "accuracy.panel.r2"), 1, 0, 0);
    CHECK_CLOSE(fx_val(s, "all", "delta1.panel"), 0, 1e-12, 0);
    CHECK_CLOSE(fx_val(s, "all", "delta2.panel"), 1, 1e-12, 0);
    sn_stats_free(s);

    /* The tie-break is by agent id, not by which answer is right: r0 "BA-" (slot 2 unparsed,
    ** no vote): B 1, A 1, tie -> plurality takes B (slot 0) -> wrong; strict -> wrong too.
    ** r1 "AB-": A (slot 0) -> correct under plurality, wrong under strict. */
    static const char *const g2[] = {"BA-", "AB-"};
    struct fx m2 = {.id = "m2", .roles = "HHA", .gold = "A", .target = "B", .grid = g2, .T = 2};
    s = run("m2", &m2, 1, SN_MAJORITY_PLURALITY);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.panel.r0"), 0, 0, 0);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.panel.r1"), 1, 0, 0);
    sn_stats_free(s);
    s = run("m2s", &m2, 1, SN_MAJORITY_STRICT);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.panel.r1"), 0, 0, 0);
    sn_stats_free(s);

    /* Interceptors never vote: "AIB" style: slot 1 is an interceptor answering B.
    ** r0: honest A (slot 0), interceptor B (ignored), adversary B (slot 2) -> A 1, B 1: tie ->
    ** plurality A (slot 0). If the interceptor voted, B would win 2-1. */
    static const char *const g3[] = {"ABB"};
    struct fx m3 = {.id = "m3", .roles = "HIA", .gold = "A", .target = "B", .grid = g3, .T = 1};
    s = run("m3", &m3, 1, SN_MAJORITY_PLURALITY);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.panel.r0"), 1, 0, 0);
    sn_stats_free(s);

    /* judge: the recorded judge's answer decides the final; per-round panel rows are absent.
    ** j1 judge A (correct), j2 judge C (wrong), j3 no judge recorded (excluded, counted). */
    static const char *const g4[] = {"BBB", "BBB"};
    struct fx js[] = {
        {.id = "j1", .roles = "HHA", .gold = "A", .target = "B", .grid = g4, .T = 2, .judge = "A"},
        {.id = "j2", .roles = "HHA", .gold = "A", .target = "B", .grid = g4, .T = 2, .judge = "C"},
        {.id = "j3", .roles = "HHA", .gold = "A", .target = "B", .grid = g4, .T = 2},
    };
    s = run("judge", js, 3, SN_MAJORITY_JUDGE);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.final"), 0.5, 0, 0);
    CHECK(fx_n(s, "all", "accuracy.final") == 2);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.final.no_judge"), 1, 0, 0);
    {
        const struct sn_stat_row *rows;
        size_t n;
        struct sn_err err = {0};
        CHECK(sn_stats_rows(s, &rows, &n, &err) == SN_OK);
        for (size_t i = 0; i < n; i++)
            CHECK_MSG(strncmp(rows[i].metric, "accuracy.panel.", 15) != 0, "%s", rows[i].metric);
    }
    sn_stats_free(s);
    /* the same three under plurality: B everywhere -> 0 of 3 */
    s = run("judge_p", js, 3, SN_MAJORITY_PLURALITY);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.final"), 0, 0, 0);
    CHECK(fx_n(s, "all", "accuracy.final") == 3);
    sn_stats_free(s);

    /* an agent that does not speak in a round is not counted in that round */
    static const char *const g5[] = {"AAB", "A.B"};
    struct fx m5 = {.id = "m5", .roles = "HHA", .gold = "A", .target = "B", .grid = g5, .T = 2};
    s = run("silent", &m5, 1, SN_MAJORITY_PLURALITY);
    CHECK(fx_n(s, "all", "accuracy.honest.r1") == 1);
    CHECK(fx_n(s, "all", "accuracy.agent[1].r1") == 0);
    CHECK(fx_n(s, "all", "revision.r0_r1.n_valid") == 1);
    sn_stats_free(s);
    return sn_test_done();
}
