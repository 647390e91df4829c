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
**       sgemm GFLOP/s (OpenBLAS, n = 1024, as the environment picks its kernels) and the BF16
**       dot-product kernel's (kernels/, vdpbf16ps where present) on the same shape. */
#include "bench/bench_words.h"
#include "common/common.h"
#include "export/export.h"
#include "export/write.h"
#include "kernels/kernels.h"
#include "tests/testutil_qwen2.h"
#include "tokenizer/template.h"

#include <cblas.h>
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
    else {
        fprintf(stderr, "usage: bench_detector_formats prepare OUT --tokenizer FILE [--layers L] "
                        "[--tokens T] [--pairs N] | score OUT FILE.gguf REWARDS [--threads N] "
                        "[--kernels SPEC] | peak [--threads N]\n");
        return 2;
    }
    if (rc)
        fprintf(stderr, "bench_detector_formats: %s\n", err.msg);
    return rc ? 1 : 0;
}
