/* bench/bench_simulate_openai.c: throughput and memory of the `openai` backend
** (llm/openai.c) against an endpoint that answers after a fixed latency
** (tests/servers/fake_openai.py --latency-ms 100; bench/simulate_openai.sh starts it).
**
**   bench_simulate_openai --base-url URL [--n 1280] [--concurrency 64] [--callers 128]
**                         [--latency-ms 100]
**
** `callers` threads call sn_llm_complete() (distinct requests, cache off) until n replies are
** in. With every reply taking L seconds, no client can beat concurrency / L requests per
** second: the figure reported is achieved / that bound (issue 6 target: >= 0.9 at 64, 100 ms).
** Memory per in-flight request: the peak resident set while `concurrency` requests are in
** flight, minus the resident set just before the first request (backend open, caller threads
** started), divided by concurrency. It includes everything the client holds for a request in
** flight: the curl easy handle and its connection (socket buffers are kernel memory and do
** not count), the request body, the reply buffer and the caller's job. One warm-up wave is
** not timed but is inside the memory delta. With --cache-dir every reply is also written to
** the response cache (one fsync'd file each), which shows what the cache costs at this rate;
** run it on an empty directory, or every request is a hit. */
#include <inttypes.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "llm/llm.h"

struct shared {
    struct sn_llm_backend *b;
    int      n_total;
    int      base;     /* request i sends text number base + i (distinct across runs) */
    int      next;     /* atomic */
    int      n_failed; /* atomic */
    uint64_t prompt_tokens;
    pthread_barrier_t go;
    char     first_err[512];
    pthread_mutex_t lock;
};

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, res = 0;
    if (!f)
        return -1;
    if (fscanf(f, "%ld %ld", &pages, &res) != 2)
        res = -1;
    fclose(f);
    return res < 0 ? -1 : res * (sysconf(_SC_PAGESIZE) / 1024);
}

static void *caller(void *arg)
{
    struct shared *s = arg;
    pthread_barrier_wait(&s->go);
    for (;;) {
        int i = __atomic_fetch_add(&s->next, 1, __ATOMIC_RELAXED);
        if (i >= s->n_total)
            break;
        char user[200];
        int k = s->base + i;
        snprintf(user, sizeof user, "Benchmark request %d: what is %d + %d? Answer with a number.",
                 k, k, 2 * k + 1);
        struct sn_chat_msg m[2] = { { "system", "You are agent 3 of 5 in a debate." },
                                    { "user", user } };
        struct sn_llm_request req = { .messages = m, .n_messages = 2, .temperature = 0.7,
                                      .top_p = -1, .max_tokens = 256, .has_seed = true,
                                      .seed = k };
        struct sn_llm_reply r;
        struct sn_err err = { 0 };
        if (sn_llm_complete(s->b, &req, &r, &err) != SN_OK) {
            __atomic_fetch_add(&s->n_failed, 1, __ATOMIC_RELAXED);
            pthread_mutex_lock(&s->lock);
            if (!s->first_err[0])
                snprintf(s->first_err, sizeof s->first_err, "%s", err.msg);
            pthread_mutex_unlock(&s->lock);
            continue;
        }
        sn_llm_reply_free(&r);
    }
    return NULL;
}

struct sampler {
    int  stop; /* atomic */
    long peak_kib;
};

static void *sample(void *arg)
{
    struct sampler *s = arg;
    while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
        long r = rss_kib();
        if (r > s->peak_kib)
            s->peak_kib = r;
        usleep(2000);
    }
    return NULL;
}

/* Runs n requests with `callers` threads; returns the wall time of the run. */
static double run(struct sn_llm_backend *b, int base, int n, int callers, int *n_failed,
                  char *first_err, struct sampler *smp, long *rss_parked)
{
    struct shared s = { .b = b, .n_total = n, .base = base };
    pthread_mutex_init(&s.lock, NULL);
    pthread_barrier_init(&s.go, NULL, (unsigned)callers + 1);
    pthread_t *t = calloc((size_t)callers, sizeof *t);
    for (int i = 0; i < callers; i++)
        pthread_create(&t[i], NULL, caller, &s);
    usleep(50000); /* callers parked at the barrier */
    *rss_parked = rss_kib();
    smp->peak_kib = *rss_parked;
    __atomic_store_n(&smp->stop, 0, __ATOMIC_RELEASE);
    pthread_t st;
    pthread_create(&st, NULL, sample, smp);
    double t0 = sn_now();
    pthread_barrier_wait(&s.go);
    for (int i = 0; i < callers; i++)
        pthread_join(t[i], NULL);
    double dt = sn_now() - t0;
    __atomic_store_n(&smp->stop, 1, __ATOMIC_RELEASE);
    pthread_join(st, NULL);
    free(t);
    pthread_barrier_destroy(&s.go);
    pthread_mutex_destroy(&s.lock);
    *n_failed = s.n_failed;
    if (s.first_err[0])
        snprintf(first_err, 512, "%s", s.first_err);
    return dt;
}

int main(int argc, char **argv)
{
    const char *url = NULL, *cache_dir = NULL;
    bool fsync_cache = true;
    int n = 1280, conc = 64, callers = 0;
    double latency_ms = 100;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--base-url") && i + 1 < argc)
            url = argv[++i];
        else if (!strcmp(argv[i], "--n") && i + 1 < argc)
            n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--concurrency") && i + 1 < argc)
            conc = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--callers") && i + 1 < argc)
            callers = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cache-dir") && i + 1 < argc)
            cache_dir = argv[++i];
        else if (!strcmp(argv[i], "--no-fsync"))
            fsync_cache = false;
        else if (!strcmp(argv[i], "--latency-ms") && i + 1 < argc)
            latency_ms = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: %s --base-url URL [--n N] [--concurrency C] [--callers T] "
                    "[--latency-ms L] [--cache-dir DIR [--no-fsync]]\n", argv[0]);
            return 2;
        }
    }
    if (!url || n < 1 || conc < 1 || latency_ms <= 0) {
        fprintf(stderr, "bench_simulate_openai: --base-url is required (n, concurrency, "
                "latency > 0)\n");
        return 2;
    }
    if (callers <= 0)
        callers = 2 * conc;

    char cfg[1024];
    if (cache_dir)
        snprintf(cfg, sizeof cfg, "{\"kind\":\"openai\",\"base_url\":\"%s\",\"model\":"
                 "\"bench\",\"concurrency\":%d,\"cache_dir\":\"%s\",\"cache_fsync\":%s,"
                 "\"timeout_s\":30}", url, conc, cache_dir, fsync_cache ? "true" : "false");
    else
        snprintf(cfg, sizeof cfg, "{\"kind\":\"openai\",\"base_url\":\"%s\",\"model\":"
                 "\"bench\",\"concurrency\":%d,\"cache\":false,\"timeout_s\":30}", url, conc);
    cJSON *j = cJSON_Parse(cfg);
    struct sn_llm_backend *b = NULL;
    struct sn_err err = { 0 };
    if (sn_llm_backend_open(j, &b, &err) != SN_OK) {
        fprintf(stderr, "bench_simulate_openai: %s\n", err.msg);
        cJSON_Delete(j);
        return 1;
    }
    cJSON_Delete(j);

    char first_err[512] = "";
    int failed = 0;
    struct sampler smp = { 0 };
    long rss_cold, rss_warm;
    /* warm-up: one wave of `conc` callers on a fresh backend; its peak over the parked
    ** baseline is what `conc` in-flight requests cost, easy handles and connections included */
    run(b, 1 << 24, conc, conc, &failed, first_err, &smp, &rss_cold);
    long peak_cold = smp.peak_kib;
    double dt = run(b, 0, n, callers, &failed, first_err, &smp, &rss_warm);
    long peak_warm = smp.peak_kib;
    struct sn_llm_stats st = sn_llm_backend_stats(b);
    sn_llm_backend_close(b);

    double rps = (n - failed) / dt;
    double ideal = conc / (latency_ms / 1000.0);
    double per_req = (double)(peak_cold - rss_cold) / conc;
    printf("openai backend: %d requests, concurrency %d, %d caller threads, server latency "
           "%.0f ms, cache %s%s\n", n, conc, callers, latency_ms, cache_dir ? cache_dir : "off",
           cache_dir && !fsync_cache ? " (no fsync)" : "");
    printf("  cache hits %" PRIu64 "\n", st.cache_hits);
    printf("  wall %.3f s, %.1f requests/s, ideal concurrency/latency %.1f/s, ratio %.3f "
           "(target >= 0.9)\n", dt, rps, ideal, rps / ideal);
    printf("  failed %d, retries %" PRIu64 "%s%s\n", failed, st.retries,
           first_err[0] ? ", first error: " : "", first_err);
    printf("  memory: RSS %ld KiB with %d callers parked, peak %ld KiB with %d in flight "
           "(first wave): %.1f KiB per in-flight request\n", rss_cold, conc, peak_cold, conc,
           per_req);
    printf("  steady state: RSS %ld KiB with %d callers parked, peak %ld KiB during the run\n",
           rss_warm, callers, peak_warm);
    printf("{\"bench\":\"simulate_openai\",\"n\":%d,\"concurrency\":%d,\"latency_ms\":%.0f,"
           "\"seconds\":%.4f,\"rps\":%.2f,\"ideal_rps\":%.2f,\"ratio\":%.4f,\"failed\":%d,"
           "\"kib_per_inflight\":%.1f}\n", n, conc, latency_ms, dt, rps, ideal, rps / ideal,
           failed, per_req);
    return failed ? 1 : 0;
}
