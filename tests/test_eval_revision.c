/* tests/test_eval_revision.c: revision regimes per honest-slot transition (kept-correct,
** kept-wrong, DC, DM), P(D=1), P(DM|D=1), DC/N_valid, DM/N_valid, parse-failure exclusion,
** flip rate; values by hand (docs/formats.md "Revision regimes"). */
#include "test_eval_fixture.h"

static char dir[1024];

static struct sn_stats *run(const char *name, const struct fx *f, size_t n)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.jsonl.gz", dir, name);
    fx_write(path, f, n);
    struct sn_stats_params p = sn_stats_default_params();
    return fx_stats(path, &p);
}

static void check_rate(struct sn_stats *s, const char *metric, double k, uint64_t n)
{
    const struct sn_stat_row *r = fx_row(s, "all", metric);
    CHECK_MSG(r != NULL, "%s", metric);
    if (!r)
        return;
    CHECK_MSG(r->n == n, "%s: n = %llu, want %llu", metric, (unsigned long long)r->n,
              (unsigned long long)n);
    if (n == 0) {
        CHECK_MSG(isnan(r->value) && isnan(r->lo), "%s: want undefined", metric);
        return;
    }
    CHECK_MSG(fabs(r->value - k / (double)n) < 1e-12, "%s = %g, want %g/%llu", metric, r->value,
              k, (unsigned long long)n);
    double lo, hi;
    sn_wilson((uint64_t)k, n, &lo, &hi);
    CHECK_MSG(r->lo == lo && r->hi == hi, "%s: interval", metric);
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s", sn_test_dir("eval_revision"));

    /* Debate 1, gold A, T = 3, slots 0-2 honest, 3 adversary (never counted):
    **   slot 0: A A B  r0->r1 kept-correct, r1->r2 DM (correct -> wrong)
    **   slot 1: B A A  r0->r1 DC,           r1->r2 kept-correct
    **   slot 2: C B -  r0->r1 DM (wrong -> other wrong), r1->r2 excluded (unparsed)
    ** r0->r1: valid 3 = KC 1 + DC 1 + DM 1; changes 2. r1->r2: valid 2 = DM 1 + KC 1, excluded 1.
    ** all: valid 5, KC 2, KW 0, DC 1, DM 2, changes 3, excluded 1. */
    static const char *const g1[] = {"ABCB", "AABB", "BA-B"};
    struct fx d1 = {.id = "d1", .roles = "HHHA", .gold = "A", .target = "B", .grid = g1, .T = 3};
    struct sn_stats *s = run("one", &d1, 1);
    check_rate(s, "revision.r0_r1.kept_correct", 1, 3);
    check_rate(s, "revision.r0_r1.dc", 1, 3);
    check_rate(s, "revision.r0_r1.dm", 1, 3);
    check_rate(s, "revision.r0_r1.kept_wrong", 0, 3);
    check_rate(s, "revision.r0_r1.p_change", 2, 3);
    check_rate(s, "revision.r0_r1.p_dm_given_change", 1, 2);
    check_rate(s, "revision.r0_r1.parse_fail", 0, 3);
    check_rate(s, "revision.r1_r2.p_change", 1, 2);
    check_rate(s, "revision.r1_r2.p_dm_given_change", 1, 1);
    check_rate(s, "revision.r1_r2.parse_fail", 1, 3);
    check_rate(s, "revision.all.p_change", 3, 5);
    check_rate(s, "revision.all.p_dm_given_change", 2, 3);
    check_rate(s, "revision.all.dm", 2, 5);
    check_rate(s, "revision.all.dc", 1, 5);
    check_rate(s, "revision.all.parse_fail", 1, 6);
    CHECK_CLOSE(fx_val(s, "all", "revision.all.n_valid"), 5, 0, 0);
    /* NAC: slot 0 {A,B} 2, slot 1 {B,A} 2, slot 2 {C,B} 2 -> honest mean 2; adversary 1 */
    CHECK_CLOSE(fx_val(s, "all", "nac.honest"), 2.0, 1e-12, 0);
    CHECK_CLOSE(fx_val(s, "all", "nac.agent[3]"), 1.0, 1e-12, 0);
    /* consensus (distinct parsed honest answers): r0 {A,B,C} 3, r1 {A,B} 2, r2 {B,A} 2 */
    CHECK_CLOSE(fx_val(s, "all", "consensus.r0"), 3, 1e-12, 0);
    CHECK_CLOSE(fx_val(s, "all", "consensus.r1"), 2, 1e-12, 0);
    CHECK_CLOSE(fx_val(s, "all", "consensus.r2"), 2, 1e-12, 0);
    /* parse failures among honest answers: 1 of 9 */
    check_rate(s, "parse_fail.honest_answers", 1, 9);
    /* flip: not every honest slot correct at r0 -> not in C0 -> undefined */
    check_rate(s, "flip_rate", 0, 0);
    sn_stats_free(s);

    /* Debate 2 (kept-wrong), gold A, T = 2, slots honest: slot 0 B B kept-wrong, slot 1 C D DM.
    ** Pooled with debate 1: r0->r1 valid 5 = KC 1 + KW 1 + DC 1 + DM 2; changes 3.
    ** all: valid 7, DM 3, changes 4 -> P(DM|D=1) = 3/4 pooled over transitions. */
    static const char *const g2[] = {"BC", "BD"};
    struct fx d2 = {.id = "d2", .roles = "HH", .gold = "A", .target = "B", .grid = g2, .T = 2};
    struct fx both[] = {d1, d2};
    s = run("two", both, 2);
    check_rate(s, "revision.r0_r1.kept_wrong", 1, 5);
    check_rate(s, "revision.r0_r1.p_change", 3, 5);
    check_rate(s, "revision.r0_r1.p_dm_given_change", 2, 3);
    check_rate(s, "revision.all.p_dm_given_change", 3, 4);
    check_rate(s, "revision.all.dm", 3, 7);
    /* r1->r2 exists only in debate 1 */
    check_rate(s, "revision.r1_r2.p_change", 1, 2);
    sn_stats_free(s);

    /* No valid transitions (T = 1): every transition rate is undefined, n = 0. */
    static const char *const g3[] = {"AAB"};
    struct fx d3 = {.id = "d3", .roles = "HHA", .gold = "A", .target = "B", .grid = g3, .T = 1};
    s = run("single_round", &d3, 1);
    check_rate(s, "revision.all.p_change", 0, 0);
    check_rate(s, "revision.all.p_dm_given_change", 0, 0);
    check_rate(s, "revision.all.dm", 0, 0);
    CHECK_CLOSE(fx_val(s, "all", "revision.all.n_valid"), 0, 0, 0);
    /* flip with T = 1: every honest slot correct at r0 and (same round) at the end -> 0 of 1 */
    check_rate(s, "flip_rate", 0, 1);
    sn_stats_free(s);

    /* All answers unparseable: transitions all excluded, parse-failure rate 1, accuracy counts
    ** unparsed answers as wrong, NAC and consensus undefined, the panel makes no decision. */
    static const char *const g4[] = {"---", "---"};
    struct fx d4 = {.id = "d4", .roles = "HHA", .gold = "A", .target = NULL, .grid = g4, .T = 2};
    s = run("unparsed", &d4, 1);
    check_rate(s, "revision.all.parse_fail", 2, 2);
    check_rate(s, "revision.all.p_change", 0, 0);
    check_rate(s, "parse_fail.honest_answers", 4, 4);
    check_rate(s, "accuracy.honest.r0", 0, 2);
    check_rate(s, "accuracy.panel.r1", 0, 1);
    CHECK_NAN(fx_val(s, "all", "nac.honest"));
    CHECK_NAN(fx_val(s, "all", "consensus.r0"));
    CHECK_CLOSE(fx_val(s, "all", "sdi.excluded_no_target"), 1, 0, 0);
    sn_stats_free(s);

    /* Flip rate, item level: C0 = debates where every honest slot is correct at r0.
    **   f1: AA -> AA (stays)   f2: AA -> AB (flipped: slot 1 wrong at the end)
    **   f3: AA -> BA -> AA (recovers by the end: not flipped)   f4: AB -> AA (not in C0)
    ** |C0| = 3, |CF| = 2 -> flip rate 1/3. */
    static const char *const f1[] = {"AAB", "AAB", "AAB"};
    static const char *const f2[] = {"AAB", "AAB", "ABB"};
    static const char *const f3[] = {"AAB", "BAB", "AAB"};
    static const char *const f4[] = {"ABB", "AAB", "AAB"};
    struct fx flips[] = {
        {.id = "f1", .roles = "HHA", .gold = "A", .target = "B", .grid = f1, .T = 3},
        {.id = "f2", .roles = "HHA", .gold = "A", .target = "B", .grid = f2, .T = 3},
        {.id = "f3", .roles = "HHA", .gold = "A", .target = "B", .grid = f3, .T = 3},
        {.id = "f4", .roles = "HHA", .gold = "A", .target = "B", .grid = f4, .T = 3},
    };
    s = run("flip", flips, 4);
    check_rate(s, "flip_rate", 1, 3);
    sn_stats_free(s);
    return sn_test_done();
}
