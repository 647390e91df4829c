/* bench/bench_aten_overhead.c: nanoseconds per call of the aten/ C API on small problems next
** to the same ATen calls made directly from C++ (aten/bench/overhead_ref.cpp, linked in).
** The two sides run in alternating batches in this one process (single-threaded) and each
** keeps its best batch, so load from other processes on a shared machine hits both alike.
** A C API call adds: argument checks, a try block, a heap-allocated handle and its free; the
** op itself is the same at::* call. Prints `name_ns=`, `name_ref_ns=` and `name_ratio=` lines. */
#include "aten/aten.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

double sn_bench_ref_batch(int op, int iters); /* aten/bench/overhead_ref.cpp */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef int (*binop)(const struct sn_tensor *, const struct sn_tensor *, struct sn_tensor **,
                     struct sn_err *);

static double c_batch(binop op, struct sn_tensor *a, struct sn_tensor *b, int iters)
{
    struct sn_err err = {0};
    double t0 = now();
    for (int i = 0; i < iters; i++) {
        struct sn_tensor *y = NULL;
        if (op(a, b, &y, &err)) {
            fprintf(stderr, "bench_aten_overhead: %s\n", err.msg);
            exit(1);
        }
        sn_tensor_free(y);
    }
    return (now() - t0) / iters * 1e9;
}

static void compare(const char *name, int ref_op, binop op, struct sn_tensor *a,
                    struct sn_tensor *b, int iters, int batches)
{
    double best_c = 1e30, best_r = 1e30;
    c_batch(op, a, b, iters / 10 + 1); /* warm-up */
    sn_bench_ref_batch(ref_op, iters / 10 + 1);
    for (int k = 0; k < batches; k++) {
        double c = c_batch(op, a, b, iters);
        double r = sn_bench_ref_batch(ref_op, iters);
        if (r < 0) {
            fprintf(stderr, "bench_aten_overhead: C++ baseline failed\n");
            exit(1);
        }
        best_c = c < best_c ? c : best_c;
        best_r = r < best_r ? r : best_r;
    }
    printf("%s_ns=%.1f\n%s_ref_ns=%.1f\n%s_ratio=%.3f\n", name, best_c, name, best_r, name,
           best_c / best_r);
}

int main(void)
{
    struct sn_err err = {0};
    struct sn_aten_gen *g = NULL;
    struct sn_tensor *a16 = NULL, *b16 = NULL, *a256 = NULL, *b256 = NULL;
    sn_aten_set_num_threads(1);
    if (sn_aten_gen_create(1, SN_CPU, &g, &err) ||
        sn_aten_rand((int64_t[]){16}, 1, SN_DTYPE_F32, SN_CPU, g, &a16, &err) ||
        sn_aten_rand((int64_t[]){16}, 1, SN_DTYPE_F32, SN_CPU, g, &b16, &err) ||
        sn_aten_rand((int64_t[]){256, 256}, 2, SN_DTYPE_F32, SN_CPU, g, &a256, &err) ||
        sn_aten_rand((int64_t[]){256, 256}, 2, SN_DTYPE_F32, SN_CPU, g, &b256, &err)) {
        fprintf(stderr, "bench_aten_overhead: %s\n", err.msg);
        return 1;
    }
    char blas[512];
    printf("# libtorch %s, intra-op threads 1, BLAS %s\n", sn_aten_version(),
           sn_aten_blas_library(blas, sizeof blas) ? blas : "(none mapped)");
    compare("add16", 0, sn_aten_add, a16, b16, 20000, 9);
    compare("mul16", 1, sn_aten_mul, a16, b16, 20000, 9);
    compare("matmul256", 2, sn_aten_matmul, a256, b256, 30, 9);
    sn_tensor_free(a16), sn_tensor_free(b16), sn_tensor_free(a256), sn_tensor_free(b256);
    sn_aten_gen_free(g);
    return 0;
}
