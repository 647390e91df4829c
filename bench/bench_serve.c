/* bench/bench_serve.c: `sentinel serve` throughput next to in-process scoring (serve/serve.h;
** docs/agents.md "Throughput"), run by bench/serve.sh.
**
** The model: bench_detector's (a random Qwen2 with Qwen2.5-0.5B's layer shapes, --layers layers,
** the demo tokenizer), exported to f32 GGUF. A request: one context and 5 responses of about
** --tokens tokens each (POST /v1/score {"context", "responses"}), the shape of one debate round.
** Both sides use the same total threads: --clients C clients and C scorers of one OpenBLAS
** thread each:
**   in-process  C threads, each with its own detector, call sn_detector_score_shared;
**   server      C threads, each a libcurl client on loopback (keep-alive), against one server
**               in this process with C workers of one thread each.
** Each side scores --requests requests in all (the same bodies), after one warm-up request per
** client. Reports requests/s of both, their ratio (target >= 0.90), and the latency one client
** alone sees in each (the HTTP overhead per request).
** usage: bench_serve OUT_DIR [--clients C] [--layers L] [--tokens T] [--requests N] */
#include "bench/bench_words.h"
#include "common/common.h"
#include "export/export.h"
#include "export/write.h"
#include "serve/serve.h"
#include "tests/testutil_qwen2.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define E_  896
#define H_  14
#define HKV 2
#define F_  4864
#define N_RESP 5

static int n_requests = 32, n_clients = 4, port;
static const char *gguf;
static char *ctx_text;
static char *resp_text[N_RESP];
static char *body;            /* the request as JSON */
static int next_req;          /* requests handed out so far */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t ready; /* every client warm, and the clock started */
static int failures;

static bool take(void)
{
    pthread_mutex_lock(&mu);
    bool ok = next_req < n_requests;
    next_req += ok;
    pthread_mutex_unlock(&mu);
    return ok;
}

static void *inproc_main(void *arg)
{
    (void)arg;
    struct sn_err err = {0};
    struct sn_detector *d = NULL;
    struct sn_detector_params dp = sn_detector_default_params();
    dp.n_threads = 1;
    float sc[N_RESP];
    if (sn_detector_open(gguf, &dp, &d, &err) ||
        sn_detector_score_shared(d, ctx_text, (const char *const *)resp_text, N_RESP, sc, &err)) {
        fprintf(stderr, "bench_serve: %s\n", err.msg);
        failures++;
        pthread_barrier_wait(&ready);
        return NULL;
    }
    pthread_barrier_wait(&ready);
    while (take())
        if (sn_detector_score_shared(d, ctx_text, (const char *const *)resp_text, N_RESP, sc,
                                     &err))
            failures++;
    sn_detector_free(d);
    return NULL;
}

static size_t sink(char *p, size_t size, size_t n, void *user)
{
    (void)p;
    (void)user;
    return size * n;
}

static CURL *client(char *url)
{
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    return c;
}

static bool post(CURL *c)
{
    long st = 0;
    if (curl_easy_perform(c) != CURLE_OK)
        return false;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
    return st == 200;
}

static void *http_main(void *arg)
{
    (void)arg;
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/score", port);
    CURL *c = client(url);
    if (!post(c)) /* warm-up (and the keep-alive connection) */
        failures++;
    pthread_barrier_wait(&ready);
    while (take())
        if (!post(c))
            failures++;
    curl_easy_cleanup(c);
    return NULL;
}

/* requests/s of n_clients threads running fn over n_requests requests, timed from the moment
** every client is warm (its detector open or its connection made, one request scored) */
static double run(void *(*fn)(void *))
{
    pthread_t th[256];
    next_req = 0;
    pthread_barrier_init(&ready, NULL, (unsigned)n_clients + 1);
    for (int i = 0; i < n_clients; i++)
        pthread_create(&th[i], NULL, fn, NULL);
    pthread_barrier_wait(&ready);
    double t0 = sn_now();
    for (int i = 0; i < n_clients; i++)
        pthread_join(th[i], NULL);
    double t = sn_now() - t0;
    pthread_barrier_destroy(&ready);
    return n_requests / t;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_serve OUT_DIR [--clients C] [--layers L] [--tokens T] "
                        "[--requests N]\n");
        return 2;
    }
    const char *out = argv[1];
    int L = 8, tokens = 200;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--clients")) n_clients = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--layers")) L = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--tokens")) tokens = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--requests")) n_requests = atoi(argv[i + 1]);
    }
    if (n_clients < 1 || n_clients > 256 || n_requests < 1) {
        fprintf(stderr, "bench_serve: --clients in [1, 256], --requests >= 1\n");
        return 2;
    }
    curl_global_init(CURL_GLOBAL_ALL);
    struct sn_err err = {0};
    char mdir[1024], gg[1024];
    snprintf(mdir, sizeof mdir, "%s/model", out);
    snprintf(gg, sizeof gg, "%s/detector.gguf", out);
    gguf = gg;
    struct sn_test_qwen2 c = {E_, L, H_, HKV, F_, SN_TOKENIZER_DEMO_VOCAB, 4096, 1e6, 0.03, 3,
                              NULL};
    if (sn_test_qwen2_write(&c, mdir, NULL, &err))
        goto fail;
    struct sn_export_params ep = sn_export_default_params();
    ep.base_dir = mdir;
    ep.max_len = 4096;
    if (sn_export_gguf(&ep, gg, &err))
        goto fail;
    /* texts of about `tokens` tokens: words added until the tokenizer says so */
    struct sn_detector *d = NULL;
    struct sn_detector_params dp = sn_detector_default_params();
    dp.n_threads = 1;
    if (sn_detector_open(gg, &dp, &d, &err))
        goto fail;
    struct sn_rng rng;
    sn_rng_seed(&rng, 9);
    struct sn_ids ids = {0};
    int n_words = tokens;
    for (int tries = 0; tries < 8; tries++) {
        char *t = bench_words(&rng, n_words);
        ids.n = 0;
        if (sn_tokenizer_encode(sn_detector_tokenizer(d), t, strlen(t), &ids, &err))
            goto fail;
        sn_free(t);
        n_words = (int)((double)n_words * tokens / (double)(ids.n ? ids.n : 1) + 0.5);
    }
    ctx_text = bench_words(&rng, n_words);
    size_t resp_tokens = 0;
    for (int i = 0; i < N_RESP; i++) {
        resp_text[i] = bench_words(&rng, n_words);
        ids.n = 0;
        sn_tokenizer_encode(sn_detector_tokenizer(d), resp_text[i], strlen(resp_text[i]), &ids,
                            &err);
        resp_tokens += ids.n;
    }
    sn_ids_free(&ids);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "context", ctx_text);
    cJSON *arr = cJSON_AddArrayToObject(o, "responses");
    for (int i = 0; i < N_RESP; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateString(resp_text[i]));
    body = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    printf("model: Qwen2 hidden %d, %d layers; request: one context and %d responses of %.0f "
           "tokens on average (%zu bytes of JSON); %d clients, %d requests\n", E_, L, N_RESP,
           (double)resp_tokens / N_RESP, strlen(body), n_clients, n_requests);

    /* one client alone: the latency of a request in process and over HTTP */
    float sc[N_RESP];
    double t_in = 1e9;
    for (int r = 0; r < 5; r++) {
        double t0 = sn_now();
        if (sn_detector_score_shared(d, ctx_text, (const char *const *)resp_text, N_RESP, sc,
                                     &err))
            goto fail;
        double t = sn_now() - t0;
        t_in = t < t_in ? t : t_in;
    }
    sn_detector_free(d);

    double rps_in = run(inproc_main);

    struct sn_serve_params sp = sn_serve_default_params();
    sp.port = 0;
    sp.n_workers = n_clients;
    sp.n_threads = 1;
    sp.queue_max = 4 * n_clients;
    sp.max_items = N_RESP;
    sp.max_connections = 4 * n_clients + 4;
    struct sn_serve *s = NULL;
    if (sn_serve_start(gg, &sp, &s, &err) || sn_serve_wait_ready(s, &err))
        goto fail;
    port = sn_serve_port(s);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/score", port);
    CURL *one = client(url);
    double t_http = 1e9;
    for (int r = 0; r < 6; r++) {
        double t0 = sn_now();
        if (!post(one)) {
            sn_err_set(&err, SN_E_BACKEND, "a request to the server failed");
            goto fail;
        }
        double t = sn_now() - t0;
        if (r > 0) /* the first opens the connection */
            t_http = t < t_http ? t : t_http;
    }
    curl_easy_cleanup(one);
    double rps_http = run(http_main);
    sn_serve_stop(s);
    if (failures) {
        sn_err_set(&err, SN_E_BACKEND, "%d requests failed", failures);
        goto fail;
    }
    printf("in-process: %.2f requests/s (%d threads x 1 OpenBLAS thread)\n", rps_in, n_clients);
    printf("server:     %.2f requests/s (%d clients, %d workers x 1 OpenBLAS thread)\n",
           rps_http, n_clients, n_clients);
    printf("one client alone: %.1f ms in process, %.1f ms over HTTP (%.2f ms added)\n",
           1e3 * t_in, 1e3 * t_http, 1e3 * (t_http - t_in));
    printf("RESULT serve_over_inprocess=%.3f\n", rps_http / rps_in);
    printf("RESULT added_latency_ms=%.3f\n", 1e3 * (t_http - t_in));
    curl_global_cleanup();
    return 0;
fail:
    fprintf(stderr, "bench_serve: %s\n", err.msg);
    return 1;
}
