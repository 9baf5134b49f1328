// interpolate (torch.nn.functional.interpolate): resizing the spatial dims of [N, C, L],
// [N, C, H, W] (and, for nearest, [N, C, D, H, W]) by nearest neighbour or (bi)linear
// interpolation. The source coordinates follow torch's CPU kernels (UpSample.h): nearest reads
// floor(o * scale) with scale = in / out as a float (1 / scale_factor when one is given), linear
// reads scale * (o + 0.5) - 0.5 clamped at 0 (or o * (in - 1) / (out - 1) with align_corners)
// between its two neighbours. Nearest is an index map per dim (remap.hpp, whose backward adds the
// gradients back); linear has its kernel here, separable: two taps per spatial dim, weights
// computed once per output row and column.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "loop.hpp"
#include "normnet/ops.hpp"
#include "op.hpp"
#include "remap.hpp"

namespace normnet {
namespace detail {
namespace {

// The two source taps of each output index along one dim, and their weights.
struct Taps {
    std::vector<int64_t> i0, i1;
    std::vector<float> w0, w1;
};

// torch's area_pixel_compute_scale (as float) and compute_source_index_and_lambda.
Taps linear_taps(int64_t in, int64_t out, bool align_corners, std::optional<double> scale_factor) {
    float scale;
    if (align_corners) {
        scale = out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
    } else {
        scale = scale_factor && *scale_factor > 0.0 ? static_cast<float>(1.0 / *scale_factor)
                                                    : static_cast<float>(in) / static_cast<float>(out);
    }
    Taps t;
    for (int64_t o = 0; o < out; ++o) {
        int64_t a = o, b = o;
        float l1 = 0.0f;
        if (in != out) {
            double src = align_corners ? static_cast<double>(scale) * static_cast<double>(o)
                                       : static_cast<double>(scale) * (static_cast<double>(o) + 0.5) - 0.5;
            if (!align_corners && src < 0.0) src = 0.0;
            a = static_cast<int64_t>(src);
            b = a + (a < in - 1 ? 1 : 0);
            l1 = static_cast<float>(src - static_cast<double>(a));
        }
        t.i0.push_back(a), t.i1.push_back(b);
        t.w0.push_back(1.0f - l1), t.w1.push_back(l1);
    }
    return t;
}

// torch's nearest_idx: the index each output position reads.
std::vector<int64_t> nearest_map(int64_t in, int64_t out, std::optional<double> scale_factor) {
    std::vector<int64_t> map(static_cast<size_t>(out));
    const float scale = scale_factor && *scale_factor > 0.0 ? static_cast<float>(1.0 / *scale_factor)
                                                            : static_cast<float>(in) / static_cast<float>(out);
    for (int64_t o = 0; o < out; ++o) {
        if (out == in) {
            map[static_cast<size_t>(o)] = o;
        } else if (out == 2 * in) {
            map[static_cast<size_t>(o)] = o >> 1;
        } else {
            map[static_cast<size_t>(o)] =
                std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * scale)), in - 1);
        }
    }
    return map;
}

// The sizes of a linear resize: planes of [H, W] -> [OH, OW] (H = OH = 1 for 1-D).
struct Linear2 {
    int64_t planes = 0, H = 1, W = 1, OH = 1, OW = 1;
    Taps h, w;
};

// y: [OH, OW] = the plane x: [H, W] interpolated
void linear_forward(float* __restrict y, const float* __restrict x, const Linear2& g) {
    for (int64_t oh = 0; oh < g.OH; ++oh) {
        const float* r0 = x + g.h.i0[static_cast<size_t>(oh)] * g.W;
        const float* r1 = x + g.h.i1[static_cast<size_t>(oh)] * g.W;
        const float a = g.h.w0[static_cast<size_t>(oh)], b = g.h.w1[static_cast<size_t>(oh)];
        float* yr = y + oh * g.OW;
        for (int64_t ow = 0; ow < g.OW; ++ow) {
            const auto j = static_cast<size_t>(ow);
            const int64_t c0 = g.w.i0[j], c1 = g.w.i1[j];
            const float u = g.w.w0[j], v = g.w.w1[j];
            yr[ow] = a * (u * r0[c0] + v * r0[c1]) + b * (u * r1[c0] + v * r1[c1]);
        }
    }
}

// dx: [H, W] (Store) = dy: [OH, OW] spread back over each output's four taps
template <class Store>
void linear_backward(float* __restrict dx, const float* __restrict dy, const Linear2& g) {
    if (Store::beta == 0.0f) std::fill(dx, dx + g.H * g.W, 0.0f);
    for (int64_t oh = 0; oh < g.OH; ++oh) {
        float* r0 = dx + g.h.i0[static_cast<size_t>(oh)] * g.W;
        float* r1 = dx + g.h.i1[static_cast<size_t>(oh)] * g.W;
        const float a = g.h.w0[static_cast<size_t>(oh)], b = g.h.w1[static_cast<size_t>(oh)];
        const float* gr = dy + oh * g.OW;
        for (int64_t ow = 0; ow < g.OW; ++ow) {
            const auto j = static_cast<size_t>(ow);
            const int64_t c0 = g.w.i0[j], c1 = g.w.i1[j];
            const float u = g.w.w0[j], v = g.w.w1[j];
            r0[c0] += a * u * gr[ow];
            r0[c1] += a * v * gr[ow];
            r1[c0] += b * u * gr[ow];
            r1[c1] += b * v * gr[ow];
        }
    }
}

class UpsampleLinearBackward final : public OpNode {
public:
    Linear2 g;
    const char* node_name = "";
    const char* name() const override { return node_name; }
    void backward(const Tensor& dy) override {
        const GradOut dx = grad_out(0);
        if (!dx) return;
        dx.write([&]<class Store>(float* d) {
            parallel_for(g.planes, item_grain(g.OH * g.OW), [&](int64_t b, int64_t e) {
                for (int64_t p = b; p < e; ++p) linear_backward<Store>(d + p * g.H * g.W, dy.data() + p * g.OH * g.OW, g);
            });
        });
    }
};

}  // namespace
}  // namespace detail

Tensor interpolate(const Tensor& input, const InterpolateFuncOptions& o) {
    NORMNET_CHECK(input.dtype() == kFloat32, "interpolate: expected a float32 tensor, got ", input.dtype());
    const std::string& mode = o.mode;
    NORMNET_CHECK(mode == "nearest" || mode == "linear" || mode == "bilinear", "interpolate: mode '", mode,
                  "' is not supported (nearest, linear and bilinear are)");
    NORMNET_CHECK(input.dim() >= 3 && input.dim() <= 5, "interpolate: Only 3D, 4D and 5D input tensors are supported, "
                  "got ", input.shape());
    const int spatial = input.dim() - 2;
    NORMNET_CHECK(mode != "linear" || spatial == 1, "interpolate: Got ", input.dim(),
                  "D input, but linear mode needs 3D input");
    NORMNET_CHECK(mode != "bilinear" || spatial == 2, "interpolate: Got ", input.dim(),
                  "D input, but bilinear mode needs 4D input");
    NORMNET_CHECK(mode != "nearest" || !o.align_corners, "interpolate: align_corners option can only be set with the "
                  "interpolating modes: linear | bilinear");
    NORMNET_CHECK(o.size.has_value() != o.scale_factor.has_value(),
                  o.size ? "interpolate: only one of size or scale_factor should be defined"
                         : "interpolate: either size or scale_factor should be defined");
    // One value stands for every spatial dim, as torch.
    const auto per_dim = [&](const auto& v, const char* what) {
        NORMNET_CHECK(v.size() == 1 || static_cast<int>(v.size()) == spatial, "interpolate: Input and output must have "
                      "the same number of spatial dimensions, but got input ", input.shape(), " and ", what, " of ",
                      v.size(), " values");
        std::remove_cvref_t<decltype(v)> out;
        for (int d = 0; d < spatial; ++d) out.push_back(v[v.size() == 1 ? 0 : static_cast<size_t>(d)]);
        return out;
    };
    std::vector<int64_t> out_size(static_cast<size_t>(spatial));
    std::vector<std::optional<double>> scales(static_cast<size_t>(spatial));
    if (o.size) {
        out_size = per_dim(*o.size, "size");
    } else {
        const std::vector<double> sf = per_dim(*o.scale_factor, "scale_factor");
        for (int d = 0; d < spatial; ++d) {
            const auto k = static_cast<size_t>(d);
            out_size[k] = static_cast<int64_t>(std::floor(static_cast<double>(input.size(d + 2)) * sf[k]));
            if (!o.recompute_scale_factor.value_or(false)) scales[k] = sf[k];
        }
    }
    for (int d = 0; d < spatial; ++d) {
        NORMNET_CHECK(input.size(d + 2) > 0 && out_size[static_cast<size_t>(d)] > 0, "interpolate: Input and output "
                      "sizes should be greater than 0, but got input ", input.shape(), " and output size ",
                      out_size[static_cast<size_t>(d)], " for spatial dim ", d);
    }
    NORMNET_CHECK(input.size(1) > 0, "interpolate: Non-empty data tensor expected but got a tensor with sizes ",
                  input.shape());

    if (mode == "nearest") {
        std::vector<std::vector<int64_t>> maps = {detail::identity_map(input.size(0)), detail::identity_map(input.size(1))};
        for (int d = 0; d < spatial; ++d) {
            const auto k = static_cast<size_t>(d);
            maps.push_back(detail::nearest_map(input.size(d + 2), out_size[k], scales[k]));
        }
        const char* node = spatial == 1 ? "UpsampleNearest1DBackward0"
                           : spatial == 2 ? "UpsampleNearest2DBackward0"
                                          : "UpsampleNearest3DBackward0";
        return detail::remap(input, std::move(maps), 0.0f, node);
    }
    const bool align = o.align_corners.value_or(false);
    detail::Linear2 g;
    g.W = input.size(-1), g.OW = out_size.back();
    g.w = detail::linear_taps(g.W, g.OW, align, scales.back());
    if (spatial == 2) {
        g.H = input.size(2), g.OH = out_size[0];
        g.h = detail::linear_taps(g.H, g.OH, align, scales[0]);
    } else {
        g.h = detail::linear_taps(1, 1, align, std::nullopt);
    }
    g.planes = input.size(0) * input.size(1);
    const Tensor x = input.contiguous();
    Shape shape = x.shape();
    for (int d = 0; d < spatial; ++d) shape[d + 2] = out_size[static_cast<size_t>(d)];
    Tensor y = empty(shape);
    detail::parallel_for(g.planes, detail::item_grain(g.OH * g.OW), [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p) detail::linear_forward(y.data() + p * g.OH * g.OW, x.data() + p * g.H * g.W, g);
    });
    if (auto* node = detail::record<detail::UpsampleLinearBackward>(y, {x})) {
        node->g = std::move(g);
        node->node_name = spatial == 1 ? "UpsampleLinear1DBackward0" : "UpsampleBilinear2DBackward0";
    }
    return y;
}

}  // namespace normnet
