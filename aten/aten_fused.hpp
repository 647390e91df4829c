// aten/aten_fused.hpp: fused CPU kernels for the element-wise pieces of the decoder layer
// (RMSNorm, rotary embedding, SwiGLU), each one torch::autograd::Function with a hand-written
// forward and backward, so a layer makes one pass over memory where the composed ATen ops
// make several and keep several intermediates alive for autograd. C++ only (aten/).
//
// Each function returns an UNDEFINED at::Tensor when its kernel does not apply (a device
// other than the CPU, a dtype other than f32/f64 or operands of different dtypes, a shape or
// layout it does not handle); the caller then falls back to the composed ATen ops, which
// define the semantics (aten/aten.h) and report shape errors.
//
// Common to the three (details and derivations in aten_fused.cpp):
//  - any strides: operands whose last dim is not unit-stride (and RMSNorm inputs that are not
//    contiguous) are copied first; rotary reads a permuted x in place and its output (and the
//    gradient it returns) take x's dense layout, as at::empty_like(x) does;
//  - gradients only for the inputs that need them (ctx->needs_input_grad);
//  - work split over rows on ATen's intra-op pool (at::set_num_threads applies); results do
//    not depend on the thread count;
//  - inner loops on generic vectors, compiled for the x86-64 baseline and for AVX2+FMA, picked
//    at run time (ATEN_CPU_CAPABILITY=default forces the baseline, as for ATen's kernels);
//  - once differentiable: a backward with create_graph=true through them raises an error.
#ifndef SN_ATEN_FUSED_HPP
#define SN_ATEN_FUSED_HPP

#include <ATen/ATen.h>

namespace sn_aten {
namespace fused {

// HF Qwen2RMSNorm: y = w * (x * rsqrt(mean(x^2, -1) + eps)); x (..., D), w (D). Computed in
// the dtype of x (f32 or f64, as the composed op). Saves x and one r per row.
at::Tensor rms_norm(const at::Tensor &x, const at::Tensor &w, double eps);
// y = x * cos + rotate_half(x) * sin; x (B,H,T,D) with D even, cos/sin (T,D) or (B,T,D) or
// (1,T,D), broadcast over heads. Any table works (its two halves need not be equal). The
// tables get no gradient: when one requires grad the op declines (the composed ops give it).
at::Tensor apply_rotary(const at::Tensor &x, const at::Tensor &cos, const at::Tensor &sin);
// y = silu(g) * u (the Qwen2 MLP's gate); g and u of the same shape. Saves g and u.
at::Tensor swiglu(const at::Tensor &g, const at::Tensor &u);
// silu(x[..., :I]) * x[..., I:] for x (..., 2I): the gate on a fused gate|up product. Saves x.
at::Tensor swiglu_cat(const at::Tensor &x);

} // namespace fused
} // namespace sn_aten
#endif
