/* tests/test_serve_http.c: `sentinel serve` end to end on loopback (serve/serve.h;
** docs/agents.md "The server"), in this process with libcurl as the client. The suite's tiny
** detector; small limits so that each one is reached:
**   - every endpoint: /health, /v1/models, /v1/score (shared context and pairs: the scores equal
**     the library's to the bit), /v1/rerank (sorted, top_n, the raw reward), debate sessions
**     (create, rounds, state, delete; each round equal to the library's sentinels fed the same
**     messages);
**   - errors with their status and message, the server serving on after each: malformed JSON,
**     an unknown field, an oversized body, too many tokens, too many items, an unknown debate
**     id, a round out of order, too many sessions, a wrong key, a wrong method or path;
**   - a full queue (workers paused: no timing) gets 503 with Retry-After, and so does a request
**     no worker takes within the queue wait; a slow client is cut off by the connection timeout;
**     a client that disconnects mid-body or before its reply;
**   - two sessions posting rounds at the same time keep their own blacklists;
**   - a graceful stop with a request in flight answers it;
**   - the `sentinel serve` command: SIGTERM ends it with status 0.
** Waits are bounded by a generous guard that only catches a hang; nothing asserts on speed. */
#include "testutil.h"
#include "defense/defense.h"
#include "export/export.h"
#include "serve/serve.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define GUARD_S 300 /* only against a hang */
#define KEY "s3cret-key"

static int port;
static const char *gguf;

struct resp {
    long   status;
    char   body[65536];
    size_t len;
    char   retry_after[16];
};

static size_t on_body(char *p, size_t size, size_t n, void *user)
{
    struct resp *r = user;
    size_t k = size * n;
    if (r->len + k >= sizeof r->body)
        k = sizeof r->body - 1 - r->len;
    memcpy(r->body + r->len, p, k);
    r->len += k;
    r->body[r->len] = '\0';
    return size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *user)
{
    struct resp *r = user;
    size_t k = size * n;
    if (k > 13 && strncasecmp(p, "Retry-After: ", 13) == 0)
        snprintf(r->retry_after, sizeof r->retry_after, "%.*s", (int)(k - 13 - 2), p + 13);
    return k;
}

/* One request; key NULL = none. Returns the status (0: no reply). */
static long http(const char *method, const char *path, const char *body, const char *key,
                 struct resp *r)
{
    memset(r, 0, sizeof *r);
    CURL *c = curl_easy_init();
    char url[256], auth[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (key) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", key);
        h = curl_slist_append(h, auth);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)GUARD_S);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return r->status;
}

/* the status and that the body is an error naming `needle` */
static void check_error(const char *what, long want, const struct resp *r, const char *needle)
{
    CHECK_MSG(r->status == want, "%s: status %ld, want %ld (%s)", what, r->status, want,
              r->body);
    cJSON *j = cJSON_Parse(r->body);
    const cJSON *e = cJSON_GetObjectItem(j, "error");
    const cJSON *m = cJSON_GetObjectItem(e, "message");
    const cJSON *code = cJSON_GetObjectItem(e, "code");
    CHECK_MSG(cJSON_IsString(m) && strstr(m->valuestring, needle) != NULL &&
              cJSON_IsNumber(code) && code->valuedouble == (double)want,
              "%s: error body %s lacks '%s'", what, r->body, needle);
    cJSON_Delete(j);
}

static void check_health(const char *after)
{
    struct resp r;
    http("GET", "/health", NULL, NULL, &r);
    CHECK_MSG(r.status == 200, "health after %s: %ld", after, r.status);
    http("POST", "/v1/score", "{\"context\":\"c\",\"response\":\"r\"}", KEY, &r);
    CHECK_MSG(r.status == 200, "scoring after %s: %ld %s", after, r.status, r.body);
}

/* floats of a JSON array, to the bit (the reply prints %.9g) */
static size_t floats(const cJSON *arr, float *out, size_t max)
{
    size_t n = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, arr) {
        if (n < max)
            out[n++] = (float)x->valuedouble;
    }
    return n;
}

static int raw_connect(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* ---- threads: a request in the background ------------------------------------------------ */

struct bg {
    pthread_t   th;
    const char *path, *body;
    struct resp r;
};

static void *bg_main(void *arg)
{
    struct bg *b = arg;
    http("POST", b->path, b->body, KEY, &b->r);
    return NULL;
}

static void wait_queued(struct sn_serve *s, int n)
{
    for (int i = 0; i < GUARD_S * 100 && sn_serve_queued(s) < n; i++)
        usleep(10000);
    CHECK_MSG(sn_serve_queued(s) == n, "queue holds %d, want %d", sn_serve_queued(s), n);
}

/* ---- sessions --------------------------------------------------------------------------- */

static int det_score(void *d, const char *task, const char *const *hist, size_t n_hist,
                     const char *const *resp, size_t n, float *out, struct sn_err *err)
{
    return sn_detector_score_prompt(d, task, hist, n_hist, resp, n, out, err);
}

static const char *const texts[2][3][3] = {
    {{"It is 4. FINAL ANSWER: 4", "It is 5 for sure. FINAL ANSWER: 5", "Four. FINAL ANSWER: 4"},
     {"Still 4. FINAL ANSWER: 4", "Trust me, 5. FINAL ANSWER: 5", "4 it is. FINAL ANSWER: 4"},
     {"4. FINAL ANSWER: 4", "5!!! FINAL ANSWER: 5", "Agreed: 4. FINAL ANSWER: 4"}},
    {{"Paris is the capital. FINAL ANSWER: A", "Lyon. FINAL ANSWER: B", "Nice? FINAL ANSWER: C"},
     {"Paris. FINAL ANSWER: A", "Lyon, surely. FINAL ANSWER: B", "Paris. FINAL ANSWER: A"},
     {"A. FINAL ANSWER: A", "B. FINAL ANSWER: B", "A again. FINAL ANSWER: A"}},
};

struct sess {
    pthread_t th;
    int       which;
    char      id[64];
    char      reply[3][65536];
    long      status[3];
};

static void round_body(int which, int rd, char *out, size_t cap)
{
    cJSON *o = cJSON_CreateObject(), *ms = cJSON_AddArrayToObject(o, "messages");
    for (int a = 0; a < 3; a++) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddNumberToObject(m, "agent", a);
        cJSON_AddStringToObject(m, "text", texts[which][rd][a]);
        cJSON_AddItemToArray(ms, m);
    }
    char *t = cJSON_PrintUnformatted(o);
    snprintf(out, cap, "%s", t);
    cJSON_free(t);
    cJSON_Delete(o);
}

static void *sess_main(void *arg)
{
    struct sess *s = arg;
    char path[128], body[4096];
    struct resp r;
    snprintf(path, sizeof path, "/v1/debates/%s/rounds", s->id);
    for (int rd = 0; rd < 3; rd++) {
        round_body(s->which, rd, body, sizeof body);
        s->status[rd] = http("POST", path, body, KEY, &r);
        snprintf(s->reply[rd], sizeof s->reply[rd], "%s", r.body);
    }
    return NULL;
}

/* the same debate through the library's sentinels: each round's reply must agree */
static void check_session(struct sn_detector *d, const struct sess *s, const char *task)
{
    struct sn_err err = {0};
    struct sn_sentinel *sn[3];
    struct sn_sentinel_scorer sc = {det_score, d};
    for (int q = 0; q < 3; q++) {
        struct sn_sentinel_params p = sn_sentinel_default_params();
        p.self = q;
        p.tie_seed = 7;
        CHECK(sn_sentinel_create(&p, task, &sn[q], &err) == SN_OK);
    }
    for (int rd = 0; rd < 3; rd++) {
        CHECK_MSG(s->status[rd] == 200, "session %d round %d: %ld %s", s->which, rd,
                  s->status[rd], s->reply[rd]);
        cJSON *j = cJSON_Parse(s->reply[rd]);
        const cJSON *arr = cJSON_GetObjectItem(j, "sentinels"), *x;
        int q = 0;
        cJSON_ArrayForEach(x, arr) {
            struct sn_sentinel_msg m[2];
            size_t n = 0;
            for (int a = 0; a < 3; a++)
                if (a != q)
                    m[n++] = (struct sn_sentinel_msg){a, texts[s->which][rd][a], NULL};
            float f[2];
            bool ex[2];
            CHECK(sn_sentinel_round(sn[q], &sc, rd, m, n, f, ex, NULL, &err) == SN_OK);
            const cJSON *scores = cJSON_GetObjectItem(x, "scores"), *y;
            size_t i = 0;
            cJSON_ArrayForEach(y, scores) {
                CHECK(i < n && (float)cJSON_GetObjectItem(y, "score")->valuedouble == f[i]);
                CHECK(i < n && cJSON_IsTrue(cJSON_GetObjectItem(y, "excluded")) == ex[i]);
                i++;
            }
            CHECK(i == n);
            uint64_t bl = 0;
            cJSON_ArrayForEach(y, cJSON_GetObjectItem(x, "blacklist"))
                bl |= 1ULL << (int)y->valuedouble;
            CHECK_MSG(bl == sn_sentinel_blacklist(sn[q]), "session %d round %d sentinel %d: "
                      "blacklist %llx, library %llx", s->which, rd, q, (unsigned long long)bl,
                      (unsigned long long)sn_sentinel_blacklist(sn[q]));
            q++;
        }
        CHECK(q == 3);
        cJSON_Delete(j);
        /* answers as the server extracts them (a question was given) */
        for (int q2 = 0; q2 < 3; q2++)
            for (int a = 0; a < 3; a++) {
                const char *ans = s->which == 0 ? (a == 1 ? "5" : "4")
                                                : (a == 1 ? "B" : (rd == 0 && a == 2 ? "C" : "A"));
                struct sn_sentinel_msg hm = {a, texts[s->which][rd][a], ans};
                CHECK(sn_sentinel_add_history(sn[q2], (size_t)rd, &hm, &err) == SN_OK);
            }
    }
    for (int q = 0; q < 3; q++)
        sn_sentinel_free(sn[q]);
}

static char *new_session(const char *body, struct resp *r)
{
    static char id[64];
    id[0] = '\0';
    http("POST", "/v1/debates", body, KEY, r);
    cJSON *j = cJSON_Parse(r->body);
    const cJSON *x = cJSON_GetObjectItem(j, "id");
    if (cJSON_IsString(x))
        snprintf(id, sizeof id, "%s", x->valuestring);
    cJSON_Delete(j);
    return id;
}

/* ---- the command ------------------------------------------------------------------------- */

static void cli_sigterm(const char *dir)
{
    const char *bin = sn_test_bin();
    const char *errf = sn_test_path(dir, "serve_err.txt");
    pid_t pid = fork();
    if (pid == 0) {
        FILE *f = freopen(errf, "w", stderr);
        (void)f;
        execl(bin, bin, "serve", "--detector", gguf, "--port", "0", "--threads", "1",
              (char *)NULL);
        _exit(127);
    }
    CHECK(pid > 0);
    char buf[4096] = "";
    int p = 0;
    for (int i = 0; i < GUARD_S * 10 && pid > 0; i++) {
        FILE *f = fopen(errf, "r");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        buf[n] = '\0';
        if (f)
            fclose(f);
        const char *at = strstr(buf, "127.0.0.1:");
        if (at && strstr(buf, "ready")) {
            p = atoi(at + 10);
            break;
        }
        usleep(100000);
    }
    CHECK_MSG(p > 0, "sentinel serve did not start: %s", buf);
    int saved = port;
    port = p;
    struct resp r;
    http("POST", "/v1/score", "{\"context\":\"c\",\"responses\":[\"a\",\"b\"]}", NULL, &r);
    CHECK_MSG(r.status == 200, "cli: %ld %s", r.status, r.body);
    port = saved;
    kill(pid, SIGTERM);
    int st = -1;
    for (int i = 0; i < GUARD_S * 10; i++) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            break;
        usleep(100000);
    }
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "sentinel serve after SIGTERM: status %d",
              st);
    CHECK(sn_test_file_has(errf, "stopped"));
    CHECK(sn_test_sh("'%s' serve --help | grep -q /v1/rerank", bin) == 0);
    CHECK(sn_test_sh("'%s' serve --detector x.gguf --port 70000 2>/dev/null", bin) == 2);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_ALL);
    gguf = sn_test_tiny_detector();
    const char *dir = sn_test_dir("serve_http");
    struct sn_err err = {0};
    struct sn_serve_params p = sn_serve_default_params();
    p.port = 0;
    p.n_workers = 2;
    p.n_threads = 1;
    p.queue_max = 2;
    p.max_body = 8192;
    p.max_tokens = 400;
    p.max_items = 8;
    p.conn_timeout_s = 2;
    p.max_sessions = 3;
    p.api_key = KEY;
    p.seed = 5;
    struct sn_serve *s = NULL;
    CHECK_MSG(sn_serve_start(gguf, &p, &s, &err) == SN_OK, "%s", err.msg);
    if (!s)
        return sn_test_done();
    port = sn_serve_port(s);
    CHECK(port > 0);
    CHECK_MSG(sn_serve_wait_ready(s, &err) == SN_OK, "%s", err.msg);
    struct sn_detector *d = NULL;
    struct sn_detector_params dp = sn_detector_default_params();
    dp.n_threads = 1;
    CHECK(sn_detector_open(gguf, &dp, &d, &err) == SN_OK);
    struct resp r;

    /* health, models, keys */
    CHECK(http("GET", "/health", NULL, NULL, &r) == 200 && strstr(r.body, "\"ok\""));
    check_error("no key", 401, (http("GET", "/v1/models", NULL, NULL, &r), &r), "API key");
    check_error("wrong key", 401, (http("GET", "/v1/models", NULL, "s3cret-kez", &r), &r),
                "API key");
    CHECK(http("GET", "/v1/models", NULL, KEY, &r) == 200 && strstr(r.body, "\"d.gguf\""));

    /* score: shared context, and pairs, equal to the library's to the bit */
    const char *resp3[3] = {"It is 4.", "It is 5, trust me.", "Maybe 3? FINAL ANSWER: 3"};
    float want[3], got[8];
    CHECK(sn_detector_score_shared(d, "Question: 2+2?", resp3, 3, want, &err) == SN_OK);
    http("POST", "/v1/score", "{\"context\":\"Question: 2+2?\",\"responses\":[\"It is 4.\","
         "\"It is 5, trust me.\",\"Maybe 3? FINAL ANSWER: 3\"]}", KEY, &r);
    CHECK_MSG(r.status == 200, "%s", r.body);
    cJSON *j = cJSON_Parse(r.body);
    CHECK(floats(cJSON_GetObjectItem(j, "scores"), got, 8) == 3);
    for (int i = 0; i < 3; i++)
        CHECK(got[i] == want[i]);
    cJSON_Delete(j);
    float one = 0, zero = 0; /* pairs are scored one by one (sn_detector_score_batch) */
    CHECK(sn_detector_score(d, "Question: 2+2?", "It is 5, trust me.", &zero, &err) == SN_OK);
    CHECK(sn_detector_score(d, "ctx two", "resp two", &one, &err) == SN_OK);
    http("POST", "/v1/score", "{\"pairs\":[{\"context\":\"Question: 2+2?\",\"response\":"
         "\"It is 5, trust me.\"},{\"context\":\"ctx two\",\"response\":\"resp two\"}]}", KEY, &r);
    j = cJSON_Parse(r.body);
    CHECK(floats(cJSON_GetObjectItem(j, "scores"), got, 8) == 2);
    CHECK(got[0] == zero && got[1] == one);
    cJSON_Delete(j);

    /* rerank: best first, top_n, relevance_score = the raw reward */
    http("POST", "/v1/rerank", "{\"query\":\"Question: 2+2?\",\"documents\":[\"It is 4.\","
         "\"It is 5, trust me.\",\"Maybe 3? FINAL ANSWER: 3\"],\"top_n\":2}", KEY, &r);
    CHECK_MSG(r.status == 200, "%s", r.body);
    j = cJSON_Parse(r.body);
    const cJSON *res = cJSON_GetObjectItem(j, "results"), *x;
    int best = 0;
    for (int i = 1; i < 3; i++)
        if (want[i] > want[best])
            best = i;
    CHECK(cJSON_GetArraySize(res) == 2);
    CHECK((int)cJSON_GetObjectItem(cJSON_GetArrayItem(res, 0), "index")->valuedouble == best);
    float prev = INFINITY;
    cJSON_ArrayForEach(x, res) {
        int i = (int)cJSON_GetObjectItem(x, "index")->valuedouble;
        float rs = (float)cJSON_GetObjectItem(x, "relevance_score")->valuedouble;
        CHECK(i >= 0 && i < 3 && rs == want[i] && rs <= prev);
        prev = rs;
    }
    cJSON_Delete(j);

    /* errors, each followed by a request that works */
    http("POST", "/v1/score", "{\"context\":\"c\",\"responses\":[\"a\"", KEY, &r);
    check_error("malformed JSON", 400, &r, "invalid JSON");
    http("POST", "/v1/score", "{\"context\":\"c\",\"respones\":[\"a\"]}", KEY, &r);
    check_error("unknown field", 400, &r, "unknown field \"respones\"");
    http("POST", "/v1/score", "{\"context\":\"c\",\"responses\":[1]}", KEY, &r);
    check_error("wrong type", 400, &r, "responses[0] must be a string");
    check_health("malformed requests");
    char *big = malloc(20000);
    snprintf(big, 20000, "{\"context\":\"%0*d\",\"response\":\"r\"}", 10000, 0);
    http("POST", "/v1/score", big, KEY, &r);
    check_error("oversized body", 413, &r, "--max-body");
    check_health("an oversized body");
    /* about 5000 bytes of words: under the body limit, over 400 tokens in any tokenizer */
    size_t off = (size_t)snprintf(big, 20000, "{\"context\":\"");
    for (int w = 0; off < 5000; w++)
        off += (size_t)snprintf(big + off, 20000 - off, "w%d ", w);
    snprintf(big + off, 20000 - off, "\",\"response\":\"r\"}");
    http("POST", "/v1/score", big, KEY, &r);
    check_error("too many tokens", 413, &r, "tokens");
    check_health("too many tokens");
    free(big);
    http("POST", "/v1/rerank", "{\"query\":\"q\",\"documents\":[\"1\",\"2\",\"3\",\"4\",\"5\","
         "\"6\",\"7\",\"8\",\"9\"]}", KEY, &r);
    check_error("too many items", 413, &r, "at most 8");
    http("POST", "/v1/debates/nosuchid/rounds", "{\"messages\":[]}", KEY, &r);
    check_error("unknown debate", 404, &r, "no debate session 'nosuchid'");
    http("GET", "/v1/debates/nosuchid", NULL, KEY, &r);
    check_error("unknown debate (GET)", 404, &r, "nosuchid");
    http("GET", "/v1/score", NULL, KEY, &r);
    check_error("wrong method", 405, &r, "takes POST");
    http("GET", "/v2/nothing", NULL, KEY, &r);
    check_error("unknown path", 404, &r, "unknown path");
    check_health("unknown paths");

    /* sessions: two at once keep their own blacklists, each equal to the library's */
    struct sess a = {0}, b = {0};
    a.which = 0;
    b.which = 1;
    snprintf(a.id, sizeof a.id, "%s",
             new_session("{\"question\":\"2+2?\",\"sentinels\":[0,1,2],\"seed\":7}", &r));
    CHECK_MSG(r.status == 201 && a.id[0], "%ld %s", r.status, r.body);
    snprintf(b.id, sizeof b.id, "%s",
             new_session("{\"question\":\"The capital of France?\",\"options\":[\"Paris\","
                         "\"Lyon\",\"Nice\"],\"sentinels\":[0,1,2],\"seed\":7}", &r));
    CHECK_MSG(r.status == 201 && b.id[0] && strcmp(a.id, b.id) != 0, "%ld %s", r.status, r.body);
    pthread_create(&a.th, NULL, sess_main, &a);
    pthread_create(&b.th, NULL, sess_main, &b);
    pthread_join(a.th, NULL);
    pthread_join(b.th, NULL);
    check_session(d, &a, "Question: 2+2?");
    check_session(d, &b, "Question: The capital of France?\nOptions:\nA. Paris\nB. Lyon\nC. Nice");
    char path[160];
    snprintf(path, sizeof path, "/v1/debates/%s", a.id);
    CHECK(http("GET", path, NULL, KEY, &r) == 200 && strstr(r.body, "\"round\":3"));
    snprintf(path, sizeof path, "/v1/debates/%s/rounds", a.id);
    http("POST", path, "{\"round\":7,\"messages\":[]}", KEY, &r);
    check_error("round out of order", 409, &r, "expects round 3");
    http("POST", path, "{\"messages\":[{\"agent\":64,\"text\":\"x\"}]}", KEY, &r);
    check_error("bad agent", 400, &r, "messages[0]");
    {
        char longer[6000];
        size_t at = (size_t)snprintf(longer, sizeof longer, "{\"messages\":[{\"agent\":0,"
                                     "\"text\":\"");
        for (int w = 0; at < 5000; w++)
            at += (size_t)snprintf(longer + at, sizeof longer - at, "w%d ", w);
        snprintf(longer + at, sizeof longer - at, "\"}]}");
        http("POST", path, longer, KEY, &r);
        check_error("a round with too many tokens", 413, &r, "tokens");
        CHECK(http("GET", path, NULL, KEY, &r) == 405); /* rounds take POST */
    }
    /* the session limit (3), then room again after a DELETE */
    char third[64];
    snprintf(third, sizeof third, "%s", new_session("{\"task\":\"T\",\"sentinels\":[1]}", &r));
    CHECK(r.status == 201);
    new_session("{\"task\":\"T\",\"sentinels\":[1]}", &r);
    check_error("too many sessions", 429, &r, "too many debate sessions");
    CHECK(r.retry_after[0] != '\0');
    snprintf(path, sizeof path, "/v1/debates/%s", third);
    CHECK(http("DELETE", path, NULL, KEY, &r) == 204);
    CHECK(http("GET", path, NULL, KEY, &r) == 404);
    new_session("{\"task\":\"T\",\"sentinels\":[1]}", &r);
    CHECK(r.status == 201);

    /* a full queue: workers paused, two requests queued, the third refused */
    sn_serve_pause(s, true);
    struct bg q[2];
    for (int i = 0; i < 2; i++) {
        q[i].path = "/v1/score";
        q[i].body = "{\"context\":\"c\",\"response\":\"queued\"}";
        pthread_create(&q[i].th, NULL, bg_main, &q[i]);
        wait_queued(s, i + 1);
    }
    http("POST", "/v1/score", "{\"context\":\"c\",\"response\":\"r\"}", KEY, &r);
    check_error("full queue", 503, &r, "busy");
    CHECK_MSG(strcmp(r.retry_after, "1") == 0, "Retry-After '%s'", r.retry_after);
    /* a client that gives up on its queued request: the server carries on */
    int fd = raw_connect();
    const char *req = "POST /v1/score HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " KEY "\r\n"
                      "Content-Type: application/json\r\nContent-Length: 32\r\n\r\n"
                      "{\"context\":\"c\",\"response\":\"r\"}";
    CHECK(fd >= 0 && write(fd, req, strlen(req)) == (ssize_t)strlen(req));
    sn_serve_pause(s, false);
    close(fd);
    for (int i = 0; i < 2; i++) {
        pthread_join(q[i].th, NULL);
        CHECK_MSG(q[i].r.status == 200, "queued request %d: %ld %s", i, q[i].r.status,
                  q[i].r.body);
    }
    check_health("a full queue");

    /* a client that disconnects mid-body */
    fd = raw_connect();
    const char *part = "POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{\"cont";
    CHECK(fd >= 0 && write(fd, part, strlen(part)) == (ssize_t)strlen(part));
    close(fd);
    check_health("a client that disconnected mid-body");
    /* a slow client: headers and part of the body, then silence; the connection timeout
    ** (2 s here) closes it */
    fd = raw_connect();
    CHECK(fd >= 0 && write(fd, part, strlen(part)) == (ssize_t)strlen(part));
    struct pollfd pf = {fd, POLLIN, 0};
    char junk[512];
    CHECK_MSG(poll(&pf, 1, GUARD_S * 1000) == 1, "the stalled connection was not closed");
    ssize_t got_n = read(fd, junk, sizeof junk);
    CHECK_MSG(got_n <= 0 || (got_n > 0 && strstr(junk, "HTTP/1.1 4") == junk), "a stalled "
              "client got %zd bytes", got_n);
    close(fd);
    check_health("a slow client");

    /* graceful stop with a request in flight: it is answered before the stop returns */
    sn_serve_pause(s, true);
    struct bg fl = {.path = "/v1/score", .body = "{\"context\":\"c\",\"response\":\"last\"}"};
    pthread_create(&fl.th, NULL, bg_main, &fl);
    wait_queued(s, 1);
    sn_serve_stop(s);
    pthread_join(fl.th, NULL);
    CHECK_MSG(fl.r.status == 200, "in flight at stop: %ld %s", fl.r.status, fl.r.body);
    CHECK(http("GET", "/health", NULL, NULL, &r) == 0); /* nothing listens any more */

    /* a request no worker takes within --queue-wait gets 503 (workers paused: it cannot be
    ** taken, so only the wait's lower bound matters) */
    struct sn_serve_params p2 = sn_serve_default_params();
    p2.queue_wait_s = 0.3;
    struct sn_serve *s2 = NULL;
    CHECK_MSG(sn_serve_start(gguf, &p2, &s2, &err) == SN_OK, "%s", err.msg);
    if (s2) {
        port = sn_serve_port(s2);
        CHECK(sn_serve_wait_ready(s2, &err) == SN_OK);
        sn_serve_pause(s2, true);
        http("POST", "/v1/score", "{\"context\":\"c\",\"response\":\"r\"}", NULL, &r);
        check_error("queue wait", 503, &r, "--queue-wait");
        CHECK(sn_serve_queued(s2) == 0);
        sn_serve_pause(s2, false);
        CHECK(http("POST", "/v1/score", "{\"context\":\"c\",\"response\":\"r\"}", NULL,
                   &r) == 200);
        sn_serve_stop(s2);
    }

    cli_sigterm(dir);
    sn_detector_free(d);
    curl_global_cleanup();
    return sn_test_done();
}
