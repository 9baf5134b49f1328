// Internal: the elementwise loop under every broadcasting op. Operands are seen through one
// iteration shape with per-operand strides (0 along broadcast dimensions); dimensions that are
// contiguous for every operand are merged, so the common cases become one long run. Each run
// goes to a kernel with the operands' base pointers and strides; the kernel picks a vectorisable
// loop when the strides are 1 or 0. Runs are split between threads outside the kernel.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <tuple>
#include <utility>

#include "../parallel.hpp"
#include "../strided.hpp"
#include "../tensor_impl.hpp"

namespace normnet::detail {

/// Elements per chunk below which an elementwise loop is not split between threads.
inline constexpr int64_t kElementGrain = 1 << 14;

/// Items (rows, samples, channels...) per chunk of a parallel loop over items of
/// `values_per_item` elements each: about kElementGrain elements, so that a chunk outweighs
/// handing it to another thread, and at least `minimum` items.
inline int64_t item_grain(int64_t values_per_item, int64_t minimum = 1) {
    return std::max<int64_t>(minimum, kElementGrain / std::max<int64_t>(values_per_item, 1));
}

/// The shape a and b broadcast to (PyTorch's rules: align on the right, sizes equal or 1).
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

/// t's strides (in elements) when it is read as `shape`, to which its shape must broadcast:
/// 0 along the dimensions it is repeated over.
Shape broadcast_strides(const Tensor& t, const Shape& shape);
/// The same for sizes `from` with strides `strides` (e.g. a batch's leading dims).
Shape broadcast_strides(const Shape& from, const Shape& strides, const Shape& shape);

/// K operands walked in step over one shape. Operand k has element type T_k; strides are in
/// elements of that type. run(...) calls kernel(ptrs, strides, n) for runs of n elements along the
/// innermost (merged) dimension, where ptrs[k] points at operand k's first element of the run.
template <int K>
class StridedLoop {
public:
    StridedLoop(const Shape& shape, const std::array<Shape, K>& strides) {
        numel_ = shape.numel();
        // Drop size-1 dimensions, then merge neighbours that are contiguous for every operand.
        for (int d = 0; d < shape.size(); ++d) {
            if (shape[d] == 1) continue;
            const bool merge = nd_ > 0 && [&] {
                for (int k = 0; k < K; ++k) {
                    if (stride_[k][nd_ - 1] != strides[k][d] * shape[d]) return false;
                }
                return true;
            }();
            if (merge) {
                size_[nd_ - 1] *= shape[d];
                for (int k = 0; k < K; ++k) stride_[k][nd_ - 1] = strides[k][d];
            } else {
                size_[nd_] = shape[d];
                for (int k = 0; k < K; ++k) stride_[k][nd_] = strides[k][d];
                ++nd_;
            }
        }
        if (nd_ == 0) {  // a single element
            size_[0] = 1;
            for (int k = 0; k < K; ++k) stride_[k][0] = 0;
            nd_ = 1;
        }
    }

    int64_t numel() const { return numel_; }

    /// Runs kernel over the elements [begin, end) of the iteration order. `base` is a std::tuple
    /// of the K operands' typed pointers at their first element.
    template <class Ptrs, class Kernel>
    void run_range(const Ptrs& base, int64_t begin, int64_t end, Kernel&& kernel) const {
        run_range_impl(base, begin, end, kernel, std::make_integer_sequence<int, K>{});
    }

    /// Runs kernel over every element, split between threads when the loop is large.
    template <class Ptrs, class Kernel>
    void run(const Ptrs& base, Kernel&& kernel) const {
        parallel_for(numel_, kElementGrain, [&](int64_t b, int64_t e) { run_range(base, b, e, kernel); });
    }

    /// As run(), but kernel(ptrs, strides, n, outer, rows) gets up to `rows` runs of n at once,
    /// run r starting at ptrs[k] + r * outer[k] (the strides of the next dimension out): for
    /// loops whose innermost dimension is short, where a call per run ([N, 2] + [2]) cost 20
    /// times the arithmetic.
    template <class Ptrs, class Kernel>
    void run_rows(const Ptrs& base, Kernel&& kernel) const {
        parallel_for(numel_, kElementGrain, [&](int64_t b, int64_t e) {
            run_rows_impl(base, b, e, kernel, std::make_integer_sequence<int, K>{});
        });
    }

private:
    template <class Ptrs, class Kernel, int... Ks>
    void run_range_impl(const Ptrs& base, int64_t begin, int64_t end, Kernel& kernel,
                        std::integer_sequence<int, Ks...>) const {
        const int last = nd_ - 1;
        std::array<int64_t, kMaxDims> index{};
        int64_t rest = begin;
        for (int d = last; d >= 0; --d) {
            index[static_cast<size_t>(d)] = rest % size_[d];
            rest /= size_[d];
        }
        const std::array<int64_t, K> inner{stride_[Ks][last]...};
        int64_t pos = begin;
        while (pos < end) {
            const int64_t n = std::min(size_[last] - index[static_cast<size_t>(last)], end - pos);
            kernel(Ptrs{(std::get<Ks>(base) + offset_of(Ks, index))...}, inner, n);
            pos += n;
            index[static_cast<size_t>(last)] += n;
            for (int d = last; d > 0 && index[static_cast<size_t>(d)] == size_[d]; --d) {
                index[static_cast<size_t>(d)] = 0;
                ++index[static_cast<size_t>(d - 1)];
            }
        }
    }

    template <class Ptrs, class Kernel, int... Ks>
    void run_rows_impl(const Ptrs& base, int64_t begin, int64_t end, Kernel& kernel,
                       std::integer_sequence<int, Ks...>) const {
        const int last = nd_ - 1;
        std::array<int64_t, kMaxDims> index{};
        int64_t rest = begin;
        for (int d = last; d >= 0; --d) {
            index[static_cast<size_t>(d)] = rest % size_[d];
            rest /= size_[d];
        }
        const std::array<int64_t, K> inner{stride_[Ks][last]...};
        const std::array<int64_t, K> outer{(last > 0 ? stride_[Ks][last - 1] : 0)...};
        const int64_t row = size_[last];
        int64_t pos = begin;
        while (pos < end) {
            int64_t n = std::min(row - index[static_cast<size_t>(last)], end - pos), rows = 1;
            if (last > 0 && index[static_cast<size_t>(last)] == 0) {  // whole rows, within dimension last - 1
                rows = std::min((end - pos) / row, size_[last - 1] - index[static_cast<size_t>(last - 1)]);
                rows = std::max<int64_t>(rows, 1);
            }
            kernel(Ptrs{(std::get<Ks>(base) + offset_of(Ks, index))...}, inner, n, outer, rows);
            pos += rows * n;
            if (rows > 1) {
                index[static_cast<size_t>(last - 1)] += rows;
            } else {
                index[static_cast<size_t>(last)] += n;
            }
            for (int d = last; d > 0; --d) {
                if (index[static_cast<size_t>(d)] == size_[d]) index[static_cast<size_t>(d)] = 0, ++index[static_cast<size_t>(d - 1)];
            }
        }
    }

    int64_t offset_of(int k, const std::array<int64_t, kMaxDims>& index) const {
        int64_t offset = 0;
        for (int d = 0; d < nd_; ++d) offset += index[static_cast<size_t>(d)] * stride_[k][d];
        return offset;
    }

    int nd_ = 0;
    int64_t numel_ = 0;
    std::array<int64_t, kMaxDims> size_{};
    std::array<std::array<int64_t, kMaxDims>, K> stride_{};
};

/// dst: contiguous [src's shape] (Store) = src, a strided float view.
template <class Store>
void copy_strided(float* dst, const Tensor& src) {
    const Shape& shape = src.shape();
    const StridedLoop<2> loop(shape, {contiguous_strides(shape), src.strides()});
    loop.run(std::tuple<float*, const float*>{dst, src.data()},
             [](const std::tuple<float*, const float*>& p, const std::array<int64_t, 2>& s, int64_t n) {
                 const auto [d, x] = p;
                 for (int64_t i = 0; i < n; ++i) Store::put(d[i * s[0]], x[i * s[1]]);
             });
}

}  // namespace normnet::detail
