/* tests/test_aten_ops.c: every op of aten/aten.h against values computed by hand or from an
** identity (softmax rows sum to 1, attention equals a plain loop, GQA equals repeated heads,
** padded keys are ignored), plus the error paths (no exception escapes, readable messages)
** and host I/O. Gradients are in test_aten_grad.c. */
#include "aten/aten.h"
#include "tests/testutil.h"
#include "tests/testutil_aten.h"

#include <errno.h>
#include <stdint.h>

static struct sn_err E;

/* A tensor of dtype dt from doubles. */
static struct sn_tensor *mk(const double *v, const int64_t *shape, int ndim, enum sn_dtype dt)
{
    struct sn_tensor *t = NULL;
    OK(sn_aten_from_host(v, SN_DTYPE_F64, shape, ndim, dt, SN_CPU, &t, &E));
    return t;
}

/* All elements as doubles into out[n] (n must be numel). */
static void host(const struct sn_tensor *t, double *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = NAN;
    OK(sn_aten_to_host(t, out, SN_DTYPE_F64, n, &E));
}

static void check_vals(const char *what, const struct sn_tensor *t, const double *want, size_t n,
                       double tol)
{
    double got[256];
    CHECK(n <= 256);
    CHECK_MSG(sn_tensor_numel(t) == (int64_t)n, "%s: numel %lld want %zu", what,
              (long long)sn_tensor_numel(t), n);
    if (sn_tensor_numel(t) != (int64_t)n)
        return;
    host(t, got, n);
    for (size_t i = 0; i < n; i++)
        CHECK_MSG(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])), "%s[%zu] = %.10g want %.10g",
                  what, i, got[i], want[i]);
}

static void test_creation_and_queries(void)
{
    int64_t s23[] = {2, 3};
    struct sn_tensor *z = NULL, *o = NULL, *f = NULL, *a = NULL, *e = NULL;
    OK(sn_aten_zeros(s23, 2, SN_DTYPE_F32, SN_CPU, &z, &E));
    OK(sn_aten_ones(s23, 2, SN_DTYPE_F64, SN_CPU, &o, &E));
    OK(sn_aten_full(s23, 2, 2.5, SN_DTYPE_BF16, SN_CPU, &f, &E));
    OK(sn_aten_arange(1, 7, 2, SN_DTYPE_I64, SN_CPU, &a, &E));
    OK(sn_aten_empty(NULL, 0, SN_DTYPE_F32, SN_CPU, &e, &E));
    double zero6[6] = {0}, one6[6] = {1, 1, 1, 1, 1, 1}, f6[6] = {2.5, 2.5, 2.5, 2.5, 2.5, 2.5};
    check_vals("zeros", z, zero6, 6, 0);
    check_vals("ones", o, one6, 6, 0);
    check_vals("full bf16", f, f6, 6, 0);
    check_vals("arange", a, (double[]){1, 3, 5}, 3, 0);
    CHECK(sn_tensor_ndim(z) == 2 && sn_tensor_size(z, 0) == 2 && sn_tensor_size(z, 1) == 3);
    CHECK(sn_tensor_size(z, -1) == 3 && sn_tensor_size(z, 2) == -1 && sn_tensor_size(z, -3) == -1);
    CHECK(sn_tensor_numel(z) == 6 && sn_tensor_nbytes(z) == 24);
    CHECK(sn_tensor_dtype(z) == SN_DTYPE_F32 && sn_tensor_dtype(o) == SN_DTYPE_F64);
    CHECK(sn_tensor_dtype(f) == SN_DTYPE_BF16 && sn_tensor_dtype(a) == SN_DTYPE_I64);
    CHECK(sn_tensor_device(z).type == SN_DEVICE_CPU);
    CHECK(sn_tensor_is_contiguous(z) && sn_tensor_defined(z));
    CHECK(sn_tensor_ndim(e) == 0 && sn_tensor_numel(e) == 1);
    int64_t shp[4] = {0};
    CHECK(sn_tensor_shape(z, shp, 4) == 2 && shp[0] == 2 && shp[1] == 3);
    char buf[128];
    CHECK_STR(sn_tensor_describe(z, buf, sizeof buf), "f32[2, 3] cpu");
    CHECK_STR(sn_dtype_name(SN_DTYPE_BF16), "bf16");
    CHECK(sn_dtype_size(SN_DTYPE_I64) == 8 && sn_dtype_size(SN_DTYPE_COUNT) == 0);
    CHECK(sn_tensor_data_ptr(z) != NULL);

    /* from_host: i32 host ids, bf16 raw bits (0x3F80 = 1.0, 0xC040 = -3.0) */
    int32_t ids[3] = {7, -2, 5};
    struct sn_tensor *ti = NULL, *tb = NULL;
    OK(sn_aten_from_host(ids, SN_DTYPE_I32, (int64_t[]){3}, 1, SN_DTYPE_I64, SN_CPU, &ti, &E));
    check_vals("from_host i32->i64", ti, (double[]){7, -2, 5}, 3, 0);
    int64_t back[3] = {0};
    OK(sn_aten_to_host(ti, back, SN_DTYPE_I64, 3, &E));
    CHECK(back[0] == 7 && back[1] == -2 && back[2] == 5);
    uint16_t bits[2] = {0x3F80, 0xC040};
    OK(sn_aten_from_host(bits, SN_DTYPE_BF16, (int64_t[]){2}, 1, SN_DTYPE_F32, SN_CPU, &tb, &E));
    check_vals("bf16 bits", tb, (double[]){1.0, -3.0}, 2, 0);
    /* the copy does not alias the host buffer */
    float hb[2] = {1, 2};
    struct sn_tensor *th = NULL;
    OK(sn_aten_from_host(hb, SN_DTYPE_F32, (int64_t[]){2}, 1, SN_DTYPE_F32, SN_CPU, &th, &E));
    hb[0] = 99;
    check_vals("from_host copies", th, (double[]){1, 2}, 2, 0);
    float *p = sn_tensor_data_ptr(th);
    CHECK(p && p[1] == 2.0f);

    /* conversions */
    struct sn_tensor *c = NULL, *d = NULL, *dt = NULL;
    OK(sn_aten_to_dtype(tb, SN_DTYPE_I32, &c, &E));
    CHECK(sn_tensor_dtype(c) == SN_DTYPE_I32);
    check_vals("to_dtype", c, (double[]){1, -3}, 2, 0);
    OK(sn_aten_to_device(tb, SN_CPU, &d, &E));
    OK(sn_aten_detach(tb, &dt, &E));
    check_vals("to_device", d, (double[]){1, -3}, 2, 0);
    struct sn_tensor *al = NULL;
    OK(sn_tensor_alias(th, &al, &E));
    OK(sn_aten_fill_(al, 4.0, &E));
    check_vals("alias shares", th, (double[]){4, 4}, 2, 0);
    struct sn_tensor *cl = NULL;
    OK(sn_aten_clone(th, &cl, &E));
    OK(sn_aten_zero_(cl, &E));
    check_vals("clone is a copy", th, (double[]){4, 4}, 2, 0);

    sn_tensor_free(z), sn_tensor_free(o), sn_tensor_free(f), sn_tensor_free(a);
    sn_tensor_free(e), sn_tensor_free(ti), sn_tensor_free(tb), sn_tensor_free(th);
    sn_tensor_free(c), sn_tensor_free(d), sn_tensor_free(dt), sn_tensor_free(al);
    sn_tensor_free(cl);
    sn_tensor_free(NULL);
}

static void test_views(void)
{
    double v[6] = {1, 2, 3, 4, 5, 6};
    struct sn_tensor *x = mk(v, (int64_t[]){2, 3}, 2, SN_DTYPE_F32);
    struct sn_tensor *t = NULL, *r = NULL, *n = NULL, *s = NULL, *u = NULL, *q = NULL, *e = NULL;
    struct sn_tensor *c = NULL, *p = NULL, *st = NULL, *fl = NULL, *vw = NULL, *sel = NULL;
    OK(sn_aten_transpose(x, 0, 1, &t, &E));
    CHECK(!sn_tensor_is_contiguous(t) && sn_tensor_data_ptr(t) == NULL);
    check_vals("transpose", t, (double[]){1, 4, 2, 5, 3, 6}, 6, 0);
    OK(sn_aten_contiguous(t, &c, &E));
    CHECK(sn_tensor_is_contiguous(c));
    OK(sn_aten_reshape(t, (int64_t[]){-1}, 1, &r, &E));
    check_vals("reshape", r, (double[]){1, 4, 2, 5, 3, 6}, 6, 0);
    CHECK(sn_aten_view(t, (int64_t[]){6}, 1, &vw, &E) == SN_E_BACKEND && vw == NULL);
    sn_err_clear(&E);
    OK(sn_aten_view(x, (int64_t[]){3, 2}, 2, &vw, &E));
    CHECK(sn_tensor_size(vw, 0) == 3);
    OK(sn_aten_narrow(x, 1, 1, 2, &n, &E));
    check_vals("narrow", n, (double[]){2, 3, 5, 6}, 4, 0);
    OK(sn_aten_slice(x, 1, 0, 100, 2, &s, &E));
    check_vals("slice step 2", s, (double[]){1, 3, 4, 6}, 4, 0);
    OK(sn_aten_select(x, 0, 1, &sel, &E));
    CHECK(sn_tensor_ndim(sel) == 1);
    check_vals("select", sel, (double[]){4, 5, 6}, 3, 0);
    OK(sn_aten_unsqueeze(x, 1, &u, &E));
    CHECK(sn_tensor_ndim(u) == 3 && sn_tensor_size(u, 1) == 1);
    OK(sn_aten_squeeze(u, 1, &q, &E));
    CHECK(sn_tensor_ndim(q) == 2);
    struct sn_tensor *row = mk((double[]){7, 8, 9}, (int64_t[]){1, 3}, 2, SN_DTYPE_F32);
    OK(sn_aten_expand(row, (int64_t[]){2, -1}, 2, &e, &E));
    check_vals("expand", e, (double[]){7, 8, 9, 7, 8, 9}, 6, 0);
    int perm[3] = {2, 0, 1};
    OK(sn_aten_permute(u, perm, 3, &p, &E));
    CHECK(sn_tensor_size(p, 0) == 3 && sn_tensor_size(p, 1) == 2 && sn_tensor_size(p, 2) == 1);
    struct sn_tensor *pair[2] = {x, row};
    struct sn_tensor *cat = NULL;
    OK(sn_aten_cat(pair, 2, 0, &cat, &E));
    check_vals("cat", cat, (double[]){1, 2, 3, 4, 5, 6, 7, 8, 9}, 9, 0);
    struct sn_tensor *two[2] = {sel, sel};
    OK(sn_aten_stack(two, 2, 0, &st, &E));
    CHECK(sn_tensor_ndim(st) == 2 && sn_tensor_size(st, 0) == 2);
    OK(sn_aten_flatten(u, 0, -1, &fl, &E));
    CHECK(sn_tensor_ndim(fl) == 1 && sn_tensor_numel(fl) == 6);
    /* a view shares storage: writing through it changes x */
    OK(sn_aten_fill_(n, 0.0, &E));
    check_vals("view writes through", x, (double[]){1, 0, 0, 4, 0, 0}, 6, 0);
    struct sn_tensor *all[] = {x, t, r, n, s, u, q, e, c, p, st, fl, vw, sel, row, cat};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sn_tensor_free(all[i]);
}

typedef int (*unary_fn)(const struct sn_tensor *, struct sn_tensor **, struct sn_err *);

static void check_unary(const char *what, unary_fn f, const double *x, size_t n,
                        double (*ref)(double), double tol)
{
    struct sn_tensor *t = mk(x, (int64_t[]){(int64_t)n}, 1, SN_DTYPE_F64), *y = NULL;
    OK(f(t, &y, &E));
    double want[64];
    for (size_t i = 0; i < n; i++)
        want[i] = ref(x[i]);
    check_vals(what, y, want, n, tol);
    sn_tensor_free(t);
    sn_tensor_free(y);
}

static double r_neg(double x) { return -x; }
static double r_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double r_silu(double x) { return x / (1 + exp(-x)); }
/* log σ(x) = -(max(-x,0) + log1p(exp(-|x|))) (docs/design.md §7) */
static double r_logsig(double x) { return -(fmax(-x, 0.0) + log1p(exp(-fabs(x)))); }
static double r_relu(double x) { return x > 0 ? x : 0; }
static double r_rsqrt(double x) { return 1 / sqrt(x); }

static void test_elementwise(void)
{
    const double xs[] = {-3, -0.5, 0.25, 1, 2.5};
    const double pos[] = {0.25, 1, 2, 9};
    check_unary("neg", sn_aten_neg, xs, 5, r_neg, 0);
    check_unary("abs", sn_aten_abs, xs, 5, fabs, 0);
    check_unary("exp", sn_aten_exp, xs, 5, exp, 1e-15);
    check_unary("tanh", sn_aten_tanh, xs, 5, tanh, 1e-15);
    check_unary("sigmoid", sn_aten_sigmoid, xs, 5, r_sigmoid, 1e-15);
    check_unary("silu", sn_aten_silu, xs, 5, r_silu, 1e-15);
    check_unary("logsigmoid", sn_aten_logsigmoid, xs, 5, r_logsig, 1e-15);
    check_unary("relu", sn_aten_relu, xs, 5, r_relu, 0);
    check_unary("log", sn_aten_log, pos, 4, log, 1e-15);
    check_unary("sqrt", sn_aten_sqrt, pos, 4, sqrt, 1e-15);
    check_unary("rsqrt", sn_aten_rsqrt, pos, 4, r_rsqrt, 1e-15);

    /* logsigmoid stays finite far in the tail in f32 */
    struct sn_tensor *big = mk((double[]){-200, 200}, (int64_t[]){2}, 1, SN_DTYPE_F32), *ls = NULL;
    OK(sn_aten_logsigmoid(big, &ls, &E));
    check_vals("logsigmoid tail", ls, (double[]){-200, 0}, 2, 1e-6);

    /* broadcasting (2,2) op (2) */
    struct sn_tensor *a = mk((double[]){1, 2, 3, 4}, (int64_t[]){2, 2}, 2, SN_DTYPE_F64);
    struct sn_tensor *b = mk((double[]){10, 20}, (int64_t[]){2}, 1, SN_DTYPE_F64);
    struct sn_tensor *y = NULL;
    OK(sn_aten_add(a, b, &y, &E)); check_vals("add", y, (double[]){11, 22, 13, 24}, 4, 0);
    sn_tensor_free(y);
    OK(sn_aten_sub(a, b, &y, &E)); check_vals("sub", y, (double[]){-9, -18, -7, -16}, 4, 0);
    sn_tensor_free(y);
    OK(sn_aten_mul(a, b, &y, &E)); check_vals("mul", y, (double[]){10, 40, 30, 80}, 4, 0);
    sn_tensor_free(y);
    OK(sn_aten_div(a, b, &y, &E)); check_vals("div", y, (double[]){.1, .1, .3, .2}, 4, 1e-15);
    sn_tensor_free(y);
    struct sn_tensor *c25 = mk((double[]){2.5}, (int64_t[]){1}, 1, SN_DTYPE_F64);
    OK(sn_aten_maximum(a, c25, &y, &E)); check_vals("maximum", y, (double[]){2.5, 2.5, 3, 4}, 4, 0);
    sn_tensor_free(y);
    sn_tensor_free(c25);
    OK(sn_aten_add_scalar(a, 0.5, &y, &E)); check_vals("add_s", y, (double[]){1.5, 2.5, 3.5, 4.5}, 4, 0);
    sn_tensor_free(y);
    OK(sn_aten_mul_scalar(a, -2, &y, &E)); check_vals("mul_s", y, (double[]){-2, -4, -6, -8}, 4, 0);
    sn_tensor_free(y);
    OK(sn_aten_pow_scalar(a, 2, &y, &E)); check_vals("pow", y, (double[]){1, 4, 9, 16}, 4, 0);
    sn_tensor_free(y);
    OK(sn_aten_clamp(a, 1.5, 3.5, &y, &E)); check_vals("clamp", y, (double[]){1.5, 2, 3, 3.5}, 4, 0);
    sn_tensor_free(y);
    OK(sn_aten_clamp(a, -INFINITY, 2, &y, &E)); check_vals("clamp hi", y, (double[]){1, 2, 2, 2}, 4, 0);
    sn_tensor_free(y);
    OK(sn_aten_clamp(a, -INFINITY, INFINITY, &y, &E)); check_vals("clamp none", y, (double[]){1, 2, 3, 4}, 4, 0);
    sn_tensor_free(y);

    /* comparisons, where, masked_fill */
    struct sn_tensor *thr = mk((double[]){2, 2}, (int64_t[]){2}, 1, SN_DTYPE_F64);
    struct sn_tensor *gt = NULL, *eq = NULL, *lt = NULL, *ne = NULL, *gs = NULL, *es = NULL;
    struct sn_tensor *nt = NULL, *an = NULL;
    OK(sn_aten_gt(a, thr, &gt, &E));
    CHECK(sn_tensor_dtype(gt) == SN_DTYPE_BOOL);
    check_vals("gt", gt, (double[]){0, 0, 1, 1}, 4, 0);
    OK(sn_aten_eq(a, thr, &eq, &E)); check_vals("eq", eq, (double[]){0, 1, 0, 0}, 4, 0);
    OK(sn_aten_lt(a, thr, &lt, &E)); check_vals("lt", lt, (double[]){1, 0, 0, 0}, 4, 0);
    OK(sn_aten_ne(a, thr, &ne, &E)); check_vals("ne", ne, (double[]){1, 0, 1, 1}, 4, 0);
    OK(sn_aten_gt_scalar(a, 3, &gs, &E)); check_vals("gt_s", gs, (double[]){0, 0, 0, 1}, 4, 0);
    OK(sn_aten_eq_scalar(a, 3, &es, &E)); check_vals("eq_s", es, (double[]){0, 0, 1, 0}, 4, 0);
    OK(sn_aten_logical_not(gt, &nt, &E)); check_vals("not", nt, (double[]){1, 1, 0, 0}, 4, 0);
    OK(sn_aten_logical_and(nt, ne, &an, &E)); check_vals("and", an, (double[]){1, 0, 0, 0}, 4, 0);
    OK(sn_aten_where(gt, a, b, &y, &E)); check_vals("where", y, (double[]){10, 20, 3, 4}, 4, 0);
    sn_tensor_free(y);
    OK(sn_aten_masked_fill(a, gt, -1, &y, &E)); check_vals("masked_fill", y, (double[]){1, 2, -1, -1}, 4, 0);
    sn_tensor_free(y);
    struct sn_tensor *all[] = {big, ls, a, b, thr, gt, eq, lt, ne, gs, es, nt, an};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sn_tensor_free(all[i]);
}

static void test_reductions_linalg_indexing(void)
{
    struct sn_tensor *a = mk((double[]){1, 5, 3, 4, 2, 6}, (int64_t[]){2, 3}, 2, SN_DTYPE_F64);
    struct sn_tensor *y = NULL, *ix = NULL;
    double v;
    OK(sn_aten_sum_all(a, &y, &E)); OK(sn_aten_item_f64(y, &v, &E)); CHECK(v == 21); sn_tensor_free(y);
    OK(sn_aten_mean_all(a, &y, &E)); OK(sn_aten_item_f64(y, &v, &E)); CHECK(v == 3.5); sn_tensor_free(y);
    OK(sn_aten_max_all(a, &y, &E)); OK(sn_aten_item_f64(y, &v, &E)); CHECK(v == 6); sn_tensor_free(y);
    OK(sn_aten_sum(a, 0, false, &y, &E));
    CHECK(sn_tensor_ndim(y) == 1); check_vals("sum0", y, (double[]){5, 7, 9}, 3, 0); sn_tensor_free(y);
    OK(sn_aten_sum(a, 1, true, &y, &E));
    CHECK(sn_tensor_ndim(y) == 2 && sn_tensor_size(y, 1) == 1);
    check_vals("sum1", y, (double[]){9, 12}, 2, 0); sn_tensor_free(y);
    OK(sn_aten_mean(a, -1, false, &y, &E)); check_vals("mean", y, (double[]){3, 4}, 2, 0); sn_tensor_free(y);
    OK(sn_aten_max(a, 1, false, &y, &ix, &E));
    check_vals("max", y, (double[]){5, 6}, 2, 0); check_vals("max idx", ix, (double[]){1, 2}, 2, 0);
    CHECK(sn_tensor_dtype(ix) == SN_DTYPE_I64);
    sn_tensor_free(y), sn_tensor_free(ix);
    OK(sn_aten_max(a, 0, true, &y, NULL, &E)); check_vals("max0", y, (double[]){4, 5, 6}, 3, 0); sn_tensor_free(y);
    OK(sn_aten_argmax(a, 0, false, &y, &E)); check_vals("argmax", y, (double[]){1, 0, 1}, 3, 0); sn_tensor_free(y);
    struct sn_tensor *v34 = mk((double[]){3, 4}, (int64_t[]){2}, 1, SN_DTYPE_F32);
    OK(sn_aten_norm(v34, &y, &E)); OK(sn_aten_item_f64(y, &v, &E)); CHECK_CLOSE(v, 5, 1e-6, 0); sn_tensor_free(y);
    bool fin = false;
    OK(sn_aten_all_finite(a, &fin, &E)); CHECK(fin);
    struct sn_tensor *bad = mk((double[]){1, NAN}, (int64_t[]){2}, 1, SN_DTYPE_F32);
    OK(sn_aten_all_finite(bad, &fin, &E)); CHECK(!fin);
    double mad = -1;
    OK(sn_aten_max_abs_diff(a, a, &mad, &E)); CHECK(mad == 0);
    CHECK(sn_aten_max_abs_diff(v34, a, &mad, &E) == SN_E_BACKEND); /* (2) vs (2,3) */
    sn_err_clear(&E);

    /* matmul (2,3)x(3,2) by hand: [1 5 3;4 2 6] x [1 2;0 1;-1 3] = [-2 16; -2 28] */
    struct sn_tensor *b = mk((double[]){1, 2, 0, 1, -1, 3}, (int64_t[]){3, 2}, 2, SN_DTYPE_F64);
    OK(sn_aten_matmul(a, b, &y, &E)); check_vals("matmul", y, (double[]){-2, 16, -2, 28}, 4, 0);
    sn_tensor_free(y);
    struct sn_tensor *a3 = NULL, *b3 = NULL, *a1 = NULL, *b1 = NULL;
    OK(sn_aten_unsqueeze(a, 0, &a1, &E)); OK(sn_aten_unsqueeze(b, 0, &b1, &E));
    struct sn_tensor *aa[2] = {a1, a1}, *bb[2] = {b1, b1};
    OK(sn_aten_cat(aa, 2, 0, &a3, &E)); OK(sn_aten_cat(bb, 2, 0, &b3, &E));
    OK(sn_aten_bmm(a3, b3, &y, &E));
    check_vals("bmm", y, (double[]){-2, 16, -2, 28, -2, 16, -2, 28}, 8, 0); sn_tensor_free(y);
    /* linear: x (2,3), W (out 2, in 3) = bᵀ, bias (2): x Wᵀ + bias */
    struct sn_tensor *w = NULL, *wc = NULL;
    OK(sn_aten_transpose(b, 0, 1, &w, &E)); OK(sn_aten_contiguous(w, &wc, &E));
    struct sn_tensor *bias = mk((double[]){0.5, -1}, (int64_t[]){2}, 1, SN_DTYPE_F64);
    OK(sn_aten_linear(a, wc, bias, &y, &E)); check_vals("linear", y, (double[]){-1.5, 15, -1.5, 27}, 4, 0);
    sn_tensor_free(y);
    OK(sn_aten_linear(a, wc, NULL, &y, &E)); check_vals("linear nobias", y, (double[]){-2, 16, -2, 28}, 4, 0);
    sn_tensor_free(y);
    /* add_linear: c + 0.5 · a wcᵀ with c = [[1,2],[3,4]] */
    struct sn_tensor *c22 = mk((double[]){1, 2, 3, 4}, (int64_t[]){2, 2}, 2, SN_DTYPE_F64);
    OK(sn_aten_add_linear(c22, a, wc, 0.5, &y, &E));
    check_vals("add_linear", y, (double[]){0, 10, 2, 18}, 4, 0);
    sn_tensor_free(y);
    CHECK(sn_aten_add_linear(c22, c22, wc, 1.0, &y, &E) == SN_E_ARG && !y);
    CHECK(strstr(E.msg, "shapes disagree") != NULL);
    sn_tensor_free(c22);

    /* embedding with i64 and i32 ids */
    struct sn_tensor *tab = mk((double[]){0, 1, 10, 11, 20, 21, 30, 31}, (int64_t[]){4, 2}, 2, SN_DTYPE_F32);
    struct sn_tensor *id64 = mk((double[]){3, 0, 3}, (int64_t[]){1, 3}, 2, SN_DTYPE_I64);
    struct sn_tensor *id32 = mk((double[]){2, 1}, (int64_t[]){2}, 1, SN_DTYPE_I32);
    OK(sn_aten_embedding(tab, id64, &y, &E));
    CHECK(sn_tensor_ndim(y) == 3 && sn_tensor_size(y, 2) == 2);
    check_vals("embedding", y, (double[]){30, 31, 0, 1, 30, 31}, 6, 0); sn_tensor_free(y);
    OK(sn_aten_embedding(tab, id32, &y, &E)); check_vals("embedding i32", y, (double[]){20, 21, 10, 11}, 4, 0);
    sn_tensor_free(y);
    struct sn_tensor *i1 = mk((double[]){1}, (int64_t[]){1}, 1, SN_DTYPE_I64);
    OK(sn_aten_index_select(tab, 1, i1, &y, &E)); check_vals("index_select", y, (double[]){1, 11, 21, 31}, 4, 0);
    sn_tensor_free(y);
    /* gather the last-token rows of h (B=2,T=3,D=2) at positions (2, 0) */
    struct sn_tensor *h = mk((double[]){1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, (int64_t[]){2, 3, 2}, 3,
                             SN_DTYPE_F64);
    struct sn_tensor *pos = mk((double[]){2, 0}, (int64_t[]){2, 1, 1}, 3, SN_DTYPE_I64), *pe = NULL;
    OK(sn_aten_expand(pos, (int64_t[]){2, 1, 2}, 3, &pe, &E));
    OK(sn_aten_gather(h, 1, pe, &y, &E)); check_vals("gather", y, (double[]){5, 6, 7, 8}, 4, 0);
    sn_tensor_free(y);
    struct sn_tensor *all[] = {a, v34, bad, b, a3, b3, a1, b1, w, wc, bias, tab, id64, id32, i1, h, pos, pe};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sn_tensor_free(all[i]);
}

static void test_softmax_norm_rope(void)
{
    double x[6] = {1, 2, 3, -1, 0, 4};
    struct sn_tensor *t = mk(x, (int64_t[]){2, 3}, 2, SN_DTYPE_F64), *y = NULL, *ly = NULL, *s = NULL;
    OK(sn_aten_softmax(t, -1, &y, &E));
    OK(sn_aten_sum(y, -1, false, &s, &E)); check_vals("softmax rows sum to 1", s, (double[]){1, 1}, 2, 1e-15);
    double want[6];
    for (int r = 0; r < 2; r++) {
        double z = 0;
        for (int j = 0; j < 3; j++)
            z += exp(x[3 * r + j]);
        for (int j = 0; j < 3; j++)
            want[3 * r + j] = exp(x[3 * r + j]) / z;
    }
    check_vals("softmax", y, want, 6, 1e-15);
    OK(sn_aten_log_softmax(t, 1, &ly, &E));
    for (int i = 0; i < 6; i++)
        want[i] = log(want[i]);
    check_vals("log_softmax", ly, want, 6, 1e-14);
    sn_tensor_free(y), sn_tensor_free(ly), sn_tensor_free(s);

    /* rms_norm on f32 x: y = w * x / sqrt(mean(x²) + eps), computed in f32 */
    struct sn_tensor *xf = mk(x, (int64_t[]){2, 3}, 2, SN_DTYPE_F32);
    struct sn_tensor *w = mk((double[]){1, 0.5, -2}, (int64_t[]){3}, 1, SN_DTYPE_F32);
    double eps = 1e-6, wv[3] = {1, 0.5, -2};
    OK(sn_aten_rms_norm(xf, w, eps, &y, &E));
    CHECK(sn_tensor_dtype(y) == SN_DTYPE_F32);
    for (int r = 0; r < 2; r++) {
        double ms = 0;
        for (int j = 0; j < 3; j++)
            ms += x[3 * r + j] * x[3 * r + j] / 3;
        for (int j = 0; j < 3; j++)
            want[3 * r + j] = wv[j] * x[3 * r + j] / sqrt(ms + eps);
    }
    check_vals("rms_norm f32", y, want, 6, 1e-6);
    sn_tensor_free(y);
    struct sn_tensor *wb = NULL;
    OK(sn_aten_to_dtype(w, SN_DTYPE_BF16, &wb, &E));
    struct sn_tensor *xb = mk(x, (int64_t[]){2, 3}, 2, SN_DTYPE_BF16);
    OK(sn_aten_rms_norm(xb, wb, eps, &y, &E));
    CHECK(sn_tensor_dtype(y) == SN_DTYPE_BF16);
    check_vals("rms_norm bf16 (8-bit mantissa)", y, want, 6, 1e-2);
    sn_tensor_free(y), sn_tensor_free(wb), sn_tensor_free(xb);
    struct sn_tensor *w4 = mk((double[]){1, 1, 1, 1}, (int64_t[]){4}, 1, SN_DTYPE_F32);
    CHECK(sn_aten_rms_norm(xf, w4, eps, &y, &E) == SN_E_ARG && y == NULL);
    CHECK(strstr(E.msg, "rms_norm") != NULL);
    sn_err_clear(&E);

    /* rotate_half([1,2,3,4]) = [-3,-4,1,2] */
    struct sn_tensor *r4 = mk((double[]){1, 2, 3, 4}, (int64_t[]){4}, 1, SN_DTYPE_F32);
    OK(sn_aten_rotate_half(r4, &y, &E)); check_vals("rotate_half", y, (double[]){-3, -4, 1, 2}, 4, 0);
    sn_tensor_free(y);

    /* RoPE tables: positions (T=3), D=4, theta 10000: inv_freq = (1, 10000^-0.5) */
    const int64_t D = 4, T = 3;
    struct sn_tensor *p = NULL, *c = NULL, *sn = NULL;
    OK(sn_aten_arange(0, (double)T, 1, SN_DTYPE_I64, SN_CPU, &p, &E));
    OK(sn_aten_rope_tables(p, D, 10000.0, SN_DTYPE_F64, &c, &sn, &E));
    CHECK(sn_tensor_ndim(c) == 2 && sn_tensor_size(c, 0) == T && sn_tensor_size(c, 1) == D);
    double cw[12], sw[12];
    for (int64_t i = 0; i < T; i++)
        for (int64_t j = 0; j < D; j++) {
            double inv = pow(10000.0, -2.0 * (double)(j % (D / 2)) / (double)D);
            cw[i * D + j] = cos((double)i * inv);
            sw[i * D + j] = sin((double)i * inv);
        }
    check_vals("rope cos", c, cw, 12, 1e-12);
    check_vals("rope sin", sn, sw, 12, 1e-12);
    /* apply_rotary on x (1,1,3,4): x*cos + rotate_half(x)*sin, element by element */
    double xv[12];
    for (int i = 0; i < 12; i++)
        xv[i] = 0.1 * i - 0.4;
    struct sn_tensor *xq = mk(xv, (int64_t[]){1, 1, T, D}, 4, SN_DTYPE_F64);
    OK(sn_aten_apply_rotary(xq, c, sn, &y, &E));
    double rw[12];
    for (int64_t i = 0; i < T; i++)
        for (int64_t j = 0; j < D; j++) {
            double rh = j < D / 2 ? -xv[i * D + j + D / 2] : xv[i * D + j - D / 2];
            rw[i * D + j] = xv[i * D + j] * cw[i * D + j] + rh * sw[i * D + j];
        }
    check_vals("apply_rotary", y, rw, 12, 1e-12);
    sn_tensor_free(y);
    /* (B,T,D) tables broadcast over heads and give the same result */
    struct sn_tensor *p2 = NULL, *c2 = NULL, *s2 = NULL;
    OK(sn_aten_unsqueeze(p, 0, &p2, &E));
    OK(sn_aten_rope_tables(p2, D, 10000.0, SN_DTYPE_F32, &c2, &s2, &E));
    CHECK(sn_tensor_ndim(c2) == 3 && sn_tensor_dtype(c2) == SN_DTYPE_F32);
    OK(sn_aten_apply_rotary(xq, c2, s2, &y, &E));
    check_vals("apply_rotary (B,T,D) f32 tables", y, rw, 12, 1e-6);
    sn_tensor_free(y);
    sn_tensor_free(c2), sn_tensor_free(s2);
    CHECK(sn_aten_rope_tables(p, 3, 10000.0, SN_DTYPE_F32, &c2, &s2, &E) == SN_E_ARG);
    CHECK(c2 == NULL && s2 == NULL);
    sn_err_clear(&E);
    struct sn_tensor *all[] = {t, xf, w, w4, r4, p, c, sn, xq, p2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sn_tensor_free(all[i]);
}

/* Reference attention by plain loops (aten.h contract): GQA head map h -> h / (Hq/Hkv), causal
** j <= i + (Tk - Tq), keep[b][j]; a row with no allowed key averages all values uniformly. */
static void ref_attention(const double *q, const double *k, const double *v, const int *keep,
                          bool causal, int B, int Hq, int Hkv, int Tq, int Tk, int D, double *out)
{
    double sc[64];
    for (int b = 0; b < B; b++)
        for (int h = 0; h < Hq; h++) {
            int g = h / (Hq / Hkv);
            for (int i = 0; i < Tq; i++) {
                const double *qi = q + (((size_t)b * Hq + h) * Tq + i) * D;
                double mx = -INFINITY;
                int n_ok = 0;
                for (int j = 0; j < Tk; j++) {
                    const double *kj = k + (((size_t)b * Hkv + g) * Tk + j) * D;
                    bool ok = (!causal || j <= i + (Tk - Tq)) && (!keep || keep[b * Tk + j]);
                    double s = 0;
                    for (int d = 0; d < D; d++)
                        s += qi[d] * kj[d];
                    sc[j] = ok ? s / sqrt((double)D) : -INFINITY;
                    if (ok) {
                        n_ok++;
                        mx = fmax(mx, sc[j]);
                    }
                }
                double z = 0;
                for (int j = 0; j < Tk; j++) {
                    sc[j] = n_ok ? (isinf(sc[j]) ? 0 : exp(sc[j] - mx)) : 1.0;
                    z += sc[j];
                }
                double *o = out + (((size_t)b * Hq + h) * Tq + i) * D;
                for (int d = 0; d < D; d++) {
                    double acc = 0;
                    for (int j = 0; j < Tk; j++)
                        acc += sc[j] / z * v[(((size_t)b * Hkv + g) * Tk + j) * D + d];
                    o[d] = acc;
                }
            }
        }
}

static struct sn_tensor *randn64(struct sn_aten_gen *g, const int64_t *shape, int nd, double *host_out)
{
    struct sn_tensor *t = NULL;
    OK(sn_aten_randn(shape, nd, SN_DTYPE_F64, SN_CPU, g, &t, &E));
    if (host_out)
        host(t, host_out, (size_t)sn_tensor_numel(t));
    return t;
}

static void test_attention(void)
{
    enum { B = 2, Hq = 4, Hkv = 2, T = 5, D = 3 };
    struct sn_aten_gen *g = NULL;
    OK(sn_aten_gen_create(42, SN_CPU, &g, &E));
    static double q[B * Hq * T * D], k[B * Hkv * T * D], v[B * Hkv * T * D], want[B * Hq * T * D];
    struct sn_tensor *tq = randn64(g, (int64_t[]){B, Hq, T, D}, 4, q);
    struct sn_tensor *tk = randn64(g, (int64_t[]){B, Hkv, T, D}, 4, k);
    struct sn_tensor *tv = randn64(g, (int64_t[]){B, Hkv, T, D}, 4, v);
    /* batch 0 left-padded (2 pads), batch 1 right-padded (1 pad) */
    int keep[B * T] = {0, 0, 1, 1, 1, 1, 1, 1, 1, 0};
    double keepd[B * T];
    for (int i = 0; i < B * T; i++)
        keepd[i] = keep[i];
    struct sn_tensor *tkeep = mk(keepd, (int64_t[]){B, T}, 2, SN_DTYPE_I64);
    struct sn_tensor *y = NULL;
    const bool causal_opts[2] = {false, true};
    for (int c = 0; c < 2; c++)
        for (int m = 0; m < 2; m++) {
            OK(sn_aten_attention(tq, tk, tv, m ? tkeep : NULL, causal_opts[c], 0, 0, NULL, &y, &E));
            ref_attention(q, k, v, m ? keep : NULL, causal_opts[c], B, Hq, Hkv, T, T, D, want);
            char what[64];
            snprintf(what, sizeof what, "attention causal=%d mask=%d", c, m);
            check_vals(what, y, want, B * Hq * T * D, 1e-12);
            sn_tensor_free(y);
        }
    /* GQA equals explicitly repeated kv heads */
    struct sn_tensor *kr = NULL, *vr = NULL, *y2 = NULL;
    OK(sn_aten_repeat_kv(tk, Hq / Hkv, &kr, &E));
    OK(sn_aten_repeat_kv(tv, Hq / Hkv, &vr, &E));
    CHECK(sn_tensor_size(kr, 1) == Hq);
    OK(sn_aten_attention(tq, tk, tv, tkeep, true, 0, 0, NULL, &y, &E));
    OK(sn_aten_attention(tq, kr, vr, tkeep, true, 0, 0, NULL, &y2, &E));
    double diff = 1;
    OK(sn_aten_max_abs_diff(y, y2, &diff, &E));
    CHECK_MSG(diff == 0, "GQA vs repeated heads differ by %g", diff);
    /* padded keys are ignored: changing their values changes nothing (batch 1, key 4) */
    struct sn_tensor *vb = NULL, *kb = NULL, *slot = NULL, *y3 = NULL;
    OK(sn_aten_clone(tv, &vb, &E)); OK(sn_aten_clone(tk, &kb, &E));
    OK(sn_aten_narrow(vb, 0, 1, 1, &slot, &E));
    struct sn_tensor *slot2 = NULL;
    OK(sn_aten_narrow(slot, 2, 4, 1, &slot2, &E));
    OK(sn_aten_fill_(slot2, 1e3, &E));
    sn_tensor_free(slot), sn_tensor_free(slot2);
    OK(sn_aten_narrow(kb, 0, 1, 1, &slot, &E));
    OK(sn_aten_narrow(slot, 2, 4, 1, &slot2, &E));
    OK(sn_aten_fill_(slot2, -7, &E));
    OK(sn_aten_attention(tq, kb, vb, tkeep, false, 0, 0, NULL, &y3, &E));
    ref_attention(q, k, v, keep, false, B, Hq, Hkv, T, T, D, want);
    check_vals("padded keys ignored", y3, want, B * Hq * T * D, 1e-12);
    /* all-masked rows stay finite (left padding under the causal mask) */
    bool fin = false;
    OK(sn_aten_all_finite(y, &fin, &E)); CHECK(fin);
    sn_tensor_free(y), sn_tensor_free(y2), sn_tensor_free(y3);
    sn_tensor_free(slot), sn_tensor_free(slot2), sn_tensor_free(vb), sn_tensor_free(kb);
    /* Tq < Tk (decoding against a longer key sequence): causal offset Tk - Tq */
    struct sn_tensor *q2 = NULL;
    OK(sn_aten_narrow(tq, 2, 3, 2, &q2, &E));
    double q2h[B * Hq * 2 * D];
    host(q2, q2h, B * Hq * 2 * D);
    OK(sn_aten_attention(q2, tk, tv, NULL, true, 0, 0, NULL, &y, &E));
    ref_attention(q2h, k, v, NULL, true, B, Hq, Hkv, 2, T, D, want);
    check_vals("attention Tq<Tk", y, want, B * Hq * 2 * D, 1e-12);
    sn_tensor_free(y), sn_tensor_free(q2);
    /* bf16 inputs: softmax in f32, close to the f64 loop */
    struct sn_tensor *qb = NULL, *kbf = NULL, *vbf = NULL;
    OK(sn_aten_to_dtype(tq, SN_DTYPE_BF16, &qb, &E));
    OK(sn_aten_to_dtype(tk, SN_DTYPE_BF16, &kbf, &E));
    OK(sn_aten_to_dtype(tv, SN_DTYPE_BF16, &vbf, &E));
    OK(sn_aten_attention(qb, kbf, vbf, tkeep, true, 0, 0, NULL, &y, &E));
    CHECK(sn_tensor_dtype(y) == SN_DTYPE_BF16);
    ref_attention(q, k, v, keep, true, B, Hq, Hkv, T, T, D, want);
    check_vals("attention bf16", y, want, B * Hq * T * D, 5e-2);
    sn_tensor_free(y), sn_tensor_free(qb), sn_tensor_free(kbf), sn_tensor_free(vbf);
    /* errors: heads not a multiple, mask of the wrong shape */
    struct sn_tensor *k3 = randn64(g, (int64_t[]){B, 3, T, D}, 4, NULL);
    CHECK(sn_aten_attention(tq, k3, k3, NULL, true, 0, 0, NULL, &y, &E) == SN_E_ARG && !y);
    CHECK(strstr(E.msg, "multiple") != NULL);
    sn_err_clear(&E);
    CHECK(sn_aten_attention(tq, tk, tv, tq, true, 0, 0, NULL, &y, &E) == SN_E_ARG && !y);
    sn_err_clear(&E);
    sn_tensor_free(k3), sn_tensor_free(kr), sn_tensor_free(vr);
    sn_tensor_free(tq), sn_tensor_free(tk), sn_tensor_free(tv), sn_tensor_free(tkeep);
    sn_aten_gen_free(g);
}

static void test_random_and_dropout(void)
{
    enum { N = 20000 };
    static double a[N], b[N];
    struct sn_aten_gen *g1 = NULL, *g2 = NULL;
    OK(sn_aten_gen_create(7, SN_CPU, &g1, &E));
    OK(sn_aten_gen_create(7, SN_CPU, &g2, &E));
    struct sn_tensor *u1 = NULL, *u2 = NULL, *n1 = NULL, *st = NULL, *u3 = NULL;
    OK(sn_aten_rand((int64_t[]){N}, 1, SN_DTYPE_F32, SN_CPU, g1, &u1, &E));
    OK(sn_aten_rand((int64_t[]){N}, 1, SN_DTYPE_F32, SN_CPU, g2, &u2, &E));
    host(u1, a, N), host(u2, b, N);
    CHECK(memcmp(a, b, sizeof a) == 0); /* same seed; same numbers */
    double mn = 1, mx = 0, mean = 0;
    for (int i = 0; i < N; i++)
        mn = fmin(mn, a[i]), mx = fmax(mx, a[i]), mean += a[i] / N;
    CHECK(mn >= 0 && mx < 1);
    CHECK_CLOSE(mean, 0.5, 0.01, 0); /* sd of the mean = 0.29/sqrt(N) = 0.002 */
    OK(sn_aten_gen_get_state(g1, &st, &E));
    OK(sn_aten_randn((int64_t[]){N}, 1, SN_DTYPE_F64, SN_CPU, g1, &n1, &E));
    host(n1, a, N);
    double m = 0, v = 0;
    for (int i = 0; i < N; i++)
        m += a[i] / N;
    for (int i = 0; i < N; i++)
        v += (a[i] - m) * (a[i] - m) / (N - 1);
    CHECK_CLOSE(m, 0, 0.03, 0);
    CHECK_CLOSE(v, 1, 0.04, 0);
    OK(sn_aten_gen_set_state(g1, st, &E)); /* replaying the state replays the numbers */
    OK(sn_aten_randn((int64_t[]){N}, 1, SN_DTYPE_F64, SN_CPU, g1, &u3, &E));
    host(u3, b, N);
    CHECK(memcmp(a, b, sizeof a) == 0);
    sn_tensor_free(u3), u3 = NULL;
    OK(sn_aten_gen_seed(g2, 7, &E));
    OK(sn_aten_uniform((int64_t[]){N}, 1, -2, 3, SN_DTYPE_BF16, SN_CPU, g2, &u3, &E));
    host(u3, b, N);
    mn = 9, mx = -9;
    for (int i = 0; i < N; i++)
        mn = fmin(mn, b[i]), mx = fmax(mx, b[i]);
    CHECK(mn >= -2 && mx <= 3 && mn < -1.9 && mx > 2.9);
    /* kaiming_uniform_(a = sqrt 5) on W (out 8, in 50): bound = 1/sqrt(50) */
    struct sn_tensor *w = NULL;
    OK(sn_aten_zeros((int64_t[]){8, 50}, 2, SN_DTYPE_F32, SN_CPU, &w, &E));
    OK(sn_aten_kaiming_uniform_(w, sqrt(5.0), g2, &E));
    host(w, a, 400);
    double amax = 0;
    for (int i = 0; i < 400; i++)
        amax = fmax(amax, fabs(a[i]));
    CHECK(amax <= 1 / sqrt(50.0) + 1e-7 && amax > 0.9 / sqrt(50.0));
    OK(sn_aten_normal_(w, 3, 0, g2, &E));
    host(w, a, 400);
    CHECK(a[0] == 3 && a[399] == 3);
    OK(sn_aten_uniform_(w, 1, 1, g2, &E));
    host(w, a, 400);
    CHECK(a[17] == 1);
    struct sn_tensor *v1 = NULL;
    OK(sn_aten_ones((int64_t[]){3}, 1, SN_DTYPE_F32, SN_CPU, &v1, &E));
    CHECK(sn_aten_kaiming_uniform_(v1, 0, g2, &E) == SN_E_ARG);
    sn_err_clear(&E);
    struct sn_tensor *nog = NULL;
    CHECK(sn_aten_rand((int64_t[]){2}, 1, SN_DTYPE_F32, SN_CPU, NULL, &nog, &E) == SN_E_ARG);
    CHECK(nog == NULL);
    sn_err_clear(&E);

    /* dropout: eval = identity; training keeps 1-p of the values, scaled by 1/(1-p) */
    struct sn_tensor *ones = NULL, *d = NULL, *d2 = NULL;
    OK(sn_aten_ones((int64_t[]){N}, 1, SN_DTYPE_F32, SN_CPU, &ones, &E));
    OK(sn_aten_dropout(ones, 0.25, false, NULL, &d, &E));
    host(d, a, N);
    CHECK(a[0] == 1 && a[N - 1] == 1);
    sn_tensor_free(d);
    OK(sn_aten_gen_seed(g1, 99, &E));
    OK(sn_aten_dropout(ones, 0.25, true, g1, &d, &E));
    OK(sn_aten_gen_seed(g1, 99, &E));
    OK(sn_aten_dropout(ones, 0.25, true, g1, &d2, &E));
    host(d, a, N), host(d2, b, N);
    CHECK(memcmp(a, b, sizeof a) == 0);
    int kept = 0, other = 0;
    for (int i = 0; i < N; i++) {
        if (fabs(a[i] - 1 / 0.75) < 1e-6)
            kept++;
        else if (a[i] != 0)
            other++;
    }
    CHECK(other == 0);
    CHECK_CLOSE((double)kept / N, 0.75, 0.015, 0);
    struct sn_tensor *all[] = {u1, u2, n1, st, u3, w, v1, ones, d, d2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sn_tensor_free(all[i]);
    sn_aten_gen_free(g1);
    sn_aten_gen_free(g2);
    sn_aten_gen_free(NULL);
}

static void test_inplace_and_grad_mode(void)
{
    struct sn_tensor *t = mk((double[]){1, 4, 9}, (int64_t[]){3}, 1, SN_DTYPE_F64);
    struct sn_tensor *o = mk((double[]){2, 2, 2}, (int64_t[]){3}, 1, SN_DTYPE_F64);
    OK(sn_aten_sqrt_(t, &E)); check_vals("sqrt_", t, (double[]){1, 2, 3}, 3, 0);
    OK(sn_aten_add_(t, o, 0.5, &E)); check_vals("add_", t, (double[]){2, 3, 4}, 3, 0);
    OK(sn_aten_mul_(t, o, &E)); check_vals("mul_", t, (double[]){4, 6, 8}, 3, 0);
    OK(sn_aten_mul_scalar_(t, 0.5, &E)); check_vals("mul_s_", t, (double[]){2, 3, 4}, 3, 0);
    OK(sn_aten_add_scalar_(t, 1, &E)); check_vals("add_s_", t, (double[]){3, 4, 5}, 3, 0);
    OK(sn_aten_addcmul_(t, o, t, 0.5, &E)); check_vals("addcmul_", t, (double[]){6, 8, 10}, 3, 0);
    OK(sn_aten_addcdiv_(t, o, o, -1, &E)); check_vals("addcdiv_", t, (double[]){5, 7, 9}, 3, 0);
    OK(sn_aten_lerp_(t, o, 0.25, &E)); check_vals("lerp_", t, (double[]){4.25, 5.75, 7.25}, 3, 0);
    OK(sn_aten_copy_(t, o, &E)); check_vals("copy_", t, (double[]){2, 2, 2}, 3, 0);
    /* in-place on a leaf that requires grad: an error with grad on, fine under no-grad */
    OK(sn_aten_set_requires_grad(t, true, &E));
    CHECK(sn_aten_requires_grad(t) && sn_aten_is_leaf(t));
    CHECK(sn_aten_mul_scalar_(t, 2, &E) == SN_E_BACKEND);
    CHECK_MSG(strstr(E.msg, "mul_scalar_: ") == E.msg && strstr(E.msg, "leaf"), "%s", E.msg);
    sn_err_clear(&E);
    CHECK(sn_aten_grad_enabled());
    bool g = sn_aten_no_grad_enter();
    CHECK(g && !sn_aten_grad_enabled());
    bool g2 = sn_aten_no_grad_enter(); /* nested */
    OK(sn_aten_mul_scalar_(t, 2, &E));
    struct sn_tensor *y = NULL;
    OK(sn_aten_mul(t, o, &y, &E));
    CHECK(!sn_aten_requires_grad(y));
    sn_aten_no_grad_exit(g2);
    CHECK(!sn_aten_grad_enabled());
    sn_aten_no_grad_exit(g);
    CHECK(sn_aten_grad_enabled());
    check_vals("mul_ under no-grad", t, (double[]){4, 4, 4}, 3, 0);
    sn_tensor_free(y), sn_tensor_free(t), sn_tensor_free(o);
}

static void test_host_io_and_errors(void)
{
    struct sn_tensor *t = mk((double[]){1.5, -2, 3, 4, 5, 6}, (int64_t[]){2, 3}, 2, SN_DTYPE_F32);
    double d;
    int64_t i64;
    CHECK(sn_aten_item_f64(t, &d, &E) == SN_E_BACKEND); /* 6 elements */
    sn_err_clear(&E);
    struct sn_tensor *s = NULL;
    OK(sn_aten_select(t, 1, 0, &s, &E));
    struct sn_tensor *s0 = NULL;
    OK(sn_aten_select(s, 0, 1, &s0, &E));
    OK(sn_aten_item_f64(s0, &d, &E)); CHECK(d == 4);
    OK(sn_aten_item_i64(s0, &i64, &E)); CHECK(i64 == 4);
    float f[6];
    int32_t i32[6];
    OK(sn_aten_to_host(t, f, SN_DTYPE_F32, 6, &E)); CHECK(f[0] == 1.5f && f[5] == 6.0f);
    OK(sn_aten_to_host(t, i32, SN_DTYPE_I32, 6, &E)); CHECK(i32[0] == 1 && i32[1] == -2);
    CHECK(sn_aten_to_host(t, f, SN_DTYPE_F32, 5, &E) == SN_E_ARG);
    CHECK(strstr(E.msg, "5 elements") != NULL);
    sn_err_clear(&E);
    /* transposed (non-contiguous) tensors come out in logical row-major order */
    struct sn_tensor *tt = NULL;
    OK(sn_aten_transpose(t, 0, 1, &tt, &E));
    OK(sn_aten_to_host(tt, f, SN_DTYPE_F32, 6, &E));
    CHECK(f[0] == 1.5f && f[1] == 4.0f && f[2] == -2.0f);

    /* raw save / load round trip; wrong sizes and missing files are clean errors */
    const char *dir = sn_test_dir("aten_ops");
    char path[512], bad[512];
    snprintf(path, sizeof path, "%s/t.bin", dir);
    snprintf(bad, sizeof bad, "%s/missing.bin", dir);
    OK(sn_aten_save_raw(tt, path, &E));
    struct sn_tensor *l = NULL;
    OK(sn_aten_load_raw(path, (int64_t[]){3, 2}, 2, SN_DTYPE_F32, SN_CPU, &l, &E));
    check_vals("load_raw", l, (double[]){1.5, 4, -2, 5, 3, 6}, 6, 0);
    sn_tensor_free(l), l = NULL;
    CHECK(sn_aten_load_raw(path, (int64_t[]){7}, 1, SN_DTYPE_F32, SN_CPU, &l, &E) == SN_E_FORMAT);
    CHECK_MSG(strstr(E.msg, "24 bytes, expected 28") != NULL, "%s", E.msg);
    CHECK(l == NULL);
    sn_err_clear(&E);
    CHECK(sn_aten_load_raw(bad, (int64_t[]){1}, 1, SN_DTYPE_F32, SN_CPU, &l, &E) == SN_E_IO);
    CHECK(strstr(E.msg, "missing.bin") != NULL);
    sn_err_clear(&E);

    /* a libtorch error becomes SN_E_BACKEND with its message; nothing escapes, nothing leaks */
    struct sn_tensor *y = (struct sn_tensor *)&y; /* must be reset to NULL on failure */
    CHECK(sn_aten_matmul(t, t, &y, &E) == SN_E_BACKEND);
    CHECK(y == NULL);
    CHECK_MSG(strncmp(E.msg, "matmul: ", 8) == 0 && strstr(E.msg, "2x3") && !strchr(E.msg, '\n'),
              "%s", E.msg);
    fprintf(stderr, "(expected) %s\n", E.msg);
    sn_err_clear(&E);
    CHECK(sn_aten_add(t, s, &y, &E) == SN_E_BACKEND && y == NULL); /* (2,3) + (2) */
    sn_err_clear(&E);
    CHECK(sn_aten_matmul(NULL, t, &y, &E) == SN_E_ARG && strstr(E.msg, "NULL"));
    sn_err_clear(&E);
    CHECK(sn_aten_matmul(t, t, NULL, &E) == SN_E_ARG);
    sn_err_clear(&E);
    CHECK(sn_aten_zeros((int64_t[]){2}, 1, SN_DTYPE_COUNT, SN_CPU, &y, &E) == SN_E_ARG);
    sn_err_clear(&E);
    CHECK(sn_aten_zeros((int64_t[]){-2}, 1, SN_DTYPE_F32, SN_CPU, &y, &E) == SN_E_BACKEND);
    sn_err_clear(&E);
    CHECK(sn_aten_zeros(NULL, 2, SN_DTYPE_F32, SN_CPU, &y, &E) == SN_E_ARG);
    sn_err_clear(&E);
    CHECK(sn_aten_narrow(t, 1, 2, 5, &y, &E) == SN_E_BACKEND && y == NULL);
    sn_err_clear(&E);
    CHECK(sn_aten_embedding(t, t, &y, &E) == SN_E_BACKEND); /* float ids */
    sn_err_clear(&E);
    /* the first failure wins */
    CHECK(sn_aten_matmul(t, t, &y, &E) == SN_E_BACKEND);
    CHECK(sn_aten_matmul(NULL, t, &y, &E) == SN_E_BACKEND); /* sn_err_set returns the held code */
    CHECK(E.code == SN_E_BACKEND && strncmp(E.msg, "matmul: ", 8) == 0);
    sn_err_clear(&E);
    CHECK(sn_aten_matmul(t, t, &y, NULL) == SN_E_BACKEND); /* err may be NULL */

    /* devices */
    struct sn_device dev;
    char name[32];
    OK(sn_aten_device_parse("cpu", &dev, &E));
    CHECK(dev.type == SN_DEVICE_CPU);
    CHECK_STR(sn_aten_device_name(dev, name, sizeof name), "cpu");
    CHECK(sn_aten_device_parse("gpu0", &dev, &E) == SN_E_ARG);
    sn_err_clear(&E);
    CHECK(sn_aten_device_parse("cuda:x", &dev, &E) == SN_E_ARG);
    sn_err_clear(&E);
    if (!sn_aten_cuda_available()) {
        CHECK(sn_aten_device_parse("cuda", &dev, &E) == SN_E_UNSUPPORTED);
        sn_err_clear(&E);
        struct sn_device cu = {SN_DEVICE_CUDA, 0};
        CHECK(sn_aten_zeros((int64_t[]){2}, 1, SN_DTYPE_F32, cu, &y, &E) == SN_E_UNSUPPORTED);
        sn_err_clear(&E);
        CHECK(sn_aten_cuda_device_count() == 0);
    } else { /* a CUDA libtorch with a device (scripts/gpu-check.sh) */
        int nd = sn_aten_cuda_device_count();
        CHECK(nd >= 1);
        OK(sn_aten_device_parse("cuda", &dev, &E));
        CHECK(dev.type == SN_DEVICE_CUDA && dev.index == 0);
        CHECK_STR(sn_aten_device_name(dev, name, sizeof name), "cuda:0");
        char far[16];
        snprintf(far, sizeof far, "cuda:%d", nd);
        CHECK(sn_aten_device_parse(far, &dev, &E) == SN_E_ARG && strstr(E.msg, "only"));
        sn_err_clear(&E);
        struct sn_device cu = {SN_DEVICE_CUDA, 0};
        double ones[3] = {1, 2, 3}, back[3] = {0};
        struct sn_tensor *c = NULL;
        OK(sn_aten_from_host(ones, SN_DTYPE_F64, (int64_t[]){3}, 1, SN_DTYPE_F32, cu, &c, &E));
        CHECK(c && sn_tensor_device(c).type == SN_DEVICE_CUDA);
        CHECK(sn_tensor_data_ptr(c) == NULL); /* host pointers only for CPU tensors */
        OK(sn_aten_to_host(c, back, SN_DTYPE_F64, 3, &E));
        CHECK(back[0] == 1 && back[1] == 2 && back[2] == 3);
        sn_tensor_free(c);
    }
    OK(sn_aten_cuda_synchronize(&E));
    /* runtime */
    int nt = sn_aten_get_num_threads();
    sn_aten_set_num_threads(1);
    CHECK(sn_aten_get_num_threads() == 1);
    sn_aten_set_num_threads(nt);
    sn_aten_set_num_threads(0);
    CHECK(sn_aten_get_num_threads() == nt);
    char blas[512];
    bool have = sn_aten_blas_library(blas, sizeof blas);
    fprintf(stderr, "libtorch %s, BLAS: %s\n", sn_aten_version(), have ? blas : "(none mapped)");
    CHECK(strncmp(sn_aten_version(), "1.", 2) == 0 || strncmp(sn_aten_version(), "2.", 2) == 0);
    sn_tensor_free(t), sn_tensor_free(s), sn_tensor_free(s0), sn_tensor_free(tt);
}

int main(void)
{
    sn_aten_set_num_threads(2);
    test_creation_and_queries();
    test_views();
    test_elementwise();
    test_reductions_linalg_indexing();
    test_softmax_norm_rope();
    test_attention();
    test_random_and_dropout();
    test_inplace_and_grad_mode();
    test_host_io_and_errors();
    return sn_test_done();
}
