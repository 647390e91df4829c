/* tests/test_data_reliability.c: inputs that used to be taken without a word or lost text
** (README "Errors and exit codes"): U+0000 in a trajectory text (refused, never cut), invalid
** UTF-8 named by field, the trajectory files of a run directory (its errors file skipped and
** counted; an empty directory is an error, not a crash), a dataset `n` past its bound, a
** tokenizer.json whose added token takes a vocabulary id of another token, and LLM replies
** holding U+0000 or invalid UTF-8 (refused, never recorded cut or raw). */
#include "data/data.h"
#include "llm/openai_internal.h"
#include "tokenizer/tokenizer.h"
#include "testutil.h"

static char *valid_text(void)
{
    return strdup(sn_test_trajectory_text());
}

/* txt with the first occurrence of `from` replaced by `to` (caller frees). */
static char *replace(const char *txt, const char *from, const char *to)
{
    const char *p = strstr(txt, from);
    if (!p)
        return NULL;
    size_t a = (size_t)(p - txt), n = strlen(txt) - strlen(from) + strlen(to);
    char *s = malloc(n + 1);
    memcpy(s, txt, a);
    memcpy(s + a, to, strlen(to));
    strcpy(s + a + strlen(to), p + strlen(from));
    return s;
}

static void test_nul_and_utf8(void)
{
    struct sn_err err = {0};
    struct sn_traj *t = NULL;
    char *ok = valid_text();
    CHECK(sn_traj_parse(ok, strlen(ok), "t.jsonl:1", &t, &err) == SN_OK && t);
    char where[160];
    CHECK(t && sn_traj_utf8_valid(t, where, sizeof where));
    sn_traj_free(t);

    /* "t01" -> "t0\u00001": before, cJSON handed back "t0" and the shard held a cut text */
    char *nul = replace(ok, "\"t01\"", "\"t0\\u00001\"");
    sn_err_clear(&err);
    CHECK(sn_traj_parse(nul, strlen(nul), "t.jsonl:4", &t, &err) == SN_E_FORMAT && !t);
    CHECK_MSG(strstr(err.msg, "t.jsonl:4") && strstr(err.msg, "U+0000"), "%s", err.msg);

    char *bad = replace(ok, "\"t01\"", "\"t0\xff" "1\"");
    sn_err_clear(&err);
    CHECK(sn_traj_parse(bad, strlen(bad), "t.jsonl:5", &t, &err) == SN_OK && t);
    CHECK(t && !sn_traj_utf8_valid(t, where, sizeof where));
    CHECK_STR(where, "rounds[0][1].text");
    sn_traj_free(t);
    free(ok);
    free(nul);
    free(bad);
}

static void test_run_dir(const char *dir)
{
    struct sn_err err = {0};
    char d[1100], **paths = NULL;
    size_t n = 0, n_err = 9;
    snprintf(d, sizeof d, "%s/run", dir);
    CHECK(sn_mkdirs(d, &err) == SN_OK);
    const char *in[] = {d};
    CHECK(sn_traj_paths(in, 1, &paths, &n, &n_err, &err) == SN_E_ARG && !paths);
    CHECK_MSG(strstr(err.msg, "no trajectory files") && strstr(err.msg, d), "%s", err.msg);

    CHECK(sn_test_sh("echo '{\"id\":\"x\",\"error\":\"boom\"}' > '%s/errors-0of1.jsonl'", d) == 0);
    sn_err_clear(&err);
    CHECK(sn_traj_paths(in, 1, &paths, &n, &n_err, &err) == SN_E_ARG);
    CHECK_MSG(strstr(err.msg, "errors files"), "%s", err.msg);

    CHECK(sn_test_sh("touch '%s/trajectories-0of1.jsonl.gz'", d) == 0);
    sn_err_clear(&err);
    CHECK(sn_traj_paths(in, 1, &paths, &n, &n_err, &err) == SN_OK);
    CHECK(n == 1 && n_err == 1 && strstr(paths[0], "trajectories-0of1.jsonl.gz"));
    sn_paths_free(paths, n);

    /* an errors file named on its own is taken: the user asked for it */
    char ef[1200];
    snprintf(ef, sizeof ef, "%s/errors-0of1.jsonl", d);
    const char *in2[] = {ef};
    CHECK(sn_traj_paths(in2, 1, &paths, &n, &n_err, &err) == SN_OK && n == 1 && n_err == 0);
    sn_paths_free(paths, n);
}

static void test_dataset_bound(void)
{
    struct sn_err err = {0};
    struct sn_qset *qs = NULL;
    cJSON *spec = cJSON_Parse("{\"kind\": \"synthetic\", \"n\": 1000000000000}");
    CHECK(sn_qset_load(spec, "simulate.experiments[0].dataset", 0, &qs, &err) == SN_E_ARG);
    CHECK(!qs);
    CHECK_MSG(strstr(err.msg, "simulate.experiments[0].dataset.n") &&
              strstr(err.msg, "1000000000000") && strstr(err.msg, "bound of 1000000"), "%s",
              err.msg);
    cJSON_Delete(spec);
    spec = cJSON_Parse("{\"kind\": \"synthetic\", \"n\": 3}");
    sn_err_clear(&err);
    CHECK(sn_qset_load(spec, "d", 0, &qs, &err) == SN_OK && qs && qs->n == 3);
    sn_qset_free(qs);
    cJSON_Delete(spec);
}

static void test_added_token_collision(const char *dir)
{
    struct sn_err err = {0};
    char path[1100];
    snprintf(path, sizeof path, "%s/tok.json", dir);
    CHECK(sn_tokenizer_write_demo(path, &err) == SN_OK);
    cJSON *j = NULL;
    CHECK(sn_json_load(path, &j, &err) == SN_OK);
    cJSON *vocab = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "model"), "vocab");
    cJSON *a = cJSON_GetObjectItemCaseSensitive(vocab, "a");
    cJSON *added = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "added_tokens"), 2);
    CHECK(a && added);
    if (!a || !added)
        return;
    int id = a->valueint;
    cJSON_ReplaceItemInObject(added, "id", cJSON_CreateNumber(id));
    CHECK(sn_json_save(path, j, &err) == SN_OK);
    cJSON_Delete(j);
    struct sn_tokenizer *tok = NULL;
    CHECK(sn_tokenizer_open(path, &tok, &err) == SN_E_FORMAT && !tok);
    char want[64];
    snprintf(want, sizeof want, "id %d", id);
    CHECK_MSG(strstr(err.msg, "<|im_end|>") && strstr(err.msg, want) &&
              strstr(err.msg, "\"a\""), "%s", err.msg);
    sn_tokenizer_free(tok);
}

static void test_replies(void)
{
    struct sn_llm_reply r;
    char why[256], fin[32];
    const char *nul = "{\"choices\":[{\"message\":{\"content\":\"FINAL\\u0000 ANSWER: B\"},"
                      "\"finish_reason\":\"stop\"}]}";
    memset(&r, 0, sizeof r);
    CHECK(sn_openai_parse_reply(nul, strlen(nul), &r, fin, sizeof fin, why, sizeof why) !=
          SN_OPENAI_PARSE_OK);
    CHECK(!r.text);
    CHECK_MSG(strstr(why, "U+0000"), "%s", why);
    const char *bad = "{\"choices\":[{\"message\":{\"content\":\"caf\xe9 au lait\"},"
                      "\"finish_reason\":\"stop\"}]}";
    CHECK(sn_openai_parse_reply(bad, strlen(bad), &r, fin, sizeof fin, why, sizeof why) !=
          SN_OPENAI_PARSE_OK);
    CHECK(!r.text);
    CHECK_MSG(strstr(why, "UTF-8"), "%s", why);
    const char *good = "{\"choices\":[{\"message\":{\"content\":\"caf\xc3\xa9\"},"
                       "\"finish_reason\":\"stop\"}]}";
    CHECK(sn_openai_parse_reply(good, strlen(good), &r, fin, sizeof fin, why, sizeof why) ==
          SN_OPENAI_PARSE_OK);
    CHECK(r.text && !strcmp(r.text, "caf\xc3\xa9"));
    sn_llm_reply_free(&r);
}

int main(void)
{
    const char *dir = sn_test_dir("data_reliability");
    test_nul_and_utf8();
    test_run_dir(dir);
    test_dataset_bound();
    test_added_token_collision(dir);
    test_replies();
    return sn_test_done();
}
