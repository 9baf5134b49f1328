// Internal: what a Tensor handle points to. Storage is a buffer from the caching allocator with
// the version counter that in-place updates bump; TensorImpl is one view of it (offset, shape,
// strides, dtype) with its autograd state. Views share one Storage, and so one version counter.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>

#include "normnet/tensor.hpp"

namespace normnet::detail {

class OpNode;

struct Storage {
    explicit Storage(int64_t bytes);
    ~Storage();
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;
    void* data = nullptr;
    int64_t bytes = 0;
    uint32_t version = 0;
};

struct TensorImpl {
    std::shared_ptr<Storage> storage;
    int64_t offset = 0;  // in elements
    Shape shape;
    Shape strides;
    Dtype dtype = kFloat32;
    bool requires_grad = false;
    bool is_view = false;  // made by a view op (view, transpose, narrow, select, ...) of another tensor
    std::shared_ptr<TensorImpl> grad;        // accumulated gradient (leaves)
    std::shared_ptr<OpNode> grad_fn;           // the op that made this tensor (non-leaves)
    std::shared_ptr<OpNode> grad_accumulator;  // leaves: the node that receives their gradient

    char* bytes() const { return static_cast<char*>(storage->data) + offset * element_size(dtype); }
};

/// A new TensorImpl from the small-object pool.
std::shared_ptr<TensorImpl> new_impl();

/// Calls f(T{}) with T the C++ element type of dtype (float, int64_t, bool or int32_t).
template <class F>
decltype(auto) visit_dtype(Dtype dtype, F&& f) {
    switch (dtype) {
        case Dtype::int64: return f(int64_t{});
        case Dtype::bool8: return f(bool{});
        case Dtype::int32: return f(int32_t{});
        case Dtype::float32: break;
    }
    return f(float{});
}

/// value as a T, as torch converts on x86: a float or double to int64 truncates toward zero, and
/// NaN or a value beyond int64's range gives INT64_MIN (a plain cast is undefined behaviour there).
template <class T, class S>
T convert(S value) {
    if constexpr (std::is_same_v<T, int64_t> && std::is_floating_point_v<S>) {
        if (!(value >= -0x1p63 && value < 0x1p63)) return std::numeric_limits<int64_t>::min();
    }
    return static_cast<T>(value);
}

}  // namespace normnet::detail
