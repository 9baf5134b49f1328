// Internal: doubles stored exactly in tensors (which hold float32, int64 or bool): an int64
// holding the IEEE-754 bits. Optimizer and scheduler state use it for learning rates and other
// real-valued options, so a restored run continues bit-identically.
#pragma once

#include <bit>
#include <span>
#include <string>
#include <vector>

#include "normnet/error.hpp"
#include "normnet/tensor.hpp"

namespace normnet::detail {

/// An int64 scalar holding the bits of v.
inline Tensor exact_scalar(double v) {
    Tensor t = empty(Shape{}, kInt64);
    *t.data_ptr<int64_t>() = std::bit_cast<int64_t>(v);
    return t;
}

/// An int64 [n] tensor holding the bits of each value.
inline Tensor exact_vector(std::span<const double> values) {
    Tensor t = empty(Shape{static_cast<int64_t>(values.size())}, kInt64);
    for (size_t i = 0; i < values.size(); ++i) t.data_ptr<int64_t>()[i] = std::bit_cast<int64_t>(values[i]);
    return t;
}

/// The doubles of an exact_vector (or, with n == 0 expected as a scalar, exact_scalar) entry;
/// throws naming `who` and `key` when it is not an int64 tensor of n values.
inline std::vector<double> exact_values(const Tensor& t, size_t n, const std::string& who, const std::string& key) {
    NORMNET_CHECK(t.defined() && t.dtype() == kInt64 && static_cast<size_t>(t.numel()) == n && t.is_contiguous(), who,
                  ": \"", key, "\" must be an int64 tensor of ", n, " value(s) (the bits of doubles), got ",
                  t.defined() ? std::string(dtype_name(t.dtype())) : std::string("undefined"), " ",
                  t.defined() ? t.shape().str() : std::string());
    std::vector<double> out(n);
    for (size_t i = 0; i < n; ++i) out[i] = std::bit_cast<double>(t.data_ptr<int64_t>()[i]);
    return out;
}

/// The double of an exact_scalar entry.
inline double exact_value(const Tensor& t, const std::string& who, const std::string& key) {
    return exact_values(t, 1, who, key)[0];
}

/// An int64 scalar.
inline Tensor int64_scalar(int64_t v) {
    Tensor t = empty(Shape{}, kInt64);
    *t.data_ptr<int64_t>() = v;
    return t;
}

/// The value of a one-element int64 entry.
inline int64_t int64_value(const Tensor& t, const std::string& who, const std::string& key) {
    NORMNET_CHECK(t.defined() && t.dtype() == kInt64 && t.numel() == 1, who, ": \"", key,
                  "\" must be a one-element int64 tensor, got ",
                  t.defined() ? std::string(dtype_name(t.dtype())) + " " + t.shape().str() : std::string("undefined"));
    return *t.data_ptr<int64_t>();
}

/// The value of a loaded step or epoch counter, which must lie in [min, 2^53]: a schedule's
/// counters are incremented by every step (beyond 2^53 as doubles they stop counting anyway),
/// so one loaded near INT64_MAX would overflow.
inline int64_t counter_value(const Tensor& t, int64_t min, const std::string& who, const std::string& key) {
    const int64_t v = int64_value(t, who, key);
    NORMNET_CHECK(v >= min && v <= (int64_t{1} << 53), who, ": \"", key, "\" must be in [", min, ", 2^53], got ", v);
    return v;
}

}  // namespace normnet::detail
