// aten/aten_attention.hpp: the fused CPU attention kernel behind sn_aten_attention (C++ only).
#ifndef SN_ATEN_ATTENTION_HPP
#define SN_ATEN_ATTENTION_HPP

#include <ATen/ATen.h>

namespace sn_aten {

// softmax(Q Kᵀ · scale + mask) V with the semantics of sn_aten_attention (aten/aten.h), in one
// blocked pass that never stores the (B,H,Tq,Tk) scores. Returns an UNDEFINED tensor when the
// kernel does not apply (not the CPU, not f32/f64), and the caller runs the composed ops.
// spans (nullptr = none): the packed-row mask of sn_aten_attention_spans, a checked,
// contiguous (B, T, 3) int64 CPU tensor (then Tq == Tk, causal, key_keep unused).
at::Tensor fused_attention(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v,
                           const at::Tensor *key_keep, bool causal, double scale,
                           const at::Tensor *spans = nullptr);

} // namespace sn_aten
#endif
