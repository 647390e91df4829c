// aten/aten_fused.hpp: fused CPU kernels for the element-wise pieces of the decoder layer
// (RMSNorm, rotary embedding, SwiGLU), each one torch::autograd::Function with a hand-written
// forward and backward, so a layer makes one pass over memory where the composed ATen ops
// make several and keep several intermediates alive for autograd. C++ only (aten/).
//
// Each function returns an UNDEFINED at::Tensor when its kernel does not apply (a device
// other than the CPU, a dtype other than f32/f64, a layout it does not handle); the caller
// then falls back to the composed ATen ops, which define the semantics (aten/aten.h).
#ifndef SN_ATEN_FUSED_HPP
#define SN_ATEN_FUSED_HPP

#include <ATen/ATen.h>

namespace sn_aten {
namespace fused {

// HF Qwen2RMSNorm: y = w * (x * rsqrt(mean(x^2, -1) + eps)); x (..., D), w (D).
at::Tensor rms_norm(const at::Tensor &x, const at::Tensor &w, double eps);
// y = x * cos + rotate_half(x) * sin; x (B,H,T,D), cos/sin (T,D) or (B,T,D).
at::Tensor apply_rotary(const at::Tensor &x, const at::Tensor &cos, const at::Tensor &sin);
// y = silu(g) * u (the Qwen2 MLP's gate); g and u of the same shape.
at::Tensor swiglu(const at::Tensor &g, const at::Tensor &u);

} // namespace fused
} // namespace sn_aten
#endif
