/* tests/test_llm_openai_http.c: the `openai` backend (llm/openai.c) against the loopback
** server tests/servers/fake_openai.py, started here on a free port and stopped at the end, and
** against the in-process gate of tests/testutil.h, which holds requests until the test lets
** them through. Checks: the request body and headers the server received; the concurrency
** bound reached (requests held until all slots are in use) and never exceeded with many more
** callers than slots; a job waiting out Retry-After frees its slot; timeouts against a server
** that never answers, and a reply read after a timed-out attempt; retries on 429, 500,
** malformed JSON, dropped and cut connections; Retry-After (seconds, HTTP date) and
** retry-after-ms honoured (measured delay >= the header value while the backoff is tiny);
** x-should-retry; non-retryable 400 failing at once (no retry scheduled) with the server's
** message; retries exhausted; the reply-size cap; the on-disk cache (one file per request,
** sharded, a re-run costs zero server hits, the key does not depend on the API key); and the
** API key absent from errors, describe() and the cache while the server did receive it.
** No check needs anything to happen within a time: waits end on a state the test polls for or
** on the gate, and the only time bounds are lower ones (a delay the server asked for). */
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

/* n callers started at once, each in its own thread; many_join waits for them. */
struct many {
    struct worker *w;
    pthread_t     *t;
    int            n;
};

static struct many many_start(struct sn_llm_backend *b, int n, const char *tag)
{
    struct many m = { calloc((size_t)n, sizeof *m.w), calloc((size_t)n, sizeof *m.t), n };
    for (int i = 0; i < n; i++) {
        m.w[i] = (struct worker){ .b = b, .i = i, .tag = tag };
        pthread_create(&m.t[i], NULL, work, &m.w[i]);
    }
    return m;
}

/* Returns the number that succeeded; *n_cached gets how many came from the cache. */
static int many_join(struct many *m, int *n_cached)
{
    int ok = 0;
    *n_cached = 0;
    for (int i = 0; i < m->n; i++) {
        pthread_join(m->t[i], NULL);
        if (m->w[i].rc == SN_OK)
            ok++;
        else
            fprintf(stderr, "worker %d: %s\n", i, m->w[i].err.msg);
        *n_cached += m->w[i].r.cached;
        reply_free(&m->w[i].r);
    }
    free(m->w);
    free(m->t);
    return ok;
}

/* n callers at once; returns the number that succeeded. */
static int run_many(struct sn_llm_backend *b, int n, const char *tag, int *n_cached)
{
    struct many m = many_start(b, n, tag);
    return many_join(&m, n_cached);
}

/* A generous bound for a wait that a working client always ends: on a machine whose cores are
** busy with other work a test process can stall for seconds, so only a hang reaches this. */
#define HANG_S 60

/* `callers` requests at once through a backend with `slots` slots, against a server that holds
** every request until the test opens its gate: exactly `slots` must arrive (not more, however
** long they are held; not fewer, or the wait would end at HANG_S), then all complete. The limit
** is reached by construction, not by timing. */
static void check_slots(int slots, int callers, const char *tag)
{
    struct sn_test_gate *g = sn_test_gate_start(SN_TEST_GATE_HOLD);
    CHECK(g != NULL);
    if (!g)
        return;
    struct sn_llm_backend *b = open_cfg(
        "{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:%d/v1\",\"model\":\"m\","
        "\"concurrency\":%d,\"connect_timeout_s\":%d}", sn_test_gate_port(g), slots, HANG_S);
    if (!b) {
        sn_test_gate_stop(g);
        return;
    }
    struct many m = many_start(b, callers, tag);
    CHECK_MSG(sn_test_gate_wait_current(g, slots, HANG_S), "%s: %d of %d slots in use", tag,
              sn_test_gate_stats(g).current, slots);
    CHECK_MSG(__atomic_load_n(&b->stats.in_flight, __ATOMIC_RELAXED) == slots,
              "%s: stats.in_flight %d", tag, __atomic_load_n(&b->stats.in_flight,
                                                             __ATOMIC_RELAXED));
    /* A client that overran the limit would send more while these are held; this pause only
    ** gives it the chance (a working client passes whatever the pause or the scheduling). */
    usleep(100 * 1000);
    CHECK_MSG(sn_test_gate_stats(g).hits == slots, "%s: %d requests held, %d slots", tag,
              sn_test_gate_stats(g).hits, slots);
    sn_test_gate_open(g);
    int cached;
    CHECK(many_join(&m, &cached) == callers);
    CHECK(cached == 0);
    struct sn_test_gate_stats gs = sn_test_gate_stats(g);
    CHECK_MSG(gs.max_current == slots && gs.hits == callers, "%s: max_current %d, hits %d", tag,
              gs.max_current, gs.hits);
    /* kept-alive connections: one per slot, reused by the next requests */
    CHECK_MSG(gs.connections == slots, "%s: connections %d", tag, gs.connections);
    struct sn_llm_stats st = sn_llm_backend_stats(b);
    CHECK(st.requests == (uint64_t)callers && st.completed == (uint64_t)callers &&
          st.failed == 0 && st.in_flight == 0);
    CHECK(st.prompt_tokens == (uint64_t)callers && st.completion_tokens == 2u * callers);
    close_b(b);
    sn_test_gate_stop(g);
}

static void test_concurrency(void)
{
    /* 48 callers, 8 slots: 8 requests in flight at once, never more */
    check_slots(8, 48, "conc");
    /* more slots than the event loop starts per pass (64) */
    check_slots(100, 130, "wide");
}

/* One request carrying a directive: it succeeds after `attempts` attempts, every one of which
** reached the server, and takes at least min_s (a delay the server asked for). No upper bound:
** load can only add to the time. */
static void expect_retry(struct sn_llm_backend *b, const char *directive, int attempts,
                         double min_s)
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
    CHECK_MSG(dt >= min_s, "%s: took %.3f s, less than the %g s the server asked for", directive,
              dt, min_s);
    CHECK(r.text && strstr(r.text, "fake reply") != NULL);
    reply_free(&r);
}

/* Polls (every 10 ms, up to HANG_S) until the backend has scheduled at least n retries. */
static int wait_retries(struct sn_llm_backend *b, uint64_t n)
{
    for (int i = 0; i < 100 * HANG_S; i++) {
        if (__atomic_load_n(&b->stats.retries, __ATOMIC_RELAXED) >= n)
            return 1;
        usleep(10 * 1000);
    }
    return 0;
}

struct call {
    struct sn_llm_backend *b;
    const char *user;
    pthread_t   t;
    int         rc, attempts, done; /* done: atomic */
    double      dt;
    char        text[128];
    struct sn_err err;
};

static void *call_run(void *arg)
{
    struct call *c = arg;
    struct sn_llm_reply r;
    c->rc = ask(c->b, c->user, -1, &r, &c->err, &c->dt);
    c->attempts = r.attempts;
    snprintf(c->text, sizeof c->text, "%s", r.text ? r.text : "");
    reply_free(&r);
    __atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* A job waiting out its Retry-After holds no slot (docs/openai.md "Threads, concurrency and
** memory"). With one slot, a job told to wait SLOT_WAIT_S is seen queued for its retry
** (stats.retries, polled), then a second request must run to the end before the first is done.
** SLOT_WAIT_S is only the room the second request has to finish in, far above what it takes on
** a loaded machine; the wait runs out while the gate tests go on (they do not touch the fake
** server), and slot_check_finish joins the first request. */
#define SLOT_WAIT_S 10
#define STR_(x) #x
#define STR(x) STR_(x)
static struct call slot_slow;

static void slot_check_start(void)
{
    struct sn_llm_backend *b = open_cfg(
        "{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:%d/v1\",\"model\":\"m\","
        "\"concurrency\":1,\"timeout_s\":%d,\"cache\":false}", srv.port, HANG_S);
    slot_slow = (struct call){ .b = b };
    if (!b)
        return;
    slot_slow.user = "slow one [[fake:fail=429;retry_after=" STR(SLOT_WAIT_S) "]]";
    pthread_create(&slot_slow.t, NULL, call_run, &slot_slow);
    CHECK_MSG(wait_retries(b, 1), "the 429 was never followed by a scheduled retry");
    struct sn_llm_reply r;
    struct sn_err err;
    CHECK(ask(b, "fast one", -1, &r, &err, NULL) == SN_OK);
    reply_free(&r);
    CHECK_MSG(!__atomic_load_n(&slot_slow.done, __ATOMIC_ACQUIRE),
              "a job waiting out Retry-After kept the only slot: the other request finished "
              "after it");
}

static void slot_check_finish(void)
{
    if (!slot_slow.b)
        return;
    pthread_join(slot_slow.t, NULL);
    CHECK_MSG(slot_slow.rc == SN_OK && slot_slow.attempts == 2, "rc %d attempts %d: %s",
              slot_slow.rc, slot_slow.attempts, slot_slow.err.msg);
    CHECK_MSG(slot_slow.dt >= SLOT_WAIT_S, "the 429's Retry-After (%d s) was cut to %.3f s",
              SLOT_WAIT_S, slot_slow.dt);
    close_b(slot_slow.b);
}

/* Timeouts, against a server that holds requests until the test opens its gate (nothing
** answers "slowly", so how long anything takes cannot change the outcome):
** - one that never answers: every attempt ends at timeout_s, and the error says it timed out;
** - a reply that does come, after an attempt timed out: it is read. The gate opens only once a
**   retry is scheduled, so at least one attempt timed out; the next is answered as soon as it
**   arrives, and max_retries leaves room for a loaded machine to time out a few more. */
static void test_timeouts(void)
{
    struct sn_test_gate *g = sn_test_gate_start(SN_TEST_GATE_HOLD);
    CHECK(g != NULL);
    if (!g)
        return;
    const char *cfg = "{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:%d/v1\",\"model\":"
                      "\"m\",\"timeout_s\":1,\"connect_timeout_s\":%d,\"max_retries\":%d,"
                      "\"backoff_base_s\":0.01,\"backoff_max_s\":0.02,\"cache\":false}";
    struct sn_llm_backend *b = open_cfg(cfg, sn_test_gate_port(g), HANG_S, 1);
    struct sn_llm_reply r;
    struct sn_err err;
    double dt;
    if (b) {
        CHECK(ask(b, "never answered", -1, &r, &err, &dt) == SN_E_BACKEND);
        CHECK_MSG(strstr(err.msg, "timed out") && strstr(err.msg, "after 2 attempts"), "%s",
                  err.msg);
        /* two attempts of timeout_s each (5% for the clocks' granularity) */
        CHECK_MSG(dt >= 2 * 0.95, "gave up after %.3f s", dt);
        CHECK(b->stats.retries == 1);
        close_b(b);
    }
    b = open_cfg(cfg, sn_test_gate_port(g), HANG_S, 20);
    if (b) {
        struct call c = { .b = b, .user = "answered after a timeout" };
        pthread_create(&c.t, NULL, call_run, &c);
        CHECK_MSG(wait_retries(b, 1), "no retry was scheduled after the first attempt");
        sn_test_gate_open(g);
        pthread_join(c.t, NULL);
        CHECK_MSG(c.rc == SN_OK, "%s", c.err.msg);
        CHECK_MSG(c.attempts >= 2, "attempts %d", c.attempts);
        CHECK_STR(c.text, SN_TEST_GATE_REPLY);
        close_b(b);
    }
    sn_test_gate_stop(g);
}

static void test_retries(void)
{
    /* backoff 10 ms: any delay of a second or so can only come from the server's header.
    ** A generous client timeout: on a loaded machine (ctest -j, ASan) an ordinary reply can
    ** take longer than a short one, which would add an attempt; timeouts are tested against
    ** a server that never answers (test_timeouts). */
    struct sn_llm_backend *b = open_cfg(
        "{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:%d/v1\",\"model\":\"m\",\"max_retries\":3,"
        "\"backoff_base_s\":0.01,\"backoff_max_s\":0.02,\"timeout_s\":%d,\"cache\":false}",
        srv.port, HANG_S);
    if (!b)
        return;
    expect_retry(b, "fail=429;retry_after=1", 2, 1.0);
    expect_retry(b, "fail=429;retry_after_ms=400", 2, 0.4);
    /* an HTTP date has whole seconds: "2 s ahead" is between 1 and 2 s away */
    expect_retry(b, "fail=503;retry_after=date+2", 2, 0.95);
    expect_retry(b, "fail=429", 2, 0.0);
    expect_retry(b, "fail=500;times=2", 3, 0.0);
    expect_retry(b, "fail=408", 2, 0.0);
    expect_retry(b, "fail=malformed", 2, 0.0);
    /* a fresh backend: curl itself re-sends once, silently, when a *reused* keep-alive
    ** connection dies before any reply; on a new connection the retry is ours to count */
    struct sn_llm_backend *fresh = open_cfg(
        "{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:%d/v1\",\"model\":\"m\",\"max_retries\":3,"
        "\"backoff_base_s\":0.01,\"cache\":false}", srv.port);
    expect_retry(fresh, "fail=drop", 2, 0.0);
    close_b(fresh);
    expect_retry(b, "fail=partial", 2, 0.0);
    expect_retry(b, "fail=400;should_retry=true", 2, 0.0);
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
        snprintf(user, sizeof user, "failure case [[fake:%s]]", bad[i].dir);
        int hits0 = fake_stat(&srv, "hits");
        uint64_t retries0 = b->stats.retries;
        int rc = ask(b, user, -1, &r, &err, NULL);
        CHECK_MSG(rc == SN_E_BACKEND, "%s: rc %d", bad[i].dir, rc);
        CHECK(r.text == NULL);
        CHECK_MSG(fake_stat(&srv, "hits") - hits0 == bad[i].attempts, "%s: hits %d",
                  bad[i].dir, fake_stat(&srv, "hits") - hits0);
        CHECK_MSG(strstr(err.msg, "http://127.0.0.1:") != NULL, "%s", err.msg);
        for (int k = 0; k < 3 && bad[i].expect[k]; k++)
            CHECK_MSG(strstr(err.msg, bad[i].expect[k]) != NULL, "%s: '%s' not in: %s",
                      bad[i].dir, bad[i].expect[k], err.msg);
        /* a wait is scheduled only before a retry: none before giving up */
        CHECK_MSG(b->stats.retries - retries0 == (uint64_t)bad[i].attempts - 1,
                  "%s: %" PRIu64 " retries scheduled", bad[i].dir, b->stats.retries - retries0);
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
    /* the server's lifetime only bounds an orphan if this test dies; it is stopped below */
    if (fake_start(&srv, dir, 0, 900) != 0) {
        fprintf(stderr, "FAIL: could not start tests/servers/fake_openai.py\n");
        return 1;
    }
    test_body_and_headers();
    slot_check_start(); /* its Retry-After runs out during the gate tests */
    test_concurrency();
    test_timeouts();
    slot_check_finish();
    test_retries();
    test_cache_and_secrets();
    fake_stop(&srv);
    return sn_test_done();
}
