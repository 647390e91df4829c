// aten/aten_fused.cpp: fused element-wise kernels (see aten_fused.hpp). Not written yet:
// every entry declines, so the composed ATen ops run.
#include "aten/aten_fused.hpp"

namespace sn_aten {
namespace fused {

at::Tensor rms_norm(const at::Tensor &, const at::Tensor &, double) { return at::Tensor(); }
at::Tensor apply_rotary(const at::Tensor &, const at::Tensor &, const at::Tensor &)
{
    return at::Tensor();
}
at::Tensor swiglu(const at::Tensor &, const at::Tensor &) { return at::Tensor(); }

} // namespace fused
} // namespace sn_aten
