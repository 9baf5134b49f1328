// Integer arithmetic for the binary ops (integer.hpp): labels + 1, counts += correct, remainder and
// fmod of indices. Sums and products wrap around as torch's do (computed unsigned, so the
// wrap is defined); division-like ops check their divisors first, since an integer division by
// zero (or INT64_MIN / -1) would kill the process.
#include "integer.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "loop.hpp"
#include "op.hpp"

namespace normnet::detail {
namespace {

template <class T>
T apply(IntegerOp op, T a, T b, T alpha) {
    using U = std::make_unsigned_t<T>;
    switch (op) {
        case IntegerOp::add: return static_cast<T>(static_cast<U>(a) + static_cast<U>(b) * static_cast<U>(alpha));
        case IntegerOp::sub: return static_cast<T>(static_cast<U>(a) - static_cast<U>(b) * static_cast<U>(alpha));
        case IntegerOp::mul: return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
        case IntegerOp::remainder: {  // Python's %: the result takes the divisor's sign
            if (b == -1) return 0;
            const T r = static_cast<T>(a % b);
            return r != 0 && ((r < 0) != (b < 0)) ? static_cast<T>(r + b) : r;
        }
        case IntegerOp::fmod: return b == -1 ? T{0} : static_cast<T>(a % b);  // C's %: the dividend's sign
        case IntegerOp::maximum: return std::max(a, b);
        case IntegerOp::minimum: return std::min(a, b);
    }
    return a;
}

bool divides(IntegerOp op) { return op == IntegerOp::remainder || op == IntegerOp::fmod; }

// A zero among the divisor's elements: torch raises "ZeroDivisionError" for integers.
void check_divisor(const Tensor& b, IntegerOp op, const char* name) {
    if (!divides(op)) return;
    const auto values = b.to_vector<int64_t>();
    NORMNET_CHECK(std::find(values.begin(), values.end(), 0) == values.end(), name,
                  ": integer division by zero (a divisor of dtype ", b.dtype(), " is 0)");
}

void check_operands(const Tensor& a, const Tensor& b, const char* name) {
    NORMNET_CHECK(is_integer(a.dtype()) && is_integer(b.dtype()), name, ": expected integer tensors, got ", a.dtype(),
                  " and ", b.dtype());
}

// out = op(a, b) over `shape`; every operand of type T.
template <class T>
void run(const Shape& shape, T* out, const Shape& out_strides, const Tensor& a, const Tensor& b, IntegerOp op, T alpha) {
    const StridedLoop<3> loop(shape, {out_strides, broadcast_strides(a, shape), broadcast_strides(b, shape)});
    loop.run(std::tuple<T*, const T*, const T*>{out, a.data_ptr<T>(), b.data_ptr<T>()},
             [op, alpha](const std::tuple<T*, const T*, const T*>& p, const std::array<int64_t, 3>& s, int64_t n) {
                 const auto [o, x, y] = p;
                 for (int64_t i = 0; i < n; ++i) o[i * s[0]] = apply(op, x[i * s[1]], y[i * s[2]], alpha);
             });
}

}  // namespace

Tensor integer_binary(const Tensor& a, const Tensor& b, IntegerOp op, int64_t alpha, const char* name) {
    check_operands(a, b, name);
    const Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
    const Dtype dtype = a.dtype() == kInt32 && b.dtype() == kInt32 ? kInt32 : kInt64;
    Tensor out = empty(shape, dtype);
    if (out.numel() == 0) return out;
    check_divisor(b, op, name);
    const Tensor x = a.to(dtype), y = b.to(dtype);
    if (dtype == kInt32) {
        run<int32_t>(shape, out.data_ptr<int32_t>(), out.strides(), x, y, op, static_cast<int32_t>(alpha));
    } else {
        run<int64_t>(shape, out.data_ptr<int64_t>(), out.strides(), x, y, op, alpha);
    }
    return out;
}

void integer_inplace(Tensor& self, const Tensor& other_in, IntegerOp op, int64_t alpha, const char* name) {
    NORMNET_CHECK(is_integer(other_in.dtype()), name, ": result type ", other_in.dtype(),
                  " can't be cast to the desired output type ", self.dtype(), " (convert the tensor with to(",
                  other_in.dtype(), ") first)");
    check_operands(self, other_in, name);
    check_inplace(self, name);
    NORMNET_CHECK(broadcast_shapes(self.shape(), other_in.shape(), name) == self.shape(), name,
                  ": output with shape ", self.shape(), " doesn't match the broadcast shape ",
                  broadcast_shapes(self.shape(), other_in.shape(), name));
    if (self.numel() == 0) return;
    check_divisor(other_in, op, name);
    // x += x and overlapping views read a copy, so no element is read after it was written.
    const Tensor other = other_in.to(self.dtype()).shares_storage(self) ? other_in.to(self.dtype()).clone()
                                                                        : other_in.to(self.dtype());
    if (self.dtype() == kInt32) {
        run<int32_t>(self.shape(), self.data_ptr<int32_t>(), self.strides(), self, other, op, static_cast<int32_t>(alpha));
    } else {
        run<int64_t>(self.shape(), self.data_ptr<int64_t>(), self.strides(), self, other, op, alpha);
    }
    self.bump_version();
}

int64_t integral_value(double value, const Tensor& self, const char* name) {
    NORMNET_CHECK(value == std::trunc(value) && std::abs(value) < 9.2e18, name, ": result type Float can't be cast to the",
                  " desired output type ", self.dtype(), " (", value, " is not a whole number; convert the tensor with",
                  " to(kFloat32) first)");
    return static_cast<int64_t>(value);
}

Tensor integer_scalar(int64_t v) { return from_vector(std::span<const int64_t>(&v, 1), Shape{}); }

}  // namespace normnet::detail
