// Internal: pieces of ONNX graphs that several modules' to_onnx share (a linear map, a
// reduction, normalisation from primitives, GELU, a LayerNorm over the last dimension).
#pragma once

#include <string>

#include "normnet/onnx.hpp"

namespace normnet {
class TransformerEncoder;
}

namespace normnet::onnx::emit {

/// x [*, in] W^T + b for weight [out, in] (bias may be undefined), stored under the current
/// module as `weight_name` and `bias_name`: Gemm for 2-D x; else MatMul with the transposed
/// weight (stored as "<weight_name>.T") and Add.
Value linear(GraphBuilder& g, const Value& x, const Tensor& weight, const Tensor& bias,
             const std::string& weight_name = "weight", const std::string& bias_name = "bias");

/// ReduceMean over `axes` (non-negative), keeping them as size 1.
Value reduce_mean(GraphBuilder& g, const Value& x, const Ints& axes);

/// (x - mean) / sqrt(var + eps) with the biased mean and variance over `axes`, from primitives
/// (ReduceMean, Sub, Mul, Add, Sqrt, Div).
Value normalize(GraphBuilder& g, const Value& x, const Ints& axes, double eps);

/// x * weight + bias (either undefined: left out), the tensors stored as "<prefix>weight" and
/// "<prefix>bias" reshaped to `shape` (broadcast against x).
Value affine(GraphBuilder& g, const Value& x, const Tensor& weight, const Tensor& bias, const Ints& shape,
             const std::string& prefix = "");

/// GELU, exact (x Phi(x) through Erf) or "tanh" (the tanh approximation), from primitives
/// (ONNX has no Gelu before opset 20).
Value gelu(GraphBuilder& g, const Value& x, const std::string& approximate);

/// Squeeze / Unsqueeze of one axis (axes as an input, as opsets 13+ take them).
Value squeeze(GraphBuilder& g, const Value& x, int64_t axis);
Value unsqueeze(GraphBuilder& g, const Value& x, int64_t axis);

/// `parts` equal slices of x along `axis` (Split without its sizes input: equal parts).
std::vector<Value> split(GraphBuilder& g, const Value& x, int64_t axis, int64_t parts);

/// The encoder's layers (and final norm) on x, under a causal mask when `causal` (position i
/// attends to positions <= i): what TransformerEncoder::forward(x, {}, {}, causal) computes.
Value transformer_encoder(GraphBuilder& g, const TransformerEncoder& encoder, const Value& x, bool causal);

}  // namespace normnet::onnx::emit
