/* tests/test_eval_accuracy.c: accuracy per round (per agent, honest-slot mean, panel decision),
** the deltas Δ1, Δ2, Δtotal (also in a group that mixes designs: docs/formats.md "Accuracy
** deltas"), and the panel decision rules plurality / strict / judge with the tie rules none /
** lowest-id / random (docs/formats.md "Panel decision"); values by hand. */
#include "test_eval_fixture.h"

static char dir[1024];

static struct sn_stats *run_tie(const char *name, const struct fx *f, size_t n,
                                enum sn_majority m, enum sn_vote_tie tie)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.jsonl", dir, name);
    fx_write(path, f, n);
    struct sn_stats_params p = sn_stats_default_params();
    p.majority = m;
    p.tie = tie;
    return fx_stats(path, &p);
}

/* the default tie rule (none) unless a test names another */
static struct sn_stats *run(const char *name, const struct fx *f, size_t n, enum sn_majority m)
{
    return run_tie(name, f, n, m, sn_stats_default_params().tie);
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s", sn_test_dir("eval_accuracy"));

    /* gold A, slots 0-2 honest, 3-4 adversaries; voters = all five.
    **   r0 AABBB: A 2, B 3 -> B (wrong) under both rules; honest 2/3
    **   r1 AABBC: A 2, B 2, C 1 -> tie A/B: default plurality (ties: none) makes no decision
    **             -> wrong; lowest-id takes A (slot 0) -> correct; strict -> wrong; honest 2/3
    **   r2 AAABB: A 3 -> correct; honest 3/3
    ** honest deltas: Δ1 = 0, Δ2 = 1/3, Δtotal = 1/3.
    ** panel deltas, ties none or strict: Δ1 = 0, Δ2 = 1, Δtotal = 1; lowest-id: Δ1 = 1, Δ2 = 0,
    ** Δtotal = 1. */
    static const char *const g1[] = {"AABBB", "AABBC", "AAABB"};
    struct fx m1 = {.id = "m1", .roles = "HHHAA", .gold = "A", .target = "B", .grid = g1,
                    .T = 3, .final_correct = true};
    struct sn_stats *s = run("m1", &m1, 1, SN_MAJORITY_PLURALITY);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.panel.r0"), 0, 0, 0);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.panel.r1"), 0, 0, 0); /* tie: no decision */
    CHECK_CLOSE(fx_val(s, "all", "accuracy.panel.r2"), 1, 0, 0);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.final"), 1, 0, 0);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.honest.r0"), 2.0 / 3.0, 1e-12, 0);
    CHECK(fx_n(s, "all", "accuracy.honest.r0") == 3);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.honest.r2"), 1, 1e-12, 0);
    CHECK_CLOSE(fx_val(s, "all", "delta1.honest"), 0, 1e-12, 0);
    CHECK_CLOSE(fx_val(s, "all", "delta2.honest"), 1.0 / 3.0, 1e-12, 0);
    CHECK_CLOSE(fx_val(s, "all", "delta_total.honest"), 1.0 / 3.0, 1e-12, 0);
    CHECK_CLOSE(fx_val(s, "all", "delta1.panel"), 0, 1e-12, 0);
    CHECK_CLOSE(fx_val(s, "all", "delta2.panel"), 1, 1e-12, 0);
    CHECK_CLOSE(fx_val(s, "all", "delta_total.panel"), 1, 1e-12, 0);
    CHECK_CLOSE(fx_val(s, "all", "design.mixed"), 0, 0, 0);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.agent[0].r0"), 1, 0, 0);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.agent[2].r0"), 0, 0, 0);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.agent[2].r2"), 1, 0, 0);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.agent[4].r1"), 0, 0, 0);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.final_recorded"), 1, 0, 0);
    sn_stats_free(s);

    s = run_tie("m1l", &m1, 1, SN_MAJORITY_PLURALITY, SN_VOTE_TIE_LOWEST_ID);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.panel.r1"), 1, 0, 0); /* A: slot 0 holds it */
    CHECK_CLOSE(fx_val(s, "all", "delta1.panel"), 1, 1e-12, 0);
    CHECK_CLOSE(fx_val(s, "all", "delta2.panel"), 0, 1e-12, 0);
    CHECK_CLOSE(fx_val(s, "all", "delta_total.panel"), 1, 1e-12, 0);
    sn_stats_free(s);

    /* strict ignores the tie rule: ties are no decision even with lowest-id asked for */
    s = run_tie("m1s", &m1, 1, SN_MAJORITY_STRICT, SN_VOTE_TIE_LOWEST_ID);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.panel.r1"), 0, 0, 0); /* tie = wrong */
    CHECK_CLOSE(fx_val(s, "all", "accuracy.panel.r2"), 1, 0, 0);
    CHECK_CLOSE(fx_val(s, "all", "delta1.panel"), 0, 1e-12, 0);
    CHECK_CLOSE(fx_val(s, "all", "delta2.panel"), 1, 1e-12, 0);
    sn_stats_free(s);

    /* lowest-id breaks ties by agent id, not by which answer is right: r0 "BA-" (slot 2
    ** unparsed, no vote): B 1, A 1, tie -> lowest-id takes B (slot 0) -> wrong; none -> wrong.
    ** r1 "AB-": A (slot 0) -> correct under lowest-id, wrong under none and strict. */
    static const char *const g2[] = {"BA-", "AB-"};
    struct fx m2 = {.id = "m2", .roles = "HHA", .gold = "A", .target = "B", .grid = g2, .T = 2};
    s = run_tie("m2", &m2, 1, SN_MAJORITY_PLURALITY, SN_VOTE_TIE_LOWEST_ID);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.panel.r0"), 0, 0, 0);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.panel.r1"), 1, 0, 0);
    sn_stats_free(s);
    s = run("m2n", &m2, 1, SN_MAJORITY_PLURALITY);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.panel.r0"), 0, 0, 0);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.panel.r1"), 0, 0, 0);
    sn_stats_free(s);
    s = run("m2s", &m2, 1, SN_MAJORITY_STRICT);
    CHECK_CLOSE(fx_val(s, "all", "accuracy.panel.r1"), 0, 0, 0);
    sn_stats_free(s);

    /* Interceptors never vote: "AIB" style: slot 1 is an interceptor answering B.
    ** r0: honest A (slot 0), interceptor B (ignored), adversary B (slot 2) -> A 1, B 1: tie ->
    ** lowest-id A (slot 0). If the interceptor voted, B would win 2-1. */
    static const char *const g3[] = {"ABB"};
    struct fx m3 = {.id = "m3", .roles = "HIA", .gold = "A", .target = "B", .grid = g3, .T = 1};
    s = run_tie("m3", &m3, 1, SN_MAJORITY_PLURALITY, SN_VOTE_TIE_LOWEST_ID);
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

    /* random ties: an A/B tie in every one of 400 debates (different ids), gold A. Each
    ** decision is one of the tied answers, never no decision; over 400 fair draws the share
    ** of A lies in [0.40, 0.60] (±4 sd of Binomial(400, 1/2)/400, sd 0.025); the same file
    ** read twice gives the same share (seeded by debate id and round). */
    {
        enum { NR = 400 };
        static struct fx rs[NR];
        static char ids[NR][16];
        static const char *const g6[] = {"AB"};
        for (int i = 0; i < NR; i++) {
            snprintf(ids[i], sizeof ids[i], "r%03d", i);
            rs[i] = (struct fx){.id = ids[i], .roles = "HA", .gold = "A", .target = "B",
                                .grid = g6, .T = 1};
        }
        s = run_tie("rand", rs, NR, SN_MAJORITY_PLURALITY, SN_VOTE_TIE_RANDOM);
        double share = fx_val(s, "all", "accuracy.panel.r0");
        CHECK(fx_n(s, "all", "accuracy.panel.r0") == NR);
        CHECK_MSG(share >= 0.40 && share <= 0.60, "random tie share of A %.3f", share);
        sn_stats_free(s);
        s = run_tie("rand", rs, NR, SN_MAJORITY_PLURALITY, SN_VOTE_TIE_RANDOM);
        CHECK_CLOSE(fx_val(s, "all", "accuracy.panel.r0"), share, 0, 0);
        sn_stats_free(s);
        /* the same vote through sn_vote_plurality directly: the winner is one of the tied
        ** slots, and the seed decides which */
        const char *v[4] = {"B", "A", NULL, "C"};
        int seen[4] = {0};
        for (uint64_t seed = 0; seed < 200; seed++) {
            bool tie = false;
            int w = sn_vote_plurality(v, 4, SN_VOTE_TIE_RANDOM, seed, NULL, NULL, &tie);
            CHECK(tie && w >= 0 && w != 2);
            if (w >= 0 && w < 4)
                seen[w]++;
        }
        CHECK_MSG(seen[0] > 30 && seen[1] > 30 && seen[3] > 30, "draws %d %d %d", seen[0],
                  seen[1], seen[3]); /* each about 67 of 200; sd 6.7 */
        bool tie = false;
        CHECK(sn_vote_plurality(v, 4, SN_VOTE_TIE_NONE, 0, NULL, NULL, &tie) == -1 && tie);
        CHECK(sn_vote_plurality(v, 4, SN_VOTE_TIE_LOWEST_ID, 0, NULL, NULL, &tie) == 0);
        const char *v2[3] = {"B", "A", "A"};
        CHECK(sn_vote_plurality(v2, 3, SN_VOTE_TIE_NONE, 0, NULL, NULL, &tie) == 1 && !tie);
        const char *v3[2] = {NULL, NULL};
        CHECK(sn_vote_plurality(v3, 2, SN_VOTE_TIE_LOWEST_ID, 0, NULL, NULL, &tie) == -1);
    }

    /* Deltas in a group that mixes designs: x has 2 honest slots and 2 rounds, y 4 honest
    ** slots and 3 rounds (gold A). Honest correct per round: x 0/2, 2/2; y 1/4, 1/4, 4/4.
    ** Pooled rows: r0 1/6, r1 3/6, r2 4/4, last (x r1 + y r2) 6/6.
    ** Δ1 = 3/6 − 1/6 = 1/3 (the mean of the per-debate Δ1s would be (1 + 0)/2 = 1/2);
    ** Δ2 = 1 − 3/6 = 1/2 (r2 and r1 cover different debates); Δtotal = 1 − 1/6 = 5/6
    ** (per-debate mean (1 + 3/4)/2 = 7/8). design.mixed = 1 with a note on the Δ rows. */
    {
        static const char *const gx[] = {"BBB", "AAB"};
        static const char *const gy[] = {"ABBBB", "ABBBB", "AAAAB"};
        struct fx mx[2] = {
            {.id = "x", .roles = "HHA", .gold = "A", .target = "B", .grid = gx, .T = 2},
            {.id = "y", .roles = "HHHHA", .gold = "A", .target = "B", .grid = gy, .T = 3},
        };
        s = run("mixed", mx, 2, SN_MAJORITY_PLURALITY);
        CHECK_CLOSE(fx_val(s, "all", "accuracy.honest.r0"), 1.0 / 6.0, 1e-12, 0);
        CHECK_CLOSE(fx_val(s, "all", "accuracy.honest.r1"), 3.0 / 6.0, 1e-12, 0);
        CHECK_CLOSE(fx_val(s, "all", "accuracy.honest.last"), 1, 1e-12, 0);
        CHECK_CLOSE(fx_val(s, "all", "delta1.honest"), 1.0 / 3.0, 1e-12, 0);
        CHECK_CLOSE(fx_val(s, "all", "delta2.honest"), 0.5, 1e-12, 0);
        CHECK_CLOSE(fx_val(s, "all", "delta_total.honest"), 5.0 / 6.0, 1e-12, 0);
        /* the delta is the difference of the printed rows, exactly */
        CHECK_CLOSE(fx_val(s, "all", "delta1.honest"),
                    fx_val(s, "all", "accuracy.honest.r1") -
                        fx_val(s, "all", "accuracy.honest.r0"), 0, 0);
        CHECK_CLOSE(fx_val(s, "all", "design.mixed"), 1, 0, 0);
        const struct sn_stat_row *r = fx_row(s, "all", "delta1.honest");
        CHECK(r && r->note && strstr(r->note, "mixes designs"));
        CHECK(r && r->kind == SN_STAT_DIFF);
        /* panel: x r0 B B B -> B wrong, r1 A A B -> A correct; y r0 A B B B B -> B wrong,
        ** r1 same wrong, r2 A A A A B -> correct. Panel r0 0/2, r1 1/2, last 2/2. */
        CHECK_CLOSE(fx_val(s, "all", "delta1.panel"), 0.5, 1e-12, 0);
        CHECK_CLOSE(fx_val(s, "all", "delta_total.panel"), 1, 1e-12, 0);
        sn_stats_free(s);
        /* an early stop alone also mixes designs */
        mx[1] = (struct fx){.id = "y", .roles = "HHA", .gold = "A", .target = "B", .grid = gx,
                            .T = 2, .stopped = true};
        s = run("mixed_stop", mx, 2, SN_MAJORITY_PLURALITY);
        CHECK_CLOSE(fx_val(s, "all", "design.mixed"), 1, 0, 0);
        sn_stats_free(s);
    }
    return sn_test_done();
}
