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
    sn_stats_free(s);

    /* --adversary-effective, item level (dataset + item_id):
    **   item X: adversarial debate whose adversary answers gold A at r0 (ineffective) and a
    **           baseline debate -> both dropped;
    **   item Y: adversary answers B at r0 (effective) -> its adversarial and baseline debates kept;
    **   item Z: baseline only (no adversary to be effective) -> dropped. */
    static const char *const xa[] = {"AAA"}, *const ya[] = {"AAB"}, *const bb[] = {"AA"};
    struct fx eff[] = {
        {.id = "x-adv", .item = "X", .roles = "HHA", .gold = "A", .target = "B", .grid = xa,
         .T = 1},
        {.id = "x-base", .item = "X", .roles = "HH", .gold = "A", .grid = bb, .T = 1},
        {.id = "y-adv", .item = "Y", .roles = "HHA", .gold = "A", .target = "B", .grid = ya,
         .T = 1},
        {.id = "y-base", .item = "Y", .roles = "HH", .gold = "A", .grid = bb, .T = 1},
        {.id = "z-base", .item = "Z", .roles = "HH", .gold = "A", .grid = bb, .T = 1},
    };
    struct sn_stats_params pe = p;
    pe.adversary_effective = true;
    s = run("effective", eff, 5, &pe);
    CHECK_CLOSE(fx_val(s, "all", "n_trajectories"), 2, 0, 0);
    CHECK(sn_stats_n_filtered(s) == 3);
    sn_stats_free(s);
    s = run("effective_off", eff, 5, &p);
    CHECK_CLOSE(fx_val(s, "all", "n_trajectories"), 5, 0, 0);
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
                rc = sn_stats_explain(ts[2], SN_MAJORITY_PLURALITY, &b, &err);
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
