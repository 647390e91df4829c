/* tests/test_llm_openai_http.c: the `openai` backend (llm/openai.c) against the loopback
** server tests/servers/fake_openai.py, started here on a free port and stopped at the end.
** Checks: the request body and headers the server received; the concurrency bound actually
** reached (and never exceeded) with many more callers than slots; retries on 429, 500, timeouts,
** malformed JSON, dropped and cut connections; Retry-After (seconds, HTTP date) and
** retry-after-ms honoured (measured delay >= the header value while the backoff is tiny);
** x-should-retry; non-retryable 400 failing fast with the server's message; retries exhausted;
** the reply-size cap; the on-disk cache (one file per request, sharded, a re-run costs zero
** server hits, the key does not depend on the API key); and the API key absent from errors,
** describe() and the cache while the server did receive it. */
#include <inttypes.h>
#include <pthread.h>
#include <sys/stat.h>

#include "llm/openai_internal.h"
#include "tests/testutil_openai.h"
#include "tests/testutil.h"

#define SECRET "sk-test-SECRET-0123456789abcdef"

static struct fake_server srv;
static char dir[512];

static struct sn_llm_backend *open_cfg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static struct sn_llm_backend *open_cfg(const char *fmt, ...)
{
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    cJSON *j = cJSON_Parse(text);
    struct sn_llm_backend *b = NULL;
    struct sn_err err = { 0 };
    int rc = sn_llm_backend_open(j, &b, &err); /* dispatch on "kind" (llm/backend.c) */
    CHECK_MSG(rc == SN_OK, "open %s: %s", text, err.msg);
    cJSON_Delete(j);
    return b;
}

static void close_b(struct sn_llm_backend *b)
{
    sn_llm_backend_close(b);
}

/* One request: a system message and `user`. seed < 0: none. */
static int ask(struct sn_llm_backend *b, const char *user, int64_t seed, struct sn_llm_reply *r,
               struct sn_err *err, double *elapsed)
{
    struct sn_chat_msg m[2] = { { "system", "You are a careful debater." }, { "user", user } };
    struct sn_llm_request req = { .messages = m, .n_messages = 2, .temperature = -1,
                                  .top_p = -1, .has_seed = seed >= 0, .seed = seed };
    sn_err_clear(err);
    double t0 = sn_now();
    int rc = sn_llm_complete(b, &req, r, err);
    if (elapsed)
        *elapsed = sn_now() - t0;
    return rc;
}

static void reply_free(struct sn_llm_reply *r)
{
    sn_llm_reply_free(r);
}

/* The last logged request whose body contains `marker` (parsed; caller deletes). */
static cJSON *logged(const char *marker)
{
    char *text = NULL;
    size_t len = 0;
    struct sn_err e = { 0 };
    cJSON *found = NULL;
    if (sn_file_read(srv.log, 0, &text, &len, &e) != SN_OK)
        return NULL;
    for (char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (strstr(line, marker)) {
            cJSON_Delete(found);
            found = cJSON_Parse(line);
        }
    }
    sn_free(text);
    return found;
}

static void test_body_and_headers(void)
{
    struct sn_llm_backend *b = open_cfg(
        "{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:%d/v1/\",\"model\":\"m-config\","
        "\"api_key_env\":\"SN_TEST_OPENAI_KEY\",\"temperature\":0.25,\"extra_body\":{\"top_k\":20,"
        "\"chat_template_kwargs\":{\"enable_thinking\":false},\"max_tokens\":77},"
        "\"headers\":{\"X-Tenant\":\"lab-7\"},\"cache\":false}", srv.port);
    if (!b)
        return;
    struct sn_chat_msg m[1] = { { "user", "body-check \"quoted\" \xc3\xa9" } };
    struct sn_llm_request req = { .messages = m, .n_messages = 1, .temperature = -1,
                                  .top_p = 0.9, .has_seed = true,
                                  .seed = INT64_C(9007199254740993) };
    struct sn_llm_reply r;
    struct sn_err err = { 0 };
    CHECK(sn_llm_complete(b, &req, &r, &err) == SN_OK);
    CHECK(r.attempts == 1 && !r.cached && r.latency_ms > 0);
    /* the server's usage: words of the message (3) and of its reply text */
    CHECK(r.prompt_tokens == 3);
    int words = 0;
    for (const char *p = r.text; p && *p;) {
        while (*p == ' ')
            p++;
        if (*p)
            words++;
        while (*p && *p != ' ')
            p++;
    }
    CHECK(r.completion_tokens == words && words > 0);
    reply_free(&r);

    cJSON *rec = logged("body-check");
    CHECK(rec != NULL);
    const cJSON *body = cJSON_GetObjectItem(rec, "body");
    const cJSON *hdr = cJSON_GetObjectItem(rec, "headers");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(rec, "path")), "/v1/chat/completions");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(body, "model")), "m-config");
    CHECK_CLOSE(cJSON_GetNumberValue(cJSON_GetObjectItem(body, "temperature")), 0.25, 0, 0);
    CHECK_CLOSE(cJSON_GetNumberValue(cJSON_GetObjectItem(body, "top_p")), 0.9, 0, 0);
    CHECK_CLOSE(cJSON_GetNumberValue(cJSON_GetObjectItem(body, "top_k")), 20, 0, 0);
    CHECK_CLOSE(cJSON_GetNumberValue(cJSON_GetObjectItem(body, "max_tokens")), 77, 0, 0);
    CHECK(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(body, "chat_template_kwargs"),
                                            "enable_thinking")));
    const cJSON *msgs = cJSON_GetObjectItem(body, "messages");
    CHECK(cJSON_GetArraySize(msgs) == 1);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 0), "content")),
              "body-check \"quoted\" \xc3\xa9");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(hdr, "authorization")),
              "Bearer " SECRET);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(hdr, "x-tenant")), "lab-7");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(hdr, "content-type")),
              "application/json");
    cJSON_Delete(rec);
    /* the seed travels as an exact integer (2^53 + 1 does not survive a double) */
    char *raw = NULL;
    size_t len = 0;
    CHECK(sn_file_read(srv.log, 0, &raw, &len, &err) == SN_OK);
    CHECK(raw && strstr(raw, "\"seed\": 9007199254740993") != NULL);
    sn_free(raw);

    /* request fields win over the config; unset fields are not sent; model per request */
    struct sn_chat_msg m2[1] = { { "user", "body-check-2" } };
    struct sn_llm_request req2 = { .messages = m2, .n_messages = 1, .model = "m-request",
                                   .temperature = 1.5, .top_p = -1 };
    CHECK(sn_llm_complete(b, &req2, &r, &err) == SN_OK);
    reply_free(&r);
    rec = logged("body-check-2");
    body = cJSON_GetObjectItem(rec, "body");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(body, "model")), "m-request");
    CHECK_CLOSE(cJSON_GetNumberValue(cJSON_GetObjectItem(body, "temperature")), 1.5, 0, 0);
    CHECK(!cJSON_HasObjectItem(body, "top_p") && !cJSON_HasObjectItem(body, "seed"));
    cJSON_Delete(rec);
    close_b(b);

    /* no api_key_env: no Authorization header at all; no model anywhere: no model field */
    b = open_cfg("{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:%d/v1\"}", srv.port);
    char want[128];
    snprintf(want, sizeof want, "openai http://127.0.0.1:%d/v1 model=(server default)", srv.port);
    CHECK_STR(sn_llm_backend_describe(b), want);
    CHECK(ask(b, "no-auth-check", -1, &r, &err, NULL) == SN_OK);
    reply_free(&r);
    rec = logged("no-auth-check");
    CHECK(rec && !cJSON_HasObjectItem(cJSON_GetObjectItem(rec, "headers"), "authorization"));
    CHECK(rec && !cJSON_HasObjectItem(cJSON_GetObjectItem(rec, "body"), "temperature"));
    CHECK(rec && !cJSON_HasObjectItem(cJSON_GetObjectItem(rec, "body"), "model"));
    cJSON_Delete(rec);
    close_b(b);
}

struct worker {
    struct sn_llm_backend *b;
    int    i;
    int    rc;
    struct sn_llm_reply r;
    struct sn_err err;
    const char *tag;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    char user[128];
    snprintf(user, sizeof user, "%s request %d", w->tag, w->i);
    w->rc = ask(w->b, user, w->i, &w->r, &w->err, NULL);
    return NULL;
}

/* n callers at once; returns the number that succeeded. */
static int run_many(struct sn_llm_backend *b, int n, const char *tag, int *n_cached)
{
    struct worker *w = calloc((size_t)n, sizeof *w);
    pthread_t *t = calloc((size_t)n, sizeof *t);
    int ok = 0;
    *n_cached = 0;
    for (int i = 0; i < n; i++) {
        w[i] = (struct worker){ .b = b, .i = i, .tag = tag };
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        if (w[i].rc == SN_OK)
            ok++;
        else
            fprintf(stderr, "worker %d: %s\n", i, w[i].err.msg);
        *n_cached += w[i].r.cached;
        reply_free(&w[i].r);
    }
    free(w);
    free(t);
    return ok;
}

struct in_flight_probe {
    struct sn_llm_backend *b;
    int stop; /* atomic */
    int max;
};

static void *probe(void *arg)
{
    struct in_flight_probe *p = arg;
    while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
        int v = __atomic_load_n(&p->b->stats.in_flight, __ATOMIC_RELAXED);
        if (v > p->max)
            p->max = v;
        usleep(2000);
    }
    return NULL;
}

static void test_concurrency(void)
{
    /* 48 callers, 8 slots, every answer takes 150 ms: 8 requests in flight at once, never more */
    struct sn_llm_backend *b = open_cfg(
        "{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:%d/v1\",\"model\":\"m\",\"concurrency\":8,"
        "\"headers\":{\"X-Fake\":\"latency_ms=150\"}}", srv.port);
    if (!b)
        return;
    fake_reset(&srv);
    int cached;
    struct in_flight_probe pr = { .b = b };
    pthread_t pt;
    pthread_create(&pt, NULL, probe, &pr);
    double t0 = sn_now();
    CHECK(run_many(b, 48, "conc", &cached) == 48);
    double dt = sn_now() - t0;
    __atomic_store_n(&pr.stop, 1, __ATOMIC_RELEASE);
    pthread_join(pt, NULL);
    CHECK_MSG(pr.max == 8, "stats.in_flight peaked at %d", pr.max);
    CHECK(cached == 0);
    /* The client's own peak (above) is exact. What the server sees at once also depends on
    ** when each request reaches it, which a loaded machine (or ASan) can stagger by more than a
    ** reply's latency: it must never exceed the limit and must show the slots used together. */
    CHECK_MSG(fake_stat(&srv, "max_concurrent") <= 8 && fake_stat(&srv, "max_concurrent") >= 4,
              "max_concurrent %d", fake_stat(&srv, "max_concurrent"));
    CHECK(fake_stat(&srv, "hits") == 48);
    /* kept-alive connections: one per slot, reused by the next requests */
    CHECK_MSG(fake_stat(&srv, "connections") == 8, "connections %d",
              fake_stat(&srv, "connections"));
    /* 6 waves of 150 ms: at least 0.9 s; generous upper bound for a loaded machine */
    CHECK_MSG(dt >= 0.9 && dt < 6.0, "48 requests took %.3f s", dt);
    struct sn_llm_stats st = sn_llm_backend_stats(b);
    CHECK(st.requests == 48 && st.completed == 48 && st.failed == 0 && st.in_flight == 0);
    CHECK(st.prompt_tokens > 0 && st.completion_tokens > 0);
    close_b(b);

    /* more slots than the loop starts per pass (64): 100 slots, 130 callers, 1 s each (wide
    ** margin: every one of the first 100 must be in flight at once, even under TSan) */
    b = open_cfg("{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:%d/v1\",\"model\":\"m\","
                 "\"concurrency\":100,\"headers\":{\"X-Fake\":\"latency_ms=1000\"}}", srv.port);
    if (!b)
        return;
    fake_reset(&srv);
    CHECK(run_many(b, 130, "wide", &cached) == 130);
    CHECK_MSG(fake_stat(&srv, "max_concurrent") == 100, "max_concurrent %d",
              fake_stat(&srv, "max_concurrent"));
    close_b(b);
}

/* One request carrying a directive; checks success and the number of attempts. */
static void expect_retry(struct sn_llm_backend *b, const char *directive, int attempts,
                         double min_s, double max_s)
{
    char user[256];
    struct sn_llm_reply r;
    struct sn_err err;
    double dt;
    snprintf(user, sizeof user, "retry case [[fake:%s]]", directive);
    int hits0 = fake_stat(&srv, "hits");
    int rc = ask(b, user, -1, &r, &err, &dt);
    CHECK_MSG(rc == SN_OK, "%s: %s", directive, err.msg);
    CHECK_MSG(r.attempts == attempts, "%s: attempts %d, want %d", directive, r.attempts,
              attempts);
    CHECK_MSG(fake_stat(&srv, "hits") - hits0 == attempts, "%s: server hits %d", directive,
              fake_stat(&srv, "hits") - hits0);
    CHECK_MSG(dt >= min_s && dt < max_s, "%s: took %.3f s, want [%g, %g)", directive, dt, min_s,
              max_s);
    CHECK(r.text && strstr(r.text, "fake reply") != NULL);
    reply_free(&r);
}

struct slow_arg {
    struct sn_llm_backend *b;
    int    rc, attempts;
    double t_done;
};

static void *slow_call(void *arg)
{
    struct slow_arg *a = arg;
    struct sn_llm_reply r;
    struct sn_err err;
    a->rc = ask(a->b, "slow one [[fake:fail=429;retry_after=1.5]]", -1, &r, &err, NULL);
    a->t_done = sn_now();
    a->attempts = r.attempts;
    reply_free(&r);
    return NULL;
}

static void test_retries(void)
{
    /* backoff 10 ms: any delay of a second or so can only come from the server's header.
    ** A generous client timeout: on a loaded machine (ctest -j, ASan) an ordinary reply can
    ** take longer than a short one, which would add an attempt; the timeout case has its own
    ** backend below. */
    struct sn_llm_backend *b = open_cfg(
        "{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:%d/v1\",\"model\":\"m\",\"max_retries\":3,"
        "\"backoff_base_s\":0.01,\"backoff_max_s\":0.02,\"timeout_s\":20,\"cache\":false}",
        srv.port);
    if (!b)
        return;
    expect_retry(b, "fail=429;retry_after=1", 2, 1.0, 3.0);
    expect_retry(b, "fail=429;retry_after_ms=400", 2, 0.4, 2.0);
    expect_retry(b, "fail=503;retry_after=date+2", 2, 0.95, 4.0);
    expect_retry(b, "fail=429", 2, 0.0, 2.0);
    expect_retry(b, "fail=500;times=2", 3, 0.0, 2.0);
    expect_retry(b, "fail=408", 2, 0.0, 2.0);
    {   /* a server that hangs: the client gives up after timeout_s (1 s) and retries */
        struct sn_llm_backend *t = open_cfg(
            "{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:%d/v1\",\"model\":\"m\","
            "\"max_retries\":3,\"backoff_base_s\":0.01,\"backoff_max_s\":0.02,\"timeout_s\":1,"
            "\"cache\":false}", srv.port);
        expect_retry(t, "fail=hang;hang_s=5", 2, 1.0, 4.5);
        close_b(t);
    }
    expect_retry(b, "fail=malformed", 2, 0.0, 2.0);
    /* a fresh backend: curl itself re-sends once, silently, when a *reused* keep-alive
    ** connection dies before any reply; on a new connection the retry is ours to count */
    struct sn_llm_backend *fresh = open_cfg(
        "{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:%d/v1\",\"model\":\"m\",\"max_retries\":3,"
        "\"backoff_base_s\":0.01,\"cache\":false}", srv.port);
    expect_retry(fresh, "fail=drop", 2, 0.0, 2.0);
    close_b(fresh);
    expect_retry(b, "fail=partial", 2, 0.0, 2.0);
    expect_retry(b, "fail=400;should_retry=true", 2, 0.0, 2.0);
    CHECK_MSG(b->stats.retries == 10, "%" PRIu64, b->stats.retries);

    /* failures that must not be retried, or stop after max_retries */
    static const struct { const char *dir; int attempts; const char *expect[3]; } bad[] = {
        { "fail=400", 1, { "HTTP 400", "fake 400 error", "after 1 attempt" } },
        { "fail=401", 1, { "HTTP 401", "fake 401 error", NULL } },
        { "fail=500;times=always", 4, { "HTTP 500", "fake 500 error", "after 4 attempts" } },
        { "fail=500;should_retry=false", 1, { "HTTP 500", "after 1 attempt", NULL } },
        { "fail=429;retry_after=500", 1, { "HTTP 429", "retry_after_max_s", NULL } },
        { "fail=nocontent", 1, { "content is null", NULL, NULL } },
        { "fail=big", 1, { "max_reply_bytes", NULL, NULL } },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char user[256];
        struct sn_llm_reply r;
        struct sn_err err;
        double dt;
        snprintf(user, sizeof user, "failure case [[fake:%s]]", bad[i].dir);
        int hits0 = fake_stat(&srv, "hits");
        int rc = ask(b, user, -1, &r, &err, &dt);
        CHECK_MSG(rc == SN_E_BACKEND, "%s: rc %d", bad[i].dir, rc);
        CHECK(r.text == NULL);
        CHECK_MSG(fake_stat(&srv, "hits") - hits0 == bad[i].attempts, "%s: hits %d",
                  bad[i].dir, fake_stat(&srv, "hits") - hits0);
        CHECK_MSG(strstr(err.msg, "http://127.0.0.1:") != NULL, "%s", err.msg);
        for (int k = 0; k < 3 && bad[i].expect[k]; k++)
            CHECK_MSG(strstr(err.msg, bad[i].expect[k]) != NULL, "%s: '%s' not in: %s",
                      bad[i].dir, bad[i].expect[k], err.msg);
        /* no back-off sleep before giving up (the hit count above already shows one attempt);
        ** the bound leaves room for a loaded or sanitized run to move a large reply */
        if (bad[i].attempts == 1)
            CHECK_MSG(dt < 5.0, "%s: non-retryable took %.3f s", bad[i].dir, dt);
    }
    close_b(b);

    /* a job waiting out its Retry-After holds no slot: with one slot, a second request
    ** started during the wait finishes long before the first */
    b = open_cfg("{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:%d/v1\",\"model\":\"m\","
                 "\"concurrency\":1,\"cache\":false}", srv.port);
    {
        struct slow_arg a = { .b = b };
        pthread_t t;
        pthread_create(&t, NULL, slow_call, &a);
        usleep(200000);
        struct sn_llm_reply r;
        struct sn_err err;
        double dt_fast;
        CHECK(ask(b, "fast one", -1, &r, &err, &dt_fast) == SN_OK);
        double t_fast_done = sn_now();
        reply_free(&r);
        pthread_join(t, NULL);
        CHECK_MSG(a.rc == SN_OK && a.attempts == 2, "rc %d attempts %d", a.rc, a.attempts);
        CHECK_MSG(dt_fast < 1.0 && t_fast_done < a.t_done - 0.3,
                  "fast request took %.3f s, finished %.3f s before the slow one", dt_fast,
                  a.t_done - t_fast_done);
    }
    close_b(b);

    /* a connection that always dies: retried up to max_retries, then the transport error */
    b = open_cfg("{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:%d/v1\",\"model\":\"m\",\"max_retries\":3,"
                 "\"backoff_base_s\":0.01,\"cache\":false}", srv.port);
    {
        struct sn_llm_reply r;
        struct sn_err err;
        int hits0 = fake_stat(&srv, "hits");
        CHECK(ask(b, "always dropped [[fake:fail=drop;times=always]]", -1, &r, &err, NULL) ==
              SN_E_BACKEND);
        CHECK_MSG(strstr(err.msg, "transport error") && strstr(err.msg, "after 4 attempts"),
                  "%s", err.msg);
        CHECK(fake_stat(&srv, "hits") - hits0 == 4);
    }
    close_b(b);

    /* null content with reasoning text: the reasoning is the reply */
    b = open_cfg("{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:%d/v1\",\"model\":\"m\",\"cache\":false}",
                 srv.port);
    struct sn_llm_reply r;
    struct sn_err err;
    CHECK(ask(b, "reasoning case [[fake:fail=reasoning]]", -1, &r, &err, NULL) == SN_OK);
    CHECK_STR(r.text, "thinking it over. The answer is (C).");
    reply_free(&r);
    close_b(b);

    /* connection refused: retried, then an error naming the transport failure */
    b = open_cfg("{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:1/v1\",\"model\":\"m\",\"max_retries\":2,"
                 "\"backoff_base_s\":0.01}");
    CHECK(ask(b, "refused", -1, &r, &err, NULL) == SN_E_BACKEND);
    CHECK_MSG(strstr(err.msg, "transport error") && strstr(err.msg, "after 3 attempts"), "%s",
              err.msg);
    close_b(b);
}

/* Counts files under dir/xx/ named <64 hex>.json with xx their first two characters. */
static int count_cache_files(const char *cache, int *bad)
{
    char cmd[2400];
    snprintf(cmd, sizeof cmd,
             "n=0; b=0; for f in %s/*/*; do d=$(basename $(dirname $f)); n=$((n+1)); "
             "case $(basename $f) in $d[0-9a-f]*.json) [ ${#d} = 2 ] && "
             "[ $(basename $f .json | tr -d 0-9a-f | wc -c) = 1 ] && "
             "[ $(basename $f .json | wc -c) = 65 ] || b=$((b+1));; *) b=$((b+1));; esac; "
             "done; echo $n $b > %s/count", cache, dir);
    if (sn_test_sh("%s", cmd) != 0)
        return -1;
    char path[600];
    snprintf(path, sizeof path, "%s/count", dir);
    FILE *f = fopen(path, "r");
    int n = -1;
    if (f) {
        if (fscanf(f, "%d %d", &n, bad) != 2)
            n = -1;
        fclose(f);
    }
    return n;
}

static void test_cache_and_secrets(void)
{
    char cache[600];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    const char *cfg = "{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:%d/v1\",\"model\":\"m\","
                      "\"api_key_env\":\"SN_TEST_OPENAI_KEY\",\"cache_dir\":\"%s\","
                      "\"concurrency\":4,\"max_retries\":0}";
    struct sn_llm_backend *b = open_cfg(cfg, srv.port, cache);
    if (!b)
        return;
    CHECK(strstr(b->describe, SECRET) == NULL);
    fake_reset(&srv);
    int cached;
    CHECK(run_many(b, 12, "cache", &cached) == 12);
    CHECK(cached == 0);
    CHECK(fake_stat(&srv, "hits") == 12);
    int bad = -1;
    CHECK_MSG(count_cache_files(cache, &bad) == 12 && bad == 0, "bad %d", bad);
    /* an error whose server text echoes our Authorization header: the key is redacted */
    struct sn_llm_reply r;
    struct sn_err err;
    CHECK(ask(b, "echo [[fake:fail=echo_auth]]", -1, &r, &err, NULL) == SN_E_BACKEND);
    CHECK_MSG(strstr(err.msg, SECRET) == NULL && strstr(err.msg, "[redacted]") != NULL, "%s",
              err.msg);
    CHECK(strstr(err.msg, "bad key in header: Bearer") != NULL);
    close_b(b);

    /* re-run with another key value: every request from the cache, zero server hits */
    setenv("SN_TEST_OPENAI_KEY", "sk-other-key-value", 1);
    b = open_cfg(cfg, srv.port, cache);
    fake_reset(&srv);
    CHECK(run_many(b, 12, "cache", &cached) == 12);
    CHECK(cached == 12);
    CHECK(fake_stat(&srv, "hits") == 0);
    CHECK(b->stats.cache_hits == 12 && b->stats.completed == 12);
    close_b(b);
    setenv("SN_TEST_OPENAI_KEY", SECRET, 1);

    /* a corrupt entry is a miss, then rewritten */
    CHECK(sn_test_sh("f=$(ls %s/*/*.json | head -1); echo '{broken' > $f", cache) == 0);
    b = open_cfg(cfg, srv.port, cache);
    fake_reset(&srv);
    CHECK(run_many(b, 12, "cache", &cached) == 12);
    CHECK(cached == 11 && fake_stat(&srv, "hits") == 1);
    fake_reset(&srv);
    CHECK(run_many(b, 12, "cache", &cached) == 12);
    CHECK(cached == 12 && fake_stat(&srv, "hits") == 0);
    /* a different seed is a different request */
    CHECK(ask(b, "cache request 3", 1000, &r, &err, NULL) == SN_OK && !r.cached);
    reply_free(&r);
    CHECK(ask(b, "cache request 3", 3, &r, &err, NULL) == SN_OK && r.cached);
    CHECK(r.attempts == 0 && r.prompt_tokens == 8);
    reply_free(&r);
    CHECK(fake_stat(&srv, "hits") == 1);
    close_b(b);

    /* cache_fsync:false: same layout, same hits */
    char cache2[700];
    snprintf(cache2, sizeof cache2, "%s/cache-nofsync", dir);
    const char *cfg2 = "{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:%d/v1\","
                       "\"model\":\"m\",\"cache_dir\":\"%s\",\"cache_fsync\":false}";
    for (int pass = 0; pass < 2; pass++) {
        b = open_cfg(cfg2, srv.port, cache2);
        fake_reset(&srv);
        CHECK(run_many(b, 6, "nofsync", &cached) == 6);
        CHECK(cached == (pass ? 6 : 0) && fake_stat(&srv, "hits") == (pass ? 0 : 6));
        close_b(b);
    }
    CHECK(count_cache_files(cache2, &bad) == 6 && bad == 0);
    CHECK(sn_test_sh("! ls %s/*/*.tmp.* 2>/dev/null | grep -q .", cache2) == 0);

    /* cache:false never reads or writes */
    b = open_cfg("{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:%d/v1\",\"model\":\"m\",\"cache_dir\":\"%s\","
                 "\"cache\":false}", srv.port, cache);
    fake_reset(&srv);
    CHECK(run_many(b, 12, "cache", &cached) == 12);
    CHECK(cached == 0 && fake_stat(&srv, "hits") == 12);
    close_b(b);

    /* the key is nowhere in what we wrote; the server log proves it was sent */
    CHECK(sn_test_sh("! grep -rqF '%s' %s", SECRET, cache) == 0);
    CHECK(sn_test_sh("grep -qF 'Bearer %s' %s", SECRET, srv.log) == 0);
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s", sn_test_dir("data_openai_http"));
    setenv("SN_TEST_OPENAI_KEY", SECRET, 1);
    if (fake_start(&srv, dir, 0, 60) != 0) {
        fprintf(stderr, "FAIL: could not start tests/servers/fake_openai.py\n");
        return 1;
    }
    test_body_and_headers();
    test_concurrency();
    test_retries();
    test_cache_and_secrets();
    fake_stop(&srv);
    return sn_test_done();
}
