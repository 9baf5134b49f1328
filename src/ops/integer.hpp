// Internal: the integer forms of the binary arithmetic ops (int64 and int32 tensors: labels,
// indices, counts). Integers take no part in autograd, so these are plain loops, entered from
// the public functions of elementwise.cpp when an operand is not float32.
#pragma once

#include <cstdint>

#include "normnet/tensor.hpp"

namespace normnet::detail {

/// True for the integer dtypes arithmetic accepts (int64, int32; not bool).
inline bool is_integer(Dtype dtype) { return dtype == kInt64 || dtype == kInt32; }

enum class IntegerOp : uint8_t { add, sub, mul, remainder, fmod, maximum, minimum };

/// op(a, b) over integer a and b broadcast together (b scaled by alpha for add and sub), as
/// torch: int32 with int32 stays int32, anything else gives int64; add, sub and mul wrap around
/// on overflow; remainder takes the divisor's sign, fmod the dividend's; a zero divisor is an error.
Tensor integer_binary(const Tensor& a, const Tensor& b, IntegerOp op, int64_t alpha, const char* name);

/// self = op(self, other) in place: self integer, other integer and broadcast to self's shape
/// (a float32 other is an error, as torch's "result type Float can't be cast to Long").
void integer_inplace(Tensor& self, const Tensor& other, IntegerOp op, int64_t alpha, const char* name);

/// A number combined in place with an integer tensor, as an integer; throws when it has a
/// fraction (torch refuses to store a float result in an integer tensor).
int64_t integral_value(double value, const Tensor& self, const char* name);

/// A 0-dimensional int64 tensor holding v.
Tensor integer_scalar(int64_t v);

}  // namespace normnet::detail
