/* tests/testutil_aten.h: helpers for the tests of the libtorch-backed modules (aten/, lora/,
** loss/, train/). Header-only: tests link only testutil.c, and only these tests have aten. */
#ifndef SN_TESTUTIL_ATEN_H
#define SN_TESTUTIL_ATEN_H
#include "aten/aten.h"
#include "tests/testutil.h"

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
#endif
