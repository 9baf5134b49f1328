// ONNX forms of the normalisation layers in eval mode: LayerNorm as LayerNormalization (opset 17;
// primitives below it), BatchNorm as BatchNormalization with its running statistics,
// InstanceNorm2d as InstanceNormalization, GroupNorm as InstanceNormalization over groups then
// the per-channel affine, RMSNorm from primitives (ONNX has RMSNormalization only from opset 23).
#include <limits>

#include "emit.hpp"
#include "normnet/nn/norm.hpp"

namespace normnet {

using onnx::GraphBuilder;
using onnx::Ints;
using onnx::kBatch;
using onnx::Value;
namespace emit = onnx::emit;

namespace {

// Trailing dimensions of x equal to `shape`, or an error naming both.
void check_trailing(GraphBuilder& g, const Value& x, const std::vector<int64_t>& shape) {
    const auto k = static_cast<int64_t>(shape.size());
    bool ok = x.dim() >= k;
    for (int64_t i = 0; ok && i < k; ++i) ok = x.size(x.dim() - k + i) == shape[static_cast<size_t>(i)];
    if (!ok) g.fail("the input does not end in its normalized_shape");
}

// The axes of x's last k dimensions.
Ints trailing_axes(const Value& x, size_t k) {
    Ints axes;
    for (int64_t a = x.dim() - static_cast<int64_t>(k); a < x.dim(); ++a) axes.push_back(a);
    return axes;
}

// [C, 1, 1, ...]: a per-channel tensor broadcast against x [N, C, ...].
Ints per_channel(const Value& x, int64_t channels) {
    Ints shape(static_cast<size_t>(x.dim() - 1), 1);
    shape[0] = channels;
    return shape;
}

// The statistics BatchNorm uses in eval mode, for x [N, C, ...]: the running ones as
// BatchNormalization does it, or (without running statistics, as torch) the batch's own.
Value batch_norm(GraphBuilder& g, const Value& x, const NormBase& m, int64_t channels, double eps,
                 bool running_stats) {
    if (x.dim() < 2 || x.size(1) != channels) g.fail("expected " + std::to_string(channels) + " channels at dimension 1");
    if (!running_stats) {
        Ints axes{0};
        for (int64_t a = 2; a < x.dim(); ++a) axes.push_back(a);
        return emit::affine(g, emit::normalize(g, x, axes, eps), m.weight, m.bias, per_channel(x, channels));
    }
    const Value scale = m.weight.defined() ? g.tensor(m.weight, "weight") : g.constant(ones({channels}));
    const Value shift = m.bias.defined() ? g.tensor(m.bias, "bias") : g.constant(zeros({channels}));
    return g.node("BatchNormalization",
                  {x, scale, shift, g.tensor(m.running_mean, "running_mean"), g.tensor(m.running_var, "running_var")},
                  {{"epsilon", eps}}, x.shape);
}

}  // namespace

Value LayerNorm::to_onnx(GraphBuilder& graph, const Value& x) const {
    const auto& o = options_;
    check_trailing(graph, x, o.normalized_shape);
    const Ints axes = trailing_axes(x, o.normalized_shape.size());
    if (graph.opset() < 17) {
        return emit::affine(graph, emit::normalize(graph, x, axes, o.eps), weight, bias, o.normalized_shape);
    }
    std::vector<Value> inputs{x, weight.defined() ? graph.tensor(weight, "weight") : graph.constant(ones(Shape(o.normalized_shape)))};
    if (bias.defined()) inputs.push_back(graph.tensor(bias, "bias"));
    return graph.node("LayerNormalization", inputs, {{"axis", axes.front()}, {"epsilon", o.eps}}, x.shape);
}

Value BatchNormBase::to_onnx(GraphBuilder& graph, const Value& x) const {
    const BatchNormOptions& o = options();
    return batch_norm(graph, x, *this, o.num_features, o.eps, o.track_running_stats);
}

// [*, C]: the channels moved to dimension 1 for BatchNormalization, and back.
Value SequenceBatchNorm::to_onnx(GraphBuilder& graph, const Value& x) const {
    const BatchNormOptions& o = options();
    if (x.dim() <= 2) return batch_norm(graph, x, *this, o.num_features, o.eps, o.track_running_stats);
    Ints to_channels{0, x.dim() - 1}, back{0};
    for (int64_t d = 1; d < x.dim() - 1; ++d) to_channels.push_back(d);
    for (int64_t d = 2; d < x.dim(); ++d) back.push_back(d);
    back.push_back(1);
    const Value y = batch_norm(graph, graph.transpose(x, to_channels), *this, o.num_features, o.eps, o.track_running_stats);
    return graph.transpose(y, back);
}

Value InstanceNorm2d::to_onnx(GraphBuilder& graph, const Value& x) const {
    const auto& o = options_;
    if (x.dim() != 4) graph.fail("expected [N, C, H, W] input");
    // With running statistics, eval normalises by them: BatchNorm's form.
    if (o.track_running_stats) return batch_norm(graph, x, *this, o.num_features, o.eps, true);
    // The affine part as its own Mul and Add: OpenCV 4.6 applies InstanceNormalization's scale
    // and bias right only to a batch of one.
    const int64_t C = x.size(1);
    const Value normalised = graph.node("InstanceNormalization", {x, graph.constant(ones({C})), graph.constant(zeros({C}))},
                                        {{"epsilon", o.eps}}, x.shape);
    return emit::affine(graph, normalised, weight, bias, per_channel(x, C));
}

// [N, C, *] -> [N, G, C / G * prod(*)]: InstanceNormalization normalises each (sample, group)
// row; then back to x's shape and the per-channel weight and bias.
Value GroupNorm::to_onnx(GraphBuilder& graph, const Value& x) const {
    const auto& o = options_;
    if (x.dim() < 2 || x.size(1) != o.num_channels) graph.fail("expected " + std::to_string(o.num_channels) + " channels at dimension 1");
    int64_t rest = 1;
    for (int64_t d = 1; d < x.dim(); ++d) rest *= x.size(d);
    const int64_t G = o.num_groups;
    const Value groups = graph.reshape(x, {x.size(0), G, rest / G});
    const Value normalised = graph.node("InstanceNormalization", {groups, graph.constant(ones({G})), graph.constant(zeros({G}))},
                                        {{"epsilon", o.eps}}, groups.shape);
    return emit::affine(graph, graph.reshape(normalised, x.shape), weight, bias, per_channel(x, o.num_channels));
}

Value RMSNorm::to_onnx(GraphBuilder& graph, const Value& x) const {
    const auto& o = options_;
    check_trailing(graph, x, o.normalized_shape);
    const double eps = o.eps.value_or(std::numeric_limits<float>::epsilon());
    const Value mean_square = emit::reduce_mean(graph, graph.mul(x, x), trailing_axes(x, o.normalized_shape.size()));
    const Value rms = graph.unary("Sqrt", graph.add(mean_square, graph.scalar(static_cast<float>(eps))));
    return emit::affine(graph, graph.div(x, rms), weight, Tensor{}, o.normalized_shape);
}

}  // namespace normnet
