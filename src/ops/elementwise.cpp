// Elementwise ops with their backwards: add, sub, mul (equal shapes, a trailing-dims operand
// repeated over rows, or a one-element operand), scalar add/mul, relu, sum and mean.
#include <algorithm>

#include "../parallel.hpp"
#include "normnet/autograd.hpp"
#include "normnet/ops.hpp"

namespace normnet {
namespace {

// Elements per chunk below which an elementwise loop is not split between threads.
constexpr int64_t kElementGrain = 1 << 14;

enum class BinaryOp { add, sub, mul };

// An operand broadcasts when its shape, without leading 1s, is the trailing part of the other's.
bool broadcasts_to(const Shape& small, const Shape& big) {
    int start = 0;
    while (start < small.size() && small[start] == 1) ++start;
    const int n = small.size() - start;
    if (n > big.size()) return false;
    for (int i = 0; i < n; ++i) {
        if (small[start + i] != big[big.size() - n + i]) return false;
    }
    return true;
}

// Adds scale * src[i] * (other ? other[i % n_other] : 1) into dst[i % n_dst] for i < n:
// the gradient of an operand that was repeated over rows is summed over those rows.
void accumulate(float* dst, int64_t n_dst, const float* src, int64_t n, const float* other, int64_t n_other,
                float scale) {
    for (int64_t i = 0; i < n; ++i) {
        const float o = other ? other[i % n_other] : 1.0f;
        dst[i % n_dst] += scale * src[i] * o;
    }
}

struct BinaryBackward final : Node {
    BinaryOp op = BinaryOp::add;
    Tensor a, b;  // saved for mul only
    int64_t na = 0, nb = 0, n = 0;
    const char* name() const override {
        return op == BinaryOp::add ? "AddBackward0" : op == BinaryOp::sub ? "SubBackward0" : "MulBackward0";
    }
    void backward(const Tensor& dout) override {
        const Tensor da = grad_input(0), db = grad_input(1);
        const bool is_mul = op == BinaryOp::mul;
        if (da.defined()) accumulate(da.data(), na, dout.data(), n, is_mul ? b.data() : nullptr, nb, 1.0f);
        if (db.defined()) {
            accumulate(db.data(), nb, dout.data(), n, is_mul ? a.data() : nullptr, na,
                       op == BinaryOp::sub ? -1.0f : 1.0f);
        }
    }
    void release_saved() override { a = b = Tensor(); }
};

Tensor binary(const Tensor& a_in, const Tensor& b_in, BinaryOp op, const char* op_name) {
    const Shape& sa = a_in.shape();
    const Shape& sb = b_in.shape();
    const bool a_big = sa.numel() > sb.numel() || (sa.numel() == sb.numel() && sa.size() >= sb.size());
    const Shape& big = a_big ? sa : sb;
    const Shape& small = a_big ? sb : sa;
    check(small.numel() == 1 || broadcasts_to(small, big), op_name, ": shapes ", sa, " and ", sb,
          " do not broadcast (one must equal the other's trailing dimensions)");
    const Tensor a = a_in.contiguous(), b = b_in.contiguous();
    const int64_t n = big.numel(), na = a.numel(), nb = b.numel();
    Tensor out = empty(big);
    float* o = out.data();
    const float* pa = a.data();
    const float* pb = b.data();
    for (int64_t i = 0; i < n; ++i) {
        const float x = pa[na == n ? i : i % na], y = pb[nb == n ? i : i % nb];
        o[i] = op == BinaryOp::add ? x + y : op == BinaryOp::sub ? x - y : x * y;
    }
    if (autograd::any_requires_grad({&a, &b})) {
        auto node = autograd::make_node<BinaryBackward>({&a, &b});
        node->op = op;
        node->na = na, node->nb = nb, node->n = n;
        if (op == BinaryOp::mul) {
            node->a = a.detach();
            node->b = b.detach();
        }
        autograd::set_history(out, node);
    }
    return out;
}

struct ScalarBackward final : Node {
    float factor = 1.0f;  // d out / d x
    const char* name() const override { return factor == 1.0f ? "AddBackward1" : "MulBackward1"; }
    void backward(const Tensor& dout) override {
        Tensor dx = grad_input(0);
        if (dx.defined()) dx.add_(dout, factor);
    }
};

Tensor scalar_op(const Tensor& a_in, float add_value, float mul_value) {
    const Tensor a = a_in.contiguous();
    Tensor out = empty(a.shape());
    const float* x = a.data();
    float* o = out.data();
    const int64_t n = a.numel();
    for (int64_t i = 0; i < n; ++i) o[i] = x[i] * mul_value + add_value;
    if (autograd::any_requires_grad({&a})) {
        auto node = autograd::make_node<ScalarBackward>({&a});
        node->factor = mul_value;
        autograd::set_history(out, node);
    }
    return out;
}

// The relu kernels take restrict pointers as plain arguments: read through a lambda's captures,
// the pointers were reloaded on every element and the loop stayed scalar (5% of a batch-32
// epoch's CPU samples).
// y: [n] = max(x, 0)
void relu_forward_kernel(float* __restrict y, const float* __restrict x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

// dx: [n] = (or +=) dy where the output y > 0, else 0
template <bool kAccumulate>
void relu_backward_kernel(float* __restrict dx, const float* __restrict dy, const float* __restrict y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const float g = y[i] > 0.0f ? dy[i] : 0.0f;
        if constexpr (kAccumulate) {
            dx[i] += g;
        } else {
            dx[i] = g;
        }
    }
}

struct ReluBackward final : Node {
    Tensor out;  // saved output: the gradient passes where it is positive
    const char* name() const override { return "ReluBackward0"; }
    void backward(const Tensor& dout) override {
        bool fresh = false;
        Tensor dx = grad_input_for_overwrite(0, fresh);
        if (!dx.defined()) return;
        float* d = dx.data();
        const float* g = dout.data();
        const float* y = out.data();
        detail::parallel_for(out.numel(), kElementGrain, [=](int64_t b, int64_t e) {
            fresh ? relu_backward_kernel<false>(d + b, g + b, y + b, e - b)
                  : relu_backward_kernel<true>(d + b, g + b, y + b, e - b);
        });
    }
    void release_saved() override { out = Tensor(); }
};

struct SumBackward final : Node {
    float scale = 1.0f;  // 1 for sum, 1/n for mean
    const char* name() const override { return scale == 1.0f ? "SumBackward0" : "MeanBackward0"; }
    void backward(const Tensor& dout) override {
        Tensor dx = grad_input(0);
        if (!dx.defined()) return;
        const float g = dout.item() * scale;
        float* d = dx.data();
        const int64_t n = dx.numel();
        for (int64_t i = 0; i < n; ++i) d[i] += g;
    }
};

Tensor reduce_all(const Tensor& x_in, bool average) {
    const Tensor x = x_in.contiguous();
    double acc = 0.0;
    const float* p = x.data();
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) acc += p[i];
    Tensor out = scalar_tensor(static_cast<float>(average ? acc / static_cast<double>(n) : acc));
    if (autograd::any_requires_grad({&x})) {
        auto node = autograd::make_node<SumBackward>({&x});
        node->scale = average ? 1.0f / static_cast<float>(n) : 1.0f;
        autograd::set_history(out, node);
    }
    return out;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return binary(a, b, BinaryOp::add, "add"); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(a, b, BinaryOp::sub, "sub"); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(a, b, BinaryOp::mul, "mul"); }
Tensor add(const Tensor& a, float b) { return scalar_op(a, b, 1.0f); }
Tensor mul(const Tensor& a, float b) { return scalar_op(a, 0.0f, b); }

Tensor relu(const Tensor& x_in) {
    const Tensor x = x_in.contiguous();
    Tensor out = empty(x.shape());
    const float* p = x.data();
    float* o = out.data();
    detail::parallel_for(x.numel(), kElementGrain, [=](int64_t b, int64_t e) { relu_forward_kernel(o + b, p + b, e - b); });
    if (autograd::any_requires_grad({&x})) {
        auto node = autograd::make_node<ReluBackward>({&x});
        node->out = out.detach();
        autograd::set_history(out, node);
    }
    return out;
}

Tensor sum(const Tensor& x) { return reduce_all(x, false); }
Tensor mean(const Tensor& x) { return reduce_all(x, true); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator+(const Tensor& a, float b) { return add(a, b); }
Tensor operator-(const Tensor& a, float b) { return add(a, -b); }
Tensor operator*(const Tensor& a, float b) { return mul(a, b); }
Tensor operator*(float a, const Tensor& b) { return mul(b, a); }
Tensor operator-(const Tensor& a) { return mul(a, -1.0f); }

}  // namespace normnet
