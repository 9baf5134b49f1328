// Reductions: sum and mean over all elements or over a set of dimensions (keepdim as PyTorch),
// and sum_to for the backward of broadcasting. One kernel reduces a block of dimensions,
// [outer, R, inner] -> [outer, inner]; several reduced blocks are done innermost first. Rows
// (inner = 1) accumulate in double; columns accumulate in float across rows, vectorised.
#include "reduce.hpp"

#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

#include "loop.hpp"
#include "normnet/ops.hpp"

namespace normnet {
namespace detail {
namespace {

// out: [outer] (Store) = scale * sum over r of in: [outer, R]
template <class Store>
void reduce_rows(float* out, const float* in, int64_t outer, int64_t R, double scale) {
    if (outer == 1 && R > kElementGrain) {
        // One long row: per-chunk partial sums, combined in chunk order.
        std::array<double, 256> partial{};
        const int chunks = std::min(pool_threads(), 256);
        partial.fill(0.0);
        parallel_for_chunks(R, std::max<int64_t>(kElementGrain, R / chunks + 1), [&](int c, int64_t b, int64_t e) {
            double s = 0.0;
#pragma omp simd reduction(+ : s)
            for (int64_t r = b; r < e; ++r) s += in[r];
            partial[static_cast<size_t>(c)] = s;
        });
        double s = 0.0;
        for (int c = 0; c < chunks; ++c) s += partial[static_cast<size_t>(c)];
        Store::put(out[0], static_cast<float>(s * scale));
        return;
    }
    parallel_for(outer, std::max<int64_t>(1, kElementGrain / std::max<int64_t>(R, 1)), [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
            const float* row = in + o * R;
            double s = 0.0;
#pragma omp simd reduction(+ : s)
            for (int64_t r = 0; r < R; ++r) s += row[r];
            Store::put(out[o], static_cast<float>(s * scale));
        }
    });
}

// acc: [n] (Store) = sum over r of in[r * stride + i]
template <class Store>
void sum_columns(float* __restrict acc, const float* __restrict in, int64_t R, int64_t stride, int64_t n) {
    int64_t r = 0;
    if constexpr (std::is_same_v<Store, Overwrite>) {
        if (R == 0) {
            std::fill_n(acc, n, 0.0f);
            return;
        }
        for (int64_t i = 0; i < n; ++i) acc[i] = in[i];
        r = 1;
    }
    for (; r < R; ++r) {
        const float* row = in + r * stride;
        for (int64_t i = 0; i < n; ++i) acc[i] += row[i];
    }
}

// out: [outer, inner] (Store) = scale * sum over r of in: [outer, R, inner]
template <class Store>
void reduce_columns(float* out, const float* in, int64_t outer, int64_t R, int64_t inner, double scale) {
    const auto block = [&](float* o, const float* src, int64_t n) {
        if (scale == 1.0) {
            sum_columns<Store>(o, src, R, inner, n);
            return;
        }
        // Scaled (mean): sum into a scratch row, then store scale * sum.
        const Tensor tmp = empty({n});
        float* t = tmp.data();
        sum_columns<Overwrite>(t, src, R, inner, n);
        for (int64_t i = 0; i < n; ++i) Store::put(o[i], static_cast<float>(t[i] * scale));
    };
    if (outer > 1) {
        parallel_for(outer, std::max<int64_t>(1, kElementGrain / std::max<int64_t>(R * inner, 1)),
                     [&](int64_t b, int64_t e) {
                         for (int64_t o = b; o < e; ++o) block(out + o * inner, in + o * R * inner, inner);
                     });
    } else {
        parallel_for(inner, std::max<int64_t>(16, kElementGrain / std::max<int64_t>(R, 1)),
                     [&](int64_t b, int64_t e) { block(out + b, in + b, e - b); }, 16);
    }
}

// One reduced or kept run of neighbouring dimensions.
struct Block {
    int64_t size;
    bool reduced;
};

// The runs of neighbouring dimensions, held inline (a reduction allocates nothing but its output).
struct Blocks {
    std::array<Block, kMaxDims> at{};
    int n = 0;
    void erase(int i) {
        for (int k = i; k + 1 < n; ++k) at[static_cast<size_t>(k)] = at[static_cast<size_t>(k + 1)];
        --n;
    }
};

// The runs of `shape` under `mask` (bit d: dimension d is reduced); size-1 dimensions are dropped.
Blocks blocks_of(const Shape& shape, uint32_t mask) {
    Blocks blocks;
    for (int d = 0; d < shape.size(); ++d) {
        if (shape[d] == 1) continue;
        const bool reduced = (mask >> d) & 1u;
        if (blocks.n > 0 && blocks.at[static_cast<size_t>(blocks.n - 1)].reduced == reduced) {
            blocks.at[static_cast<size_t>(blocks.n - 1)].size *= shape[d];
        } else {
            blocks.at[static_cast<size_t>(blocks.n++)] = {shape[d], reduced};
        }
    }
    return blocks;
}

// out (Store) = scale * src (contiguous) summed over the dimensions in mask.
template <class Store>
void sum_dims(float* out, const Tensor& src, uint32_t mask, double scale) {
    Blocks blocks = blocks_of(src.shape(), mask);
    Tensor current = src;
    for (;;) {
        int j = -1;  // the innermost reduced block
        int reduced_blocks = 0;
        for (int i = 0; i < blocks.n; ++i) {
            if (blocks.at[static_cast<size_t>(i)].reduced) j = i, ++reduced_blocks;
        }
        int64_t outer = 1, inner = 1;
        for (int i = 0; i < j; ++i) outer *= blocks.at[static_cast<size_t>(i)].size;
        for (int i = j + 1; i < blocks.n; ++i) inner *= blocks.at[static_cast<size_t>(i)].size;
        const int64_t R = j < 0 ? 1 : blocks.at[static_cast<size_t>(j)].size;
        if (current.numel() == 0 && R != 0) return;  // an empty output
        const bool last = reduced_blocks <= 1;
        Tensor next = last ? Tensor() : empty({outer * inner});
        float* dst = last ? out : next.data();
        const double s = last ? scale : 1.0;
        const auto reduce = [&]<class S>() {
            if (inner == 1) {
                reduce_rows<S>(dst, current.data(), outer, R, s);
            } else {
                reduce_columns<S>(dst, current.data(), outer, R, inner, s);
            }
        };
        if (last) {
            reduce.template operator()<Store>();
            return;
        }
        reduce.template operator()<Overwrite>();
        // The reduced block is gone; its neighbours, both kept, merge.
        blocks.erase(j);
        if (j > 0 && j < blocks.n) {
            blocks.at[static_cast<size_t>(j - 1)].size *= blocks.at[static_cast<size_t>(j)].size;
            blocks.erase(j);
        }
        current = next;
    }
}

// Bit d set for each dimension in dims (negative counts from the end); all dimensions when
// dims is empty, as torch.sum(x, dim=[]).
uint32_t dim_mask(const Shape& dims, int ndim, const char* op) {
    if (dims.empty()) return ndim == 0 ? 0u : (ndim >= 32 ? ~0u : (1u << ndim) - 1u);
    uint32_t mask = 0;
    for (int64_t d : dims) {
        const int64_t n = std::max(ndim, 1);
        NORMNET_CHECK(d >= -n && d < n, op, ": dimension ", d, " out of range for a tensor of ", ndim, " dimensions");
        const int w = static_cast<int>(d < 0 ? d + n : d);
        NORMNET_CHECK(!((mask >> w) & 1u), op, ": dim ", w, " appears multiple times in the list of dims");
        mask |= 1u << w;
    }
    return ndim == 0 ? 0u : mask;
}

// The result's shape: reduced dimensions kept as 1, or dropped.
Shape reduced_shape(const Shape& shape, uint32_t mask, bool keepdim) {
    Shape out;
    for (int d = 0; d < shape.size(); ++d) {
        if (!((mask >> d) & 1u)) {
            out.push_back(shape[d]);
        } else if (keepdim) {
            out.push_back(1);
        }
    }
    return out;
}

// dx: [x shape] (Store) = scale * dy read as the keepdim shape, repeated over the reduced dims.
template <class Store>
void expand_run(const std::tuple<float*, const float*>& p, const std::array<int64_t, 2>& s, int64_t n, float scale) {
    const auto [dx, dy] = p;
    for (int64_t i = 0; i < n; ++i) Store::put(dx[i * s[0]], dy[i * s[1]] * scale);
}

class SumBackward final : public OpNode {
public:
    Shape keep_shape;  // the output's shape with the reduced dimensions kept as 1
    float scale = 1.0f;  // 1 for sum, 1 / count for mean
    bool mean = false, all = false;
    const char* name() const override {
        return mean ? (all ? "MeanBackward0" : "MeanBackward1") : (all ? "SumBackward0" : "SumBackward1");
    }
    void backward(const Tensor& dy_in) override {
        const GradOut dx = grad_out(0);
        if (!dx) return;
        const Shape& shape = in_shape;
        const Tensor dy = dy_in.view(keep_shape);
        dx.write([&]<class Store>(float* d) {
            const StridedLoop<2> loop(shape, {contiguous_strides(shape), broadcast_strides(dy, shape)});
            const float sc = scale;
            loop.run(std::tuple<float*, const float*>{d, dy.data()},
                     [sc](const std::tuple<float*, const float*>& p, const std::array<int64_t, 2>& s, int64_t n) {
                         expand_run<Store>(p, s, n, sc);
                     });
        });
    }
    Shape in_shape;
};

Tensor reduce(const Tensor& x_in, const Shape& dims, bool keepdim, bool mean, bool all, const char* op) {
    NORMNET_CHECK(x_in.dtype() == kFloat32, op, ": expected a float32 tensor, got ", x_in.dtype());
    const Tensor x = x_in.contiguous();
    const uint32_t mask = dim_mask(dims, x.dim(), op);
    int64_t count = 1;
    for (int d = 0; d < x.dim(); ++d) {
        if ((mask >> d) & 1u) count *= x.shape()[d];
    }
    const double scale = mean ? 1.0 / static_cast<double>(count) : 1.0;  // inf for an empty mean: nan below
    Tensor out = empty(reduced_shape(x.shape(), mask, keepdim));
    if (mean && count == 0) {
        out.fill_(std::numeric_limits<float>::quiet_NaN());  // as torch: the mean of nothing is nan
    } else {
        sum_dims<Overwrite>(out.data(), x, mask, scale);
    }
    if (auto* node = record<SumBackward>(out, {x})) {
        node->keep_shape = reduced_shape(x.shape(), mask, true);
        node->in_shape = x.shape();
        node->scale = static_cast<float>(scale);
        node->mean = mean;
        node->all = all;
    }
    return out;
}

}  // namespace

void sum_to(const GradOut& dst, const Tensor& src, const Shape& shape) {
    // Leading dimensions src has beyond `shape` are reduced, and so are those where shape has 1.
    const int lead = src.dim() - shape.size();
    uint32_t mask = 0;
    for (int d = 0; d < src.dim(); ++d) {
        if (d < lead || (shape[d - lead] == 1 && src.shape()[d] != 1)) mask |= 1u << d;
    }
    dst.write([&]<class Store>(float* d) { sum_dims<Store>(d, src, mask, 1.0); });
}

}  // namespace detail

Tensor sum(const Tensor& x) { return detail::reduce(x, {}, false, false, true, "sum"); }
Tensor mean(const Tensor& x) { return detail::reduce(x, {}, false, true, true, "mean"); }
Tensor sum(const Tensor& x, const Dims& dims, bool keepdim) { return detail::reduce(x, dims, keepdim, false, false, "sum"); }
Tensor mean(const Tensor& x, const Dims& dims, bool keepdim) {
    return detail::reduce(x, dims, keepdim, true, false, "mean");
}

}  // namespace normnet
