/* tests/test_data_trajectory.c: the sentinel.trajectory/1 reader (data/data.h).
** A valid debate is built here field by field, then spoiled one way per failure kind: each must
** fail with a message naming file:line and the field. Gzip multi-member files, plain files,
** a truncated gzip member, a partial last line, --skip-bad counting and allocation failure. */
#include "data/data.h"
#include "testutil.h"

#include <unistd.h>
#include <zlib.h>

/* A valid AITM-style debate: 3 agents (honest, honest, interceptor), 2 rounds. */
static cJSON *valid(void)
{
    return cJSON_Parse(sn_test_trajectory_text());
}

static char *line_of(cJSON *j)
{
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

static void write_plain(const char *path, const char *content)
{
    FILE *f = fopen(path, "wb");
    fputs(content, f);
    fclose(f);
}

/* each line its own gzip member, the way simulate appends */
static void write_gz_members(const char *path, const char *const *lines, size_t n)
{
    remove(path);
    for (size_t i = 0; i < n; i++) {
        gzFile g = gzopen(path, "ab");
        gzputs(g, lines[i]);
        gzputs(g, "\n");
        gzclose(g);
    }
}

static void test_valid_fields(void)
{
    char *s = line_of(valid());
    struct sn_traj *t = NULL;
    struct sn_err err = {0};
    CHECK(sn_traj_parse(s, strlen(s), "x.jsonl:1", &t, &err) == SN_OK);
    CHECK(t != NULL);
    if (!t) {
        fprintf(stderr, "%s\n", err.msg);
        free(s);
        return;
    }
    CHECK_STR(t->id, "d1");
    CHECK_STR(t->scenario, "aitm");
    CHECK(t->subject == NULL);
    CHECK(t->task == SN_TASK_MC);
    CHECK(t->n_options == 3);
    CHECK_STR(t->options[2], "z");
    CHECK_STR(t->gold, "A");
    CHECK_STR(t->gold_explanation, "because");
    CHECK_STR(t->adversarial_target, "B");
    CHECK(t->n_agents == 3 && t->n_honest == 2 && t->n_interceptor == 1 && t->n_adversary == 0);
    CHECK(t->agents[2].role == SN_ROLE_INTERCEPTOR);
    CHECK(t->agents[2].n_intercepts == 1 && t->agents[2].intercepts[0][0] == 0 &&
          t->agents[2].intercepts[0][1] == 1);
    CHECK_STR(t->agents[1].model, "m1");
    CHECK(t->agents[0].persona == NULL);
    CHECK(t->n_edges == 3 && t->edges[2][0] == 0 && t->edges[2][1] == 2);
    CHECK(t->n_rounds == 2);
    CHECK(t->rounds[0].n_msgs == 3 && t->rounds[1].n_msgs == 2);
    const struct sn_traj_msg *m = sn_traj_msg_of(t, 0, 0);
    CHECK(m && m->tampered && m->n_deliveries == 1 && m->deliveries[0].to == 1);
    CHECK(m && !strcmp(m->deliveries[0].answer, "B") && m->latency_ms == 1.5 &&
          m->prompt_tokens == 10);
    m = sn_traj_msg_of(t, 0, 1);
    CHECK(m && !m->parsed && m->answer == NULL);
    m = sn_traj_msg_of(t, 1, 1); /* speaking order differs from id order */
    CHECK(m && !strcmp(m->text, "t11") && m->has_blacklist && m->n_blacklisted == 1);
    CHECK(sn_traj_msg_of(t, 1, 2) == NULL); /* agent 2 did not speak in round 1 */
    CHECK(sn_traj_msg_of(t, 2, 0) == NULL);
    CHECK(t->final.correct && !strcmp(t->final.answer, "A") && t->final.n_rounds == 2);
    CHECK(t->seed == 1234 && t->replicate == 1);
    CHECK_STR(t->defense_name, "none");
    char buf[64];
    CHECK_STR(sn_traj_label(t, "panel", buf, sizeof buf), "baseline");
    CHECK_STR(sn_traj_label(t, "k", buf, sizeof buf), "3");
    CHECK(sn_traj_label(t, "nope", buf, sizeof buf) == NULL);
    sn_traj_free(t);
    free(s);
}

/* spoilers: each modifies the valid tree; expect a substring of the error */
static void sp_schema(cJSON *j)
{
    cJSON_ReplaceItemInObject(j, "schema", cJSON_CreateString("sentinel.trajectory/2"));
}
static void sp_no_gold(cJSON *j) { cJSON_DeleteItemFromObject(j, "gold"); }
static void sp_answer_num(cJSON *j)
{
    cJSON *m = cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "rounds"), 1), 0);
    cJSON_ReplaceItemInObject(m, "answer", cJSON_CreateNumber(3));
}
static void sp_parsed_mismatch(cJSON *j)
{
    cJSON *m = cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "rounds"), 0), 1);
    cJSON_ReplaceItemInObject(m, "parsed", cJSON_CreateTrue());
}
static void sp_role(cJSON *j)
{
    cJSON *a = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "agents"), 1);
    cJSON_ReplaceItemInObject(a, "role", cJSON_CreateString("villain"));
}
static void sp_agent_range(cJSON *j)
{
    cJSON *m = cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "rounds"), 0), 2);
    cJSON_ReplaceItemInObject(m, "agent", cJSON_CreateNumber(7));
}
static void sp_twice(cJSON *j)
{
    cJSON *m = cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "rounds"), 1), 1);
    cJSON_ReplaceItemInObject(m, "agent", cJSON_CreateNumber(1));
}
static void sp_final(cJSON *j)
{
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(j, "final"), "correct");
}
static void sp_topo_n(cJSON *j)
{
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(j, "topology"), "n_agents",
                              cJSON_CreateNumber(4));
}
static void sp_edge(cJSON *j)
{
    cJSON *e = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "topology"), "edges");
    cJSON_AddItemToArray(e, cJSON_CreateString("0-1"));
}
static void sp_task(cJSON *j) { cJSON_ReplaceItemInObject(j, "task", cJSON_CreateString("essay")); }
static void sp_delivery(cJSON *j)
{
    cJSON *m = cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "rounds"), 0), 0);
    cJSON *d = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "deliveries"), 0);
    cJSON_DeleteItemFromObject(d, "text");
}
static void sp_replicate(cJSON *j)
{
    cJSON_ReplaceItemInObject(j, "replicate", cJSON_CreateNumber(1.5));
}
static void sp_agent_order(cJSON *j)
{
    cJSON *a = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "agents"), 0);
    cJSON_ReplaceItemInObject(a, "id", cJSON_CreateNumber(1));
}
static void sp_round_obj(cJSON *j)
{
    cJSON_ReplaceItemInArray(cJSON_GetObjectItem(j, "rounds"), 1, cJSON_CreateObject());
}
static void sp_not_object(cJSON *j)
{
    (void)j;
}

static const struct {
    const char *name;
    void (*spoil)(cJSON *);
    const char *expect;
} spoilers[] = {
    {"schema", sp_schema, "unknown schema 'sentinel.trajectory/2'"},
    {"no gold", sp_no_gold, "missing field 'gold'"},
    {"answer number", sp_answer_num,
     "field 'rounds[1][0].answer': expected string or null, got number"},
    {"parsed mismatch", sp_parsed_mismatch,
     "field 'rounds[0][1].parsed': true but 'answer' is null"},
    {"role", sp_role, "field 'agents[1].role': unknown role 'villain'"},
    {"agent range", sp_agent_range, "field 'rounds[0][2].agent': agent id out of range"},
    {"agent twice", sp_twice, "field 'rounds[1][1].agent': agent speaks twice"},
    {"final.correct", sp_final, "missing field 'final.correct' (expected bool)"},
    {"topology n", sp_topo_n, "field 'topology.n_agents': does not match"},
    {"edge", sp_edge, "field 'topology.edges[3]': expected a pair"},
    {"task", sp_task, "field 'task': expected 'mc' or 'numeric'"},
    {"delivery", sp_delivery, "missing field 'rounds[0][0].deliveries[0].text'"},
    {"replicate", sp_replicate, "field 'replicate': expected an integer"},
    {"agent order", sp_agent_order, "field 'agents[0].id': agents must be listed in id order"},
    {"round object", sp_round_obj, "field 'rounds[1]': expected array, got object"},
    {"sanity", sp_not_object, NULL},
};

static void test_spoilers(void)
{
    for (size_t i = 0; i < sizeof spoilers / sizeof spoilers[0]; i++) {
        cJSON *j = valid();
        spoilers[i].spoil(j);
        char *s = line_of(j);
        struct sn_traj *t = NULL;
        struct sn_err err = {0};
        int rc = sn_traj_parse(s, strlen(s), "f.jsonl.gz:17", &t, &err);
        if (!spoilers[i].expect) {
            CHECK_MSG(rc == SN_OK, "%s: %s", spoilers[i].name, err.msg);
        } else {
            CHECK_MSG(rc == SN_E_FORMAT && t == NULL, "%s: rc %d", spoilers[i].name, rc);
            CHECK_MSG(strstr(err.msg, spoilers[i].expect) != NULL, "%s: got '%s'",
                      spoilers[i].name, err.msg);
            CHECK_MSG(!strncmp(err.msg, "f.jsonl.gz:17: ", 15), "%s: '%s'", spoilers[i].name,
                      err.msg);
        }
        sn_traj_free(t);
        free(s);
    }
}

/* reads the file to the end; returns rc of the first failure, counts trajectories */
static int read_all(const char *path, bool skip_bad, uint64_t *n_ok, uint64_t *n_skip,
                    struct sn_err *err)
{
    struct sn_traj_reader_params p = sn_traj_reader_default_params();
    p.skip_bad = skip_bad;
    struct sn_traj_reader *r;
    int rc = sn_traj_reader_open(path, &p, &r, err);
    if (rc)
        return rc;
    uint64_t n = 0;
    for (;;) {
        struct sn_traj *t;
        rc = sn_traj_reader_next(r, &t, err);
        if (rc || !t)
            break;
        n++;
        sn_traj_free(t);
    }
    *n_ok = n;
    *n_skip = sn_traj_reader_n_skipped(r);
    CHECK(sn_traj_reader_n_ok(r) == n);
    sn_traj_reader_close(r);
    return rc;
}

static void test_files(void)
{
    const char *dir = sn_test_dir("data_trajectory");
    char path[1200];
    char *good = line_of(valid());
    cJSON *j = valid();
    sp_no_gold(j);
    char *nogold = line_of(j);
    uint64_t n, k;
    struct sn_err err = {0};

    /* gzip, one member per line, blank line tolerated */
    snprintf(path, sizeof path, "%s/ok.jsonl.gz", dir);
    const char *lines3[] = {good, good, "", good};
    write_gz_members(path, lines3, 4);
    CHECK(read_all(path, false, &n, &k, &err) == SN_OK && n == 3 && k == 0);

    /* plain file, line 2 not JSON */
    snprintf(path, sizeof path, "%s/bad.jsonl", dir);
    {
        size_t L = strlen(good) * 2 + 64;
        char *c = malloc(L);
        snprintf(c, L, "%s\n{not json\n%s\n", good, good);
        write_plain(path, c);
        free(c);
    }
    sn_err_clear(&err);
    CHECK(read_all(path, false, &n, &k, &err) == SN_E_FORMAT);
    CHECK_MSG(strstr(err.msg, "bad.jsonl:2: not valid JSON") != NULL, "%s", err.msg);
    sn_err_clear(&err);
    CHECK(read_all(path, true, &n, &k, &err) == SN_OK && n == 2 && k == 1);

    /* missing field on line 2 of a gzip file */
    snprintf(path, sizeof path, "%s/nogold.jsonl.gz", dir);
    const char *lines_ng[] = {good, nogold, good};
    write_gz_members(path, lines_ng, 3);
    sn_err_clear(&err);
    CHECK(read_all(path, false, &n, &k, &err) == SN_E_FORMAT);
    CHECK_MSG(strstr(err.msg, "nogold.jsonl.gz:2: missing field 'gold'") != NULL, "%s", err.msg);
    sn_err_clear(&err);
    CHECK(read_all(path, true, &n, &k, &err) == SN_OK && n == 2 && k == 1);

    /* truncated gzip: cut the last member in half */
    snprintf(path, sizeof path, "%s/trunc.jsonl.gz", dir);
    const char *lines2[] = {good, good};
    write_gz_members(path, lines2, 2);
    {
        FILE *f = fopen(path, "rb");
        fseek(f, 0, SEEK_END);
        long sz = ftell(f);
        fclose(f);
        CHECK(truncate(path, sz - 20) == 0);
    }
    sn_err_clear(&err);
    CHECK(read_all(path, false, &n, &k, &err) == SN_E_FORMAT);
    CHECK_MSG(strstr(err.msg, "trunc.jsonl.gz") && strstr(err.msg, "after line 1"), "%s",
              err.msg);
    sn_err_clear(&err);
    CHECK(read_all(path, true, &n, &k, &err) == SN_OK && n == 1 && k == 1);

    /* partial last line (no newline) in a plain file */
    snprintf(path, sizeof path, "%s/partial.jsonl", dir);
    {
        size_t L = strlen(good) * 2 + 8;
        char *c = malloc(L);
        snprintf(c, L, "%s\n%s", good, good);
        write_plain(path, c);
        free(c);
    }
    sn_err_clear(&err);
    CHECK(read_all(path, false, &n, &k, &err) == SN_E_FORMAT);
    CHECK_MSG(strstr(err.msg, "partial.jsonl:2: truncated last line") != NULL, "%s", err.msg);
    sn_err_clear(&err);
    CHECK(read_all(path, true, &n, &k, &err) == SN_OK && n == 1 && k == 1);

    /* missing file */
    sn_err_clear(&err);
    snprintf(path, sizeof path, "%s/none.jsonl", dir);
    CHECK(read_all(path, false, &n, &k, &err) == SN_E_IO);

    free(good);
    free(nogold);
}

/* every allocation failing in turn: a clean error each time, never a crash or a leak */
static void test_alloc_failure(void)
{
    char *s = line_of(valid());
    int ok_at = 0;
    for (int i = 1; i < 200 && !ok_at; i++) {
        struct sn_traj *t = NULL;
        struct sn_err err = {0};
        sn_alloc_fail_after((uint64_t)i);
        int rc = sn_traj_parse(s, strlen(s), "a:1", &t, &err);
        sn_alloc_fail_after(0);
        if (rc == SN_OK)
            ok_at = i;
        else
            CHECK_MSG(rc == SN_E_NOMEM && t == NULL, "i=%d rc=%d %s", i, rc, err.msg);
        sn_traj_free(t);
    }
    CHECK(ok_at > 1);
    free(s);
}

int main(void)
{
    test_valid_fields();
    test_spoilers();
    test_files();
    test_alloc_failure();
    return sn_test_done();
}
