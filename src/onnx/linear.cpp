// ONNX forms of the linear and reshaping layers, Dropout (nothing, in eval mode) and Embedding.
#include "emit.hpp"
#include "normnet/nn/dropout.hpp"
#include "normnet/nn/embedding.hpp"
#include "normnet/nn/linear.hpp"

namespace normnet {

using onnx::GraphBuilder;
using onnx::Ints;
using onnx::kBatch;
using onnx::Value;

Value Linear::to_onnx(GraphBuilder& graph, const Value& x) const { return onnx::emit::linear(graph, x, weight, bias); }

Value Identity::to_onnx(GraphBuilder&, const Value& x) const { return x; }

Value Dropout::to_onnx(GraphBuilder&, const Value& x) const { return x; }

Value Flatten::to_onnx(GraphBuilder& graph, const Value& x) const {
    const int64_t n = x.dim();
    const int64_t start = options_.start_dim < 0 ? options_.start_dim + n : options_.start_dim();
    const int64_t end = options_.end_dim < 0 ? options_.end_dim + n : options_.end_dim();
    if (start < 0 || end >= n || start > end) graph.fail("dimensions out of range of a " + std::to_string(n) + "-D input");
    Ints shape(x.shape.begin(), x.shape.begin() + start);
    int64_t merged = 1;
    for (int64_t d = start; d <= end; ++d) {
        if (x.size(d) == kBatch && start != end) graph.fail("it flattens the batch dimension into others");
        merged = x.size(d) == kBatch ? kBatch : merged * x.size(d);
    }
    shape.push_back(merged);
    shape.insert(shape.end(), x.shape.begin() + end + 1, x.shape.end());
    // ONNX's Flatten is exactly torch's Flatten(1, -1) of a batch.
    if (start == 1 && end == n - 1 && x.size(0) == kBatch) return graph.node("Flatten", {x}, {{"axis", 1}}, shape);
    return graph.reshape(x, shape);
}

Value Unflatten::to_onnx(GraphBuilder& graph, const Value& x) const {
    const int64_t d = options_.dim < 0 ? options_.dim + x.dim() : options_.dim();
    if (d < 0 || d >= x.dim() || x.size(d) == kBatch) graph.fail("it splits the batch dimension or one out of range");
    Ints sizes = options_.sizes;
    int64_t known = 1;
    for (int64_t s : sizes) known *= s == -1 ? 1 : s;
    for (int64_t& s : sizes) s = s == -1 ? x.size(d) / known : s;
    Ints shape(x.shape.begin(), x.shape.begin() + d);
    shape.insert(shape.end(), sizes.begin(), sizes.end());
    shape.insert(shape.end(), x.shape.begin() + d + 1, x.shape.end());
    return graph.reshape(x, shape);
}

// A row of the table per token: Gather along the rows.
Value Embedding::to_onnx(GraphBuilder& graph, const Value& x) const {
    if (x.dtype != kInt64) graph.fail("its input must be int64 token ids");
    Ints shape = x.shape;
    shape.push_back(options_.embedding_dim);
    return graph.node("Gather", {graph.tensor(weight, "weight"), x}, {{"axis", 0}}, shape);
}

}  // namespace normnet
