// The max/min family: amax and amin over any dims, the full max() and min(), max(dim) and
// min(dim) with their int64 indices, argmax and argmin. NaN counts as larger than everything
// (as torch: a NaN anywhere is the max, and the min); ties go to the first index. Gradients
// follow torch: amax, amin and the full max/min share dy evenly between tied elements;
// max(dim)/min(dim) send it to the element their index names. Integer and bool tensors (labels,
// indices, masks) take a plain loop of their own and no gradient; argmax and argmin refuse bool,
// as torch does.
#include <cmath>
#include <limits>
#include <tuple>

#include "normnet/ops.hpp"
#include "reduce.hpp"

namespace normnet {
namespace detail {
namespace {

// A reduction to the largest (kMax) or smallest value and its position; fin(value, index, out).
template <bool kMax, class Fin>
struct ArgOp {
    Fin fin;
    struct Acc {
        std::array<float, kLanes> v;
        std::array<int64_t, kLanes> i;
    };
    // Whether (b at ib) beats (a at ia): NaN first, then the larger (smaller) value, then the lower index.
    static bool better(float b, int64_t ib, float a, int64_t ia) {
        const bool bnan = b != b, anan = a != a;
        return (bnan & (!anan | (ib < ia))) | (!bnan & !anan & ((kMax ? b > a : b < a) | ((b == a) & (ib < ia))));
    }
    void init(Acc& a) const {
        a.v.fill(kMax ? -INFINITY : INFINITY);
        a.i.fill(std::numeric_limits<int64_t>::max());  // loses every tie: any element beats it
    }
    void step(Acc& a, const Block& b) const {
        float* __restrict v = a.v.data();
        int64_t* __restrict idx = a.i.data();
        for (int64_t r = 0; r < b.rows; ++r) {
            const float* __restrict row = b.x + r * b.stride;
            const int64_t at = b.idx0 + r * b.idx_row;
            for (int j = 0; j < b.n; ++j) {
                const int64_t k = at + j * b.idx_lane;
                const bool take = better(row[j], k, v[j], idx[j]);
                v[j] = take ? row[j] : v[j];
                idx[j] = take ? k : idx[j];
            }
        }
    }
    void merge(Acc& a, int ja, const Acc& b, int jb) const {
        const auto sa = static_cast<size_t>(ja), sb = static_cast<size_t>(jb);
        if (better(b.v[sb], b.i[sb], a.v[sa], a.i[sa])) a.v[sa] = b.v[sb], a.i[sa] = b.i[sb];
    }
    void finish(const Acc& a, int j, int64_t out) const { fin(a.v[static_cast<size_t>(j)], a.i[static_cast<size_t>(j)], out); }
};

template <bool kMax, class Fin>
ArgOp<kMax, Fin> arg_op(Fin fin) {
    return {fin};
}

// The extreme of each [R] slice of x: [outer, R, inner] (R > 0) into values (when wanted) and its
// first index into indices (when wanted), for integer and bool inputs.
template <bool kMax, class T>
void select_integers(T* values, int64_t* indices, const T* x, int64_t outer, int64_t R, int64_t inner) {
    for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
            const T* slice = x + o * R * inner + i;
            int64_t best = 0;
            for (int64_t r = 1; r < R; ++r) {
                const T v = slice[r * inner], b = slice[best * inner];
                if (kMax ? v > b : v < b) best = r;
            }
            if (values) values[o * inner + i] = slice[best * inner];
            if (indices) indices[o * inner + i] = best;
        }
    }
}

// Values (when wanted) and indices (when wanted) of g's extremes, for integer and bool inputs.
template <bool kMax>
std::tuple<Tensor, Tensor> integer_extreme(const Grouped& g, bool want_values, bool want_indices) {
    const Dtype dtype = g.x.dtype();
    Tensor values = want_values ? empty(g.out_shape, dtype) : Tensor();
    Tensor indices = want_indices ? empty(g.out_shape, kInt64) : Tensor();
    visit_dtype(dtype, [&](auto type) {
        using T = decltype(type);
        select_integers<kMax>(want_values ? values.data_ptr<T>() : nullptr,
                              want_indices ? indices.data_ptr<int64_t>() : nullptr, g.x.data_ptr<T>(), g.outer, g.R,
                              g.inner);
    });
    return {values, indices};
}

// Reducing over nothing has no answer: torch's error for an empty reduced dimension.
void check_nonempty(const Grouped& g, const Tensor& x, uint32_t mask, bool all, const char* op) {
    if (g.R != 0) return;
    NORMNET_CHECK(!all, op, "(): Expected reduction dim to be specified for input.numel() == 0 (shape ", x.shape(), ")");
    for (int d = 0; d < x.dim(); ++d) {
        NORMNET_CHECK(!(((mask >> d) & 1u) && x.shape()[d] == 0), op, "(): Expected reduction dim ", d,
                      " to have non-zero size (shape ", x.shape(), ")");
    }
}

// ---- amax, amin, max(), min() ------------------------------------------------------------------

class ExtremeBackward final : public ReduceNode {
public:
    const char* backward_name = "";
    const char* name() const override { return backward_name; }
    void backward(const Tensor& dy) override {
        const GradOut dx = grad_out(0);
        if (!dx) return;
        const float* x = saved(0).data();
        const float* y = saved(1).data();
        const float* g = dy.data();
        // dy is shared evenly by the elements equal to the result (NaN matching NaN).
        const auto tied = [](float v, float m) { return v == m || (v != v && m != m); };
        const Tensor count = empty({outer * inner});
        float* c = count.data();
        reduce_lanes(SumOp{[tied](float v, float m) { return tied(v, m) ? 1.0 : 0.0; },
                           [c](double s, int64_t i) { c[i] = static_cast<float>(s); }, y},
                     x, outer, R, inner);
        dx.write([&]<class Store>(float* d) {
            map_reduced<Store>(d, x, outer, R, inner,
                               [=](float v, int64_t o, int64_t) { return tied(v, y[o]) ? g[o] / c[o] : 0.0f; });
        });
    }
};

template <bool kMax>
Tensor extreme(const Tensor& x, const Dims& dims, bool keepdim, bool all, const char* op, const char* backward_name) {
    const uint32_t mask = dim_mask(dims, x.dim(), op);
    const Grouped g = group_dims(x, mask, keepdim);
    check_nonempty(g, x, mask, all, op);
    if (x.dtype() != kFloat32) return std::get<0>(integer_extreme<kMax>(g, true, false));
    Tensor out = empty(g.out_shape);
    float* o = out.data();
    reduce_lanes(extreme_op<kMax>([](float v) { return v; }, [o](float v, int64_t i) { o[i] = v; }), g.x.data(), g.outer,
                 g.R, g.inner);
    if (auto* node = record<ExtremeBackward>(out, {g.x}, {g.x, out})) {
        node->set_layout(g), node->backward_name = backward_name;
    }
    return out;
}

// ---- max(dim), min(dim), argmax, argmin ----------------------------------------------------------

class SelectedBackward final : public ReduceNode {
public:
    bool is_max = true;
    const char* name() const override { return is_max ? "MaxBackward0" : "MinBackward0"; }
    void backward(const Tensor& dy) override {
        const GradOut dx = grad_out(0);
        if (!dx) return;
        const int64_t* index = saved(1).data_ptr<int64_t>();
        const float* g = dy.data();
        dx.write([&]<class Store>(float* d) {
            map_reduced<Store>(d, saved(0).data(), outer, R, inner,
                               [=](float, int64_t o, int64_t r) { return r == index[o] ? g[o] : 0.0f; });
        });
    }
};

// Values (when wanted) and int64 indices of the largest (kMax) or smallest elements over mask.
template <bool kMax>
std::tuple<Tensor, Tensor> select_extreme(const Tensor& x, uint32_t mask, bool keepdim, bool all, bool want_values,
                                          const char* op) {
    const Grouped g = group_dims(x, mask, keepdim);
    check_nonempty(g, x, mask, all, op);
    if (x.dtype() != kFloat32) return integer_extreme<kMax>(g, want_values, true);
    Tensor values = want_values ? empty(g.out_shape) : Tensor(), indices = empty(g.out_shape, kInt64);
    float* v = want_values ? values.data() : nullptr;
    int64_t* i = indices.data_ptr<int64_t>();
    reduce_lanes(arg_op<kMax>([v, i](float value, int64_t index, int64_t out) {
                     if (v) v[out] = value;
                     i[out] = index;
                 }),
                 g.x.data(), g.outer, g.R, g.inner);
    if (want_values) {
        if (auto* node = record<SelectedBackward>(values, {g.x}, {g.x, indices})) {
            node->set_layout(g), node->is_max = kMax;
        }
    }
    return {values, indices};
}

template <bool kMax>
Tensor arg_extreme(const Tensor& x, std::optional<int64_t> dim, bool keepdim, const char* op) {
    // Refused as torch refuses it: only when there is an element to compare.
    NORMNET_CHECK(x.dtype() != kBool || x.numel() == 0, op,
                  ": not implemented for bool tensors, as in torch (convert with to(kInt64))");
    // No dim: the index into the flattened tensor, shaped all ones with keepdim (as torch).
    if (!dim) return std::get<1>(select_extreme<kMax>(x, dim_mask({}, x.dim(), op), keepdim, true, false, op));
    return std::get<1>(select_extreme<kMax>(x, one_dim_mask(*dim, x.dim(), op), keepdim, false, false, op));
}

}  // namespace
}  // namespace detail

Tensor amax(const Tensor& x, const Dims& dims, bool keepdim) {
    return detail::extreme<true>(x, dims, keepdim, dims.empty(), "amax", "AmaxBackward0");
}
Tensor amin(const Tensor& x, const Dims& dims, bool keepdim) {
    return detail::extreme<false>(x, dims, keepdim, dims.empty(), "amin", "AminBackward0");
}
Tensor max(const Tensor& x) { return detail::extreme<true>(x, {}, false, true, "max", "MaxBackward1"); }
Tensor min(const Tensor& x) { return detail::extreme<false>(x, {}, false, true, "min", "MinBackward1"); }

std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
    return detail::select_extreme<true>(x, detail::one_dim_mask(dim, x.dim(), "max"), keepdim, false, true, "max");
}
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
    return detail::select_extreme<false>(x, detail::one_dim_mask(dim, x.dim(), "min"), keepdim, false, true, "min");
}
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
    return detail::arg_extreme<true>(x, dim, keepdim, "argmax");
}
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
    return detail::arg_extreme<false>(x, dim, keepdim, "argmin");
}

Tensor Tensor::amax(const Dims& dims, bool keepdim) const { return normnet::amax(*this, dims, keepdim); }
Tensor Tensor::amin(const Dims& dims, bool keepdim) const { return normnet::amin(*this, dims, keepdim); }
Tensor Tensor::max() const { return normnet::max(*this); }
Tensor Tensor::min() const { return normnet::min(*this); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const { return normnet::max(*this, dim, keepdim); }
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const { return normnet::min(*this, dim, keepdim); }
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const { return normnet::argmax(*this, dim, keepdim); }
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const { return normnet::argmin(*this, dim, keepdim); }

}  // namespace normnet
