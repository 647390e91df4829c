// aten/aten_fused.cpp: fused CPU kernels for RMSNorm, rotary embedding and SwiGLU (see
// aten_fused.hpp). Each op is one torch::autograd::Function whose forward and backward each make
// a single pass over their operands, parallelised over rows on ATen's intra-op pool (so
// at::set_num_threads applies; see parallel_chunks).
//
// Vectorisation: the build is -O2 with no -march flag, and GCC's -O2 cost model ("very cheap")
// does not vectorise a loop whose trip count is unknown. The inner loops are therefore written
// on GCC/Clang generic vectors (no intrinsics), with a scalar loop for the tail of each row,
// and each kernel body is compiled twice, for the x86-64 baseline (16-byte vectors) and, in
// functions marked target("avx2,fma"), for AVX2+FMA (32-byte vectors); the CPU picks at run
// time (see Vec and SN_DISPATCH; ATEN_CPU_CAPABILITY=default forces the baseline, as it does
// for ATen's kernels). No global compile option is involved.
//
// Saved for backward: RMSNorm x and the per-row r (not x̂); rotary only the tables (the
// backward does not need x); SwiGLU g and u. All inputs must be CPU tensors of one dtype, f32
// or f64; otherwise (or for a shape the kernel does not handle) the entry returns an undefined
// tensor and the caller runs the composed ATen ops.
//
// These backward passes are not themselves differentiable (no double backward): a backward
// run with create_graph=true raises an error instead of returning wrong second derivatives.
#include "aten/aten_fused.hpp"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace sn_aten {
namespace fused {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// ---- generic vectors -----------------------------------------------------------------------
//
// Vec<T, W>: W-byte vectors of T. Every kernel body is a template on W, instantiated twice and
// picked at run time (as ATen picks its own CPU kernels): W = 32 inside a function compiled
// with __attribute__((target("avx2,fma"))) when the CPU has both (8 floats a vector, FMA
// contraction), else W = 16, the x86-64 baseline (SSE2). The helpers are always inlined into
// those two, so 32-byte vectors never cross a call compiled for the baseline; GCC still notes
// the ABI of such signatures (-Wpsabi), which is irrelevant here and silenced.
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
#define SN_INLINE static inline __attribute__((always_inline))

template <class T> struct IntOf;
template <> struct IntOf<float> {
    typedef int32_t t;
    typedef uint32_t u;
};
template <> struct IntOf<double> {
    typedef int64_t t;
    typedef uint64_t u;
};
template <class T, int W> struct Vec {
    typedef T v __attribute__((vector_size(W)));
    typedef typename IntOf<T>::t i __attribute__((vector_size(W)));
    typedef typename IntOf<T>::u u __attribute__((vector_size(W))); // wrapping arithmetic
    static constexpr int N = W / (int)sizeof(T);
};

template <class T, int W> SN_INLINE typename Vec<T, W>::v vload(const T *p)
{
    typename Vec<T, W>::v v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
template <class T, int W> SN_INLINE void vstore(T *p, typename Vec<T, W>::v v)
{
    std::memcpy(p, &v, sizeof v);
}
template <class T, int W> SN_INLINE typename Vec<T, W>::v vsplat(T s)
{
    typename Vec<T, W>::v v = {};
    return v + s;
}
template <class T, int W> SN_INLINE T vsum(typename Vec<T, W>::v v)
{
    T s = 0;
    for (int k = 0; k < Vec<T, W>::N; k++)
        s += v[k];
    return s;
}

// Logistic sigmoid σ(z) = 1 / (1 + e^(-z)), lane by lane.
//
// f32: e^x by range reduction: n = round(x·log2 e) (added to 1.5·2^23 so the FP adder rounds,
// the integer then sits in the low mantissa bits), r = x − n·ln2 (ln2 split hi+lo, Cody-Waite),
// e^r by its degree-7 Taylor polynomial (|r| ≤ ln2/2: truncation r^8/8! < 6e-9, below half an
// ulp), times 2^n built in the exponent bits. x is clamped to [-87, 88] so 2^n stays a normal
// float: e^-87 ≈ 1.6e-38 makes σ exactly 1 in f32 and e^88 ≈ 1.7e38 makes it ≈ 6e-39 (the
// true value underflows to the same order). NaN passes through the clamp and stays NaN.
// Measured against a double reference over [-100, 100]: max relative error of silu 1.7e-7.
template <int W> SN_INLINE typename Vec<float, W>::v vsigmoid(typename Vec<float, W>::v z)
{
    typedef typename Vec<float, W>::v V;
    typedef typename Vec<float, W>::i I;
    V x = -z;
    I lo = x < -87.0f, hi = x > 88.0f; // comparison masks: all ones where true
    x = (V)(((I)x & ~lo) | ((I)vsplat<float, W>(-87.0f) & lo));
    x = (V)(((I)x & ~hi) | ((I)vsplat<float, W>(88.0f) & hi));
    V t = x * 1.44269504088896341f + 12582912.0f;
    V n = t - 12582912.0f;
    V r = x - n * 0.693145751953125f;
    r = r - n * 1.428606765330187045e-06f;
    V p = vsplat<float, W>(1.0f / 5040.0f);
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    typedef typename Vec<float, W>::u U;
    U e = ((U)t - 0x4B400000u + 127u) << 23; // in [1, 254] << 23 after the clamp
    return 1.0f / (1.0f + p * (V)e);
}
// f64 (the reference/test dtype): libm's exp per lane.
template <int W> SN_INLINE typename Vec<double, W>::v vsigmoid(typename Vec<double, W>::v z)
{
    typename Vec<double, W>::v s;
    for (int k = 0; k < Vec<double, W>::N; k++)
        s[k] = 1.0 / (1.0 + std::exp(-z[k]));
    return s;
}
template <int W> SN_INLINE float sigmoid1(float z)
{
    typename Vec<float, W>::v v = {};
    v[0] = z;
    return vsigmoid<W>(v)[0]; // the same approximation as the vector body
}
template <int W> SN_INLINE double sigmoid1(double z) { return 1.0 / (1.0 + std::exp(-z)); }

// The AVX2+FMA bodies run when the CPU has both, unless ATEN_CPU_CAPABILITY=default (ATen's
// own switch to its baseline kernels; read at each dispatch, so tests can run both paths).
static bool use_avx2_fma()
{
#if defined(__x86_64__) && defined(__GNUC__)
    static const bool cpu = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    const char *cap = cpu ? std::getenv("ATEN_CPU_CAPABILITY") : nullptr;
    return cpu && !(cap && std::strcmp(cap, "default") == 0);
#else
    return false;
#endif
}

// name##_any<T>(args): name<T, 32> compiled for AVX2+FMA when the CPU has them, else
// name<T, 16> compiled for the baseline.
#if defined(__x86_64__) && defined(__GNUC__)
#define SN_DISPATCH(name, params, args)                                                      \
    template <class T>                                                                       \
    __attribute__((target("avx2,fma"), noinline)) static void name##_avx2 params             \
    {                                                                                        \
        name<T, 32> args;                                                                    \
    }                                                                                        \
    template <class T> __attribute__((noinline)) static void name##_base params              \
    {                                                                                        \
        name<T, 16> args;                                                                    \
    }                                                                                        \
    template <class T> static void name##_any params                                         \
    {                                                                                        \
        if (use_avx2_fma())                                                                  \
            name##_avx2<T> args;                                                             \
        else                                                                                 \
            name##_base<T> args;                                                             \
    }
#else
#define SN_DISPATCH(name, params, args)                                                      \
    template <class T> static void name##_any params { name<T, 16> args; }
#endif

// ---- shared checks ---------------------------------------------------------------------------

static bool usable(const at::Tensor &t, at::ScalarType st)
{
    return t.defined() && t.device().is_cpu() && t.layout() == at::kStrided &&
           t.scalar_type() == st && !t.is_conj() && !t.is_neg();
}
static bool float_type(at::ScalarType st) { return st == at::kFloat || st == at::kDouble; }

// A backward run with create_graph=true would need these kernels to be differentiable.
static void no_double_backward(const char *op)
{
    TORCH_CHECK(!at::GradMode::is_enabled(), op,
                ": the fused CPU kernel has no double backward (create_graph=true)");
}

// Runs f(begin, end) over sub-ranges of [0, n) on ATen's intra-op pool, each range at least
// `grain` long (except the last). at::parallel_for is an inline `#pragma omp parallel` in this
// libtorch, so it splits the work only because aten/ is compiled with OpenMP (CMakeLists.txt,
// GCC); elsewhere it runs f(0, n) on the calling thread, which is correct, only slower.
template <class F> static void parallel_chunks(int64_t n, int64_t grain, const F &f)
{
    if (n > 0)
        at::parallel_for(0, n, grain, [&](int64_t b, int64_t e) { f(b, e); });
}

static int64_t rows_grain(int64_t d)
{
    return std::max<int64_t>(1, 16384 / std::max<int64_t>(d, 1));
}

// ---- RMSNorm ---------------------------------------------------------------------------------
//
// Forward (per row of D, HF Qwen2RMSNorm, computed in the input dtype f32/f64):
//   r = rsqrt(mean(x²) + eps),  x̂ = x·r,  y = w·x̂.
// Backward, with g = w·dy:
//   ∂r/∂x_k = −r³·x_k / D, so dL/dx_k = Σ_j g_j ∂(x_j r)/∂x_k = g_k·r − r³·x_k·(1/D)Σ_j g_j x_j
//           = r·(g_k − x̂_k·mean(g·x̂));
//   dL/dw_j = Σ_rows dy_j·x̂_j.
// Saved: x (contiguous rows) and r (one value per row).

// Rows [b, e) of the forward; r of each row into rs.
template <class T, int W>
SN_INLINE void rms_fwd_rows(const T *__restrict x, const T *__restrict w, T *__restrict y,
                            T *__restrict rs, int64_t D, double eps, int64_t b, int64_t e)
{
    typedef typename Vec<T, W>::v V;
    const int N = Vec<T, W>::N;
    for (int64_t i = b; i < e; i++) {
        const T *xr = x + i * D;
        T *yr = y + i * D;
        V a0 = {}, a1 = {};
        int64_t j = 0;
        for (; j + 2 * N <= D; j += 2 * N) {
            V v0 = vload<T, W>(xr + j), v1 = vload<T, W>(xr + j + N);
            a0 += v0 * v0;
            a1 += v1 * v1;
        }
        for (; j + N <= D; j += N) {
            V v0 = vload<T, W>(xr + j);
            a0 += v0 * v0;
        }
        T ss = vsum<T, W>(a0 + a1);
        for (; j < D; j++)
            ss += xr[j] * xr[j];
        T r = T(1) / std::sqrt(ss / T(D) + T(eps));
        rs[i] = r;
        j = 0;
        for (; j + N <= D; j += N)
            vstore<T, W>(yr + j, vload<T, W>(w + j) * (vload<T, W>(xr + j) * r));
        for (; j < D; j++)
            yr[j] = w[j] * (xr[j] * r);
    }
}
SN_DISPATCH(rms_fwd_rows,
            (const T *x, const T *w, T *y, T *rs, int64_t D, double eps, int64_t b, int64_t e),
            (x, w, y, rs, D, eps, b, e))

// Chunks [cb, ce) of `chunk` rows of the backward: dx (null: not needed) and, when dw_part is
// not null, one partial dw row per chunk (summed by the caller in chunk order, so the result
// does not depend on the thread count).
template <class T, int W>
SN_INLINE void rms_bwd_chunks(const T *__restrict x, const T *__restrict w,
                              const T *__restrict rs, const T *__restrict dy, T *__restrict dx,
                              T *__restrict dw_part, int64_t rows, int64_t D, int64_t chunk,
                              int64_t cb, int64_t ce)
{
    typedef typename Vec<T, W>::v V;
    const int N = Vec<T, W>::N;
    for (int64_t c = cb; c < ce; c++) {
        T *dwp = dw_part ? dw_part + c * D : nullptr;
        if (dwp)
            std::fill(dwp, dwp + D, T(0));
        int64_t ie = std::min(rows, (c + 1) * chunk);
        for (int64_t i = c * chunk; i < ie; i++) {
            const T *xr = x + i * D, *gr = dy + i * D;
            const T r = rs[i];
            int64_t j = 0;
            if (dx) {
                // m = mean(g·x̂) = (r/D)·Σ w·dy·x
                V a = {};
                for (; j + N <= D; j += N)
                    a += vload<T, W>(w + j) * vload<T, W>(gr + j) * vload<T, W>(xr + j);
                T s = vsum<T, W>(a);
                for (; j < D; j++)
                    s += w[j] * gr[j] * xr[j];
                const T m = s * r / T(D);
                T *dr = dx + i * D;
                j = 0;
                for (; j + N <= D; j += N)
                    vstore<T, W>(dr + j, r * (vload<T, W>(w + j) * vload<T, W>(gr + j) -
                                              vload<T, W>(xr + j) * r * m));
                for (; j < D; j++)
                    dr[j] = r * (w[j] * gr[j] - xr[j] * r * m);
            }
            if (dwp) {
                j = 0;
                for (; j + N <= D; j += N)
                    vstore<T, W>(dwp + j, vload<T, W>(dwp + j) +
                                              vload<T, W>(gr + j) * (vload<T, W>(xr + j) * r));
                for (; j < D; j++)
                    dwp[j] += gr[j] * (xr[j] * r);
            }
        }
    }
}
SN_DISPATCH(rms_bwd_chunks,
            (const T *x, const T *w, const T *rs, const T *dy, T *dx, T *dw_part, int64_t rows,
             int64_t D, int64_t chunk, int64_t cb, int64_t ce),
            (x, w, rs, dy, dx, dw_part, rows, D, chunk, cb, ce))

template <class T>
static void rms_fwd_kernel(const T *x, const T *w, T *y, T *rs, int64_t rows, int64_t D,
                           double eps)
{
    parallel_chunks(rows, rows_grain(D), [&](int64_t b, int64_t e) {
        rms_fwd_rows_any<T>(x, w, y, rs, D, eps, b, e);
    });
}

template <class T>
static void rms_bwd_kernel(const T *x, const T *w, const T *rs, const T *dy, T *dx, T *dw_part,
                           int64_t rows, int64_t D, int64_t chunk)
{
    int64_t n_chunks = (rows + chunk - 1) / chunk;
    int64_t grain = std::max<int64_t>(1, rows_grain(D) / chunk);
    parallel_chunks(n_chunks, grain, [&](int64_t cb, int64_t ce) {
        rms_bwd_chunks_any<T>(x, w, rs, dy, dx, dw_part, rows, D, chunk, cb, ce);
    });
}

struct RmsNormFn : public torch::autograd::Function<RmsNormFn> {
    static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x_in,
                              const at::Tensor &w_in, double eps)
    {
        at::Tensor x = x_in.contiguous(), w = w_in.contiguous();
        int64_t D = x.size(-1), rows = x.numel() / D;
        at::Tensor y = at::empty_like(x, at::MemoryFormat::Contiguous);
        at::Tensor rs = at::empty({rows}, x.options());
        AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "sn_fused_rms_norm", [&] {
            rms_fwd_kernel<scalar_t>(x.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(),
                                     y.data_ptr<scalar_t>(), rs.data_ptr<scalar_t>(), rows, D,
                                     eps);
        });
        ctx->save_for_backward({x, w, rs});
        return y;
    }

    static variable_list backward(AutogradContext *ctx, variable_list grads)
    {
        no_double_backward("rms_norm");
        variable_list s = ctx->get_saved_variables();
        const at::Tensor &x = s[0], &w = s[1], &rs = s[2];
        bool need_x = ctx->needs_input_grad(0), need_w = ctx->needs_input_grad(1);
        at::Tensor dy = grads[0].contiguous();
        int64_t D = x.size(-1), rows = x.numel() / D;
        const int64_t chunk = 32;
        at::Tensor dx, dw, part;
        if (need_x)
            dx = at::empty_like(x, at::MemoryFormat::Contiguous);
        if (need_w)
            part = at::empty({(rows + chunk - 1) / chunk, D}, x.options());
        if (need_x || need_w)
            AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "sn_fused_rms_norm_bwd", [&] {
                rms_bwd_kernel<scalar_t>(x.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(),
                                         rs.data_ptr<scalar_t>(), dy.data_ptr<scalar_t>(),
                                         need_x ? dx.data_ptr<scalar_t>() : nullptr,
                                         need_w ? part.data_ptr<scalar_t>() : nullptr, rows, D,
                                         chunk);
            });
        if (need_w)
            dw = part.sum(0);
        return {dx, dw, at::Tensor()};
    }
};

// ---- rotary embedding ------------------------------------------------------------------------
//
// y = x·c + rotate_half(x)·s with rotate_half(x) = (−x2, x1), x = (x1, x2) halves of D = 2h.
// Written for a GENERAL table (halves c1, c2 and s1, s2 need not be equal; the RoPE tables
// have c1 = c2, s1 = s2, but nothing here relies on it):
//   y1 = x1·c1 − x2·s1,   y2 = x2·c2 + x1·s2.
// Backward (the transpose of that 2×2 map per j < h):
//   dx1 = ∂y1/∂x1·dy1 + ∂y2/∂x1·dy2 = dy1·c1 + dy2·s2,
//   dx2 = ∂y1/∂x2·dy1 + ∂y2/∂x2·dy2 = dy2·c2 − dy1·s1.
// The tables get no gradient (the entry declines when they require one).
//
// Layout: rows (b, h, t) of x and y are addressed through their own strides (last dim stride
// 1), so the (B,T,H,D) buffer seen as (B,H,T,D) is read in place and y is allocated like
// at::empty_like(x) (same permuted dense layout: the next op's transpose back is free).

struct RowMap { // row index (b, h, t) -> element offset
    int64_t H, T, sb, sh, st;
    int64_t at(int64_t r) const
    {
        int64_t t = r % T, q = r / T;
        return (q / H) * sb + (q % H) * sh + t * st;
    }
};

// Rows [b, e): Backward == false: y = rot(x); true: y = rotᵀ(x) (x is dy, y is dx).
template <class T, int W, bool Backward>
SN_INLINE void rotary_rows_impl(const T *__restrict x, RowMap xm, T *__restrict y, RowMap ym,
                                const T *__restrict c, const T *__restrict s, RowMap cm,
                                int64_t D, int64_t b, int64_t e)
{
    typedef typename Vec<T, W>::v V;
    const int N = Vec<T, W>::N;
    const int64_t h = D / 2;
    for (int64_t i = b; i < e; i++) {
        const T *xr = x + xm.at(i);
        T *yr = y + ym.at(i);
        int64_t co = cm.at(i);
        const T *c1 = c + co, *c2 = c + co + h, *s1 = s + co, *s2 = s + co + h;
        int64_t j = 0;
        for (; j + N <= h; j += N) {
            V a = vload<T, W>(xr + j), bb = vload<T, W>(xr + h + j);
            if (!Backward) {
                vstore<T, W>(yr + j, a * vload<T, W>(c1 + j) - bb * vload<T, W>(s1 + j));
                vstore<T, W>(yr + h + j, bb * vload<T, W>(c2 + j) + a * vload<T, W>(s2 + j));
            } else {
                vstore<T, W>(yr + j, a * vload<T, W>(c1 + j) + bb * vload<T, W>(s2 + j));
                vstore<T, W>(yr + h + j, bb * vload<T, W>(c2 + j) - a * vload<T, W>(s1 + j));
            }
        }
        for (; j < h; j++) {
            T a = xr[j], bb = xr[h + j];
            if (!Backward) {
                yr[j] = a * c1[j] - bb * s1[j];
                yr[h + j] = bb * c2[j] + a * s2[j];
            } else {
                yr[j] = a * c1[j] + bb * s2[j];
                yr[h + j] = bb * c2[j] - a * s1[j];
            }
        }
    }
}
template <class T, int W>
SN_INLINE void rotary_fwd_rows(const T *x, RowMap xm, T *y, RowMap ym, const T *c, const T *s,
                               RowMap cm, int64_t D, int64_t b, int64_t e)
{
    rotary_rows_impl<T, W, false>(x, xm, y, ym, c, s, cm, D, b, e);
}
template <class T, int W>
SN_INLINE void rotary_bwd_rows(const T *x, RowMap xm, T *y, RowMap ym, const T *c, const T *s,
                               RowMap cm, int64_t D, int64_t b, int64_t e)
{
    rotary_rows_impl<T, W, true>(x, xm, y, ym, c, s, cm, D, b, e);
}
SN_DISPATCH(rotary_fwd_rows,
            (const T *x, RowMap xm, T *y, RowMap ym, const T *c, const T *s, RowMap cm,
             int64_t D, int64_t b, int64_t e),
            (x, xm, y, ym, c, s, cm, D, b, e))
SN_DISPATCH(rotary_bwd_rows,
            (const T *x, RowMap xm, T *y, RowMap ym, const T *c, const T *s, RowMap cm,
             int64_t D, int64_t b, int64_t e),
            (x, xm, y, ym, c, s, cm, D, b, e))

static RowMap row_map4(const at::Tensor &t)
{
    return RowMap{t.size(1), t.size(2), t.stride(0), t.stride(1), t.stride(2)};
}

// Tables (T,D) or (B',T,D) with B' = B or 1, viewed per row (b, h, t) of x (B,H,T,D).
static RowMap table_map(const at::Tensor &c, int64_t H, int64_t B)
{
    if (c.dim() == 2)
        return RowMap{H, c.size(0), 0, 0, c.stride(0)};
    return RowMap{H, c.size(1), (c.size(0) == 1 && B != 1) ? 0 : c.stride(0), 0, c.stride(1)};
}

// Output tensor like at::empty_like(t) (a dense permuted layout is kept), but with a unit
// stride in the last dim (the kernels need it).
static at::Tensor empty_rows_like(const at::Tensor &t)
{
    at::Tensor y = at::empty_like(t);
    if (y.stride(-1) != 1)
        y = at::empty_like(t, at::MemoryFormat::Contiguous);
    return y;
}

template <bool Backward>
static void rotary_run(const at::Tensor &x, const at::Tensor &y, const at::Tensor &c,
                       const at::Tensor &s)
{
    int64_t B = x.size(0), H = x.size(1), T = x.size(2), D = x.size(3);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "sn_fused_rotary", [&] {
        const scalar_t *xp = x.data_ptr<scalar_t>(), *cp = c.data_ptr<scalar_t>(),
                       *sp = s.data_ptr<scalar_t>();
        scalar_t *yp = y.data_ptr<scalar_t>();
        RowMap xm = row_map4(x), ym = row_map4(y), cm = table_map(c, H, B);
        parallel_chunks(B * H * T, rows_grain(D), [&](int64_t b, int64_t e) {
            if (Backward)
                rotary_bwd_rows_any<scalar_t>(xp, xm, yp, ym, cp, sp, cm, D, b, e);
            else
                rotary_fwd_rows_any<scalar_t>(xp, xm, yp, ym, cp, sp, cm, D, b, e);
        });
    });
}

struct RotaryFn : public torch::autograd::Function<RotaryFn> {
    static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x_in,
                              const at::Tensor &c_in, const at::Tensor &s_in)
    {
        at::Tensor x = x_in.stride(-1) == 1 ? x_in : x_in.contiguous();
        at::Tensor c = c_in.stride(-1) == 1 ? c_in : c_in.contiguous();
        at::Tensor s = s_in.stride(-1) == 1 ? s_in : s_in.contiguous();
        at::Tensor y = empty_rows_like(x);
        rotary_run<false>(x, y, c, s);
        ctx->save_for_backward({c, s});
        ctx->saved_data["ystrides"] = y.strides().vec();
        return y;
    }

    static variable_list backward(AutogradContext *ctx, variable_list grads)
    {
        no_double_backward("apply_rotary");
        at::Tensor dx;
        if (ctx->needs_input_grad(0)) {
            variable_list sv = ctx->get_saved_variables();
            at::Tensor dy = grads[0].stride(-1) == 1 ? grads[0] : grads[0].contiguous();
            // dx in the layout y had (that of x when x was dense): the grad flows back
            // through the same transpose/view as x came through, and stays a free view there
            std::vector<int64_t> st = ctx->saved_data["ystrides"].toIntVector();
            dx = at::empty_strided(dy.sizes(), st, dy.options());
            rotary_run<true>(dy, dx, sv[0], sv[1]);
        }
        return {dx, at::Tensor(), at::Tensor()};
    }
};

// ---- SwiGLU ----------------------------------------------------------------------------------
//
// y = silu(g)·u = g·σ(g)·u. With σ' = σ(1 − σ):
//   du = dy·g·σ(g),
//   dg = dy·u·(σ(g) + g·σ(g)(1 − σ(g))) = dy·u·σ(g)·(1 + g·(1 − σ(g))).
// Saved: g and u. g, u (and y, du, dg) share one dense layout and are walked as flat memory.

static const int64_t kBlock = 4096; // elements per unit of work (a multiple of every N)

// Elements [j, e) of the forward.
template <class T, int W>
SN_INLINE void swiglu_fwd_range(const T *__restrict g, const T *__restrict u, T *__restrict y,
                                int64_t j, int64_t e)
{
    typedef typename Vec<T, W>::v V;
    const int N = Vec<T, W>::N;
    for (; j + N <= e; j += N) {
        V gv = vload<T, W>(g + j);
        vstore<T, W>(y + j, gv * vsigmoid<W>(gv) * vload<T, W>(u + j));
    }
    for (; j < e; j++)
        y[j] = g[j] * sigmoid1<W>(g[j]) * u[j];
}
SN_DISPATCH(swiglu_fwd_range, (const T *g, const T *u, T *y, int64_t j, int64_t e),
            (g, u, y, j, e))

// Elements [j, e) of the backward; dg or du null when not needed.
template <class T, int W>
SN_INLINE void swiglu_bwd_range(const T *__restrict g, const T *__restrict u,
                                const T *__restrict dy, T *__restrict dg, T *__restrict du,
                                int64_t j, int64_t e)
{
    typedef typename Vec<T, W>::v V;
    const int N = Vec<T, W>::N;
    for (; j + N <= e; j += N) {
        V gv = vload<T, W>(g + j), sg = vsigmoid<W>(gv), d = vload<T, W>(dy + j);
        if (du)
            vstore<T, W>(du + j, d * gv * sg);
        if (dg)
            vstore<T, W>(dg + j, d * vload<T, W>(u + j) * sg * (1 + gv * (1 - sg)));
    }
    for (; j < e; j++) {
        T gv = g[j], sg = sigmoid1<W>(gv), d = dy[j];
        if (du)
            du[j] = d * gv * sg;
        if (dg)
            dg[j] = d * u[j] * sg * (1 + gv * (1 - sg));
    }
}
SN_DISPATCH(swiglu_bwd_range,
            (const T *g, const T *u, const T *dy, T *dg, T *du, int64_t j, int64_t e),
            (g, u, dy, dg, du, j, e))

template <class T> static void swiglu_fwd_kernel(const T *g, const T *u, T *y, int64_t n)
{
    parallel_chunks((n + kBlock - 1) / kBlock, 4, [&](int64_t bb, int64_t be) {
        swiglu_fwd_range_any<T>(g, u, y, bb * kBlock, std::min(n, be * kBlock));
    });
}

template <class T>
static void swiglu_bwd_kernel(const T *g, const T *u, const T *dy, T *dg, T *du, int64_t n)
{
    parallel_chunks((n + kBlock - 1) / kBlock, 4, [&](int64_t bb, int64_t be) {
        swiglu_bwd_range_any<T>(g, u, dy, dg, du, bb * kBlock, std::min(n, be * kBlock));
    });
}

// g and u walked as flat memory: both dense with the same strides (any permutation).
static bool same_dense(const at::Tensor &a, const at::Tensor &b)
{
    return a.is_non_overlapping_and_dense() && a.strides().equals(b.strides()) &&
           a.sizes().equals(b.sizes());
}

struct SwigluFn : public torch::autograd::Function<SwigluFn> {
    static at::Tensor forward(AutogradContext *ctx, const at::Tensor &g_in,
                              const at::Tensor &u_in)
    {
        at::Tensor g = g_in, u = u_in;
        if (!same_dense(g, u)) {
            g = g.contiguous();
            u = u.contiguous();
        }
        at::Tensor y = at::empty_like(g); // g dense: y gets g's strides
        AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "sn_fused_swiglu", [&] {
            swiglu_fwd_kernel<scalar_t>(g.data_ptr<scalar_t>(), u.data_ptr<scalar_t>(),
                                        y.data_ptr<scalar_t>(), g.numel());
        });
        ctx->save_for_backward({g, u});
        return y;
    }

    static variable_list backward(AutogradContext *ctx, variable_list grads)
    {
        no_double_backward("swiglu");
        bool need_g = ctx->needs_input_grad(0), need_u = ctx->needs_input_grad(1);
        at::Tensor dg, du;
        if (!need_g && !need_u)
            return {dg, du};
        variable_list s = ctx->get_saved_variables();
        const at::Tensor &g = s[0], &u = s[1];
        at::Tensor dy = grads[0];
        if (!same_dense(dy, g))
            dy = at::empty_like(g).copy_(dy);
        if (need_g)
            dg = at::empty_like(g);
        if (need_u)
            du = at::empty_like(g);
        AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "sn_fused_swiglu_bwd", [&] {
            swiglu_bwd_kernel<scalar_t>(g.data_ptr<scalar_t>(), u.data_ptr<scalar_t>(),
                                        dy.data_ptr<scalar_t>(),
                                        need_g ? dg.data_ptr<scalar_t>() : nullptr,
                                        need_u ? du.data_ptr<scalar_t>() : nullptr, g.numel());
        });
        return {dg, du};
    }
};

// The same gate on the output of one fused gate|up GEMM (docs/train.md "Speed"): x (..., 2I)
// holds g in its first I columns and u in its last I, y (..., I). The backward writes dg and
// du into one (..., 2I) gradient, the layout the GEMM's backward reads, so the gate and up
// projections need no split and no gradient concatenation. Saved: x.
template <class T> static void swiglu_cat_fwd_kernel(const T *x, T *y, int64_t rows, int64_t I)
{
    parallel_chunks(rows, rows_grain(I), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; r++)
            swiglu_fwd_range_any<T>(x + r * 2 * I, x + r * 2 * I + I, y + r * I, 0, I);
    });
}

template <class T>
static void swiglu_cat_bwd_kernel(const T *x, const T *dy, T *dx, int64_t rows, int64_t I)
{
    parallel_chunks(rows, rows_grain(I), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; r++) {
            const T *row = x + r * 2 * I;
            T *drow = dx + r * 2 * I;
            swiglu_bwd_range_any<T>(row, row + I, dy + r * I, drow, drow + I, 0, I);
        }
    });
}

struct SwigluCatFn : public torch::autograd::Function<SwigluCatFn> {
    static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x_in)
    {
        at::Tensor x = x_in.contiguous();
        int64_t I = x.size(-1) / 2, rows = x.numel() / (2 * I);
        std::vector<int64_t> ys = x.sizes().vec();
        ys.back() = I;
        at::Tensor y = at::empty(ys, x.options());
        AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "sn_fused_swiglu_cat", [&] {
            swiglu_cat_fwd_kernel<scalar_t>(x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(),
                                            rows, I);
        });
        ctx->save_for_backward({x});
        return y;
    }

    static variable_list backward(AutogradContext *ctx, variable_list grads)
    {
        no_double_backward("swiglu_cat");
        at::Tensor dx;
        if (!ctx->needs_input_grad(0))
            return {dx};
        const at::Tensor x = ctx->get_saved_variables()[0];
        at::Tensor dy = grads[0].contiguous();
        int64_t I = x.size(-1) / 2, rows = x.numel() / (2 * I);
        dx = at::empty_like(x);
        AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "sn_fused_swiglu_cat_bwd", [&] {
            swiglu_cat_bwd_kernel<scalar_t>(x.data_ptr<scalar_t>(), dy.data_ptr<scalar_t>(),
                                            dx.data_ptr<scalar_t>(), rows, I);
        });
        return {dx};
    }
};

} // namespace

// ---- entry points: decline (undefined tensor) where the kernels do not apply ---------------

at::Tensor rms_norm(const at::Tensor &x, const at::Tensor &w, double eps)
{
    if (!x.defined() || !float_type(x.scalar_type()))
        return at::Tensor();
    at::ScalarType st = x.scalar_type();
    if (!usable(x, st) || !usable(w, st) || x.dim() < 1 || w.dim() != 1 ||
        w.size(0) != x.size(-1) || x.numel() == 0)
        return at::Tensor();
    return RmsNormFn::apply(x, w, eps);
}

at::Tensor apply_rotary(const at::Tensor &x, const at::Tensor &cos, const at::Tensor &sin)
{
    if (!x.defined() || !float_type(x.scalar_type()))
        return at::Tensor();
    at::ScalarType st = x.scalar_type();
    if (!usable(x, st) || !usable(cos, st) || !usable(sin, st) || x.dim() != 4 ||
        x.numel() == 0 || x.size(3) % 2 != 0)
        return at::Tensor();
    if (!cos.sizes().equals(sin.sizes()) || cos.size(-1) != x.size(3))
        return at::Tensor();
    if (cos.dim() == 2) {
        if (cos.size(0) != x.size(2))
            return at::Tensor();
    } else if (cos.dim() == 3) {
        if (cos.size(1) != x.size(2) || (cos.size(0) != x.size(0) && cos.size(0) != 1))
            return at::Tensor();
    } else {
        return at::Tensor();
    }
    // the backward gives the tables no gradient: let autograd handle tables that want one
    if (at::GradMode::is_enabled() && (cos.requires_grad() || sin.requires_grad()))
        return at::Tensor();
    return RotaryFn::apply(x, cos, sin);
}

at::Tensor swiglu(const at::Tensor &g, const at::Tensor &u)
{
    if (!g.defined() || !float_type(g.scalar_type()))
        return at::Tensor();
    at::ScalarType st = g.scalar_type();
    if (!usable(g, st) || !usable(u, st) || !g.sizes().equals(u.sizes()) || g.numel() == 0)
        return at::Tensor();
    return SwigluFn::apply(g, u);
}

at::Tensor swiglu_cat(const at::Tensor &x)
{
    if (!x.defined() || !float_type(x.scalar_type()))
        return at::Tensor();
    if (!usable(x, x.scalar_type()) || x.dim() < 1 || x.size(-1) % 2 != 0 || x.numel() == 0)
        return at::Tensor();
    return SwigluCatFn::apply(x);
}

} // namespace fused
} // namespace sn_aten
