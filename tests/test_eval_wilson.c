/* tests/test_eval_wilson.c: Wilson 95% intervals (of a proportion and of a mean in [0, 1]) and
** the matched-panel arithmetic.
** References: Newcombe (1998), "Two-sided confidence intervals for the single proportion",
** Stat. Med. 17:857, Table I, method 3 (Wilson score without continuity correction), printed to
** 4 decimals; and the published matched-panel check of the heterogeneous-debate paper, §3.1 (89.1 / 35.2 / 90.0). */
#include "eval/eval.h"
#include "testutil.h"

int main(void)
{
    static const struct { uint64_t k, n; double lo, hi; } newcombe[] = {
        {81, 263, 0.2553, 0.3662},
        {15, 148, 0.0624, 0.1605},
        {0, 20, 0.0000, 0.1611},
        {1, 29, 0.0061, 0.1718},
        {29, 29, 0.8830, 1.0000},
    };
    for (size_t i = 0; i < sizeof newcombe / sizeof newcombe[0]; i++) {
        double lo, hi;
        sn_wilson(newcombe[i].k, newcombe[i].n, &lo, &hi);
        /* the table has 4 decimals: half a unit in the last place */
        CHECK_CLOSE(lo, newcombe[i].lo, 5e-5, 0);
        CHECK_CLOSE(hi, newcombe[i].hi, 5e-5, 0);
    }
    double lo, hi;
    /* 0 of n: lo is exactly 0, hi = (z²/n)/(1 + z²/n) */
    sn_wilson(0, 10, &lo, &hi);
    double z2n = SN_Z95 * SN_Z95 / 10.0;
    CHECK(lo == 0.0);
    CHECK_CLOSE(hi, z2n / (1.0 + z2n), 1e-12, 0);
    /* n of n: hi is exactly 1, lo = 1/(1 + z²/n) */
    sn_wilson(10, 10, &lo, &hi);
    CHECK(hi == 1.0);
    CHECK_CLOSE(lo, 1.0 / (1.0 + z2n), 1e-12, 0);
    /* 1 of 2 is symmetric about 1/2 */
    sn_wilson(1, 2, &lo, &hi);
    CHECK_CLOSE(lo + hi, 1.0, 1e-12, 0);
    /* n = 0: undefined */
    sn_wilson(0, 0, &lo, &hi);
    CHECK(isnan(lo) && isnan(hi));

    /* the interval of a mean (a fractional k, docs/eval.md "Intervals"): equal to sn_wilson for
    ** an integer k; for 2.5 of 5 (p = 1/2) symmetric about 1/2 with half-width
    ** z √(1/20 + z²/100) / (1 + z²/5) */
    for (size_t i = 0; i < sizeof newcombe / sizeof newcombe[0]; i++) {
        double l1, h1, l2, h2;
        sn_wilson(newcombe[i].k, newcombe[i].n, &l1, &h1);
        sn_wilson_mean((double)newcombe[i].k, (double)newcombe[i].n, &l2, &h2);
        CHECK(l1 == l2 && h1 == h2);
    }
    sn_wilson_mean(2.5, 5, &lo, &hi);
    double z2 = SN_Z95 * SN_Z95, half = SN_Z95 * sqrt(0.05 + z2 / 100.0) / (1.0 + z2 / 5.0);
    CHECK_CLOSE(lo, 0.5 - half, 1e-12, 0);
    CHECK_CLOSE(hi, 0.5 + half, 1e-12, 0);
    sn_wilson_mean(5.5, 5, &lo, &hi); /* k above n */
    CHECK(isnan(lo) && isnan(hi));

    /* matched panels, published: B 89.1, H 35.2, A 90.0 -> bonus 53.9, penalty 0.9,
    ** cost 54.8, q* = 53.9/54.8 = 98.4% */
    struct sn_panels p = sn_panels_compute(89.1, 35.2, 90.0);
    CHECK_CLOSE(p.bonus, 53.9, 1e-9, 0);
    CHECK_CLOSE(p.penalty, 0.9, 1e-9, 0);
    CHECK_CLOSE(p.cost, 54.8, 1e-9, 0);
    CHECK_CLOSE(p.q_star, 100.0 * 53.9 / 54.8, 1e-9, 0);
    char buf[32];
    snprintf(buf, sizeof buf, "%.1f", p.q_star);
    CHECK_STR(buf, "98.4");
    p = sn_panels_compute(50, 50, 50);
    CHECK(isnan(p.q_star));

    enum sn_majority m;
    struct sn_err err = {0};
    CHECK(sn_majority_parse("strict", &m, &err) == SN_OK && m == SN_MAJORITY_STRICT);
    CHECK(sn_majority_parse("most", &m, &err) == SN_E_ARG);
    CHECK(strstr(err.msg, "unknown rule 'most'") != NULL);
    sn_err_clear(&err);
    CHECK(sn_stats_check_field("n_adversaries", &err) == SN_OK);
    CHECK(sn_stats_check_field("model[2]", &err) == SN_OK);
    CHECK(sn_stats_check_field("labels.whatever", &err) == SN_OK);
    CHECK(sn_stats_check_field("stratgy", &err) == SN_E_ARG);
    CHECK_MSG(strstr(err.msg, "did you mean 'strategy'") != NULL, "%s", err.msg);
    sn_err_clear(&err);
    CHECK(sn_stats_check_field("model[x]", &err) == SN_E_ARG);
    return sn_test_done();
}
