/* tests/test_aten_grad.c: autograd through aten/aten.h against central finite differences in
** double precision (docs/design.md §7), and gradient checkpointing against the plain backward.
**
** Every check builds a scalar loss L = Σ f(params) ⊙ R with a fixed random R (so no gradient
** is trivially 1), backpropagates, and compares each gradient element with
** (L(p + h) - L(p - h)) / 2h, h = 1e-6. In f64 the central difference has truncation error
** O(h²·f''') ≈ 1e-12 and rounding error O(ε·|L|/h) ≈ 1e-10, so 1e-7 abs + 1e-6 rel has a wide
** margin while still catching any wrong term (those are O(1)). */
#include "aten/aten.h"
#include "tests/testutil.h"
#include "tests/testutil_aten.h"

static struct sn_err E;

static struct sn_aten_gen *G;

static struct sn_tensor *param(const int64_t *shape, int nd)
{
    struct sn_tensor *t = NULL;
    OK(sn_aten_randn(shape, nd, SN_DTYPE_F64, SN_CPU, G, &t, &E));
    OK(sn_aten_set_requires_grad(t, true, &E));
    return t;
}

/* A loss function: builds f(p) from the params, returns a NEW tensor of any shape. */
typedef struct sn_tensor *(*forward_fn)(struct sn_tensor *const *p, void *ctx);

/* L = sum(f(p) * R); R created on the first call (shape of f) and kept in *R. */
static struct sn_tensor *loss_of(forward_fn f, struct sn_tensor *const *p, void *ctx,
                                 struct sn_tensor **R)
{
    struct sn_tensor *y = f(p, ctx), *m = NULL, *l = NULL;
    if (!y)
        return NULL;
    if (!*R) {
        int64_t shape[8];
        int nd = sn_tensor_shape(y, shape, 8);
        OK(sn_aten_randn(shape, nd, SN_DTYPE_F64, SN_CPU, G, R, &E));
    }
    OK(sn_aten_mul(y, *R, &m, &E));
    OK(sn_aten_sum_all(m, &l, &E));
    sn_tensor_free(y);
    sn_tensor_free(m);
    return l;
}

static double loss_value(forward_fn f, struct sn_tensor *const *p, void *ctx,
                         struct sn_tensor **R)
{
    bool g = sn_aten_no_grad_enter();
    struct sn_tensor *l = loss_of(f, p, ctx, R);
    double v = NAN;
    if (l)
        OK(sn_aten_item_f64(l, &v, &E));
    sn_tensor_free(l);
    sn_aten_no_grad_exit(g);
    return v;
}

/* loss_value as an sn_test_loss_fn for sn_test_fd_compare */
struct fd_args {
    forward_fn               f;
    struct sn_tensor *const *p;
    void                    *ctx;
    struct sn_tensor       **R;
};
static double fd_loss(void *v)
{
    struct fd_args *a = v;
    return loss_value(a->f, a->p, a->ctx, a->R);
}

/* Gradient of every param in p[0..n) vs central differences; returns the worst error. */
static void grad_check(const char *what, forward_fn f, struct sn_tensor *const *p, int n,
                       void *ctx)
{
    struct sn_tensor *R = NULL;
    for (int i = 0; i < n; i++)
        sn_aten_zero_grad(p[i]);
    struct sn_tensor *l = loss_of(f, p, ctx, &R);
    CHECK(l != NULL);
    if (!l)
        return;
    OK(sn_aten_backward(l, NULL, false, &E));
    sn_tensor_free(l);
    struct fd_args args = {f, p, ctx, &R};
    double worst = 0;
    int bad = 0;
    for (int i = 0; i < n; i++) {
        struct sn_tensor *g = NULL;
        OK(sn_aten_grad(p[i], &g, &E));
        CHECK_MSG(g != NULL, "%s: param %d has no grad", what, i);
        if (!g)
            continue;
        size_t ne = (size_t)sn_tensor_numel(p[i]);
        double *an = malloc(ne * sizeof *an);
        OK(sn_aten_to_host(g, an, SN_DTYPE_F64, ne, &E));
        double *x = sn_tensor_data_ptr(p[i]); /* contiguous f64 CPU leaf */
        CHECK(x != NULL && sn_tensor_dtype(p[i]) == SN_DTYPE_F64);
        if (x)
            bad += sn_test_fd_compare(what, i, p[i], an, fd_loss, &args, &worst);
        free(an);
        sn_tensor_free(g);
    }
    CHECK_MSG(bad == 0, "%s: %d gradient elements off", what, bad);
    fprintf(stderr, "grad %-28s worst error / tolerance = %.3g\n", what, worst);
    sn_tensor_free(R);
}

/* ---- the functions under test ------------------------------------------------------------- */

static struct sn_tensor *f_linear(struct sn_tensor *const *p, void *ctx)
{
    (void)ctx;
    struct sn_tensor *y = NULL;
    OK(sn_aten_linear(p[0], p[1], p[2], &y, &E));
    return y;
}

static struct sn_tensor *f_add_linear(struct sn_tensor *const *p, void *ctx)
{
    (void)ctx;
    struct sn_tensor *y = NULL;
    OK(sn_aten_add_linear(p[0], p[1], p[2], 0.75, &y, &E));
    return y;
}

static struct sn_tensor *f_matmul(struct sn_tensor *const *p, void *ctx)
{
    (void)ctx;
    struct sn_tensor *y = NULL;
    OK(sn_aten_matmul(p[0], p[1], &y, &E)); /* (2,3,4) x (4,2), broadcast over the batch */
    return y;
}

struct att_ctx {
    struct sn_tensor *keep;
    bool causal;
};

static struct sn_tensor *f_attention(struct sn_tensor *const *p, void *ctx)
{
    struct att_ctx *a = ctx;
    struct sn_tensor *y = NULL;
    OK(sn_aten_attention(p[0], p[1], p[2], a->keep, a->causal, 0, 0, NULL, &y, &E));
    return y;
}

static struct sn_tensor *f_rms(struct sn_tensor *const *p, void *ctx)
{
    (void)ctx;
    struct sn_tensor *y = NULL;
    OK(sn_aten_rms_norm(p[0], p[1], 1e-6, &y, &E));
    return y;
}

static struct sn_tensor *f_silu_logsig(struct sn_tensor *const *p, void *ctx)
{
    (void)ctx;
    struct sn_tensor *a = NULL, *b = NULL, *y = NULL;
    OK(sn_aten_silu(p[0], &a, &E));
    OK(sn_aten_logsigmoid(p[1], &b, &E));
    OK(sn_aten_mul(a, b, &y, &E)); /* both gradients through one product */
    sn_tensor_free(a);
    sn_tensor_free(b);
    return y;
}

static struct sn_tensor *f_embedding(struct sn_tensor *const *p, void *ctx)
{
    struct sn_tensor *y = NULL;
    OK(sn_aten_embedding(p[0], (struct sn_tensor *)ctx, &y, &E));
    return y;
}

static struct sn_tensor *f_softmax(struct sn_tensor *const *p, void *ctx)
{
    (void)ctx;
    struct sn_tensor *a = NULL, *b = NULL, *y = NULL;
    OK(sn_aten_softmax(p[0], 1, &a, &E));
    OK(sn_aten_log_softmax(p[0], 0, &b, &E));
    OK(sn_aten_add(a, b, &y, &E));
    sn_tensor_free(a);
    sn_tensor_free(b);
    return y;
}

static struct sn_tensor *f_rotary(struct sn_tensor *const *p, void *ctx)
{
    struct sn_tensor **cs = ctx, *y = NULL;
    OK(sn_aten_apply_rotary(p[0], cs[0], cs[1], &y, &E));
    return y;
}

/* last-token pooling as the reward head does it: gather rows at positions ctx, then linear */
static struct sn_tensor *f_pool(struct sn_tensor *const *p, void *ctx)
{
    struct sn_tensor *r = NULL, *y = NULL;
    OK(sn_aten_gather(p[0], 1, (struct sn_tensor *)ctx, &r, &E));
    OK(sn_aten_linear(r, p[1], NULL, &y, &E));
    sn_tensor_free(r);
    return y;
}

static void test_finite_differences(void)
{
    struct sn_tensor *p[3];
    p[0] = param((int64_t[]){3, 4}, 2), p[1] = param((int64_t[]){5, 4}, 2);
    p[2] = param((int64_t[]){5}, 1);
    grad_check("linear", f_linear, p, 3, NULL);
    for (int i = 0; i < 3; i++)
        sn_tensor_free(p[i]);

    p[0] = param((int64_t[]){2, 3, 5}, 3), p[1] = param((int64_t[]){2, 3, 4}, 3);
    p[2] = param((int64_t[]){5, 4}, 2);
    grad_check("add_linear", f_add_linear, p, 3, NULL);
    for (int i = 0; i < 3; i++)
        sn_tensor_free(p[i]);

    p[0] = param((int64_t[]){2, 3, 4}, 3), p[1] = param((int64_t[]){4, 2}, 2);
    grad_check("matmul (broadcast)", f_matmul, p, 2, NULL);
    sn_tensor_free(p[0]), sn_tensor_free(p[1]);

    /* attention: GQA (4 query heads on 2 kv heads), causal, key padding on both sides */
    p[0] = param((int64_t[]){2, 4, 4, 3}, 4);
    p[1] = param((int64_t[]){2, 2, 4, 3}, 4);
    p[2] = param((int64_t[]){2, 2, 4, 3}, 4);
    struct sn_tensor *keep = NULL;
    int64_t kv[8] = {0, 1, 1, 1, 1, 1, 1, 0};
    OK(sn_aten_from_host(kv, SN_DTYPE_I64, (int64_t[]){2, 4}, 2, SN_DTYPE_BOOL, SN_CPU, &keep, &E));
    struct att_ctx ac = {keep, true};
    grad_check("attention causal+pad+GQA", f_attention, p, 3, &ac);
    ac.causal = false;
    grad_check("attention pad only", f_attention, p, 3, &ac);
    ac.keep = NULL;
    grad_check("attention plain", f_attention, p, 3, &ac);
    for (int i = 0; i < 3; i++)
        sn_tensor_free(p[i]);
    sn_tensor_free(keep);

    p[0] = param((int64_t[]){3, 6}, 2), p[1] = param((int64_t[]){6}, 1);
    grad_check("rms_norm", f_rms, p, 2, NULL);
    sn_tensor_free(p[0]), sn_tensor_free(p[1]);

    p[0] = param((int64_t[]){7}, 1), p[1] = param((int64_t[]){7}, 1);
    grad_check("silu * logsigmoid", f_silu_logsig, p, 2, NULL);
    sn_tensor_free(p[0]), sn_tensor_free(p[1]);

    /* embedding: a repeated id must accumulate both rows' gradients into the table */
    struct sn_tensor *ids = NULL;
    int32_t iv[5] = {1, 4, 1, 0, 1};
    OK(sn_aten_from_host(iv, SN_DTYPE_I32, (int64_t[]){5}, 1, SN_DTYPE_I64, SN_CPU, &ids, &E));
    p[0] = param((int64_t[]){5, 3}, 2);
    grad_check("embedding (table)", f_embedding, p, 1, ids);
    sn_tensor_free(p[0]), sn_tensor_free(ids);

    p[0] = param((int64_t[]){3, 4}, 2);
    grad_check("softmax + log_softmax", f_softmax, p, 1, NULL);
    sn_tensor_free(p[0]);

    struct sn_tensor *pos = NULL, *cs[2] = {NULL, NULL};
    OK(sn_aten_arange(0, 3, 1, SN_DTYPE_I64, SN_CPU, &pos, &E));
    OK(sn_aten_rope_tables(pos, 4, 10000.0, SN_DTYPE_F64, &cs[0], &cs[1], &E));
    p[0] = param((int64_t[]){1, 2, 3, 4}, 4);
    grad_check("apply_rotary", f_rotary, p, 1, cs);
    sn_tensor_free(p[0]), sn_tensor_free(pos), sn_tensor_free(cs[0]), sn_tensor_free(cs[1]);

    struct sn_tensor *at = NULL, *idx = NULL;
    int64_t lastpos[2] = {2, 1};
    OK(sn_aten_from_host(lastpos, SN_DTYPE_I64, (int64_t[]){2, 1, 1}, 3, SN_DTYPE_I64, SN_CPU, &at, &E));
    OK(sn_aten_expand(at, (int64_t[]){2, 1, 3}, 3, &idx, &E));
    p[0] = param((int64_t[]){2, 4, 3}, 3), p[1] = param((int64_t[]){1, 3}, 2);
    grad_check("gather last token + head", f_pool, p, 2, idx);
    sn_tensor_free(p[0]), sn_tensor_free(p[1]), sn_tensor_free(at), sn_tensor_free(idx);
}

/* ---- gradient checkpointing ------------------------------------------------------------ */

/* A decoder-ish block: y = silu(h Wᵀ) + h Pᵀ + dropout(h), z = rms_norm(y, w).
** W and w are leaves; P = 2·A is a non-leaf (like a LoRA product) reached through ctx. */
struct block {
    struct sn_tensor *W, *P, *w;
    struct sn_aten_gen *gen;
    int calls;
    int fail_at; /* fail on this call number (0 = never) */
};

static int block_fn(void *ctx, struct sn_tensor *const *in, size_t n_in, struct sn_tensor **out,
                    size_t n_out, struct sn_err *err)
{
    struct block *b = ctx;
    b->calls++;
    if (b->fail_at && b->calls == b->fail_at)
        return sn_err_set(err, SN_E_CANCELLED, "block_fn: told to fail on call %d", b->calls);
    if (n_in != 1 || n_out != 2)
        return sn_err_set(err, SN_E_ARG, "block_fn: wants 1 input, 2 outputs");
    struct sn_tensor *a = NULL, *s = NULL, *c = NULL, *y = NULL, *d = NULL, *y2 = NULL;
    int rc = sn_aten_linear(in[0], b->W, NULL, &a, err);
    rc = rc ? rc : sn_aten_silu(a, &s, err);
    rc = rc ? rc : sn_aten_linear(in[0], b->P, NULL, &c, err);
    rc = rc ? rc : sn_aten_add(s, c, &y, err);
    rc = rc ? rc : sn_aten_dropout(in[0], 0.3, true, b->gen, &d, err);
    rc = rc ? rc : sn_aten_add(y, d, &y2, err);
    rc = rc ? rc : sn_aten_rms_norm(y2, b->w, 1e-6, &out[0], err);
    rc = rc ? rc : sn_tensor_alias(in[0], &out[1], err); /* an input returned as is */
    sn_tensor_free(a), sn_tensor_free(s), sn_tensor_free(c);
    sn_tensor_free(y), sn_tensor_free(d), sn_tensor_free(y2);
    return rc;
}

enum { NG = 4 };
struct grads {
    double v[NG][32]; /* x, W, A, w */
    bool have[NG];
    double after; /* first number drawn from the block's generator after backward */
    int calls;
};

static struct sn_tensor *X, *W, *A, *Wn, *R1, *R2;

/* One training step through two blocks: plain, or both checkpointed. */
static int step(bool ckpt, bool list_W, bool x_grad, int fail_at, struct grads *g)
{
    struct block b = {W, NULL, Wn, NULL, 0, fail_at};
    int rc;
    OK(sn_aten_gen_create(5, SN_CPU, &b.gen, &E));
    OK(sn_aten_set_requires_grad(X, x_grad, &E));
    for (int i = 0; i < NG; i++)
        sn_aten_zero_grad((struct sn_tensor *[]){X, W, A, Wn}[i]);
    struct sn_tensor *h = NULL, *o1[2] = {NULL, NULL}, *o2[2] = {NULL, NULL};
    OK(sn_aten_mul_scalar(A, 2.0, &b.P, &E)); /* non-leaf parameter */
    OK(sn_aten_mul_scalar(X, 1.5, &h, &E));   /* non-leaf activation */
    struct sn_tensor *params[3] = {b.P, b.w, b.W};
    size_t n_params = list_W ? 3 : 2;
    if (ckpt) {
        rc = sn_aten_checkpoint(block_fn, &b, &h, 1, params, n_params, b.gen, o1, 2, &E);
        if (!rc)
            rc = sn_aten_checkpoint(block_fn, &b, &o1[0], 1, params, n_params, b.gen, o2, 2, &E);
    } else {
        rc = block_fn(&b, &h, 1, o1, 2, &E);
        if (!rc)
            rc = block_fn(&b, &o1[0], 1, o2, 2, &E);
    }
    CHECK_MSG(rc == SN_OK, "%s", E.msg);
    struct sn_tensor *m1 = NULL, *m2 = NULL, *m3 = NULL, *s = NULL;
    OK(sn_aten_mul(o2[0], R1, &m1, &E));
    OK(sn_aten_mul(o2[1], R2, &m2, &E));
    OK(sn_aten_add(m1, m2, &m3, &E));
    OK(sn_aten_sum_all(m3, &s, &E));
    rc = sn_aten_backward(s, NULL, false, &E);
    if (rc == SN_OK) {
        for (int i = 0; i < NG; i++) {
            struct sn_tensor *gt = NULL, *p = (struct sn_tensor *[]){X, W, A, Wn}[i];
            OK(sn_aten_grad(p, &gt, &E));
            g->have[i] = gt != NULL;
            if (gt)
                OK(sn_aten_to_host(gt, g->v[i], SN_DTYPE_F64, (size_t)sn_tensor_numel(gt), &E));
            sn_tensor_free(gt);
        }
        struct sn_tensor *r = NULL;
        OK(sn_aten_rand((int64_t[]){1}, 1, SN_DTYPE_F64, SN_CPU, b.gen, &r, &E));
        OK(sn_aten_item_f64(r, &g->after, &E));
        sn_tensor_free(r);
    }
    g->calls = b.calls;
    struct sn_tensor *all[] = {h, o1[0], o1[1], o2[0], o2[1], m1, m2, m3, s, b.P};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sn_tensor_free(all[i]);
    sn_aten_gen_free(b.gen);
    return rc;
}

static void same_grads(const char *what, const struct grads *a, const struct grads *b,
                       const int64_t *numel)
{
    for (int i = 0; i < NG; i++) {
        CHECK_MSG(a->have[i] == b->have[i], "%s: grad %d present %d vs %d", what, i, a->have[i],
                  b->have[i]);
        if (!a->have[i] || !b->have[i])
            continue;
        double worst = 0;
        for (int64_t j = 0; j < numel[i]; j++)
            worst = fmax(worst, fabs(a->v[i][j] - b->v[i][j]) / (1e-300 + fabs(a->v[i][j])));
        CHECK_MSG(worst <= 1e-12, "%s: grad %d differs by %.3g (relative)", what, i, worst);
    }
    CHECK_MSG(a->after == b->after, "%s: generator stream after backward differs", what);
}

static void test_checkpoint(void)
{
    X = param((int64_t[]){2, 3, 4}, 3);
    W = param((int64_t[]){4, 4}, 2);
    A = param((int64_t[]){4, 4}, 2);
    Wn = param((int64_t[]){4}, 1);
    OK(sn_aten_randn((int64_t[]){2, 3, 4}, 3, SN_DTYPE_F64, SN_CPU, G, &R1, &E));
    OK(sn_aten_randn((int64_t[]){2, 3, 4}, 3, SN_DTYPE_F64, SN_CPU, G, &R2, &E));
    const int64_t numel[NG] = {24, 16, 16, 4};
    static struct grads plain, ck, ck_frozen, plain_frozen, ck_unlisted;

    OK(step(false, true, true, 0, &plain));
    CHECK(plain.calls == 2);
    for (int i = 0; i < NG; i++)
        CHECK(plain.have[i]);
    OK(step(true, true, true, 0, &ck));
    CHECK_MSG(ck.calls == 4, "fn ran %d times, want 2 forward + 2 recompute", ck.calls);
    same_grads("checkpointed vs plain", &plain, &ck, numel);

    /* a frozen input (no activation requires grad): the params still get their gradients */
    OK(step(false, true, false, 0, &plain_frozen));
    OK(step(true, true, false, 0, &ck_frozen));
    CHECK(!plain_frozen.have[0] && !ck_frozen.have[0]);
    same_grads("frozen input", &plain_frozen, &ck_frozen, numel);

    /* documented limit: a tensor fn uses but that is not listed gets no gradient */
    OK(step(true, false, true, 0, &ck_unlisted));
    CHECK(!ck_unlisted.have[1]);
    CHECK(ck_unlisted.have[2] && ck_unlisted.have[3]);

    /* an error inside the recompute comes out of backward with fn's message */
    struct grads junk;
    sn_err_clear(&E);
    int rc = step(true, true, true, 3, &junk);
    CHECK(rc != SN_OK);
    CHECK_MSG(strstr(E.msg, "told to fail on call 3") != NULL, "%s", E.msg);
    fprintf(stderr, "(expected) %s\n", E.msg);
    sn_err_clear(&E);

    /* under no-grad fn runs once and nothing requires grad */
    struct block b = {W, NULL, Wn, NULL, 0, 0};
    OK(sn_aten_gen_create(1, SN_CPU, &b.gen, &E));
    OK(sn_aten_mul_scalar(A, 2.0, &b.P, &E));
    struct sn_tensor *o[2] = {NULL, NULL}, *params[3] = {b.P, Wn, W};
    bool gm = sn_aten_no_grad_enter();
    OK(sn_aten_checkpoint(block_fn, &b, &X, 1, params, 3, b.gen, o, 2, &E));
    sn_aten_no_grad_exit(gm);
    CHECK(b.calls == 1 && o[0] && !sn_aten_requires_grad(o[0]));
    sn_tensor_free(o[0]), sn_tensor_free(o[1]);
    /* a callback failing in the forward: clean error, outputs NULL */
    b.fail_at = 2;
    CHECK(sn_aten_checkpoint(block_fn, &b, &X, 1, params, 3, b.gen, o, 2, &E) == SN_E_CANCELLED);
    CHECK(o[0] == NULL && o[1] == NULL);
    sn_err_clear(&E);
    CHECK(sn_aten_checkpoint(block_fn, &b, &X, 1, params, 3, b.gen, o, 3, &E) == SN_E_ARG);
    sn_err_clear(&E);
    sn_tensor_free(b.P);
    sn_aten_gen_free(b.gen);
    sn_tensor_free(X), sn_tensor_free(W), sn_tensor_free(A), sn_tensor_free(Wn);
    sn_tensor_free(R1), sn_tensor_free(R2);
}

/* backward with an explicit gradient, retain_graph, retain_grad, set_grad, clip_grad_norm */
static void test_autograd_misc(void)
{
    struct sn_tensor *x = param((int64_t[]){3}, 1), *y = NULL, *g = NULL, *gy = NULL;
    double xv[3], gv[3];
    OK(sn_aten_to_host(x, xv, SN_DTYPE_F64, 3, &E));
    OK(sn_aten_mul(x, x, &y, &E)); /* y = x², dy/dx = 2x */
    OK(sn_aten_retain_grad(y, &E));
    CHECK(!sn_aten_is_leaf(y) && sn_aten_requires_grad(y));
    struct sn_tensor *seed = NULL;
    OK(sn_aten_full((int64_t[]){3}, 1, 0.5, SN_DTYPE_F64, SN_CPU, &seed, &E));
    CHECK(sn_aten_backward(y, NULL, true, &E) == SN_E_BACKEND); /* not a scalar */
    sn_err_clear(&E);
    OK(sn_aten_backward(y, seed, true, &E));
    OK(sn_aten_grad(x, &g, &E));
    OK(sn_aten_to_host(g, gv, SN_DTYPE_F64, 3, &E));
    for (int i = 0; i < 3; i++)
        CHECK_CLOSE(gv[i], xv[i], 1e-15, 0); /* 0.5 * 2x */
    OK(sn_aten_grad(y, &gy, &E));
    CHECK(gy != NULL);
    OK(sn_aten_backward(y, seed, false, &E)); /* second pass: gradients accumulate */
    OK(sn_aten_to_host(g, gv, SN_DTYPE_F64, 3, &E)); /* g aliases x.grad */
    for (int i = 0; i < 3; i++)
        CHECK_CLOSE(gv[i], 2 * xv[i], 1e-15, 0);
    /* clip: ‖2x‖ > max → scaled to max */
    double total = 0, n2 = 0;
    for (int i = 0; i < 3; i++)
        n2 += 4 * xv[i] * xv[i];
    struct sn_tensor *ps[2] = {x, y};
    OK(sn_aten_clip_grad_norm(ps, 1, 0, &total, &E));
    CHECK_CLOSE(total, sqrt(n2), 1e-12, 0);
    OK(sn_aten_clip_grad_norm(ps, 1, 0.5 * sqrt(n2), &total, &E));
    OK(sn_aten_to_host(g, gv, SN_DTYPE_F64, 3, &E));
    for (int i = 0; i < 3; i++)
        CHECK_CLOSE(gv[i], xv[i], 1e-6, 1e-5); /* coef = max/(total+1e-6) */
    sn_aten_zero_grad(x);
    struct sn_tensor *none = NULL;
    OK(sn_aten_grad(x, &none, &E));
    CHECK(none == NULL);
    OK(sn_aten_set_grad(x, seed, &E));
    OK(sn_aten_grad(x, &none, &E));
    CHECK(none != NULL);
    sn_tensor_free(none);
    OK(sn_aten_set_grad(x, NULL, &E)); /* NULL = none */
    OK(sn_aten_grad(x, &none, &E));
    CHECK(none == NULL);
    struct sn_tensor *two = NULL;
    OK(sn_aten_ones((int64_t[]){2}, 1, SN_DTYPE_F64, SN_CPU, &two, &E));
    CHECK(sn_aten_set_grad(x, two, &E) == SN_E_ARG);
    sn_err_clear(&E);
    sn_tensor_free(x), sn_tensor_free(y), sn_tensor_free(g);
    sn_tensor_free(gy), sn_tensor_free(seed), sn_tensor_free(none), sn_tensor_free(two);
}

int main(void)
{
    sn_aten_set_num_threads(1); /* deterministic reductions for the bitwise comparisons */
    OK(sn_aten_gen_create(1234, SN_CPU, &G, &E));
    test_finite_differences();
    test_checkpoint();
    test_autograd_misc();
    sn_aten_gen_free(G);
    return sn_test_done();
}
