// Internal: how every loss applies its reduction, forward (none: the per-element losses
// themselves; sum; mean: sum / divisor) and backward (the gradient each element's loss receives).
#pragma once

#include "normnet/ops.hpp"
#include "op.hpp"

namespace normnet::detail {

/// The gradient of element i's loss: dout[i] for an unreduced loss, one value for a reduced one.
struct LossGrad {
    const float* dout = nullptr;  // null: every element gets `value`
    float value = 0.0f;
    float operator[](int64_t i) const { return dout ? dout[i] : value; }
};

/// The loss from per-element losses (already shaped as the result for none).
Tensor reduce_loss(const Tensor& losses, Reduction reduction, double divisor);

/// What each element's loss receives from dout, the gradient of the reduced loss.
inline LossGrad loss_grad(const Tensor& dout, Reduction reduction, double divisor) {
    if (reduction == kNone) return {dout.data(), 0.0f};
    const double g = dout.item<double>();
    return {nullptr, static_cast<float>(reduction == kMean ? g / divisor : g)};
}

/// Refuses a weight that requires grad (torch: "the derivative for 'weight' is not implemented").
void check_constant_weight(const Tensor& weight, const char* op, const char* what);

}  // namespace normnet::detail
