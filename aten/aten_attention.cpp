#include "aten/aten_attention.hpp"
namespace sn_aten {
at::Tensor fused_attention(const at::Tensor &, const at::Tensor &, const at::Tensor &,
                           const at::Tensor *, bool, double)
{
    return at::Tensor();
}
} // namespace sn_aten
