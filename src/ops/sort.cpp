// topk: the k largest (or smallest) elements along a dimension, with their int64 indices. NaN
// counts as the largest value, as torch; ties go to the lower index. Results are always sorted
// (torch's sorted=false only allows any order). sort and argsort are topk of every element: the
// order is total (ties by index), so every sort is stable.
#include <algorithm>
#include <tuple>

#include "normnet/ops.hpp"
#include "reduce.hpp"

namespace normnet {
namespace detail {
namespace {

// Orders positions of one slice: the k first are the result.
struct TopkOrder {
    const float* v;
    bool largest;
    bool operator()(int64_t a, int64_t b) const {
        const float x = v[a], y = v[b];
        const bool xn = x != x, yn = y != y;
        if (xn != yn) return largest ? xn : yn;  // NaN is the largest
        if (!xn && x != y) return largest ? x > y : x < y;
        return a < b;
    }
};

// values, indices: [outer, k, inner] = the top k of x: [outer, R, inner] along R; scratch holds
// R floats and R indices per chunk.
void topk_forward(float* values, int64_t* indices, const float* x, int64_t outer, int64_t R, int64_t inner, int64_t k,
                  bool largest, float* scratch_v, int64_t* scratch_i) {
    parallel_for_chunks(outer * inner, item_grain(R),
                        [&](int c, int64_t b, int64_t e) {
                            float* v = scratch_v + c * R;
                            int64_t* order = scratch_i + c * R;
                            for (int64_t q = b; q < e; ++q) {
                                const int64_t o = q / inner, i = q % inner;
                                const float* src = x + o * R * inner + i;
                                for (int64_t r = 0; r < R; ++r) v[r] = src[r * inner], order[r] = r;
                                if (k == R) {
                                    std::sort(order, order + R, TopkOrder{v, largest});
                                } else {
                                    std::partial_sort(order, order + k, order + R, TopkOrder{v, largest});
                                }
                                for (int64_t j = 0; j < k; ++j) {
                                    values[(o * k + j) * inner + i] = v[order[j]];
                                    indices[(o * k + j) * inner + i] = order[j];
                                }
                            }
                        });
}

class TopkBackward final : public ReduceNode {
public:
    int64_t k = 0;
    const char* name() const override { return "TopkBackward0"; }
    void backward(const Tensor& dy) override {
        // dy goes to the selected elements (distinct within a slice); the others get 0.
        const Tensor dx = grad_to_add(0);
        if (!dx.defined()) return;
        const int64_t* index = saved(0).data_ptr<int64_t>();
        const float* g = dy.data();
        float* d = dx.data();
        parallel_for(outer * k, item_grain(inner), [&](int64_t b, int64_t e) {
            for (int64_t q = b; q < e; ++q) {
                const int64_t o = q / std::max<int64_t>(k, 1);
                for (int64_t i = 0; i < inner; ++i) d[(o * R + index[q * inner + i]) * inner + i] += g[q * inner + i];
            }
        });
    }
};

}  // namespace
}  // namespace detail

std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool /*sorted*/) {
    NORMNET_CHECK(x.dtype() == kFloat32, "topk: expected a float32 tensor, got ", x.dtype());
    const detail::Grouped g = detail::group_dims(x, detail::one_dim_mask(dim, x.dim(), "topk"), true);
    NORMNET_CHECK(k >= 0 && k <= g.R, "topk: k (", k, ") is out of range for dimension ", dim, " of size ", g.R,
                  " (shape ", x.shape(), ")");
    Shape shape = x.shape();
    if (x.dim() > 0) shape[static_cast<int>(dim < 0 ? dim + x.dim() : dim)] = k;
    // A 0-d result holds one value whatever k: x's top 0 or 1 is x itself (as torch).
    if (x.dim() == 0) k = 1;
    Tensor values = empty(shape), indices = empty(shape, kInt64);
    const int64_t chunks = detail::pool_threads();
    const Tensor scratch_v = empty({chunks * g.R}), scratch_i = empty({chunks * g.R}, kInt64);
    if (k > 0) {
        detail::topk_forward(values.data(), indices.data_ptr<int64_t>(), g.x.data(), g.outer, g.R, g.inner, k, largest,
                             scratch_v.data(), scratch_i.data_ptr<int64_t>());
    }
    if (auto* node = detail::record<detail::TopkBackward>(values, {g.x}, {indices})) {
        node->set_layout(g), node->k = k;
    }
    return {values, indices};
}

std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
    return normnet::topk(*this, k, dim, largest, sorted);
}

std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending) {
    NORMNET_CHECK(x.dtype() == kFloat32, "sort: expected a float32 tensor, got ", x.dtype());
    const int nd = std::max(x.dim(), 1);
    NORMNET_CHECK(dim >= -nd && dim < nd, "sort: dimension ", dim, " out of range (expected to be in range of [", -nd,
                  ", ", nd - 1, "]) for a tensor of shape ", x.shape());
    const int64_t n = x.dim() == 0 ? 1 : x.size(static_cast<int>(dim < 0 ? dim + nd : dim));
    return topk(x, n, dim, descending);
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending) { return std::get<1>(sort(x, dim, descending)); }

std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending) const {
    return normnet::sort(*this, dim, descending);
}
Tensor Tensor::argsort(int64_t dim, bool descending) const { return normnet::argsort(*this, dim, descending); }

}  // namespace normnet
