/* tests/test_kernels_sgemm.c: kernels/sgemm.c, the f32 products y = x · Wᵀ (+ y) of the
** runtime detector (kernels/kernels.h; docs/export.md "Weight formats and kernels"):
**   1. the portable path, and OpenBLAS's sgemm (the detector's other f32 GEMM), against a
**      double sum on many shapes: every n from 1 to 37 and past a block of rows (MC), outputs
**      not a multiple of 16 or 32, `in` not a multiple of 16 and past a block of k (KC),
**      accumulating or not, y with a row stride past `out`; within the bound of any order of
**      f32 sums, |y - ref| <= γ(in + 1) · (|y0| + Σ|x·w|) with γ(m) = m·u / (1 - m·u),
**      u = 2^-24 (Higham, "Accuracy and Stability of Numerical Algorithms", §3.1);
**   2. the AVX-512F path, where this CPU has it, with the portable path's bits, and the same
**      bits when the outputs are split among 1, 2 or 3 threads (each with its own scratch);
**      elements of y outside the outputs asked for are left alone. Without AVX-512F that part
**      says it is skipped; the verdict does not depend on the CPU's vector extensions. */
#include "testutil.h"
#include "common/common.h"
#include "kernels/kernels.h"

#include <cblas.h>
#include <pthread.h>

#define GUARD 1234.5f   /* what y holds where no output goes */

struct shape { size_t n, in, out; };

static void fill(struct sn_rng *r, float *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        v[i] = (float)sn_rng_normal(r);
}

/* y (n, ldy) with outputs [0, out) from y0 (or 0) and guards past out. */
static void init_y(float *y, const float *y0, size_t n, size_t out, size_t ldy, bool acc)
{
    for (size_t t = 0; t < n; t++)
        for (size_t o = 0; o < ldy; o++)
            y[t * ldy + o] = o >= out ? GUARD : acc ? y0[t * ldy + o] : 0.0f;
}

/* Whether y is within the bound of the double sums (guards untouched), and the worst ratio of
** the error to the bound in *worst. */
static bool near_ref(const float *y, const float *y0, const float *x, const float *W, size_t n,
                     size_t in, size_t out, size_t ldy, bool acc, double *worst)
{
    const double u = 0x1p-24, m = (double)in + 1, gamma = m * u / (1 - m * u);
    bool ok = true;
    for (size_t t = 0; t < n; t++)
        for (size_t o = 0; o < ldy; o++) {
            const float got = y[t * ldy + o];
            if (o >= out) {
                ok = ok && got == GUARD;
                continue;
            }
            double ref = acc ? y0[t * ldy + o] : 0.0, mag = fabs(ref);
            for (size_t k = 0; k < in; k++) {
                ref += (double)x[t * in + k] * W[o * in + k];
                mag += fabs((double)x[t * in + k] * W[o * in + k]);
            }
            const double bound = gamma * mag, e = fabs((double)got - ref);
            if (bound > 0 && e / bound > *worst)
                *worst = e / bound;
            ok = ok && e <= bound;
        }
    return ok;
}

/* One product y (n, out) (+)= x · Wᵀ, and a thread's share [o0, o1) of its outputs. */
struct prod {
    bool hw, acc;
    const float *x, *W;
    float *y;
    size_t ldy, n, in;
};
struct share {
    const struct prod *p;
    float *scratch;
    size_t o0, o1;
};

static void *run(void *arg)
{
    const struct share *j = arg;
    const struct prod *p = j->p;
    sn_kern_sgemm(p->hw, p->x, p->W, p->y, p->ldy, p->n, p->in, j->o0, j->o1, p->acc,
                  j->scratch);
    return NULL;
}

/* y by nt threads, outputs split in nt shares (not on any block boundary: every third one is
** a few outputs off the panel width, so panels straddle shares). */
static void split(int nt, bool hw, const float *x, const float *W, float *y, size_t ldy,
                  size_t n, size_t in, size_t out, bool acc, float *scratch)
{
    const struct prod p = {hw, acc, x, W, y, ldy, n, in};
    struct share jobs[3];
    pthread_t tid[3];
    bool threaded[3] = {false};
    for (int i = 0; i < nt; i++) {   /* every share on a thread of its own where one starts */
        jobs[i] = (struct share){&p, scratch + (size_t)i * sn_kern_sgemm_scratch(),
                                 out * (size_t)i / (size_t)nt, out * (size_t)(i + 1) / (size_t)nt};
        threaded[i] = pthread_create(&tid[i], NULL, run, &jobs[i]) == 0;
    }
    for (int i = 0; i < nt; i++) {
        if (threaded[i])
            pthread_join(tid[i], NULL);
        else
            run(&jobs[i]);
    }
}

int main(void)
{
    struct sn_kern_cpu cpu;
    sn_kern_cpu_detect(&cpu);
    const bool hw = sn_kern_sgemm_hw(&cpu, SN_KERN_AVX512);
    char feat[256];
    sn_kern_cpu_describe(&cpu, feat, sizeof feat);
    printf("cpu: %s\n", feat);
    if (!hw)
        printf("no AVX-512F: its kernel's part is skipped (the portable path and OpenBLAS's "
               "are tested)\n");
    CHECK(!sn_kern_sgemm_hw(&cpu, SN_KERN_AVX2) && !sn_kern_sgemm_hw(&cpu, SN_KERN_PORTABLE));

    struct shape shapes[80];
    size_t ns = 0;
    static const size_t ins[] = {1, 7, 16, 33, 100, 391, 800};
    static const size_t outs[] = {1, 15, 17, 32, 33, 47, 70, 129};
    for (size_t t = 1; t <= 37; t++)   /* every n to 37, (in, out) going round the lists */
        shapes[ns++] = (struct shape){t, ins[t % 7], outs[(t * 3) % 8]};
    for (size_t i = 0; i < 7; i++)
        shapes[ns++] = (struct shape){13 + i, ins[i], outs[(i + 5) % 8]};
    /* past a block of rows (MC = 518) and of k (KC = 1024) with x too big to pack whole;
    ** and few rows (x packed whole) over two full blocks of k and a tail */
    shapes[ns++] = (struct shape){530, 1100, 40};
    shapes[ns++] = (struct shape){29, 2100, 100};

    float *scratch = sn_malloc(3 * sn_kern_sgemm_scratch() * sizeof(float));
    CHECK(scratch != NULL);
    struct sn_rng r;
    sn_rng_seed(&r, 11);
    double worst_p = 0, worst_b = 0;
    size_t hw_runs = 0;
    for (size_t s = 0; s < ns && scratch; s++)
        for (int acc = 0; acc < 2; acc++) {
            const size_t n = shapes[s].n, in = shapes[s].in, out = shapes[s].out;
            const size_t ldy = out + 1 + s % 5;
            float *x = sn_malloc(n * in * sizeof *x), *W = sn_malloc(out * in * sizeof *W);
            float *y0 = sn_malloc(n * ldy * sizeof *y0), *yp = sn_malloc(n * ldy * sizeof *yp);
            float *yh = sn_malloc(n * ldy * sizeof *yh);
            if (!x || !W || !y0 || !yp || !yh) {
                CHECK(!"out of memory");
                sn_free(x), sn_free(W), sn_free(y0), sn_free(yp), sn_free(yh);
                continue;
            }
            fill(&r, x, n * in);
            fill(&r, W, out * in);
            fill(&r, y0, n * ldy);

            init_y(yp, y0, n, out, ldy, acc);
            sn_kern_sgemm(false, x, W, yp, ldy, n, in, 0, out, acc, NULL);
            CHECK_MSG(near_ref(yp, y0, x, W, n, in, out, ldy, acc, &worst_p),
                      "portable n %zu in %zu out %zu acc %d", n, in, out, acc);

            init_y(yh, y0, n, out, ldy, acc);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)out, (int)in,
                        1.0f, x, (int)in, W, (int)in, acc ? 1.0f : 0.0f, yh, (int)ldy);
            CHECK_MSG(near_ref(yh, y0, x, W, n, in, out, ldy, acc, &worst_b),
                      "OpenBLAS n %zu in %zu out %zu acc %d", n, in, out, acc);

            for (int nt = 1; hw && nt <= 3; nt++) {
                init_y(yh, y0, n, out, ldy, acc);
                split(nt, true, x, W, yh, ldy, n, in, out, acc, scratch);
                CHECK_MSG(!memcmp(yh, yp, n * ldy * sizeof *yh), "avx512f n %zu in %zu out %zu "
                          "acc %d, %d threads: not the portable path's bits", n, in, out, acc,
                          nt);
                hw_runs++;
            }
            /* the portable path split the same way: the same bits too */
            init_y(yh, y0, n, out, ldy, acc);
            split(3, false, x, W, yh, ldy, n, in, out, acc, scratch);
            CHECK(!memcmp(yh, yp, n * ldy * sizeof *yh));
            sn_free(x), sn_free(W), sn_free(y0), sn_free(yp), sn_free(yh);
        }
    printf("%zu shapes x accumulate on/off; worst |y - ref| / bound: portable %.3f, OpenBLAS "
           "%.3f; %zu AVX-512F runs with the portable bits\n", ns, worst_p, worst_b, hw_runs);

    /* nothing to do: n = 0, o0 == o1, in = 0 (the chain of no terms: 0, or y as it was) */
    float y1[4] = {1, 2, 3, 4}, one = 1.0f;
    for (int h = 0; h <= (int)hw; h++) {
        sn_kern_sgemm(h, &one, &one, y1, 2, 0, 1, 0, 2, false, scratch);
        sn_kern_sgemm(h, &one, &one, y1, 2, 2, 1, 1, 1, false, scratch);
        CHECK(y1[0] == 1 && y1[1] == 2 && y1[2] == 3 && y1[3] == 4);
        sn_kern_sgemm(h, &one, &one, y1, 2, 2, 0, 0, 1, true, scratch);
        CHECK(y1[0] == 1 && y1[2] == 3);
        sn_kern_sgemm(h, &one, &one, y1, 2, 2, 0, 0, 1, false, scratch);
        CHECK(y1[0] == 0 && y1[1] == 2 && y1[2] == 0 && y1[3] == 4);
        y1[0] = 1, y1[2] = 3;
    }
    sn_free(scratch);
    return sn_test_done();
}
