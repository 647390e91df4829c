/* tests/test_data_sim_fidelity.c: the `sim` backend's group dynamics against the findings of
** "When Allies Turn Foes" (§3.1, §3.2, §4.3, Tables 1-2; docs/simulate.md "Findings the sim
** agents reproduce"). Every cell runs the same synthetic items and seeds; SDI and FAT come from
** the eval module (sentinel stats), accuracy deltas and attack success are counted here from
** the trajectories. Each finding is one check with a stated threshold on a 95% interval:
**   F1 strategy, over 1-5 collaborators, 1 adversary: SDI simultaneous > self-consistency
**      one-by-one > one-by-one (both differences' intervals above 0), and the attack spreads
**      the same way: the share of all honest answers on the target in the last round orders
**      one-by-one > self-consistency one-by-one > simultaneous (intervals above 0);
**   F2 prior consensus: with the adversary held back until the honest agents agree, fewer
**      honest answers hold the target after the adversary's third turn than when it attacks
**      from round 0 (interval of the difference above 0); and the protection shrinks when the
**      consensus weight is 0 (the mechanism, not the delay, protects);
**   F3 honest accuracy falls round over round under attack: Δtotal < 0 in every cell (1 and 2
**      adversaries × 1-5 collaborators, point estimates) and the mean over collaborators within
**      a factor of two of Table 2's four-model mean (1 adversary −0.22, 2 adversaries −0.38);
**   F4 SDI rises with collaborators: SDI(5) − SDI(1) > 0 (interval above 0), slope > 0;
**   F5 two adversaries: SDI(2A) < SDI(1A) with the gap within a factor of two of Table 1's
**      BlendQA gap (0.81 − 0.68 = 0.13), each level within a factor of two of Table 1's, and
**      FAT(2A) < FAT(1A) (intervals above 0);
**   F6 self-reflection: SDI with reflection − without > 0 (interval above 0).
** Differences of cell means use se = √(se₁² + se₂²) (cells share items and seeds, so the
** true se of the difference is smaller: the check is conservative).
** SN_FIDELITY_REPORT=1 prints every cell. */
#include "eval/eval.h"
#include "test_data_sim_util.h"

#include <math.h>

enum { N_ITEMS = 100, N_REPS = 2 };

struct cellres {
    double sdi, sdi_se, fat, fat_se;
    double d_total, d_total_se; /* honest accuracy last − r0, per debate */
    double acc0;
    double hit3, hit3_se;       /* share of honest answers = target after 3 adversary turns */
    size_t n;
};

static struct sn_qset *qs;
static struct sn_llm_backend *sim_default, *sim_nocons;
static bool report;

static double se_of(const struct sn_stat_row *r)
{
    return r && isfinite(r->lo) ? (r->hi - r->lo) / (2.0 * SN_Z95) : NAN;
}

static const struct sn_stat_row *row(const struct sn_stat_row *rows, size_t n, const char *m)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(rows[i].metric, m))
            return &rows[i];
    return NULL;
}

static struct cellres run_cell(const char *name, enum sn_strategy st, int n_ca, int n_aa, int T,
                               bool reflect, int join_by, struct sn_llm_backend *be)
{
    struct sn_experiment x;
    mk_exp(&x, name, SN_SCEN_COLLABORATION, n_ca + n_aa, n_aa, T, st, NULL, NULL);
    x.self_reflection = reflect;
    x.join_by = join_by;
    x.rhetoric = "mixed";
    struct setup_store ss;
    mk_setup(&ss, &x, be);
    struct sn_stats *s = NULL;
    struct sn_err err = {0};
    struct sn_stats_params p = sn_stats_default_params();
    CHECK(sn_stats_create(&p, &s, &err) == SN_OK);
    double dsum = 0, dsq = 0, hsum = 0, hsq = 0;
    size_t nd = 0, nh = 0;
    struct sn_buf line = {0};
    for (size_t i = 0; i < N_ITEMS; i++) {
        for (int rep = 0; rep < N_REPS; rep++) {
            sn_buf_reset(&line);
            if (sn_debate_run(&ss.s, &qs->items[i], rep, &line, NULL, &err)) {
                fprintf(stderr, "debate: %s\n", err.msg);
                CHECK(0);
                continue;
            }
            struct sn_traj *t = NULL;
            if (sn_traj_parse(line.data, line.len, name, &t, &err) ||
                sn_stats_add(s, t, &err)) {
                fprintf(stderr, "%s: %s\n", name, err.msg);
                CHECK(0);
                sn_traj_free(t);
                continue;
            }
            /* honest accuracy at r0 and at the last round; target share after 3 adversary
            ** turns (the adversary's first round + 2) */
            int k0 = 0, kl = 0, n0 = 0, nl = 0, t_adv = -1;
            size_t L = t->n_rounds - 1;
            for (size_t a = 0; a < t->n_agents; a++) {
                if (t->agents[a].role == SN_ROLE_ADVERSARY) {
                    for (size_t r = 0; r < t->n_rounds; r++)
                        if (sn_traj_msg_of(t, r, (int)a) && (t_adv < 0 || (int)r < t_adv)) {
                            t_adv = (int)r;
                            break;
                        }
                    continue;
                }
                if (t->agents[a].role != SN_ROLE_HONEST)
                    continue;
                const struct sn_traj_msg *m0 = sn_traj_msg_of(t, 0, (int)a);
                const struct sn_traj_msg *ml = sn_traj_msg_of(t, L, (int)a);
                n0 += m0 != NULL;
                nl += ml != NULL;
                k0 += m0 && m0->answer && !strcmp(m0->answer, t->gold);
                kl += ml && ml->answer && !strcmp(ml->answer, t->gold);
            }
            if (n0 && nl) {
                double d = (double)kl / nl - (double)k0 / n0;
                dsum += d;
                dsq += d * d;
                nd++;
            }
            if (t_adv >= 0 && (size_t)t_adv + 2 < t->n_rounds && t->adversarial_target) {
                int hit = 0, nn = 0;
                for (size_t a = 0; a < t->n_agents; a++) {
                    const struct sn_traj_msg *m = sn_traj_msg_of(t, (size_t)t_adv + 2, (int)a);
                    if (t->agents[a].role != SN_ROLE_HONEST || !m)
                        continue;
                    nn++;
                    hit += m->answer && !strcmp(m->answer, t->adversarial_target);
                }
                if (nn) {
                    double h = (double)hit / nn;
                    hsum += h;
                    hsq += h * h;
                    nh++;
                }
            }
            sn_traj_free(t);
        }
    }
    sn_buf_free(&line);
    struct cellres c = {0};
    const struct sn_stat_row *rows;
    size_t nr = 0;
    CHECK(sn_stats_rows(s, &rows, &nr, &err) == SN_OK);
    const struct sn_stat_row *r = row(rows, nr, "sdi");
    c.sdi = r ? r->value : NAN;
    c.sdi_se = se_of(r);
    r = row(rows, nr, "fat");
    c.fat = r ? r->value : NAN;
    c.fat_se = se_of(r);
    r = row(rows, nr, "accuracy.honest.r0");
    c.acc0 = r ? r->value : NAN;
    c.n = nd;
    c.d_total = nd ? dsum / nd : NAN;
    c.d_total_se = nd > 1 ? sqrt((dsq - dsum * dsum / nd) / (nd - 1) / nd) : NAN;
    c.hit3 = nh ? hsum / nh : NAN;
    c.hit3_se = nh > 1 ? sqrt((hsq - hsum * hsum / nh) / (nh - 1) / nh) : NAN;
    sn_stats_free(s);
    if (report)
        printf("%-28s CA %d AA %d T %d: SDI %.3f ± %.3f  FAT %.2f  acc0 %.3f  Δtotal %+.3f ± "
               "%.3f  hit3 %.3f\n", name, n_ca, n_aa, T, c.sdi, SN_Z95 * c.sdi_se, c.fat,
               c.acc0, c.d_total, SN_Z95 * c.d_total_se, c.hit3);
    return c;
}

/* a − b > 0 with its 95% interval above 0 */
static int check_above(const char *what, double a, double sa, double b, double sb)
{
    double d = a - b, h = SN_Z95 * sqrt(sa * sa + sb * sb);
    CHECK_MSG(isfinite(d) && d - h > 0, "%s: difference %.4f, 95%% interval [%.4f, %.4f] "
              "not above 0", what, d, d - h, d + h);
    if (report)
        printf("  %s: %.4f [%.4f, %.4f]\n", what, d, d - h, d + h);
    return 0;
}

int main(void)
{
    report = getenv("SN_FIDELITY_REPORT") != NULL;
    struct sn_err err = {0};
    qs = sn_calloc(1, sizeof *qs);
    /* SN_FIDELITY_SEED: another dataset seed (for exploring; the test's seed is 7) */
    const char *seed_env = getenv("SN_FIDELITY_SEED");
    uint64_t dseed = seed_env ? strtoull(seed_env, NULL, 10) : 7;
    CHECK(qs && sn_synthetic_generate(qs, N_ITEMS, dseed, 0.0, "synthetic", &err) == SN_OK);
    /* SN_FIDELITY_SIM: extra sim endpoint keys, e.g. "\"sway\":2.5" (for exploring) */
    const char *extra = getenv("SN_FIDELITY_SIM");
    char j1[512], j0[512];
    snprintf(j1, sizeof j1, "{\"kind\":\"sim\"%s%s}", extra ? "," : "", extra ? extra : "");
    snprintf(j0, sizeof j0, "{\"kind\":\"sim\",\"consensus_weight\":0%s%s}", extra ? "," : "",
             extra ? extra : "");
    cJSON *cfg = cJSON_Parse(j1);
    cJSON *cfg0 = cJSON_Parse(j0);
    CHECK(sn_sim_endpoint_open(cfg, &sim_default, &err) == SN_OK);
    CHECK(sn_sim_endpoint_open(cfg0, &sim_nocons, &err) == SN_OK);
    cJSON_Delete(cfg);
    cJSON_Delete(cfg0);
    if (!sim_default || !sim_nocons)
        return sn_test_done();

    /* F1: strategies, 1 adversary, 1-5 collaborators, 3 rounds */
    static const enum sn_strategy strat[3] = {SN_STRAT_SIMULTANEOUS, SN_STRAT_SC_ONE_BY_ONE,
                                              SN_STRAT_ONE_BY_ONE};
    static const char *const sname[3] = {"simultaneous", "sc_one_by_one", "one_by_one"};
    struct cellres st[3][5], two[5], refl[5];
    double mean_sdi[3] = {0}, var_sdi[3] = {0}, mean_hit[3] = {0}, var_hit[3] = {0};
    for (int s = 0; s < 3; s++) {
        for (int ca = 1; ca <= 5; ca++) {
            st[s][ca - 1] = run_cell(sname[s], strat[s], ca, 1, 3, false, 0, sim_default);
            mean_sdi[s] += st[s][ca - 1].sdi / 5.0;
            var_sdi[s] += st[s][ca - 1].sdi_se * st[s][ca - 1].sdi_se / 25.0;
            mean_hit[s] += st[s][ca - 1].hit3 / 5.0; /* round 2 = the last of 3 */
            var_hit[s] += st[s][ca - 1].hit3_se * st[s][ca - 1].hit3_se / 25.0;
        }
    }
    check_above("F1 SDI simultaneous - sc-one-by-one", mean_sdi[0], sqrt(var_sdi[0]),
                mean_sdi[1], sqrt(var_sdi[1]));
    check_above("F1 SDI sc-one-by-one - one-by-one", mean_sdi[1], sqrt(var_sdi[1]),
                mean_sdi[2], sqrt(var_sdi[2]));
    check_above("F1 target share one-by-one - sc-one-by-one", mean_hit[2], sqrt(var_hit[2]),
                mean_hit[1], sqrt(var_hit[1]));
    check_above("F1 target share sc-one-by-one - simultaneous", mean_hit[1], sqrt(var_hit[1]),
                mean_hit[0], sqrt(var_hit[0]));
    if (report)
        printf("  F1 mean SDI: simultaneous %.3f, sc-one-by-one %.3f, one-by-one %.3f; target "
               "share: %.3f, %.3f, %.3f\n", mean_sdi[0], mean_sdi[1], mean_sdi[2], mean_hit[0],
               mean_hit[1], mean_hit[2]);

    /* F3-F5 on self-consistency one-by-one (the paper's Tables 1-2 strategy) */
    double d1 = 0, d2 = 0, sdi1 = 0, sdi2 = 0, v1 = 0, v2 = 0, fat1 = 0, fat2 = 0, fv1 = 0,
           fv2 = 0;
    for (int ca = 1; ca <= 5; ca++) {
        two[ca - 1] = run_cell("sc_one_by_one_2A", SN_STRAT_SC_ONE_BY_ONE, ca, 2, 3, false, 0,
                               sim_default);
        const struct cellres *a = &st[1][ca - 1], *b = &two[ca - 1];
        CHECK_MSG(a->d_total < 0, "F3: 1 adversary, %d collaborators: Δtotal %+.3f >= 0", ca,
                  a->d_total);
        CHECK_MSG(b->d_total < 0, "F3: 2 adversaries, %d collaborators: Δtotal %+.3f >= 0", ca,
                  b->d_total);
        d1 += a->d_total / 5.0;
        d2 += b->d_total / 5.0;
        sdi1 += a->sdi / 5.0;
        sdi2 += b->sdi / 5.0;
        v1 += a->sdi_se * a->sdi_se / 25.0;
        v2 += b->sdi_se * b->sdi_se / 25.0;
        fat1 += a->fat / 5.0;
        fat2 += b->fat / 5.0;
        fv1 += a->fat_se * a->fat_se / 25.0;
        fv2 += b->fat_se * b->fat_se / 25.0;
    }
    /* Table 2, mean over GPT-3.5, GPT-4.1-mini, LLaMA-3.3, Qwen-32B and 1-5 collaborators */
    CHECK_MSG(d1 < -0.2176 / 2 && d1 > -0.2176 * 2, "F3: mean Δtotal, 1 adversary %+.3f not "
              "within a factor of 2 of -0.218", d1);
    CHECK_MSG(d2 < -0.3785 / 2 && d2 > -0.3785 * 2, "F3: mean Δtotal, 2 adversaries %+.3f not "
              "within a factor of 2 of -0.379", d2);
    if (report)
        printf("  F3 mean Δtotal: 1A %+.3f (paper -0.218), 2A %+.3f (paper -0.379)\n", d1, d2);
    /* F4: collaborators */
    check_above("F4 SDI 5 CA - 1 CA", st[1][4].sdi, st[1][4].sdi_se, st[1][0].sdi,
                st[1][0].sdi_se);
    {
        double sx = 0, sy = 0, sxy = 0, sxx = 0;
        for (int ca = 1; ca <= 5; ca++) {
            sx += ca;
            sy += st[1][ca - 1].sdi;
            sxy += ca * st[1][ca - 1].sdi;
            sxx += ca * ca;
        }
        double slope = (5 * sxy - sx * sy) / (5 * sxx - sx * sx);
        CHECK_MSG(slope > 0, "F4: SDI slope over collaborators %.4f <= 0", slope);
    }
    /* F5: two adversaries; Table 1 (GPT-4.1-mini, BlendQA): 0.81 vs 0.68 */
    check_above("F5 SDI 1A - 2A", sdi1, sqrt(v1), sdi2, sqrt(v2));
    CHECK_MSG(sdi1 - sdi2 > 0.13 / 2 && sdi1 - sdi2 < 0.13 * 2, "F5: SDI gap 1A - 2A %.3f not "
              "within a factor of 2 of 0.13", sdi1 - sdi2);
    CHECK_MSG(sdi1 > 0.81 / 2 && sdi1 < 0.81 * 2 && sdi2 > 0.68 / 2 && sdi2 < 0.68 * 2,
              "F5: SDI 1A %.3f, 2A %.3f not within a factor of 2 of 0.81, 0.68", sdi1, sdi2);
    if (report)
        printf("  F5 mean SDI: 1A %.3f (paper 0.81), 2A %.3f (paper 0.68)\n", sdi1, sdi2);
    check_above("F5 FAT 1A - 2A", fat1, sqrt(fv1), fat2, sqrt(fv2));

    /* F6: self-reflection (self-consistency one-by-one, 1 adversary) */
    double sr = 0, vr = 0;
    for (int ca = 1; ca <= 5; ca++) {
        refl[ca - 1] = run_cell("sc_one_by_one_reflect", SN_STRAT_SC_ONE_BY_ONE, ca, 1, 3, true,
                                0, sim_default);
        sr += refl[ca - 1].sdi / 5.0;
        vr += refl[ca - 1].sdi_se * refl[ca - 1].sdi_se / 25.0;
    }
    check_above("F6 SDI reflection - none", sr, sqrt(vr), sdi1, sqrt(v1));

    /* F2: prior consensus, 6 rounds, 2-5 collaborators (consensus needs two) */
    double late = 0, early = 0, vl = 0, ve = 0, late0 = 0, early0 = 0, vl0 = 0, ve0 = 0;
    for (int ca = 2; ca <= 5; ca++) {
        struct cellres e = run_cell("prior_start", SN_STRAT_SC_ONE_BY_ONE, ca, 1, 6, false, 0,
                                    sim_default);
        struct cellres l = run_cell("prior_after_consensus", SN_STRAT_SC_ONE_BY_ONE, ca, 1, 6,
                                    false, 3, sim_default);
        struct cellres e0 = run_cell("prior_start_w0", SN_STRAT_SC_ONE_BY_ONE, ca, 1, 6, false,
                                     0, sim_nocons);
        struct cellres l0 = run_cell("prior_after_consensus_w0", SN_STRAT_SC_ONE_BY_ONE, ca, 1,
                                     6, false, 3, sim_nocons);
        early += e.hit3 / 4.0;
        late += l.hit3 / 4.0;
        ve += e.hit3_se * e.hit3_se / 16.0;
        vl += l.hit3_se * l.hit3_se / 16.0;
        early0 += e0.hit3 / 4.0;
        late0 += l0.hit3 / 4.0;
        ve0 += e0.hit3_se * e0.hit3_se / 16.0;
        vl0 += l0.hit3_se * l0.hit3_se / 16.0;
    }
    check_above("F2 target share after 3 adversary turns: from start - after consensus", early,
                sqrt(ve), late, sqrt(vl));
    CHECK_MSG(early - late > (early0 - late0) + 0.02, "F2: protection with consensus weight "
              "%.3f not above that without %.3f", early - late, early0 - late0);
    if (report)
        printf("  F2 protection (share points): weight default %.3f, weight 0 %.3f\n",
               early - late, early0 - late0);

    sn_llm_backend_close(sim_default);
    sn_llm_backend_close(sim_nocons);
    sn_qset_free(qs);
    free_keep_alive();
    return sn_test_done();
}
