/* tests/testutil_openai.h: start, query and stop tests/servers/fake_openai.py from a C test
** (static helpers, included by tests/test_llm_openai_http.c and tests/test_data_openai_*.c). */
#ifndef SN_TESTUTIL_OPENAI_H
#define SN_TESTUTIL_OPENAI_H
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "common/common.h"

struct fake_server {
    pid_t pid;
    int   port;
    char  dir[512];
    char  log[600];
};

/* Starts the fake server (lifetime bounded by `lifetime_s`; answering 503 "Loading model" for
** its first `loading_s` seconds), waits for its port. 0 on success. */
static inline int fake_start_loading(struct fake_server *s, const char *dir, double latency_ms,
                                     double lifetime_s, double loading_s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    snprintf(s->log, sizeof s->log, "%s/requests.jsonl", dir);
    char port_file[600], script[600], lat[32], life[32], load[32];
    snprintf(port_file, sizeof port_file, "%s/port", dir);
    unlink(port_file);
    const char *src = getenv("SENTINEL_SRC");
    snprintf(script, sizeof script, "%s/tests/servers/fake_openai.py", src ? src : ".");
    snprintf(lat, sizeof lat, "%g", latency_ms);
    snprintf(life, sizeof life, "%g", lifetime_s);
    snprintf(load, sizeof load, "%g", loading_s);
    /* loopback only: never through a proxy */
    setenv("NO_PROXY", "127.0.0.1,localhost", 1);
    setenv("no_proxy", "127.0.0.1,localhost", 1);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0)
            dup2(fd, 1);
        const char *py = getenv("SENTINEL_PYTHON"); /* tests/testutil.h SN_TEST_PY */
        if (!py || !*py)
            py = "/usr/bin/python3";
        execl(py, "python3", script, "--port-file", port_file, "--log", s->log,
              "--latency-ms", lat, "--lifetime", life, "--loading-s", load, (char *)NULL);
        _exit(127);
    }
    s->pid = pid;
    for (int i = 0; i < 1200; i++) { /* up to 60 s: a loaded machine may start python slowly */
        FILE *f = fopen(port_file, "r");
        if (f) {
            int ok = fscanf(f, "%d", &s->port) == 1;
            fclose(f);
            if (ok && s->port > 0)
                return 0;
        }
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            s->pid = 0;
            return -1;
        }
        usleep(50000);
    }
    return -1;
}

static inline int fake_start(struct fake_server *s, const char *dir, double latency_ms,
                             double lifetime_s)
{
    return fake_start_loading(s, dir, latency_ms, lifetime_s, 0);
}

static inline void fake_stop(struct fake_server *s)
{
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        waitpid(s->pid, NULL, 0);
        s->pid = 0;
    }
}

static inline size_t fake_sink(char *p, size_t size, size_t n, void *ud)
{
    struct sn_err e = { 0 };
    sn_buf_append(ud, p, size * n, &e);
    return size * n;
}

/* GET or POST (post != 0) a control path; the body as JSON (caller cJSON_Delete) or NULL. */
static inline cJSON *fake_call(const struct fake_server *s, const char *path, int post)
{
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", s->port, path);
    struct sn_buf b = { .max = 1 << 20 };
    CURL *c = curl_easy_init();
    if (!c)
        return NULL;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fake_sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 60000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (post)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
    CURLcode cc = curl_easy_perform(c);
    curl_easy_cleanup(c);
    cJSON *j = cc == CURLE_OK && b.data ? cJSON_Parse(b.data) : NULL;
    sn_buf_free(&b);
    return j;
}

/* A number from /stats ("hits", "max_concurrent", "current"); -1 on failure. */
static inline int fake_stat(const struct fake_server *s, const char *field)
{
    cJSON *j = fake_call(s, "/stats", 0);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, field);
    int r = cJSON_IsNumber(v) ? v->valueint : -1;
    cJSON_Delete(j);
    return r;
}

static inline void fake_reset(const struct fake_server *s)
{
    cJSON_Delete(fake_call(s, "/reset", 1));
}

#endif
