/* bench/bench_detector_formats.c: the runtime detector on a model with Qwen2.5-3B's widths
** (hidden 2048, intermediate 11008, 16 query and 2 KV heads, vocabulary 151,936; --layers
** layers) from F32, BF16 and Q8_0 files: speed, peak resident memory against the file's tensor
** bytes, and rewards against the F32 file's (docs/export.md "Weight formats and kernels").
** Run by bench/detector.sh, which interleaves these processes with llama.cpp's on the same
** files (bench/ref/llama_bench.mjs).
** usage:
**   bench_detector_formats prepare OUT --tokenizer TOKENIZER.json [--layers L] [--tokens T]
**                          [--pairs N]
**       writes OUT/model (random weights, HF directory), OUT/{f32,bf16,q8_0}.gguf and
**       OUT/seqs.txt (N token sequences of about T tokens, rendered with the template);
**   bench_detector_formats score OUT FILE.gguf REWARDS [--threads N] [--kernels SPEC]
**       scores OUT/seqs.txt (one warm-up first) with FILE.gguf, writes the rewards to REWARDS
**       and prints RESULT lines: tokens/s, ms per layer per pair, peak resident memory (this
**       process: nothing else lives in it), the file's tensor bytes, the declared scratch;
**   bench_detector_formats peak [--threads N]
**       sgemm GFLOP/s (OpenBLAS, n = 1024, as the environment picks its kernels), kernels/'s
**       AVX-512F f32 GEMM (where present) and the BF16 dot-product kernel's (kernels/,
**       vdpbf16ps where present) on the same shape;
**   bench_detector_formats f32 [--rows N] [--rounds R]
**       GFLOP/s of an F32 product y = x · Wᵀ on the 3B's shapes (2048 -> 11008, 11008 -> 2048,
**       2048 -> 2048, N = 320 rows of x) by OpenBLAS's sgemm (as the environment picks its
**       kernels: run it again with OPENBLAS_CORETYPE set to compare OpenBLAS's own) and by
**       kernels/sgemm.c (where the CPU has AVX-512F; outputs split between threads in blocks
**       of 32 as export/detector.c does), with 1 and 2 threads, interleaved over R rounds;
**   bench_detector_formats q8 [--rows N] [--rounds R]
**       GFLOP/s of a Q8_0 matrix product y = x · Wᵀ on the 3B's shapes (2048 -> 11008 and
**       11008 -> 2048, N = 320 rows of x) by each Q8_0 path of the detector, all of its work
**       included (x rounded to BF16 or quantized to Q8_0, W's rows converted a tile at a time,
**       the outputs split between threads as export/detector.c does): BF16 dot products, int8
**       by AVX512-VNNI, int8 by AVX2 (those this CPU has), f32 tiles + sgemm, with 1 and 2
**       threads, interleaved over R rounds; prints each round and the medians. */
#include "bench/bench_words.h"
#include "common/common.h"
#include "export/export.h"
#include "export/write.h"
#include "kernels/kernels.h"
#include "tests/testutil_qwen2.h"
#include "tokenizer/template.h"

#include <cblas.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define E_  2048
#define H_  16
#define HKV 2
#define F_  11008
#define V_  151936

static const char *opt(int argc, char **argv, const char *name, const char *dflt)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], name))
            return argv[i + 1];
    return dflt;
}

static int prepare(const char *out, int argc, char **argv, struct sn_err *err)
{
    const char *tok = opt(argc, argv, "--tokenizer", NULL);
    const int L = atoi(opt(argc, argv, "--layers", "4"));
    const int tokens = atoi(opt(argc, argv, "--tokens", "320"));
    const int pairs = atoi(opt(argc, argv, "--pairs", "3"));
    if (!tok)
        return sn_err_set(err, SN_E_ARG, "prepare: --tokenizer TOKENIZER.json (151,936 ids) "
                          "is required");
    char mdir[1024], path[1100];
    snprintf(mdir, sizeof mdir, "%s/model", out);
    /* std 0.02: a trained model's scale, so the rewards are not dominated by chaos */
    struct sn_test_qwen2 c = {E_, L, H_, HKV, F_, V_, 4096, 1e6, 0.02, 3, tok};
    double t0 = sn_now();
    int rc = sn_test_qwen2_write(&c, mdir, NULL, err);
    static const int types[] = {SN_GGML_F32, SN_GGML_BF16, SN_GGML_Q8_0};
    static const char *const names[] = {"f32", "bf16", "q8_0"};
    for (int i = 0; !rc && i < 3; i++) {
        struct sn_export_params ep = sn_export_default_params();
        ep.base_dir = mdir;
        ep.max_len = 4096;
        ep.type = types[i];
        snprintf(path, sizeof path, "%s/%s.gguf", out, names[i]);
        rc = sn_export_gguf(&ep, path, err);
    }
    if (rc)
        return rc;
    struct sn_tokenizer *tk = NULL;
    snprintf(path, sizeof path, "%s/f32.gguf", out);
    if ((rc = sn_gguf_open_tokenizer(path, &tk, err)))
        return rc;
    snprintf(path, sizeof path, "%s/seqs.txt", out);
    FILE *f = fopen(path, "w");
    struct sn_rng rng;
    sn_rng_seed(&rng, 9);
    for (int i = 0; f && !rc && i < pairs; i++) {
        char *ctx = bench_words(&rng, tokens / 2), *resp = bench_words(&rng, tokens / 4);
        struct sn_prompt pr = {0};
        struct sn_ids ids = {0};
        pr.task = ctx;
        rc = sn_template_encode(tk, &pr, resp, 4096, &ids, NULL, NULL, err);
        for (size_t k = 0; !rc && k < ids.n; k++)
            fprintf(f, "%s%d", k ? " " : "", ids.v[k]);
        fputc('\n', f);
        sn_ids_free(&ids);
        sn_free(ctx);
        sn_free(resp);
    }
    if (!f || fclose(f))
        rc = sn_err_set(err, SN_E_IO, "%s: cannot write", path);
    sn_tokenizer_free(tk);
    if (!rc)
        printf("model: Qwen2 hidden %d, %d layers, %d/%d heads, intermediate %d, vocabulary "
               "%d; wrote and exported f32, bf16, q8_0 in %.0f s\n", E_, L, H_, HKV, F_, V_,
               sn_now() - t0);
    return rc;
}

static int score(const char *out, const char *gguf, const char *rewards, int argc, char **argv,
                 struct sn_err *err)
{
    struct sn_detector_params dp = sn_detector_default_params();
    dp.n_threads = atoi(opt(argc, argv, "--threads", "0"));
    dp.kernels = opt(argc, argv, "--kernels", NULL);
    uint64_t tensor_bytes = 0;
    struct sn_gguf *g = NULL;
    int rc = sn_gguf_open(gguf, &g, err);
    for (size_t i = 0; !rc && i < sn_gguf_n_tensors(g); i++)
        tensor_bytes += sn_gguf_tensor(g, i)->nbytes;
    sn_gguf_close(g);
    struct sn_detector *d = NULL;
    double t0 = sn_now();
    if (rc || (rc = sn_detector_open(gguf, &dp, &d, err)))
        return rc;
    double t_open = sn_now() - t0;
    char path[1100];
    snprintf(path, sizeof path, "%s/seqs.txt", out);
    FILE *f = fopen(path, "r"), *fr = fopen(rewards, "w");
    if (!f || !fr) {
        rc = sn_err_set(err, SN_E_IO, "%s or %s: cannot open", path, rewards);
        goto done;
    }
    char *line = NULL;
    size_t cap = 0;
    double t = 0;
    size_t ntok = 0;
    int n = 0, L = 0;
    while (getline(&line, &cap, f) > 0) {
        struct sn_ids ids = {0};
        for (char *p = line, *end; *p && *p != '\n'; p = end) {
            long v = strtol(p, &end, 10);
            if (end == p)
                break;
            if ((rc = sn_ids_push(&ids, (int32_t)v, err)))
                break;
        }
        float r = 0;
        if (!rc && n == 0)   /* warm-up: page the weights in, start the threads */
            rc = sn_detector_score_ids(d, ids.v, ids.n, &r, NULL, err);
        double a = sn_now();
        if (!rc)
            rc = sn_detector_score_ids(d, ids.v, ids.n, &r, NULL, err);
        t += sn_now() - a;
        ntok += ids.n;
        n++;
        fprintf(fr, "%.9g\n", r);
        sn_ids_free(&ids);
        if (rc)
            break;
    }
    free(line);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    {
        struct sn_gguf *gg = NULL;   /* the layer count, for per-layer figures */
        uint64_t l = 0;
        if (!rc && !(rc = sn_gguf_open(gguf, &gg, err)))
            rc = sn_gguf_get_u64(gg, "qwen2.block_count", true, 0, &l, err);
        sn_gguf_close(gg);
        L = (int)l;
    }
    if (!rc && n > 0) {
        printf("kernels: %s\n", sn_detector_kernels(d));
        printf("%s: opened in %.2f s; %d pairs, %.0f tokens avg: %.1f tokens/s, %.1f ms per "
               "layer per pair; peak RSS %.0f MB for %.0f MB of tensors + %.0f MB scratch\n",
               gguf, t_open, n, (double)ntok / n, (double)ntok / t, 1e3 * t / n / L,
               ru.ru_maxrss / 1024.0, tensor_bytes / 1048576.0,
               sn_detector_scratch_bytes(d) / 1048576.0);
        printf("RESULT ours_single_tok_s=%.3f\n", (double)ntok / t);
        printf("RESULT ours_ms_per_layer=%.3f\n", 1e3 * t / n / L);
        printf("RESULT peak_rss_mb=%.1f\n", ru.ru_maxrss / 1024.0);
        printf("RESULT tensor_mb=%.1f\n", tensor_bytes / 1048576.0);
        printf("RESULT scratch_mb=%.1f\n", sn_detector_scratch_bytes(d) / 1048576.0);
    }
done:
    if (f)
        fclose(f);
    if (fr)
        fclose(fr);
    sn_detector_free(d);
    return rc;
}

static double best_of(int reps, void (*fn)(void *), void *arg)
{
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double a = sn_now();
        fn(arg);
        double t = sn_now() - a;
        best = t < best ? t : best;
    }
    return best;
}

struct peak_args {
    int n;
    float *a, *b, *c;
    uint16_t *ab, *bb;
    bool hw;
};

static void run_sgemm(void *p)
{
    struct peak_args *q = p;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, q->n, q->n, q->n, 1.0f, q->a, q->n,
                q->b, q->n, 0.0f, q->c, q->n);
}

/* fn on j0 and, with 2 threads, on j1 in a second thread (or after j0 where none starts). */
static void run2(void *(*fn)(void *), void *j0, void *j1, int threads)
{
    pthread_t tid;
    bool started = threads > 1 && !pthread_create(&tid, NULL, fn, j1);
    fn(j0);
    if (started)
        pthread_join(tid, NULL);
    else if (threads > 1)
        fn(j1);
}

/* kernels/sgemm.c on `threads` threads, outputs split in blocks of 32 as export/detector.c's
** sgemm() does, each thread with its own scratch. */
struct sg_job {
    const float *x, *W;
    float *y, *scratch;
    size_t ldy, n, in, o0, o1;
};

static void *sg_run(void *p)
{
    const struct sg_job *j = p;
    sn_kern_sgemm(true, j->x, j->W, j->y, j->ldy, j->n, j->in, j->o0, j->o1, false, j->scratch);
    return NULL;
}

static void sg_product(const float *x, const float *W, float *y, size_t n, size_t in, size_t out,
                       int threads, float *scratch)
{
    struct sg_job jobs[2];
    const size_t blocks = (out + 31) / 32;
    threads = threads > 2 ? 2 : threads < 1 ? 1 : threads;
    for (int i = 0; i < threads; i++) {
        size_t a = blocks * (size_t)i / (size_t)threads * 32;
        size_t e = blocks * (size_t)(i + 1) / (size_t)threads * 32;
        jobs[i] = (struct sg_job){x, W, y, scratch + (size_t)i * sn_kern_sgemm_scratch(), out,
                                  n, in, a, e < out ? e : out};
    }
    run2(sg_run, &jobs[0], &jobs[1], threads);
}

struct sg_args {
    struct peak_args *q;
    int threads;
    float *scratch;
};

static void run_ours(void *p)
{
    struct sg_args *g = p;
    sg_product(g->q->a, g->q->b, g->q->c, (size_t)g->q->n, (size_t)g->q->n, (size_t)g->q->n,
               g->threads, g->scratch);
}

static void run_bf16(void *p)   /* one thread: the detector splits outputs among its threads */
{
    struct peak_args *q = p;
    sn_kern_bf16_gemm(q->hw, q->ab, q->bb, q->c, (size_t)q->n, (size_t)q->n, (size_t)q->n, 0,
                      (size_t)q->n, false);
}

static int peak(int argc, char **argv)
{
    const int threads = atoi(opt(argc, argv, "--threads", "1"));
    struct peak_args q = {1024, NULL, NULL, NULL, NULL, NULL, false};
    const size_t nn = (size_t)q.n * q.n;
    q.a = malloc(nn * 4);
    q.b = malloc(nn * 4);
    q.c = malloc(nn * 4);
    q.ab = malloc(nn * 2);
    q.bb = malloc(nn * 2);
    if (!q.a || !q.b || !q.c || !q.ab || !q.bb)
        return 1;
    for (size_t i = 0; i < nn; i++) {
        q.a[i] = (float)(i % 7) * 0.1f;
        q.b[i] = (float)(i % 5) * 0.1f;
    }
    struct sn_kern_cpu cpu;
    sn_kern_cpu_detect(&cpu);
    int isa = sn_kern_isa_best(&cpu);
    sn_kern_to_bf16(isa, q.a, nn, q.ab);
    sn_kern_to_bf16(isa, q.b, nn, q.bb);
    q.hw = sn_kern_bf16_dot_hw(&cpu, isa);
    openblas_set_num_threads(threads);
    const double fl = 2.0 * q.n * q.n * (double)q.n / 1e9;
    const char *ct = getenv("OPENBLAS_CORETYPE");
    printf("sgemm peak (OpenBLAS %s, OPENBLAS_CORETYPE=%s, %d threads, n = 1024): %.1f GFLOP/s\n",
           openblas_get_corename(), ct ? ct : "(unset)", threads, fl / best_of(9, run_sgemm, &q));
    float *scratch = malloc(2 * sn_kern_sgemm_scratch() * sizeof *scratch);
    if (sn_kern_sgemm_hw(&cpu, isa) && scratch) {
        struct sg_args g = {&q, threads > 2 ? 2 : threads, scratch};
        printf("kernels/sgemm.c (avx512f, %d threads, the same n): %.1f GFLOP/s\n", g.threads,
               fl / best_of(9, run_ours, &g));
        g.threads = 1;
        printf("kernels/sgemm.c (1 thread, the same n): %.1f GFLOP/s\n",
               fl / best_of(5, run_ours, &g));
    }
    free(scratch);
    printf("BF16 dot-product kernel (%s, 1 thread, n = 1024): %.1f GFLOP/s\n",
           q.hw ? "vdpbf16ps" : "portable", fl / best_of(q.hw ? 5 : 1, run_bf16, &q));
    openblas_set_num_threads(1);
    printf("sgemm (1 thread, the same n): %.1f GFLOP/s\n", fl / best_of(5, run_sgemm, &q));
    free(q.a);
    free(q.b);
    free(q.c);
    free(q.ab);
    free(q.bb);
    return 0;
}

/* ---- q8: the Q8_0 paths ------------------------------------------------------------------ */

#define Q8_TILE ((size_t)2 << 20)   /* export/detector.c's TILE_FLOATS */
enum { P_BF16, P_VNNI, P_AVX2, P_TILE, P_COUNT };
static const char *const p_names[P_COUNT] = {"BF16 dots (vdpbf16ps)", "int8 (avx512_vnni)",
                                             "int8 (avx2)", "f32 tiles + sgemm"};
static const char *const p_keys[P_COUNT] = {"bf16", "vnni", "avx2", "tile"};

struct q8b {
    int path, isa;
    bool hw;
    size_t in, out, n;
    const uint8_t *W;
    const float *x;
    float *y;
    uint16_t *xb;
    int8_t *xq;
    float *xs;
    int32_t *xc;
};

struct q8job {
    const struct q8b *b;
    size_t o0, o1;
    uint16_t *wb;   /* this thread's tile */
    int8_t *wq;
    float *ws;
};

static void *q8_run(void *arg)
{
    const struct q8job *j = arg;
    const struct q8b *b = j->b;
    const size_t in = b->in, m = j->o1 - j->o0;
    if (!m)
        return NULL;
    if (b->path == P_BF16) {
        sn_kern_rows_to_bf16(b->isa, SN_KERN_Q8_0, b->W, in, j->o0, j->o1, j->wb);
        sn_kern_bf16_gemm(b->hw, b->xb, j->wb, b->y + j->o0, b->out, b->n, in, 0, m, false);
    } else {
        sn_kern_q8_unpack(b->W, in, j->o0, j->o1, j->wq, j->ws);
        sn_kern_q8_gemm(b->isa, b->xq, b->xs, b->xc, j->wq, j->ws, b->y + j->o0, b->out, b->n,
                        in, 0, m, false);
    }
    return NULL;
}

/* One product, as export/detector.c's linear(): x converted once, W a tile of rows at a time,
** each tile's outputs split in blocks of 4 between the threads (at most 2 here). */
static void q8_product(const struct q8b *b, int threads, struct q8job *jobs)
{
    if (b->path == P_TILE) {   /* the tile path: conversion here, the sgemm on its threads */
        size_t rows = Q8_TILE / b->in;
        rows = rows >= b->out ? b->out : rows / 16 * 16;
        float *wt = (float *)(void *)jobs[0].wq;
        openblas_set_num_threads(threads);
        for (size_t r0 = 0; r0 < b->out; r0 += rows) {
            const size_t r1 = r0 + rows < b->out ? r0 + rows : b->out;
            sn_kern_rows_to_f32(b->isa, SN_KERN_Q8_0, b->W, b->in, r0, r1, wt);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)b->n, (int)(r1 - r0),
                        (int)b->in, 1.0f, b->x, (int)b->in, wt, (int)b->in, 0.0f, b->y + r0,
                        (int)b->out);
        }
        return;
    }
    if (b->path == P_BF16)
        sn_kern_to_bf16(b->isa, b->x, b->n * b->in, b->xb);
    else
        sn_kern_q8_quantize(b->x, b->n, b->in, b->xq, b->xs, b->xc);
    size_t rows = Q8_TILE / b->in;
    rows = rows >= b->out ? b->out : rows / 16 * 16;
    for (size_t r0 = 0; r0 < b->out; r0 += rows) {
        const size_t r1 = r0 + rows < b->out ? r0 + rows : b->out, blocks = (r1 - r0 + 3) / 4;
        for (int i = 0; i < threads; i++) {
            size_t a = r0 + blocks * (size_t)i / (size_t)threads * 4;
            size_t e = r0 + blocks * (size_t)(i + 1) / (size_t)threads * 4;
            jobs[i].b = b;
            jobs[i].o0 = a;
            jobs[i].o1 = e < r1 ? e : r1;
        }
        run2(q8_run, &jobs[0], &jobs[1], threads);
    }
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* --rows N (320) and --rounds R (3, at most 32) of the q8 and f32 modes, and this CPU. */
static int bench_args(int argc, char **argv, size_t *n, int *rounds, struct sn_kern_cpu *cpu)
{
    *n = (size_t)atoi(opt(argc, argv, "--rows", "320"));
    *rounds = atoi(opt(argc, argv, "--rounds", "3"));
    sn_kern_cpu_detect(cpu);
    return *n == 0 || *rounds < 1 || *rounds > 32;
}

/* The OpenBLAS kernels this process got and the load average (into load) before a bench. */
static void setup_line(const char *what, size_t n, double load[3])
{
    if (getloadavg(load, 3) < 0)
        load[0] = -1;
    const char *ct = getenv("OPENBLAS_CORETYPE");
    printf("OpenBLAS %s (OPENBLAS_CORETYPE=%s)\n", openblas_get_corename(), ct ? ct : "(unset)");
    printf("%s products, %zu rows of x; load average %.1f %.1f %.1f\n", what, n, load[0],
           load[1], load[2]);
}

static void load_after(void)
{
    double load[3];
    if (getloadavg(load, 3) >= 0)
        printf("load average after: %.1f %.1f %.1f\n", load[0], load[1], load[2]);
}

/* One path's GFLOP/s on one shape (in, out) over the rounds, their median, and its RESULT line
** (RESULT <kind>_gflops_<in>_<out>_t<threads>_<key>=<median>). */
static void report(const char *kind, const size_t shape[2], int th, const char *name, int width,
                   const char *key, const double *gflops, int rounds)
{
    double v[32];
    memcpy(v, gflops, sizeof(double) * (size_t)rounds);
    printf("%5zu -> %5zu, %d thread%s, %-*s GFLOP/s [", shape[0], shape[1], th,
           th > 1 ? "s" : " ", width, name);
    for (int rd = 0; rd < rounds; rd++)
        printf("%s%.1f", rd ? ", " : "", v[rd]);
    qsort(v, (size_t)rounds, sizeof *v, cmp_double);
    printf("] median %.1f\n", v[rounds / 2]);
    printf("RESULT %s_gflops_%zu_%zu_t%d_%s=%.1f\n", kind, shape[0], shape[1], th, key,
           v[rounds / 2]);
}

static int q8bench(int argc, char **argv)
{
    size_t n;
    int rounds;
    struct sn_kern_cpu cpu;
    if (bench_args(argc, argv, &n, &rounds, &cpu))
        return 2;
    const int best = sn_kern_isa_best(&cpu);
    bool have[P_COUNT] = {sn_kern_bf16_dot_hw(&cpu, best),
                          sn_kern_q8_isa(&cpu, SN_KERN_AVX512) == SN_KERN_AVX512,
                          sn_kern_q8_isa(&cpu, SN_KERN_AVX2) == SN_KERN_AVX2, true};
    const size_t shapes[2][2] = {{E_, F_}, {F_, E_}};   /* (in, out) */
    const size_t maxin = F_, maxout = F_;
    uint8_t *W = malloc(maxout * (maxin / 32) * 34);
    float *x = malloc(n * maxin * 4), *y = malloc(n * maxout * 4), *y0 = malloc(n * maxout * 4);
    uint16_t *xb = malloc(n * maxin * 2), *wb = malloc(2 * Q8_TILE * 2);
    int8_t *xq = malloc(n * maxin), *wq = malloc(4 * Q8_TILE);   /* int8 tiles, or one f32 tile */
    float *xs = malloc(n * maxin), *ws = malloc(2 * Q8_TILE);
    int32_t *xc = malloc(n * maxin);
    if (!W || !x || !y || !y0 || !xb || !wb || !xq || !wq || !xs || !ws || !xc)
        return 1;
    struct sn_rng r;
    sn_rng_seed(&r, 7);
    for (size_t bl = 0; bl < maxout * (maxin / 32); bl++) {
        const uint16_t h = sn_f32_to_f16(0.02f / 127.0f * 3.0f);
        memcpy(W + bl * 34, &h, 2);
        for (int j = 0; j < 32; j++)
            W[bl * 34 + 2 + (size_t)j] = (uint8_t)(int8_t)(sn_rng_normal(&r) * 40.0);
    }
    for (size_t i = 0; i < n * maxin; i++)
        x[i] = (float)sn_rng_normal(&r);
    double load[3] = {0};
    setup_line("Q8_0", n, load);
    static double gf[2][2][P_COUNT][32];   /* shape, threads, path, round */
    for (int rd = 0; rd < rounds; rd++)
        for (int s = 0; s < 2; s++)
            for (int th = 1; th <= 2; th++)
                for (int p = 0; p < P_COUNT; p++) {
                    if (!have[p])
                        continue;
                    struct q8b b = {p, p == P_BF16 || p == P_TILE ? best
                                       : p == P_VNNI ? SN_KERN_AVX512 : SN_KERN_AVX2,
                                    p == P_BF16, shapes[s][0], shapes[s][1], n, W, x,
                                    p == P_BF16 ? y0 : y, xb, xq, xs, xc};
                    struct q8job jobs[2] = {{&b, 0, 0, wb, wq, ws},
                                            {&b, 0, 0, wb + Q8_TILE, wq + Q8_TILE,
                                             ws + Q8_TILE / 4}};
                    double t0 = sn_now();
                    q8_product(&b, th, jobs);
                    const double t = sn_now() - t0;
                    gf[s][th - 1][p][rd] = 2.0 * (double)(n * b.in * b.out) / t / 1e9;
                    if (p != P_BF16 && p != P_TILE && have[P_BF16] && rd == 0 && th == 1) {
                        double e = 0, a = 0;   /* int8 against BF16: a sanity figure */
                        for (size_t i = 0; i < n * b.out; i++) {
                            e = fmax(e, fabs((double)y[i] - y0[i]));
                            a = fmax(a, fabs((double)y0[i]));
                        }
                        printf("  %zu -> %zu, %s: max |y - y_bf16| = %.2e of max |y| %.2e\n",
                               b.in, b.out, p_names[p], e, a);
                    }
                }
    for (int s = 0; s < 2; s++)
        for (int th = 1; th <= 2; th++)
            for (int p = 0; p < P_COUNT; p++) {
                if (!have[p])
                    continue;
                report("q8", shapes[s], th, p_names[p], 22, p_keys[p], gf[s][th - 1][p], rounds);
            }
    load_after();
    free(W);
    free(x);
    free(y);
    free(y0);
    free(xb);
    free(wb);
    free(xq);
    free(wq);
    free(xs);
    free(ws);
    free(xc);
    return 0;
}

/* ---- f32: the F32 products ------------------------------------------------------------- */

static int f32bench(int argc, char **argv)
{
    const size_t shapes[3][2] = {{E_, F_}, {F_, E_}, {E_, E_}};   /* (in, out) */
    struct sn_kern_cpu cpu;
    size_t n;
    int rounds;
    if (bench_args(argc, argv, &n, &rounds, &cpu))
        return 2;
    const bool ours = sn_kern_sgemm_hw(&cpu, sn_kern_isa_best(&cpu));
    float *W = malloc((size_t)F_ * E_ * 4), *x = malloc(n * F_ * 4);
    float *y = malloc(n * F_ * 4), *y0 = malloc(n * F_ * 4);
    float *scratch = malloc(2 * sn_kern_sgemm_scratch() * sizeof *scratch);
    if (!W || !x || !y || !y0 || !scratch)
        return 1;
    struct sn_rng r;
    sn_rng_seed(&r, 7);
    for (size_t i = 0; i < (size_t)F_ * E_; i++)
        W[i] = (float)(sn_rng_normal(&r) * 0.02);
    for (size_t i = 0; i < n * F_; i++)
        x[i] = (float)sn_rng_normal(&r);
    double load[3] = {0};
    setup_line("F32", n, load);
    static const char *const names[2] = {"OpenBLAS sgemm", "kernels/sgemm.c"};
    static const char *const keys[2] = {"blas", "ours"};
    static double gf[3][2][2][32];   /* shape, threads, path, round */
    for (int rd = 0; rd < rounds; rd++)
        for (int s = 0; s < 3; s++)
            for (int th = 1; th <= 2; th++)
                for (int p = 0; p < 1 + ours; p++) {
                    const size_t in = shapes[s][0], out = shapes[s][1];
                    double t0 = sn_now();
                    if (p == 0) {
                        openblas_set_num_threads(th);
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)out,
                                    (int)in, 1.0f, x, (int)in, W, (int)in, 0.0f, y0, (int)out);
                    } else {
                        sg_product(x, W, y, n, in, out, th, scratch);
                    }
                    const double t = sn_now() - t0;
                    gf[s][th - 1][p][rd] = 2.0 * (double)(n * in * out) / t / 1e9;
                    if (p == 1 && rd == 0 && th == 1) {
                        double e = 0, a = 0;   /* against OpenBLAS: a sanity figure */
                        for (size_t i = 0; i < n * out; i++) {
                            e = fmax(e, fabs((double)y[i] - y0[i]));
                            a = fmax(a, fabs((double)y0[i]));
                        }
                        printf("  %zu -> %zu: max |y - y_blas| = %.2e of max |y| %.2e\n", in,
                               out, e, a);
                    }
                }
    for (int i = 0; i < 3 * 2 * (1 + ours); i++) {   /* shape, threads, path */
        const int s = i / (2 * (1 + ours)), th = 1 + i / (1 + ours) % 2, p = i % (1 + ours);
        report("f32", shapes[s], th, names[p], 16, keys[p], gf[s][th - 1][p], rounds);
    }
    load_after();
    free(W);
    free(x);
    free(y);
    free(y0);
    free(scratch);
    return 0;
}

int main(int argc, char **argv)
{
    struct sn_err err = {0};
    int rc;
    if (argc >= 3 && !strcmp(argv[1], "prepare"))
        rc = prepare(argv[2], argc, argv, &err);
    else if (argc >= 5 && !strcmp(argv[1], "score"))
        rc = score(argv[2], argv[3], argv[4], argc, argv, &err);
    else if (argc >= 2 && !strcmp(argv[1], "peak"))
        return peak(argc, argv);
    else if (argc >= 2 && !strcmp(argv[1], "q8"))
        return q8bench(argc, argv);
    else if (argc >= 2 && !strcmp(argv[1], "f32"))
        return f32bench(argc, argv);
    else {
        fprintf(stderr, "usage: bench_detector_formats prepare OUT --tokenizer FILE [--layers L] "
                        "[--tokens T] [--pairs N] | score OUT FILE.gguf REWARDS [--threads N] "
                        "[--kernels SPEC] | peak [--threads N] | q8 [--rows N] [--rounds R] | f32 "
                        "[--rows N] [--rounds R]\n");
        return 2;
    }
    if (rc)
        fprintf(stderr, "bench_detector_formats: %s\n", err.msg);
    return rc ? 1 : 0;
}
