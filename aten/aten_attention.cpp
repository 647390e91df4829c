// aten/aten_attention.cpp: fused causal/padded grouped-query attention on the CPU, forward and
// backward, behind sn_aten_attention (aten/aten.h defines the semantics; aten_attention.hpp).
//
// Why: the composed ATen version materialises (B,H,Tq,Tk) scores, the mask, the
// probabilities and repeated K/V heads, each one a full pass over ~100 MB per layer at
// seq 512, and keeps the probabilities alive for backward. This kernel follows the
// FlashAttention recipe (Dao et al. 2022, Alg. 1 forward / Alg. 2 backward, without the
// key-block loop since a (64 x Tk) score tile fits in L2 at the lengths we train on):
//   forward, per (batch, query head, block of Mb query rows):
//     S = scale · Q_blk Kᵀ[:, :kend]      (only keys some row of the block may see: causal)
//     x = S + bias (−inf for padding keys and keys after the causal limit)
//     P = exp(x − rowmax), l = Σ P,  O_blk = P V / l,  lse = rowmax + log l   (saved)
//   backward, per (batch, kv head) so dK and dV accumulate without races:
//     P = exp(x − lse) recomputed, Di = rowsum(dO ∘ O)
//     dV += Pᵀ dO,  dP = dO Vᵀ,  dS = scale · P ∘ (dP − Di),  dQ = dS K,  dK += dSᵀ Q
// Rows with no key allowed (left-padding positions under the causal mask) follow the composed
// version exactly: the masked scores are all equal there, so the output is the uniform mean of
// V over all Tk keys, with no gradient to Q or K.
// GQA: query head h reads kv head h / (Hq / Hkv) in place (no repeat_kv copies). Causal blocks
// above the diagonal are skipped, which halves the matmul work of the composed version.
// Packed rows (sn_aten_attention_spans): a query row sees a shared prefix [lo, hi) and its own
// segment [s, i]; a block of query rows computes scores only over the key window from the
// first key any of its rows may see (rounded down to a panel) to its causal end, so a row of
// many short sequences costs about what the sequences cost one by one (block-diagonal), and
// when its rows all see a shared prefix, the keys between that prefix and their segments
// (earlier responses to the same context) are skipped too: two key ranges per block.
// Products run on one small matmul kernel C (+)= A·B (A row-major, B packed into 16-column
// panels): AVX2+FMA intrinsics for f32 when the CPU has them (chosen at run time), plain loops
// otherwise and for f64 (the dtype of the finite-difference gradient checks).
#include "aten/aten_attention.hpp"
#include "aten/aten_internal.hpp"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SN_ATTN_X86 1
#include <immintrin.h>
#define SN_AVX2 __attribute__((target("avx2,fma")))
#else
#define SN_ATTN_X86 0
#endif

namespace sn_aten {
namespace {

constexpr int64_t kBlockRows = 64; // query rows per tile: (64 x Tk) scores stay in L2

// ---- the matmul and row-softmax kernels ---------------------------------------------------
//
// Every product is C[m x n] (+)= A[m x k] · B[k x n] with A row-major (row stride lda) and B
// PACKED: column panels of 16, each k rows of 16 contiguous values (zero past n), panels
// `bps` values apart. Packing matters here: the operands' natural row strides (Tk, Hkv·D,
// Hq·D floats: multiples of 1-2 KiB) map a panel's rows onto a handful of L1 sets, so the
// unpacked kernel missed L1 on nearly every load of B.

constexpr int64_t kPanel = 16;

inline int64_t n_panels(int64_t n) { return (n + kPanel - 1) / kPanel; }

// Bp from B row-major (k x n, row stride ldb); panel stride k·16.
template <typename T>
void pack_rows(const T *B, int64_t ldb, int64_t k, int64_t n, T *Bp)
{
    for (int64_t p = 0; p < n_panels(n); p++) {
        int64_t j0 = p * kPanel, w = std::min(kPanel, n - j0);
        T *dst = Bp + p * k * kPanel;
        for (int64_t kk = 0; kk < k; kk++) {
            const T *src = B + kk * ldb + j0;
            for (int64_t jj = 0; jj < kPanel; jj++)
                dst[kk * kPanel + jj] = jj < w ? src[jj] : T(0);
        }
    }
}

// Bp for B = Sᵀ, S row-major (n x k, row stride lds): B[kk][j] = S[j][kk]; panel stride k·16.
template <typename T>
void pack_cols(const T *S, int64_t lds, int64_t k, int64_t n, T *Bp)
{
    for (int64_t p = 0; p < n_panels(n); p++) {
        int64_t j0 = p * kPanel, w = std::min(kPanel, n - j0);
        T *dst = Bp + p * k * kPanel;
        for (int64_t jj = 0; jj < kPanel; jj++) {
            if (jj < w) {
                const T *src = S + (j0 + jj) * lds;
                for (int64_t kk = 0; kk < k; kk++)
                    dst[kk * kPanel + jj] = src[kk];
            } else {
                for (int64_t kk = 0; kk < k; kk++)
                    dst[kk * kPanel + jj] = T(0);
            }
        }
    }
}

template <typename T>
void gemm_generic(int64_t m, int64_t n, int64_t k, const T *A, int64_t lda, const T *Bp,
                  int64_t bps, T *C, int64_t ldc, bool acc)
{
    T c[kPanel];
    for (int64_t p = 0; p < n_panels(n); p++) {
        int64_t j0 = p * kPanel, w = std::min(kPanel, n - j0);
        const T *bp = Bp + p * bps;
        for (int64_t i = 0; i < m; i++) {
            T *ci = C + i * ldc + j0;
            for (int64_t jj = 0; jj < kPanel; jj++)
                c[jj] = acc && jj < w ? ci[jj] : T(0);
            const T *a = A + i * lda;
            for (int64_t kk = 0; kk < k; kk++)
                for (int64_t jj = 0; jj < kPanel; jj++)
                    c[jj] += a[kk] * bp[kk * kPanel + jj];
            for (int64_t jj = 0; jj < w; jj++)
                ci[jj] = c[jj];
        }
    }
}

#if SN_ATTN_X86
// A 6 x 16 register tile (12 accumulators), the Haswell-class shape: per k step two loads of
// the packed panel, six broadcasts of A, twelve FMAs. MR < 6 serves the last rows; w < 16
// (the last panel of an n that is not a multiple of 16) loads and stores through a mask.
template <int MR>
SN_AVX2 inline void tile_avx2(int64_t k, const float *A, int64_t lda, const float *bp,
                              float *C, int64_t ldc, bool acc, int64_t w)
{
    __m256 c0[MR], c1[MR];
    __m256i m0 = _mm256_setzero_si256(), m1 = _mm256_setzero_si256();
    if (w < kPanel) {
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)w), lane);
        m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)w - 8), lane);
    }
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) {
        if (!acc) {
            c0[r] = c1[r] = _mm256_setzero_ps();
        } else if (w == kPanel) {
            c0[r] = _mm256_loadu_ps(C + r * ldc);
            c1[r] = _mm256_loadu_ps(C + r * ldc + 8);
        } else {
            c0[r] = _mm256_maskload_ps(C + r * ldc, m0);
            c1[r] = _mm256_maskload_ps(C + r * ldc + 8, m1);
        }
    }
    for (int64_t p = 0; p < k; p++) {
        __m256 b0 = _mm256_loadu_ps(bp + p * kPanel), b1 = _mm256_loadu_ps(bp + p * kPanel + 8);
    #pragma GCC unroll 6
    for (int r = 0; r < MR; r++) {
            __m256 a = _mm256_broadcast_ss(A + r * lda + p);
            c0[r] = _mm256_fmadd_ps(a, b0, c0[r]);
            c1[r] = _mm256_fmadd_ps(a, b1, c1[r]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) {
        if (w == kPanel) {
            _mm256_storeu_ps(C + r * ldc, c0[r]);
            _mm256_storeu_ps(C + r * ldc + 8, c1[r]);
        } else {
            _mm256_maskstore_ps(C + r * ldc, m0, c0[r]);
            _mm256_maskstore_ps(C + r * ldc + 8, m1, c1[r]);
        }
    }
}

SN_AVX2 void gemm_avx2(int64_t m, int64_t n, int64_t k, const float *A, int64_t lda,
                       const float *Bp, int64_t bps, float *C, int64_t ldc, bool acc)
{
    for (int64_t p = 0; p < n_panels(n); p++) {
        int64_t j0 = p * kPanel, w = std::min(kPanel, n - j0);
        const float *bp = Bp + p * bps;
        int64_t i = 0;
        for (; i + 6 <= m; i += 6)
            tile_avx2<6>(k, A + i * lda, lda, bp, C + i * ldc + j0, ldc, acc, w);
        const float *a = A + i * lda;
        float *c = C + i * ldc + j0;
        switch (m - i) {
        case 5: tile_avx2<5>(k, a, lda, bp, c, ldc, acc, w); break;
        case 4: tile_avx2<4>(k, a, lda, bp, c, ldc, acc, w); break;
        case 3: tile_avx2<3>(k, a, lda, bp, c, ldc, acc, w); break;
        case 2: tile_avx2<2>(k, a, lda, bp, c, ldc, acc, w); break;
        case 1: tile_avx2<1>(k, a, lda, bp, c, ldc, acc, w); break;
        default: break;
        }
    }
}
#endif

// x[j] = exp(x[j] − mx) for j < n (x may hold −inf: gives 0); returns Σ x[j].
template <typename T>
T exp_sum_generic(T *x, int64_t n, T mx)
{
    T s = 0;
    for (int64_t j = 0; j < n; j++) {
        x[j] = std::exp(x[j] - mx);
        s += x[j];
    }
    return s;
}

// x[j] = scale·x[j] + bias[j] for j < n; returns the max (−inf for n <= 0).
template <typename T>
T scale_bias_max_generic(T *x, int64_t n, const T *bias, T scale)
{
    T mx = -std::numeric_limits<T>::infinity();
    for (int64_t j = 0; j < n; j++) {
        x[j] = x[j] * scale + bias[j];
        mx = std::max(mx, x[j]);
    }
    return mx;
}

// dS = scale · P ∘ (dP − Di), in place over dp.
template <typename T>
void softmax_grad_generic(T *dp, const T *p, int64_t n, T scale, T di)
{
    for (int64_t j = 0; j < n; j++)
        dp[j] = scale * p[j] * (dp[j] - di);
}

#if SN_ATTN_X86
SN_AVX2 float scale_bias_max_avx2(float *x, int64_t n, const float *bias, float scale)
{
    __m256 s = _mm256_set1_ps(scale), m = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 v = _mm256_fmadd_ps(_mm256_loadu_ps(x + j), s, _mm256_loadu_ps(bias + j));
        _mm256_storeu_ps(x + j, v);
        m = _mm256_max_ps(m, v);
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, m);
    float mx = lanes[0];
    for (int l = 1; l < 8; l++)
        mx = std::max(mx, lanes[l]);
    for (; j < n; j++) {
        x[j] = x[j] * scale + bias[j];
        mx = std::max(mx, x[j]);
    }
    return mx;
}

SN_AVX2 void softmax_grad_avx2(float *dp, const float *p, int64_t n, float scale, float di)
{
    __m256 s = _mm256_set1_ps(scale), d = _mm256_set1_ps(di);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 v = _mm256_mul_ps(_mm256_mul_ps(s, _mm256_loadu_ps(p + j)),
                                 _mm256_sub_ps(_mm256_loadu_ps(dp + j), d));
        _mm256_storeu_ps(dp + j, v);
    }
    for (; j < n; j++)
        dp[j] = scale * p[j] * (dp[j] - di);
}

// exp on 8 lanes: Cephes' expf (range reduction by ln 2 in two parts, degree-5 polynomial,
// relative error < 2e-7 on [−87, 88]); inputs below −87.3 (−inf included) give exactly 0.
SN_AVX2 inline __m256 exp256(__m256 x)
{
    const __m256 lo = _mm256_set1_ps(-87.3f), hi = _mm256_set1_ps(88.3f);
    __m256 zero_lanes = _mm256_cmp_ps(x, lo, _CMP_LT_OQ); // also true for −inf
    x = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
    __m256 fx = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
    x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
    __m256 y = _mm256_set1_ps(1.9875691500e-4f);
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507e-3f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073e-3f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894e-2f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459e-1f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201e-1f));
    y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23);
    return _mm256_andnot_ps(zero_lanes, _mm256_mul_ps(y, _mm256_castsi256_ps(e)));
}

SN_AVX2 float exp_sum_avx2(float *x, int64_t n, float mx)
{
    __m256 m = _mm256_set1_ps(mx), acc = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + j), m));
        _mm256_storeu_ps(x + j, e);
        acc = _mm256_add_ps(acc, e);
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, acc);
    float s = 0;
    for (int l = 0; l < 8; l++)
        s += lanes[l];
    if (j < n) { // tail through the same polynomial, so every element sees one exp
        alignas(32) float t[8];
        for (int l = 0; l < 8; l++)
            t[l] = j + l < n ? x[j + l] - mx : -std::numeric_limits<float>::infinity();
        _mm256_store_ps(t, exp256(_mm256_load_ps(t)));
        for (int64_t l = 0; j + l < n; l++) {
            x[j + l] = t[l];
            s += t[l];
        }
    }
    return s;
}

bool cpu_has_avx2_fma()
{
    static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return yes;
}
#endif

// The kernels a dtype runs on.
template <typename T>
struct Kernels {
    void (*gemm)(int64_t, int64_t, int64_t, const T *, int64_t, const T *, int64_t, T *,
                 int64_t, bool) = gemm_generic<T>; // (m, n, k, A, lda, Bp, bps, C, ldc, acc)
    T (*exp_sum)(T *, int64_t, T) = exp_sum_generic<T>;
    T (*scale_bias_max)(T *, int64_t, const T *, T) = scale_bias_max_generic<T>;
    void (*softmax_grad)(T *, const T *, int64_t, T, T) = softmax_grad_generic<T>;
};

template <typename T>
Kernels<T> kernels_for()
{
    return Kernels<T>{};
}

template <>
Kernels<float> kernels_for<float>()
{
    Kernels<float> k;
#if SN_ATTN_X86
    if (cpu_has_avx2_fma()) {
        k.gemm = gemm_avx2;
        k.exp_sum = exp_sum_avx2;
        k.scale_bias_max = scale_bias_max_avx2;
        k.softmax_grad = softmax_grad_avx2;
    }
#endif
    return k;
}

// ---- shapes and strided views --------------------------------------------------------------

// A (B,H,T,D) tensor with unit stride on D, read through its strides.
template <typename T>
struct View4 {
    T *p;
    int64_t sb, sh, st;
    explicit View4(const at::Tensor &t)
        : p(t.data_ptr<T>()), sb(t.stride(0)), sh(t.stride(1)), st(t.stride(2))
    {
    }
    T *row(int64_t b, int64_t h, int64_t i) const { return p + b * sb + h * sh + i * st; }
};

struct Dims {
    int64_t B, Hq, Hkv, Tq, Tk, D, n_rep, off; // off = Tk − Tq: the causal diagonal's shift
    bool causal;
    double scale;
    // Packed rows (sn_aten_attention_spans; nullptr otherwise): (B, T, 3) host int64 per
    // token: its own segment's first key, and a shared prefix [lo, hi) (empty when lo == hi).
    const int64_t *spans = nullptr;
    int64_t window = 0; // the widest key window of any block (Tk without spans): scratch size
    // One past the last key query row i may see under the causal mask (may be <= 0).
    int64_t key_end(int64_t i) const { return causal ? std::min(Tk, i + off + 1) : Tk; }
    int64_t span(int64_t b, int64_t i, int c) const { return spans[(b * Tq + i) * 3 + c]; }
    // The keys the block of query rows [i0, i0 + mb) computes scores over, ending at its
    // causal end kend: [k0, k0 + na) then [kb, kb + nb) (nb = 0: one range). k0 is the first
    // key some row may see, rounded down to a 16-key panel (the packed Kᵀ operand starts on
    // panel boundaries), 0 without spans. With spans, when every row's keys lie in a shared
    // prefix ending at or before some hi and in segments starting at or after some s, the
    // keys in [hi, s rounded down) are seen by no row and skipped: the responses after the
    // first one in a shared-prefix row skip the earlier responses (docs/train.md, packed
    // batches). The two ranges hold n = na + nb scores per row, side by side.
    struct Window {
        int64_t k0, na, kb, nb;
        int64_t n() const { return na + nb; }
    };
    Window block_window(int64_t b, int64_t i0, int64_t mb, int64_t kend) const
    {
        if (!spans)
            return {0, kend, kend, 0};
        int64_t first = i0, hi_max = -1, s_min = i0;
        bool all_prefix = true;
        for (int64_t i = i0; i < i0 + mb; i++) {
            int64_t s = span(b, i, 0), lo = span(b, i, 1), hi = span(b, i, 2);
            first = std::min(first, lo < hi ? std::min(lo, s) : s);
            s_min = std::min(s_min, s);
            if (lo < hi)
                hi_max = std::max(hi_max, hi);
            else
                all_prefix = false;
        }
        int64_t k0 = std::min(first / 16 * 16, kend), kb = s_min / 16 * 16;
        if (all_prefix && hi_max > k0 && hi_max < kb && kb < kend)
            return {k0, hi_max - k0, kb, kend - kb};
        return {k0, kend - k0, kend, 0};
    }
};

// bias[b*Tk + j] = 0 for a real key, −inf for padding (all 0 without a mask).
template <typename T>
std::vector<T> key_bias(const at::Tensor &keep_u8, const Dims &d)
{
    std::vector<T> bias((size_t)(d.B * d.Tk), T(0));
    if (keep_u8.numel()) {
        const uint8_t *k = keep_u8.data_ptr<uint8_t>();
        for (int64_t i = 0; i < d.B * d.Tk; i++)
            if (!k[i])
                bias[(size_t)i] = -std::numeric_limits<T>::infinity();
    }
    return bias;
}

// dst[c x r] = srcᵀ for src[r x c] with row stride ld (dst dense).
template <typename T>
void transpose(const T *src, int64_t r, int64_t c, int64_t ld, T *dst)
{
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++)
            dst[j * r + i] = src[i * ld + j];
}

// Masked, scaled scores of one row, in place: x[j] = scale·x[j] + bias[j] for j < jend,
// −inf for jend <= j < n. Returns the row max (−inf when no key is allowed).
template <typename T>
T mask_row(const Kernels<T> &K, T *x, int64_t n, int64_t jend, const T *bias, T scale)
{
    T mx = K.scale_bias_max(x, jend, bias, scale);
    std::fill(x + std::max<int64_t>(jend, 0), x + n, -std::numeric_limits<T>::infinity());
    return mx;
}

// One row of scores over the key range [k0, k0 + n), in place: scaled where query row i of
// batch b may attend, −inf elsewhere. Returns the row max (−inf when no key is allowed).
// Without spans k0 is 0 and this is mask_row. With spans the allowed keys are the shared
// prefix [lo, hi) and the row's own segment [s, i] (hi <= s, checked by the caller), each
// clipped to the range (a block's scores may come as two ranges: Dims::block_window).
template <typename T>
T mask_window(const Kernels<T> &K, const Dims &d, T *x, int64_t k0, int64_t n, int64_t b,
              int64_t i, const T *bias, const T *zeros, T scale)
{
    if (!d.spans)
        return mask_row<T>(K, x, n, d.key_end(i), bias, scale);
    const T ninf = -std::numeric_limits<T>::infinity();
    T mx = ninf;
    int64_t at = k0; // keys before `at` are done
    auto skip = [&](int64_t upto) {
        if (upto > at) {
            std::fill(x + (at - k0), x + (upto - k0), ninf);
            at = upto;
        }
    };
    auto keep = [&](int64_t from, int64_t upto) { // clipped to the range [at, k0 + n)
        from = std::max(from, at);
        upto = std::min(upto, k0 + n);
        if (upto > from) {
            skip(from);
            mx = std::max(mx, K.scale_bias_max(x + (from - k0), upto - from, zeros, scale));
            at = upto;
        }
    };
    int64_t s = d.span(b, i, 0), lo = d.span(b, i, 1), hi = d.span(b, i, 2);
    if (lo < hi)
        keep(lo, hi);
    keep(s, i + 1);
    skip(k0 + n);
    return mx;
}

// One row of scores over a block's window (both ranges, side by side), in place: mask_window
// over each range. Returns the row max.
template <typename T>
T mask_block_row(const Kernels<T> &K, const Dims &d, const Dims::Window &w, T *x, int64_t b,
                 int64_t i, const T *bias, const T *zeros, T scale)
{
    T mx = mask_window<T>(K, d, x, w.k0, w.na, b, i, bias, zeros, scale);
    if (w.nb > 0)
        mx = std::max(mx, mask_window<T>(K, d, x + w.na, w.kb, w.nb, b, i, bias, zeros, scale));
    return mx;
}

// ---- forward -------------------------------------------------------------------------------

template <typename T>
void forward_kernel(const Dims &d, const at::Tensor &q, const at::Tensor &k,
                    const at::Tensor &v, const at::Tensor &keep_u8, at::Tensor &out,
                    at::Tensor &lse)
{
    const Kernels<T> K = kernels_for<T>();
    const View4<T> Q(q), Kv(k), V(v), O(out);
    T *L = lse.data_ptr<T>(); // (B, Hq, Tq) dense
    const std::vector<T> bias = key_bias<T>(keep_u8, d), zeros((size_t)d.Tk, T(0));
    const T scale = (T)d.scale;
    const int64_t D = d.D, Tk = d.Tk;
    at::parallel_for(0, d.B * d.Hq, 1, [&](int64_t t0, int64_t t1) {
        const int64_t np = n_panels(Tk) * kPanel, dp16 = n_panels(D) * kPanel;
        std::vector<T> kp((size_t)(D * np)), vp((size_t)(Tk * dp16)),
            s((size_t)(kBlockRows * d.window)), vmean((size_t)D), rinv((size_t)kBlockRows);
        for (int64_t task = t0; task < t1; task++) {
            int64_t b = task / d.Hq, h = task % d.Hq, g = h / d.n_rep;
            // B operands of this kv head, packed once: Kᵀ (D x Tk) and V (Tk x D)
            pack_cols(Kv.row(b, g, 0), Kv.st, D, Tk, kp.data());
            pack_rows(V.row(b, g, 0), V.st, Tk, D, vp.data());
            bool have_mean = false;
            for (int64_t i0 = 0; i0 < d.Tq; i0 += kBlockRows) {
                int64_t mb = std::min(kBlockRows, d.Tq - i0);
                int64_t kend = std::max<int64_t>(d.key_end(i0 + mb - 1), 0);
                // the key window of this block (Dims::block_window): its scores side by side
                const Dims::Window w = d.block_window(b, i0, mb, kend);
                const int64_t n = w.n();
                if (w.na > 0)
                    K.gemm(mb, w.na, D, Q.row(b, h, i0), Q.st,
                           kp.data() + w.k0 / kPanel * D * kPanel, D * kPanel, s.data(), n,
                           false);
                if (w.nb > 0)
                    K.gemm(mb, w.nb, D, Q.row(b, h, i0), Q.st,
                           kp.data() + w.kb / kPanel * D * kPanel, D * kPanel, s.data() + w.na,
                           n, false);
                T *lrow = L + (b * d.Hq + h) * d.Tq;
                for (int64_t r = 0; r < mb; r++) {
                    int64_t i = i0 + r;
                    T *x = s.data() + r * n;
                    T mx = mask_block_row<T>(K, d, w, x, b, i, bias.data() + b * Tk,
                                             zeros.data(), scale);
                    if (mx == -std::numeric_limits<T>::infinity()) {
                        lrow[i] = mx; // no key allowed: uniform row, filled below
                        for (int64_t j = 0; j < n; j++)
                            x[j] = 0;
                        continue;
                    }
                    T l = K.exp_sum(x, n, mx);
                    lrow[i] = mx + std::log(l);
                    rinv[(size_t)r] = T(1) / l;
                }
                // O = (P V) / l: the row sums divide the D outputs, not the kend probabilities
                T *o = O.row(b, h, i0);
                if (w.na > 0)
                    K.gemm(mb, D, w.na, s.data(), n, vp.data() + w.k0 * kPanel, Tk * kPanel, o,
                           O.st, false);
                if (w.nb > 0)
                    K.gemm(mb, D, w.nb, s.data() + w.na, n, vp.data() + w.kb * kPanel,
                           Tk * kPanel, o, O.st, w.na > 0);
                for (int64_t r = 0; r < mb; r++) {
                    if (lrow[i0 + r] != -std::numeric_limits<T>::infinity()) {
                        for (int64_t c = 0; c < D; c++)
                            o[r * O.st + c] *= rinv[(size_t)r];
                        continue;
                    }
                    if (!have_mean) { // mean of V over all Tk keys (the composed semantics)
                        std::fill(vmean.begin(), vmean.end(), T(0));
                        for (int64_t j = 0; j < Tk; j++) {
                            const T *vr = V.row(b, g, j);
                            for (int64_t c = 0; c < D; c++)
                                vmean[(size_t)c] += vr[c];
                        }
                        for (int64_t c = 0; c < D; c++)
                            vmean[(size_t)c] /= (T)Tk;
                        have_mean = true;
                    }
                    std::copy(vmean.begin(), vmean.end(), o + r * O.st);
                }
            }
        }
    });
}

// ---- backward ------------------------------------------------------------------------------

template <typename T>
void backward_kernel(const Dims &d, const at::Tensor &q, const at::Tensor &k,
                     const at::Tensor &v, const at::Tensor &keep_u8, const at::Tensor &out,
                     const at::Tensor &lse, const at::Tensor &dout, at::Tensor &dq,
                     at::Tensor &dk, at::Tensor &dv)
{
    const Kernels<T> K = kernels_for<T>();
    const View4<T> Q(q), Kv(k), V(v), O(out), dO(dout), dQ(dq), dK(dk), dV(dv);
    const T *L = lse.data_ptr<T>();
    const std::vector<T> bias = key_bias<T>(keep_u8, d), zeros((size_t)d.Tk, T(0));
    const T scale = (T)d.scale, ninf = -std::numeric_limits<T>::infinity();
    const int64_t D = d.D, Tk = d.Tk, Mb = kBlockRows;
    at::parallel_for(0, d.B * d.Hkv, 1, [&](int64_t t0, int64_t t1) {
        const int64_t np = n_panels(Tk) * kPanel, dp16 = n_panels(D) * kPanel;
        std::vector<T> kp((size_t)(D * np)), vtp((size_t)(D * np)), krp((size_t)(Tk * dp16)),
            qbp((size_t)(Mb * dp16)), dobp((size_t)(Mb * dp16)), p((size_t)(Mb * d.window)),
            dp((size_t)(Mb * d.window)), tr((size_t)(d.window * Mb)), dka((size_t)(Tk * D)),
            dva((size_t)(Tk * D)), di((size_t)Mb);
        for (int64_t task = t0; task < t1; task++) {
            int64_t b = task / d.Hkv, g = task % d.Hkv;
            // packed once per kv head: Kᵀ and Vᵀ (D x Tk) for the scores and dP, K (Tk x D)
            // for dQ
            pack_cols(Kv.row(b, g, 0), Kv.st, D, Tk, kp.data());
            pack_cols(V.row(b, g, 0), V.st, D, Tk, vtp.data());
            pack_rows(Kv.row(b, g, 0), Kv.st, Tk, D, krp.data());
            std::fill(dka.begin(), dka.end(), T(0));
            std::fill(dva.begin(), dva.end(), T(0));
            for (int64_t h = g * d.n_rep; h < (g + 1) * d.n_rep; h++) {
                const T *lrow = L + (b * d.Hq + h) * d.Tq;
                for (int64_t i0 = 0; i0 < d.Tq; i0 += Mb) {
                    int64_t mb = std::min(Mb, d.Tq - i0);
                    int64_t kend = std::max<int64_t>(d.key_end(i0 + mb - 1), 0);
                    const Dims::Window w = d.block_window(b, i0, mb, kend);
                    const int64_t n = w.n();
                    const T *qb = Q.row(b, h, i0), *dob = dO.row(b, h, i0);
                    T *dqb = dQ.row(b, h, i0);
                    for (int64_t r = 0; r < mb; r++) {
                        int64_t i = i0 + r;
                        if (lrow[i] == ninf) { // uniform row: dV[j] += dO_i / Tk, no dQ/dK
                            const T *g_o = dob + r * dO.st;
                            for (int64_t j = 0; j < Tk; j++)
                                for (int64_t c = 0; c < D; c++)
                                    dva[(size_t)(j * D + c)] += g_o[c] / (T)Tk;
                        }
                    }
                    if (n == 0) {
                        for (int64_t r = 0; r < mb; r++)
                            std::fill(dqb + r * dQ.st, dqb + r * dQ.st + D, T(0));
                        continue;
                    }
                    // each product below runs once per range of the window: a over keys
                    // [k0, k0 + na) and scores [0, na), b over [kb, kb + nb) and [na, n)
                    const int64_t kr0[2] = {w.k0, w.kb}, nr[2] = {w.na, w.nb},
                                  col[2] = {0, w.na};
                    // P = exp(x − lse), recomputed from the scores
                    for (int rg = 0; rg < 2; rg++)
                        if (nr[rg] > 0)
                            K.gemm(mb, nr[rg], D, qb, Q.st,
                                   kp.data() + kr0[rg] / kPanel * D * kPanel, D * kPanel,
                                   p.data() + col[rg], n, false);
                    for (int64_t r = 0; r < mb; r++) {
                        int64_t i = i0 + r;
                        T *x = p.data() + r * n;
                        mask_block_row<T>(K, d, w, x, b, i, bias.data() + b * Tk, zeros.data(),
                                          scale);
                        if (lrow[i] == ninf)
                            std::fill(x, x + n, T(0));
                        else
                            K.exp_sum(x, n, lrow[i]);
                        // Di = dO_i · O_i
                        const T *g_o = dob + r * dO.st, *o = O.row(b, h, i);
                        T acc = 0;
                        for (int64_t c = 0; c < D; c++)
                            acc += g_o[c] * o[c];
                        di[(size_t)r] = acc;
                    }
                    // dV[window] += Pᵀ dO
                    pack_rows(dob, dO.st, mb, D, dobp.data());
                    transpose(p.data(), mb, n, n, tr.data());
                    for (int rg = 0; rg < 2; rg++)
                        if (nr[rg] > 0)
                            K.gemm(nr[rg], D, mb, tr.data() + col[rg] * mb, mb, dobp.data(),
                                   mb * kPanel, dva.data() + kr0[rg] * D, D, true);
                    // dP = dO Vᵀ;  dS = scale · P ∘ (dP − Di)
                    for (int rg = 0; rg < 2; rg++)
                        if (nr[rg] > 0)
                            K.gemm(mb, nr[rg], D, dob, dO.st,
                                   vtp.data() + kr0[rg] / kPanel * D * kPanel, D * kPanel,
                                   dp.data() + col[rg], n, false);
                    for (int64_t r = 0; r < mb; r++) {
                        T *ds = dp.data() + r * n;
                        const T *pr = p.data() + r * n;
                        const T dr = di[(size_t)r];
                        K.softmax_grad(ds, pr, n, scale, dr);
                    }
                    // dQ = dS K;  dK[window] += dSᵀ Q
                    for (int rg = 0; rg < 2; rg++)
                        if (nr[rg] > 0)
                            K.gemm(mb, D, nr[rg], dp.data() + col[rg], n,
                                   krp.data() + kr0[rg] * kPanel, Tk * kPanel, dqb, dQ.st,
                                   rg == 1 && nr[0] > 0);
                    pack_rows(qb, Q.st, mb, D, qbp.data());
                    transpose(dp.data(), mb, n, n, tr.data());
                    for (int rg = 0; rg < 2; rg++)
                        if (nr[rg] > 0)
                            K.gemm(nr[rg], D, mb, tr.data() + col[rg] * mb, mb, qbp.data(),
                                   mb * kPanel, dka.data() + kr0[rg] * D, D, true);
                }
            }
            for (int64_t j = 0; j < Tk; j++) {
                std::copy(dka.begin() + j * D, dka.begin() + (j + 1) * D, dK.row(b, g, j));
                std::copy(dva.begin() + j * D, dva.begin() + (j + 1) * D, dV.row(b, g, j));
            }
        }
    });
}

// ---- autograd ------------------------------------------------------------------------------

// (B,H,T,D) output with the memory layout (B,T,H,D), so transpose(1,2) of it is contiguous
// and the caller's reshape to (B,T,H·D) for o_proj is a view.
at::Tensor empty_bthd(int64_t B, int64_t H, int64_t T, int64_t D, const at::TensorOptions &o)
{
    return at::empty({B, T, H, D}, o).transpose(1, 2);
}

// A unit-stride last dim is all the kernel needs; anything else is copied once.
at::Tensor unit_last(const at::Tensor &t)
{
    return t.stride(3) == 1 ? t : t.contiguous();
}

Dims dims_of(const at::Tensor &q, const at::Tensor &k, bool causal, double scale,
             const at::Tensor &spans)
{
    Dims d;
    d.B = q.size(0), d.Hq = q.size(1), d.Tq = q.size(2), d.D = q.size(3);
    d.Hkv = k.size(1), d.Tk = k.size(2);
    d.n_rep = d.Hq / d.Hkv, d.off = d.Tk - d.Tq, d.causal = causal, d.scale = scale;
    d.spans = spans.numel() ? spans.data_ptr<int64_t>() : nullptr;
    d.window = d.Tk;
    if (d.spans) { // a packed row of short sequences needs (64 x its widest window), not Tk
        d.window = 0;
        for (int64_t b = 0; b < d.B; b++)
            for (int64_t i0 = 0; i0 < d.Tq; i0 += kBlockRows) {
                int64_t mb = std::min(kBlockRows, d.Tq - i0);
                int64_t kend = std::max<int64_t>(d.key_end(i0 + mb - 1), 0);
                d.window = std::max(d.window, d.block_window(b, i0, mb, kend).n());
            }
    }
    return d;
}

void run_forward(const Dims &d, const at::Tensor &q, const at::Tensor &k, const at::Tensor &v,
                 const at::Tensor &keep_u8, at::Tensor &out, at::Tensor &lse)
{
    out = empty_bthd(d.B, d.Hq, d.Tq, d.D, q.options());
    lse = at::empty({d.B, d.Hq, d.Tq}, q.options());
    if (q.scalar_type() == at::kFloat)
        forward_kernel<float>(d, q, k, v, keep_u8, out, lse);
    else
        forward_kernel<double>(d, q, k, v, keep_u8, out, lse);
}

struct AttentionFn : public torch::autograd::Function<AttentionFn> {
    static at::Tensor forward(torch::autograd::AutogradContext *ctx, const at::Tensor &q,
                              const at::Tensor &k, const at::Tensor &v,
                              const at::Tensor &keep_u8, const at::Tensor &spans, bool causal,
                              double scale)
    {
        Dims d = dims_of(q, k, causal, scale, spans);
        at::Tensor out, lse;
        run_forward(d, q, k, v, keep_u8, out, lse);
        ctx->save_for_backward({q, k, v, keep_u8, out, lse, spans});
        ctx->saved_data["causal"] = causal;
        ctx->saved_data["scale"] = scale;
        return out;
    }

    // Not itself differentiable: create_graph through it is not supported.
    static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                   torch::autograd::variable_list grad_out)
    {
        torch::autograd::variable_list s = ctx->get_saved_variables();
        const at::Tensor &q = s[0], &k = s[1], &v = s[2], &keep_u8 = s[3], &out = s[4],
                         &lse = s[5], &spans = s[6];
        Dims d = dims_of(q, k, ctx->saved_data["causal"].toBool(),
                         ctx->saved_data["scale"].toDouble(), spans);
        at::Tensor dout = grad_out[0];
        if (!dout.defined())
            dout = at::zeros_like(out);
        dout = unit_last(dout);
        at::Tensor dq = empty_bthd(d.B, d.Hq, d.Tq, d.D, q.options());
        at::Tensor dk = empty_bthd(d.B, d.Hkv, d.Tk, d.D, k.options());
        at::Tensor dv = empty_bthd(d.B, d.Hkv, d.Tk, d.D, v.options());
        if (q.scalar_type() == at::kFloat)
            backward_kernel<float>(d, q, k, v, keep_u8, out, lse, dout, dq, dk, dv);
        else
            backward_kernel<double>(d, q, k, v, keep_u8, out, lse, dout, dq, dk, dv);
        return {dq, dk, dv, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    }
};

} // namespace

at::Tensor fused_attention(const at::Tensor &q_in, const at::Tensor &k_in,
                           const at::Tensor &v_in, const at::Tensor *key_keep, bool causal,
                           double scale, const at::Tensor *spans)
{
    at::ScalarType st = q_in.scalar_type();
    if (!q_in.device().is_cpu() || !k_in.device().is_cpu() || !v_in.device().is_cpu() ||
        (st != at::kFloat && st != at::kDouble) || k_in.scalar_type() != st ||
        v_in.scalar_type() != st || q_in.size(2) == 0 || k_in.size(2) == 0 ||
        q_in.size(3) == 0)
        return at::Tensor();
    at::Tensor q = unit_last(q_in), k = unit_last(k_in), v = unit_last(v_in);
    at::Tensor keep_u8 = key_keep ? key_keep->ne(0).to(at::kByte).contiguous()
                                  : at::empty({0}, at::TensorOptions().dtype(at::kByte));
    at::Tensor sp = spans ? *spans : at::empty({0}, at::TensorOptions().dtype(at::kLong));
    if (spans)
        causal = true;
    bool grad = at::GradMode::is_enabled() &&
                (q.requires_grad() || k.requires_grad() || v.requires_grad());
    if (grad)
        return AttentionFn::apply(q, k, v, keep_u8, sp, causal, scale);
    Dims d = dims_of(q, k, causal, scale, sp);
    at::Tensor out, lse;
    run_forward(d, q, k, v, keep_u8, out, lse);
    return out;
}

} // namespace sn_aten
