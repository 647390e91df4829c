/* tests/test_eval_defended_endpoint.c: `sentinel eval --defended DIR --recipe R` against an
** OpenAI-compatible endpoint (tests/servers/fake_openai.py on loopback; docs/eval.md "Defended
** debates", "Overhead, measured"). The four arms are simulated with the `llm` backend, each
** arm's simulation is timed end to end (DIR/<arm>/wall.json), and the report gives the measured
** overhead: the wall time per debate-round with the detector minus without it, for attacked ->
** defended and clean -> clean-defended. Timings vary, so only their presence, shape, sign where
** it is certain (times are not negative) and labels are checked, never their values; the cost
** of the defence is recomputed from the trajectories; a resumed run keeps the wall times. */
#include "testutil.h"
#include "testutil_openai.h"
#include "data/data.h"

#include <math.h>

static const char *bin;
static char dir[400];

static cJSON *load(const char *name)
{
    char p[800];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    cJSON *j = NULL;
    struct sn_err err = {0};
    if (sn_json_load(p, &j, &err))
        fprintf(stderr, "%s\n", err.msg);
    return j;
}

/* a dotted path into a JSON object (numbers are array indices) */
static const cJSON *get(const cJSON *j, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    const cJSON *o = j;
    for (char *save = NULL, *k = strtok_r(buf, ".", &save); o && k;
         k = strtok_r(NULL, ".", &save))
        o = cJSON_IsArray(o) ? cJSON_GetArrayItem(o, atoi(k))
                             : cJSON_GetObjectItemCaseSensitive(o, k);
    return o;
}

/* Debate-rounds and every message's latency of one arm's trajectories: every message of an
** endpoint debate has a positive recorded latency. */
static int scan_arm(const char *arm, int *n_debates, int *n_rounds, bool *all_latency)
{
    char in[800];
    snprintf(in, sizeof in, "%s/arms/%s", dir, arm);
    const char *inputs[1] = {in};
    char **paths = NULL;
    size_t np = 0;
    struct sn_err err = {0};
    *n_debates = *n_rounds = 0;
    *all_latency = true;
    if (sn_traj_paths(inputs, 1, &paths, &np, NULL, &err))
        return -1;
    struct sn_traj_reader_params rp = sn_traj_reader_default_params();
    for (size_t f = 0; f < np; f++) {
        struct sn_traj_reader *r = NULL;
        if (sn_traj_reader_open(paths[f], &rp, &r, &err))
            break;
        struct sn_traj *t = NULL;
        while (sn_traj_reader_next(r, &t, &err) == SN_OK && t) {
            (*n_debates)++;
            *n_rounds += (int)t->n_rounds;
            for (size_t q = 0; q < t->n_rounds; q++)
                for (size_t i = 0; i < t->rounds[q].n_msgs; i++)
                    *all_latency = *all_latency && t->rounds[q].msgs[i].latency_ms > 0;
            sn_traj_free(t);
        }
        sn_traj_reader_close(r);
    }
    sn_paths_free(paths, np);
    return 0;
}

/* one pair of overhead_measured: present, measured, times not negative, the difference and
** the share consistent with them */
static void check_pair(const cJSON *j, const char *pair)
{
    char p[160];
    snprintf(p, sizeof p, "defended.overhead_measured.%s", pair);
    const cJSON *o = get(j, p);
    CHECK_MSG(o != NULL, "%s missing", p);
    const cJSON *na = cJSON_GetObjectItemCaseSensitive(o, "na");
    CHECK_MSG(cJSON_IsNull(na), "%s: n/a: %s", pair, cJSON_GetStringValue(na));
    double w0 = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o,
                                                                      "wall_ms_per_round_without"));
    double w1 = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "wall_ms_per_round_with"));
    double df = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "difference_ms"));
    double pc = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "overhead_pct"));
    CHECK_MSG(w0 > 0 && w1 > 0 && isfinite(w0) && isfinite(w1), "%s: %g, %g", pair, w0, w1);
    CHECK_CLOSE(df, w1 - w0, 1e-9, 1e-9);
    CHECK_CLOSE(pc, 100.0 * df / w0, 1e-9, 1e-9);
}

int main(void)
{
    bin = getenv("SENTINEL_BIN");
    if (!bin) {
        fprintf(stderr, "SENTINEL_BIN not set\n");
        return 1;
    }
    snprintf(dir, sizeof dir, "%s", sn_test_dir("eval_defended_endpoint"));
    struct fake_server srv;
    if (fake_start(&srv, dir, 5, 600) != 0) {
        fprintf(stderr, "FAIL: could not start tests/servers/fake_openai.py\n");
        return 1;
    }
    CHECK(sn_test_sh("cp '%s' '%s/d.gguf'", sn_test_tiny_detector(), dir) == 0);
    /* every agent through the endpoint; no cache, so every arm asks the server */
    CHECK(sn_test_sh("cd '%s' && cat > r.json <<EOF\n"
                     "{\"simulate\": {\"endpoints\": {\"llm\": {\"kind\": \"openai\", "
                     "\"base_url\": \"http://127.0.0.1:%d/v1\", \"model\": \"fake-7b\", "
                     "\"concurrency\": 2, \"max_retries\": 1, \"backoff_base_s\": 0.01}},\n"
                     " \"defaults\": {\"dataset\": {\"kind\": \"synthetic\", \"n\": 3, "
                     "\"seed\": 5}, \"backend\": \"llm\", \"n_agents\": 4, \"rounds\": 2, "
                     "\"seed\": 2},\n"
                     " \"experiments\": [{\"name\": \"atk\", \"scenario\": \"collaboration\", "
                     "\"n_adversaries\": 1, \"topology\": \"complete\"}]}}\n"
                     "EOF", dir, srv.port) == 0);
    CHECK(sn_test_sh("cd '%s' && '%s' eval --defended arms --recipe r.json --detector d.gguf "
                     "--bootstrap 20 --json rep.json > out.txt 2> err.txt", dir, bin) == 0);
    /* the four arms were simulated through the endpoint and each was timed */
    static const char *const arms[4] = {"clean", "attacked", "defended", "clean_defended"};
    double wall[4] = {0};
    for (int a = 0; a < 4; a++) {
        int nd = 0, nr = 0;
        bool lat = false;
        CHECK(scan_arm(arms[a], &nd, &nr, &lat) == 0);
        CHECK_MSG(nd == 3 && nr == 6 && lat, "%s: %d debates, %d rounds, latency %d", arms[a], nd,
                  nr, lat);
        char p[64];
        snprintf(p, sizeof p, "arms/%s/wall.json", arms[a]);
        cJSON *w = load(p);
        CHECK_MSG(w != NULL, "%s", p);
        wall[a] = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(w, "wall_ms"));
        CHECK(wall[a] > 0);
        CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(w, "debates")) == 3);
        cJSON_Delete(w);
    }
    cJSON *j = load("rep.json");
    CHECK(j != NULL);
    CHECK_STR(cJSON_GetStringValue(get(j, "defended.overhead_measured.basis")), "measured");
    check_pair(j, "attacked_to_defended");
    check_pair(j, "clean_to_clean_defended");
    /* per debate-round: the arm's wall time over its 6 debate-rounds */
    CHECK_CLOSE(cJSON_GetNumberValue(get(j, "defended.overhead_measured.attacked_to_defended."
                                            "wall_ms_per_round_without")),
                wall[1] / 6, 1e-9, 1e-9);
    CHECK_CLOSE(cJSON_GetNumberValue(get(j, "defended.overhead_measured.clean_to_clean_defended."
                                            "wall_ms_per_round_with")),
                wall[3] / 6, 1e-9, 1e-9);
    /* the modelled figure's basis is the endpoints' latency here, not the stated speed */
    CHECK_STR(cJSON_GetStringValue(get(j, "defended.groups.all.last_round.timing.overhead_basis")),
              "recorded_latency");
    CHECK(cJSON_GetNumberValue(get(j, "defended.debates.clean_defended")) == 3);
    /* the cost of the defence is there under its own name, over the 3 matched debates */
    const cJSON *cost = get(j, "defended.groups.all.last_round.cost_of_defence");
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(cost, "debates")) == 3);
    double c = cJSON_GetNumberValue(get(j, "defended.groups.all.last_round.accuracy_tie_neutral."
                                           "clean.p")),
           cd = cJSON_GetNumberValue(get(j, "defended.groups.all.last_round.accuracy_tie_neutral."
                                            "clean_defended.p"));
    CHECK_CLOSE(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(cost, "p")), c - cd, 1e-12,
                0);
    /* the report labels the figure measured */
    CHECK(sn_test_sh("grep -q 'overhead, measured (attacked -> defended): wall time per "
                     "debate-round' '%s/out.txt'", dir) == 0);
    CHECK(sn_test_sh("grep -q 'overhead, measured (clean -> clean-defended): wall time per "
                     "debate-round' '%s/out.txt'", dir) == 0);
    CHECK(sn_test_sh("grep -q 'cost of the defence' '%s/out.txt'", dir) == 0);

    /* resumed: nothing simulated again, the wall times are kept and still measured */
    int hits = fake_stat(&srv, "hits");
    CHECK(sn_test_sh("cd '%s' && '%s' eval --defended arms --recipe r.json --detector d.gguf "
                     "--bootstrap 20 --json rep2.json --quiet > out2.txt 2> err2.txt", dir,
                     bin) == 0);
    CHECK(fake_stat(&srv, "hits") == hits);
    cJSON *j2 = load("rep2.json");
    CHECK(j2 != NULL);
    for (int q = 0; j && j2 && q < 2; q++) {
        const char *p = q ? "defended.overhead_measured.clean_to_clean_defended.overhead_pct"
                          : "defended.overhead_measured.attacked_to_defended.overhead_pct";
        CHECK(cJSON_GetNumberValue(get(j, p)) == cJSON_GetNumberValue(get(j2, p)));
    }
    /* an arm that now holds other debates than its timed run wrote: n/a, with the reason */
    CHECK(sn_test_sh("cd '%s' && printf '{\"schema\":\"sentinel.arm-wall/1\",\"debates\":2,"
                     "\"wall_ms\":10}' > arms/clean/wall.json && '%s' eval --defended arms "
                     "--bootstrap 20 --json rep3.json --quiet > out3.txt 2> err3.txt", dir,
                     bin) == 0);
    cJSON *j3 = load("rep3.json");
    const cJSON *na = get(j3, "defended.overhead_measured.clean_to_clean_defended.na");
    CHECK_MSG(cJSON_IsString(na) && strstr(na->valuestring, "holds 3"), "%s",
              cJSON_GetStringValue(na));
    CHECK(cJSON_IsNull(get(j3, "defended.overhead_measured.attacked_to_defended.na")));
    cJSON_Delete(j);
    cJSON_Delete(j2);
    cJSON_Delete(j3);
    fake_stop(&srv);
    return sn_test_done();
}
