/* tests/test_eval_detect_cli.c: `sentinel eval` end to end ($SENTINEL_BIN; docs/eval.md):
** a hand-made debate through the disagree baseline gives the hand-computed first-round figures
** in the JSON report; --items has one row per scored message; the exit statuses (--detector not
** in this build: 3; usage errors: 2; unreadable input: 1). */
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

static double fig(const cJSON *r, const char *group, int round, const char *name)
{
    const cJSON *g = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "groups"), group);
    const cJSON *row = round < 0 ? cJSON_GetObjectItem(g, "overall")
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
    }
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(root, "debates")) == 1);
    CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "best_baseline"), "all") != NULL);
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

    /* exit statuses */
    CHECK(ev("-i t.jsonl.gz --detector x.gguf") == 3);
    CHECK(sn_test_sh("grep -q 'not part of this build' '%s/err.txt'", dir) == 0);
    CHECK(ev("-i t.jsonl.gz --k 0") == 2);
    CHECK(ev("-i t.jsonl.gz --baselines ngram") == 2);
    CHECK(sn_test_sh("grep -q 'train-shards' '%s/err.txt'", dir) == 0);
    CHECK(ev("-i t.jsonl.gz --baselines loudest") == 2);
    CHECK(ev("-i t.jsonl.gz --rule most") == 2);
    CHECK(ev("") == 2);
    CHECK(ev("-i missing.jsonl.gz") == 1);
    CHECK(ev("--help") == 0);
    return sn_test_done();
}
