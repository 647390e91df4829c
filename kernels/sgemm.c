/* kernels/sgemm.c: f32 products y = x · Wᵀ (+ y) with W (out, in) row-major (the `sgemm`
** kernels of kernels/kernels.h; docs/export.md "Weight formats and kernels").
**
** Arithmetic, the same in every path: each output is one chain of fused multiply-adds in
** increasing k,
**   c = accumulate ? y[t][o] : 0;  c = fma(x[t][k], W[o][k], c) for k = 0 .. in-1;  y[t][o] = c
** so an output's bits depend on nothing but its own row of x and row of W: not on the cache
** blocking (a partial sum goes through y between blocks of k, exactly, as an f32), not on which
** outputs a call is given (a thread's share), not on the path. The AVX-512F path keeps 16
** outputs per zmm lane, each lane doing that chain (vfmadd231ps is one rounding per lane, as
** fmaf); the portable path is the chain in C. Both give the same bits.
**
** AVX-512F path (GotoBLAS's blocking, Goto and van de Geijn, "Anatomy of high-performance
** matrix multiplication", 2008): k in blocks of KC; rows of x in blocks of MC packed into
** panels of MR rows laid out k-major (MR floats per k, so a panel is read in order and the
** L1's sets are not all hit at once, as x's rows `in` floats apart would); W's rows in panels
** of NR = 32, transposed into k-major order (32 floats per k) with 16 x 16 register
** transposes. The micro-kernel holds an MR x 32 block of y in 2·MR zmm registers and per k
** loads two vectors of W and broadcasts MR values of x: 2·MR FMAs per 2 + MR loads. Each W
** panel (KC x 32) is packed once per block of rows of x and read from L1/L2 by every panel of
** the block; the block of x (MC x KC) streams past it from L2/L3, prefetched in order by the
** hardware; the next W panel and the next block of y are prefetched in software. KC and MC
** were chosen by measurement on a Zen 4 EPYC (docs/export.md "Weight formats and kernels"): a
** long KC (few passes of partial sums through y) and an MC past the detector's usual number
** of tokens (W packed once per call) mattered most. Up to 4 rows of x (a GEMV: the last
** layer's single token) go without packing (gemv_avx512); a few more take x packed whole and
** W panel by panel, block of k after block of k, the order in which W streams best from
** memory. Edges: rows of x past a multiple of MR go to a
** micro-kernel for fewer rows, outputs past a multiple of 32 are zero columns of the packed
** panel, stored with a mask; k needs no multiple. */
#include "kernels/kernels_internal.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SN_KERN_X86 1
#endif

#define MR 14
#define NR 32
#define KC 1024
#define MC (MR * 37)

size_t sn_kern_sgemm_scratch(void) { return (size_t)MC * KC + (size_t)KC * NR; }

bool sn_kern_sgemm_hw(const struct sn_kern_cpu *cpu, int isa)
{
    return isa == SN_KERN_AVX512 && sn_kern_isa_supported(cpu, isa);
}

/* ---- portable ----------------------------------------------------------------------------- */

static void sgemm_portable(const float *x, const float *W, float *y, size_t ldy, size_t n,
                           size_t in, size_t o0, size_t o1, bool accumulate)
{
    for (size_t t = 0; t < n; t++)
        for (size_t o = o0; o < o1; o++) {
            const float *xr = x + t * in, *wr = W + o * in;
            float c = accumulate ? y[t * ldy + o] : 0.0f;
            for (size_t k = 0; k < in; k++)
                c = fmaf(xr[k], wr[k], c);
            y[t * ldy + o] = c;
        }
}

#ifdef SN_KERN_X86
/* ---- AVX-512F ----------------------------------------------------------------------------- */

#define SG_TARGET __attribute__((target("avx512f")))

/* r[0..15] (rows) become their transpose (r[e] = element e of every row). */
SG_TARGET static inline void transpose16(__m512 r[16])
{
    __m512 t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {   /* r[4i + c], 128-bit lane L: rows 4i..4i+3, element 4L+c */
        __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
        __m512d c = _mm512_castps_pd(t[4 * i + 2]), e = _mm512_castps_pd(t[4 * i + 3]);
        r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, e));
        r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, e));
    }
    for (int c = 0; c < 4; c++) {
        __m512 a = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);
        __m512 b = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xdd);
        __m512 a2 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
        __m512 b2 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xdd);
        t[c] = _mm512_shuffle_f32x4(a, a2, 0x88);
        t[8 + c] = _mm512_shuffle_f32x4(a, a2, 0xdd);
        t[4 + c] = _mm512_shuffle_f32x4(b, b2, 0x88);
        t[12 + c] = _mm512_shuffle_f32x4(b, b2, 0xdd);
    }
    for (int i = 0; i < 16; i++)
        r[i] = t[i];
}

/* wp (kc, 32) = rows [o, o + nr) of W, columns [k0, k0 + kc), transposed; rows past nr are
** zeros. */
SG_TARGET static void pack_w(const float *W, size_t in, size_t o, size_t nr, size_t k0,
                             size_t kc, float *wp)
{
    for (size_t h = 0; h < NR; h += 16)
        for (size_t k = 0; k < kc; k += 16) {
            const size_t m = kc - k < 16 ? kc - k : 16;
            const __mmask16 mask = (__mmask16)((1u << m) - 1);
            __m512 r[16];
            for (size_t j = 0; j < 16; j++)
                r[j] = h + j < nr ? _mm512_maskz_loadu_ps(mask, W + (o + h + j) * in + k0 + k)
                                  : _mm512_setzero_ps();
            transpose16(r);
            for (size_t e = 0; e < m; e++)
                _mm512_storeu_ps(wp + (k + e) * NR + h, r[e]);
        }
}

/* xp: rows [t0, t0 + mc) of x, columns [k0, k0 + kc), as panels of MR rows, each (kc, MR). */
static void pack_x(const float *x, size_t in, size_t t0, size_t mc, size_t k0, size_t kc,
                   float *xp)
{
    for (size_t p = 0; p < mc; p += MR, xp += MR * kc) {
        const size_t mr = mc - p < MR ? mc - p : MR;
        for (size_t i = 0; i < mr; i++) {
            const float *xr = x + (t0 + p + i) * in + k0;
            for (size_t k = 0; k < kc; k++)
                xp[k * MR + i] = xr[k];
        }
    }
}

/* y rows [0, mr), columns under masks m0, m1 (+= or =, see load) of xp (kc, MR) · wp (kc, 32).
** Always inlined with a constant mr, so the accumulators are registers. */
SG_TARGET static inline __attribute__((always_inline)) void
micro(const int mr, const float *xp, const float *wp, size_t kc, float *y, size_t ldy,
      __mmask16 m0, __mmask16 m1, bool load)
{
    __m512 c0[MR], c1[MR];
#pragma GCC unroll 14
    for (int i = 0; i < mr; i++) {
        c0[i] = load ? _mm512_maskz_loadu_ps(m0, y + i * ldy) : _mm512_setzero_ps();
        c1[i] = load ? _mm512_maskz_loadu_ps(m1, y + i * ldy + 16) : _mm512_setzero_ps();
    }
    for (size_t k = 0; k < kc; k++, xp += MR, wp += NR) {
        const __m512 w0 = _mm512_loadu_ps(wp), w1 = _mm512_loadu_ps(wp + 16);
#pragma GCC unroll 14
        for (int i = 0; i < mr; i++) {
            const __m512 a = _mm512_set1_ps(xp[i]);
            c0[i] = _mm512_fmadd_ps(a, w0, c0[i]);
            c1[i] = _mm512_fmadd_ps(a, w1, c1[i]);
        }
    }
#pragma GCC unroll 14
    for (int i = 0; i < mr; i++) {
        _mm512_mask_storeu_ps(y + i * ldy, m0, c0[i]);
        _mm512_mask_storeu_ps(y + i * ldy + 16, m1, c1[i]);
    }
}

#define MICRO(r) case r: micro(r, xp, wp, kc, y, ldy, m0, m1, load); break;
SG_TARGET static void micro_n(int mr, const float *xp, const float *wp, size_t kc, float *y,
                              size_t ldy, __mmask16 m0, __mmask16 m1, bool load)
{
    switch (mr) {
    MICRO(1) MICRO(2) MICRO(3) MICRO(4) MICRO(5) MICRO(6) MICRO(7)
    MICRO(8) MICRO(9) MICRO(10) MICRO(11) MICRO(12) MICRO(13) MICRO(14)
    default: break;
    }
}
#undef MICRO

/* Outputs [o, o + nr) over columns [k0, k0 + kc): W's rows packed into wp, then each panel of
** MR rows of xp (mc rows, y's row 0 first) through the micro-kernel. Before each micro-kernel a
** share of the next block of W (rows [on, on + nrn), columns [kn, kn + kcn)) is prefetched, so
** that the next pack_w finds it in cache, and the next micro-kernel's rows of y. */
SG_TARGET static void panel(const float *W, size_t in, size_t o, size_t nr, size_t k0,
                            size_t kc, const float *xp, size_t mc, float *y, size_t ldy,
                            bool load, float *wp, size_t on, size_t nrn, size_t kn, size_t kcn)
{
    const __mmask16 m0 = (__mmask16)(nr >= 16 ? 0xffffu : (1u << nr) - 1);
    const __mmask16 m1 = (__mmask16)(nr >= 32 ? 0xffffu : nr > 16 ? (1u << (nr - 16)) - 1 : 0);
    pack_w(W, in, o, nr, k0, kc, wp);
    const size_t per_row = (kcn + 15) / 16, lines = nrn * per_row;
    const size_t share = (lines + (mc + MR - 1) / MR - 1) / ((mc + MR - 1) / MR);
    size_t l = 0;
    for (size_t p = 0; p < mc; p += MR) {
        for (size_t e = 0; e < share && l < lines; e++, l++)
            _mm_prefetch((const char *)(W + (on + l % nrn) * in + kn + l / nrn * 16),
                         _MM_HINT_T0);
        for (size_t i = 0; i < MR && p + MR + i < mc; i++) {
            const float *yn = y + (p + MR + i) * ldy + o;
            _mm_prefetch((const char *)yn, _MM_HINT_T0);
            _mm_prefetch((const char *)(yn + 16), _MM_HINT_T0);
        }
        micro_n((int)(mc - p < MR ? mc - p : MR), xp + p * kc, wp, kc, y + p * ldy + o, ldy, m0,
                m1, load);
    }
}

/* Rows of y for at most GEMV_ROWS rows of x, without packing: 16 outputs at a time, W's 16
** rows read 16 floats at a time and transposed in registers, so every k adds one FMA to each
** of the 16 outputs' chains, as the packed path does (the same bits). A GEMV reads each
** element of W once for a few FMAs: it is bound by memory, and packing W only added stores
** and loads to it (measured 1.1-1.3x slower at the 3B's widths). */
#define GEMV_ROWS 4
#define GEMV_AHEAD 128   /* floats: 8 cache lines ahead in each row (measured) */
SG_TARGET static void gemv_avx512(const float *x, const float *W, float *y, size_t ldy,
                                  size_t n, size_t in, size_t o0, size_t o1, bool accumulate)
{
    for (size_t o = o0; o < o1; o += 16) {
        const size_t nr = o1 - o < 16 ? o1 - o : 16;
        const __mmask16 mo = (__mmask16)(nr >= 16 ? 0xffffu : (1u << nr) - 1);
        __m512 acc[GEMV_ROWS];
        for (size_t t = 0; t < n; t++)
            acc[t] = accumulate ? _mm512_maskz_loadu_ps(mo, y + t * ldy + o)
                                : _mm512_setzero_ps();
        for (size_t k = 0; k < in; k += 16) {
            const size_t m = in - k < 16 ? in - k : 16;
            const __mmask16 mk = (__mmask16)((1u << m) - 1);
            __m512 r[16];
            for (size_t j = 0; j < 16; j++) {
                if (j < nr && k + GEMV_AHEAD < in)   /* each row's stream, ahead of its loads */
                    _mm_prefetch((const char *)(W + (o + j) * in + k + GEMV_AHEAD), _MM_HINT_T0);
                r[j] = j < nr ? _mm512_maskz_loadu_ps(mk, W + (o + j) * in + k)
                              : _mm512_setzero_ps();
            }
            transpose16(r);
            for (size_t e = 0; e < m; e++)
                for (size_t t = 0; t < n; t++)
                    acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(x[t * in + k + e]), r[e], acc[t]);
        }
        for (size_t t = 0; t < n; t++)
            _mm512_mask_storeu_ps(y + t * ldy + o, mo, acc[t]);
    }
}

SG_TARGET static void sgemm_avx512(const float *x, const float *W, float *y, size_t ldy,
                                   size_t n, size_t in, size_t o0, size_t o1, bool accumulate,
                                   float *scratch)
{
    float *xp = scratch, *wp = scratch + (size_t)MC * KC;
    if (n <= GEMV_ROWS) {
        gemv_avx512(x, W, y, ldy, n, in, o0, o1, accumulate);
        return;
    }
    const size_t npad = (n + MR - 1) / MR * MR;
    if (npad * in <= (size_t)MC * KC) {
        /* few rows (see the file comment): x packed whole, once; W panel by panel */
        for (size_t k0 = 0; k0 < in; k0 += KC)
            pack_x(x, in, 0, n, k0, in - k0 < KC ? in - k0 : KC, xp + npad * k0);
        for (size_t o = o0; o < o1; o += NR) {
            const size_t nr = o1 - o < NR ? o1 - o : NR, on = o + NR;
            const size_t nrn = on < o1 ? (o1 - on < NR ? o1 - on : NR) : 0;
            for (size_t k0 = 0; k0 < in; k0 += KC) {
                const size_t kc = in - k0 < KC ? in - k0 : KC, kn = k0 + KC;
                if (kn < in)
                    panel(W, in, o, nr, k0, kc, xp + npad * k0, n, y, ldy, accumulate || k0 > 0,
                          wp, o, nr, kn, in - kn < KC ? in - kn : KC);
                else
                    panel(W, in, o, nr, k0, kc, xp + npad * k0, n, y, ldy, accumulate || k0 > 0,
                          wp, on, nrn, 0, in < KC ? in : KC);
            }
        }
        return;
    }
    for (size_t k0 = 0; k0 < in; k0 += KC) {
        const size_t kc = in - k0 < KC ? in - k0 : KC;
        for (size_t t0 = 0; t0 < n; t0 += MC) {
            const size_t mc = n - t0 < MC ? n - t0 : MC;
            pack_x(x, in, t0, mc, k0, kc, xp);
            for (size_t o = o0; o < o1; o += NR) {
                const size_t nr = o1 - o < NR ? o1 - o : NR, on = o + NR;
                const size_t nrn = on < o1 ? (o1 - on < NR ? o1 - on : NR) : 0;
                panel(W, in, o, nr, k0, kc, xp, mc, y + t0 * ldy, ldy, accumulate || k0 > 0, wp,
                      on, nrn, k0, kc);
            }
        }
    }
}
#endif

void sn_kern_sgemm(bool hw, const float *x, const float *W, float *y, size_t ldy, size_t n,
                   size_t in, size_t o0, size_t o1, bool accumulate, float *scratch)
{
    if (n == 0 || o1 <= o0)
        return;
#ifdef SN_KERN_X86
    if (hw) {
        if (in == 0) {   /* the chain of no terms */
            for (size_t t = 0; t < n; t++)
                for (size_t o = o0; o < o1; o++)
                    y[t * ldy + o] = accumulate ? y[t * ldy + o] : 0.0f;
            return;
        }
        sgemm_avx512(x, W, y, ldy, n, in, o0, o1, accumulate, scratch);
        return;
    }
#else
    (void)hw;
    (void)scratch;
#endif
    sgemm_portable(x, W, y, ldy, n, in, o0, o1, accumulate);
}
