// Binary elementwise ops with broadcasting (add sub mul div pow maximum minimum), their scalar
// forms, the operators, and the in-place updates (add_ sub_ mul_ div_, +=, ...). Every binary
// op is one small struct, the value and the two partial derivatives, run by the shared
// broadcasting forward and backward below; adding an op is a struct and a one-line function.
// The in-place updates run the same structs over the tensor's own data and record the same
// nodes through record_inplace, with self's previous history as input 0.
#include <algorithm>
#include <cmath>
#include <optional>

#include "integer.hpp"
#include "loop.hpp"
#include "normnet/ops.hpp"
#include "op.hpp"
#include "reduce.hpp"
#include "unary.hpp"

namespace normnet {
namespace detail {
namespace {

// ---- The shared machinery ------------------------------------------------------------------

// out[i] = f(a[i], b[i]) for a run; s: strides of (out, a, b). The unit and zero-stride cases get
// their own loops, which vectorise.
template <class Op>
void forward_contiguous(float* __restrict o, const float* a, const float* b, int64_t n, const Op op) {
    for (int64_t i = 0; i < n; ++i) o[i] = op.value(a[i], b[i]);
}
template <class Op>
void forward_scalar_b(float* __restrict o, const float* a, float b, int64_t n, const Op op) {
    for (int64_t i = 0; i < n; ++i) o[i] = op.value(a[i], b);
}
template <class Op>
void forward_scalar_a(float* __restrict o, float a, const float* b, int64_t n, const Op op) {
    for (int64_t i = 0; i < n; ++i) o[i] = op.value(a, b[i]);
}
template <class Op>
void binary_forward_run(const std::tuple<float*, const float*, const float*>& p, const std::array<int64_t, 3>& s,
                        int64_t n, const Op op) {
    const auto [o, a, b] = p;
    if (s[0] == 1 && s[1] == 1 && s[2] == 1) {
        forward_contiguous(o, a, b, n, op);
    } else if (s[0] == 1 && s[1] == 1 && s[2] == 0) {
        forward_scalar_b(o, a, *b, n, op);
    } else if (s[0] == 1 && s[1] == 0 && s[2] == 1) {
        forward_scalar_a(o, *a, b, n, op);
    } else {
        for (int64_t i = 0; i < n; ++i) o[i * s[0]] = op.value(a[i * s[1]], b[i * s[2]]);
    }
}

// binary_forward_run over `rows` runs, run r at the pointers plus r * outer. Short rows of a
// contiguous output and operand against one row repeated ([N, 2] + [2]) are done k rows at a
// time as one contiguous run, the repeated row tiled k times on the stack: a call per row of
// two elements costs ten times the arithmetic.
template <class Op>
void binary_forward_rows(const std::tuple<float*, const float*, const float*>& p, const std::array<int64_t, 3>& s,
                         int64_t n, const std::array<int64_t, 3>& outer, int64_t rows, const Op op) {
    const auto [o, a, b] = p;
    constexpr int64_t kTile = 256;
    const bool dense_o = s[0] == 1 && outer[0] == n;
    const bool a_rows = s[1] == 1 && outer[1] == n, b_rows = s[2] == 1 && outer[2] == n;
    const bool b_repeated = s[2] == 1 && outer[2] == 0, a_repeated = s[1] == 1 && outer[1] == 0;
    if (rows > 1 && n < kTile / 4 && dense_o && ((a_rows && b_repeated) || (b_rows && a_repeated))) {
        const int64_t k = kTile / n;  // rows per tile
        const float* repeated = b_repeated ? b : a;
        float tile[kTile];
        for (int64_t j = 0; j < k; ++j) std::copy_n(repeated, n, tile + j * n);
        for (int64_t r = 0; r < rows; r += k) {
            const int64_t count = std::min(k, rows - r) * n;
            if (b_repeated) {
                forward_contiguous(o + r * n, a + r * n, tile, count, op);
            } else {
                forward_contiguous(o + r * n, tile, b + r * n, count, op);
            }
        }
        return;
    }
    for (int64_t r = 0; r < rows; ++r) binary_forward_run({o + r * outer[0], a + r * outer[1], b + r * outer[2]}, s, n, op);
}

// dx[i] (Store) = op.grad<Which>(a[i], b[i], dy[i]) for a run; s: strides of (dx, dy, a, b).
template <class Store, int Which, class Op>
void backward_contiguous(float* __restrict dx, const float* dy, const float* a, const float* b, int64_t n,
                         const Op op) {
    for (int64_t i = 0; i < n; ++i) Store::put(dx[i], op.template grad<Which>(a[i], b[i], dy[i]));
}
template <class Store, int Which, class Op>
void binary_backward_run(const std::tuple<float*, const float*, const float*, const float*>& p,
                         const std::array<int64_t, 4>& s, int64_t n, const Op op) {
    const auto [dx, dy, a, b] = p;
    if (s[0] == 1 && s[1] == 1 && s[2] == 1 && s[3] == 1) {
        backward_contiguous<Store, Which>(dx, dy, a, b, n, op);
    } else {
        for (int64_t i = 0; i < n; ++i) {
            Store::put(dx[i * s[0]], op.template grad<Which>(a[i * s[2]], b[i * s[3]], dy[i * s[1]]));
        }
    }
}

template <class Op>
class BinaryBackward final : public OpNode {
public:
    Op op;
    Shape a_shape, b_shape;  // the inputs' shapes; the output's is out_shape_
    const char* name() const override { return Op::kBackwardName; }
    void backward(const Tensor& dy) override {
        input_grad<0>(dy, a_shape);
        input_grad<1>(dy, b_shape);
    }

private:
    // Gradient of input Which: computed over the output's shape, then summed over the
    // dimensions that input was broadcast along.
    template <int Which>
    void input_grad(const Tensor& dy, const Shape& shape) {
        const GradOut dx = grad_out(Which);
        if (!dx) return;
        const Shape& out_shape = out_shape_;
        const Tensor a = saved(0), b = saved(1);
        const auto write = [&]<class Store>(float* d) {
            // a and b are read as the output's shape; with no saved inputs (add, sub), dy stands in.
            const Tensor& ra = a.defined() ? a : dy;
            const Tensor& rb = b.defined() ? b : dy;
            const StridedLoop<4> loop(out_shape, {contiguous_strides(out_shape), contiguous_strides(out_shape),
                                                  broadcast_strides(ra, out_shape), broadcast_strides(rb, out_shape)});
            loop.run_rows(std::tuple<float*, const float*, const float*, const float*>{d, dy.data(), ra.data(), rb.data()},
                          [this](const auto& p, const auto& s, int64_t n, const auto& outer, int64_t rows) {
                              const auto [pd, pdy, pa, pb] = p;
                              for (int64_t r = 0; r < rows; ++r) {
                                  binary_backward_run<Store, Which>({pd + r * outer[0], pdy + r * outer[1],
                                                                     pa + r * outer[2], pb + r * outer[3]}, s, n, op);
                              }
                          });
        };
        if (shape == out_shape) {
            dx.write(write);
        } else {
            Tensor full = empty(out_shape);
            write.template operator()<Overwrite>(full.data());
            sum_to(dx, full, shape);
        }
    }
};

void check_float_operands(const Tensor& a, const Tensor& b, const char* op) {
    NORMNET_CHECK(a.dtype() == kFloat32 && b.dtype() == kFloat32, op, ": expected float32 tensors, got ", a.dtype(),
                  " and ", b.dtype());
}

template <class Op>
Tensor binary_op(const Tensor& a, const Tensor& b, const char* name, const Op op = {}) {
    check_float_operands(a, b, name);
    const Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
    Tensor out = empty(shape);
    const StridedLoop<3> loop(shape, {contiguous_strides(shape), broadcast_strides(a, shape), broadcast_strides(b, shape)});
    loop.run_rows(std::tuple<float*, const float*, const float*>{out.data(), a.data(), b.data()},
                  [op](const auto& p, const auto& s, int64_t n, const auto& outer, int64_t rows) {
                      binary_forward_rows(p, s, n, outer, rows, op);
                  });
    auto* node = Op::kSavesInputs ? record<BinaryBackward<Op>>(out, {a, b}, {a, b}) : record<BinaryBackward<Op>>(out, {a, b});
    if (node) node->op = op, node->a_shape = a.shape(), node->b_shape = b.shape();
    return out;
}

// ---- The ops ---------------------------------------------------------------------------------

// out = a + b; da = dy, db = dy
struct AddOp {
    static constexpr const char* kBackwardName = "AddBackward0";
    static constexpr bool kSavesInputs = false;
    float value(float a, float b) const { return a + b; }
    template <int Which>
    float grad(float, float, float dy) const { return dy; }
};

// out = a + alpha b; da = dy, db = alpha dy
struct AddAlphaOp {
    static constexpr const char* kBackwardName = "AddBackward0";
    static constexpr bool kSavesInputs = false;
    float alpha = 1.0f;
    float value(float a, float b) const { return a + alpha * b; }
    template <int Which>
    float grad(float, float, float dy) const { return Which == 0 ? dy : alpha * dy; }
};

// out = a - b; da = dy, db = -dy
struct SubOp {
    static constexpr const char* kBackwardName = "SubBackward0";
    static constexpr bool kSavesInputs = false;
    float value(float a, float b) const { return a - b; }
    template <int Which>
    float grad(float, float, float dy) const { return Which == 0 ? dy : -dy; }
};

// out = a - alpha b; da = dy, db = -alpha dy
struct SubAlphaOp {
    static constexpr const char* kBackwardName = "SubBackward0";
    static constexpr bool kSavesInputs = false;
    float alpha = 1.0f;
    float value(float a, float b) const { return a - alpha * b; }
    template <int Which>
    float grad(float, float, float dy) const { return Which == 0 ? dy : -alpha * dy; }
};

// out = a * b; da = dy * b, db = dy * a
struct MulOp {
    static constexpr const char* kBackwardName = "MulBackward0";
    static constexpr bool kSavesInputs = true;
    float value(float a, float b) const { return a * b; }
    template <int Which>
    float grad(float a, float b, float dy) const { return Which == 0 ? dy * b : dy * a; }
};

// out = a / b; da = dy / b, db = -dy * (a / b) / b
struct DivOp {
    static constexpr const char* kBackwardName = "DivBackward0";
    static constexpr bool kSavesInputs = true;
    float value(float a, float b) const { return a / b; }
    template <int Which>
    float grad(float a, float b, float dy) const { return Which == 0 ? dy / b : -dy * ((a / b) / b); }
};

// out = a^b (std::pow: exact special cases); da = dy * b a^(b-1) (0 where b = 0),
// db = dy * a^b log a (0 where a = 0 and b >= 0), as torch
struct PowOp {
    static constexpr const char* kBackwardName = "PowBackward1";
    static constexpr bool kSavesInputs = true;
    float value(float a, float b) const { return std::pow(a, b); }
    template <int Which>
    float grad(float a, float b, float dy) const {
        if (Which == 0) return b == 0.0f ? 0.0f : dy * (b * std::pow(a, b - 1.0f));
        return a == 0.0f && b >= 0.0f ? 0.0f : dy * (std::pow(a, b) * std::log(a));
    }
};

// out = a - floor(a / b) * b, the divisor's sign (as torch: fmod, then b added when the signs
// differ); da = dy, db = -dy * floor(a / b)
struct RemainderOp {
    static constexpr const char* kBackwardName = "RemainderBackward0";
    static constexpr bool kSavesInputs = true;
    float value(float a, float b) const {
        const float r = std::fmod(a, b);
        return r != 0.0f && ((r < 0.0f) != (b < 0.0f)) ? r + b : r;
    }
    template <int Which>
    float grad(float a, float b, float dy) const { return Which == 0 ? dy : -dy * std::floor(a / b); }
};

// out = a - trunc(a / b) * b, the dividend's sign; da = dy, db = -dy * trunc(a / b)
struct FmodOp {
    static constexpr const char* kBackwardName = "FmodBackward1";
    static constexpr bool kSavesInputs = true;
    float value(float a, float b) const { return std::fmod(a, b); }
    template <int Which>
    float grad(float a, float b, float dy) const { return Which == 0 ? dy : -dy * std::trunc(a / b); }
};

// out = max(a, b), NaN if either is; the gradient goes to the larger input, split evenly on ties
struct MaximumOp {
    static constexpr const char* kBackwardName = "MaximumBackward0";
    static constexpr bool kSavesInputs = true;
    float value(float a, float b) const { return a > b || a != a ? a : b; }
    template <int Which>
    float grad(float a, float b, float dy) const {
        const bool loses = Which == 0 ? a < b : a > b;
        return a == b ? 0.5f * dy : (loses ? 0.0f : dy);
    }
};

// out = min(a, b), NaN if either is; the gradient goes to the smaller input, split evenly on ties
struct MinimumOp {
    static constexpr const char* kBackwardName = "MinimumBackward0";
    static constexpr bool kSavesInputs = true;
    float value(float a, float b) const { return a < b || a != a ? a : b; }
    template <int Which>
    float grad(float a, float b, float dy) const {
        const bool loses = Which == 0 ? a > b : a < b;
        return a == b ? 0.5f * dy : (loses ? 0.0f : dy);
    }
};

// Operands that are not both float32, by torch's promotion: two integer tensors take the integer
// path (integer.cpp, when the op has one), an integer with a float32 tensor is converted to
// float32 and `as_float` runs; bool takes no part in arithmetic.
template <class AsFloat>
Tensor promoted(const Tensor& a, const Tensor& b, const char* name, std::optional<IntegerOp> op, float alpha,
                AsFloat as_float) {
    const auto arithmetic = [](Dtype d) { return d == kFloat32 || is_integer(d); };
    NORMNET_CHECK(arithmetic(a.dtype()) && arithmetic(b.dtype()), name, ": expected float32 or integer tensors, got ",
                  a.dtype(), " and ", b.dtype());
    if (op && is_integer(a.dtype()) && is_integer(b.dtype())) {
        const auto whole = static_cast<int64_t>(alpha);
        NORMNET_CHECK(static_cast<float>(whole) == alpha, name, ": alpha ", alpha, " must be a whole number for integer tensors");
        return integer_binary(a, b, *op, whole, name);
    }
    return as_float(a.to(kFloat32), b.to(kFloat32));
}
bool both_float(const Tensor& a, const Tensor& b) { return a.dtype() == kFloat32 && b.dtype() == kFloat32; }

}  // namespace
}  // namespace detail

Tensor add(const Tensor& a, const Tensor& b, float alpha) {
    if (!detail::both_float(a, b)) {
        return detail::promoted(a, b, "add", detail::IntegerOp::add, alpha,
                                [alpha](const Tensor& x, const Tensor& y) { return add(x, y, alpha); });
    }
    if (alpha == 1.0f) return detail::binary_op<detail::AddOp>(a, b, "add");
    return detail::binary_op(a, b, "add", detail::AddAlphaOp{alpha});
}
Tensor sub(const Tensor& a, const Tensor& b, float alpha) {
    if (!detail::both_float(a, b)) {
        return detail::promoted(a, b, "sub", detail::IntegerOp::sub, alpha,
                                [alpha](const Tensor& x, const Tensor& y) { return sub(x, y, alpha); });
    }
    if (alpha == 1.0f) return detail::binary_op<detail::SubOp>(a, b, "sub");
    return detail::binary_op(a, b, "sub", detail::SubAlphaOp{alpha});
}

// The other binary ops: the float32 op, or their integer form / promotion as above.
#define NORMNET_BINARY(fn, Op, integer_op)                                                                      \
    Tensor fn(const Tensor& a, const Tensor& b) {                                                                \
        if (!detail::both_float(a, b)) {                                                                         \
            return detail::promoted(a, b, #fn, integer_op, 1.0f, [](const Tensor& x, const Tensor& y) { return fn(x, y); }); \
        }                                                                                                        \
        return detail::binary_op<detail::Op>(a, b, #fn);                                                         \
    }
NORMNET_BINARY(mul, MulOp, detail::IntegerOp::mul)
NORMNET_BINARY(div, DivOp, std::nullopt)  // true division: integers give float32, as torch
NORMNET_BINARY(pow, PowOp, std::nullopt)
NORMNET_BINARY(maximum, MaximumOp, detail::IntegerOp::maximum)
NORMNET_BINARY(minimum, MinimumOp, detail::IntegerOp::minimum)
NORMNET_BINARY(remainder, RemainderOp, detail::IntegerOp::remainder)
NORMNET_BINARY(fmod, FmodOp, detail::IntegerOp::fmod)
#undef NORMNET_BINARY

Tensor remainder(const Tensor& a, double b) { return remainder(a.to(kFloat32), full({}, b)); }
Tensor fmod(const Tensor& a, double b) { return fmod(a.to(kFloat32), full({}, b)); }

// ---- Scalar forms: x + s, x - s, s - x, x * s, x / s, s / x, s^x ----------------------------
// Unary ops of the shared machinery (unary.hpp), the scalar a member of the struct.

namespace detail {
namespace {

struct AddScalarOp {
    static constexpr const char* kBackwardName = "AddBackward1";
    static constexpr Uses kUses = Uses::none;
    float s = 0.0f;
    float value(float x) const { return x + s; }
    float grad(float, float, float dy) const { return dy; }
};

struct SubScalarOp {
    static constexpr const char* kBackwardName = "SubBackward1";
    static constexpr Uses kUses = Uses::none;
    float s = 0.0f;
    float value(float x) const { return x - s; }
    float grad(float, float, float dy) const { return dy; }
};

struct RsubScalarOp {
    static constexpr const char* kBackwardName = "RsubBackward1";
    static constexpr Uses kUses = Uses::none;
    float s = 0.0f;
    float value(float x) const { return s - x; }
    float grad(float, float, float dy) const { return -dy; }
};

struct MulScalarOp {
    static constexpr const char* kBackwardName = "MulBackward1";
    static constexpr Uses kUses = Uses::none;
    float s = 1.0f;
    float value(float x) const { return x * s; }
    float grad(float, float, float dy) const { return dy * s; }
};

struct DivScalarOp {
    static constexpr const char* kBackwardName = "DivBackward1";
    static constexpr Uses kUses = Uses::none;
    float s = 1.0f;
    float value(float x) const { return x / s; }
    float grad(float, float, float dy) const { return dy / s; }
};

// y = s / x; dx = -dy * y / x
struct RdivScalarOp {
    static constexpr const char* kBackwardName = "DivBackward0";
    static constexpr Uses kUses = Uses::both;
    float s = 1.0f;
    float value(float x) const { return s / x; }
    float grad(float x, float y, float dy) const { return -dy * (y / x); }
};

// y = s^x; dx = dy * y log s (0 where s = 0 and x >= 0)
struct PowScalarBaseOp {
    static constexpr const char* kBackwardName = "PowBackward2";
    static constexpr Uses kUses = Uses::both;
    float s = 1.0f;
    float value(float x) const { return std::pow(s, x); }
    float grad(float x, float y, float dy) const { return s == 0.0f && x >= 0.0f ? 0.0f : dy * (y * std::log(s)); }
};

}  // namespace
}  // namespace detail

// An integer tensor with a float number gives float32, as torch (integer numbers: the templates of ops.hpp).
Tensor add(const Tensor& a, float b, float alpha) {
    if (detail::is_integer(a.dtype())) return add(a.to(kFloat32), b, alpha);
    return detail::unary_op(a, "add", detail::AddScalarOp{alpha * b});
}
Tensor sub(const Tensor& a, float b, float alpha) {
    if (detail::is_integer(a.dtype())) return sub(a.to(kFloat32), b, alpha);
    return detail::unary_op(a, "sub", detail::SubScalarOp{alpha * b});
}
Tensor rsub(const Tensor& a, float b) {
    if (detail::is_integer(a.dtype())) return rsub(a.to(kFloat32), b);
    return detail::unary_op(a, "rsub", detail::RsubScalarOp{b});
}
Tensor mul(const Tensor& a, float b) {
    if (detail::is_integer(a.dtype())) return mul(a.to(kFloat32), b);
    return detail::unary_op(a, "mul", detail::MulScalarOp{b});
}
Tensor div(const Tensor& a, float b) {
    if (detail::is_integer(a.dtype())) return div(a.to(kFloat32), b);
    return detail::unary_op(a, "div", detail::DivScalarOp{b});
}
Tensor div(float a, const Tensor& b) {
    if (detail::is_integer(b.dtype())) return div(a, b.to(kFloat32));
    return detail::unary_op(b, "div", detail::RdivScalarOp{a});
}
Tensor pow(float a, const Tensor& b) { return detail::unary_op(b, "pow", detail::PowScalarBaseOp{a}); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, float b) { return add(a, b); }
Tensor operator-(const Tensor& a, float b) { return sub(a, b); }
Tensor operator*(const Tensor& a, float b) { return mul(a, b); }
Tensor operator/(const Tensor& a, float b) { return div(a, b); }
Tensor operator+(float a, const Tensor& b) { return add(b, a); }
Tensor operator-(float a, const Tensor& b) { return rsub(b, a); }
Tensor operator*(float a, const Tensor& b) { return mul(b, a); }
Tensor operator/(float a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& a) { return neg(a); }

Tensor Tensor::add(const Tensor& other, float alpha) const { return normnet::add(*this, other, alpha); }
Tensor Tensor::add(float other, float alpha) const { return normnet::add(*this, other, alpha); }
Tensor Tensor::sub(const Tensor& other, float alpha) const { return normnet::sub(*this, other, alpha); }
Tensor Tensor::sub(float other, float alpha) const { return normnet::sub(*this, other, alpha); }
Tensor Tensor::mul(const Tensor& other) const { return normnet::mul(*this, other); }
Tensor Tensor::mul(float other) const { return normnet::mul(*this, other); }
Tensor Tensor::div(const Tensor& other) const { return normnet::div(*this, other); }
Tensor Tensor::div(float other) const { return normnet::div(*this, other); }
Tensor Tensor::pow(const Tensor& exponent) const { return normnet::pow(*this, exponent); }
Tensor Tensor::maximum(const Tensor& other) const { return normnet::maximum(*this, other); }
Tensor Tensor::minimum(const Tensor& other) const { return normnet::minimum(*this, other); }

// ---- In-place updates: add_ sub_ mul_ div_ and the compound assignments ----------------------
// Recorded by autograd (as torch): self's previous history becomes input 0 of the op's node,
// and the version counter is bumped, so a backward that saved self's old values fails loudly.
// Under NoGradGuard, or when nothing requires grad, they are plain loops over self's data.

namespace detail {
namespace {

// a[i] = op(a[i], b[i]) for a run; s: strides of (a, b)
template <class Op>
void inplace_contiguous(float* __restrict a, const float* __restrict b, int64_t n, const Op op) {
    for (int64_t i = 0; i < n; ++i) a[i] = op.value(a[i], b[i]);
}
template <class Op>
void inplace_scalar_b(float* __restrict a, float b, int64_t n, const Op op) {
    for (int64_t i = 0; i < n; ++i) a[i] = op.value(a[i], b);
}
template <class Op>
void inplace_run(const std::tuple<float*, const float*>& p, const std::array<int64_t, 2>& s, int64_t n, const Op op) {
    const auto [a, b] = p;
    if (s[0] == 1 && s[1] == 1) {
        inplace_contiguous(a, b, n, op);
    } else if (s[0] == 1 && s[1] == 0) {
        inplace_scalar_b(a, *b, n, op);
    } else {
        for (int64_t i = 0; i < n; ++i) a[i * s[0]] = op.value(a[i * s[0]], b[i * s[1]]);
    }
}

// Refuses what autograd cannot record: besides check_inplace's rules (a leaf that requires
// grad, a view of a tensor that requires grad), a view updated with a tensor that requires
// grad (its base would not learn of the new history).
void check_inplace_update(const Tensor& self, bool other_requires_grad, const char* op) {
    NORMNET_CHECK(self.dtype() == kFloat32, op, ": expected a float32 tensor, got ", self.dtype());
    check_inplace(self, op);
    NORMNET_CHECK(!(grad_mode_enabled() && other_requires_grad && self.impl().is_view), op,
                  ": in-place updates of a view with a tensor that requires grad are not supported (update a "
                  "contiguous copy, or the tensor itself)");
}

// self = op(self, other), other broadcast to self's shape.
template <class Op>
void inplace_binary(Tensor& self, const Tensor& other_given, const char* name, const Op op = {}) {
    // An integer other is converted (float += int64 is float, as torch).
    const Tensor other_in = is_integer(other_given.dtype()) ? other_given.to(kFloat32) : other_given;
    check_float_operands(self, other_in, name);
    check_inplace_update(self, other_in.requires_grad(), name);
    NORMNET_CHECK(broadcast_shapes(self.shape(), other_in.shape(), name) == self.shape(), name, ": output with shape ",
                  self.shape(), " doesn't match the broadcast shape ",
                  broadcast_shapes(self.shape(), other_in.shape(), name));
    // x += x and overlapping views read a copy, so no element is read after it was written.
    const Tensor other = other_in.shares_storage(self) ? other_in.detach().clone() : other_in;
    // Self's old values, when other's gradient needs them (mul_, div_).
    Tensor old;
    if (Op::kSavesInputs && grad_mode_enabled() && other_in.requires_grad()) old = self.detach().clone();
    const Shape& shape = self.shape();
    const StridedLoop<2> loop(shape, {self.strides(), broadcast_strides(other, shape)});
    loop.run_rows(std::tuple<float*, const float*>{self.data(), other.data()},
                  [op](const auto& p, const auto& s, int64_t n, const auto& outer, int64_t rows) {
                      const auto [a, b] = p;
                      for (int64_t r = 0; r < rows; ++r) inplace_run({a + r * outer[0], b + r * outer[1]}, s, n, op);
                  });
    auto* node = Op::kSavesInputs ? record_inplace<BinaryBackward<Op>>(self, {other_in}, {old, other})
                                  : record_inplace<BinaryBackward<Op>>(self, {other_in});
    if (node) node->op = op, node->a_shape = shape, node->b_shape = other.shape();
}

// x[i] = op(x[i]) for a run of stride s
template <class Op>
void inplace_unary_run(float* __restrict x, int64_t s, int64_t n, const Op op) {
    if (s == 1) {
        for (int64_t i = 0; i < n; ++i) x[i] = op.value(x[i]);
    } else {
        for (int64_t i = 0; i < n; ++i) x[i * s] = op.value(x[i * s]);
    }
}

// self = op(self) for the scalar forms, whose gradients read neither x nor y.
template <class Op>
void inplace_scalar(Tensor& self, const char* name, const Op op) {
    static_assert(Op::kUses == Uses::none, "an in-place op cannot save its input");
    check_inplace_update(self, false, name);
    const StridedLoop<1> loop(self.shape(), {self.strides()});
    loop.run(std::tuple<float*>{self.data()},
             [op](const auto& p, const auto& s, int64_t n) { inplace_unary_run(std::get<0>(p), s[0], n, op); });
    if (auto* node = record_inplace<UnaryBackward<Op>>(self, {})) node->op = op;
}

// An integer self takes the op's integer form (integer.cpp); div_ has none, since true division
// gives float32, which an integer tensor cannot hold (torch refuses it too).
bool integer_update(Tensor& self, const Tensor& other, std::optional<IntegerOp> op, double alpha, const char* name) {
    if (!is_integer(self.dtype())) return false;
    NORMNET_CHECK(op.has_value(), name, ": result type Float can't be cast to the desired output type ", self.dtype(),
                  " (true division; convert the tensor with to(kFloat32) first)");
    integer_inplace(self, other, *op, integral_value(alpha, self, name), name);
    return true;
}
bool integer_update(Tensor& self, double number, std::optional<IntegerOp> op, const char* name) {
    if (!is_integer(self.dtype())) return false;
    return integer_update(self, integer_scalar(integral_value(number, self, name)), op, 1.0, name);
}

}  // namespace
}  // namespace detail

Tensor& Tensor::add_(const Tensor& other, float alpha) {
    if (detail::integer_update(*this, other, detail::IntegerOp::add, alpha, "add_")) return *this;
    if (alpha == 1.0f) {
        detail::inplace_binary<detail::AddOp>(*this, other, "add_");
    } else {
        detail::inplace_binary(*this, other, "add_", detail::AddAlphaOp{alpha});
    }
    return *this;
}
Tensor& Tensor::sub_(const Tensor& other, float alpha) {
    if (detail::integer_update(*this, other, detail::IntegerOp::sub, alpha, "sub_")) return *this;
    if (alpha == 1.0f) {
        detail::inplace_binary<detail::SubOp>(*this, other, "sub_");
    } else {
        detail::inplace_binary(*this, other, "sub_", detail::SubAlphaOp{alpha});
    }
    return *this;
}
Tensor& Tensor::mul_(const Tensor& other) {
    if (detail::integer_update(*this, other, detail::IntegerOp::mul, 1.0, "mul_")) return *this;
    detail::inplace_binary<detail::MulOp>(*this, other, "mul_");
    return *this;
}
Tensor& Tensor::div_(const Tensor& other) {
    if (detail::integer_update(*this, other, std::nullopt, 1.0, "div_")) return *this;
    detail::inplace_binary<detail::DivOp>(*this, other, "div_");
    return *this;
}
Tensor& Tensor::add_(float other, float alpha) {
    if (detail::integer_update(*this, static_cast<double>(alpha) * other, detail::IntegerOp::add, "add_")) return *this;
    detail::inplace_scalar(*this, "add_", detail::AddScalarOp{alpha * other});
    return *this;
}
Tensor& Tensor::sub_(float other, float alpha) {
    if (detail::integer_update(*this, static_cast<double>(alpha) * other, detail::IntegerOp::sub, "sub_")) return *this;
    detail::inplace_scalar(*this, "sub_", detail::SubScalarOp{alpha * other});
    return *this;
}
Tensor& Tensor::mul_(float factor) {
    if (detail::integer_update(*this, factor, detail::IntegerOp::mul, "mul_")) return *this;
    detail::inplace_scalar(*this, "mul_", detail::MulScalarOp{factor});
    return *this;
}
Tensor& Tensor::div_(float divisor) {
    if (detail::integer_update(*this, divisor, std::nullopt, "div_")) return *this;
    detail::inplace_scalar(*this, "div_", detail::DivScalarOp{divisor});
    return *this;
}
Tensor& Tensor::operator+=(const Tensor& other) { return add_(other); }
Tensor& Tensor::operator-=(const Tensor& other) { return sub_(other); }
Tensor& Tensor::operator*=(const Tensor& other) { return mul_(other); }
Tensor& Tensor::operator/=(const Tensor& other) { return div_(other); }
Tensor& Tensor::operator+=(float other) { return add_(other); }
Tensor& Tensor::operator-=(float other) { return sub_(other); }
Tensor& Tensor::operator*=(float other) { return mul_(other); }
Tensor& Tensor::operator/=(float other) { return div_(other); }

}  // namespace normnet
