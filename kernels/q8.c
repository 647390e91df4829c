/* kernels/q8.c: Q8_0 matrices by int8 dot products against activations quantized to Q8_0 (the
** `int8` kernels of kernels/kernels.h; docs/export.md "Weight formats and kernels").
**
** Arithmetic, the same in every path. x is quantized once per product, per block of 32 as
** ggml's quantize_row_q8_0: d = max|x| / 127 (kept in f32), q = round(x / d) (half away from
** zero). A row is read in groups of 4 elements; group g's integer dot product
**   i_g = Σ_{e<4} xq[4g+e] · wq[4g+e]
** is exact (|i_g| <= 4 · 127 · 128), and so is (float)i_g. Each output y[t][o] has 16 f32
** lanes; group g goes to lane g mod 16 as
**   acc_{g mod 16} = fma((float)i_g, xs[g] · ws[g], acc_{g mod 16})
** (xs, ws: the scales of g's blocks in x and W, their product rounded to f32), in increasing
** g, and the lanes are summed as the BF16 kernels do (kernels/bf16.c). That is AVX512-VNNI's
** layout: `vpdpbusd` sums 4 products of unsigned by signed bytes into each of 16 int32 lanes
** (Intel SDM, VPDPBUSD); W's bytes are made unsigned by adding 128 (xor 0x80) and each lane
** starts from -128 · Σ of its 4 x, which cancels it, so i_g stays exact. AVX2 has no such
** instruction: `vpmaddubsw` of |w| by x carrying w's sign (no saturation: |products| <= 128 ·
** 127) then `vpmaddwd` by ones give the same i_g in 8 lanes, run over the even blocks for lanes
** 0-7 and the odd ones for lanes 8-15 (each lane still in increasing g). All integer steps are
** exact and the f32 steps are the same operations in the same order, so the three paths give
** the same bits; each output is one thread's, so the thread split does not change them. */
#include "kernels/kernels_internal.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SN_KERN_X86 1
#endif

#define QB SN_KERN_Q8_0_BLOCK
#define Q8_BYTES (2 + QB)
#define LANES 16
#define CHUNK (4 * LANES)   /* elements per pass over the 16 lanes: 2 blocks */

int sn_kern_q8_isa(const struct sn_kern_cpu *cpu, int isa)
{
    if (isa == SN_KERN_AVX512 && sn_kern_isa_supported(cpu, isa) && cpu->avx512vnni)
        return SN_KERN_AVX512;
    if (isa >= SN_KERN_AVX2 && sn_kern_isa_supported(cpu, SN_KERN_AVX2))
        return SN_KERN_AVX2;
    return SN_KERN_PORTABLE;
}

void sn_kern_q8_quantize(const float *x, size_t n, size_t in, int8_t *xq, float *xs,
                         int32_t *xc)
{
    for (size_t b = 0; b < n * (in / QB); b++) {
        const float *v = x + b * QB;
        float amax = 0.0f;
        bool fin = true;
        for (int j = 0; j < QB; j++) {
            fin = fin && isfinite(v[j]);
            amax = fabsf(v[j]) > amax ? fabsf(v[j]) : amax;
        }
        /* a block holding an infinity or NaN gets q = 0 and scale NaN, so its outputs are not
        ** finite, as the f32 product's would be */
        const float d = fin ? amax / 127.0f : NAN;
        float id = fin && d != 0.0f ? 1.0f / d : 0.0f;
        id = isfinite(id) ? id : 0.0f;   /* d subnormal: the block's values round to q = 0 */
        int8_t *q = xq + b * QB;
        for (int j = 0; j < QB && !fin; j++)
            q[j] = 0;
        for (int j = 0; j < QB && fin; j++) {
            /* roundf (half away from zero) without the libm call: |y| <= 127 (+ rounding) */
            const float y = v[j] * id;
            int r = (int)y;                                  /* truncated; y - r is exact */
            r += y - (float)r >= 0.5f ? 1 : (float)r - y >= 0.5f ? -1 : 0;
            q[j] = (int8_t)(r > 127 ? 127 : r < -127 ? -127 : r);
        }
        for (int g = 0; g < QB / 4; g++) {
            xs[b * (QB / 4) + (size_t)g] = d;
            xc[b * (QB / 4) + (size_t)g] =
                -128 * (q[4 * g] + q[4 * g + 1] + q[4 * g + 2] + q[4 * g + 3]);
        }
    }
}

void sn_kern_q8_unpack(const void *W, size_t in, size_t r0, size_t r1, int8_t *wq, float *ws)
{
    const size_t nb = in / QB;
    for (size_t r = r0; r < r1; r++) {
        const uint8_t *p = (const uint8_t *)W + r * nb * Q8_BYTES;
        for (size_t b = 0; b < nb; b++, p += Q8_BYTES, wq += QB, ws += QB / 4) {
            uint16_t h;
            memcpy(&h, p, 2);
            const float d = sn_f16_to_f32(h);
            memcpy(wq, p + 2, QB);
            for (int g = 0; g < QB / 4; g++)
                ws[g] = d;
        }
    }
}

/* ---- portable ----------------------------------------------------------------------------- */

static float dot_portable(const int8_t *xq, const float *xs, const int8_t *wq, const float *ws,
                          size_t in)
{
    float acc[LANES] = {0};
    for (size_t g = 0; g < in / 4; g++) {
        const int8_t *a = xq + 4 * g, *b = wq + 4 * g;
        const int32_t i = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3];
        const float s = xs[g] * ws[g];
        acc[g % LANES] = fmaf((float)i, s, acc[g % LANES]);
    }
    return sn_kern_lanes_sum(acc);
}

static void gemm_portable(const int8_t *xq, const float *xs, const int8_t *wq, const float *ws,
                          float *y, size_t ldy, size_t n, size_t in, size_t o0, size_t o1,
                          bool accumulate)
{
    for (size_t t = 0; t < n; t++)
        for (size_t o = o0; o < o1; o++) {
            float v = dot_portable(xq + t * in, xs + t * in / 4, wq + o * in, ws + o * in / 4,
                                   in);
            y[t * ldy + o] = accumulate ? y[t * ldy + o] + v : v;
        }
}

#ifdef SN_KERN_X86
/* One product's operands (sn_kern_q8_gemm), W and y from the first output of the call. */
struct prod {
    const int8_t *xq, *wq;
    const float *xs, *ws;
    const int32_t *xc;
    float *y;
    size_t ldy, n, in;
    bool acc;
};

/* Cache blocking as kernels/bf16.c's: W's rows in chunks of about 512 KiB (2 bytes an element
** here: q and the group scales), and within a chunk x's rows in panels of about `panel_kib`
** (3 bytes an element), so both stay in the L2 cache while every block of bw outputs of the
** chunk passes over the panel; block(p, t, o, nx <= bx, nw <= bw) computes one block. */
static void walk(const struct prod *p, size_t out, size_t bx, size_t bw, size_t panel_kib,
                 void (*block)(const struct prod *, size_t, size_t, size_t, size_t))
{
    size_t panel = (panel_kib << 10) / (3 * p->in + 1);
    panel = panel < bx ? bx : panel > 64 ? 64 : panel / bx * bx;
    size_t chunk = ((size_t)512 << 10) / (2 * p->in + 1);
    chunk = chunk < bw ? bw : chunk / bw * bw;
    for (size_t c0 = 0; c0 < out; c0 += chunk) {
        const size_t c1 = c0 + chunk < out ? c0 + chunk : out;
        for (size_t t0 = 0; t0 < p->n; t0 += panel) {
            const size_t t1 = t0 + panel < p->n ? t0 + panel : p->n;
            for (size_t o = c0; o < c1; o += bw)
                for (size_t t = t0; t < t1; t += bx)
                    block(p, t, o, t + bx <= t1 ? bx : t1 - t, o + bw <= c1 ? bw : c1 - o);
        }
    }
}

/* ---- AVX-512 + AVX512-VNNI ---------------------------------------------------------------- */

#define VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
#define AVX2_TARGET __attribute__((target("avx2,fma")))

/* sn_kern_lanes_sum in registers: (l0..7 + l8..15), then halves, then (l0 + l2) + (l1 + l3). */
__attribute__((target("avx"))) static inline float hsum8x2(__m256 lo, __m256 hi)
{
    __m256 s8 = _mm256_add_ps(lo, hi);
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));          /* l0+l2, l1+l3 */
    __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));      /* (l0+l2) + (l1+l3) */
    return _mm_cvtss_f32(s1);
}

VNNI_TARGET static inline float hsum16(__m512 v)
{
    return hsum8x2(_mm512_castps512_ps256(v),
                   _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

/* The tail of a row whose block count is odd: its last pass holds one block (lanes 0-7); the
** other lanes load zeros, whose fma leaves their sums as they are. */
#define BMASK(half) ((half) ? (__mmask64)0xffffffffu : ~(__mmask64)0)
#define DMASK(half) ((half) ? (__mmask16)0x00ff : (__mmask16)0xffff)

struct xrow { const int8_t *q; const float *s; const int32_t *c; };

VNNI_TARGET static inline __m512 step(__m512 acc, __m512i c, __m512i xq, __m512 xs, __m512i wu,
                                      __m512 ws)
{
    const __m512i i = _mm512_dpbusd_epi32(c, wu, xq);   /* Σ (w + 128) x - 128 Σ x = Σ w x */
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(i), _mm512_mul_ps(xs, ws), acc);
}

/* 4 rows of x by 4 rows of W: 16 accumulators, written out so they stay in registers. */
VNNI_TARGET static void vblock4x4(const int8_t *xq, const float *xs, const int32_t *xc,
                                  const int8_t *wq, const float *ws, float *y, size_t ldy,
                                  size_t in, bool acc)
{
    __m512 c00 = _mm512_setzero_ps(), c01 = c00, c02 = c00, c03 = c00, c10 = c00, c11 = c00,
           c12 = c00, c13 = c00, c20 = c00, c21 = c00, c22 = c00, c23 = c00, c30 = c00,
           c31 = c00, c32 = c00, c33 = c00;
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    const size_t g4 = in / 4;
    for (size_t k = 0; k < in; k += CHUNK) {
        const bool half = in - k < CHUNK;
        const __mmask64 bm = BMASK(half);
        const __mmask16 dm = DMASK(half);
        const size_t g = k / 4;
#define WL(j) _mm512_xor_si512(_mm512_maskz_loadu_epi8(bm, wq + (j) * in + k), flip)
#define WS(j) _mm512_maskz_loadu_ps(dm, ws + (j) * g4 + g)
        const __m512i w0 = WL(0), w1 = WL(1), w2 = WL(2), w3 = WL(3);
        const __m512 s0 = WS(0), s1 = WS(1), s2 = WS(2), s3 = WS(3);
#define XROW(i, a0, a1, a2, a3)                                                               \
        do {                                                                                   \
            const __m512i q = _mm512_maskz_loadu_epi8(bm, xq + (i) * in + k);                \
            const __m512i c = _mm512_maskz_loadu_epi32(dm, xc + (i) * g4 + g);               \
            const __m512 s = _mm512_maskz_loadu_ps(dm, xs + (i) * g4 + g);                   \
            a0 = step(a0, c, q, s, w0, s0);                                                    \
            a1 = step(a1, c, q, s, w1, s1);                                                    \
            a2 = step(a2, c, q, s, w2, s2);                                                    \
            a3 = step(a3, c, q, s, w3, s3);                                                    \
        } while (0)
        XROW(0, c00, c01, c02, c03);
        XROW(1, c10, c11, c12, c13);
        XROW(2, c20, c21, c22, c23);
        XROW(3, c30, c31, c32, c33);
#undef XROW
    }
    const __m512 c[16] = {c00, c01, c02, c03, c10, c11, c12, c13,
                          c20, c21, c22, c23, c30, c31, c32, c33};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            float v = hsum16(c[i * 4 + j]);
            y[i * ldy + j] = acc ? y[i * ldy + j] + v : v;
        }
}

/* 1 row of x by 1 row of W (the rows and outputs left over). */
VNNI_TARGET static void vblock1x1(const int8_t *xq, const float *xs, const int32_t *xc,
                                  const int8_t *wq, const float *ws, float *y, size_t in,
                                  bool acc)
{
    __m512 a = _mm512_setzero_ps();
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    const size_t g4 = 0;   /* WL(0), WS(0): the one row */
    for (size_t k = 0; k < in; k += CHUNK) {
        const bool half = in - k < CHUNK;
        const __mmask64 bm = BMASK(half);
        const __mmask16 dm = DMASK(half);
        const size_t g = k / 4;
        a = step(a, _mm512_maskz_loadu_epi32(dm, xc + g), _mm512_maskz_loadu_epi8(bm, xq + k),
                 _mm512_maskz_loadu_ps(dm, xs + g), WL(0), WS(0));
    }
#undef WL
#undef WS
    float v = hsum16(a);
    *y = acc ? *y + v : v;
}

/* 4 x 4 blocks by vblock4x4, the rest output by output. */
VNNI_TARGET static void vblock(const struct prod *p, size_t t, size_t o, size_t nx, size_t nw)
{
    const size_t in = p->in, g4 = in / 4;
    if (nx == 4 && nw == 4) {
        vblock4x4(p->xq + t * in, p->xs + t * g4, p->xc + t * g4, p->wq + o * in,
                  p->ws + o * g4, p->y + t * p->ldy + o, p->ldy, in, p->acc);
        return;
    }
    for (size_t i = t; i < t + nx; i++)
        for (size_t j = o; j < o + nw; j++)
            vblock1x1(p->xq + i * in, p->xs + i * g4, p->xc + i * g4, p->wq + j * in,
                      p->ws + j * g4, p->y + i * p->ldy + j, in, p->acc);
}

/* ---- AVX2 --------------------------------------------------------------------------------- */

/* One block: i_g of its 8 groups times the scales, into a. */
AVX2_TARGET static inline __m256 astep(__m256 a, __m256i x, __m256 xs, __m256i w, __m256 ws)
{
    const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
    const __m256i i = _mm256_madd_epi16(p, _mm256_set1_epi16(1));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(i), _mm256_mul_ps(xs, ws), a);
}

#define LD8(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))

/* 2 rows of x by 2 rows of W; lanes 0-7 over the even blocks, then lanes 8-15 over the odd. */
AVX2_TARGET static void ablock2x2(const int8_t *xq, const float *xs, const int8_t *wq,
                                  const float *ws, float *y, size_t ldy, size_t in, size_t nx,
                                  size_t nw, bool acc)
{
    const size_t g4 = in / 4, nb = in / QB;
    __m256 lanes[2][2][2];   /* [x row][W row][lanes 0-7, 8-15] */
    for (size_t h = 0; h < 2; h++) {
        __m256 a00 = _mm256_setzero_ps(), a01 = a00, a10 = a00, a11 = a00;
        for (size_t b = h; b < nb; b += 2) {
            const size_t k = b * QB, g = b * (QB / 4);
            const __m256i w0 = LD8(wq + k), w1 = LD8(wq + (nw - 1) * in + k);
            const __m256 s0 = _mm256_loadu_ps(ws + g), s1 = _mm256_loadu_ps(ws + (nw - 1) * g4 + g);
            __m256i x = LD8(xq + k);
            __m256 s = _mm256_loadu_ps(xs + g);
            a00 = astep(a00, x, s, w0, s0);
            a01 = astep(a01, x, s, w1, s1);
            x = LD8(xq + (nx - 1) * in + k);
            s = _mm256_loadu_ps(xs + (nx - 1) * g4 + g);
            a10 = astep(a10, x, s, w0, s0);
            a11 = astep(a11, x, s, w1, s1);
        }
        lanes[0][0][h] = a00;
        lanes[0][1][h] = a01;
        lanes[1][0][h] = a10;
        lanes[1][1][h] = a11;
    }
    for (size_t i = 0; i < nx; i++)
        for (size_t j = 0; j < nw; j++) {
            float v = hsum8x2(lanes[i][j][0], lanes[i][j][1]);
            y[i * ldy + j] = acc ? y[i * ldy + j] + v : v;
        }
}

/* nx, nw in {1, 2}: a single row repeats itself (the same loads, one of the outputs kept). */
AVX2_TARGET static void ablock(const struct prod *p, size_t t, size_t o, size_t nx, size_t nw)
{
    const size_t in = p->in, g4 = in / 4;
    ablock2x2(p->xq + t * in, p->xs + t * g4, p->wq + o * in, p->ws + o * g4,
              p->y + t * p->ldy + o, p->ldy, in, nx, nw, p->acc);
}
#endif

void sn_kern_q8_gemm(int isa, const int8_t *xq, const float *xs, const int32_t *xc,
                     const int8_t *wq, const float *ws, float *y, size_t ldy, size_t n,
                     size_t in, size_t o0, size_t o1, bool accumulate)
{
#ifdef SN_KERN_X86
    const struct prod p = {xq, wq + o0 * in, xs, ws + o0 * (in / 4), xc, y + o0, ldy, n, in,
                           accumulate};
    if (isa == SN_KERN_AVX512) {
        walk(&p, o1 - o0, 4, 4, 256, vblock);
        return;
    }
    if (isa == SN_KERN_AVX2) {
        walk(&p, o1 - o0, 2, 2, 128, ablock);
        return;
    }
#else
    (void)isa;
#endif
    (void)xc;
    gemm_portable(xq, xs, wq, ws, y, ldy, n, in, o0, o1, accumulate);
}
