/* tests/testutil_aten.h: helpers for the tests of the libtorch-backed modules (aten/, lora/,
** loss/, train/). Header-only: tests link only testutil.c, and only these tests have aten. */
#ifndef SN_TESTUTIL_ATEN_H
#define SN_TESTUTIL_ATEN_H
#include "aten/aten.h"
#include "tests/testutil.h"
#include "train/train.h"

#include <math.h>
#include <stdio.h>

/* OK(call): the call must return SN_OK, else the test fails with the message left in E (the
** test file's own `static struct sn_err E;`, declared before the first use). */
#define OK(call)                                                                             \
    do {                                                                                     \
        sn_err_clear(&E);                                                                    \
        int rc_ = (call);                                                                    \
        CHECK_MSG(rc_ == SN_OK, "rc %d: %s", rc_, E.msg);                                    \
    } while (0)

/* Overwrites t in place with N(0, std²) draws from g (any shape, t's dtype, CPU). */
static inline int sn_test_randomize(struct sn_tensor *t, double std, struct sn_aten_gen *g)
{
    struct sn_err e = {0};
    struct sn_tensor *r = NULL;
    int64_t shape[8];
    int nd = sn_tensor_shape(t, shape, 8);
    int rc = sn_aten_randn(shape, nd, sn_tensor_dtype(t), SN_CPU, g, &r, &e);
    if (!rc)
        rc = sn_aten_mul_scalar_(r, std, &e);
    if (!rc)
        rc = sn_aten_copy_(t, r, &e);
    sn_tensor_free(r);
    return rc;
}

/* Attaches LoRA of rank r and lora_alpha alpha on all seven projections of m and returns the
** trainable params in *ps, *np (free(*ps)). SN_OK or the first error, in err. */
static inline int sn_test_lora_attach_all(struct sn_model *m, int r, double alpha,
                                          struct sn_param **ps, size_t *np, struct sn_err *err)
{
    struct sn_lora_config lc = sn_lora_default_config();
    lc.r = r;
    lc.alpha = alpha;
    lc.targets = SN_LORA_ALL_TARGETS;
    int rc = sn_model_lora_attach(m, &lc, err);
    return rc ? rc : sn_model_trainable_params(m, ps, np, err);
}

/* Gives every lora_B factor among ps[0..np) N(0, std²) values drawn from a CPU generator seeded
** with seed, under no-grad (a fresh adapter has B = 0: its rewards and ∂L/∂A tell nothing). */
static inline int sn_test_randomize_lora_b(const struct sn_param *ps, size_t np, double std,
                                           uint64_t seed)
{
    struct sn_err e = {0};
    struct sn_aten_gen *g = NULL;
    int rc = sn_aten_gen_create(seed, SN_CPU, &g, &e);
    bool gm = sn_aten_no_grad_enter();
    for (size_t i = 0; i < np && !rc; i++)
        if (strstr(ps[i].name, "lora_B"))
            rc = sn_test_randomize(ps[i].t, std, g);
    sn_aten_no_grad_exit(gm);
    sn_aten_gen_free(g);
    return rc;
}

/* A scalar loss of a test's parameters, evaluated again after each perturbation. */
typedef double (*sn_test_loss_fn)(void *ctx);

/* Central differences (h = 1e-6) of loss with respect to every element of x, a contiguous f64
** CPU leaf, against the analytic gradient an[0..numel(x)): an element is off when
** |fd − an| > 1e-7 + 1e-6·|fd| (in f64 truncation ≈ 1e-12 and rounding ≈ 1e-10, so a wrong
** term, O(1), cannot hide). Prints the first failures (what, param), raises *worst to the
** largest error/tolerance, returns the number of elements off. */
static inline int sn_test_fd_compare(const char *what, int param, struct sn_tensor *x_t,
                                     const double *an, sn_test_loss_fn loss, void *ctx,
                                     double *worst)
{
    const double h = 1e-6;
    double *x = (double *)sn_tensor_data_ptr(x_t);
    size_t ne = (size_t)sn_tensor_numel(x_t);
    int bad = 0;
    for (size_t j = 0; j < ne; j++) {
        double x0 = x[j];
        x[j] = x0 + h;
        double lp = loss(ctx);
        x[j] = x0 - h;
        double lm = loss(ctx);
        x[j] = x0;
        double fd = (lp - lm) / (2 * h), tol = 1e-7 + 1e-6 * fabs(fd), e = fabs(fd - an[j]);
        *worst = fmax(*worst, e / tol);
        if (!(e <= tol) && bad++ < 5)
            fprintf(stderr, "FAIL %s: param %d [%zu]: analytic %.12g, finite diff %.12g\n", what,
                    param, j, an[j], fd);
    }
    return bad;
}
/* A function under a gradient check: builds f(p) from the params, returns a NEW tensor. */
typedef struct sn_tensor *(*sn_test_forward_fn)(struct sn_tensor *const *p, void *ctx);
/* The test's scalar loss of f(p) (e.g. sum(f(p) ⊙ R) with R made on the first call and kept
** in *R); returns a NEW tensor. */
typedef struct sn_tensor *(*sn_test_loss_of_fn)(sn_test_forward_fn f, struct sn_tensor *const *p,
                                                void *ctx, struct sn_tensor **R);
struct sn_test_fd_args {
    sn_test_loss_of_fn       loss_of;
    sn_test_forward_fn       f;
    struct sn_tensor *const *p;
    void                    *ctx;
    struct sn_tensor       **R;
};

/* The value of a->loss_of without autograd, as an sn_test_loss_fn (v: struct sn_test_fd_args),
** NAN where the loss could not be built. */
static inline double sn_test_fd_loss(void *v)
{
    struct sn_test_fd_args *a = (struct sn_test_fd_args *)v;
    struct sn_err e = {0};
    bool g = sn_aten_no_grad_enter();
    struct sn_tensor *l = a->loss_of(a->f, a->p, a->ctx, a->R);
    double val = NAN;
    if (l) {
        int rc = sn_aten_item_f64(l, &val, &e);
        CHECK_MSG(rc == SN_OK, "rc %d: %s", rc, e.msg);
    }
    sn_tensor_free(l);
    sn_aten_no_grad_exit(g);
    return val;
}

/* The analytic gradient grad of param x (a contiguous f64 CPU leaf) against central
** differences of loss, as sn_test_fd_compare; returns the number of elements off. */
static inline int sn_test_fd_check_grad(const char *what, int param, struct sn_tensor *x,
                                        const struct sn_tensor *grad, sn_test_loss_fn loss,
                                        void *ctx, double *worst)
{
    struct sn_err e = {0};
    size_t ne = (size_t)sn_tensor_numel(x);
    double *an = (double *)malloc(ne * sizeof *an);
    int rc = an ? sn_aten_to_host(grad, an, SN_DTYPE_F64, ne, &e) : SN_E_NOMEM;
    CHECK_MSG(rc == SN_OK, "rc %d: %s", rc, e.msg);
    double *xd = (double *)sn_tensor_data_ptr(x);
    CHECK(xd != NULL && sn_tensor_dtype(x) == SN_DTYPE_F64);
    int bad = 0;
    if (rc == SN_OK && xd)
        bad = sn_test_fd_compare(what, param, x, an, loss, ctx, worst);
    free(an);
    return bad;
}
/* Bit-identical resume (docs/train.md, "Failures"; docs/formats.md "Training output
** directory"): p trains to its last step `last` in out (restarted), checkpoint-<last> is kept
** aside and then spoilt, so re-opening out must resume from checkpoint-<from>; the resumed run
** must end with the same model.safetensors and optimizer.safetensors bytes. */
static inline void sn_test_resume_exact(const struct sn_train_params *p, const char *shards,
                                        const char *out, int64_t last, int64_t from)
{
    struct sn_err e = {0};
    char keep[1100], a[1200], b[1200];
    struct sn_trainer *t = NULL;
    int rc = sn_trainer_open(p, shards, out, true, &t, &e);
    if (!rc)
        rc = sn_trainer_run(t, &e);
    CHECK_MSG(rc == SN_OK, "rc %d: %s", rc, e.msg);
    sn_trainer_free(t);
    t = NULL;
    snprintf(keep, sizeof keep, "%s.keep", out);
    sn_test_sh("rm -rf '%s' && cp -r '%s/checkpoint-%lld' '%s'", keep, out, (long long)last,
               keep);
    snprintf(a, sizeof a, "%s/checkpoint-%lld/model.safetensors", out, (long long)last);
    CHECK(sn_test_sh("printf 'XXXX' | dd of='%s' bs=1 seek=100 conv=notrunc 2>/dev/null",
                     a) == 0);
    rc = sn_trainer_open(p, shards, out, false, &t, &e);
    CHECK_MSG(rc == SN_OK && t && sn_trainer_step(t) == from, "rc %d: %s (resumed at %lld)", rc,
              e.msg, t ? (long long)sn_trainer_step(t) : -1LL);
    if (!rc && t)
        rc = sn_trainer_run(t, &e);
    CHECK_MSG(rc == SN_OK, "rc %d: %s", rc, e.msg);
    sn_trainer_free(t);
    const char *files[2] = {"model.safetensors", "optimizer.safetensors"};
    for (int i = 0; i < 2; i++) {
        snprintf(a, sizeof a, "%s/checkpoint-%lld/%s", out, (long long)last, files[i]);
        snprintf(b, sizeof b, "%s/%s", keep, files[i]);
        CHECK_MSG(sn_test_sh("cmp -s '%s' '%s'", a, b) == 0, "resumed %s differs from the "
                  "uninterrupted run", files[i]);
    }
    sn_test_sh("rm -rf '%s'", keep);
}
#endif
