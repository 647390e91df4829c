/* kernels/bf16.c: BF16 dot products y = x · Wᵀ (the `dot` kernels of kernels/kernels.h).
**
** Arithmetic, the same in every path: x is rounded to BF16 (round to nearest even, on the bit
** pattern, so every ISA rounds alike); each output y[t][o] is a dot product over the row in
** chunks of 32 elements with 16 f32 lanes, lane j of a chunk at k adding
**   acc_j += x[k+2j+1]·w[k+2j+1], then acc_j += x[k+2j]·w[k+2j]
** (each a fused multiply-add: the product of two BF16 values is exact in f32), which is what
** AVX512-BF16's vdpbf16ps does per lane (Intel SDM, VDPBF16PS); the 16 lanes are then summed
** as ((l0..7 + l8..15) as 8, then halves, then halves). A row's tail past a multiple of 32
** reads as zeros. vdpbf16ps treats subnormal inputs and results as zero (DAZ, FTZ) and the
** portable path does not, so the two agree bit for bit unless a subnormal occurs. */
#include "kernels/kernels_internal.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SN_KERN_X86 1
#endif

#define CHUNK 32
#define LANES 16

static uint16_t round_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);    /* NaN stays a (quiet) NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static float bf16f(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---- portable ----------------------------------------------------------------------------- */

static float dot_portable(const uint16_t *x, const uint16_t *w, size_t in)
{
    float acc[LANES] = {0};
    for (size_t k = 0; k < in; k += CHUNK)
        for (int j = 0; j < LANES; j++) {
            size_t e = k + 2 * (size_t)j, o = e + 1;
            float xo = o < in ? bf16f(x[o]) : 0.0f, wo = o < in ? bf16f(w[o]) : 0.0f;
            float xe = e < in ? bf16f(x[e]) : 0.0f, we = e < in ? bf16f(w[e]) : 0.0f;
            acc[j] = fmaf(xo, wo, acc[j]);
            acc[j] = fmaf(xe, we, acc[j]);
        }
    return sn_kern_lanes_sum(acc);
}

static void gemm_portable(const uint16_t *xb, const uint16_t *W, float *y, size_t ldy, size_t n,
                          size_t in, size_t o0, size_t o1, bool accumulate)
{
    for (size_t t = 0; t < n; t++)
        for (size_t o = o0; o < o1; o++) {
            float v = dot_portable(xb + t * in, W + o * in, in);
            y[t * ldy + o] = accumulate ? y[t * ldy + o] + v : v;
        }
}

#ifdef SN_KERN_X86
/* ---- AVX-512 + AVX512-BF16 ---------------------------------------------------------------- */

#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

BF16_TARGET static inline float hsum16(__m512 v)
{
    __m256 lo = _mm512_castps512_ps256(v);
    __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
    __m256 s8 = _mm256_add_ps(lo, hi);
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));          /* l0+l2, l1+l3 */
    __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));      /* (l0+l2) + (l1+l3) */
    return _mm_cvtss_f32(s1);
}

/* Loads 32 BF16 values from p, or the first `rem` of them (rem < 32) and zeros. */
#define LD(p, rem) ((rem) ? _mm512_maskz_loadu_epi16((__mmask32)((1ull << (rem)) - 1), (p)) \
                          : _mm512_loadu_si512((const void *)(p)))
#define DP(acc, a, b) acc = _mm512_dpbf16_ps(acc, (__m512bh)(a), (__m512bh)(b))

BF16_TARGET static inline float out1(float *y, float v, bool accumulate)
{
    return *y = accumulate ? *y + v : v;
}

/* 4 rows of x by 4 rows of W: 16 accumulators, written out by hand so they stay in registers. */
BF16_TARGET static void block4x4(const uint16_t *x, const uint16_t *W, float *y, size_t ldy,
                                 size_t in, bool acc)
{
    __m512 c00 = _mm512_setzero_ps(), c01 = c00, c02 = c00, c03 = c00, c10 = c00, c11 = c00,
           c12 = c00, c13 = c00, c20 = c00, c21 = c00, c22 = c00, c23 = c00, c30 = c00,
           c31 = c00, c32 = c00, c33 = c00;
    for (size_t k = 0; k < in; k += CHUNK) {
        const size_t rem = in - k < CHUNK ? in - k : 0;
        const __m512i w0 = LD(W + k, rem), w1 = LD(W + in + k, rem);
        const __m512i w2 = LD(W + 2 * in + k, rem), w3 = LD(W + 3 * in + k, rem);
        __m512i a = LD(x + k, rem);
        DP(c00, a, w0); DP(c01, a, w1); DP(c02, a, w2); DP(c03, a, w3);
        a = LD(x + in + k, rem);
        DP(c10, a, w0); DP(c11, a, w1); DP(c12, a, w2); DP(c13, a, w3);
        a = LD(x + 2 * in + k, rem);
        DP(c20, a, w0); DP(c21, a, w1); DP(c22, a, w2); DP(c23, a, w3);
        a = LD(x + 3 * in + k, rem);
        DP(c30, a, w0); DP(c31, a, w1); DP(c32, a, w2); DP(c33, a, w3);
    }
    const __m512 c[16] = {c00, c01, c02, c03, c10, c11, c12, c13,
                          c20, c21, c22, c23, c30, c31, c32, c33};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            out1(y + i * ldy + j, hsum16(c[i * 4 + j]), acc);
}

/* 1 row of x by 4 rows of W (the rows left over, and a single token's GEMV). */
BF16_TARGET static void block1x4(const uint16_t *x, const uint16_t *W, float *y, size_t in,
                                 bool acc)
{
    __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
    for (size_t k = 0; k < in; k += CHUNK) {
        const size_t rem = in - k < CHUNK ? in - k : 0;
        const __m512i a = LD(x + k, rem);
        DP(c0, a, LD(W + k, rem));
        DP(c1, a, LD(W + in + k, rem));
        DP(c2, a, LD(W + 2 * in + k, rem));
        DP(c3, a, LD(W + 3 * in + k, rem));
    }
    out1(y, hsum16(c0), acc);
    out1(y + 1, hsum16(c1), acc);
    out1(y + 2, hsum16(c2), acc);
    out1(y + 3, hsum16(c3), acc);
}

BF16_TARGET static void block1x1(const uint16_t *x, const uint16_t *w, float *y, size_t in,
                                 bool acc)
{
    __m512 c = _mm512_setzero_ps();
    for (size_t k = 0; k < in; k += CHUNK) {
        const size_t rem = in - k < CHUNK ? in - k : 0;
        DP(c, LD(x + k, rem), LD(w + k, rem));
    }
    out1(y, hsum16(c), acc);
}

/* Cache blocking: outputs in chunks of rows of W of about 512 KiB, and within a chunk, rows of
** x in panels of about 256 KiB, so that both stay in the L2 cache while every block of 4
** outputs of the chunk passes over the panel; W is read from memory once per call (it may be
** a memory-mapped matrix far larger than any cache), x once per chunk. */
BF16_TARGET static void gemm_avx512(const uint16_t *xb, const uint16_t *W, float *y, size_t ldy,
                                    size_t n, size_t in, size_t o0, size_t o1, bool acc)
{
    size_t panel = ((size_t)256 << 10) / (2 * in + 1);
    panel = panel < 4 ? 4 : panel > 64 ? 64 : panel / 4 * 4;
    size_t chunk = ((size_t)512 << 10) / (2 * in + 1);
    chunk = chunk < 4 ? 4 : chunk / 4 * 4;
    for (size_t c0 = o0; c0 < o1; c0 += chunk) {
        const size_t c1 = c0 + chunk < o1 ? c0 + chunk : o1;
        for (size_t t0 = 0; t0 < n; t0 += panel) {
            const size_t t1 = t0 + panel < n ? t0 + panel : n;
            size_t o = c0;
            for (; o + 4 <= c1; o += 4) {
                const uint16_t *w = W + o * in;
                size_t t = t0;
                for (; t + 4 <= t1; t += 4)
                    block4x4(xb + t * in, w, y + t * ldy + o, ldy, in, acc);
                for (; t < t1; t++)
                    block1x4(xb + t * in, w, y + t * ldy + o, in, acc);
            }
            for (; o < c1; o++)
                for (size_t t = t0; t < t1; t++)
                    block1x1(xb + t * in, W + o * in, y + t * ldy + o, in, acc);
        }
    }
}

__attribute__((target("avx512f,avx512bw,avx512vl")))
static void to_bf16_avx512(const float *x, size_t n, uint16_t *xb)
{
    size_t i = 0;
    const __m512i one = _mm512_set1_epi32(1), bias = _mm512_set1_epi32(0x7fff);
    const __m512i absm = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
    for (; i + 16 <= n; i += 16) {
        __m512i u = _mm512_loadu_si512((const void *)(x + i));
        __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, absm), inf);
        __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(bias,
                                     _mm512_and_si512(_mm512_srli_epi32(u, 16), one)));
        r = _mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x400000));
        _mm256_storeu_si256((void *)(xb + i), _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16)));
    }
    for (; i < n; i++)
        xb[i] = round_bf16(x[i]);
}
#endif

void sn_kern_rows_to_bf16(int isa, int type, const void *W, size_t in, size_t r0, size_t r1,
                          uint16_t *dst)
{
    if (type == SN_KERN_BF16) {
        const size_t rb = sn_kern_row_bytes(type, in);
        memcpy(dst, (const uint8_t *)W + r0 * rb, (r1 - r0) * rb);
        return;
    }
    float row[256];   /* a row at a time, in pieces of whole Q8_0 blocks */
    const size_t rb = sn_kern_row_bytes(type, in), step = 256;
    for (size_t r = r0; r < r1; r++, dst += in) {
        const uint8_t *p = (const uint8_t *)W + r * rb;
        for (size_t k = 0; k < in; k += step) {
            const size_t m = in - k < step ? in - k : step;
            sn_kern_rows_to_f32(isa, type, p + sn_kern_row_bytes(type, k), m, 0, 1, row);
            sn_kern_to_bf16(isa, row, m, dst + k);
        }
    }
}

void sn_kern_to_bf16(int isa, const float *x, size_t n, uint16_t *xb)
{
#ifdef SN_KERN_X86
    if (isa == SN_KERN_AVX512) {
        to_bf16_avx512(x, n, xb);
        return;
    }
#else
    (void)isa;
#endif
    for (size_t i = 0; i < n; i++)
        xb[i] = round_bf16(x[i]);
}

void sn_kern_bf16_gemm(bool hw, const uint16_t *xb, const uint16_t *W, float *y, size_t ldy,
                       size_t n, size_t in, size_t o0, size_t o1, bool accumulate)
{
#ifdef SN_KERN_X86
    if (hw) {
        gemm_avx512(xb, W, y, ldy, n, in, o0, o1, accumulate);
        return;
    }
#else
    (void)hw;
#endif
    gemm_portable(xb, W, y, ldy, n, in, o0, o1, accumulate);
}
