// Products over a dimension: prod (of all elements or along one dim) and the scan cumprod, with
// their backwards. The input is seen as [outer, R, inner] (reduce.hpp's group_dims); lanes of up
// to kLanes neighbouring inner positions are done together, split between threads. Products
// accumulate in double (float32 inputs) or uint64 (int64 and bool inputs: int64 results that wrap
// around as torch's, the wrap defined).
//
// The gradients are written with exclusive products, never by dividing by the input, so zeros
// need no special case: d prod / d x_r = prod_{j != r} x_j = prefix_r suffix_r, and for cumprod
// dx_r = prefix_r S_r with S_r = dy_r + x_{r+1} S_{r+1} (a reverse Horner scheme), prefix_r
// the product of the elements before r, suffix_r of those after it.
#include <algorithm>
#include <array>
#include <vector>

#include "normnet/ops.hpp"
#include "reduce.hpp"

namespace normnet {
namespace detail {
namespace {

// Calls f(o, i0, n) for every strip of n <= kLanes neighbouring inner positions of [outer, R,
// inner], split between threads.
template <class F>
void for_each_strip(int64_t outer, int64_t R, int64_t inner, F&& f) {
    const int64_t strips = (inner + kLanes - 1) / kLanes;
    parallel_for(outer * strips, item_grain(R * std::min<int64_t>(inner, kLanes)), [&](int64_t b, int64_t e) {
        for (int64_t item = b; item < e; ++item) {
            const int64_t o = item / strips, i0 = (item % strips) * kLanes;
            f(o, i0, static_cast<int>(std::min<int64_t>(kLanes, inner - i0)));
        }
    });
}

// out: [outer, inner] = products of x: [outer, R, inner] along R, accumulated in Acc
template <class Acc, class O, class T>
void prod_forward(O* out, const T* x, int64_t outer, int64_t R, int64_t inner) {
    for_each_strip(outer, R, inner, [&](int64_t o, int64_t i0, int n) {
        std::array<Acc, kLanes> acc;
        acc.fill(Acc(1));
        for (int64_t r = 0; r < R; ++r) {
            const T* row = x + (o * R + r) * inner + i0;
            for (int j = 0; j < n; ++j) acc[static_cast<size_t>(j)] *= static_cast<Acc>(row[j]);
        }
        for (int j = 0; j < n; ++j) out[o * inner + i0 + j] = static_cast<O>(acc[static_cast<size_t>(j)]);
    });
}

// dx: [outer, R, inner] (Store) = dy: [outer, inner] * the product of the other elements of x
// along R; suffix: scratch of R * kLanes doubles per strip, made per thread's range.
template <class Store>
void prod_backward(float* dx, const float* dy, const float* x, int64_t outer, int64_t R, int64_t inner) {
    for_each_strip(outer, R, inner, [&](int64_t o, int64_t i0, int n) {
        std::vector<double> suffix(static_cast<size_t>(R * kLanes));  // suffix[r]: product of x after r
        std::array<double, kLanes> run;
        run.fill(1.0);
        for (int64_t r = R - 1; r >= 0; --r) {
            const float* row = x + (o * R + r) * inner + i0;
            double* s = suffix.data() + r * kLanes;
            for (int j = 0; j < n; ++j) s[j] = run[static_cast<size_t>(j)], run[static_cast<size_t>(j)] *= row[j];
        }
        run.fill(1.0);  // the prefix: product of x before r
        for (int64_t r = 0; r < R; ++r) {
            const int64_t at = (o * R + r) * inner + i0;
            const double* s = suffix.data() + r * kLanes;
            for (int j = 0; j < n; ++j) {
                const double others = run[static_cast<size_t>(j)] * s[j];
                Store::put(dx[at + j], static_cast<float>(dy[o * inner + i0 + j] * others));
                run[static_cast<size_t>(j)] *= x[at + j];
            }
        }
    });
}

// out: [outer, R, inner] = running products of x along R, accumulated in Acc
template <class Acc, class O, class T>
void cumprod_forward(O* out, const T* x, int64_t outer, int64_t R, int64_t inner) {
    for_each_strip(outer, R, inner, [&](int64_t o, int64_t i0, int n) {
        std::array<Acc, kLanes> acc;
        acc.fill(Acc(1));
        for (int64_t r = 0; r < R; ++r) {
            const int64_t at = (o * R + r) * inner + i0;
            for (int j = 0; j < n; ++j) {
                acc[static_cast<size_t>(j)] *= static_cast<Acc>(x[at + j]);
                out[at + j] = static_cast<O>(acc[static_cast<size_t>(j)]);
            }
        }
    });
}

// dx: [outer, R, inner] (Store) = prefix_r S_r, S_r = dy_r + x_{r+1} S_{r+1}, for dy, x: [outer, R, inner].
// As torch, a zero ends the chain exactly: x_{r+1} = 0 adds nothing to S_r (whatever S_{r+1}, inf
// included), and the elements after the first zero take no gradient.
template <class Store>
void cumprod_backward(float* dx, const float* dy, const float* x, int64_t outer, int64_t R, int64_t inner) {
    for_each_strip(outer, R, inner, [&](int64_t o, int64_t i0, int n) {
        std::vector<double> S(static_cast<size_t>(R * kLanes));
        std::array<double, kLanes> run;
        run.fill(0.0);
        for (int64_t r = R - 1; r >= 0; --r) {
            const int64_t at = (o * R + r) * inner + i0;
            double* s = S.data() + r * kLanes;
            for (int j = 0; j < n; ++j) {
                const double next_x = r + 1 < R ? x[at + inner + j] : 0.0;
                s[j] = dy[at + j] + (next_x == 0.0 ? 0.0 : next_x * run[static_cast<size_t>(j)]);
                run[static_cast<size_t>(j)] = s[j];
            }
        }
        run.fill(1.0);  // the prefix product; 0 once past a zero
        std::array<bool, kLanes> past_zero{};
        for (int64_t r = 0; r < R; ++r) {
            const int64_t at = (o * R + r) * inner + i0;
            const double* s = S.data() + r * kLanes;
            for (int j = 0; j < n; ++j) {
                const auto k = static_cast<size_t>(j);
                Store::put(dx[at + j], past_zero[k] ? 0.0f : static_cast<float>(run[k] * s[j]));
                past_zero[k] = past_zero[k] || x[at + j] == 0.0f;
                run[k] *= x[at + j];
            }
        }
    });
}

class ProdBackward final : public ReduceNode {
public:
    const char* name() const override { return "ProdBackward0"; }
    void backward(const Tensor& dy) override {
        if (const GradOut dx = grad_out(0)) {
            const Tensor& x = saved(0);
            dx.write([&]<class Store>(float* d) { prod_backward<Store>(d, dy.data(), x.data(), outer, R, inner); });
        }
    }
};

class CumprodBackward final : public ReduceNode {
public:
    const char* name() const override { return "CumprodBackward0"; }
    void backward(const Tensor& dy) override {
        if (const GradOut dx = grad_out(0)) {
            const Tensor& x = saved(0);
            dx.write([&]<class Store>(float* d) { cumprod_backward<Store>(d, dy.data(), x.data(), outer, R, inner); });
        }
    }
};

// prod over the dims of mask (float32: differentiable; int64 and bool: an int64 product).
Tensor prod_over(const Tensor& x_in, uint32_t mask, bool keepdim) {
    const Grouped g = group_dims(x_in, mask, keepdim);
    const Tensor& x = g.x;
    if (x.dtype() != kFloat32) {
        Tensor out = empty(g.out_shape, kInt64);
        visit_dtype(x.dtype(), [&](auto type) {
            using T = decltype(type);
            // In uint64: the product wraps around as torch's does, and the wrap is defined behaviour.
            prod_forward<uint64_t>(out.data_ptr<int64_t>(), x.data_ptr<T>(), g.outer, g.R, g.inner);
        });
        return out;
    }
    Tensor out = empty(g.out_shape);
    prod_forward<double>(out.data(), x.data(), g.outer, g.R, g.inner);
    if (auto* node = record<ProdBackward>(out, {x}, {x})) node->set_layout(g);
    return out;
}

}  // namespace
}  // namespace detail

Tensor prod(const Tensor& x) { return detail::prod_over(x, detail::dim_mask({}, x.dim(), "prod"), false); }

Tensor prod(const Tensor& x, int64_t dim, bool keepdim) {
    return detail::prod_over(x, detail::one_dim_mask(dim, x.dim(), "prod"), keepdim);
}

Tensor cumprod(const Tensor& x_in, int64_t dim) {
    const detail::Grouped g = detail::group_dims(x_in, detail::one_dim_mask(dim, x_in.dim(), "cumprod"), true);
    const Tensor& x = g.x;
    if (x.dtype() != kFloat32) {  // int64 and bool multiply up to int64, as torch
        Tensor out = empty(x.shape(), kInt64);
        detail::visit_dtype(x.dtype(), [&](auto type) {
            using T = decltype(type);
            detail::cumprod_forward<uint64_t>(out.data_ptr<int64_t>(), x.data_ptr<T>(), g.outer, g.R, g.inner);  // wraps, as prod
        });
        return out;
    }
    Tensor out = empty(x.shape());
    detail::cumprod_forward<double>(out.data(), x.data(), g.outer, g.R, g.inner);
    if (auto* node = detail::record<detail::CumprodBackward>(out, {x}, {x})) node->set_layout(g);
    return out;
}

Tensor Tensor::prod() const { return normnet::prod(*this); }
Tensor Tensor::prod(int64_t dim, bool keepdim) const { return normnet::prod(*this, dim, keepdim); }
Tensor Tensor::cumprod(int64_t dim) const { return normnet::cumprod(*this, dim); }

}  // namespace normnet
