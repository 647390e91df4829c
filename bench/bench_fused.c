/* bench/bench_fused.c: forward and forward+backward time of the fused CPU kernels behind
** sn_aten_rms_norm, sn_aten_apply_rotary and sn_aten_swiglu (aten/aten_fused.cpp) next to the
** same formulas composed from plain C API ops (what aten_nn.cpp falls back to), f32, on the
** shapes of the ~100M config at batch 8, seq 512:
**   rms_norm: x (8,512,768), w (768) frozen (no dw), x requires grad;
**   rotary:   x (8,12,512,64) = the (8,512,12,64) buffer seen through transpose(1,2),
**             tables (8,512,64) from rope_tables, dy contiguous (B,H,T,D);
**   swiglu:   g, u (8,512,2048), both require grad.
** Forward+backward = the op with grad enabled, then sn_aten_backward(y, dy) into the leaves'
** .grad (dropped before each repetition). The two sides run in alternating repetitions and
** each keeps its best, so load from other processes hits both alike.
** The host allocator is tuned as sentinel-torch does at start (common.h:
** sn_tune_host_allocator), so freed activation blocks are reused instead of re-faulted.
** Usage: bench_fused [threads (default 2)] [repetitions (default 5)]
** Prints key=value lines: <op>_<fused|composed>_<fwd|fwdbwd>_ms and <op>_fwdbwd_speedup. */
#include "aten/aten.h"
#include "common/common.h"

#include <stdio.h>
#include <stdlib.h>

static struct sn_err E;

static void ok(int rc, const char *what)
{
    if (rc) {
        fprintf(stderr, "bench_fused: %s: %s\n", what, E.msg);
        exit(1);
    }
}

enum kind { RMS_NORM, ROTARY, SWIGLU };

struct op {
    const char *name;
    enum kind kind;
    struct sn_tensor *leaf[2]; /* leaves whose .grad backward fills (NULL: none) */
    struct sn_tensor *a, *b, *c; /* operands as the op sees them */
    struct sn_tensor *dy;
};

/* One forward of the op, fused (the C API entry) or composed from plain ops. */
static struct sn_tensor *forward(const struct op *o, bool fused)
{
    struct sn_tensor *y = NULL, *t1 = NULL, *t2 = NULL, *t3 = NULL, *t4 = NULL;
    if (o->kind == RMS_NORM) {
        if (fused) {
            ok(sn_aten_rms_norm(o->a, o->b, 1e-6, &y, &E), "rms_norm");
            return y;
        }
        ok(sn_aten_pow_scalar(o->a, 2.0, &t1, &E), "pow");
        ok(sn_aten_mean(t1, -1, true, &t2, &E), "mean");
        ok(sn_aten_add_scalar(t2, 1e-6, &t3, &E), "add_scalar");
        sn_tensor_free(t1);
        ok(sn_aten_rsqrt(t3, &t1, &E), "rsqrt");
        ok(sn_aten_mul(o->a, t1, &t4, &E), "mul");
        ok(sn_aten_mul(o->b, t4, &y, &E), "mul");
    } else if (o->kind == ROTARY) {
        if (fused) {
            ok(sn_aten_apply_rotary(o->a, o->b, o->c, &y, &E), "apply_rotary");
            return y;
        }
        struct sn_tensor *c4 = NULL, *s4 = NULL;
        ok(sn_aten_unsqueeze(o->b, 1, &c4, &E), "unsqueeze");
        ok(sn_aten_unsqueeze(o->c, 1, &s4, &E), "unsqueeze");
        ok(sn_aten_mul(o->a, c4, &t1, &E), "mul");
        ok(sn_aten_rotate_half(o->a, &t2, &E), "rotate_half");
        ok(sn_aten_mul(t2, s4, &t3, &E), "mul");
        ok(sn_aten_add(t1, t3, &y, &E), "add");
        sn_tensor_free(c4);
        sn_tensor_free(s4);
    } else {
        if (fused) {
            ok(sn_aten_swiglu(o->a, o->b, &y, &E), "swiglu");
            return y;
        }
        ok(sn_aten_silu(o->a, &t1, &E), "silu");
        ok(sn_aten_mul(t1, o->b, &y, &E), "mul");
    }
    sn_tensor_free(t1);
    sn_tensor_free(t2);
    sn_tensor_free(t3);
    sn_tensor_free(t4);
    return y;
}

/* Seconds of one forward (backward = false) or forward+backward. */
static double once(const struct op *o, bool fused, bool backward)
{
    for (int i = 0; i < 2; i++)
        if (o->leaf[i])
            sn_aten_zero_grad(o->leaf[i]);
    double t0 = sn_now();
    struct sn_tensor *y = forward(o, fused);
    if (backward)
        ok(sn_aten_backward(y, o->dy, false, &E), "backward");
    sn_tensor_free(y);
    return sn_now() - t0;
}

static void run(const struct op *o, int reps)
{
    double best[2][2] = {{1e30, 1e30}, {1e30, 1e30}}; /* [fused][backward] */
    for (int f = 0; f < 2; f++) /* warm-up: allocator, thread pool */
        once(o, f, true);
    for (int r = 0; r < reps; r++)
        for (int bw = 0; bw < 2; bw++)
            for (int f = 1; f >= 0; f--) {
                double t = once(o, f, bw);
                if (t < best[f][bw])
                    best[f][bw] = t;
            }
    for (int f = 1; f >= 0; f--)
        for (int bw = 0; bw < 2; bw++)
            printf("%s_%s_%s_ms=%.3f\n", o->name, f ? "fused" : "composed",
                   bw ? "fwdbwd" : "fwd", 1e3 * best[f][bw]);
    printf("%s_fwd_speedup=%.2f\n", o->name, best[0][0] / best[1][0]);
    printf("%s_fwdbwd_speedup=%.2f\n", o->name, best[0][1] / best[1][1]);
    fflush(stdout);
}

static struct sn_tensor *randn(struct sn_aten_gen *g, const int64_t *s, int nd, bool grad)
{
    struct sn_tensor *t = NULL;
    ok(sn_aten_randn(s, nd, SN_DTYPE_F32, SN_CPU, g, &t, &E), "randn");
    if (grad)
        ok(sn_aten_set_requires_grad(t, true, &E), "requires_grad");
    return t;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 2, reps = argc > 2 ? atoi(argv[2]) : 5;
    if (threads < 1 || reps < 1) {
        fprintf(stderr, "usage: bench_fused [threads >= 1] [repetitions >= 1]\n");
        return 2;
    }
    sn_tune_host_allocator((size_t)1 << 30);
    sn_aten_set_num_threads(threads);
    printf("threads=%d\nrepetitions=%d\n", threads, reps);
    struct sn_aten_gen *g = NULL;
    ok(sn_aten_gen_create(1, SN_CPU, &g, &E), "gen");
    const int64_t B = 8, T = 512, D = 768, H = 12, Dh = 64, F = 2048;

    { /* RMSNorm */
        int64_t sx[3] = {B, T, D}, sw[1] = {D};
        struct op o = {.name = "rms_norm", .kind = RMS_NORM};
        o.a = o.leaf[0] = randn(g, sx, 3, true);
        o.b = randn(g, sw, 1, false);
        o.dy = randn(g, sx, 3, false);
        run(&o, reps);
        sn_tensor_free(o.a);
        sn_tensor_free(o.b);
        sn_tensor_free(o.dy);
    }
    { /* rotary */
        int64_t sbuf[4] = {B, T, H, Dh}, sy[4] = {B, H, T, Dh}, sp[2] = {B, T};
        struct op o = {.name = "rotary", .kind = ROTARY};
        o.leaf[0] = randn(g, sbuf, 4, true);
        ok(sn_aten_transpose(o.leaf[0], 1, 2, &o.a, &E), "transpose");
        int64_t *pos = malloc((size_t)(B * T) * sizeof *pos);
        for (int64_t i = 0; i < B * T; i++)
            pos[i] = i % T;
        struct sn_tensor *tp = NULL;
        ok(sn_aten_from_host(pos, SN_DTYPE_I64, sp, 2, SN_DTYPE_I64, SN_CPU, &tp, &E), "pos");
        free(pos);
        ok(sn_aten_rope_tables(tp, Dh, 1e6, SN_DTYPE_F32, &o.b, &o.c, &E), "rope_tables");
        sn_tensor_free(tp);
        o.dy = randn(g, sy, 4, false);
        run(&o, reps);
        sn_tensor_free(o.a);
        sn_tensor_free(o.b);
        sn_tensor_free(o.c);
        sn_tensor_free(o.dy);
        sn_tensor_free(o.leaf[0]);
    }
    { /* SwiGLU */
        int64_t s[3] = {B, T, F};
        struct op o = {.name = "swiglu", .kind = SWIGLU};
        o.a = o.leaf[0] = randn(g, s, 3, true);
        o.b = o.leaf[1] = randn(g, s, 3, true);
        o.dy = randn(g, s, 3, false);
        run(&o, reps);
        sn_tensor_free(o.a);
        sn_tensor_free(o.b);
        sn_tensor_free(o.dy);
    }
    sn_aten_gen_free(g);
    return 0;
}
