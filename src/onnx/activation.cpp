// ONNX forms of the activation layers: ONNX's own operator where it computes the same function,
// else the primitives (SiLU, GELU, a Softplus with beta or a low threshold).
#include "emit.hpp"
#include "normnet/nn/activation.hpp"

namespace normnet {

using onnx::GraphBuilder;
using onnx::Value;

Value ReLU::to_onnx(GraphBuilder& graph, const Value& x) const { return graph.relu(x); }
Value Tanh::to_onnx(GraphBuilder& graph, const Value& x) const { return graph.unary("Tanh", x); }
Value Sigmoid::to_onnx(GraphBuilder& graph, const Value& x) const { return graph.unary("Sigmoid", x); }
Value SiLU::to_onnx(GraphBuilder& graph, const Value& x) const { return graph.mul(x, graph.unary("Sigmoid", x)); }

Value GELU::to_onnx(GraphBuilder& graph, const Value& x) const {
    return onnx::emit::gelu(graph, x, options_.approximate);
}

Value LeakyReLU::to_onnx(GraphBuilder& graph, const Value& x) const {
    return graph.unary("LeakyRelu", x, {{"alpha", options_.negative_slope}});
}

Value ELU::to_onnx(GraphBuilder& graph, const Value& x) const { return graph.unary("Elu", x, {{"alpha", options_.alpha}}); }

// torch: log(1 + exp(beta x)) / beta, and x itself where beta x > threshold. ONNX's Softplus is
// the first with beta 1; past 20, log(1 + e^x) rounds to x in float32, so the default needs no
// switch.
Value Softplus::to_onnx(GraphBuilder& graph, const Value& x) const {
    const auto& o = options_;
    if (o.beta == 1.0 && o.threshold >= 20.0) return graph.unary("Softplus", x);
    const Value bx = graph.mul(x, graph.scalar(static_cast<float>(o.beta)));
    const Value soft = graph.div(graph.unary("Softplus", bx), graph.scalar(static_cast<float>(o.beta)));
    const Value above = graph.node("Greater", {bx, graph.scalar(static_cast<float>(o.threshold))}, {}, x.shape, kBool);
    return graph.node("Where", {above, x, soft}, {}, x.shape);
}

Value Softmax::to_onnx(GraphBuilder& graph, const Value& x) const { return graph.softmax(x, options_.dim); }

Value LogSoftmax::to_onnx(GraphBuilder& graph, const Value& x) const {
    return graph.node("LogSoftmax", {x}, {{"axis", options_.dim}}, x.shape);
}

}  // namespace normnet
