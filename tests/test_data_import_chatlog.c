/* tests/test_data_import_chatlog.c: the generic chat-log importer (sentinel.chatlog/1,
** docs/formats.md "Chat log"): field mapping, given vs extracted answers, the final vote,
** numeric tasks, and one error per malformed field; each output line is read back with the
** trajectory reader. */
#include "import/import.h"
#include "data/data.h"
#include "testutil.h"

static struct sn_traj *imp(const struct sn_import_params *p, const char *json,
                           struct sn_import_summary *sum, struct sn_err *err)
{
    struct sn_buf b = {0};
    struct sn_import_summary local = {0};
    sn_err_clear(err);
    int rc = sn_import_record(p, "logs/mine.jsonl", json, strlen(json), 0, &b,
                              sum ? sum : &local, err);
    struct sn_traj *t = NULL;
    if (!rc) {
        struct sn_err e2 = {0};
        if (sn_traj_parse(b.data, b.len, "out:1", &t, &e2))
            fprintf(stderr, "reader refused the output: %s\n", e2.msg);
    }
    sn_buf_free(&b);
    return t;
}

static const char *BASE =
    "{\"format\":\"sentinel.chatlog/1\",\"experiment\":\"my-exp\",\"dataset\":\"quiz\","
    "\"question\":\"2+2?\",\"options\":[\"3\",\"4\",\"5\"],\"gold\":\"b\","
    "\"adversarial_target\":\"C\",\"replicate\":2,\"labels\":{\"panel\":\"x\"},"
    "\"agents\":[{\"role\":\"adversary\",\"model\":\"m-adv\"},{\"model\":\"m1\"},"
    "{\"role\":\"honest\"}],"
    "\"rounds\":[[{\"agent\":2,\"text\":\"It is (B)\"},{\"agent\":0,\"text\":\"5! (C)\"},"
    "{\"agent\":1,\"text\":\"hmm\",\"answer\":\"b\"}],"
    "[{\"agent\":0,\"text\":\"(C)\"},{\"agent\":1,\"text\":\"(C) fine\"},"
    "{\"agent\":2,\"text\":\"FINAL ANSWER: C\"}]]}";

static char *replace(const char *s, const char *from, const char *to)
{
    const char *p = strstr(s, from);
    if (!p)
        return NULL;
    size_t a = (size_t)(p - s), n = strlen(s) - strlen(from) + strlen(to);
    char *o = malloc(n + 1);
    memcpy(o, s, a);
    strcpy(o + a, to);
    strcat(o, p + strlen(from));
    return o;
}

int main(void)
{
    struct sn_import_params p = sn_import_default_params();
    p.format = "chatlog";
    struct sn_err err = {0};
    struct sn_import_summary sum = {0};
    struct sn_traj *t = imp(&p, BASE, &sum, &err);
    CHECK_MSG(t != NULL, "%s", err.msg);
    if (t) {
        CHECK_STR(t->experiment, "my-exp");
        CHECK_STR(t->dataset, "quiz");
        CHECK_STR(t->gold, "B");
        CHECK_STR(t->adversarial_target, "C");
        CHECK_STR(t->scenario, "collaboration");
        CHECK(t->replicate == 2);
        CHECK(t->n_agents == 3 && t->agents[0].role == SN_ROLE_ADVERSARY &&
              t->agents[2].role == SN_ROLE_HONEST);
        CHECK_STR(t->agents[0].model, "m-adv");
        CHECK_STR(t->agents[2].model, "unknown");
        /* messages land in slot order whatever order the log lists them in */
        CHECK(t->rounds[0].msgs[0].agent == 0);
        CHECK_STR(t->rounds[0].msgs[0].text, "5! (C)");
        CHECK_STR(t->rounds[0].msgs[0].answer, "C");  /* extracted */
        CHECK_STR(t->rounds[0].msgs[1].answer, "B");  /* given, normalised to upper case */
        CHECK_STR(t->rounds[0].msgs[2].answer, "B");
        CHECK_STR(t->final.answer, "C");
        CHECK(!t->final.correct);
        char buf[64];
        CHECK_STR(sn_traj_label(t, "panel", buf, sizeof buf), "x");
        const cJSON *m01 = cJSON_GetArrayItem(cJSON_GetArrayItem(
            cJSON_GetObjectItemCaseSensitive(t->root_, "rounds"), 0), 1);
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m01, "answer_rule")),
                  "given");
        /* the item id hashes the question; the id is deterministic */
        char hex[65];
        sn_sha256_hex("2+2?", 4, hex);
        char want[40];
        snprintf(want, sizeof want, "quiz-%.16s", hex);
        CHECK_STR(t->item_id, want);
        struct sn_traj *t2 = imp(&p, BASE, NULL, &err);
        CHECK(t2 && !strcmp(t2->id, t->id));
        sn_traj_free(t2);
        sn_traj_free(t);
    }
    /* the given answer "b" and the extracted nothing ("hmm") differ: counted */
    CHECK(sum.n_answers_differ == 1);
    CHECK(sum.n_messages == 6);
    /* --answers sentinel ignores given answers */
    struct sn_import_params ps = p;
    ps.answers = SN_IMPORT_ANSWERS_SENTINEL;
    t = imp(&ps, BASE, NULL, &err);
    CHECK(t && t->rounds[0].msgs[1].answer == NULL);
    sn_traj_free(t);
    /* a tie in the last round: no decision */
    char *s = replace(BASE, "FINAL ANSWER: C", "FINAL ANSWER: B");
    char *s2 = replace(s, "(C) fine", "(A) fine");
    t = imp(&p, s2, NULL, &err);
    CHECK(t && t->final.answer == NULL);
    sn_traj_free(t);
    free(s);
    free(s2);
    /* numeric task: no options, numbers normalised */
    const char *num =
        "{\"format\":\"sentinel.chatlog/1\",\"task\":\"numeric\",\"question\":\"6*7?\","
        "\"gold\":\"42.0\",\"agents\":[{},{}],\"rounds\":[[{\"agent\":0,\"text\":\"#### 42\"},"
        "{\"agent\":1,\"text\":\"the answer is 42\"}]]}";
    t = imp(&p, num, NULL, &err);
    CHECK_MSG(t != NULL, "%s", err.msg);
    if (t) {
        CHECK_STR(t->gold, "42");
        CHECK(t->n_options == 0 && t->task == SN_TASK_NUMERIC);
        CHECK_STR(t->final.answer, "42");
        CHECK(t->final.correct);
        CHECK_STR(t->scenario, "none");
        CHECK_STR(t->experiment, "chatlog");
        sn_traj_free(t);
    }
    /* errors, each naming file:line and the field */
    static const struct {
        const char *from, *to, *want;
    } bad[] = {
        {"sentinel.chatlog/1", "sentinel.chatlog/9", "format"},
        {"\"gold\":\"b\"", "\"gold\":\"z\"", "gold"},
        {"\"adversarial_target\":\"C\"", "\"adversarial_target\":7", "adversarial_target"},
        {"\"options\":[\"3\",\"4\",\"5\"]", "\"options\":[\"3\"]", "options"},
        {"{\"role\":\"honest\"}", "{\"role\":\"judge\"}", "agents[2].role"},
        {"{\"agent\":2,\"text\":\"FINAL ANSWER: C\"}", "{\"agent\":1,\"text\":\"x\"}",
         "speaks twice"},
        {"{\"agent\":2,\"text\":\"It is (B)\"},", "", "one message per agent"},
        {"\"agent\":2,\"text\":\"It is (B)\"", "\"agent\":3,\"text\":\"It is (B)\"",
         "rounds[0][0]"},
        {"\"answer\":\"b\"", "\"answer\":\"q\"", "answer"},
        {"\"replicate\":2", "\"replicate\":-1", "replicate"},
        {"\"labels\":{\"panel\":\"x\"}", "\"labels\":[]", "labels"},
        {"\"question\":\"2+2?\",", "", "question"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *b = replace(BASE, bad[i].from, bad[i].to);
        CHECK_MSG(b != NULL, "case %zu", i);
        if (!b)
            continue;
        t = imp(&p, b, NULL, &err);
        CHECK_MSG(t == NULL && err.code == SN_E_FORMAT && strstr(err.msg, "logs/mine.jsonl:1:") &&
                      strstr(err.msg, bad[i].want),
                  "case %zu: %s", i, err.msg);
        sn_traj_free(t);
        free(b);
    }
    t = imp(&p, "[1,2]", NULL, &err);
    CHECK(t == NULL && err.code == SN_E_FORMAT);
    return sn_test_done();
}
