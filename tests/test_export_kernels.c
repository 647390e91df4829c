/* tests/test_export_kernels.c: the runtime detector over weights kept in the file's type, and
** the kernels/ paths it chooses (docs/export.md "Weight formats and kernels"), without
** libtorch:
**   1. kernels/ alone: every ISA this CPU runs converts F16 (subnormals included), BF16 and
**      Q8_0 rows to the same f32 bits as the portable path (and Q8_0 rows to the same BF16)
**      and rounds f32 to BF16 alike; BF16
**      dot products (portable, and vdpbf16ps where present) are within 1e-6 · Σ|x·w| of a
**      double sum of the same BF16 values, on rows whose length is not a multiple of 32, and
**      a split of the outputs (threads' shares) does not change a bit; Q8_0 by int8 dot
**      products (q8_alone below) against double sums, each path with the portable one's bits;
**   2. a tiny random Qwen2 exported as F32, F16, BF16 and Q8_0: each file's rewards against
**      the F32 file's within the format's bound (TOL below), under each kernel set forced in
**      turn (BF16 and Q8_0 by BF16 dot products or by f32 tiles, Q8_0 by int8 dot products);
**      the tile paths (conversion to f32 for the sgemm) give the same bits under every ISA
**      with the same sgemm (kernels/sgemm.c where the set is avx512 without +blas, OpenBLAS's
**      otherwise; F32 by the former within SG_TOL of the latter), the int8 paths under every
**      ISA; malformed modifiers (+blas twice, two of +dot/+tile/+int8, an empty one) fail;
**   3. memory: opening a Q8_0, BF16, F16 or F32 detector allocates no copy of its matrices
**      (the bytes asked of sn_malloc at open, less the declared scratch, are under a quarter
**      of the matrices' f32 size; the weights stay in the file's memory map);
**   4. two `sentinel score` processes on the same memory-mapped Q8_0 file at once print the
**      same bits as each other and as this process.
** usage: test_export_kernels [SPEC]: without SPEC, all of the above with the portable kernels
** and every set this CPU offers (the verdict never depends on which it offers: the portable
** path is always run); with SPEC (e.g. avx512+dot), part 2 with those kernels alone, exit 77
** (ctest's SKIP_RETURN_CODE, tests/export_kernels.cmake) where this CPU lacks them. */
#include "testutil.h"
#include "export/export.h"
#include "export/write.h"
#include "kernels/kernels.h"
#include "tests/testutil_qwen2.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

static struct sn_err E;
#define OK(x) CHECK_MSG((x) == SN_OK, "%s", E.msg)

#define N_SEQ 4
static const int seq_len[N_SEQ] = {1, 9, 40, 120};

/* Reward bounds against the F32 file, |r - r32| <= TOL · (1 + |r32|). This random tiny model
** amplifies weight noise (noisy norms and biases, a head of norm ~8: see tests/test_export_q8.c);
** F16 keeps 11 mantissa bits, BF16 8, Q8_0 about 7 relative to each block's maximum; BF16 by
** dot products also rounds every activation entering a product to 8 bits. The measured worst
** cases (printed) were 6.3e-4 (F16), 3.2e-2 (BF16 tiles), 2.0e-2 (BF16 dots), 5.0e-2 (Q8_0;
** 7.4e-2 by int8 dot products, which also quantize the activations); each bound is about 3x
** its own (2x for Q8_0 by int8). */
static double tol_of(int type, bool dot)
{
    switch (type) {
    case SN_GGML_F16: return 2e-3;
    case SN_GGML_BF16: return dot ? 6e-2 : 1e-1;
    case SN_GGML_Q8_0: return 1.5e-1;
    default: return 0.0;
    }
}

/* ---- 1. kernels alone --------------------------------------------------------------------- */

static void kernels_alone(const struct sn_kern_cpu *cpu)
{
    struct sn_rng r;
    sn_rng_seed(&r, 5);
    enum { IN = 96 + 13, ROWS = 8, INQ = 96 };
    uint16_t h16[ROWS * IN], b16[ROWS * IN];
    uint8_t q8[ROWS * (INQ / 32) * 34];
    for (int i = 0; i < ROWS * IN; i++) {
        h16[i] = (uint16_t)(i % 7 == 0 ? sn_rng_below(&r, 0x400) /* subnormal */
                                       : sn_rng_below(&r, 0x7c00));
        h16[i] |= (uint16_t)(sn_rng_below(&r, 2) << 15);
        b16[i] = sn_f32_to_bf16((float)sn_rng_normal(&r));
    }
    for (size_t i = 0; i < sizeof q8; i++)
        q8[i] = (uint8_t)sn_rng_below(&r, 256);
    for (int b = 0; b < ROWS * INQ / 32; b++) {  /* finite scales */
        uint16_t d = sn_f32_to_f16((float)(0.01 + 0.1 * sn_rng_uniform(&r)));
        memcpy(q8 + b * 34, &d, 2);
    }
    float ref[ROWS * IN], got[ROWS * IN];
    const struct { int type; const void *p; size_t in; } m[] = {
        {SN_KERN_F16, h16, IN}, {SN_KERN_BF16, b16, IN}, {SN_KERN_Q8_0, q8, INQ}};
    for (size_t k = 0; k < sizeof m / sizeof *m; k++) {
        sn_kern_rows_to_f32(SN_KERN_PORTABLE, m[k].type, m[k].p, m[k].in, 1, ROWS, ref);
        for (size_t i = 0; i < (ROWS - 1) * m[k].in && m[k].type == SN_KERN_F16; i++) {
            float want = sn_f16_to_f32(h16[m[k].in + i]);
            CHECK_MSG(memcmp(&ref[i], &want, 4) == 0, "portable F16 element %zu", i);
        }
        for (int isa = SN_KERN_AVX2; isa < SN_KERN_ISA_COUNT; isa++) {
            if (!sn_kern_isa_supported(cpu, isa))
                continue;
            memset(got, 0xff, sizeof got);
            sn_kern_rows_to_f32(isa, m[k].type, m[k].p, m[k].in, 1, ROWS, got);
            CHECK_MSG(!memcmp(got, ref, (ROWS - 1) * m[k].in * 4), "%s rows of type %d differ "
                      "from the portable path", sn_kern_isa_name(isa), m[k].type);
        }
    }
    /* Q8_0 rows as BF16 tiles: the f32 values rounded to nearest even, alike in every ISA */
    uint16_t qb[ROWS * INQ], qb2[ROWS * INQ];
    sn_kern_rows_to_f32(SN_KERN_PORTABLE, SN_KERN_Q8_0, q8, INQ, 0, ROWS, ref);
    sn_kern_rows_to_bf16(SN_KERN_PORTABLE, SN_KERN_Q8_0, q8, INQ, 0, ROWS, qb);
    for (int i = 0; i < ROWS * INQ; i++)
        CHECK(qb[i] == sn_f32_to_bf16(ref[i]));
    for (int isa = SN_KERN_AVX2; isa < SN_KERN_ISA_COUNT; isa++)
        if (sn_kern_isa_supported(cpu, isa)) {
            sn_kern_rows_to_bf16(isa, SN_KERN_Q8_0, q8, INQ, 0, ROWS, qb2);
            CHECK_MSG(!memcmp(qb, qb2, sizeof qb), "%s: Q8_0 rows as BF16 differ",
                      sn_kern_isa_name(isa));
        }
    size_t bad = 0;
    CHECK(sn_kern_all_finite(SN_KERN_BF16, b16, ROWS * IN, &bad));
    b16[17] = 0x7f80;   /* +inf */
    CHECK(!sn_kern_all_finite(SN_KERN_BF16, b16, ROWS * IN, &bad) && bad == 17);
    b16[17] = sn_f32_to_bf16(0.5f);

    /* BF16 rounding and dot products */
    enum { N = 6, OUT = 7 };
    float x[N * IN];
    uint16_t xb[N * IN], xb2[N * IN];
    for (int i = 0; i < N * IN; i++)
        x[i] = (float)sn_rng_normal(&r) * (i % 11 == 0 ? 1e-3f : 1.0f);
    sn_kern_to_bf16(SN_KERN_PORTABLE, x, N * IN, xb);
    for (int i = 0; i < N * IN; i++)
        CHECK(xb[i] == sn_f32_to_bf16(x[i]));   /* common's round to nearest even */
    for (int isa = SN_KERN_AVX2; isa < SN_KERN_ISA_COUNT; isa++)
        if (sn_kern_isa_supported(cpu, isa)) {
            sn_kern_to_bf16(isa, x, N * IN, xb2);
            CHECK_MSG(!memcmp(xb, xb2, sizeof xb), "%s rounds to BF16 differently",
                      sn_kern_isa_name(isa));
        }
    float y[2][N * OUT], whole[N * OUT];
    const bool hw[2] = {false, sn_kern_bf16_dot_hw(cpu, SN_KERN_AVX512)};
    for (int k = 0; k < 2; k++) {
        if (k && !hw[k])
            continue;
        /* two threads' shares give the bits of one call over every output */
        sn_kern_bf16_gemm(hw[k], xb, b16, y[k], OUT, N, IN, 0, 3, false);
        sn_kern_bf16_gemm(hw[k], xb, b16, y[k], OUT, N, IN, 3, OUT, false);
        sn_kern_bf16_gemm(hw[k], xb, b16, whole, OUT, N, IN, 0, OUT, false);
        CHECK(!memcmp(whole, y[k], sizeof whole));
        for (int t = 0; t < N; t++)
            for (int o = 0; o < OUT; o++) {
                double s = 0, a = 0;
                for (int i = 0; i < IN; i++) {
                    double p = (double)sn_bf16_to_f32(xb[t * IN + i]) *
                               sn_bf16_to_f32(b16[o * IN + i]);
                    s += p;
                    a += fabs(p);
                }
                CHECK_MSG(fabs(y[k][t * OUT + o] - s) <= 1e-6 * a, "%s dot (%d, %d): %.9g vs "
                          "%.9g", k ? "vdpbf16ps" : "portable", t, o, y[k][t * OUT + o], s);
            }
    }
    if (hw[1])
        printf("BF16 dot products: vdpbf16ps and the portable path %s\n",
               memcmp(y[0], y[1], sizeof y[0]) ? "differ in the last bits" : "agree bit for bit");
}

/* Q8_0 by int8 dot products (kernels/q8.c), on random Q8_0 matrices (every q, -128 included)
** of an odd and an even number of blocks per row, and activations with an all-zero block:
**   - the activations' quantization is ggml's q8_0: |x - d·q| <= d/2 (+ rounding), max|q| = 127;
**   - each path (portable always; AVX2 and AVX512-VNNI where this CPU runs them) is within
**     1e-5 · Σ|terms| of a double sum of the same quantized values, and within that plus
**     Σ (d_x/2)·|w| of the double product of the unquantized x;
**   - every path gives the portable path's bits, and a split of the outputs (threads' shares)
**     changes none. */
static void q8_alone(const struct sn_kern_cpu *cpu)
{
    enum { N = 7, OUT = 9, MAXIN = 256 };
    static const size_t widths[2] = {224, 256};
    struct sn_rng r;
    sn_rng_seed(&r, 11);
    for (int wi = 0; wi < 2; wi++) {
        const size_t in = widths[wi], nb = in / 32;
        static uint8_t W[OUT * (MAXIN / 32) * 34];
        static int8_t wq[OUT * MAXIN], xq[N * MAXIN];
        static float ws[OUT * MAXIN / 4], xs[N * MAXIN / 4], x[N * MAXIN], wf[OUT * MAXIN];
        static int32_t xc[N * MAXIN / 4];
        for (size_t b = 0; b < OUT * nb; b++) {
            const uint16_t h = sn_f32_to_f16((float)(0.01 + 0.02 * sn_rng_uniform(&r)));
            memcpy(W + b * 34, &h, 2);
            for (int j = 0; j < 32; j++)
                W[b * 34 + 2 + (size_t)j] = (uint8_t)sn_rng_below(&r, 256);
        }
        for (size_t i = 0; i < N * in; i++)
            x[i] = i / 32 == 3 ? 0.0f : (float)sn_rng_normal(&r) * (i % 7 == 0 ? 3.0f : 1.0f);
        sn_kern_rows_to_f32(SN_KERN_PORTABLE, SN_KERN_Q8_0, W, in, 0, OUT, wf);
        sn_kern_q8_unpack(W, in, 0, OUT, wq, ws);
        sn_kern_q8_quantize(x, N, in, xq, xs, xc);
        for (size_t b = 0; b < N * nb; b++) {
            const float d = xs[b * 8];
            int qmax = 0;
            for (size_t j = b * 32; j < b * 32 + 32; j++) {
                CHECK(fabs(x[j] - (double)d * xq[j]) <= d * (0.5 + 1e-4));
                qmax = abs(xq[j]) > qmax ? abs(xq[j]) : qmax;
            }
            CHECK(b % nb == 3 && b / nb == 0 ? d == 0.0f && qmax == 0 : qmax == 127);
        }
        float y[N * OUT], y2[N * OUT];
        sn_kern_q8_gemm(SN_KERN_PORTABLE, xq, xs, xc, wq, ws, y, OUT, N, in, 0, OUT, false);
        for (size_t t = 0; t < N; t++)
            for (size_t o = 0; o < OUT; o++) {
                double s = 0, a = 0, full = 0, qerr = 0;
                for (size_t k = 0; k < in; k++) {
                    const double p = (double)xs[(t * in + k) / 4] * ws[(o * in + k) / 4] *
                                     xq[t * in + k] * wq[o * in + k];
                    s += p;
                    a += fabs(p);
                    full += (double)x[t * in + k] * wf[o * in + k];
                    qerr += xs[(t * in + k) / 4] * 0.5 * fabs(wf[o * in + k]);
                }
                const double v = y[t * OUT + o];
                CHECK_MSG(fabs(v - s) <= 1e-5 * a, "q8 dot (%zu, %zu) in %zu: %.9g vs %.9g", t,
                          o, in, v, s);
                CHECK_MSG(fabs(v - full) <= 1e-5 * a + qerr * (1 + 1e-6), "q8 dot (%zu, %zu) "
                          "in %zu: %.9g vs unquantized %.9g", t, o, in, v, full);
            }
        for (int isa = SN_KERN_PORTABLE; isa < SN_KERN_ISA_COUNT; isa++) {
            if (sn_kern_q8_isa(cpu, isa) != isa) {
                printf("Q8_0 int8 dot products, %s: this CPU lacks them; skipped\n",
                       sn_kern_isa_name(isa));
                continue;
            }
            /* two threads' shares, accumulating onto zeros */
            memset(y2, 0, sizeof y2);
            sn_kern_q8_gemm(isa, xq, xs, xc, wq, ws, y2, OUT, N, in, 0, 4, true);
            sn_kern_q8_gemm(isa, xq, xs, xc, wq, ws, y2, OUT, N, in, 4, OUT, false);
            CHECK_MSG(!memcmp(y, y2, sizeof y), "Q8_0 int8 dots, %s, in %zu: not the portable "
                      "path's bits", sn_kern_isa_name(isa), in);
            printf("Q8_0 int8 dot products, %s, in %zu: the portable path's bits\n",
                   sn_kern_isa_name(isa), in);
        }
    }
    /* a non-finite activation gives non-finite outputs in its row, as the f32 product would;
    ** a block of subnormals quantizes to zeros */
    const size_t in = 64;
    static float x[N * 64];
    static int8_t xq[N * 64];
    static float xs[N * 16];
    static int32_t xc[N * 16];
    for (size_t i = 0; i < N * in; i++)
        x[i] = i < 32 ? 1e-41f : 1.0f;
    x[40] = NAN;
    x[64 + 3] = INFINITY;
    sn_kern_q8_quantize(x, N, in, xq, xs, xc);
    for (int j = 0; j < 32; j++)
        CHECK(xq[j] == 0 && xq[32 + j] == 0 && xq[64 + j] == 0);
    CHECK(xq[96] == 127 && xs[0] == 1e-41f / 127.0f);
    static int8_t wq[2 * 64];
    static float ws[2 * 16], y[N * 2];
    for (size_t i = 0; i < 2 * in; i++)
        wq[i] = (int8_t)(i % 5) - 2;
    for (size_t i = 0; i < 2 * in / 4; i++)
        ws[i] = 0.5f;
    for (int isa = SN_KERN_PORTABLE; isa < SN_KERN_ISA_COUNT; isa++) {
        if (sn_kern_q8_isa(cpu, isa) != isa)
            continue;
        sn_kern_q8_gemm(isa, xq, xs, xc, wq, ws, y, 2, N, in, 0, 2, false);
        CHECK_MSG(!isfinite(y[0]) && !isfinite(y[1]) && !isfinite(y[2]) && !isfinite(y[3]) &&
                  isfinite(y[4]) && isfinite(y[5]), "%s: non-finite activations",
                  sn_kern_isa_name(isa));
    }
}

/* ---- 2. forward per format and kernel set ------------------------------------------------- */

struct seqs {
    int32_t ids[N_SEQ][128];
};

static int score_all(const char *gguf, const char *spec, int threads, const struct seqs *s,
                     float *r)
{
    struct sn_detector_params dp = sn_detector_default_params();
    dp.n_threads = threads;
    dp.kernels = spec;
    struct sn_detector *d = NULL;
    int rc = sn_detector_open(gguf, &dp, &d, &E);
    if (rc == SN_E_UNSUPPORTED)
        return rc;
    OK(rc);
    for (int i = 0; d && i < N_SEQ; i++)
        OK(sn_detector_score_ids(d, s->ids[i], (size_t)seq_len[i], &r[i], NULL, &E));
    sn_detector_free(d);
    return rc;
}

/* Rewards of F32 files (and f32 tiles) by kernels/sgemm.c against those by OpenBLAS's sgemm,
** |r - r_blas| <= SG_TOL · (1 + |r_blas|): both sum in f32, in different orders (one FMA chain
** per output against OpenBLAS's blocked partial sums); the measured worst case (printed) was
** 2.8e-6, the bound about 3x. */
#define SG_TOL 1e-5

/* Whether spec's F32 products go by kernels/sgemm.c (the kernel text says so). */
static bool by_sgemm(const char *kernels) { return strstr(kernels, "kernels/sgemm.c") != NULL; }

/* How spec multiplies BF16 matrices: 1 dot products, 0 tiles, -1 the CPU lacks the kernels;
** *sg: whether F32 goes by kernels/sgemm.c. */
static int bf16_dot(const char *gguf, const char *spec, bool *sg)
{
    struct sn_detector_params dp = sn_detector_default_params();
    dp.kernels = spec;
    struct sn_detector *d = NULL;
    int rc = sn_detector_open(gguf, &dp, &d, &E), dot = -1;
    if (rc == SN_OK) {
        printf("%s: %s\n", spec, sn_detector_kernels(d));
        dot = strstr(sn_detector_kernels(d), "by BF16 dot") != NULL;
        *sg = by_sgemm(sn_detector_kernels(d));
    } else {
        CHECK_MSG(rc == SN_E_UNSUPPORTED, "%s", E.msg);
        printf("%s: %s; skipped\n", spec, E.msg);
    }
    sn_detector_free(d);
    return dot;
}

/* Every format against f32 (by OpenBLAS, r32) under `spec`; returns 77 when the CPU lacks it.
** *sg: whether spec's F32 products went by kernels/sgemm.c (may be NULL). */
static int formats(const char *const gg[4], const int types[4], const char *spec,
                   const struct seqs *s, const float *r32, float out[4][N_SEQ], bool *sg)
{
    bool ours = false;
    const int dot = bf16_dot(gg[2], spec, &ours);
    if (dot < 0)
        return 77;
    if (sg)
        *sg = ours;
    for (int f = 0; f < 4; f++) {
        OK(score_all(gg[f], spec, 2, s, out[f]));
        double worst = 0, tol = types[f] == SN_GGML_F32 && ours ? SG_TOL
                                                                : tol_of(types[f], dot == 1);
        for (int i = 0; i < N_SEQ; i++) {
            double e = fabs((double)out[f][i] - r32[i]) / (1 + fabs((double)r32[i]));
            worst = e > worst ? e : worst;
        }
        printf("%-13s %-5s worst |r - r_f32| / (1 + |r_f32|) = %.2e (bound %.0e)\n", spec,
               sn_ggml_type_name(types[f]), worst, tol);
        if (types[f] == SN_GGML_F32 && !ours)
            CHECK_MSG(!memcmp(out[f], r32, sizeof(float) * N_SEQ), "%s: F32 file", spec);
        else
            CHECK_MSG(worst <= tol, "%s %s: %.3e > %.0e", spec, sn_ggml_type_name(types[f]),
                      worst, tol);
    }
    return 0;
}

/* ---- 3. memory ---------------------------------------------------------------------------- */

static void memory(const char *gguf)
{
    struct sn_gguf *g = NULL;
    OK(sn_gguf_open(gguf, &g, &E));
    uint64_t mat_f32 = 0;
    for (size_t i = 0; g && i < sn_gguf_n_tensors(g); i++) {
        const struct sn_gguf_tensor *t = sn_gguf_tensor(g, i);
        if (t->n_dims == 2)
            mat_f32 += t->n_elements * 4;
    }
    sn_gguf_close(g);
    struct sn_detector_params dp = sn_detector_default_params();
    dp.max_tokens = 32;
    struct sn_detector *d = NULL;
    uint64_t before = sn_alloc_bytes();
    OK(sn_detector_open(gguf, &dp, &d, &E));
    uint64_t asked = sn_alloc_bytes() - before;
    size_t scratch = d ? sn_detector_scratch_bytes(d) : 0;
    printf("open %s: %" PRIu64 " bytes allocated, of which scratch %zu; matrices as f32 %" PRIu64
           "\n", gguf, asked, scratch, mat_f32);
    CHECK(asked >= scratch);
    CHECK_MSG(asked - scratch < mat_f32 / 4, "%s: %" PRIu64 " bytes beyond the scratch",
              gguf, asked - scratch);
    sn_detector_free(d);
}

/* ---- 4. two processes --------------------------------------------------------------------- */

static void processes(const char *dir, const char *gguf, const struct seqs *s)
{
    char ids[1100], o1[1100], o2[1100];
    snprintf(ids, sizeof ids, "%s/ids.txt", dir);
    snprintf(o1, sizeof o1, "%s/p1.txt", dir);
    snprintf(o2, sizeof o2, "%s/p2.txt", dir);
    FILE *f = fopen(ids, "w");
    CHECK(f != NULL);
    for (int i = 0; f && i < N_SEQ; i++)
        for (int k = 0; k < seq_len[i]; k++)
            fprintf(f, "%d%c", (int)s->ids[i][k], k + 1 < seq_len[i] ? ' ' : '\n');
    if (f)
        fclose(f);
    const char *bin = sn_test_bin();
    CHECK(sn_test_sh("'%s' score --detector '%s' --ids --exact --threads 1 < '%s' > '%s' & "
                     "'%s' score --detector '%s' --ids --exact --threads 1 < '%s' > '%s'; "
                     "wait $! || exit 1", bin, gguf, ids, o1, bin, gguf, ids, o2) == 0);
    float r[N_SEQ], a[N_SEQ], b[N_SEQ];
    CHECK(score_all(gguf, NULL, 1, s, r) == SN_OK);
    CHECK(sn_test_read_floats(o1, a, N_SEQ) == N_SEQ);
    CHECK(sn_test_read_floats(o2, b, N_SEQ) == N_SEQ);
    for (int i = 0; i < N_SEQ; i++) {
        char x[32], y[32], z[32];
        snprintf(x, sizeof x, "%.9g", r[i]);
        snprintf(y, sizeof y, "%.9g", a[i]);
        snprintf(z, sizeof z, "%.9g", b[i]);
        CHECK_STR(y, x);
        CHECK_STR(z, x);
    }
}

int main(int argc, char **argv)
{
    const char *spec = argc > 1 ? argv[1] : NULL;
    char name[64] = "export_kernels";
    if (spec) {
        snprintf(name, sizeof name, "export_kernels_%s", spec);
        for (char *p = name; *p; p++)
            *p = *p == '+' ? '_' : *p;
    }
    const char *dir = sn_test_dir(name);
    struct sn_kern_cpu cpu;
    sn_kern_cpu_detect(&cpu);
    char feat[256];
    sn_kern_cpu_describe(&cpu, feat, sizeof feat);
    printf("cpu: %s\n", feat);
    if (!spec) {
        kernels_alone(&cpu);
        q8_alone(&cpu);
    }

    char mdir[1100], gg[4][1100];
    const int types[4] = {SN_GGML_F32, SN_GGML_F16, SN_GGML_BF16, SN_GGML_Q8_0};
    snprintf(mdir, sizeof mdir, "%s/tiny", dir);
    struct sn_test_qwen2 c = {256, 2, 4, 2, 512, SN_TOKENIZER_DEMO_VOCAB, 1024, 1e6, 0.05, 21,
                              NULL};
    OK(sn_test_qwen2_write(&c, mdir, NULL, &E));
    struct sn_export_params ep = sn_export_default_params();
    ep.base_dir = mdir;
    ep.max_len = 256;
    for (int f = 0; f < 4; f++) {
        snprintf(gg[f], sizeof gg[f], "%s/%s.gguf", dir, sn_ggml_type_name(types[f]));
        ep.type = types[f];
        OK(sn_export_gguf(&ep, gg[f], &E));
    }
    struct seqs s;
    struct sn_rng r;
    sn_rng_seed(&r, 3);
    for (int i = 0; i < N_SEQ; i++)
        for (int k = 0; k < seq_len[i]; k++)
            s.ids[i][k] = (int32_t)sn_rng_below(&r, SN_TOKENIZER_DEMO_VOCAB);
    float r32[N_SEQ], out[4][N_SEQ];
    OK(score_all(gg[0], "portable", 2, &s, r32));   /* OpenBLAS's sgemm */
    const char *const ggs[4] = {gg[0], gg[1], gg[2], gg[3]};
    if (spec) {
        int rc = formats(ggs, types, spec, &s, r32, out, NULL);
        return rc ? rc : sn_test_done();
    }

    /* 2. the portable sets always; the others where this CPU has them. Tiles: the same bits
    ** under every ISA with the same f32 GEMM (OpenBLAS's, or kernels/sgemm.c's where the
    ** ISA is avx512 without +blas). */
    static const char *const specs[] = {"portable+tile", "portable+dot", "avx2+tile",
                                        "avx2+dot", "avx512+tile", "avx512+dot",
                                        "avx512+tile+blas", "avx512+blas+dot",
                                        "portable+int8", "avx2+int8", "avx512+int8"};
    float int8_ref[N_SEQ];
    float tile_ref[4][N_SEQ], sg_ref[4][N_SEQ];
    bool sg = false, have_sg = false;
    CHECK(formats(ggs, types, "portable+tile", &s, r32, tile_ref, &sg) == 0);
    CHECK(!sg);
    for (size_t k = 1; k < sizeof specs / sizeof *specs; k++) {
        if (formats(ggs, types, specs[k], &s, r32, out, &sg))
            continue;
        CHECK_MSG(sg == (!strncmp(specs[k], "avx512", 6) && !strstr(specs[k], "+blas")),
                  "%s: F32 by %s", specs[k], sg ? "kernels/sgemm.c" : "OpenBLAS");
        if (sg && !have_sg && strstr(specs[k], "+tile")) {
            memcpy(sg_ref, out, sizeof sg_ref);
            have_sg = true;
        }
        for (int f = 0; f < 4; f++)
            if (strstr(specs[k], "+tile") || (types[f] != SN_GGML_BF16 && types[f] != SN_GGML_Q8_0))
                CHECK_MSG(!memcmp(out[f], sg ? sg_ref[f] : tile_ref[f], sizeof out[f]),
                          "%s %s: not the bits of the tiles with the same sgemm", specs[k],
                          sn_ggml_type_name(types[f]));
        /* Q8_0 by int8 dot products: the same bits under every ISA (kernels/q8.c) */
        if (!strcmp(specs[k], "portable+int8"))
            memcpy(int8_ref, out[3], sizeof int8_ref);
        else if (strstr(specs[k], "+int8"))
            CHECK_MSG(!memcmp(out[3], int8_ref, sizeof int8_ref), "%s Q8_0: not the portable "
                      "int8 path's bits", specs[k]);
    }
    /* a set the CPU lacks, or a bad one, is an error naming it */
    struct sn_detector_params dp = sn_detector_default_params();
    struct sn_detector *d = NULL;
    dp.kernels = "avx9";
    CHECK(sn_detector_open(gg[3], &dp, &d, &E) == SN_E_ARG && strstr(E.msg, "avx9"));
    E = (struct sn_err){0};
    dp.kernels = "portable+fast";
    CHECK(sn_detector_open(gg[3], &dp, &d, &E) == SN_E_ARG && strstr(E.msg, "+fast"));
    static const char *const bad[] = {"avx2+blas+blas", "portable+dot+tile", "auto+blas+"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        E = (struct sn_err){0};
        dp.kernels = bad[k];
        CHECK_MSG(sn_detector_open(gg[3], &dp, &d, &E) == SN_E_ARG && strstr(E.msg, bad[k]),
                  "%s: %s", bad[k], E.msg);
    }

    /* 3., 4. */
    for (int f = 0; f < 4; f++)
        memory(gg[f]);
    processes(dir, gg[3], &s);
    return sn_test_done();
}
