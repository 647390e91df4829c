/* tests/test_eval_groups.c: grouping (--by), mean ± SD over replicates (one replicate: SD
** undefined), matched panels from trajectories, --adversary-effective; values by hand. */
#include "test_eval_fixture.h"

static char dir[1024];

static struct sn_stats *run(const char *name, const struct fx *f, size_t n,
                            const struct sn_stats_params *p)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.jsonl", dir, name);
    fx_write(path, f, n);
    return fx_stats(path, p);
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s", sn_test_dir("eval_groups"));
    struct sn_stats_params p = sn_stats_default_params();

    /* Replicates 0, 1, 2 of one configuration; honest accuracy at r0 per replicate:
    ** rep 0: AA -> 1;  rep 1: AB -> 0.5;  rep 2: BB -> 0.  pooled 3/6 = 0.5;
    ** replicate mean 0.5, sample SD sqrt((0.25 + 0 + 0.25)/2) = 0.5. */
    static const char *const r0[] = {"AAB"}, *const r1[] = {"ABB"}, *const r2[] = {"BBB"};
    struct fx reps[] = {
        {.id = "a0", .item = "q", .roles = "HHA", .gold = "A", .target = "B", .grid = r0, .T = 1,
         .replicate = 0},
        {.id = "a1", .item = "q", .roles = "HHA", .gold = "A", .target = "B", .grid = r1, .T = 1,
         .replicate = 1},
        {.id = "a2", .item = "q", .roles = "HHA", .gold = "A", .target = "B", .grid = r2, .T = 1,
         .replicate = 2},
    };
    struct sn_stats *s = run("reps", reps, 3, &p);
    const struct sn_stat_row *r = fx_row(s, "all", "accuracy.honest.r0");
    CHECK(r && r->value == 0.5 && r->n == 6 && r->rep_n == 3);
    CHECK(r && fabs(r->rep_mean - 0.5) < 1e-12 && fabs(r->rep_sd - 0.5) < 1e-12);
    /* SDI per replicate: rep0 D_rem {0,1}: never attacked -> 1; rep1 D_rem {0}: 1; rep2 empty */
    r = fx_row(s, "all", "sdi");
    CHECK(r && r->n == 2 && r->rep_n == 2 && fabs(r->rep_mean - 1.0) < 1e-12 && r->rep_sd == 0);
    sn_stats_free(s);

    /* a single replicate: SD undefined (NaN, written as null), mean = the value */
    s = run("single", reps, 1, &p);
    r = fx_row(s, "all", "accuracy.honest.r0");
    CHECK(r && r->rep_n == 1 && r->rep_mean == 1.0 && isnan(r->rep_sd));
    sn_stats_free(s);

    /* --by strategy,n_adversaries,model[0],panel */
    static const char *const g[] = {"AAB"}, *const h[] = {"ABBB"};
    struct fx mixed[] = {
        {.id = "s1", .roles = "HHA", .gold = "A", .target = "B", .grid = g, .T = 1,
         .strategy = "one_by_one", .panel = "baseline"},
        {.id = "s2", .roles = "HHA", .gold = "A", .target = "B", .grid = r1, .T = 1,
         .strategy = "one_by_one", .panel = "baseline"},
        {.id = "s3", .roles = "HHAA", .gold = "A", .target = "B", .grid = h, .T = 1,
         .strategy = "simultaneous"},
    };
    const char *by[] = {"strategy", "n_adversaries", "model[0]", "panel"};
    struct sn_stats_params pb = p;
    pb.by = by;
    pb.n_by = 4;
    s = run("by", mixed, 3, &pb);
    const char *g1 = "strategy=one_by_one,n_adversaries=1,model[0]=m0,panel=baseline";
    const char *g2 = "strategy=simultaneous,n_adversaries=2,model[0]=m0,panel=(none)";
    CHECK_CLOSE(fx_val(s, g1, "n_trajectories"), 2, 0, 0);
    CHECK_CLOSE(fx_val(s, g1, "accuracy.honest.r0"), 3.0 / 4.0, 1e-12, 0);
    CHECK_CLOSE(fx_val(s, g2, "accuracy.honest.r0"), 0.5, 1e-12, 0);
    {
        const struct sn_stat_row *rows;
        size_t n;
        struct sn_err err = {0};
        CHECK(sn_stats_rows(s, &rows, &n, &err) == SN_OK);
        CHECK(n > 0 && !strcmp(rows[0].group, g1)); /* sorted: one_by_one < simultaneous */
        CHECK(n > 0 && !strcmp(rows[0].group_values[1], "1"));
    }
    sn_stats_free(s);

    /* Matched panels, metric P(DM|D=1) over all transitions (gold A, T = 2):
    **   baseline:          AB -> BA : slot 0 DM, slot 1 DC  -> 1/2 = 50%
    **   honest-mixed:      BB -> AA : two DC                 -> 0/2 = 0%
    **   adversarial-mixed: AAB -> BBB: two DM                -> 2/2 = 100%
    ** bonus 50 - 0 = 50 pp, penalty 100 - 50 = 50 pp, cost 100 pp, q* = 50%. */
    static const char *const pb0[] = {"AB", "BA"}, *const ph0[] = {"BB", "AA"},
                             *const pa0[] = {"AAB", "BBB"};
    struct fx panels[] = {
        {.id = "p0", .item = "q1", .roles = "HH", .gold = "A", .target = NULL, .grid = pb0,
         .T = 2, .panel = "baseline"},
        {.id = "p1", .item = "q1", .roles = "HH", .gold = "A", .target = NULL, .grid = ph0,
         .T = 2, .panel = "honest-mixed"},
        {.id = "p2", .item = "q1", .roles = "HHA", .gold = "A", .target = "B", .grid = pa0,
         .T = 2, .panel = "adversarial-mixed"},
    };
    s = run("panels", panels, 3, &p);
    CHECK_CLOSE(fx_val(s, "all", "panel.baseline_rate"), 0.5, 1e-12, 0);
    CHECK_CLOSE(fx_val(s, "all", "panel.honest_rate"), 0.0, 1e-12, 0);
    CHECK_CLOSE(fx_val(s, "all", "panel.adversarial_rate"), 1.0, 1e-12, 0);
    CHECK_CLOSE(fx_val(s, "all", "panel.honest_bonus"), 50, 1e-9, 0);
    CHECK_CLOSE(fx_val(s, "all", "panel.adversarial_penalty"), 50, 1e-9, 0);
    CHECK_CLOSE(fx_val(s, "all", "panel.replacement_cost"), 100, 1e-9, 0);
    CHECK_CLOSE(fx_val(s, "all", "panel.break_even_q"), 50, 1e-9, 0);
    /* the pooled group still holds all three debates */
    CHECK_CLOSE(fx_val(s, "all", "n_trajectories"), 3, 0, 0);
    sn_stats_free(s);
    /* another metric, e.g. DM/N_valid at r0->r1: 1/2, 0/2, 2/2 -> same numbers here */
    struct sn_stats_params pm = p;
    pm.panel_metric = "revision.r0_r1.dc";
    s = run("panels_dc", panels, 3, &pm);
    /* DC/N_valid: 1/2, 2/2, 0/2 -> bonus 50 - 100 = -50, penalty 0 - 50 = -50, q* = 50% */
    CHECK_CLOSE(fx_val(s, "all", "panel.honest_bonus"), -50, 1e-9, 0);
    CHECK_CLOSE(fx_val(s, "all", "panel.adversarial_penalty"), -50, 1e-9, 0);
    CHECK_CLOSE(fx_val(s, "all", "panel.replacement_cost"), -100, 1e-9, 0);
    /* bonus + penalty = -100 <= 0: q* is undefined, not -50 / -100 = 50% */
    CHECK_NAN(fx_val(s, "all", "panel.break_even_q"));
    {
        const struct sn_stat_row *r = fx_row(s, "all", "panel.break_even_q");
        CHECK(r && r->note && strstr(r->note, "bonus + penalty <= 0"));
    }
    sn_stats_free(s);
    {
        struct sn_panels q = sn_panels_compute(50, 60, 40); /* bonus -10, penalty -10 */
        CHECK(isnan(q.q_star) && q.q_star_undefined);
        q = sn_panels_compute(50, 40, 40); /* bonus 10, penalty -10: cost 0 */
        CHECK(isnan(q.q_star) && q.q_star_undefined);
        q = sn_panels_compute(50, 40, 70); /* bonus 10, penalty 20: q* = 10/30 */
        CHECK_CLOSE(q.q_star, 100.0 / 3.0, 1e-12, 0);
        CHECK(!q.q_star_undefined);
    }

    /* The panel metric defaults to the first revision step r0 -> r1 (T = 3 here, gold A):
    **   baseline     AB -> BA -> AA:  r0->r1 DM 1 of 2 changes (50%); all rounds 1 of 3 (33.3%)
    **   honest-mixed BB -> AA -> BB:  r0->r1 0 of 2 (0%);                all rounds 2 of 4 (50%)
    **   adversarial  AAB -> BBB -> BBB: r0->r1 2 of 2 (100%);            all rounds 2 of 2
    ** default: bonus 50, penalty 50, q* 50%; pooled over all rounds: bonus 33.3 - 50 = -16.7,
    ** penalty 100 - 33.3 = 66.7, cost 50, q* = -16.7 / 50 = -33.3%. */
    {
        static const char *const b3[] = {"AB", "BA", "AA"}, *const h3[] = {"BB", "AA", "BB"},
                                 *const a3[] = {"AAB", "BBB", "BBB"};
        struct fx p3[] = {
            {.id = "t0", .item = "q1", .roles = "HH", .gold = "A", .grid = b3, .T = 3,
             .panel = "baseline"},
            {.id = "t1", .item = "q1", .roles = "HH", .gold = "A", .grid = h3, .T = 3,
             .panel = "honest-mixed"},
            {.id = "t2", .item = "q1", .roles = "HHA", .gold = "A", .target = "B", .grid = a3,
             .T = 3, .panel = "adversarial-mixed"},
        };
        s = run("panels_r01", p3, 3, &p);
        CHECK_CLOSE(fx_val(s, "all", "panel.baseline_rate"), 0.5, 1e-12, 0);
        CHECK_CLOSE(fx_val(s, "all", "panel.honest_bonus"), 50, 1e-9, 0);
        CHECK_CLOSE(fx_val(s, "all", "panel.break_even_q"), 50, 1e-9, 0);
        sn_stats_free(s);
        struct sn_stats_params pa = p;
        pa.panel_metric = "revision.all.p_dm_given_change";
        s = run("panels_all", p3, 3, &pa);
        CHECK_CLOSE(fx_val(s, "all", "panel.baseline_rate"), 1.0 / 3.0, 1e-12, 0);
        CHECK_CLOSE(fx_val(s, "all", "panel.honest_bonus"), 100.0 / 3.0 - 50, 1e-9, 0);
        CHECK_CLOSE(fx_val(s, "all", "panel.adversarial_penalty"), 100 - 100.0 / 3.0, 1e-9, 0);
        CHECK_CLOSE(fx_val(s, "all", "panel.break_even_q"), -100.0 / 3.0, 1e-9, 0);
        sn_stats_free(s);
    }

    /* --adversary-effective, decided per unit (experiment, dataset, item_id, replicate):
    **   item X: adversarial debate whose adversary answers gold A at r0 (ineffective) -> dropped;
    **           its baseline debate (no adversary) -> kept, as every debate without adversaries;
    **   item Y: adversary answers B at r0 (effective) -> its adversarial and baseline debates kept;
    **   item Z: baseline only -> kept;
    **   item W: replicate 0 effective, replicate 1 answers gold at r0 -> only replicate 1 dropped;
    **   an interceptor-only debate (interceptors never answer) -> kept.
    ** Then experiment e2 on the same item Y, whose adversary answers gold: e2's Y debate drops,
    ** and e1's debates keep exactly what they kept when read alone. */
    static const char *const xa[] = {"AAA"}, *const ya[] = {"AAB"}, *const bb[] = {"AA"},
                             *const ia[] = {"AAB"};
    struct fx eff[] = {
        {.id = "x-adv", .item = "X", .roles = "HHA", .gold = "A", .target = "B", .grid = xa,
         .T = 1, .experiment = "e1"},
        {.id = "x-base", .item = "X", .roles = "HH", .gold = "A", .grid = bb, .T = 1,
         .experiment = "e1"},
        {.id = "y-adv", .item = "Y", .roles = "HHA", .gold = "A", .target = "B", .grid = ya,
         .T = 1, .experiment = "e1"},
        {.id = "y-base", .item = "Y", .roles = "HH", .gold = "A", .grid = bb, .T = 1,
         .experiment = "e1"},
        {.id = "z-base", .item = "Z", .roles = "HH", .gold = "A", .grid = bb, .T = 1,
         .experiment = "e1"},
        {.id = "w-0", .item = "W", .roles = "HHA", .gold = "A", .target = "B", .grid = ya,
         .T = 1, .experiment = "e1", .replicate = 0},
        {.id = "w-1", .item = "W", .roles = "HHA", .gold = "A", .target = "B", .grid = xa,
         .T = 1, .experiment = "e1", .replicate = 1},
        {.id = "i-0", .item = "I", .roles = "HHI", .gold = "A", .target = "B", .grid = ia,
         .T = 1, .experiment = "e1"},
        {.id = "y-e2", .item = "Y", .roles = "HHA", .gold = "A", .target = "B", .grid = xa,
         .T = 1, .experiment = "e2"},
    };
    struct sn_stats_params pe = p;
    pe.adversary_effective = true;
    const char *ex_by[] = {"experiment"};
    pe.by = ex_by;
    pe.n_by = 1;
    s = run("effective", eff, 8, &pe); /* e1 alone */
    CHECK_CLOSE(fx_val(s, "experiment=e1", "n_trajectories"), 6, 0, 0);
    CHECK(sn_stats_n_filtered(s) == 2);
    sn_stats_free(s);
    s = run("effective2", eff, 9, &pe); /* e1 read together with e2 */
    CHECK_CLOSE(fx_val(s, "experiment=e1", "n_trajectories"), 6, 0, 0);
    CHECK(sn_stats_n_filtered(s) == 3);
    sn_stats_free(s);
    s = run("effective_off", eff, 9, &p);
    CHECK_CLOSE(fx_val(s, "all", "n_trajectories"), 9, 0, 0);
    sn_stats_free(s);

    /* Allocation failure at every allocation in turn (create, add with new groups, replicates
    ** and panels, rows, JSON, explain): a clean SN_E_NOMEM each time, no crash, no leak (ASan),
    ** and the same numbers once nothing fails. */
    {
        struct sn_traj *ts[3];
        struct sn_err err = {0};
        for (int i = 0; i < 3; i++) {
            char *line = fx_json(&panels[i]);
            ts[i] = NULL;
            CHECK(sn_traj_parse(line, strlen(line), "m:1", &ts[i], &err) == SN_OK);
            free(line);
        }
        char json_path[1200]; /* CSV then JSON, to the same path */
        snprintf(json_path, sizeof json_path, "%s/nomem.out", dir);
        int ok_at = 0;
        for (int fail = 1; fail < 5000 && !ok_at && ts[0] && ts[1] && ts[2]; fail++) {
            struct sn_stats *m = NULL;
            struct sn_buf b = {0};
            sn_err_clear(&err);
            sn_alloc_fail_after((uint64_t)fail);
            int rc = sn_stats_create(&pb, &m, &err);
            for (int i = 0; i < 3 && !rc; i++)
                rc = sn_stats_add(m, ts[i], &err);
            const struct sn_stat_row *rows;
            size_t n;
            if (!rc)
                rc = sn_stats_rows(m, &rows, &n, &err);
            if (!rc)
                rc = sn_stats_format_table(m, true, &b, &err);
            if (!rc)
                rc = sn_stats_explain(ts[2], SN_MAJORITY_PLURALITY, SN_VOTE_TIE_NONE, &b, &err);
            if (!rc)
                rc = sn_stats_write_csv(m, json_path, &err);
            if (!rc)
                rc = sn_stats_write_json(m, json_path, &err);
            sn_alloc_fail_after(0);
            if (rc == SN_OK) {
                ok_at = fail;
            } else {
                CHECK_MSG(rc == SN_E_NOMEM, "fail at %d: rc %d (%s)", fail, rc, err.msg);
            }
            sn_buf_free(&b);
            sn_stats_free(m);
        }
        CHECK(ok_at > 10);
        for (int i = 0; i < 3; i++)
            sn_traj_free(ts[i]);
    }
    return sn_test_done();
}
