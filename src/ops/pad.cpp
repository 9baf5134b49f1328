// Copies that read each output element from one input element chosen per dimension: pad (the
// constant, reflect and replicate modes of torch.nn.functional.pad), flip, and (through
// remap.hpp) nearest-neighbour upsampling. Every output
// dimension d has a map from its indices to an index of the input's dimension d, or -1 for "the
// constant value"; out[i0, ..., in] = x[map0[i0], ..., mapn[in]]. The backward adds each output
// gradient into the input element it came from (reflect and replicate read some elements several
// times). The maps are tiny (one entry per output index of each dimension), kept by the node.
#include <algorithm>
#include <numeric>
#include <string_view>
#include <vector>

#include "loop.hpp"
#include "normnet/ops.hpp"
#include "op.hpp"
#include "remap.hpp"

namespace normnet {
namespace detail {
namespace {

using Maps = std::vector<std::vector<int64_t>>;

// The sizes of a remap: the output's shape is the maps' lengths; rows are all but the last dim.
struct Remap {
    Shape in_shape, out_shape;
    Maps maps;
    int64_t rows() const { return out_shape.size() == 0 ? 1 : out_shape.numel() / std::max<int64_t>(row(), 1); }
    int64_t row() const { return out_shape.size() == 0 ? 1 : out_shape[out_shape.size() - 1]; }
    // The input offset of output row r's source row, or -1 when a dimension maps it to the value.
    int64_t source_row(int64_t r, const Shape& in_strides) const {
        int64_t offset = 0;
        for (int d = out_shape.size() - 2; d >= 0; --d) {
            const int64_t i = maps[static_cast<size_t>(d)][static_cast<size_t>(r % out_shape[d])];
            r /= out_shape[d];
            if (i < 0) return -1;
            offset += i * in_strides[d];
        }
        return offset;
    }
};

// y: [rows, row] = x at the maps (value where a map says -1); x contiguous of the input's shape
void remap_forward(float* __restrict y, const float* __restrict x, const Remap& m, float value) {
    const Shape strides = contiguous_strides(m.in_shape);
    const int64_t n = m.row();
    const int64_t* last = m.out_shape.size() == 0 ? nullptr : m.maps.back().data();
    parallel_for(m.rows(), item_grain(n), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
            float* yr = y + r * n;
            const int64_t at = m.source_row(r, strides);
            if (at < 0) {
                std::fill(yr, yr + n, value);
                continue;
            }
            const float* xr = x + at;
            if (last == nullptr) {
                yr[0] = xr[0];
                continue;
            }
            for (int64_t j = 0; j < n; ++j) yr[j] = last[j] < 0 ? value : xr[last[j]];
        }
    });
}

// dx: [input] += dy: [rows, row] added back at the maps; dx zero-filled or holding gradient.
// Output rows that read the same input row are added by one thread: the rows are split between
// threads by the first dimension only when its map reads no input index twice.
void remap_backward(float* __restrict dx, const float* __restrict dy, const Remap& m) {
    const Shape strides = contiguous_strides(m.in_shape);
    const int64_t n = m.row();
    const int64_t* last = m.out_shape.size() == 0 ? nullptr : m.maps.back().data();
    const auto rows = [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
            const int64_t at = m.source_row(r, strides);
            if (at < 0) continue;
            const float* g = dy + r * n;
            float* d = dx + at;
            if (last == nullptr) {
                d[0] += g[0];
                continue;
            }
            for (int64_t j = 0; j < n; ++j) {
                if (last[j] >= 0) d[last[j]] += g[j];
            }
        }
    };
    bool split = m.out_shape.size() >= 2;
    if (split) {
        std::vector<int64_t> first = m.maps[0];
        std::sort(first.begin(), first.end());
        split = std::adjacent_find(first.begin(), first.end()) == first.end();
    }
    if (!split) return rows(0, m.rows());
    const int64_t per = m.rows() / std::max<int64_t>(m.out_shape[0], 1);  // rows per index of dim 0
    parallel_for(m.out_shape[0], item_grain(per * n), [&](int64_t b, int64_t e) { rows(b * per, e * per); });
}

class RemapBackward final : public OpNode {
public:
    Remap m;
    const char* node_name = "";
    const char* name() const override { return node_name; }
    void backward(const Tensor& dy) override {
        const Tensor dx = grad_to_add(0);
        if (dx.defined() && dy.numel() > 0) remap_backward(dx.data(), dy.data(), m);
    }
};

}  // namespace

Tensor remap(const Tensor& x_in, Maps maps, float value, const char* node_name) {
    Remap m;
    m.maps = std::move(maps);
    m.in_shape = x_in.shape();
    std::vector<int64_t> sizes;
    for (const auto& map : m.maps) sizes.push_back(static_cast<int64_t>(map.size()));
    m.out_shape = Shape(sizes);
    const Tensor x = x_in.contiguous();
    Tensor y = empty(m.out_shape);
    if (y.numel() > 0) remap_forward(y.data(), x.data(), m, value);
    if (auto* node = record<RemapBackward>(y, {x})) node->m = std::move(m), node->node_name = node_name;
    return y;
}

std::vector<int64_t> identity_map(int64_t size) {
    std::vector<int64_t> map(static_cast<size_t>(size));
    std::iota(map.begin(), map.end(), int64_t{0});
    return map;
}

namespace {

// The map of one padded dimension: output index j reads input index u = j - left, folded back by
// the mode (reflect: -u, 2 (size - 1) - u; replicate: the nearest edge; constant: -1 outside).
std::vector<int64_t> pad_map(int64_t size, int64_t left, int64_t right, std::string_view mode) {
    std::vector<int64_t> map(static_cast<size_t>(size + left + right));
    for (size_t j = 0; j < map.size(); ++j) {
        int64_t u = static_cast<int64_t>(j) - left;
        if (mode == "reflect") {
            u = u < 0 ? -u : u >= size ? 2 * (size - 1) - u : u;
        } else if (mode == "replicate") {
            u = std::clamp<int64_t>(u, 0, size - 1);
        } else if (u < 0 || u >= size) {
            u = -1;
        }
        map[j] = u;
    }
    return map;
}

}  // namespace
}  // namespace detail

Tensor pad(const Tensor& x, const std::vector<int64_t>& padding, std::string_view mode, double value) {
    NORMNET_CHECK(x.dtype() == kFloat32, "pad: expected a float32 tensor, got ", x.dtype());
    NORMNET_CHECK(mode == "constant" || mode == "reflect" || mode == "replicate",
                  "pad: mode must be 'constant', 'reflect' or 'replicate', got '", mode, "'");
    NORMNET_CHECK(padding.size() % 2 == 0, "pad: Padding length must be divisible by 2, got ", padding.size(),
                  " values");
    const int nd = x.dim();
    const int padded = static_cast<int>(padding.size() / 2);  // the last `padded` dims
    NORMNET_CHECK(padded <= nd, "pad: Padding length (", padding.size(), ") too large for an input of shape ",
                  x.shape());
    if (mode != "constant") {
        NORMNET_CHECK(value == 0.0, "pad: mode '", mode, "' does not take a value (got ", value, ")");
        // torch's rule: 1, 2 or 3 padded dims, after one leading (channel) dim or two (batch, channel).
        NORMNET_CHECK(padded >= 1 && padded <= 3 && (nd == padded + 1 || nd == padded + 2), "pad: ", mode,
                      " padding of ", padded, " dimension(s) takes a ", padded + 1, "-D or ", padded + 2,
                      "-D input, got ", x.shape());
        // Reflect allows an empty leading dim; replicate an empty batch only.
        const int first = mode == "reflect" || nd == padded + 2 ? 1 : 0;
        for (int d = first; d < nd; ++d) {
            NORMNET_CHECK(x.size(d) > 0, "pad: ", mode, " padding expects non-empty dimensions after the batch, got ",
                          x.shape());
        }
    }
    detail::Maps maps;
    for (int d = 0; d < nd; ++d) {
        const int k = nd - 1 - d;  // padding[2k], padding[2k + 1] pad dimension d
        if (k >= padded) {
            maps.push_back(detail::identity_map(x.size(d)));
            continue;
        }
        const int64_t size = x.size(d), left = padding[static_cast<size_t>(2 * k)],
                      right = padding[static_cast<size_t>(2 * k + 1)];
        const int64_t out = size + left + right;
        if (mode == "constant") {
            NORMNET_CHECK(out >= 0, "pad: padding (", left, ", ", right, ") of dimension ", d, " of size ", size,
                          " leaves a negative size");
        } else {
            if (mode == "reflect") {
                NORMNET_CHECK(left < size && right < size, "pad: Padding size should be less than the corresponding "
                              "input dimension, but got: padding (", left, ", ", right, ") at dimension ", d,
                              " of input ", x.shape());
            }
            NORMNET_CHECK(out >= 1, "pad: input (", size, ") of dimension ", d, " is too small for padding (", left,
                          ", ", right, "): calculated output size ", out);
        }
        maps.push_back(detail::pad_map(size, left, right, mode));
    }
    const char* node = mode == "constant" ? "ConstantPadNdBackward0"
                       : mode == "reflect" ? "ReflectionPadBackward0"
                                           : "ReplicationPadBackward0";
    return detail::remap(x, std::move(maps), static_cast<float>(value), node);
}

Tensor pad(const Tensor& x, const PadFuncOptions& options) {
    return pad(x, options.pad, options.mode, options.value);
}

Tensor flip(const Tensor& x, const Dims& dims) {
    NORMNET_CHECK(x.dtype() == kFloat32, "flip: expected a float32 tensor, got ", x.dtype());
    const int nd = std::max(x.dim(), 1);
    std::vector<bool> flipped(static_cast<size_t>(nd), false);
    for (const int64_t d : dims) {
        NORMNET_CHECK(d >= -nd && d < nd, "flip: dimension ", d, " out of range (expected to be in range of [", -nd,
                      ", ", nd - 1, "]) for a tensor of shape ", x.shape());
        const auto k = static_cast<size_t>(d < 0 ? d + nd : d);
        NORMNET_CHECK(!flipped[k], "flip: dim ", k, " appears multiple times in the list of dims");
        flipped[k] = true;
    }
    detail::Maps maps;
    for (int d = 0; d < x.dim(); ++d) {
        std::vector<int64_t> map = detail::identity_map(x.size(d));
        if (flipped[static_cast<size_t>(d)]) std::reverse(map.begin(), map.end());
        maps.push_back(std::move(map));
    }
    return detail::remap(x, std::move(maps), 0.0f, "FlipBackward0");
}

Tensor Tensor::flip(const Dims& dims) const { return normnet::flip(*this, dims); }

}  // namespace normnet
