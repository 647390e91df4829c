/* tests/test_data_openai_simulate.c: `sentinel simulate` end to end with an `openai` endpoint
** pointing at tests/servers/fake_openai.py. A GSM8K-style file the test writes has four items;
** one item's question carries a directive that makes every request for it fail with HTTP 500.
** Checks: three trajectories written, the failing item listed in the errors file with the
** reason (status, server text, attempts); the API key (sent, as the server log shows) absent
** from trajectories, errors and cache; a second run into a fresh directory with the same cache
** makes server requests only for the failing item and writes the same trajectories (latency
** aside); a third run into the first directory retries only the failed item. */
#include "tests/testutil_openai.h"
#include "tests/testutil.h"

#define SECRET "sk-e2e-SECRET-feedfacecafe"

static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    int n = 0, c;
    if (!f)
        return -1;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

int main(void)
{
    const char *bin = getenv("SENTINEL_BIN");
    char dir[512];
    snprintf(dir, sizeof dir, "%s", sn_test_dir("data_openai_simulate"));
    if (!bin) {
        fprintf(stderr, "FAIL: SENTINEL_BIN is not set\n");
        return 1;
    }
    struct fake_server srv;
    if (fake_start(&srv, dir, 0, 900) != 0) {
        fprintf(stderr, "FAIL: could not start tests/servers/fake_openai.py\n");
        return 1;
    }
    setenv("SN_TEST_OPENAI_KEY", SECRET, 1);

    CHECK(sn_test_sh("cd %s && cat > q.jsonl <<'EOF'\n"
                     "{\"question\": \"Tom has 3 apples and buys 4 more. How many apples?\", "
                     "\"answer\": \"3 + 4 = 7\\n#### 7\"}\n"
                     "{\"question\": \"A box holds 6 eggs. How many eggs are in 5 boxes?\", "
                     "\"answer\": \"6 * 5 = 30\\n#### 30\"}\n"
                     "{\"question\": \"Sara reads 12 pages a day for 3 days. How many pages? "
                     "[[fake:fail=500;times=always]]\", \"answer\": \"12 * 3 = 36\\n#### 36\"}\n"
                     "{\"question\": \"There are 20 birds and 8 fly away. How many remain?\", "
                     "\"answer\": \"20 - 8 = 12\\n#### 12\"}\n"
                     "EOF\n"
                     "cat > r.json <<EOF\n"
                     "{\"out_dir\": \"%s/out\", \"simulate\": {\n"
                     " \"endpoints\": {\"llm\": {\"kind\": \"openai\", \"base_url\": "
                     "\"http://127.0.0.1:%d/v1\", \"model\": \"fake-7b\", \"api_key_env\": "
                     "\"SN_TEST_OPENAI_KEY\", \"concurrency\": 4, \"max_retries\": 1, "
                     "\"backoff_base_s\": 0.01, \"cache_dir\": \"%s/cache\"}},\n"
                     " \"defaults\": {\"dataset\": {\"kind\": \"gsm8k\", \"path\": \"%s/q.jsonl\"},"
                     " \"backend\": \"llm\", \"n_agents\": 3, \"rounds\": 2, \"seed\": 1},\n"
                     " \"experiments\": [{\"name\": \"e2e\", \"scenario\": \"none\"}]}}\n"
                     "EOF",
                     dir, dir, srv.port, dir, dir) == 0);

    /* run 1: exit 1 (one debate failed), three written */
    int rc = sn_test_sh("cd %s && '%s' simulate --recipe r.json -o out/a --progress none "
                        "2> run1.err", dir, bin);
    CHECK_MSG(rc == 1, "simulate exit %d", rc);
    CHECK(sn_test_sh("cd %s && test $(zcat out/a/trajectories-0of1.jsonl.gz | wc -l) = 3", dir) ==
          0);
    char errors[700];
    snprintf(errors, sizeof errors, "%s/out/a/errors-0of1.jsonl", dir);
    CHECK(count_lines(errors) == 1);
    CHECK(sn_test_sh("grep -q '\"item_id\":\"gsm8k-00002\"' %s", errors) == 0);
    CHECK(sn_test_sh("grep -q 'HTTP 500: fake 500 error after 2 attempts' %s", errors) == 0);
    CHECK(sn_test_sh("grep -q 'openai http://127.0.0.1:%d/v1' %s", srv.port, errors) == 0);
    /* replies came from the server and the backend is described in each trajectory */
    CHECK(sn_test_sh("cd %s && zcat out/a/trajectories-0of1.jsonl.gz | grep -c 'fake reply' | "
                     "grep -qx 3", dir) == 0);
    CHECK(sn_test_sh("cd %s && zcat out/a/trajectories-0of1.jsonl.gz | grep -q "
                     "'\"backend\":\"openai http://127.0.0.1:%d/v1 model=fake-7b\"'", dir,
                     srv.port) == 0);
    /* what the server reported of each reply is in the trajectory (docs/formats.md) */
    CHECK(sn_test_sh("cd %s && zcat out/a/trajectories-0of1.jsonl.gz | grep -c "
                     "'\"finish_reason\":\"stop\",\"served_model\":\"fake-7b\","
                     "\"system_fingerprint\":\"fp_fake\"' | grep -qx 3", dir) == 0);
    /* request seeds below 2^31 (llama-server keeps seeds as uint32) */
    CHECK(sn_test_sh("grep -o '\"seed\": [0-9-]*' %s > %s/seeds && test -s %s/seeds && "
                     "awk '{ if ($2 < 0 || $2 >= 2147483648) bad++ } END { exit bad > 0 }' "
                     "%s/seeds", srv.log, dir, dir, dir) == 0);
    int hits1 = fake_stat(&srv, "hits");
    CHECK(hits1 > 2);
    /* the failing item cost exactly 1 + max_retries attempts of one request */
    cJSON *st = fake_call(&srv, "/stats", 0);
    const cJSON *a500 = cJSON_GetObjectItem(cJSON_GetObjectItem(st, "actions"), "500");
    CHECK(cJSON_IsNumber(a500) && a500->valueint == 2);
    cJSON_Delete(st);

    /* run 2 into a fresh directory, same cache: only the failing item reaches the server */
    int lines0 = count_lines(srv.log);
    rc = sn_test_sh("cd %s && '%s' simulate --recipe r.json -o out/b --progress none 2> run2.err",
                    dir, bin);
    CHECK_MSG(rc == 1, "simulate exit %d", rc);
    int lines1 = count_lines(srv.log);
    CHECK_MSG(lines1 - lines0 == 2, "re-run sent %d requests", lines1 - lines0);
    CHECK(sn_test_sh("tail -n +%d %s | grep -vq 'fake:fail=500' && exit 1; exit 0", lines0 + 1,
                     srv.log) == 0);
    CHECK(fake_stat(&srv, "hits") == hits1 + 2);
    CHECK(sn_test_sh("cd %s && for d in a b; do zcat out/$d/trajectories-0of1.jsonl.gz | "
                     "sed -E 's/\"latency_ms\":[0-9.e+-]+//g' | sort > $d.txt; done; "
                     "test -s a.txt && cmp -s a.txt b.txt", dir) == 0);

    /* run 3 into the first directory: the failed item is retried (and fails again), nothing
    ** else is redone */
    lines0 = count_lines(srv.log);
    rc = sn_test_sh("cd %s && '%s' simulate --recipe r.json -o out/a --progress none 2> run3.err",
                    dir, bin);
    CHECK_MSG(rc == 1, "simulate exit %d", rc);
    CHECK(count_lines(srv.log) - lines0 == 2);
    CHECK(count_lines(errors) == 1);
    CHECK(sn_test_sh("cd %s && test $(zcat out/a/trajectories-0of1.jsonl.gz | wc -l) = 3", dir) ==
          0);

    /* the key: sent to the server, never written by us */
    CHECK(sn_test_sh("grep -qF 'Bearer %s' %s", SECRET, srv.log) == 0);
    CHECK(sn_test_sh("cd %s && ! grep -rqF '%s' out cache run1.err run2.err run3.err && "
                     "! zcat out/*/trajectories-0of1.jsonl.gz | grep -qF '%s'", dir, SECRET,
                     SECRET) == 0);
    CHECK(sn_test_sh("cd %s && test $(find cache -name '*.json' | wc -l) -gt 0", dir) == 0);
    fake_stop(&srv);
    return sn_test_done();
}
