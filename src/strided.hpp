// Internal: walking the elements of a strided view in row-major order.
#pragma once

#include <array>
#include <cstdint>

#include "normnet/tensor.hpp"

namespace normnet::detail {

/// Calls f(offset_a, offset_b) for every index of `shape`, in row-major order, where the
/// offsets are those of two views with strides sa and sb.
template <class F>
void for_each_offset2(const Shape& shape, const Shape& sa, int64_t oa, const Shape& sb, int64_t ob, F&& f) {
    const int nd = shape.size();
    if (shape.numel() == 0) return;
    if (nd == 0) {
        f(oa, ob);
        return;
    }
    std::array<int64_t, kMaxDims> index{};
    const int last = nd - 1;
    for (;;) {
        for (int64_t i = 0; i < shape[last]; ++i) f(oa + i * sa[last], ob + i * sb[last]);
        // Carry into the outer dimensions.
        int d = last - 1;
        for (; d >= 0; --d) {
            ++index[static_cast<size_t>(d)];
            oa += sa[d];
            ob += sb[d];
            if (index[static_cast<size_t>(d)] < shape[d]) break;
            oa -= sa[d] * shape[d];
            ob -= sb[d] * shape[d];
            index[static_cast<size_t>(d)] = 0;
        }
        if (d < 0) return;
    }
}

/// Calls f(offset) for every index of a view, in row-major order.
template <class F>
void for_each_offset(const Shape& shape, const Shape& strides, int64_t offset, F&& f) {
    for_each_offset2(shape, strides, offset, strides, 0, [&](int64_t a, int64_t) { f(a); });
}

/// Row-major strides of a contiguous tensor of `shape`.
inline Shape contiguous_strides(const Shape& shape) {
    Shape s = shape;
    int64_t stride = 1;
    for (int d = shape.size() - 1; d >= 0; --d) {
        s[d] = stride;
        stride *= shape[d];
    }
    return s;
}

}  // namespace normnet::detail
