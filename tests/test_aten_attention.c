/* tests/test_aten_attention.c: the fused attention kernel (aten/aten_attention.cpp) against
** attention composed here from other C API ops (matmul, repeat_kv, masked_fill with the
** lowest finite value, softmax, matmul: the definition in aten/aten.h), forward and the
** gradients of q, k and v, at sizes the small hand-value tests of test_aten_ops.c do not
** reach: several 64-row query blocks with a remainder, head dims that are not a multiple of
** the 16-wide register tile, GQA, left and right padding, Tq < Tk and Tq > Tk, the model's
** transposed (B,T,H,D) layout and a non-unit last stride.
** f64: fused == composed to 1e-10 (only the summation order differs). f32 (the AVX2 kernel
** where the CPU has it): against the composed f64 result to 2e-5 of the largest magnitude.
** The result must not depend on the thread count (bitwise: every output element has one
** owner task), and the output is laid out as (B,T,H,D) so the model's transpose back is free. */
#include "aten/aten.h"
#include "tests/testutil.h"
#include "tests/testutil_aten.h"

#include <float.h>
#include <stdint.h>
#include <stdlib.h>

static struct sn_err E;

struct shape {
    const char *name;
    int B, Hq, Hkv, Tq, Tk, D;
    bool causal;
    int pad_left0, pad_right1; /* padding of batch 0 (left) and batch 1 (right), keys */
    bool bthd;                 /* q, k, v as transposed views of (B,T,H,D) buffers */
    bool strided_d;            /* q with a non-unit last stride (forces the copy path) */
};

static const struct shape SHAPES[] = {
    {"blocks+tail, GQA, both paddings", 2, 4, 2, 130, 130, 20, true, 5, 7, false, false},
    {"Tq<Tk, 3 heads per kv head", 1, 3, 1, 70, 150, 64, true, 0, 0, false, false},
    {"non-causal, padding", 2, 2, 2, 65, 65, 16, false, 3, 4, false, false},
    {"Tq>Tk (rows with no key)", 2, 2, 1, 10, 6, 8, true, 1, 1, false, false},
    {"model layout (B,T,H,D)", 2, 4, 2, 96, 96, 32, true, 9, 2, true, false},
    {"non-unit last stride", 1, 2, 1, 40, 40, 12, true, 0, 0, false, true},
};

/* x of shape (B,H,T,D) filled with N(0, 1) in the requested layout, requiring grad. */
static struct sn_tensor *input(struct sn_aten_gen *g, int B, int H, int T, int D,
                               enum sn_dtype dt, bool bthd, bool strided_d)
{
    struct sn_tensor *base = NULL, *v = NULL;
    if (bthd) {
        OK(sn_aten_randn((int64_t[]){B, T, H, D}, 4, dt, SN_CPU, g, &base, &E));
        OK(sn_aten_transpose(base, 1, 2, &v, &E));
    } else if (strided_d) {
        /* (B,H,T,2D) narrowed to every other element would need a step; use (B,H,D,T)ᵀ */
        OK(sn_aten_randn((int64_t[]){B, H, D, T}, 4, dt, SN_CPU, g, &base, &E));
        OK(sn_aten_transpose(base, 2, 3, &v, &E));
    } else {
        OK(sn_aten_randn((int64_t[]){B, H, T, D}, 4, dt, SN_CPU, g, &v, &E));
    }
    sn_tensor_free(base);
    /* a leaf view would not be a leaf: detach to get a leaf with the same strides */
    struct sn_tensor *leaf = NULL;
    OK(sn_aten_detach(v, &leaf, &E));
    sn_tensor_free(v);
    OK(sn_aten_set_requires_grad(leaf, true, &E));
    return leaf;
}

static struct sn_tensor *cast_leaf(const struct sn_tensor *x, enum sn_dtype dt)
{
    struct sn_tensor *c = NULL, *d = NULL;
    OK(sn_aten_to_dtype(x, dt, &c, &E));
    OK(sn_aten_detach(c, &d, &E));
    sn_tensor_free(c);
    OK(sn_aten_set_requires_grad(d, true, &E));
    return d;
}

/* keep (B,Tk) I64 from the shape's padding. */
static struct sn_tensor *keep_of(const struct shape *s, int8_t *keep_host)
{
    double *k = calloc((size_t)s->B * s->Tk, sizeof *k);
    for (int b = 0; b < s->B; b++)
        for (int j = 0; j < s->Tk; j++) {
            bool pad = (b == 0 && j < s->pad_left0) || (b == 1 && j >= s->Tk - s->pad_right1);
            k[b * s->Tk + j] = pad ? 0 : 1;
            keep_host[b * s->Tk + j] = (int8_t)!pad;
        }
    struct sn_tensor *t = NULL;
    OK(sn_aten_from_host(k, SN_DTYPE_F64, (int64_t[]){s->B, s->Tk}, 2, SN_DTYPE_I64, SN_CPU, &t,
                         &E));
    free(k);
    return t;
}

/* The definition: softmax(masked_fill(q kᵀ / sqrt(D), !allowed, lowest)) v with GQA heads
** repeated. allowed (B,1,Tq,Tk) built on the host. */
static struct sn_tensor *composed(const struct shape *s, struct sn_tensor *q,
                                  struct sn_tensor *k, struct sn_tensor *v,
                                  const int8_t *keep)
{
    int n_rep = s->Hq / s->Hkv;
    struct sn_tensor *kr = NULL, *vr = NULL, *kt = NULL, *sc = NULL, *sc2 = NULL, *blk = NULL,
                     *sm = NULL, *p = NULL, *o = NULL;
    OK(sn_aten_repeat_kv(k, n_rep, &kr, &E));
    OK(sn_aten_repeat_kv(v, n_rep, &vr, &E));
    OK(sn_aten_transpose(kr, 2, 3, &kt, &E));
    OK(sn_aten_matmul(q, kt, &sc, &E));
    OK(sn_aten_mul_scalar(sc, 1.0 / sqrt((double)s->D), &sc2, &E));
    size_t n = (size_t)s->B * s->Tq * s->Tk;
    double *blocked = malloc(n * sizeof *blocked);
    for (int b = 0; b < s->B; b++)
        for (int i = 0; i < s->Tq; i++)
            for (int j = 0; j < s->Tk; j++) {
                bool ok = (!s->causal || j <= i + (s->Tk - s->Tq)) && keep[b * s->Tk + j];
                blocked[((size_t)b * s->Tq + i) * s->Tk + j] = !ok;
            }
    OK(sn_aten_from_host(blocked, SN_DTYPE_F64, (int64_t[]){s->B, 1, s->Tq, s->Tk}, 4,
                         SN_DTYPE_BOOL, SN_CPU, &blk, &E));
    free(blocked);
    double lowest = sn_tensor_dtype(q) == SN_DTYPE_F64 ? -DBL_MAX : -FLT_MAX;
    OK(sn_aten_masked_fill(sc2, blk, lowest, &sm, &E));
    OK(sn_aten_softmax(sm, -1, &p, &E));
    OK(sn_aten_matmul(p, vr, &o, &E));
    struct sn_tensor *tmp[] = {kr, vr, kt, sc, sc2, blk, sm, p};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++)
        sn_tensor_free(tmp[i]);
    return o;
}

/* L = Σ y ∘ R; backward; returns the grads of q, k, v (new handles) and y's values. */
static void run_backward(struct sn_tensor *y, const struct sn_tensor *R, struct sn_tensor **g,
                         struct sn_tensor *const *x)
{
    struct sn_tensor *m = NULL, *l = NULL;
    OK(sn_aten_mul(y, R, &m, &E));
    OK(sn_aten_sum_all(m, &l, &E));
    OK(sn_aten_backward(l, NULL, false, &E));
    for (int i = 0; i < 3; i++) {
        g[i] = NULL;
        OK(sn_aten_grad(x[i], &g[i], &E));
        CHECK_MSG(g[i] != NULL, "no gradient for input %d", i);
    }
    sn_tensor_free(m);
    sn_tensor_free(l);
}

static double max_abs(const struct sn_tensor *t)
{
    struct sn_tensor *a = NULL, *m = NULL;
    double v = NAN;
    OK(sn_aten_abs(t, &a, &E));
    OK(sn_aten_max_all(a, &m, &E));
    OK(sn_aten_item_f64(m, &v, &E));
    sn_tensor_free(a);
    sn_tensor_free(m);
    return v;
}

/* max |a − b| / max(1, max |b|), b's dtype (a converted). */
static double rel_diff(const struct sn_tensor *a, const struct sn_tensor *b)
{
    struct sn_tensor *ac = NULL;
    OK(sn_aten_to_dtype(a, sn_tensor_dtype(b), &ac, &E));
    double d = INFINITY;
    OK(sn_aten_max_abs_diff(ac, b, &d, &E));
    sn_tensor_free(ac);
    double s = max_abs(b);
    return d / (s > 1 ? s : 1);
}

static void check_shape(const struct shape *s, struct sn_aten_gen *gen)
{
    int8_t *keep = malloc((size_t)s->B * s->Tk);
    struct sn_tensor *tkeep = keep_of(s, keep);
    struct sn_tensor *x64[3] = {
        input(gen, s->B, s->Hq, s->Tq, s->D, SN_DTYPE_F64, s->bthd, s->strided_d),
        input(gen, s->B, s->Hkv, s->Tk, s->D, SN_DTYPE_F64, s->bthd, false),
        input(gen, s->B, s->Hkv, s->Tk, s->D, SN_DTYPE_F64, s->bthd, false)};
    struct sn_tensor *x32[3], *xr[3]; /* f32 copies; f64 copies for the composed reference */
    for (int i = 0; i < 3; i++) {
        x32[i] = cast_leaf(x64[i], SN_DTYPE_F32);
        xr[i] = cast_leaf(x64[i], SN_DTYPE_F64);
    }
    struct sn_tensor *R = NULL, *R32 = NULL;
    OK(sn_aten_randn((int64_t[]){s->B, s->Hq, s->Tq, s->D}, 4, SN_DTYPE_F64, SN_CPU, gen, &R,
                     &E));
    OK(sn_aten_to_dtype(R, SN_DTYPE_F32, &R32, &E));

    struct sn_tensor *y64 = NULL, *y32 = NULL, *yr = composed(s, xr[0], xr[1], xr[2], keep);
    OK(sn_aten_attention(x64[0], x64[1], x64[2], tkeep, s->causal, 0, 0, NULL, &y64, &E));
    OK(sn_aten_attention(x32[0], x32[1], x32[2], tkeep, s->causal, 0, 0, NULL, &y32, &E));
    if (!y64 || !y32 || !yr)
        goto out;
    double d64 = rel_diff(y64, yr), d32 = rel_diff(y32, yr);
    CHECK_MSG(d64 <= 1e-10, "%s: f64 output differs from composed by %g", s->name, d64);
    CHECK_MSG(d32 <= 2e-5, "%s: f32 output differs from composed f64 by %g", s->name, d32);

    /* layout: the output's transpose(1,2) is contiguous (B,T,H,D) */
    struct sn_tensor *yt = NULL;
    OK(sn_aten_transpose(y32, 1, 2, &yt, &E));
    CHECK_MSG(sn_tensor_is_contiguous(yt), "%s: output not laid out as (B,T,H,D)", s->name);
    sn_tensor_free(yt);

    struct sn_tensor *g64[3], *g32[3], *gr[3];
    run_backward(y64, R, g64, x64);
    run_backward(y32, R32, g32, x32);
    run_backward(yr, R, gr, xr);
    static const char *const names[3] = {"dq", "dk", "dv"};
    for (int i = 0; i < 3; i++) {
        if (!g64[i] || !g32[i] || !gr[i])
            continue;
        double e64 = rel_diff(g64[i], gr[i]), e32 = rel_diff(g32[i], gr[i]);
        CHECK_MSG(e64 <= 1e-10, "%s: f64 %s differs from composed by %g", s->name, names[i], e64);
        CHECK_MSG(e32 <= 2e-5, "%s: f32 %s differs from composed f64 by %g", s->name, names[i],
                  e32);
        int64_t shp[4];
        CHECK(sn_tensor_shape(g64[i], shp, 4) == 4 &&
              shp[1] == (i ? s->Hkv : s->Hq) && shp[2] == (i ? s->Tk : s->Tq));
    }
    for (int i = 0; i < 3; i++) {
        sn_tensor_free(g64[i]);
        sn_tensor_free(g32[i]);
        sn_tensor_free(gr[i]);
    }
out:
    for (int i = 0; i < 3; i++) {
        sn_tensor_free(x64[i]);
        sn_tensor_free(x32[i]);
        sn_tensor_free(xr[i]);
    }
    sn_tensor_free(y64), sn_tensor_free(y32), sn_tensor_free(yr);
    sn_tensor_free(R), sn_tensor_free(R32), sn_tensor_free(tkeep);
    free(keep);
}

/* One thread and two threads give the same bits, forward and backward. */
static void check_threads(struct sn_aten_gen *gen)
{
    const struct shape s = {"threads", 3, 4, 2, 100, 100, 24, true, 7, 3, true, false};
    int8_t keep[300];
    struct sn_tensor *tkeep = keep_of(&s, keep);
    struct sn_tensor *x[3] = {input(gen, 3, 4, 100, 24, SN_DTYPE_F32, true, false),
                              input(gen, 3, 2, 100, 24, SN_DTYPE_F32, true, false),
                              input(gen, 3, 2, 100, 24, SN_DTYPE_F32, true, false)};
    struct sn_tensor *R = NULL;
    OK(sn_aten_randn((int64_t[]){3, 4, 100, 24}, 4, SN_DTYPE_F32, SN_CPU, gen, &R, &E));
    int saved = sn_aten_get_num_threads();
    struct sn_tensor *y[2] = {NULL, NULL}, *g[2][3];
    for (int t = 0; t < 2; t++) {
        sn_aten_set_num_threads(t + 1);
        for (int i = 0; i < 3; i++)
            sn_aten_zero_grad(x[i]);
        OK(sn_aten_attention(x[0], x[1], x[2], tkeep, true, 0, 0, NULL, &y[t], &E));
        if (y[t])
            run_backward(y[t], R, g[t], x);
    }
    sn_aten_set_num_threads(saved);
    if (y[0] && y[1]) {
        double d = 1;
        OK(sn_aten_max_abs_diff(y[0], y[1], &d, &E));
        CHECK_MSG(d == 0, "1 vs 2 threads: outputs differ by %g", d);
        for (int i = 0; i < 3; i++) {
            OK(sn_aten_max_abs_diff(g[0][i], g[1][i], &d, &E));
            CHECK_MSG(d == 0, "1 vs 2 threads: grad %d differs by %g", i, d);
            sn_tensor_free(g[0][i]);
            sn_tensor_free(g[1][i]);
        }
    }
    sn_tensor_free(y[0]), sn_tensor_free(y[1]), sn_tensor_free(R), sn_tensor_free(tkeep);
    for (int i = 0; i < 3; i++)
        sn_tensor_free(x[i]);
}

int main(void)
{
    struct sn_aten_gen *gen = NULL;
    OK(sn_aten_gen_create(2024, SN_CPU, &gen, &E));
    for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++)
        check_shape(&SHAPES[i], gen);
    check_threads(gen);
    sn_aten_gen_free(gen);
    return sn_test_done();
}
