// aten/aten_fused.cpp: fused CPU kernels for RMSNorm, rotary embedding and SwiGLU (see
// aten_fused.hpp). Each op is one torch::autograd::Function whose forward and backward each make
// a single pass over their operands, parallelised over rows with at::parallel_for (ATen's
// intra-op pool, so at::set_num_threads applies).
//
// Vectorisation: the build is -O2 with no -march flag, and GCC's -O2 cost model ("very cheap")
// does not vectorise a loop whose trip count is unknown. The inner loops are therefore written
// on GCC/Clang generic vectors (vector_size(16): 4 floats or 2 doubles, the width of the
// baseline ISA, SSE2 on x86-64), with a scalar loop for the tail of each row. No intrinsics,
// no ISA-specific code.
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
#include <cstring>
#include <vector>

namespace sn_aten {
namespace fused {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// ---- generic vectors -----------------------------------------------------------------------

template <class T> struct Vec;
template <> struct Vec<float> {
    typedef float v __attribute__((vector_size(16)));
    typedef int32_t i __attribute__((vector_size(16)));
    static constexpr int N = 4;
};
template <> struct Vec<double> {
    typedef double v __attribute__((vector_size(16)));
    typedef int64_t i __attribute__((vector_size(16)));
    static constexpr int N = 2;
};

template <class T> static inline typename Vec<T>::v vload(const T *p)
{
    typename Vec<T>::v v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
template <class T> static inline void vstore(T *p, typename Vec<T>::v v)
{
    std::memcpy(p, &v, sizeof v);
}
template <class T> static inline typename Vec<T>::v vsplat(T s)
{
    typename Vec<T>::v v = {};
    return v + s;
}
template <class T> static inline T vsum(typename Vec<T>::v v)
{
    T s = 0;
    for (int k = 0; k < Vec<T>::N; k++)
        s += v[k];
    return s;
}

// Logistic sigmoid σ(z) = 1 / (1 + e^(-z)).
//
// f32: e^x by range reduction: n = round(x·log2 e) (added to 1.5·2^23 so the FP adder rounds,
// the integer then sits in the low mantissa bits), r = x − n·ln2 (ln2 split hi+lo, Cody-Waite),
// e^r by its degree-7 Taylor polynomial (|r| ≤ ln2/2: truncation r^8/8! < 6e-9, below half an
// ulp), times 2^n built in the exponent bits. x is clamped to [-87, 88] so 2^n stays a normal
// float: e^-87 ≈ 1.6e-38 makes σ exactly 1 in f32 and e^88 ≈ 1.7e38 makes it ≈ 6e-39 (the
// true value underflows to the same order). NaN passes through the clamp and stays NaN.
// Measured against a double reference over [-100, 100]: max relative error of silu 1.7e-7.
static inline Vec<float>::v vsigmoid(Vec<float>::v z)
{
    typedef Vec<float>::v V;
    typedef Vec<float>::i I;
    V x = -z;
    I lo = x < -87.0f, hi = x > 88.0f; // comparison masks: all ones where true
    x = (V)(((I)x & ~lo) | ((I)vsplat<float>(-87.0f) & lo));
    x = (V)(((I)x & ~hi) | ((I)vsplat<float>(88.0f) & hi));
    V t = x * 1.44269504088896341f + 12582912.0f;
    V n = t - 12582912.0f;
    V r = x - n * 0.693145751953125f;
    r = r - n * 1.428606765330187045e-06f;
    V p = vsplat<float>(1.0f / 5040.0f);
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    I e = ((I)t - 0x4B400000 + 127) << 23;
    return 1.0f / (1.0f + p * (V)e);
}
// f64 (the reference/test dtype): libm's exp per lane.
static inline Vec<double>::v vsigmoid(Vec<double>::v z)
{
    Vec<double>::v s;
    for (int k = 0; k < Vec<double>::N; k++)
        s[k] = 1.0 / (1.0 + std::exp(-z[k]));
    return s;
}
static inline float sigmoid1(float z)
{
    Vec<float>::v v = {};
    v[0] = z;
    return vsigmoid(v)[0]; // the same approximation as the vector body
}
static inline double sigmoid1(double z) { return 1.0 / (1.0 + std::exp(-z)); }

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

template <class T>
static void rms_fwd_kernel(const T *__restrict x, const T *__restrict w, T *__restrict y,
                           T *__restrict rs, int64_t rows, int64_t D, double eps)
{
    typedef typename Vec<T>::v V;
    const int N = Vec<T>::N;
    at::parallel_for(0, rows, rows_grain(D), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; i++) {
            const T *xr = x + i * D;
            T *yr = y + i * D;
            V a0 = {}, a1 = {};
            int64_t j = 0;
            for (; j + 2 * N <= D; j += 2 * N) {
                V v0 = vload(xr + j), v1 = vload(xr + j + N);
                a0 += v0 * v0;
                a1 += v1 * v1;
            }
            for (; j + N <= D; j += N) {
                V v0 = vload(xr + j);
                a0 += v0 * v0;
            }
            T ss = vsum<T>(a0 + a1);
            for (; j < D; j++)
                ss += xr[j] * xr[j];
            T r = T(1) / std::sqrt(ss / T(D) + T(eps));
            rs[i] = r;
            j = 0;
            for (; j + N <= D; j += N)
                vstore(yr + j, vload(w + j) * (vload(xr + j) * r));
            for (; j < D; j++)
                yr[j] = w[j] * (xr[j] * r);
        }
    });
}

// dx (may be null: not needed) and, when dw_part is not null, one partial dw row per chunk of
// `chunk` rows (summed by the caller, so the result does not depend on the thread count).
template <class T>
static void rms_bwd_kernel(const T *__restrict x, const T *__restrict w, const T *__restrict rs,
                           const T *__restrict dy, T *__restrict dx, T *__restrict dw_part,
                           int64_t rows, int64_t D, int64_t chunk)
{
    typedef typename Vec<T>::v V;
    const int N = Vec<T>::N;
    int64_t n_chunks = (rows + chunk - 1) / chunk;
    int64_t grain = std::max<int64_t>(1, rows_grain(D) / chunk);
    at::parallel_for(0, n_chunks, grain, [&](int64_t cb, int64_t ce) {
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
                        a += vload(w + j) * vload(gr + j) * vload(xr + j);
                    T s = vsum<T>(a);
                    for (; j < D; j++)
                        s += w[j] * gr[j] * xr[j];
                    const T m = s * r / T(D);
                    T *dr = dx + i * D;
                    j = 0;
                    for (; j + N <= D; j += N)
                        vstore(dr + j, r * (vload(w + j) * vload(gr + j) -
                                            vload(xr + j) * r * m));
                    for (; j < D; j++)
                        dr[j] = r * (w[j] * gr[j] - xr[j] * r * m);
                }
                if (dwp) {
                    j = 0;
                    for (; j + N <= D; j += N)
                        vstore(dwp + j, vload(dwp + j) + vload(gr + j) * (vload(xr + j) * r));
                    for (; j < D; j++)
                        dwp[j] += gr[j] * (xr[j] * r);
                }
            }
        }
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

// backward == false: y = rot(x); true: y = rotᵀ(x) (x is dy, y is dx).
template <class T, bool Backward>
static void rotary_kernel(const T *__restrict x, RowMap xm, T *__restrict y, RowMap ym,
                          const T *__restrict c, const T *__restrict s, RowMap cm,
                          int64_t rows, int64_t D)
{
    typedef typename Vec<T>::v V;
    const int N = Vec<T>::N;
    const int64_t h = D / 2;
    at::parallel_for(0, rows, rows_grain(D), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; i++) {
            const T *xr = x + xm.at(i);
            T *yr = y + ym.at(i);
            int64_t co = cm.at(i);
            const T *c1 = c + co, *c2 = c + co + h, *s1 = s + co, *s2 = s + co + h;
            int64_t j = 0;
            for (; j + N <= h; j += N) {
                V a = vload(xr + j), bb = vload(xr + h + j);
                if (!Backward) {
                    vstore(yr + j, a * vload(c1 + j) - bb * vload(s1 + j));
                    vstore(yr + h + j, bb * vload(c2 + j) + a * vload(s2 + j));
                } else {
                    vstore(yr + j, a * vload(c1 + j) + bb * vload(s2 + j));
                    vstore(yr + h + j, bb * vload(c2 + j) - a * vload(s1 + j));
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
    });
}

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
        rotary_kernel<scalar_t, Backward>(x.data_ptr<scalar_t>(), row_map4(x),
                                          y.data_ptr<scalar_t>(), row_map4(y),
                                          c.data_ptr<scalar_t>(), s.data_ptr<scalar_t>(),
                                          table_map(c, H, B), B * H * T, D);
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

template <class T>
static void swiglu_fwd_kernel(const T *__restrict g, const T *__restrict u, T *__restrict y,
                              int64_t n)
{
    typedef typename Vec<T>::v V;
    const int N = Vec<T>::N;
    at::parallel_for(0, n, 16384, [&](int64_t b, int64_t e) {
        int64_t j = b;
        for (; j + N <= e; j += N) {
            V gv = vload(g + j);
            vstore(y + j, gv * vsigmoid(gv) * vload(u + j));
        }
        for (; j < e; j++)
            y[j] = g[j] * sigmoid1(g[j]) * u[j];
    });
}

template <class T>
static void swiglu_bwd_kernel(const T *__restrict g, const T *__restrict u,
                              const T *__restrict dy, T *__restrict dg, T *__restrict du,
                              int64_t n)
{
    typedef typename Vec<T>::v V;
    const int N = Vec<T>::N;
    at::parallel_for(0, n, 16384, [&](int64_t b, int64_t e) {
        int64_t j = b;
        for (; j + N <= e; j += N) {
            V gv = vload(g + j), sg = vsigmoid(gv), d = vload(dy + j);
            if (du)
                vstore(du + j, d * gv * sg);
            if (dg)
                vstore(dg + j, d * vload(u + j) * sg * (1 + gv * (1 - sg)));
        }
        for (; j < e; j++) {
            T gv = g[j], sg = sigmoid1(gv), d = dy[j];
            if (du)
                du[j] = d * gv * sg;
            if (dg)
                dg[j] = d * u[j] * sg * (1 + gv * (1 - sg));
        }
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

} // namespace fused
} // namespace sn_aten
