// Internal: the activations that more than one op applies, as unary.hpp's op structs: GELU
// (the gelu op, and the fused feed-forward network) and ReLU in the form that op needs.
#pragma once

#include "unary.hpp"

namespace normnet::detail {

// y = x Phi(x); dx = dy (Phi(x) + x phi(x)), phi the standard normal density
struct GeluOp {
    static constexpr const char* kBackwardName = "GeluBackward0";
    static constexpr Uses kUses = Uses::input;
    float value(float x) const { return vmath::gelu(x); }
    float grad(float x, float, float dy) const { return dy * vmath::gelu_grad(x); }
};

// relu's values (NaN passes, as torch), its gradient read from the input: x <= 0 exactly where
// relu(x) <= 0, so this is relu's own backward rule.
struct ReluOp {
    static constexpr const char* kBackwardName = "ReluBackward0";
    static constexpr Uses kUses = Uses::input;
    float value(float x) const { return x < 0.0f ? 0.0f : x; }
    float grad(float x, float, float dy) const { return x <= 0.0f ? 0.0f : dy; }
};

}  // namespace normnet::detail
