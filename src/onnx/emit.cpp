// Shared graph pieces of the modules' ONNX forms.
#include "emit.hpp"

#include "graph.hpp"

#include <cmath>
#include <numbers>

#include "normnet/tensor.hpp"

namespace normnet::onnx::emit {

Value linear(GraphBuilder& g, const Value& x, const Tensor& weight, const Tensor& bias, const std::string& weight_name,
             const std::string& bias_name) {
    const int64_t out = weight.size(0), in = weight.size(1);
    if (x.dim() < 2 || x.size(-1) != in) g.fail("input " + shape_text(x.shape) + " for a weight of " + std::to_string(in) + " inputs");
    if (x.dim() == 2) {
        std::vector<Value> inputs{x, g.tensor(weight, weight_name)};
        if (bias.defined()) inputs.push_back(g.tensor(bias, bias_name));
        return g.node("Gemm", inputs, {{"transB", 1}}, Ints{x.size(0), out});
    }
    // The transpose stored once, so that MatMul reads [in, out] as it is.
    const Value y = g.matmul(x, g.tensor(weight.t().contiguous(), weight_name + ".T"));
    return bias.defined() ? g.add(y, g.tensor(bias, bias_name)) : y;
}

Value reduce_mean(GraphBuilder& g, const Value& x, const Ints& axes) {
    Ints shape = x.shape;
    for (int64_t a : axes) shape[static_cast<size_t>(a)] = 1;
    return g.node("ReduceMean", {x}, {{"axes", axes}, {"keepdims", 1}}, shape, x.dtype);
}

Value normalize(GraphBuilder& g, const Value& x, const Ints& axes, double eps) {
    const Value centred = g.sub(x, reduce_mean(g, x, axes));
    const Value var = reduce_mean(g, g.mul(centred, centred), axes);
    return g.div(centred, g.unary("Sqrt", g.add(var, g.scalar(static_cast<float>(eps)))));
}

Value affine(GraphBuilder& g, const Value& x, const Tensor& weight, const Tensor& bias, const Ints& shape,
             const std::string& prefix) {
    Value y = x;
    if (weight.defined()) y = g.mul(y, g.tensor(weight.reshape(shape), prefix + "weight"));
    if (bias.defined()) y = g.add(y, g.tensor(bias.reshape(shape), prefix + "bias"));
    return y;
}

Value gelu(GraphBuilder& g, const Value& x, const std::string& approximate) {
    const Value half_x = g.mul(x, g.scalar(0.5f));
    if (approximate == "tanh") {
        // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
        const Value cube = g.mul(g.mul(x, x), x);
        const Value inner = g.add(x, g.mul(cube, g.scalar(0.044715f)));
        const auto k = static_cast<float>(std::sqrt(2.0 / std::numbers::pi));
        return g.mul(half_x, g.add(g.scalar(1.0f), g.unary("Tanh", g.mul(inner, g.scalar(k)))));
    }
    // 0.5 x (1 + erf(x / sqrt(2)))
    const auto inv_sqrt2 = static_cast<float>(1.0 / std::numbers::sqrt2);
    return g.mul(half_x, g.add(g.scalar(1.0f), g.unary("Erf", g.mul(x, g.scalar(inv_sqrt2)))));
}

Value squeeze(GraphBuilder& g, const Value& x, int64_t axis) {
    Ints shape = x.shape;
    shape.erase(shape.begin() + axis);
    return g.node("Squeeze", {x, g.ints({axis})}, {}, shape, x.dtype);
}

Value unsqueeze(GraphBuilder& g, const Value& x, int64_t axis) {
    Ints shape = x.shape;
    shape.insert(shape.begin() + axis, 1);
    return g.node("Unsqueeze", {x, g.ints({axis})}, {}, shape, x.dtype);
}

std::vector<Value> split(GraphBuilder& g, const Value& x, int64_t axis, int64_t parts) {
    const int64_t a = axis < 0 ? axis + x.dim() : axis;
    Ints shape = x.shape;
    if (shape[static_cast<size_t>(a)] % parts != 0) g.fail("Split of " + std::to_string(x.size(a)) + " into " + std::to_string(parts));
    shape[static_cast<size_t>(a)] /= parts;
    return g.node("Split", {x}, {{"axis", a}}, std::vector<Ints>(static_cast<size_t>(parts), shape), x.dtype);
}

}  // namespace normnet::onnx::emit
