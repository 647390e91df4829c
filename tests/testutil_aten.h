/* tests/testutil_aten.h: helpers for the tests of the libtorch-backed modules (aten/, lora/,
** loss/, train/). Header-only: tests link only testutil.c, and only these tests have aten. */
#ifndef SN_TESTUTIL_ATEN_H
#define SN_TESTUTIL_ATEN_H
#include "aten/aten.h"
#include "tests/testutil.h"

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
#endif
