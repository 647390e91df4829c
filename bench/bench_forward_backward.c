/* bench/bench_forward_backward.c: training-step throughput of the reward model (issue 5,
** "Benchmarks"): forward + backward of R over a batch with LoRA on all seven projections, as
** tokens/s and achieved GFLOP/s, plus a forward-phase breakdown (projections, attention,
** norms, other) and peak RSS. bench/forward_backward.sh runs it next to the PyTorch eager
** baseline (bench/ref/forward_backward_ref.py) and prints ratios.
**
** usage: bench_forward_backward [--config tiny|100m] [--seq T] [--batch B] [--rank R]
**                               [--iters N] [--warmup N] [--threads N] [--checkpoint]
** Output: key=value lines. FLOPs counted (per step, matmuls only; base weights are frozen so
** backward needs input gradients only, LoRA needs both):
**   proj  = 2·B·T·Σ in·out           fwd, and the same again in backward (dX)
**   lora  = 2·B·T·r·Σ (in + out)     fwd, twice that in backward (dX, dA/dB)
**   attn  = 4·B·T²·Hq·Dh per layer   fwd (QKᵀ, PV), twice that in backward
**   total = 2·proj + 3·lora + 3·attn */
#include "train/train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static double peak_rss_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

int main(int argc, char **argv)
{
    const char *cfg_name = "tiny";
    int64_t T = 512, B = 8;
    int rank = 16, iters = 5, warmup = 1, threads = 0;
    bool ckpt = false, default_malloc = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--config") && v)
            cfg_name = argv[++i];
        else if (!strcmp(a, "--seq") && v)
            T = atoll(argv[++i]);
        else if (!strcmp(a, "--batch") && v)
            B = atoll(argv[++i]);
        else if (!strcmp(a, "--rank") && v)
            rank = atoi(argv[++i]);
        else if (!strcmp(a, "--iters") && v)
            iters = atoi(argv[++i]);
        else if (!strcmp(a, "--warmup") && v)
            warmup = atoi(argv[++i]);
        else if (!strcmp(a, "--threads") && v)
            threads = atoi(argv[++i]);
        else if (!strcmp(a, "--checkpoint"))
            ckpt = true;
        else if (!strcmp(a, "--default-malloc"))
            default_malloc = true; /* glibc's defaults, to measure what the tuning buys */
        else {
            fprintf(stderr, "bench_forward_backward: unknown argument '%s'\n", a);
            return 2;
        }
    }
    struct sn_model_config c = sn_model_config_tiny(512);
    if (!strcmp(cfg_name, "100m")) {
        c.num_hidden_layers = 8;
        c.hidden_size = 768;
        c.num_attention_heads = 12;
        c.num_key_value_heads = 4;
        c.intermediate_size = 2048;
        c.vocab_size = 32000;
    } else if (strcmp(cfg_name, "tiny")) {
        fprintf(stderr, "bench_forward_backward: --config tiny|100m\n");
        return 2;
    }
    /* as sentinel-torch does at start (common.h: sn_tune_host_allocator) */
    bool tuned = !default_malloc && sn_tune_host_allocator((size_t)1 << 30);
    printf("host_allocator=%s\n", tuned ? "tuned" : "default");
    if (threads > 0)
        sn_aten_set_num_threads(threads);
    struct sn_err err = {0};
    struct sn_model_params p = sn_model_default_params();
    p.seed = 1;
    p.grad_checkpoint = ckpt;
    struct sn_model *m = NULL;
    if (sn_model_create(&c, &p, &m, &err)) {
        fprintf(stderr, "bench_forward_backward: %s\n", err.msg);
        return 1;
    }
    struct sn_lora_config lc = sn_lora_default_config();
    lc.r = rank;
    lc.alpha = 2.0 * rank;
    lc.dropout = 0.0;
    lc.targets = SN_LORA_ALL_TARGETS;
    sn_model_lora_attach(m, &lc, &err);
    sn_model_set_training(m, true);
    struct sn_param *ps = NULL;
    size_t np = 0;
    sn_model_trainable_params(m, &ps, &np, &err);

    int32_t *ids = malloc((size_t)(B * T) * sizeof *ids);
    struct sn_rng rng;
    sn_rng_seed(&rng, 9);
    for (int64_t i = 0; i < B * T; i++)
        ids[i] = (int32_t)sn_rng_below(&rng, (uint64_t)c.vocab_size);
    struct sn_model_batch b = {ids, NULL, B, T};

    /* FLOPs per step (see the header comment) */
    int64_t D = c.hidden_size, Dh = sn_model_config_head_dim(&c);
    double proj_io = 0, lora_io = 0;
    for (int t = 0; t < SN_LORA_TARGET_COUNT; t++) {
        int64_t of = 0, inf = 0;
        int64_t q = c.num_attention_heads * Dh, kv = c.num_key_value_heads * Dh;
        int64_t I = c.intermediate_size;
        switch (t) {
        case SN_LORA_Q_PROJ: of = q, inf = D; break;
        case SN_LORA_K_PROJ:
        case SN_LORA_V_PROJ: of = kv, inf = D; break;
        case SN_LORA_O_PROJ: of = D, inf = q; break;
        case SN_LORA_DOWN_PROJ: of = D, inf = I; break;
        default: of = I, inf = D; break;
        }
        proj_io += (double)of * inf;
        lora_io += (double)rank * (of + inf);
    }
    double L = (double)c.num_hidden_layers, BT = (double)(B * T);
    double proj = 2 * BT * proj_io * L, lora = 2 * BT * lora_io * L;
    double attn = 4.0 * B * (double)T * T * c.num_attention_heads * Dh * L;
    double flops = 2 * proj + 3 * lora + 3 * attn;

    struct sn_model_profile prof;
    memset(&prof, 0, sizeof prof);
    double t_total = 0, t_fwd = 0, loss_sum = 0;
    for (int it = 0; it < warmup + iters; it++) {
        bool timed = it >= warmup;
        sn_model_set_profile(m, timed ? &prof : NULL);
        for (size_t i = 0; i < np; i++)
            sn_aten_zero_grad(ps[i].t);
        double t0 = sn_now();
        struct sn_tensor *r = NULL, *s = NULL;
        int rc = sn_model_forward(m, &b, &r, NULL, &err);
        if (!rc)
            rc = sn_aten_mean_all(r, &s, &err); /* a scalar to backpropagate */
        double t1 = sn_now();
        if (!rc)
            rc = sn_aten_backward(s, NULL, false, &err);
        double t2 = sn_now();
        sn_model_release_forward_state(m);
        if (rc) {
            fprintf(stderr, "bench_forward_backward: %s\n", err.msg);
            return 1;
        }
        double v = 0;
        sn_aten_item_f64(s, &v, &err);
        loss_sum += v;
        sn_tensor_free(r);
        sn_tensor_free(s);
        if (timed) {
            t_total += t2 - t0;
            t_fwd += t1 - t0;
        }
    }
    sn_model_set_profile(m, NULL);
    double step = t_total / iters, fwd = t_fwd / iters;
    char blas[512];
    sn_aten_blas_library(blas, sizeof blas);
    printf("impl=sentinel\nconfig=%s\nlayers=%lld\nhidden=%lld\nseq=%lld\nbatch=%lld\nrank=%d\n"
           "threads=%d\ncheckpoint=%d\niters=%d\n",
           cfg_name, (long long)c.num_hidden_layers, (long long)D, (long long)T, (long long)B,
           rank, sn_aten_get_num_threads(), ckpt, iters);
    printf("params=%lld\ntrainable=%lld\n", (long long)sn_model_count_params(m, false),
           (long long)sn_model_count_params(m, true));
    printf("step_s=%.4f\nfwd_s=%.4f\nbwd_s=%.4f\n", step, fwd, step - fwd);
    printf("tokens_per_s=%.1f\n", BT / step);
    printf("gflop_per_step=%.2f\ngflops=%.2f\n", flops / 1e9, flops / step / 1e9);
    /* forward breakdown, per step (mean over the timed iterations) */
    for (int k = 0; k < SN_PROF_COUNT; k++)
        prof.seconds[k] /= iters;
    double pf = prof.seconds[SN_PROF_LINEAR] + prof.seconds[SN_PROF_ATTENTION] +
                prof.seconds[SN_PROF_NORM] + prof.seconds[SN_PROF_OTHER];
    printf("fwd_linear_s=%.4f\nfwd_attention_s=%.4f\nfwd_norm_s=%.4f\nfwd_other_s=%.4f\n"
           "fwd_outside_layers_s=%.4f\n",
           prof.seconds[SN_PROF_LINEAR], prof.seconds[SN_PROF_ATTENTION],
           prof.seconds[SN_PROF_NORM], prof.seconds[SN_PROF_OTHER], fwd - pf);
    printf("peak_rss_mb=%.1f\nblas=%s\nchecksum=%.6f\n", peak_rss_mb(), blas[0] ? blas : "?",
           loss_sum);
    free(ps);
    free(ids);
    sn_model_free(m);
    return 0;
}
