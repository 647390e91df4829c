/* tests/test_llm_openai_replies.c: what OpenAI-compatible servers really return, and the
** `openai` backend's readiness wait (docs/openai.md "Replies", "Readiness"):
**   - content "" or blank with reasoning_content (llama-server) or reasoning (Ollama): the
**     reasoning is the text; a refusal with null content is a message flagged refused;
**   - finish_reason, refusal, the served model and system_fingerprint reach the reply;
**   - the cache stores the raw fields: a cached reasoning reply is the reasoning again;
**   - ready_timeout_s: opening waits while the server answers 503 "Loading model"; a server
**     that stays down fails the open with a message naming ready_timeout_s; requests pause
**     (without spending retries) while the endpoint answers 503, and stats.paused says so
**     meanwhile.
** The loopback server is tests/servers/fake_openai.py, and for the pause the in-process gate of
** tests/testutil.h, which answers 503 until the test opens it. No check depends on how fast
** anything runs: "still loading" is a server that loads for longer than the test lives, waits
** end on a state the test polls for, and the only time bounds are lower ones (docs/openai.md
** "Readiness"). */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "llm/openai_internal.h"
#include "tests/testutil_openai.h"
#include "tests/testutil.h"

static char dir[512];

/* A generous bound for a wait that a working client always ends: on a machine whose cores are
** busy with other work a test process can stall for seconds, so only a hang reaches this. */
#define HANG_S 60

static enum sn_openai_parse parse(const char *body, struct sn_llm_reply *r)
{
    char finish[32], why[300];
    memset(r, 0, sizeof *r);
    return sn_openai_parse_reply(body, strlen(body), r, finish, sizeof finish, why, sizeof why);
}

static void test_parse(void)
{
    struct sn_llm_reply r;
    /* llama-server: "" + reasoning_content */
    CHECK(parse("{\"model\":\"qwen3\",\"system_fingerprint\":\"b6000\",\"choices\":[{\"message\":"
                "{\"content\":\"\",\"reasoning_content\":\"so (B)\"},\"finish_reason\":"
                "\"length\"}]}", &r) == SN_OPENAI_PARSE_OK);
    CHECK_STR(r.text, "so (B)");
    CHECK(r.from_reasoning && !r.refused);
    CHECK(r.finish_reason && !strcmp(r.finish_reason, "length"));
    CHECK(r.model && !strcmp(r.model, "qwen3"));
    CHECK(r.system_fingerprint && !strcmp(r.system_fingerprint, "b6000"));
    sn_llm_reply_free(&r);
    /* Ollama: "" + reasoning; blank content counts as empty */
    CHECK(parse("{\"choices\":[{\"message\":{\"content\":\" \\n\\t\",\"reasoning\":\"r\"}}]}",
                &r) == SN_OPENAI_PARSE_OK);
    CHECK_STR(r.text, "r");
    CHECK(r.from_reasoning && r.finish_reason == NULL && r.model == NULL);
    sn_llm_reply_free(&r);
    /* empty reasoning_content does not hide a reasoning */
    CHECK(parse("{\"choices\":[{\"message\":{\"content\":\"\",\"reasoning_content\":\"\","
                "\"reasoning\":\"ok\"}}]}", &r) == SN_OPENAI_PARSE_OK);
    CHECK_STR(r.text, "ok");
    sn_llm_reply_free(&r);
    /* real content wins over reasoning */
    CHECK(parse("{\"choices\":[{\"message\":{\"content\":\"x\",\"reasoning_content\":\"y\"}}]}",
                &r) == SN_OPENAI_PARSE_OK);
    CHECK_STR(r.text, "x");
    CHECK(!r.from_reasoning);
    sn_llm_reply_free(&r);
    /* refusal: a message, flagged */
    CHECK(parse("{\"choices\":[{\"message\":{\"content\":null,\"refusal\":\"No.\"},"
                "\"finish_reason\":\"stop\"}]}", &r) == SN_OPENAI_PARSE_OK);
    CHECK_STR(r.text, "No.");
    CHECK(r.refused && r.refusal && !strcmp(r.refusal, "No."));
    sn_llm_reply_free(&r);
    /* blank content with nothing else stays an (empty) answer; null with nothing is rejected */
    CHECK(parse("{\"choices\":[{\"message\":{\"content\":\"  \"}}]}", &r) == SN_OPENAI_PARSE_OK);
    CHECK_STR(r.text, "  ");
    sn_llm_reply_free(&r);
    CHECK(parse("{\"choices\":[{\"message\":{\"content\":null,\"refusal\":null}}]}", &r) ==
          SN_OPENAI_PARSE_REJECTED);

    /* the essentials keep what the parser reads and drop the rest */
    const char *body = "{\"id\":\"x\",\"model\":\"m\",\"choices\":[{\"index\":0,\"logprobs\":"
                       "{\"content\":[]},\"message\":{\"role\":\"assistant\",\"content\":\"\","
                       "\"reasoning_content\":\"why (A)\"},\"finish_reason\":\"length\"}],"
                       "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4}}";
    char *ess = sn_openai_reply_essentials(body, strlen(body));
    CHECK(ess && !strstr(ess, "logprobs") && !strstr(ess, "\"id\""));
    struct sn_llm_reply a, b;
    CHECK(parse(body, &a) == SN_OPENAI_PARSE_OK);
    CHECK(ess && parse(ess, &b) == SN_OPENAI_PARSE_OK);
    if (a.text && b.text) {
        CHECK_STR(a.text, b.text);
        CHECK(b.prompt_tokens == 3 && b.completion_tokens == 4 && b.from_reasoning);
        CHECK(b.finish_reason && !strcmp(b.finish_reason, "length"));
    }
    sn_llm_reply_free(&a);
    sn_llm_reply_free(&b);
    sn_free(ess);
}

static struct sn_llm_backend *open_text(const char *text, struct sn_err *err)
{
    cJSON *j = cJSON_Parse(text);
    struct sn_llm_backend *b = NULL;
    sn_err_clear(err);
    sn_llm_backend_open(j, &b, err);
    cJSON_Delete(j);
    return b;
}

static int ask(struct sn_llm_backend *b, const char *user, struct sn_llm_reply *r,
               struct sn_err *err)
{
    struct sn_chat_msg m[1] = { { "user", user } };
    struct sn_llm_request req = { .messages = m, .n_messages = 1, .temperature = -1,
                                  .top_p = -1 };
    sn_err_clear(err);
    return sn_llm_complete(b, &req, r, err);
}

static void test_server_replies(const struct fake_server *srv)
{
    char cfg[1024], cache[600];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    snprintf(cfg, sizeof cfg, "{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:%d/v1\","
             "\"model\":\"served-m\",\"cache_dir\":\"%s\",\"max_retries\":0}", srv->port, cache);
    struct sn_err err;
    static const struct { const char *fail, *text; bool reasoning, refused; } cases[] = {
        { "empty_reasoning", "thinking it over. The answer is (C).", true, false },
        { "empty_ollama", "thinking it over. The answer is (D).", true, false },
        { "blank", "thinking it over. The answer is (C).", true, false },
        { "refusal", "I can't help with that.", false, true },
    };
    for (int pass = 0; pass < 2; pass++) { /* pass 1: every reply from the cache */
        struct sn_llm_backend *b = open_text(cfg, &err);
        CHECK_MSG(b, "%s", err.msg);
        if (!b)
            return;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            char user[128];
            snprintf(user, sizeof user, "case %zu [[fake:fail=%s;times=always]]", i,
                     cases[i].fail);
            struct sn_llm_reply r;
            CHECK_MSG(ask(b, user, &r, &err) == SN_OK, "%s: %s", cases[i].fail, err.msg);
            CHECK(r.cached == (pass == 1));
            CHECK_MSG(r.text && !strcmp(r.text, cases[i].text), "%s pass %d: '%s'",
                      cases[i].fail, pass, r.text ? r.text : "(null)");
            CHECK(r.from_reasoning == cases[i].reasoning && r.refused == cases[i].refused);
            CHECK(r.model && !strcmp(r.model, "served-m"));
            CHECK(r.system_fingerprint && !strcmp(r.system_fingerprint, "fp_fake"));
            CHECK(r.finish_reason &&
                  !strcmp(r.finish_reason, cases[i].refused ? "stop" : "length"));
            sn_llm_reply_free(&r);
        }
        struct sn_llm_stats st = sn_llm_backend_stats(b);
        CHECK(st.cache_hits == (pass ? 4u : 0u));
        sn_llm_backend_close(b);
    }
}

struct asker {
    struct sn_llm_backend *b;
    const char *user;
    int rc, attempts, done; /* done: atomic */
    struct sn_err err;
};
static void *ask_thread(void *arg)
{
    struct asker *a = arg;
    struct sn_llm_reply r;
    a->rc = ask(a->b, a->user, &r, &a->err);
    a->attempts = r.attempts;
    if (a->rc == SN_OK)
        sn_llm_reply_free(&r);
    __atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void test_readiness(void)
{
    struct fake_server srv;
    char sdir[600], cfg[512];
    struct sn_err err;
    struct sn_llm_reply r;
    struct sn_llm_backend *b;

    /* a server that is still loading whenever the test looks (for 600 s) */
    snprintf(sdir, sizeof sdir, "%s/loading", dir);
    CHECK(sn_test_sh("mkdir -p %s", sdir) == 0);
    if (fake_start_loading(&srv, sdir, 0, 900, 600) != 0) {
        CHECK_MSG(0, "could not start the fake server");
        return;
    }
    /* without a wait, a request during loading fails (503 with no retries left) */
    snprintf(cfg, sizeof cfg, "{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:%d/v1\","
             "\"max_retries\":0,\"cache\":false}", srv.port);
    b = open_text(cfg, &err);
    CHECK(b && ask(b, "too early", &r, &err) == SN_E_BACKEND);
    CHECK_MSG(strstr(err.msg, "Loading model") != NULL, "%s", err.msg);
    sn_llm_backend_close(b);
    /* with ready_timeout_s, an open against a server that stays loading fails, naming it,
    ** after at least the wait it was given (0.5 s short of it: the last poll's margin) */
    snprintf(cfg, sizeof cfg, "{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:%d/v1\","
             "\"ready_timeout_s\":1.5}", srv.port);
    double t0 = sn_now();
    b = open_text(cfg, &err);
    double dt = sn_now() - t0;
    CHECK(b == NULL && err.code == SN_E_BACKEND);
    CHECK_MSG(strstr(err.msg, "not ready") && strstr(err.msg, "ready_timeout_s") &&
              strstr(err.msg, "HTTP 503"), "%s", err.msg);
    CHECK_MSG(dt >= 1.0, "gave up after %.2f s", dt);
    sn_llm_backend_close(b);
    fake_stop(&srv);

    /* a server that loads for 2 s: the open waits until /models answers. It cannot return
    ** sooner than 2 s after t0 (the loading starts after it), however loaded the machine */
    snprintf(sdir, sizeof sdir, "%s/loading2", dir);
    CHECK(sn_test_sh("mkdir -p %s", sdir) == 0);
    t0 = sn_now();
    if (fake_start_loading(&srv, sdir, 0, 900, 2.0) != 0) {
        CHECK_MSG(0, "could not start the fake server");
        return;
    }
    snprintf(cfg, sizeof cfg, "{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:%d/v1\","
             "\"max_retries\":0,\"cache\":false,\"ready_timeout_s\":%d}", srv.port, HANG_S);
    b = open_text(cfg, &err);
    double waited = sn_now() - t0;
    CHECK_MSG(b != NULL, "%s", err.msg);
    CHECK_MSG(waited >= 2.0, "open returned after %.2f s while the server was loading", waited);
    if (b) {
        CHECK(ask(b, "after loading", &r, &err) == SN_OK && r.attempts == 1);
        sn_llm_reply_free(&r);
        /* 503 on every attempt for a while: the request pauses instead of failing, and
        ** max_retries 0 is not spent */
        CHECK_MSG(ask(b, "pause [[fake:fail=503;times=3]]", &r, &err) == SN_OK, "%s", err.msg);
        CHECK(r.attempts == 1 && r.text && strstr(r.text, "fake reply"));
        sn_llm_reply_free(&r);
        CHECK(sn_llm_backend_stats(b).paused == 0);
        sn_llm_backend_close(b);
    }
    fake_stop(&srv);

    /* while a request waits, the backend says so (the simulate progress line reads it): the
    ** endpoint answers 503 until the test has seen stats.paused, then the request completes */
    struct sn_test_gate *g = sn_test_gate_start(SN_TEST_GATE_BUSY);
    CHECK(g != NULL);
    if (g) {
        snprintf(cfg, sizeof cfg, "{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:%d/v1\","
                 "\"max_retries\":0,\"cache\":false,\"ready_timeout_s\":%d,"
                 "\"connect_timeout_s\":%d}", sn_test_gate_port(g), HANG_S, HANG_S);
        b = open_text(cfg, &err);
        CHECK_MSG(b != NULL, "%s", err.msg);
        if (b) {
            struct asker ak = { .b = b, .user = "pause seen" };
            pthread_t th;
            CHECK(pthread_create(&th, NULL, ask_thread, &ak) == 0);
            bool seen = false;
            for (int i = 0; i < 100 * HANG_S && !seen; i++) { /* 10 ms polls */
                seen = sn_llm_backend_stats(b).paused == 1;
                if (!seen)
                    usleep(10 * 1000);
            }
            CHECK_MSG(seen, "stats.paused never became 1 while the endpoint answered 503");
            CHECK(!__atomic_load_n(&ak.done, __ATOMIC_ACQUIRE));
            CHECK(sn_test_gate_stats(g).hits >= 1);
            sn_test_gate_open(g);
            pthread_join(th, NULL);
            CHECK_MSG(ak.rc == SN_OK, "%s", ak.err.msg);
            CHECK_MSG(ak.attempts == 1, "attempts %d: a pause was counted", ak.attempts);
            CHECK(sn_llm_backend_stats(b).paused == 0);
            sn_llm_backend_close(b);
        }
        sn_test_gate_stop(g);
    }

    /* nothing listening: the open fails after at least ready_timeout_s less the last poll's
    ** margin, naming it */
    t0 = sn_now();
    b = open_text("{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:1/v1\","
                  "\"ready_timeout_s\":1.5}", &err);
    dt = sn_now() - t0;
    CHECK(b == NULL && err.code == SN_E_BACKEND);
    CHECK_MSG(strstr(err.msg, "not ready") && strstr(err.msg, "ready_timeout_s"), "%s", err.msg);
    CHECK_MSG(dt >= 1.0, "gave up after %.2f s", dt);
    sn_llm_backend_close(b);
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s", sn_test_dir("llm_openai_replies"));
    test_parse();
    struct fake_server srv;
    /* the lifetime only bounds an orphan if this test dies; the server is stopped below */
    if (fake_start(&srv, dir, 0, 900) != 0) {
        fprintf(stderr, "FAIL: could not start tests/servers/fake_openai.py\n");
        return 1;
    }
    test_server_replies(&srv);
    fake_stop(&srv);
    test_readiness();
    return sn_test_done();
}
