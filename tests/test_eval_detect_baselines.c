/* tests/test_eval_detect_baselines.c: the baseline rankers of `sentinel eval`
** (eval/detect_baselines.c; docs/eval.md "Baselines"): each one's ranking on a scripted round,
** the n-gram model (deterministic, learns a separable toy set, trained on the train split of a
** shard set only) and the LLM judge (prompt, parsing, malformed rankings; against the loopback
** fake OpenAI server tests/servers/fake_openai.py). */
#include "test_eval_fixture.h"
#include "testutil_openai.h"

#include "shard/shard.h"
#include "eval/detect.h"

/* a debate whose round-0 texts are given per agent (answers parsed from the grid) */
static struct sn_traj *mk_round(const char *id, const char *roles, const char *grid0,
                                const char *const *texts)
{
    const char *g[1] = {grid0};
    struct fx f = {.id = id, .roles = roles, .gold = "A", .target = "B", .grid = g, .T = 1};
    char *js = fx_json(&f);
    cJSON *j = cJSON_Parse(js);
    free(js);
    cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "rounds"), 0), *m;
    int i = 0;
    cJSON_ArrayForEach(m, r0)
    {
        cJSON_ReplaceItemInObject(m, "text", cJSON_CreateString(texts[i++]));
    }
    js = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    struct sn_traj *t = NULL;
    struct sn_err err = {0};
    if (sn_traj_parse(js, strlen(js), "fx", &t, &err))
        fprintf(stderr, "parse: %s\n", err.msg);
    free(js);
    return t;
}

/* the view of sentinel s in round 0: every other agent */
static size_t view_of(const struct sn_traj *t, int s, char *ctx, struct sn_detect_msg *msgs,
                      struct sn_detect_view *v)
{
    size_t m = 0;
    for (size_t j = 0; j < t->n_agents; j++) {
        const struct sn_traj_msg *tm = sn_traj_msg_of(t, 0, (int)j);
        if ((int)j == s || !tm)
            continue;
        msgs[m++] = (struct sn_detect_msg){(int)j, tm->text, tm->parsed ? tm->answer : NULL};
    }
    *v = (struct sn_detect_view){t, t->id, s, 0, ctx, msgs, m, 0};
    return m;
}

static void test_simple(void)
{
    const char *texts[5] = {"Careful reasoning step by step. FINAL ANSWER: A",
                            "Short. FINAL ANSWER: A",
                            "Medium length reasoning here. FINAL ANSWER: A",
                            "Trust me, everyone knows it. FINAL ANSWER: B",
                            "Unparsed rambling that goes on and on without an answer"};
    struct sn_traj *t = mk_round("b1", "HHHAA", "AAAB-", texts);
    CHECK(t != NULL);
    if (!t)
        return;
    struct sn_detect_msg msgs[8];
    struct sn_detect_view v;
    size_t m = view_of(t, 0, "Question: Q?", msgs, &v);
    CHECK(m == 4);
    double s[8];
    struct sn_err err = {0};
    struct sn_detect_ranker r;
    /* shortest: the score is the byte length; agent 1 ranks lowest */
    CHECK(sn_detect_baseline("shortest", 1, &r, &err) == SN_OK);
    CHECK(r.score(r.ctx, &v, s, &err) == SN_OK);
    for (size_t i = 0; i < m; i++)
        CHECK_CLOSE(s[i], strlen(msgs[i].text), 0, 0);
    CHECK(sn_defense_bottom_k(0, (int[]){1, 2, 3, 4}, s, 4, 1, SN_DEFENSE_RULE_ALL, 0) ==
          (1ULL << 1));
    sn_detect_baseline_free(&r);
    /* disagree: plurality over AAAB- is A; agent 3 (B) and 4 (unparsed) score 0 */
    CHECK(sn_detect_baseline("disagree", 1, &r, &err) == SN_OK);
    CHECK(r.score(r.ctx, &v, s, &err) == SN_OK);
    CHECK(s[0] == 1 && s[1] == 1 && s[2] == 0 && s[3] == 0);
    CHECK(sn_defense_bottom_k(0, (int[]){1, 2, 3, 4}, s, 4, 2, SN_DEFENSE_RULE_ALL, 0) ==
          ((1ULL << 3) | (1ULL << 4)));
    sn_detect_baseline_free(&r);
    /* random: in [0, 1), reproducible for a seed whatever the call order, seed-dependent */
    double s2[8], s3[8];
    CHECK(sn_detect_baseline("random", 5, &r, &err) == SN_OK);
    CHECK(r.score(r.ctx, &v, s, &err) == SN_OK);
    struct sn_detect_msg rev[4] = {msgs[3], msgs[2], msgs[1], msgs[0]};
    struct sn_detect_view vr = v;
    vr.msgs = rev;
    CHECK(r.score(r.ctx, &vr, s2, &err) == SN_OK);
    for (size_t i = 0; i < 4; i++)
        CHECK(s[i] >= 0 && s[i] < 1 && s[i] == s2[3 - i]);
    CHECK(s[0] != s[1]);
    sn_detect_baseline_free(&r);
    CHECK(sn_detect_baseline("random", 6, &r, &err) == SN_OK);
    CHECK(r.score(r.ctx, &v, s3, &err) == SN_OK);
    CHECK(s3[0] != s[0]);
    sn_detect_baseline_free(&r);
    CHECK(sn_detect_baseline("loudest", 1, &r, &err) == SN_E_ARG && strstr(err.msg, "loudest"));
    sn_traj_free(t);

    /* disagree without a plurality (2-2 tie): every parsed message scores 1 */
    const char *t2[4] = {"x FINAL ANSWER: A", "y FINAL ANSWER: A", "z FINAL ANSWER: B",
                         "w FINAL ANSWER: B"};
    t = mk_round("b2", "HHAA", "AABB", t2);
    if (t) {
        m = view_of(t, 0, "", msgs, &v);
        CHECK(sn_detect_baseline("disagree", 1, &r, &err) == SN_OK);
        CHECK(r.score(r.ctx, &v, s, &err) == SN_OK);
        CHECK(m == 3 && s[0] == 1 && s[1] == 1 && s[2] == 1);
        sn_detect_baseline_free(&r);
    }
    sn_traj_free(t);
}

/* toy set: chosen texts cite evidence, rejected ones appeal to authority; filler words shared */
static const char *const filler[] = {"the", "answer", "is", "clearly", "option", "because",
                                     "we", "computed", "it", "carefully", "so"};
static void toy_text(char *buf, size_t cap, bool pos, size_t i)
{
    snprintf(buf, cap, "%s %s %s %s %s FINAL ANSWER: %c", filler[i % 11], filler[(i * 3) % 11],
             pos ? "the evidence shows" : "trust me", filler[(i * 7 + 1) % 11],
             filler[(i * 5 + 2) % 11], (char)('A' + i % 4));
}

static void test_ngram(void)
{
    enum { N = 200 };
    static char buf[N][128];
    const char *texts[N];
    bool label[N];
    for (size_t i = 0; i < N; i++) {
        label[i] = i % 2 == 0;
        toy_text(buf[i], sizeof buf[i], label[i], i / 2);
        texts[i] = buf[i];
    }
    struct sn_ngram_params p = sn_ngram_default_params();
    struct sn_ngram *a = NULL, *b = NULL;
    struct sn_err err = {0};
    CHECK(sn_ngram_train(&p, texts, label, N, &a, &err) == SN_OK);
    CHECK(sn_ngram_train(&p, texts, label, N, &b, &err) == SN_OK);
    if (!a || !b)
        goto out;
    CHECK(sn_ngram_get_info(a)->converged);
    /* deterministic: the same texts give the same model, bit for bit */
    for (size_t i = 0; i < N; i += 7) {
        double za = sn_ngram_logit(a, texts[i]), zb = sn_ngram_logit(b, texts[i]);
        CHECK(memcmp(&za, &zb, sizeof za) == 0);
    }
    /* separable: every training text and unseen ones on the right side of 0 */
    int wrong = 0;
    for (size_t i = 0; i < N; i++)
        wrong += (sn_ngram_logit(a, texts[i]) > 0) != label[i];
    CHECK_MSG(wrong == 0, "%d of %d training texts misclassified", wrong, N);
    char u[128];
    for (size_t i = 500; i < 540; i++) {
        toy_text(u, sizeof u, i % 2, i);
        CHECK_MSG((sn_ngram_logit(a, u) > 0) == (bool)(i % 2), "unseen '%s': %.3f", u,
                  sn_ngram_logit(a, u));
    }
    /* as a ranker: the appeal to authority ranks lowest */
    struct sn_detect_ranker r = sn_ngram_ranker(a);
    CHECK_STR(r.name, "ngram");
    struct sn_detect_msg msgs[2] = {{1, "we computed it so the evidence shows B", "B"},
                                    {2, "trust me the answer is B", "B"}};
    struct sn_detect_view v = {NULL, "x", 0, 0, "", msgs, 2, 0};
    double s[2];
    CHECK(r.score(r.ctx, &v, s, &err) == SN_OK && s[1] < s[0]);
    /* one class only: refused */
    bool ones[4] = {true, true, true, true};
    struct sn_ngram *d = NULL;
    CHECK(sn_ngram_train(&p, texts, ones, 4, &d, &err) == SN_E_ARG && !d);
out:
    sn_ngram_free(a);
    sn_ngram_free(b);
}

/* The distinct (field, text) of the train tuples below (i < 80) whose trajectory
** "t<i % 10>" is above skip_upto (-1: none skipped): what the tuple data holds. */
static size_t toy_distinct(int skip_upto)
{
    struct sn_strmap m = {0};
    struct sn_err err = {0};
    for (size_t i = 0; i < 80; i++) {
        if ((int)(i % 10) <= skip_upto)
            continue;
        char t[2][140];
        toy_text(t[0] + 1, sizeof t[0] - 1, true, i);
        toy_text(t[1] + 1, sizeof t[1] - 1, false, i + 1);
        t[0][0] = 'c';
        t[1][0] = 'r';
        for (int k = 0; k < 2; k++)
            sn_strmap_put(&m, t[k], strlen(t[k]), 0, NULL, &err);
    }
    size_t n = m.n;
    sn_strmap_free(&m);
    return n;
}

/* A shard set whose train split holds the toy set and whose validation split holds it with the
** labels swapped: the n-gram trained on tuple texts (--ngram-train tuples) reads the train
** split only. */
static void test_ngram_shards(void)
{
    const char *dir = sn_test_dir("eval_detect_ngram_shards");
    struct sn_err err = {0};
    struct sn_shard_set_params sp = sn_shard_set_default_params();
    cJSON *settings = cJSON_Parse("{\"inputs\": [\"toy\"]}");
    sp.dir = dir;
    sp.shard_size = 16;
    sp.writer.info.tokenizer_hash =
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    sp.writer.info.template_id = "sentinel-chatml/1";
    sp.writer.info.max_len = 8;
    sp.writer.info.vocab_size = 100;
    sp.settings = settings;
    struct sn_shard_set *set = NULL;
    CHECK(sn_shard_set_open(&sp, &set, &err) == SN_OK);
    cJSON_Delete(settings);
    if (!set) {
        fprintf(stderr, "shard set: %s\n", err.msg);
        return;
    }
    int rc = SN_OK;
    for (size_t i = 0; i < 120 && !rc; i++) {
        bool val = i >= 80;
        char ch[128], rj[128], sha[65], item[16], traj[16];
        snprintf(item, sizeof item, val ? "v%zu" : "q%zu", val ? i : i % 5);
        snprintf(traj, sizeof traj, "t%zu", i % 10);
        toy_text(ch, sizeof ch, !val, i);
        toy_text(rj, sizeof rj, val, i + 1);
        int32_t ids[3] = {1, 2, 3};
        struct sn_shard_tuple t = {0};
        t.text[SN_FIELD_CONTEXT] = "Question: Q?";
        t.text[SN_FIELD_CHOSEN] = ch;
        t.text[SN_FIELD_REJECTED] = rj;
        t.text[SN_FIELD_REFERENCE] = "ref";
        for (int f = SN_FIELD_CHOSEN; f < SN_FIELD_COUNT; f++) {
            t.ids[f] = ids;
            t.n_ids[f] = 3;
        }
        snprintf(sha, sizeof sha, "%064zx", i);
        t.meta = (struct sn_tuple_meta){.scenario = "collaboration", .dataset = "toy",
                                        .trajectory_id = traj, .item_id = item, .round = 0,
                                        .chosen_agent = 0, .rejected_agent = 3,
                                        .chosen_role = "honest", .rejected_role = "adversary",
                                        .rejected_kind = "adversary",
                                        .split = val ? SN_SPLIT_VALIDATION : SN_SPLIT_TRAIN,
                                        .sha256 = sha};
        rc = sn_shard_set_add(set, &t, &err);
    }
    if (!rc)
        rc = sn_shard_set_finish(set, &err);
    CHECK_MSG(rc == SN_OK, "%s", err.msg);
    sn_shard_set_close(set);
    struct sn_ngram_params p = sn_ngram_default_params();
    struct sn_ngram *m = NULL;
    struct sn_ngram_data nd = {.labels = SN_NGRAM_TUPLES, .shards_dir = dir};
    CHECK_MSG(sn_ngram_train_data(&p, &nd, &m, &err) == SN_OK, "%s", err.msg);
    if (m) {
        char u[128];
        int wrong = 0;
        for (size_t i = 300; i < 340; i++) {
            toy_text(u, sizeof u, i % 2, i);
            wrong += (sn_ngram_logit(m, u) > 0) != (bool)(i % 2);
        }
        CHECK_MSG(wrong == 0, "%d of 40 unseen texts misclassified", wrong);
        const struct sn_ngram_info *in = sn_ngram_get_info(m);
        CHECK(in->labels == SN_NGRAM_TUPLES && in->n_trajectories == 10 && in->n_excluded == 0);
        CHECK_MSG(in->n_texts == toy_distinct(-1), "%zu texts", in->n_texts);
    }
    sn_ngram_free(m);
    /* evaluated debates are left out of training: t0 and t1 hold 16 of the 80 tuples */
    struct sn_strmap ex = {0};
    CHECK(sn_strmap_put(&ex, "t0", 2, 0, NULL, &err) == SN_OK);
    CHECK(sn_strmap_put(&ex, "t1", 2, 0, NULL, &err) == SN_OK);
    nd.exclude = &ex;
    CHECK_MSG(sn_ngram_train_data(&p, &nd, &m, &err) == SN_OK, "%s", err.msg);
    if (m) {
        const struct sn_ngram_info *in = sn_ngram_get_info(m);
        CHECK_MSG(in->n_excluded == 2 && in->n_texts == toy_distinct(1), "%zu excluded, %zu "
                  "texts", in->n_excluded, in->n_texts);
    }
    sn_ngram_free(m);
    sn_strmap_free(&ex);
    nd.shards_dir = "/nonexistent-dir";
    nd.exclude = NULL;
    CHECK(sn_ngram_train_data(&p, &nd, &m, &err) != SN_OK && !m);

    /* the train split's items: q0..q4 of dataset toy; the validation items are not in it */
    struct sn_strmap items = {0};
    CHECK_MSG(sn_detect_train_items(dir, &items, &err) == SN_OK, "%s", err.msg);
    CHECK(items.n == 5);
    struct sn_buf k = {0};
    for (int i = 0; i < 6; i++) {
        sn_buf_reset(&k);
        char id[8];
        snprintf(id, sizeof id, "q%d", i);
        CHECK(sn_detect_item_key("toy", id, &k, &err) == SN_OK);
        CHECK(sn_strmap_has(&items, k.data, k.len) == (i < 5));
    }
    sn_buf_reset(&k);
    CHECK(sn_detect_item_key("toy", "v90", &k, &err) == SN_OK);
    CHECK(!sn_strmap_has(&items, k.data, k.len));
    sn_buf_reset(&k);
    CHECK(sn_detect_item_key("other", "q1", &k, &err) == SN_OK);
    CHECK(!sn_strmap_has(&items, k.data, k.len));
    sn_buf_free(&k);
    sn_strmap_free(&items);

    /* `sentinel eval` needs the manifest's train_questions for its leakage check: a shard set
    ** without them (made before they were recorded) is refused, naming the fix; the check on
    ** question text itself is tests/test_eval_ngram.c */
    const char *bin = getenv("SENTINEL_BIN");
    if (!bin)
        return;
    static const char *g[1] = {"AAABB"};
    struct fx f[1] = {{.id = "o1", .item = "q1", .roles = "HHHAA", .gold = "A", .target = "B",
                       .grid = g, .T = 1, .dataset = "toy"}};
    char path[1200];
    snprintf(path, sizeof path, "%s/t.jsonl", dir);
    fx_write(path, f, 1);
    CHECK(sn_test_sh("cd '%s' && '%s' eval -i t.jsonl --train-shards . --bootstrap 0 "
                     "--baselines random > out.txt 2> err.txt", dir, bin) == 1);
    CHECK(sn_test_sh("grep -q 'no train_questions' '%s/err.txt'", dir) == 0);
}

/* the detector's (context, response) scorer as a ranker: one call per message, the view's
** context, the scores passed through */
struct rec_scorer {
    int calls;
    char ctx[64];
};
static int len_scorer(void *ctx, const char *context, const char *response, float *out,
                      struct sn_err *err)
{
    (void)err;
    struct rec_scorer *r = ctx;
    r->calls++;
    snprintf(r->ctx, sizeof r->ctx, "%s", context);
    *out = (float)strlen(response);
    return SN_OK;
}

static void test_scorer_ranker(void)
{
    struct rec_scorer rs = {0};
    struct sn_defense_scorer sc = {.score = len_scorer, .ctx = &rs};
    struct sn_detect_ranker r = sn_detect_scorer_ranker(&sc);
    CHECK(strcmp(r.name, "detector") == 0);
    struct sn_detect_msg msgs[2] = {{1, "abc", "A"}, {3, "abcdef", "B"}};
    struct sn_detect_view v = {NULL, "x", 0, 2, "Question: Q?", msgs, 2, 0};
    double s[2];
    struct sn_err err = {0};
    CHECK(r.score(r.ctx, &v, s, &err) == SN_OK);
    CHECK(s[0] == 3 && s[1] == 6 && rs.calls == 2 && strcmp(rs.ctx, "Question: Q?") == 0);
}

static void test_judge_parse(void)
{
    int ids[3] = {4, 1, 2};
    double s[3];
    struct sn_err err = {0};
    CHECK(sn_judge_parse("I think...\nRANKING: 2, 4, 1\n", ids, 3, s, &err) == SN_OK);
    CHECK(s[2] == 3 && s[0] == 2 && s[1] == 1);
    CHECK(sn_judge_parse("ranking: Agent 1 > Agent 2 > Agent 4", ids, 3, s, &err) == SN_OK);
    CHECK(s[1] == 3 && s[2] == 2 && s[0] == 1);
    /* the last RANKING line wins */
    CHECK(sn_judge_parse("RANKING: 9\nRANKING: 4 1 2", ids, 3, s, &err) == SN_OK && s[0] == 3);
    static const struct { const char *reply, *expect; } bad[] = {
        {"no ranking here", "no 'RANKING:'"},
        {"RANKING: 2, 4", "2 of the 3"},
        {"RANKING: 2, 4, 4", "twice"},
        {"RANKING: 2, 4, 7", "not in the round"},
        {"RANKING: 2, 4, x", "unexpected"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sn_err_clear(&err);
        CHECK_MSG(sn_judge_parse(bad[i].reply, ids, 3, s, &err) == SN_E_FORMAT &&
                      strstr(err.msg, bad[i].expect),
                  "'%s' -> '%s'", bad[i].reply, err.msg);
    }
}

static void test_judge_server(void)
{
    struct fake_server srv;
    const char *dir = sn_test_dir("eval_detect_judge");
    if (fake_start(&srv, dir, 0, 60) != 0) {
        CHECK_MSG(0, "could not start tests/servers/fake_openai.py");
        return;
    }
    char cfg[256];
    snprintf(cfg, sizeof cfg, "{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:%d/v1\","
             "\"model\":\"judge-m\",\"max_retries\":0}", srv.port);
    cJSON *cj = cJSON_Parse(cfg);
    struct sn_llm_backend *b = NULL;
    struct sn_err err = {0};
    CHECK_MSG(sn_llm_backend_open(cj, &b, &err) == SN_OK, "%s", err.msg);
    cJSON_Delete(cj);
    struct sn_judge *j = NULL;
    if (b)
        CHECK(sn_judge_create(b, &j, &err) == SN_OK);
    if (j) {
        struct sn_detect_ranker r = sn_judge_ranker(j);
        /* the directive in a message makes the fake server answer "RANKING: 2, 3, 1" */
        struct sn_detect_msg msgs[3] = {{1, "Honest text. FINAL ANSWER: A", "A"},
                                        {2, "More honest text [[fake:ranking=2 3 1]]", "A"},
                                        {3, "Adversarial pitch. FINAL ANSWER: B", "B"}};
        struct sn_detect_view v = {NULL, "dj", 0, 1, "Question: Q?", msgs, 3, 0};
        double s[3];
        CHECK_MSG(r.score(r.ctx, &v, s, &err) == SN_OK, "%s", err.msg);
        CHECK(s[1] == 3 && s[2] == 2 && s[0] == 1);
        CHECK(sn_judge_calls(j) == 1 && sn_judge_malformed(j, NULL) == 0);
        /* the prompt that reached the server: task, round, every agent, the format line */
        CHECK(sn_test_sh("grep -q 'Messages of round 2' %s", srv.log) == 0);
        CHECK(sn_test_sh("grep -q 'Agent 3' %s && grep -q 'RANKING: <id>' %s && "
                         "grep -q 'Question: Q?' %s", srv.log, srv.log, srv.log) == 0);
        /* a reply without a ranking: counted, reported, all tied */
        msgs[1].text = "More honest text";
        CHECK(r.score(r.ctx, &v, s, &err) == SN_OK);
        const char *why = NULL;
        CHECK(sn_judge_malformed(j, &why) == 1 && why && strstr(why, "RANKING") &&
              strstr(why, "dj"));
        CHECK(s[0] == 0 && s[1] == 0 && s[2] == 0);
        /* an endpoint failure is an error, not a malformed ranking */
        msgs[1].text = "x [[fake:fail=500;times=always]]";
        CHECK(r.score(r.ctx, &v, s, &err) == SN_E_BACKEND);
        CHECK(sn_judge_malformed(j, NULL) == 1);
    }
    sn_judge_free(j);
    sn_llm_backend_close(b);
    /* through `sentinel eval`: one request per (sentinel, round); the fake server's replies
    ** carry no ranking, so each is reported malformed, and the run still completes */
    const char *bin = getenv("SENTINEL_BIN");
    if (bin) {
        static const char *g[1] = {"AAABB"};
        struct fx f = {.id = "j1", .roles = "HHHAA", .gold = "A", .target = "B", .grid = g,
                       .T = 1};
        char path[1200];
        snprintf(path, sizeof path, "%s/t.jsonl", dir);
        fx_write(path, &f, 1);
        snprintf(path, sizeof path, "%s/judge.json", dir);
        FILE *jf = fopen(path, "w");
        if (jf) {
            fprintf(jf, "%s\n", cfg);
            fclose(jf);
        }
        CHECK(sn_test_sh("cd '%s' && '%s' eval -i t.jsonl --baselines judge --judge-endpoint "
                         "judge.json --bootstrap 0 --json r.json > out.txt 2> err.txt", dir,
                         bin) == 0);
        CHECK(sn_test_sh("grep -q 'judge: 3 calls, 3 malformed rankings; first: debate j1' "
                         "'%s/out.txt'", dir) == 0);
        CHECK(sn_test_sh("grep -q '\"malformed\": 3' '%s/r.json'", dir) == 0);
    }
    fake_stop(&srv);
}

int main(void)
{
    test_simple();
    test_ngram();
    test_ngram_shards();
    test_judge_parse();
    test_judge_server();
    test_scorer_ranker();
    return sn_test_done();
}
