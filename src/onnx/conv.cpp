// ONNX forms of Conv2d and the pooling layers: Conv, MaxPool, AveragePool, GlobalAveragePool,
// their output sizes by torch's rules (which ONNX's match for these attributes).
#include "emit.hpp"
#include "normnet/nn/conv.hpp"
#include "normnet/nn/pooling.hpp"

namespace normnet {

using onnx::GraphBuilder;
using onnx::Ints;
using onnx::Value;

namespace {

// The window's output size along one dimension (torch's pooling_output_shape).
int64_t pooled(int64_t in, int64_t k, int64_t pad_begin, int64_t pad_end, int64_t stride, int64_t dilation, bool ceil_mode) {
    const int64_t span = in + pad_begin + pad_end - dilation * (k - 1) - 1;
    int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
    if (ceil_mode && (out - 1) * stride >= in + pad_begin) --out;
    return out;
}

void check_images(GraphBuilder& g, const Value& x) {
    if (x.dim() != 4) g.fail("expected images [N, C, H, W]");
}

Size2 stride_or_kernel(const Size2& stride, const Size2& kernel) { return stride.given ? stride : kernel; }

}  // namespace

Value Conv2d::to_onnx(GraphBuilder& graph, const Value& x) const {
    const auto& o = options_;
    check_images(graph, x);
    if (o.padding_mode != "zeros") graph.fail("padding_mode '" + o.padding_mode + "' (zeros is exported)");
    const int64_t kh = o.kernel_size.h, kw = o.kernel_size.w;
    // pads: top, left, bottom, right; "same" as torch: the odd one at the bottom/right.
    Ints pads{o.padding.size.h, o.padding.size.w, o.padding.size.h, o.padding.size.w};
    if (o.padding.mode == Conv2dPadding::Mode::valid) pads = {0, 0, 0, 0};
    if (o.padding.mode == Conv2dPadding::Mode::same) {
        const int64_t th = o.dilation.h * (kh - 1), tw = o.dilation.w * (kw - 1);
        pads = {th / 2, tw / 2, th - th / 2, tw - tw / 2};
    }
    const Ints shape{x.size(0), o.out_channels,
                     pooled(x.size(2), kh, pads[0], pads[2], o.stride.h, o.dilation.h, false),
                     pooled(x.size(3), kw, pads[1], pads[3], o.stride.w, o.dilation.w, false)};
    std::vector<Value> inputs{x, graph.tensor(weight, "weight")};
    if (bias.defined()) inputs.push_back(graph.tensor(bias, "bias"));
    return graph.node("Conv", inputs,
                      {{"kernel_shape", Ints{kh, kw}},
                       {"strides", Ints{o.stride.h, o.stride.w}},
                       {"pads", pads},
                       {"dilations", Ints{o.dilation.h, o.dilation.w}},
                       {"group", o.groups}},
                      shape);
}

Value MaxPool2d::to_onnx(GraphBuilder& graph, const Value& x) const {
    const auto& o = options_;
    check_images(graph, x);
    const Size2 s = stride_or_kernel(o.stride, o.kernel_size);
    const Ints shape{x.size(0), x.size(1),
                     pooled(x.size(2), o.kernel_size.h, o.padding.h, o.padding.h, s.h, o.dilation.h, o.ceil_mode),
                     pooled(x.size(3), o.kernel_size.w, o.padding.w, o.padding.w, s.w, o.dilation.w, o.ceil_mode)};
    return graph.node("MaxPool", {x},
                      {{"kernel_shape", Ints{o.kernel_size.h, o.kernel_size.w}},
                       {"strides", Ints{s.h, s.w}},
                       {"pads", Ints{o.padding.h, o.padding.w, o.padding.h, o.padding.w}},
                       {"dilations", Ints{o.dilation.h, o.dilation.w}},
                       {"ceil_mode", o.ceil_mode ? 1 : 0}},
                      shape);
}

Value AvgPool2d::to_onnx(GraphBuilder& graph, const Value& x) const {
    const auto& o = options_;
    check_images(graph, x);
    if (o.divisor_override) graph.fail("divisor_override has no ONNX form (AveragePool divides by the window)");
    const Size2 s = stride_or_kernel(o.stride, o.kernel_size);
    const Ints shape{x.size(0), x.size(1),
                     pooled(x.size(2), o.kernel_size.h, o.padding.h, o.padding.h, s.h, 1, o.ceil_mode),
                     pooled(x.size(3), o.kernel_size.w, o.padding.w, o.padding.w, s.w, 1, o.ceil_mode)};
    return graph.node("AveragePool", {x},
                      {{"kernel_shape", Ints{o.kernel_size.h, o.kernel_size.w}},
                       {"strides", Ints{s.h, s.w}},
                       {"pads", Ints{o.padding.h, o.padding.w, o.padding.h, o.padding.w}},
                       {"ceil_mode", o.ceil_mode ? 1 : 0},
                       {"count_include_pad", o.count_include_pad ? 1 : 0}},
                      shape);
}

// Output 1 x 1 is GlobalAveragePool; windows of one size (the input divisible by the output)
// are an AveragePool; unequal adaptive windows have no ONNX operator.
Value AdaptiveAvgPool2d::to_onnx(GraphBuilder& graph, const Value& x) const {
    check_images(graph, x);
    const int64_t oh = options_.output_size.h, ow = options_.output_size.w, h = x.size(2), w = x.size(3);
    if (oh == 1 && ow == 1) return graph.node("GlobalAveragePool", {x}, {}, Ints{x.size(0), x.size(1), 1, 1});
    if (h % oh != 0 || w % ow != 0) {
        graph.fail("windows of unequal sizes (" + std::to_string(h) + "x" + std::to_string(w) + " to " +
                   std::to_string(oh) + "x" + std::to_string(ow) + ") have no ONNX operator");
    }
    return graph.node("AveragePool", {x}, {{"kernel_shape", Ints{h / oh, w / ow}}, {"strides", Ints{h / oh, w / ow}}},
                      Ints{x.size(0), x.size(1), oh, ow});
}

}  // namespace normnet
