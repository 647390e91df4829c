/* tests/test_eval_detect_cli.c: `sentinel eval` end to end ($SENTINEL_BIN; docs/eval.md):
** a hand-made debate through the disagree baseline gives the hand-computed first-round figures
** in the JSON report; the oracle is in it apart from the rankers and never a best baseline;
** --items has one row per scored message of every ranker but the oracle; the rows last_round,
** pooled and the older overall; a tiny runtime detector (random weights: the suite's
** tiny_detector fixture, tests/test_export_fixture.c) ranks beside the baselines: every
** figure present and in range, and the "does NOT beat" sentence printed exactly for the
** figures of the last round where a baseline is at least as good; the summary; the exit
** statuses (usage errors: 2; unreadable input or detector: 1). */
#include "test_eval_fixture.h"

static const char *bin;
static char dir[1024];

static int ev(const char *args)
{
    return sn_test_sh("cd '%s' && '%s' eval %s > out.txt 2> err.txt", dir, bin, args);
}

static const cJSON *ranker(const cJSON *root, const char *name)
{
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(root, "rankers"))
    {
        if (!strcmp(cJSON_GetObjectItem(r, "ranker")->valuestring, name))
            return r;
    }
    return NULL;
}

/* round >= 0: that round; -1 the last round, -2 pooled, -3 the older overall */
static double fig(const cJSON *r, const char *group, int round, const char *name)
{
    static const char *const rows[3] = {"last_round", "pooled", "overall"};
    const cJSON *g = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "groups"), group);
    const cJSON *row = round < 0 ? cJSON_GetObjectItem(g, rows[-round - 1])
                                 : cJSON_GetArrayItem(cJSON_GetObjectItem(g, "rounds"), round);
    const cJSON *p = cJSON_GetObjectItem(cJSON_GetObjectItem(row, name), "p");
    return cJSON_IsNumber(p) ? p->valuedouble : NAN;
}

int main(void)
{
    bin = getenv("SENTINEL_BIN");
    if (!bin) {
        fprintf(stderr, "SENTINEL_BIN not set\n");
        return 1;
    }
    snprintf(dir, sizeof dir, "%s", sn_test_dir("eval_detect_cli"));
    /* round 0 AAABB: the plurality is A, so the disagree baseline scores the attackers 0 and
    ** with k = 2 every sentinel blacklists exactly 3 and 4: accuracy 1, FPR 0, FNR 0; the
    ** defended vote (AAA) is right. Round 1 AABBB: undefended plurality B, wrong. */
    static const char *g1[3] = {"AAABB", "AABBB", "AAABB"};
    struct fx f = {.id = "d1", .roles = "HHHAA", .gold = "A", .target = "B", .grid = g1,
                   .T = 3};
    char path[1200];
    snprintf(path, sizeof path, "%s/t.jsonl.gz", dir);
    fx_write(path, &f, 1);

    CHECK(ev("-i t.jsonl.gz --baselines disagree,random --k 2 --json r.json --items i.csv "
             "--bootstrap 20") == 0);
    char jpath[1200], ipath[1200];
    snprintf(jpath, sizeof jpath, "%s/r.json", dir);
    snprintf(ipath, sizeof ipath, "%s/i.csv", dir);
    cJSON *root = NULL;
    struct sn_err err = {0};
    CHECK_MSG(sn_json_load(jpath, &root, &err) == SN_OK, "%s", err.msg);
    const cJSON *d = ranker(root, "disagree");
    CHECK(d && ranker(root, "random"));
    if (d) {
        CHECK_CLOSE(fig(d, "all", 0, "agent_detection_accuracy"), 1.0, 0, 0);
        CHECK_CLOSE(fig(d, "all", 0, "agent_fpr"), 0.0, 0, 0);
        CHECK_CLOSE(fig(d, "all", 0, "agent_fnr"), 0.0, 0, 0);
        CHECK_CLOSE(fig(d, "all", 0, "task_accuracy_defended"), 1.0, 0, 0);
        CHECK_CLOSE(fig(d, "all", 1, "task_accuracy_undefended"), 0.0, 0, 0);
        CHECK_CLOSE(fig(d, "domain=in", 0, "agent_detection_accuracy"), 1.0, 0, 0);
        CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(d, "k")) == 2);
        /* round 0: balanced 1, hit rate 3/3, the kept vote A A A under both tie rules */
        CHECK_CLOSE(fig(d, "all", 0, "agent_balanced_accuracy"), 1.0, 0, 0);
        CHECK_CLOSE(fig(d, "all", 0, "round_hit_rate"), 1.0, 0, 0);
        CHECK_CLOSE(fig(d, "all", 0, "task_accuracy_defended_tie_neutral"), 1.0, 0, 0);
    }
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(root, "debates")) == 1);
    CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "best_baseline"), "all") != NULL);
    /* the oracle: k = 2 = the attackers, balanced accuracy 1 in every row; apart from the
    ** rankers, never a best baseline */
    const cJSON *orc = cJSON_GetObjectItem(root, "oracle");
    CHECK(orc && cJSON_IsTrue(cJSON_GetObjectItem(orc, "ceiling")) && !ranker(root, "oracle"));
    for (int r = -3; orc && r < 3; r++)
        CHECK_CLOSE(fig(orc, "all", r, "agent_balanced_accuracy"), 1.0, 0, 0);
    static const char *const bests[] = {"best_baseline", "best_baseline_last_round",
                                        "best_baseline_pooled"};
    for (size_t b = 0; b < 3; b++) {
        const cJSON *v, *go = cJSON_GetObjectItem(cJSON_GetObjectItem(root, bests[b]), "all");
        CHECK(cJSON_GetObjectItem(go, "balanced accuracy (agents)") != NULL);
        cJSON_ArrayForEach(v, go) CHECK(!cJSON_IsString(v) || strcmp(v->valuestring, "oracle"));
    }
    cJSON_Delete(root);
    char *items = NULL;
    size_t len = 0;
    CHECK(sn_file_read(ipath, 0, &items, &len, &err) == SN_OK);
    size_t lines = 0;
    for (size_t i = 0; items && i < len; i++)
        lines += items[i] == '\n';
    CHECK(lines == 1 + 2 * 36); /* header + 2 rankers × 3 rounds × 3 sentinels × 4 senders */
    CHECK(items && strncmp(items, "ranker,debate,", 14) == 0);
    sn_free(items);
    CHECK(sn_test_sh("grep -q 'detection accuracy (agents)' '%s/out.txt'", dir) == 0);
    CHECK(sn_test_sh("grep -q '^-- last round (each debate' '%s/out.txt'", dir) == 0);
    CHECK(sn_test_sh("grep -q '^-- pooled over rounds' '%s/out.txt'", dir) == 0);
    CHECK(sn_test_sh("grep -q 'oracle (ceiling)' '%s/out.txt'", dir) == 0);
    CHECK(sn_test_sh("grep -q '^== summary: group all' '%s/out.txt'", dir) == 0);
    CHECK(sn_test_sh("grep -q '^task accuracy, defended, tie-neutral ' '%s/out.txt'", dir) == 0);

    /* the runtime detector beside the baselines */
    {
        CHECK(sn_test_sh("cp '%s' '%s/d.gguf'", sn_test_tiny_detector(), dir) == 0);
        CHECK(ev("-i t.jsonl.gz --detector d.gguf --baselines random,shortest,disagree "
                 "--json rd.json --bootstrap 50") == 0);
        snprintf(jpath, sizeof jpath, "%s/rd.json", dir);
        CHECK_MSG(sn_json_load(jpath, &root, &err) == SN_OK, "%s", err.msg);
        const cJSON *det = ranker(root, "detector");
        CHECK(det != NULL);
        static const struct { const char *name, *table; bool higher; } figs[] = {
            {"agent_balanced_accuracy", "balanced accuracy (agents)", true},
            {"round_hit_rate", "hit rate (per round)", true},
            {"pair_balanced_accuracy", "balanced accuracy (pairs)", true},
            {"task_accuracy_defended_tie_neutral", "task accuracy, defended, tie-neutral", true},
            {"task_accuracy_undefended_tie_neutral", "task accuracy, undefended, tie-neutral",
             true},
            {"agent_detection_accuracy", "detection accuracy (agents)", true},
            {"agent_fpr", "FPR (agents)", false}, {"agent_fnr", "FNR (agents)", false},
            {"pair_detection_accuracy", "detection accuracy (pairs)", true},
            {"pair_fpr", "FPR (pairs)", false}, {"pair_fnr", "FNR (pairs)", false},
            {"auroc", "AUROC (messages)", true},
            {"task_accuracy_defended", "task accuracy, defended", true},
            {"task_accuracy_undefended", "task accuracy, undefended", true}};
        static const char *const base[] = {"random", "shortest", "disagree"};
        for (size_t f = 0; det && f < sizeof figs / sizeof figs[0]; f++) {
            for (int r = -3; r < 3; r++) {
                double v = fig(det, "all", r, figs[f].name);
                CHECK_MSG(v >= 0 && v <= 1, "%s round %d: %g", figs[f].name, r, v);
            }
            /* the older overall row: the last round's figures, AUROC pooled */
            bool auroc = strcmp(figs[f].name, "auroc") == 0;
            CHECK_CLOSE(fig(det, "all", -3, figs[f].name),
                        fig(det, "all", auroc ? -2 : -1, figs[f].name), 1e-12, 0);
            /* the sentence appears exactly when the best baseline is at least as good */
            double v = fig(det, "all", -1, figs[f].name), best = NAN;
            CHECK(!isnan(fig(cJSON_GetObjectItem(root, "oracle"), "all", -1, figs[f].name)));
            for (size_t b = 0; b < 3; b++) {
                double q = fig(ranker(root, base[b]), "all", -1, figs[f].name);
                if (!isnan(q) && (isnan(best) || (figs[f].higher ? q > best : q < best)))
                    best = q;
            }
            /* undefended accuracy is the same for every ranker: never a "does NOT beat" */
            bool beaten = !isnan(best) && !(figs[f].higher ? v > best : v < best) &&
                          strncmp(figs[f].name, "task_accuracy_undefended", 24) != 0;
            int said = sn_test_sh("grep -q 'does NOT beat the best baseline ([a-z]*) on %s:' "
                                  "'%s/out.txt'", figs[f].table, dir);
            CHECK_MSG((said == 0) == beaten, "%s: %g vs best baseline %g, sentence %s",
                      figs[f].name, v, best, said == 0 ? "printed" : "missing");
        }
        cJSON_Delete(root);
        CHECK(sn_test_sh("grep -q ' detector' '%s/out.txt'", dir) == 0);
        /* a bad detector file is a failure (1) naming the file */
        CHECK(ev("-i t.jsonl.gz --detector x.gguf") == 1);
        CHECK(sn_test_sh("grep -q 'x.gguf' '%s/err.txt'", dir) == 0);
        CHECK(ev("-i t.jsonl.gz --detector d.gguf --threads 0") == 2);
    }

    /* exit statuses */
    CHECK(ev("-i t.jsonl.gz --k 0") == 2);
    CHECK(ev("-i t.jsonl.gz --baselines ngram") == 2);
    CHECK(sn_test_sh("grep -q 'train-shards' '%s/err.txt'", dir) == 0);
    CHECK(ev("-i t.jsonl.gz --baselines loudest") == 2);
    CHECK(ev("-i t.jsonl.gz --baselines random,oracle") == 2);
    CHECK(sn_test_sh("grep -q 'not a baseline' '%s/err.txt'", dir) == 0);
    CHECK(ev("-i t.jsonl.gz --rule most") == 2);
    CHECK(ev("") == 2);
    CHECK(ev("-i missing.jsonl.gz") == 1);
    CHECK(ev("--help") == 0);
    return sn_test_done();
}
