/* tests/test_aten_fused.c: the fused CPU kernels behind sn_aten_rms_norm, sn_aten_apply_rotary
** and sn_aten_swiglu (aten/aten_fused.cpp) against the same formulas composed from other ops
** of the C API (mul, rsqrt, mean, silu, rotate_half, ...), forward and backward, in f32 and
** f64, on contiguous and on transposed/strided layouts, odd sizes (D not a multiple of the
** vector width, D = 2, D = 1, one row), plus:
**  - gradients of every differentiable input against central finite differences in f64
**    (h = 1e-6; as in test_aten_grad.c the tolerance 1e-7 abs + 1e-6 rel leaves a wide margin
**    over the O(1e-10) FD error while any wrong term is O(1));
**  - gradients when only some inputs require grad (the kernels skip the others);
**  - the output layout of rotary on the (B,T,H,D)-transposed view (stays that layout);
**  - results that do not depend on the number of intra-op threads;
**  - all of the above twice: with the kernel bodies this CPU gets (AVX2+FMA where present) and
**    with the baseline ones (ATEN_CPU_CAPABILITY=default);
**  - inputs the kernels decline (bf16, mixed dtypes, tables requiring grad), which must still
**    give the right answer through the composed fallback.
** The rotary tables here are general random tables (halves NOT duplicated) as well as the
** RoPE tables, so the backward is checked for the general formula. */
#include "aten/aten.h"
#include "tests/testutil.h"
#include "tests/testutil_aten.h"

static struct sn_err E;

static struct sn_aten_gen *G;

/* ---- tensors kept until release(): the helpers below return borrowed handles ------------- */

#define MAXKEEP 4096
static struct sn_tensor *keep_[MAXKEEP];
static int nkeep_;

static struct sn_tensor *K(struct sn_tensor *t)
{
    if (!t)
        return NULL;
    if (nkeep_ == MAXKEEP) {
        fprintf(stderr, "test_aten_fused: MAXKEEP too small\n");
        exit(2);
    }
    keep_[nkeep_++] = t;
    return t;
}
static void release(void)
{
    while (nkeep_)
        sn_tensor_free(keep_[--nkeep_]);
}

static struct sn_tensor *randn(const int64_t *shape, int nd, enum sn_dtype dt)
{
    struct sn_tensor *t = NULL;
    OK(sn_aten_randn(shape, nd, dt, SN_CPU, G, &t, &E));
    return K(t);
}
/* N(0, scale²) leaf requiring grad */
static struct sn_tensor *leaf_scaled(const int64_t *shape, int nd, enum sn_dtype dt,
                                     double scale)
{
    struct sn_tensor *t = randn(shape, nd, dt);
    OK(sn_aten_mul_scalar_(t, scale, &E));
    OK(sn_aten_set_requires_grad(t, true, &E));
    return t;
}
static struct sn_tensor *leaf(const int64_t *shape, int nd, enum sn_dtype dt)
{
    return leaf_scaled(shape, nd, dt, 1.0);
}
#define OP1(name, call)                                                                      \
    static struct sn_tensor *name(const struct sn_tensor *a)                                 \
    {                                                                                        \
        struct sn_tensor *o = NULL;                                                          \
        OK(call);                                                                            \
        return K(o);                                                                         \
    }
#define OP2(name, call)                                                                      \
    static struct sn_tensor *name(const struct sn_tensor *a, const struct sn_tensor *b)      \
    {                                                                                        \
        struct sn_tensor *o = NULL;                                                          \
        OK(call);                                                                            \
        return K(o);                                                                         \
    }
OP1(t_silu, sn_aten_silu(a, &o, &E))
OP1(t_rsqrt, sn_aten_rsqrt(a, &o, &E))
OP1(t_rot_half, sn_aten_rotate_half(a, &o, &E))
OP1(t_contig, sn_aten_contiguous(a, &o, &E))
OP1(t_abs, sn_aten_abs(a, &o, &E))
OP2(t_mul, sn_aten_mul(a, b, &o, &E))
OP2(t_add, sn_aten_add(a, b, &o, &E))
OP2(t_swiglu, sn_aten_swiglu(a, b, &o, &E))
OP1(t_swiglu_cat, sn_aten_swiglu_cat(a, &o, &E))

static struct sn_tensor *t_transpose(const struct sn_tensor *a, int d0, int d1)
{
    struct sn_tensor *o = NULL;
    OK(sn_aten_transpose(a, d0, d1, &o, &E));
    return K(o);
}
static struct sn_tensor *t_unsqueeze(const struct sn_tensor *a, int d)
{
    struct sn_tensor *o = NULL;
    OK(sn_aten_unsqueeze(a, d, &o, &E));
    return K(o);
}
static struct sn_tensor *t_to(const struct sn_tensor *a, enum sn_dtype dt)
{
    struct sn_tensor *o = NULL;
    OK(sn_aten_to_dtype(a, dt, &o, &E));
    return K(o);
}
static struct sn_tensor *t_mul_scalar(const struct sn_tensor *a, double s)
{
    struct sn_tensor *o = NULL;
    OK(sn_aten_mul_scalar(a, s, &o, &E));
    return K(o);
}
static struct sn_tensor *t_rms(const struct sn_tensor *x, const struct sn_tensor *w, double eps)
{
    struct sn_tensor *o = NULL;
    OK(sn_aten_rms_norm(x, w, eps, &o, &E));
    return K(o);
}
static struct sn_tensor *t_rotary(const struct sn_tensor *x, const struct sn_tensor *c,
                                  const struct sn_tensor *s)
{
    struct sn_tensor *o = NULL;
    OK(sn_aten_apply_rotary(x, c, s, &o, &E));
    return K(o);
}
static double item(const struct sn_tensor *t)
{
    double v = NAN;
    OK(sn_aten_item_f64(t, &v, &E));
    return v;
}
static struct sn_tensor *grad_of(const struct sn_tensor *t)
{
    struct sn_tensor *g = NULL;
    OK(sn_aten_grad(t, &g, &E));
    return K(g);
}

/* ---- the composed reference formulas (aten/aten.h semantics) ----------------------------- */

/* w * (x * rsqrt(mean(x², -1) + eps)), computed in x's dtype (f32 or f64) */
static struct sn_tensor *ref_rms(const struct sn_tensor *x, const struct sn_tensor *w,
                                 double eps)
{
    struct sn_tensor *m = NULL, *me = NULL;
    OK(sn_aten_mean(t_mul(x, x), -1, true, &m, &E));
    K(m);
    OK(sn_aten_add_scalar(m, eps, &me, &E));
    K(me);
    return t_mul(w, t_mul(x, t_rsqrt(me)));
}
/* x * cos + rotate_half(x) * sin; (B,T,D) tables broadcast over heads */
static struct sn_tensor *ref_rotary(const struct sn_tensor *x, const struct sn_tensor *c,
                                    const struct sn_tensor *s)
{
    if (sn_tensor_ndim(c) == 3) {
        c = t_unsqueeze(c, 1);
        s = t_unsqueeze(s, 1);
    }
    return t_add(t_mul(x, c), t_mul(t_rot_half(x), s));
}
static struct sn_tensor *ref_swiglu(const struct sn_tensor *g, const struct sn_tensor *u)
{
    return t_mul(t_silu(g), u);
}

/* max |got - want| <= tol * (1 + max |want|); returns the ratio error / (1 + max|want|). */
static double close_to(const char *what, const struct sn_tensor *got,
                       const struct sn_tensor *want, double tol)
{
    CHECK_MSG(got && want, "%s: missing tensor", what);
    if (!got || !want)
        return INFINITY;
    int64_t sg[8], sw[8];
    int ng = sn_tensor_shape(got, sg, 8), nw = sn_tensor_shape(want, sw, 8);
    bool same = ng == nw;
    for (int i = 0; same && i < ng; i++)
        same = sg[i] == sw[i];
    CHECK_MSG(same, "%s: shapes differ", what);
    double d = INFINITY, m = NAN;
    OK(sn_aten_max_abs_diff(got, want, &d, &E));
    struct sn_tensor *mx = NULL;
    OK(sn_aten_max_all(t_abs(want), &mx, &E));
    m = item(K(mx));
    double r = d / (1 + m);
    CHECK_MSG(r <= tol, "%s: max|diff| %.3g (max|want| %.3g), tolerance %.3g", what, d, m, tol);
    return r;
}

static double tol_of(enum sn_dtype dt) { return dt == SN_DTYPE_F64 ? 1e-12 : 1e-6; }
static const char *dname(enum sn_dtype dt) { return sn_dtype_name(dt); }

/* ---- (a) forward vs the composed formulas ----------------------------------------------- */

static void test_forward_rms(enum sn_dtype dt)
{
    double tol = tol_of(dt);
    char what[96];
    static const int64_t shapes[][3] = {{1, 7, 0}, {5, 2, 0}, {3, 4, 13}, {2, 64, 0},
                                        {4, 1, 0}, {6, 768, 0}, {9, 37, 0}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int nd = shapes[k][2] ? 3 : 2;
        int64_t D = shapes[k][nd - 1];
        struct sn_tensor *x = randn(shapes[k], nd, dt), *w = randn(&D, 1, dt);
        for (int e = 0; e < 2; e++) {
            double eps = e ? 0.25 : 1e-6;
            snprintf(what, sizeof what, "rms %s shape#%zu eps %g", dname(dt), k, eps);
            close_to(what, t_rms(x, w, eps), ref_rms(x, w, eps), tol);
        }
        /* scaled input: the norm is scale-invariant up to eps */
        struct sn_tensor *xs = t_mul_scalar(x, 1e3);
        snprintf(what, sizeof what, "rms %s shape#%zu x*1e3", dname(dt), k);
        close_to(what, t_rms(xs, w, 1e-6), ref_rms(xs, w, 1e-6), tol);
    }
    /* strided: (T,B,D) buffer seen as (B,T,D) (unit last stride, not contiguous) and a
    ** transposed (D,N) buffer seen as (N,D) (last stride N) */
    int64_t s_tbd[3] = {5, 3, 11}, s_dn[2] = {9, 6}, d11 = 11, d9 = 9;
    struct sn_tensor *xb = t_transpose(randn(s_tbd, 3, dt), 0, 1), *w11 = randn(&d11, 1, dt);
    CHECK(!sn_tensor_is_contiguous(xb));
    snprintf(what, sizeof what, "rms %s (T,B,D).transpose(0,1)", dname(dt));
    close_to(what, t_rms(xb, w11, 1e-6), ref_rms(xb, w11, 1e-6), tol);
    struct sn_tensor *xn = t_transpose(randn(s_dn, 2, dt), 0, 1), *w9 = randn(&d9, 1, dt);
    snprintf(what, sizeof what, "rms %s (D,N).T", dname(dt));
    close_to(what, t_rms(xn, w9, 1e-6), ref_rms(xn, w9, 1e-6), tol);
    /* a hand-computed row: x = (3, 4), w = (1, 2), eps 0: rms = sqrt(12.5) */
    double hx[2] = {3, 4}, hw[2] = {1, 2};
    int64_t s12[2] = {1, 2}, s2 = 2;
    struct sn_tensor *tx = NULL, *tw = NULL;
    OK(sn_aten_from_host(hx, SN_DTYPE_F64, s12, 2, dt, SN_CPU, &tx, &E));
    OK(sn_aten_from_host(hw, SN_DTYPE_F64, &s2, 1, dt, SN_CPU, &tw, &E));
    K(tx);
    K(tw);
    double got[2] = {NAN, NAN};
    OK(sn_aten_to_host(t_rms(tx, tw, 0.0), got, SN_DTYPE_F64, 2, &E));
    CHECK_CLOSE(got[0], 3 / sqrt(12.5), 0, 10 * tol);
    CHECK_CLOSE(got[1], 8 / sqrt(12.5), 0, 10 * tol);
    release();
}

/* (B,T,D) or (T,D) or (1,T,D) general random tables (halves not duplicated) */
static void tables(int kind, int64_t B, int64_t T, int64_t D, enum sn_dtype dt,
                   struct sn_tensor **c, struct sn_tensor **s)
{
    int64_t s3[3] = {kind == 2 ? 1 : B, T, D}, s2[2] = {T, D};
    if (kind == 0) {
        *c = randn(s2, 2, dt);
        *s = randn(s2, 2, dt);
    } else {
        *c = randn(s3, 3, dt);
        *s = randn(s3, 3, dt);
    }
}

/* RoPE tables from positions (B,T): position b*3 + t (different per batch row) */
static void rope(int64_t B, int64_t T, int64_t D, enum sn_dtype dt, struct sn_tensor **c,
                 struct sn_tensor **s)
{
    int64_t pos[64], sh[2] = {B, T};
    for (int64_t i = 0; i < B * T && i < 64; i++)
        pos[i] = (i / T) * 3 + i % T;
    struct sn_tensor *p = NULL;
    OK(sn_aten_from_host(pos, SN_DTYPE_I64, sh, 2, SN_DTYPE_I64, SN_CPU, &p, &E));
    K(p);
    *c = *s = NULL;
    OK(sn_aten_rope_tables(p, D, 10000.0, dt, c, s, &E));
    K(*c);
    K(*s);
}

/* x (B,H,T,D): contiguous, or the (B,T,H,D) buffer seen through transpose(1,2) */
static struct sn_tensor *rot_input(bool transposed, int64_t B, int64_t H, int64_t T, int64_t D,
                                   enum sn_dtype dt)
{
    if (!transposed) {
        int64_t s[4] = {B, H, T, D};
        return randn(s, 4, dt);
    }
    int64_t s[4] = {B, T, H, D};
    return t_transpose(randn(s, 4, dt), 1, 2);
}

static void test_forward_rotary(enum sn_dtype dt)
{
    double tol = tol_of(dt);
    char what[128];
    static const int64_t Ds[] = {2, 6, 10, 64, 18};
    for (size_t k = 0; k < sizeof Ds / sizeof Ds[0]; k++) {
        int64_t B = 2, H = 3, T = 5, D = Ds[k];
        for (int tr = 0; tr < 2; tr++) {
            struct sn_tensor *x = rot_input(tr, B, H, T, D, dt);
            for (int kind = 0; kind < 4; kind++) {
                struct sn_tensor *c, *s;
                if (kind < 3)
                    tables(kind, B, T, D, dt, &c, &s);
                else
                    rope(B, T, D, dt, &c, &s);
                snprintf(what, sizeof what, "rotary %s D=%lld %s tables#%d", dname(dt),
                         (long long)D, tr ? "transposed" : "contiguous", kind);
                struct sn_tensor *y = t_rotary(x, c, s);
                close_to(what, y, ref_rotary(x, c, s), tol);
                if (tr) { /* (c) the output keeps the (B,T,H,D) buffer layout of x */
                    CHECK_MSG(sn_tensor_is_contiguous(t_transpose(y, 1, 2)),
                              "%s: y.transpose(1,2) is not contiguous", what);
                } else {
                    CHECK_MSG(sn_tensor_is_contiguous(y), "%s: y is not contiguous", what);
                }
            }
        }
    }
    /* a single row (B=H=T=1), D = 2, by hand: y = (x1 c1 - x2 s1, x2 c2 + x1 s2) */
    double hx[2] = {2, 3}, hc[2] = {0.5, -1.5}, hs[2] = {0.25, 4};
    int64_t sx[4] = {1, 1, 1, 2}, st[2] = {1, 2};
    struct sn_tensor *x = NULL, *c = NULL, *s = NULL;
    OK(sn_aten_from_host(hx, SN_DTYPE_F64, sx, 4, dt, SN_CPU, &x, &E));
    OK(sn_aten_from_host(hc, SN_DTYPE_F64, st, 2, dt, SN_CPU, &c, &E));
    OK(sn_aten_from_host(hs, SN_DTYPE_F64, st, 2, dt, SN_CPU, &s, &E));
    K(x);
    K(c);
    K(s);
    double got[2] = {NAN, NAN};
    OK(sn_aten_to_host(t_rotary(x, c, s), got, SN_DTYPE_F64, 2, &E));
    CHECK_CLOSE(got[0], 2 * 0.5 - 3 * 0.25, 0, tol);
    CHECK_CLOSE(got[1], 3 * -1.5 + 2 * 4, 0, tol);
    release();
}

static void test_forward_swiglu(enum sn_dtype dt)
{
    double tol = tol_of(dt);
    char what[96];
    static const int64_t shapes[][3] = {{1, 0, 0}, {7, 0, 0}, {3, 37, 0}, {2, 5, 64}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int nd = shapes[k][1] ? (shapes[k][2] ? 3 : 2) : 1;
        struct sn_tensor *g = randn(shapes[k], nd, dt), *u = randn(shapes[k], nd, dt);
        snprintf(what, sizeof what, "swiglu %s shape#%zu", dname(dt), k);
        close_to(what, t_swiglu(g, u), ref_swiglu(g, u), tol);
        struct sn_tensor *g8 = t_mul_scalar(g, 8.0); /* saturating σ */
        snprintf(what, sizeof what, "swiglu %s shape#%zu g*8", dname(dt), k);
        close_to(what, t_swiglu(g8, u), ref_swiglu(g8, u), tol);
    }
    /* transposed layouts: both the same (flat walk), and mixed */
    int64_t s[2] = {13, 6};
    struct sn_tensor *gt = t_transpose(randn(s, 2, dt), 0, 1);
    struct sn_tensor *ut = t_transpose(randn(s, 2, dt), 0, 1);
    struct sn_tensor *uc = t_contig(ut);
    snprintf(what, sizeof what, "swiglu %s both transposed", dname(dt));
    struct sn_tensor *y = t_swiglu(gt, ut);
    close_to(what, y, ref_swiglu(gt, ut), tol);
    snprintf(what, sizeof what, "swiglu %s g transposed, u contiguous", dname(dt));
    close_to(what, t_swiglu(gt, uc), ref_swiglu(gt, uc), tol);
    /* extreme gates vs a double loop: silu(g) u with u = 1.5 */
    double hg[12] = {-1000, -200, -90, -88, -87, -20, -1e-3, 0, 3, 88, 90, 500}, want[12], got[12];
    int64_t n12 = 12;
    struct sn_tensor *tg = NULL, *tu = NULL;
    OK(sn_aten_from_host(hg, SN_DTYPE_F64, &n12, 1, dt, SN_CPU, &tg, &E));
    OK(sn_aten_full(&n12, 1, 1.5, dt, SN_CPU, &tu, &E));
    K(tg);
    K(tu);
    OK(sn_aten_to_host(t_swiglu(tg, tu), got, SN_DTYPE_F64, 12, &E));
    for (int i = 0; i < 12; i++) {
        want[i] = hg[i] / (1 + exp(-hg[i])) * 1.5;
        CHECK_MSG(fabs(got[i] - want[i]) <= 2 * tol * (1 + fabs(want[i])),
                  "swiglu %s g=%g: %.17g want %.17g", dname(dt), hg[i], got[i], want[i]);
    }
    release();
}

/* ---- (b) gradients ----------------------------------------------------------------------- */

/* f(p) for the FD check and the composed comparison. */
typedef sn_test_forward_fn forward_fn;

/* L = sum(f(p) * R); R made on the first call with f's shape and kept in *R. Returns a
** handle the caller frees (not kept: the FD loop calls this thousands of times). */
static struct sn_tensor *loss_of(forward_fn f, struct sn_tensor *const *p, void *ctx,
                                 struct sn_tensor **R)
{
    int mark = nkeep_;
    struct sn_tensor *y = f(p, ctx), *m = NULL, *l = NULL;
    if (y) {
        if (!*R) {
            int64_t shape[8];
            int nd = sn_tensor_shape(y, shape, 8);
            OK(sn_aten_randn(shape, nd, sn_tensor_dtype(y), SN_CPU, G, R, &E));
        }
        OK(sn_aten_mul(y, *R, &m, &E));
        OK(sn_aten_sum_all(m, &l, &E));
        sn_tensor_free(m);
    }
    while (nkeep_ > mark) /* the intermediates f made */
        sn_tensor_free(keep_[--nkeep_]);
    return l;
}

/* The gradients of p[0..n) (those requiring grad) from backprop through f; grads[i] stays
** NULL for the others. The handles are kept. */
static void grads_of(forward_fn f, struct sn_tensor *const *p, int n, void *ctx,
                     struct sn_tensor **R, struct sn_tensor **grads)
{
    for (int i = 0; i < n; i++)
        sn_aten_zero_grad(p[i]);
    struct sn_tensor *l = loss_of(f, p, ctx, R);
    CHECK(l != NULL);
    if (l)
        OK(sn_aten_backward(l, NULL, false, &E));
    sn_tensor_free(l);
    for (int i = 0; i < n; i++)
        grads[i] = sn_aten_requires_grad(p[i]) ? grad_of(p[i]) : NULL;
}

/* Gradient of every f64 leaf in p[0..n) vs central differences. */
static void fd_check(const char *what, forward_fn f, struct sn_tensor *const *p, int n,
                     void *ctx)
{
    struct sn_tensor *R = NULL, *an_g[4] = {NULL};
    grads_of(f, p, n, ctx, &R, an_g);
    struct sn_test_fd_args args = {loss_of, f, p, ctx, &R};
    double worst = 0;
    int bad = 0;
    for (int i = 0; i < n; i++) {
        CHECK_MSG(an_g[i] != NULL, "%s: param %d has no grad", what, i);
        if (an_g[i])
            bad += sn_test_fd_check_grad(what, i, p[i], an_g[i], sn_test_fd_loss, &args, &worst);
    }
    CHECK_MSG(bad == 0, "%s: %d gradient elements off", what, bad);
    fprintf(stderr, "fd   %-40s worst error / tolerance = %.3g\n", what, worst);
    sn_tensor_free(R);
}

/* Gradients through the fused op vs through the composed formula, same p, same R. */
static void cmp_check(const char *what, forward_fn fused, forward_fn ref,
                      struct sn_tensor *const *p, int n, void *ctx, double tol)
{
    struct sn_tensor *R = NULL, *gf[4] = {NULL}, *gr[4] = {NULL};
    grads_of(fused, p, n, ctx, &R, gf);
    grads_of(ref, p, n, ctx, &R, gr);
    double worst = 0;
    char w[128];
    for (int i = 0; i < n; i++) {
        CHECK_MSG((gf[i] == NULL) == (gr[i] == NULL), "%s: param %d grad presence differs",
                  what, i);
        if (!gf[i] || !gr[i])
            continue;
        snprintf(w, sizeof w, "%s: grad of param %d", what, i);
        worst = fmax(worst, close_to(w, gf[i], gr[i], tol));
    }
    fprintf(stderr, "cmp  %-40s worst max|diff|/(1+max|ref|) = %.3g\n", what, worst);
    sn_tensor_free(R);
}

struct rot_ctx {
    struct sn_tensor *c, *s;
    bool transposed; /* p[0] is the (B,T,H,D) buffer */
};

static struct sn_tensor *f_rms(struct sn_tensor *const *p, void *ctx)
{
    (void)ctx;
    return t_rms(p[0], p[1], 1e-6);
}
static struct sn_tensor *r_rms(struct sn_tensor *const *p, void *ctx)
{
    (void)ctx;
    return ref_rms(p[0], p[1], 1e-6);
}
/* p[0] a (D, N) buffer seen as (N, D): x = p[0].transpose(0, 1), last stride N */
static struct sn_tensor *f_rms_t(struct sn_tensor *const *p, void *ctx)
{
    (void)ctx;
    return t_rms(t_transpose(p[0], 0, 1), p[1], 1e-6);
}
static struct sn_tensor *r_rms_t(struct sn_tensor *const *p, void *ctx)
{
    (void)ctx;
    return ref_rms(t_transpose(p[0], 0, 1), p[1], 1e-6);
}
static struct sn_tensor *f_rot(struct sn_tensor *const *p, void *ctx)
{
    struct rot_ctx *r = ctx;
    const struct sn_tensor *x = r->transposed ? t_transpose(p[0], 1, 2) : p[0];
    return t_rotary(x, r->c, r->s);
}
static struct sn_tensor *r_rot(struct sn_tensor *const *p, void *ctx)
{
    struct rot_ctx *r = ctx;
    const struct sn_tensor *x = r->transposed ? t_transpose(p[0], 1, 2) : p[0];
    return ref_rotary(x, r->c, r->s);
}
static struct sn_tensor *f_swi(struct sn_tensor *const *p, void *ctx)
{
    (void)ctx;
    return t_swiglu(p[0], p[1]);
}
static struct sn_tensor *r_swi(struct sn_tensor *const *p, void *ctx)
{
    (void)ctx;
    return ref_swiglu(p[0], p[1]);
}
/* both transposed (same strides) */
static struct sn_tensor *f_swi_t(struct sn_tensor *const *p, void *ctx)
{
    (void)ctx;
    return t_swiglu(t_transpose(p[0], 0, 1), t_transpose(p[1], 0, 1));
}
static struct sn_tensor *r_swi_t(struct sn_tensor *const *p, void *ctx)
{
    (void)ctx;
    return ref_swiglu(t_transpose(p[0], 0, 1), t_transpose(p[1], 0, 1));
}

/* swiglu_cat on [g | u] against swiglu on the two halves (x (..., 2I)) */
static struct sn_tensor *t_half(const struct sn_tensor *x, int which)
{
    int64_t I = sn_tensor_size(x, -1) / 2;
    struct sn_tensor *o = NULL;
    OK(sn_aten_narrow(x, sn_tensor_ndim(x) - 1, which * I, I, &o, &E));
    return K(o);
}
static struct sn_tensor *f_swc(struct sn_tensor *const *p, void *ctx)
{
    (void)ctx;
    return t_swiglu_cat(p[0]);
}
static struct sn_tensor *r_swc(struct sn_tensor *const *p, void *ctx)
{
    (void)ctx;
    return ref_swiglu(t_half(p[0], 0), t_half(p[0], 1));
}
/* a transposed (non-contiguous) input: the op copies it once */
static struct sn_tensor *f_swc_t(struct sn_tensor *const *p, void *ctx)
{
    (void)ctx;
    return t_swiglu_cat(t_transpose(p[0], 0, 1));
}
static struct sn_tensor *r_swc_t(struct sn_tensor *const *p, void *ctx)
{
    (void)ctx;
    struct sn_tensor *x = t_transpose(p[0], 0, 1);
    return ref_swiglu(t_half(x, 0), t_half(x, 1));
}

static void test_fd(void)
{
    const enum sn_dtype F = SN_DTYPE_F64;
    int64_t s37[2] = {3, 7}, d7 = 7, d3 = 3;
    struct sn_tensor *p[2] = {leaf(s37, 2, F), leaf(&d7, 1, F)};
    fd_check("rms_norm (3,7)", f_rms, p, 2, NULL);
    struct sn_tensor *pt[2] = {leaf(s37, 2, F), leaf(&d3, 1, F)};
    fd_check("rms_norm (3,7)^T", f_rms_t, pt, 2, NULL);

    struct rot_ctx rc = {0};
    int64_t sx[4] = {2, 3, 2, 6}; /* (B,T,H,D) */
    tables(1, 2, 3, 6, F, &rc.c, &rc.s);
    rc.transposed = true;
    struct sn_tensor *px[1] = {leaf(sx, 4, F)};
    fd_check("rotary transposed, (B,T,D) tables", f_rot, px, 1, &rc);
    int64_t sxc[4] = {1, 2, 3, 10}; /* (B,H,T,D) */
    tables(0, 1, 3, 10, F, &rc.c, &rc.s);
    rc.transposed = false;
    struct sn_tensor *pxc[1] = {leaf(sxc, 4, F)};
    fd_check("rotary contiguous, (T,D) tables", f_rot, pxc, 1, &rc);

    int64_t s25[2] = {2, 5};
    struct sn_tensor *pg[2] = {leaf_scaled(s25, 2, F, 3.0), leaf(s25, 2, F)}; /* wide gates */
    fd_check("swiglu (2,5)", f_swi, pg, 2, NULL);
    int64_t s2x3x10[3] = {2, 3, 10};
    struct sn_tensor *pc[1] = {leaf_scaled(s2x3x10, 3, F, 3.0)};
    fd_check("swiglu_cat (2,3,10)", f_swc, pc, 1, NULL);
    release();
}

static void set_rg(struct sn_tensor *t, bool on) { OK(sn_aten_set_requires_grad(t, on, &E)); }

static void test_cmp(enum sn_dtype dt)
{
    double tol = dt == SN_DTYPE_F64 ? 1e-12 : 2e-6;
    char what[96];
    int64_t sx[2] = {37, 70}, d70 = 70;
    struct sn_tensor *p[2] = {leaf(sx, 2, dt), leaf(&d70, 1, dt)};
    for (int mode = 0; mode < 3; mode++) { /* both, x only, w only */
        set_rg(p[0], mode != 2);
        set_rg(p[1], mode != 1);
        snprintf(what, sizeof what, "rms %s (37,70) %s", dname(dt),
                 mode == 0 ? "x,w" : mode == 1 ? "x only" : "w only");
        cmp_check(what, f_rms, r_rms, p, 2, NULL, tol);
    }
    int64_t st[2] = {19, 6}, d19 = 19;
    struct sn_tensor *pt[2] = {leaf(st, 2, dt), leaf(&d19, 1, dt)};
    snprintf(what, sizeof what, "rms %s (19,6)^T", dname(dt));
    cmp_check(what, f_rms_t, r_rms_t, pt, 2, NULL, tol);

    static const int64_t Ds[] = {2, 10, 64};
    for (size_t k = 0; k < 3; k++) {
        int64_t D = Ds[k];
        for (int tr = 0; tr < 2; tr++) {
            struct rot_ctx rc = {.transposed = tr};
            int64_t s[4] = {2, tr ? 7 : 3, tr ? 3 : 7, D};
            struct sn_tensor *px[1] = {leaf(s, 4, dt)};
            for (int kind = 0; kind < 4; kind++) {
                if (kind < 3)
                    tables(kind, 2, 7, D, dt, &rc.c, &rc.s);
                else
                    rope(2, 7, D, dt, &rc.c, &rc.s);
                snprintf(what, sizeof what, "rotary %s D=%lld %s tables#%d", dname(dt),
                         (long long)D, tr ? "transposed" : "contiguous", kind);
                cmp_check(what, f_rot, r_rot, px, 1, &rc, tol);
            }
        }
    }

    int64_t sg[2] = {3, 41};
    struct sn_tensor *pg[2] = {leaf_scaled(sg, 2, dt, 4.0), leaf(sg, 2, dt)};
    for (int mode = 0; mode < 3; mode++) {
        set_rg(pg[0], mode != 2);
        set_rg(pg[1], mode != 1);
        snprintf(what, sizeof what, "swiglu %s (3,41) %s", dname(dt),
                 mode == 0 ? "g,u" : mode == 1 ? "g only" : "u only");
        cmp_check(what, f_swi, r_swi, pg, 2, NULL, tol);
    }
    int64_t sgt[2] = {11, 5};
    struct sn_tensor *pgt[2] = {leaf(sgt, 2, dt), leaf(sgt, 2, dt)};
    snprintf(what, sizeof what, "swiglu %s (11,5)^T", dname(dt));
    cmp_check(what, f_swi_t, r_swi_t, pgt, 2, NULL, tol);
    /* I = 41 and 3: rows that end in the scalar tail, and rows shorter than a vector */
    int64_t sc[3][3] = {{2, 3, 82}, {5, 1, 6}, {1, 1, 2}};
    for (int k = 0; k < 3; k++) {
        struct sn_tensor *pc[1] = {leaf_scaled(sc[k], 3, dt, 4.0)};
        snprintf(what, sizeof what, "swiglu_cat %s (%lld,%lld,%lld)", dname(dt),
                 (long long)sc[k][0], (long long)sc[k][1], (long long)sc[k][2]);
        cmp_check(what, f_swc, r_swc, pc, 1, NULL, tol);
    }
    int64_t sct[2] = {12, 7};
    struct sn_tensor *pct[1] = {leaf(sct, 2, dt)};
    snprintf(what, sizeof what, "swiglu_cat %s (12,7)^T", dname(dt));
    cmp_check(what, f_swc_t, r_swc_t, pct, 1, NULL, tol);
    release();
}

/* ---- thread count: the same bits with 1 and 2 threads ----------------------------------- */

static void test_threads(void)
{
    int before = sn_aten_get_num_threads();
    int64_t sx[2] = {300, 64}, d64 = 64, sg[1] = {70001};
    struct sn_tensor *p[2] = {leaf(sx, 2, SN_DTYPE_F32), leaf(&d64, 1, SN_DTYPE_F32)};
    struct sn_tensor *pg[2] = {leaf(sg, 1, SN_DTYPE_F32), leaf(sg, 1, SN_DTYPE_F32)};
    struct sn_tensor *R = NULL, *Rg = NULL, *g1[2], *g2[2], *h1[2], *h2[2];
    sn_aten_set_num_threads(1);
    grads_of(f_rms, p, 2, NULL, &R, g1);
    grads_of(f_swi, pg, 2, NULL, &Rg, h1);
    struct sn_tensor *y1 = t_rms(p[0], p[1], 1e-6);
    sn_aten_set_num_threads(2);
    grads_of(f_rms, p, 2, NULL, &R, g2);
    grads_of(f_swi, pg, 2, NULL, &Rg, h2);
    struct sn_tensor *y2 = t_rms(p[0], p[1], 1e-6);
    sn_aten_set_num_threads(before);
    double d = -1;
    OK(sn_aten_max_abs_diff(y1, y2, &d, &E));
    CHECK_MSG(d == 0, "rms forward differs between 1 and 2 threads by %g", d);
    for (int i = 0; i < 2; i++) {
        OK(sn_aten_max_abs_diff(g1[i], g2[i], &d, &E));
        CHECK_MSG(d == 0, "rms grad %d differs between 1 and 2 threads by %g", i, d);
        OK(sn_aten_max_abs_diff(h1[i], h2[i], &d, &E));
        CHECK_MSG(d == 0, "swiglu grad %d differs between 1 and 2 threads by %g", i, d);
    }
    /* and both still right */
    close_to("rms (300,64) f32 2 threads", y2, ref_rms(p[0], p[1], 1e-6), 1e-6);
    sn_tensor_free(R);
    sn_tensor_free(Rg);
    release();
}

/* ---- (d) inputs the kernels decline still give the right answer -------------------------- */

static void test_fallback(void)
{
    const enum sn_dtype F = SN_DTYPE_F64, H = SN_DTYPE_BF16, S = SN_DTYPE_F32;
    /* bf16: composed path; compare with the f64 formula on the same (bf16-rounded) values */
    int64_t sx[2] = {4, 24}, d24 = 24;
    struct sn_tensor *x = t_to(t_to(randn(sx, 2, F), H), F), *w = t_to(t_to(randn(&d24, 1, F), H), F);
    struct sn_tensor *yb = t_rms(t_to(x, H), t_to(w, H), 1e-6);
    CHECK(sn_tensor_dtype(yb) == H);
    close_to("rms bf16 (fallback)", t_to(yb, F), ref_rms(x, w, 1e-6), 2e-2);
    struct sn_tensor *c, *s;
    int64_t s4[4] = {1, 2, 3, 8};
    struct sn_tensor *xr = t_to(t_to(randn(s4, 4, F), H), F);
    tables(0, 1, 3, 8, F, &c, &s);
    c = t_to(t_to(c, H), F);
    s = t_to(t_to(s, H), F);
    struct sn_tensor *rb = t_rotary(t_to(xr, H), t_to(c, H), t_to(s, H));
    CHECK(sn_tensor_dtype(rb) == H);
    close_to("rotary bf16 (fallback)", t_to(rb, F), ref_rotary(xr, c, s), 2e-2);
    struct sn_tensor *sb = t_swiglu(t_to(x, H), t_to(x, H));
    CHECK(sn_tensor_dtype(sb) == H);
    close_to("swiglu bf16 (fallback)", t_to(sb, F), ref_swiglu(x, x), 2e-2);
    struct sn_tensor *scb = t_swiglu_cat(t_to(x, H)); /* (4, 24) -> (4, 12) */
    CHECK(sn_tensor_dtype(scb) == H && sn_tensor_size(scb, 1) == 12);
    close_to("swiglu_cat bf16 (fallback)", t_to(scb, F), ref_swiglu(t_half(x, 0), t_half(x, 1)),
             2e-2);
    int64_t s5[1] = {5};
    struct sn_tensor *odd = NULL;
    CHECK(sn_aten_swiglu_cat(randn(s5, 1, F), &odd, &E) == SN_E_ARG && !odd);
    CHECK(strstr(E.msg, "(..., 2I)") != NULL);

    /* mixed dtypes: x f32, w f64 -> HF semantics (normalise in f32, then w * that in f64) */
    struct sn_tensor *x32 = t_to(x, S);
    struct sn_tensor *ym = t_rms(x32, w, 1e-6);
    CHECK(sn_tensor_dtype(ym) == F);
    close_to("rms x f32, w f64 (fallback)", ym, ref_rms(x, w, 1e-6), 1e-6);
    struct sn_tensor *sm = t_swiglu(x32, x);
    CHECK(sn_tensor_dtype(sm) == F);
    close_to("swiglu f32 x f64 (fallback)", sm, ref_swiglu(x, x), 1e-6);

    /* tables that require grad: the fused backward gives them none, so the op declines and
    ** autograd through the composed formula gives the tables their gradient */
    struct rot_ctx rc = {.transposed = false};
    tables(1, 1, 3, 8, F, &rc.c, &rc.s);
    set_rg(rc.c, true);
    set_rg(rc.s, true);
    struct sn_tensor *px[1] = {leaf(s4, 4, F)};
    struct sn_tensor *R = NULL, *gx[1], *gxr[1];
    grads_of(f_rot, px, 1, &rc, &R, gx);
    struct sn_tensor *gc = grad_of(rc.c), *gs = grad_of(rc.s);
    CHECK(gc != NULL && gs != NULL);
    sn_aten_zero_grad(rc.c);
    sn_aten_zero_grad(rc.s);
    grads_of(r_rot, px, 1, &rc, &R, gxr);
    close_to("rotary tables requiring grad: dx", gx[0], gxr[0], 1e-12);
    close_to("rotary tables requiring grad: dcos", gc, grad_of(rc.c), 1e-12);
    close_to("rotary tables requiring grad: dsin", gs, grad_of(rc.s), 1e-12);
    sn_tensor_free(R);

    /* shape errors still come from the caller's checks (no crash, a message) */
    int64_t st[2] = {4, 8}; /* T = 4 but x has T = 3 */
    struct sn_tensor *bad = NULL;
    sn_err_clear(&E);
    int rc2 = sn_aten_apply_rotary(t_to(xr, F), randn(st, 2, F), randn(st, 2, F), &bad, &E);
    CHECK(rc2 != SN_OK && bad == NULL && E.msg[0]);
    release();
}

int main(void)
{
    OK(sn_aten_gen_create(20261122, SN_CPU, &G, &E));
    enum sn_dtype dts[2] = {SN_DTYPE_F64, SN_DTYPE_F32};
    /* pass 0: the kernels the CPU gets (AVX2+FMA bodies where available); pass 1: the
    ** baseline bodies, forced with ATen's own switch (read by aten_fused.cpp at each call) */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && setenv("ATEN_CPU_CAPABILITY", "default", 1) != 0)
            CHECK(!"setenv");
        fprintf(stderr, "---- pass %d: %s kernels\n", pass, pass ? "baseline" : "native");
        for (int i = 0; i < 2; i++) {
            test_forward_rms(dts[i]);
            test_forward_rotary(dts[i]);
            test_forward_swiglu(dts[i]);
            test_cmp(dts[i]);
        }
        test_fd();
        test_threads();
    }
    unsetenv("ATEN_CPU_CAPABILITY");
    test_fallback();
    sn_aten_gen_free(G);
    return sn_test_done();
}
