// Binary elementwise ops with broadcasting (add, sub, mul) and their scalar forms. Every
// binary op is one small struct, the value and the two partial derivatives, run by the shared
// broadcasting forward and backward below; adding an op is a struct and a one-line function.
#include "loop.hpp"
#include "normnet/ops.hpp"
#include "op.hpp"
#include "reduce.hpp"

namespace normnet {
namespace detail {
namespace {

// ---- The shared machinery ------------------------------------------------------------------

// out[i] = f(a[i], b[i]) for a run; s: strides of (out, a, b). The unit and zero-stride cases get
// their own loops, which vectorise.
template <class Op>
void forward_contiguous(float* __restrict o, const float* a, const float* b, int64_t n) {
    for (int64_t i = 0; i < n; ++i) o[i] = Op::value(a[i], b[i]);
}
template <class Op>
void forward_scalar_b(float* __restrict o, const float* a, float b, int64_t n) {
    for (int64_t i = 0; i < n; ++i) o[i] = Op::value(a[i], b);
}
template <class Op>
void forward_scalar_a(float* __restrict o, float a, const float* b, int64_t n) {
    for (int64_t i = 0; i < n; ++i) o[i] = Op::value(a, b[i]);
}
template <class Op>
void binary_forward_run(const std::tuple<float*, const float*, const float*>& p, const std::array<int64_t, 3>& s,
                        int64_t n) {
    const auto [o, a, b] = p;
    if (s[0] == 1 && s[1] == 1 && s[2] == 1) {
        forward_contiguous<Op>(o, a, b, n);
    } else if (s[0] == 1 && s[1] == 1 && s[2] == 0) {
        forward_scalar_b<Op>(o, a, *b, n);
    } else if (s[0] == 1 && s[1] == 0 && s[2] == 1) {
        forward_scalar_a<Op>(o, *a, b, n);
    } else {
        for (int64_t i = 0; i < n; ++i) o[i * s[0]] = Op::value(a[i * s[1]], b[i * s[2]]);
    }
}

// dx[i] (Store) = Op::grad<Which>(a[i], b[i], dy[i]) for a run; s: strides of (dx, dy, a, b).
template <class Store, class Op, int Which>
void backward_contiguous(float* __restrict dx, const float* dy, const float* a, const float* b, int64_t n) {
    for (int64_t i = 0; i < n; ++i) Store::put(dx[i], Op::template grad<Which>(a[i], b[i], dy[i]));
}
template <class Store, class Op, int Which>
void binary_backward_run(const std::tuple<float*, const float*, const float*, const float*>& p,
                         const std::array<int64_t, 4>& s, int64_t n) {
    const auto [dx, dy, a, b] = p;
    if (s[0] == 1 && s[1] == 1 && s[2] == 1 && s[3] == 1) {
        backward_contiguous<Store, Op, Which>(dx, dy, a, b, n);
    } else {
        for (int64_t i = 0; i < n; ++i) {
            Store::put(dx[i * s[0]], Op::template grad<Which>(a[i * s[2]], b[i * s[3]], dy[i * s[1]]));
        }
    }
}

template <class Op>
class BinaryBackward final : public OpNode {
public:
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
            loop.run(std::tuple<float*, const float*, const float*, const float*>{d, dy.data(), ra.data(), rb.data()},
                     binary_backward_run<Store, Op, Which>);
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

template <class Op>
Tensor binary_op(const Tensor& a, const Tensor& b, const char* op) {
    NORMNET_CHECK(a.dtype() == kFloat32 && b.dtype() == kFloat32, op, ": expected float32 tensors, got ", a.dtype(),
                  " and ", b.dtype());
    const Shape shape = broadcast_shapes(a.shape(), b.shape(), op);
    Tensor out = empty(shape);
    const StridedLoop<3> loop(shape, {contiguous_strides(shape), broadcast_strides(a, shape), broadcast_strides(b, shape)});
    loop.run(std::tuple<float*, const float*, const float*>{out.data(), a.data(), b.data()}, binary_forward_run<Op>);
    auto* node = Op::kSavesInputs ? record<BinaryBackward<Op>>(out, {a, b}, {a, b}) : record<BinaryBackward<Op>>(out, {a, b});
    if (node) node->a_shape = a.shape(), node->b_shape = b.shape();
    return out;
}

// ---- The ops ---------------------------------------------------------------------------------

// out = a + b; da = dy, db = dy
struct AddOp {
    static constexpr const char* kBackwardName = "AddBackward0";
    static constexpr bool kSavesInputs = false;
    static float value(float a, float b) { return a + b; }
    template <int Which>
    static float grad(float, float, float dy) { return dy; }
};

// out = a - b; da = dy, db = -dy
struct SubOp {
    static constexpr const char* kBackwardName = "SubBackward0";
    static constexpr bool kSavesInputs = false;
    static float value(float a, float b) { return a - b; }
    template <int Which>
    static float grad(float, float, float dy) { return Which == 0 ? dy : -dy; }
};

// out = a * b; da = dy * b, db = dy * a
struct MulOp {
    static constexpr const char* kBackwardName = "MulBackward0";
    static constexpr bool kSavesInputs = true;
    static float value(float a, float b) { return a * b; }
    template <int Which>
    static float grad(float a, float b, float dy) { return Which == 0 ? dy * b : dy * a; }
};

}  // namespace
}  // namespace detail

Tensor add(const Tensor& a, const Tensor& b) { return detail::binary_op<detail::AddOp>(a, b, "add"); }
Tensor sub(const Tensor& a, const Tensor& b) { return detail::binary_op<detail::SubOp>(a, b, "sub"); }
Tensor mul(const Tensor& a, const Tensor& b) { return detail::binary_op<detail::MulOp>(a, b, "mul"); }

// ---- Scalar forms: x + s and x * s ----------------------------------------------------------

namespace detail {
namespace {

// y: [n] = x + s (kMul false) or x * s (kMul true)
template <bool kMul>
void scalar_forward(float* __restrict y, const float* __restrict x, float s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = kMul ? x[i] * s : x[i] + s;
}

// dx: [n] (Store) = dy * factor
template <class Store>
void scale_backward(float* __restrict dx, const float* __restrict dy, float factor, int64_t n) {
    for (int64_t i = 0; i < n; ++i) Store::put(dx[i], dy[i] * factor);
}

class ScalarBackward final : public OpNode {
public:
    float factor = 1.0f;  // d out / d x: 1 for x + s, s for x * s
    bool is_mul = false;
    const char* name() const override { return is_mul ? "MulBackward1" : "AddBackward1"; }
    void backward(const Tensor& dy) override {
        if (const GradOut dx = grad_out(0)) {
            dx.write([&]<class Store>(float* d) {
                parallel_for(dy.numel(), kElementGrain, [&](int64_t b, int64_t e) {
                    scale_backward<Store>(d + b, dy.data() + b, factor, e - b);
                });
            });
        }
    }
};

template <bool kMul>
Tensor scalar_op(const Tensor& x_in, float s, const char* op) {
    NORMNET_CHECK(x_in.dtype() == kFloat32, op, ": expected a float32 tensor, got ", x_in.dtype());
    const Tensor x = x_in.contiguous();
    Tensor y = empty(x.shape());
    parallel_for(x.numel(), kElementGrain,
                 [&](int64_t b, int64_t e) { scalar_forward<kMul>(y.data() + b, x.data() + b, s, e - b); });
    if (auto* node = record<ScalarBackward>(y, {x})) node->factor = kMul ? s : 1.0f, node->is_mul = kMul;
    return y;
}

}  // namespace
}  // namespace detail

Tensor add(const Tensor& a, float b) { return detail::scalar_op<false>(a, b, "add"); }
Tensor mul(const Tensor& a, float b) { return detail::scalar_op<true>(a, b, "mul"); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator+(const Tensor& a, float b) { return add(a, b); }
Tensor operator-(const Tensor& a, float b) { return add(a, -b); }
Tensor operator*(const Tensor& a, float b) { return mul(a, b); }
Tensor operator*(float a, const Tensor& b) { return mul(b, a); }
Tensor operator-(const Tensor& a) { return mul(a, -1.0f); }

}  // namespace normnet
