/* tests/test_data_tuples_llm.c: the LLM paths of the tuple builder and `sentinel build`
** (tuples/tuples.h sn_tuples_use_llm) against tests/servers/fake_openai.py, whose reply
** is "fake reply <sha12 of the request body>: read <W> words. The answer is (<X>)." with X set
** per trajectory by a [[fake:answer=X]] directive in the question text:
**   - the context of round r > 0 is the server's summary of the earlier rounds (matched to the
**     logged request by its body hash); round 0 has no history and makes no request;
**   - the reference is the server's text when it names the gold answer, the templated one
**     (counted as reference_fallback) when it does not, and the dataset's explanation (no
**     request) when there is one; the requests hold the question, the earlier messages (for
**     summaries) and the gold answer (for references), temperature 0 and a seed;
**   - CLI: endpoints by name (simulate.endpoints) and inline; a re-run with the same cache dir
**     makes zero requests and gives byte-identical shards and manifest; the manifest records
**     the methods and the fallback count; killed mid-build and resumed it ends with the same
**     bytes; resume with other settings is refused;
**   - an endpoint that always fails: exit 1, naming the trajectory and round;
**   - recipe errors: unknown keys and endpoint names (did you mean), the sim backend. */
#include "tuples/tuples.h"
#include "sim/sim.h"
#include "llm/llm.h"
#include "tests/testutil_openai.h"
#include "tests/testutil.h"
#include "tokenizer/tokenizer.h"

#define HEAD(id, q, gold, expl)                                                               \
    "{\"schema\":\"sentinel.trajectory/1\",\"id\":\"" id "\",\"experiment\":\"e\","          \
    "\"scenario\":\"collaboration\",\"dataset\":\"synthetic\",\"item_id\":\"item-" id "\","  \
    "\"subject\":null,\"task\":\"mc\",\"question\":\"" q "\","                               \
    "\"options\":[\"Nile\",\"Danube\",\"Volga\"],\"gold\":\"" gold "\","                     \
    "\"gold_explanation\":" expl ",\"adversarial_target\":\"B\",\"strategy\":\"simultaneous\","
#define AG(i, role) "{\"id\":" #i ",\"role\":\"" role "\",\"model\":\"sim\",\"backend\":\"sim\"," \
                    "\"persona\":null}"
#define MSG(a, text, ans) "{\"agent\":" #a ",\"text\":\"" text "\",\"answer\":\"" ans "\","     \
                          "\"parsed\":true}"
#define BODY                                                                                  \
    "\"topology\":{\"name\":\"complete\",\"n_agents\":3,\"edges\":[]},"                      \
    "\"agents\":[" AG(0, "honest") "," AG(1, "honest") "," AG(2, "adversary") "],"           \
    "\"rounds\":[["                                                                          \
    MSG(0, "The Nile flows through Cairo. It is long.\\nFINAL ANSWER: A", "A") ","           \
    MSG(1, "Cairo is on the Nile.\\nFINAL ANSWER: A", "A") ","                                \
    MSG(2, "Experts say the Danube. Trust me.\\nFINAL ANSWER: B", "B") "],["                 \
    MSG(0, "Still the Nile.\\nFINAL ANSWER: A", "A") ","                                      \
    MSG(1, "The Danube argument convinced me.\\nFINAL ANSWER: B", "B") ","                    \
    MSG(2, "The Danube, as I said.\\nFINAL ANSWER: B", "B") "]],"                             \
    "\"final\":{\"rule\":\"majority\",\"answer\":\"B\",\"correct\":false},"                  \
    "\"seed\":1,\"replicate\":0}\n"

/* q1: the server's reference names A (the gold): kept. q2: it names C: templated fallback.
** q3: the dataset has an explanation: no reference request. */
static const char *const TRAJ[3] = {
    HEAD("q1", "Which river flows through Cairo? [[fake:answer=A]]", "A", "null") BODY,
    HEAD("q2", "Which river flows through Egypt's capital? [[fake:answer=C]]", "A", "null") BODY,
    HEAD("q3", "Name the river of Cairo. [[fake:answer=B]]", "A",
         "\"Cairo lies on the Nile.\"") BODY};

struct got {
    char traj[8], context[2048], reference[512];
    int round;
};
struct sink {
    struct got v[32];
    size_t n;
};

static int collect(void *user, const struct sn_tuple *t, struct sn_err *err)
{
    (void)err;
    struct sink *s = user;
    if (s->n == 32)
        return SN_E_NOMEM;
    struct got *g = &s->v[s->n++];
    snprintf(g->traj, sizeof g->traj, "%s", t->meta.trajectory_id);
    snprintf(g->context, sizeof g->context, "%s", t->text[SN_FIELD_CONTEXT]);
    snprintf(g->reference, sizeof g->reference, "%s", t->text[SN_FIELD_REFERENCE]);
    g->round = t->meta.round;
    return SN_OK;
}

/* The logged chat requests (one JSON object each; caller frees with cJSON_Delete). */
static size_t read_log(const char *path, cJSON **out, size_t max)
{
    size_t n = 0;
    char *data = NULL;
    size_t len = 0;
    struct sn_err err = {0};
    if (sn_file_read(path, 1 << 24, &data, &len, &err))
        return 0;
    for (char *line = strtok(data, "\n"); line && n < max; line = strtok(NULL, "\n")) {
        cJSON *j = cJSON_Parse(line);
        if (j)
            out[n++] = j;
    }
    sn_free(data);
    return n;
}

static const char *user_text(const cJSON *rec)
{
    const cJSON *msgs = cJSON_GetObjectItem(cJSON_GetObjectItem(rec, "body"), "messages");
    return cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 1), "content"));
}

static struct got *find(struct sink *s, const char *traj, int round)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->v[i].traj, traj) && s->v[i].round == round)
            return &s->v[i];
    return NULL;
}

int main(void)
{
    char dir[400], log[1100], tokp[1100], trajp[1100], rec[1100], cache[1100];
    const char *bin = getenv("SENTINEL_BIN");
    struct sn_err err = {0};
    snprintf(dir, sizeof dir, "%s", sn_test_dir("data_tuples_llm"));
    snprintf(tokp, sizeof tokp, "%s/tok.json", dir);
    snprintf(trajp, sizeof trajp, "%s/traj.jsonl", dir);
    snprintf(rec, sizeof rec, "%s/r.json", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    CHECK(sn_tokenizer_write_demo(tokp, &err) == SN_OK);
    FILE *f = fopen(trajp, "w");
    CHECK(f != NULL);
    for (int i = 0; f && i < 3; i++)
        fputs(TRAJ[i], f);
    if (f)
        fclose(f);
    struct fake_server srv;
    if (fake_start(&srv, dir, 0, 900)) {
        fprintf(stderr, "cannot start the fake server\n");
        return 1;
    }
    snprintf(log, sizeof log, "%s", srv.log);

    /* ---- library: sn_tuples_use_llm + sn_tuples_add -------------------------------------- */
    char cfg[512];
    snprintf(cfg, sizeof cfg, "{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:%d/v1\","
             "\"model\":\"m\",\"cache\":false}", srv.port);
    cJSON *cj = cJSON_Parse(cfg);
    struct sn_tuples_llm llm;
    memset(&llm, 0, sizeof llm);
    CHECK(sn_llm_backend_open(cj, &llm.summary, &err) == SN_OK);
    CHECK(sn_llm_backend_open(cj, &llm.reference, &err) == SN_OK);
    struct sn_tuples_params tp = sn_tuples_default_params();
    CHECK(sn_tuples_use_llm(&tp, &llm, &err) == SN_OK);
    CHECK(strstr(tp.summary_method, "llm sentinel-summary/1 sentences=3 (openai http://") != NULL);
    CHECK(strstr(tp.reference_method, "sentinel-reference/1") != NULL);
    struct sn_tuples *b = NULL;
    static struct sink s;
    CHECK(sn_tuples_create(&tp, &b, &err) == SN_OK);
    for (int i = 0; b && i < 3; i++) {
        struct sn_traj *t = NULL;
        CHECK(sn_traj_parse(TRAJ[i], strlen(TRAJ[i]) - 1, "llm", &t, &err) == SN_OK);
        if (t && sn_tuples_add(b, t, collect, &s, &err)) {
            fprintf(stderr, "add: %s\n", err.msg);
            CHECK(0);
        }
        sn_traj_free(t);
    }
    CHECK(b && sn_tuples_counts(b)[SN_TC_REFERENCE_FALLBACK] == 1);
    sn_tuples_free(b);
    /* each trajectory: round 0 (agent 0,1 chosen x agent 2) and round 1 (agent 0 x 1, 2) */
    CHECK(s.n == 12);
    /* 3 summaries (round 1 of each) + 2 references (q1, q2) */
    CHECK(fake_stat(&srv, "hits") == 5);
    cJSON *recs[16] = {0};
    size_t n_recs = read_log(log, recs, 16);
    CHECK(n_recs == 5);
    int n_sum = 0, n_ref = 0;
    for (size_t i = 0; i < n_recs; i++) {
        const char *u = user_text(recs[i]);
        const cJSON *body = cJSON_GetObjectItem(recs[i], "body");
        const char *key = cJSON_GetStringValue(cJSON_GetObjectItem(recs[i], "key"));
        CHECK(u && key);
        if (!u || !key)
            continue;
        CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(body, "temperature")) == 0.0);
        CHECK(cJSON_IsNumber(cJSON_GetObjectItem(body, "seed")));
        const char *id = strstr(u, "Cairo?") ? "q1" : strstr(u, "Egypt") ? "q2" : "q3";
        if (strstr(u, "Summarize round 1 of this debate")) {
            n_sum++;
            /* the question, the options and every message of round 1 (gist) */
            CHECK(strstr(u, "Question: ") && strstr(u, "\nA. Nile\nB. Danube\nC. Volga"));
            CHECK(strstr(u, "Round 1, agent 0 (answer A): The Nile flows through Cairo. It is "
                            "long.") != NULL);
            CHECK(strstr(u, "Round 1, agent 2 (answer B): Experts say the Danube.") != NULL);
            CHECK(strstr(u, "Round 2,") == NULL); /* only earlier rounds */
            /* the round-1 context holds exactly this reply */
            struct got *g = find(&s, id, 1);
            char want[128];
            snprintf(want, sizeof want, "Summary of round 1: fake reply %.12s: read ", key);
            CHECK(g && strstr(g->context, want) != NULL);
            CHECK(g && strstr(g->context, "Round 1, agent") == NULL); /* not extractive */
        } else if (strstr(u, "The correct answer is A (Nile).")) {
            n_ref++;
            CHECK(strstr(u, "FINAL ANSWER: A") != NULL);
            CHECK(strcmp(id, "q3") != 0); /* q3 has a gold explanation */
            struct got *g = find(&s, id, 0);
            char want[128];
            snprintf(want, sizeof want, "fake reply %.12s: read ", key);
            if (!strcmp(id, "q1")) /* names the gold: kept, with a FINAL ANSWER line added */
                CHECK(g && !strncmp(g->reference, want, strlen(want)) &&
                      strstr(g->reference, "The answer is (A).\nFINAL ANSWER: A") != NULL);
            else /* names C: templated */
                CHECK_STR(g ? g->reference : "", "The correct answer is A (Nile).\nFINAL ANSWER: A");
        }
    }
    for (size_t i = 0; i < n_recs; i++)
        cJSON_Delete(recs[i]);
    CHECK(n_sum == 3 && n_ref == 2);
    struct got *g0 = find(&s, "q3", 0), *g1 = find(&s, "q3", 1);
    CHECK_STR(g0 ? g0->reference : "", "Cairo lies on the Nile.\nFINAL ANSWER: A");
    CHECK(g0 && strstr(g0->context, "Summary") == NULL && strstr(g0->context, "Round") == NULL);
    CHECK(g1 && g0 && !strcmp(g0->reference, g1->reference)); /* one reference per debate */
    sn_llm_backend_close(llm.summary);
    sn_llm_backend_close(llm.reference);

    /* the sim backend is refused */
    cJSON *simc = cJSON_Parse("{\"kind\":\"sim\"}");
    struct sn_tuples_llm sl;
    memset(&sl, 0, sizeof sl);
    CHECK(sn_sim_endpoint_open(simc, &sl.summary, &err) == SN_OK);
    err = (struct sn_err){0};
    struct sn_tuples_params sp = sn_tuples_default_params();
    CHECK(sn_tuples_use_llm(&sp, &sl, &err) == SN_E_ARG && strstr(err.msg, "sim backend"));
    CHECK(sp.summarize == NULL);
    sn_llm_backend_close(sl.summary);
    cJSON_Delete(simc);

    /* ---- CLI: named and inline endpoints, cache, byte-identical re-run ------------------- */
    fake_reset(&srv);
    CHECK(sn_test_sh("printf '{\"simulate\": {\"endpoints\": {\"fake\": {\"kind\": \"openai\", "
                     "\"base_url\": \"http://127.0.0.1:%d/v1\", \"model\": \"m\", \"cache_dir\": "
                     "\"%s\"}}}, \"build\": {\"summary\": \"llm\", \"summary_endpoint\": \"fake\", "
                     "\"reference\": \"model\", \"reference_endpoint\": {\"kind\": \"openai\", "
                     "\"base_url\": \"http://127.0.0.1:%d/v1\", \"model\": \"m\", \"cache_dir\": "
                     "\"%s\"}}}' > '%s'", srv.port, cache, srv.port, cache, rec) == 0);
#define BUILD "'%s' build --recipe '%s' -i '%s' --tokenizer '%s' --progress none --max-len 256 " \
              "--shard-size 4 "
    CHECK(sn_test_sh(BUILD "-o '%s/o1' > '%s/o1.log' 2>&1", bin, rec, trajp, tokp, dir, dir) == 0);
    CHECK(fake_stat(&srv, "hits") == 5);
    CHECK(sn_test_sh("grep -q 'reference_fallback 1' '%s/o1.log'", dir) == 0);
    CHECK(sn_test_sh("grep -q '\"reference_fallback\":[[:space:]]*1' '%s/o1/manifest.json' && "
                     "grep -q '\"summary\":[[:space:]]*\"llm sentinel-summary/1 sentences=3 "
                     "(openai http://127.0.0.1:%d/v1 model=m)\"' '%s/o1/manifest.json' && "
                     "grep -q '\"reference\":[[:space:]]*\"dataset-or-model sentinel-reference/1' "
                     "'%s/o1/manifest.json'", dir, srv.port, dir, dir) == 0);
    fake_reset(&srv);
    CHECK(sn_test_sh(BUILD "-o '%s/o2' > /dev/null 2>&1", bin, rec, trajp, tokp, dir) == 0);
    CHECK(fake_stat(&srv, "hits") == 0); /* every request served by the cache */
    CHECK(sn_test_sh("diff -r '%s/o1' '%s/o2'", dir, dir) == 0);
    /* killed mid-build (after 6 tuples: one shard of 4 complete), then resumed: the same bytes */
    CHECK(sn_test_sh("SENTINEL_TEST_KILL_AFTER=6 " BUILD "-o '%s/o5' > /dev/null 2>&1", bin, rec,
                     trajp, tokp, dir) != 0);
    CHECK(sn_test_sh("test -e '%s/o5/manifest.json'", dir) == 0);
    CHECK(sn_test_sh(BUILD "-o '%s/o5' > '%s/o5.log' 2>&1", bin, rec, trajp, tokp, dir, dir) == 0);
    CHECK(sn_test_sh("grep -q '(resumed)' '%s/o5.log'", dir) == 0);
    CHECK(sn_test_sh("diff -r '%s/o1' '%s/o5'", dir, dir) == 0);
    CHECK(fake_stat(&srv, "hits") == 0);
    /* the same directory with the extractive history is refused (settings differ) */
    struct sn_build_params bp = sn_build_default_params();
    char out1[1200];
    const char *in[1] = {trajp};
    snprintf(out1, sizeof out1, "%s/o1", dir);
    bp.inputs = in;
    bp.n_inputs = 1;
    bp.out_dir = out1;
    bp.tokenizer_path = tokp;
    bp.max_len = 256;
    bp.shard_size = 4;
    struct sn_build_report rep;
    err = (struct sn_err){0};
    CHECK(sn_tuples_build(&bp, &rep, &err) == SN_E_ARG && strstr(err.msg, "'summary' was"));

    /* ---- an endpoint that always fails: exit 1 naming the trajectory and round ----------- */
    CHECK(sn_test_sh("printf '{\"build\": {\"summary\": \"llm\", \"summary_endpoint\": "
                     "{\"kind\": \"openai\", \"base_url\": \"http://127.0.0.1:%d/v1\", "
                     "\"max_retries\": 1, \"backoff_base_s\": 0.01, \"backoff_max_s\": 0.02, "
                     "\"cache\": false, \"headers\": {\"X-Fake\": \"fail=500;times=always\"}}}}' "
                     "> '%s'", srv.port, rec) == 0);
    CHECK(sn_test_sh(BUILD "-o '%s/o3' > '%s/o3.log' 2>&1", bin, rec, trajp, tokp, dir, dir) == 1);
    CHECK(sn_test_sh("grep -q 'trajectory q1 round 1: LLM summary' '%s/o3.log'", dir) == 0);
    CHECK(sn_test_sh("grep -q '500' '%s/o3.log'", dir) == 0);

    /* ---- recipe errors ------------------------------------------------------------------- */
    CHECK(sn_test_sh("printf '{\"build\": {\"summary\": \"llm\", \"summary_endpont\": {}}}' > '%s'",
                     rec) == 0);
    CHECK(sn_test_sh(BUILD "-o '%s/o4' > '%s/o4.log' 2>&1", bin, rec, trajp, tokp, dir, dir) == 2);
    CHECK(sn_test_sh("grep -q \"did you mean 'summary_endpoint'\" '%s/o4.log'", dir) == 0);
    CHECK(sn_test_sh("printf '{\"simulate\": {\"endpoints\": {\"fake\": {\"kind\": \"openai\", "
                     "\"base_url\": \"http://127.0.0.1:1/v1\"}}}, \"build\": {\"reference\": "
                     "\"model\", \"reference_endpoint\": \"fak\"}}' > '%s'", rec) == 0);
    CHECK(sn_test_sh(BUILD "-o '%s/o4' > '%s/o4.log' 2>&1", bin, rec, trajp, tokp, dir, dir) == 2);
    CHECK(sn_test_sh("grep -q \"did you mean 'fake'\" '%s/o4.log'", dir) == 0);
    CHECK(sn_test_sh("printf '{\"build\": {\"summary\": \"llm\", \"summary_endpoint\": "
                     "{\"kind\": \"sim\"}}}' > '%s'", rec) == 0);
    CHECK(sn_test_sh(BUILD "-o '%s/o4' > '%s/o4.log' 2>&1", bin, rec, trajp, tokp, dir, dir) == 2);
    CHECK(sn_test_sh("grep -q 'sim backend cannot write' '%s/o4.log'", dir) == 0);
    CHECK(sn_test_sh("test ! -e '%s/o4'", dir) == 0);

    cJSON_Delete(cj);
    fake_stop(&srv);
    return sn_test_done();
}
