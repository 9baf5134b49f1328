// Activation functions with their backwards: relu (written out, as the README's example of an
// op), the pointwise activations as structs of the unary machinery (unary.hpp), and softmax and
// log_softmax over any dimension.
#include <algorithm>
#include <cmath>
#include <string_view>

#include "loop.hpp"
#include "normnet/ops.hpp"
#include "activation_ops.hpp"
#include "op.hpp"
#include "unary.hpp"

namespace normnet {
namespace detail {
namespace {

// ---- relu ---------------------------------------------------------------------------------
// As torch: y = 0 where x < 0, else x (NaN and -0.0 pass through); dx = dy where y > 0 or y is
// NaN, else 0. The kernels take restrict pointers as plain arguments: read through a lambda's
// captures, the pointers were reloaded on every element and the loop stayed scalar.

// y: [n] = relu(x)
void relu_forward(float* __restrict y, const float* __restrict x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

// dx: [n] (Store) = y <= 0 ? 0 : dy
template <class Store>
void relu_backward(float* __restrict dx, const float* __restrict dy, const float* __restrict y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) Store::put(dx[i], y[i] <= 0.0f ? 0.0f : dy[i]);
}

// dy: [n] = y <= 0 ? 0 : dy, in place (dx written over dy)
void relu_backward_over(float* __restrict dy, const float* __restrict y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dy[i] = y[i] <= 0.0f ? 0.0f : dy[i];
}

class ReluBackward final : public OpNode {
public:
    const char* name() const override { return "ReluBackward0"; }
    void backward(const Tensor& dy) override {
        const Tensor& y = saved(0);
        if (const GradOut over = grad_over_dout(0, dy)) {
            // dx written over dy when the engine allows: one activation-sized buffer fewer.
            parallel_for(y.numel(), kElementGrain,
                         [&](int64_t b, int64_t e) { relu_backward_over(over.data + b, y.data() + b, e - b); });
            return;
        }
        if (const GradOut dx = grad_out(0)) {
            dx.write([&]<class Store>(float* d) {
                parallel_for(y.numel(), kElementGrain, [&](int64_t b, int64_t e) {
                    relu_backward<Store>(d + b, dy.data() + b, y.data() + b, e - b);
                });
            });
        }
    }
};

}  // namespace
}  // namespace detail

Tensor relu(const Tensor& x_in) {
    NORMNET_CHECK(x_in.dtype() == kFloat32, "relu: expected a float32 tensor, got ", x_in.dtype());
    const Tensor x = x_in.contiguous();
    Tensor y = empty(x.shape());
    detail::parallel_for(x.numel(), detail::kElementGrain,
                         [&](int64_t b, int64_t e) { detail::relu_forward(y.data() + b, x.data() + b, e - b); });
    detail::record<detail::ReluBackward>(y, {x}, {y});  // output, inputs, saved tensors
    return y;
}

// ---- pointwise activations ----------------------------------------------------------------
// Forward formulas as torch's kernels (Activation.cpp), except where a rewrite is exact in real
// arithmetic and more accurate in float: the tanh form of GELU as x * sigmoid(2z), and sigmoid
// and SiLU keeping their precision for large negative x (torch's 1 / (1 + e^-x) flushes to 0).

namespace detail {
namespace {

// y = x > 0 ? x : slope * x; dx = dy or slope * dy
struct LeakyReluOp {
    static constexpr const char* kBackwardName = "LeakyReluBackward0";
    static constexpr Uses kUses = Uses::input;
    float slope = 0.01f;
    float value(float x) const { return x > 0.0f ? x : x * slope; }
    float grad(float x, float, float dy) const { return x > 0.0f ? dy : dy * slope; }
};

// y = x <= 0 ? alpha (e^x - 1) : x; dx = dy * alpha e^x or dy. The test is torch's, so NaN takes
// the second branch (its gradient is dy, as torch's).
struct EluOp {
    static constexpr const char* kBackwardName = "EluBackward0";
    static constexpr Uses kUses = Uses::input;
    float alpha = 1.0f;
    float value(float x) const { return x <= 0.0f ? vmath::expm1(x) * alpha : x; }
    float grad(float x, float, float dy) const { return x <= 0.0f ? dy * (alpha * vmath::exp(x)) : dy; }
};

// y = x s, s = sigmoid(2z), z = sqrt(2/pi) (x + 0.044715 x^3) (= x (1 + tanh z) / 2);
// dx = dy (s + 2 x s (1 - s) sqrt(2/pi) (1 + 3 * 0.044715 x^2))
struct GeluTanhOp {
    static constexpr const char* kBackwardName = "GeluBackward0";
    static constexpr Uses kUses = Uses::input;
    float value(float x) const { return vmath::gelu_tanh(x); }
    float grad(float x, float, float dy) const {
        const float x2 = x * x;
        const float z = vmath::kGeluBeta * (x + vmath::kGeluKappa * (x2 * x));
        const float s = vmath::sigmoid(z + z);
        const float dz = vmath::kGeluBeta * (1.0f + (3.0f * vmath::kGeluKappa) * x2);
        return dy * (s + 2.0f * x * (s * (1.0f - s)) * dz);
    }
};

// y = x sigmoid(x); dx = dy s (1 + x (1 - s))
struct SiluOp {
    static constexpr const char* kBackwardName = "SiluBackward0";
    static constexpr Uses kUses = Uses::input;
    float value(float x) const { return x * vmath::sigmoid(x); }
    float grad(float x, float, float dy) const {
        const float s = vmath::sigmoid(x);
        return dy * (s * (1.0f + x * (1.0f - s)));
    }
};

// y = tanh x; dx = dy (1 - y^2)
struct TanhOp {
    static constexpr const char* kBackwardName = "TanhBackward0";
    static constexpr Uses kUses = Uses::output;
    float value(float x) const { return vmath::tanh(x); }
    float grad(float, float y, float dy) const { return dy * (1.0f - y * y); }
};

// y = 1 / (1 + e^-x); dx = dy (1 - y) y
struct SigmoidOp {
    static constexpr const char* kBackwardName = "SigmoidBackward0";
    static constexpr Uses kUses = Uses::output;
    float value(float x) const { return vmath::sigmoid(x); }
    float grad(float, float y, float dy) const { return dy * ((1.0f - y) * y); }
};

// y = beta x > threshold ? x : log(1 + e^(beta x)) / beta; dx = dy or dy e / (e + 1), e = e^(beta x)
struct SoftplusOp {
    static constexpr const char* kBackwardName = "SoftplusBackward0";
    static constexpr Uses kUses = Uses::input;
    float beta = 1.0f, threshold = 20.0f;
    float value(float x) const {
        const float bx = x * beta;
        return bx > threshold ? x : vmath::log1p(vmath::exp(bx)) / beta;
    }
    float grad(float x, float, float dy) const {
        const float bx = x * beta;
        const float e = vmath::exp(bx);
        return bx > threshold ? dy : dy * e / (e + 1.0f);
    }
};

// y = min(max(x, lo), hi), NaN passing; dx = dy strictly inside (lo, hi) or at NaN, else 0 (torch's
// hardtanh_backward: the bounds themselves take no gradient)
struct HardtanhOp {
    static constexpr const char* kBackwardName = "HardtanhBackward0";
    static constexpr Uses kUses = Uses::input;
    float lo = -1.0f, hi = 1.0f;
    float value(float x) const {
        const float a = x < lo ? lo : x;  // clamp's order: with lo > hi every value is hi
        return a > hi ? hi : a;
    }
    float grad(float x, float, float dy) const { return x <= lo || x >= hi ? 0.0f : dy; }
};

// y = x > 0 ? scale x : scale alpha (e^x - 1); dx = dy scale or dy scale alpha e^x (torch's elu
// kernel with SELU's constants: NaN takes the x > 0 branch of the gradient)
struct SeluOp {
    static constexpr const char* kBackwardName = "EluBackward0";
    static constexpr Uses kUses = Uses::input;
    static constexpr float kAlpha = 1.6732632423543772848170429916717f;
    static constexpr float kScale = 1.0507009873554804934193349852946f;
    float value(float x) const { return x <= 0.0f ? vmath::expm1(x) * (kAlpha * kScale) : x * kScale; }
    float grad(float x, float, float dy) const {
        return x <= 0.0f ? dy * ((kAlpha * kScale) * vmath::exp(x)) : dy * kScale;
    }
};

// y = x t, t = tanh(softplus(x)); dx = dy (t + x sigmoid(x) (1 - t^2))
struct MishOp {
    static constexpr const char* kBackwardName = "MishBackward0";
    static constexpr Uses kUses = Uses::input;
    float value(float x) const { return x * vmath::tanh(vmath::log1p(vmath::exp(x))); }
    float grad(float x, float, float dy) const {
        const float t = vmath::tanh(vmath::log1p(vmath::exp(x)));
        return dy * (t + x * vmath::sigmoid(x) * (1.0f - t * t));
    }
};

// y = x min(max(x + 3, 0), 6) / 6; dx = 0 below -3, dy (x / 3 + 1/2) below 3, dy from 3 on (and at
// NaN). At x = 3 torch 1.13's vectorised kernel gives dy, its scalar tail dy 3/2: the former, which
// a tensor of more than a few elements takes.
struct HardswishOp {
    static constexpr const char* kBackwardName = "HardswishBackward0";
    static constexpr Uses kUses = Uses::input;
    float value(float x) const {
        const float r = x + 3.0f < 0.0f ? 0.0f : x + 3.0f > 6.0f ? 6.0f : x + 3.0f;
        return x * r / 6.0f;
    }
    float grad(float x, float, float dy) const {
        return x < -3.0f ? 0.0f : x < 3.0f ? dy * (x / 3.0f + 0.5f) : dy;
    }
};

}  // namespace
}  // namespace detail

Tensor hardtanh(const Tensor& x, float min_val, float max_val) {
    return detail::unary_op(x, "hardtanh", detail::HardtanhOp{min_val, max_val});
}
Tensor relu6(const Tensor& x) { return detail::unary_op(x, "relu6", detail::HardtanhOp{0.0f, 6.0f}); }
Tensor selu(const Tensor& x) { return detail::unary_op(x, "selu", detail::SeluOp{}); }
Tensor mish(const Tensor& x) { return detail::unary_op(x, "mish", detail::MishOp{}); }
Tensor hardswish(const Tensor& x) { return detail::unary_op(x, "hardswish", detail::HardswishOp{}); }

// prelu: max(0, x) + weight * min(0, x) with one weight per channel (dim 1), or one for all. A
// composition (each step a pass over x; no model of the zoo puts it on a hot path):
// where(x > 0, x, weight * where(x > 0, 0, x)) gives torch's gradients, also at 0 (weight's side)
// and NaN; the inner where keeps x = inf out of weight's gradient (0 * inf would be NaN, torch's is 0).
Tensor prelu(const Tensor& x, const Tensor& weight) {
    NORMNET_CHECK(x.dtype() == kFloat32 && weight.dtype() == kFloat32, "prelu: expected float32 tensors, got ",
                  x.dtype(), " and ", weight.dtype());
    NORMNET_CHECK(weight.dim() <= 1, "prelu: Expected `weight` to be a scalar or 1D tensor, but got ndim = ",
                  weight.dim());
    const int64_t channels = x.dim() >= 2 ? x.size(1) : 1;
    NORMNET_CHECK(weight.numel() == 1 || weight.numel() == channels,
                  "prelu: Mismatch of parameter numbers and input channel size. Found parameter numbers = ",
                  weight.numel(), " and channel size = ", channels, " (input ", x.shape(), ")");
    Tensor w = weight.reshape({weight.numel() == 1 ? 1 : channels});
    if (weight.numel() != 1) {
        Shape s(std::vector<int64_t>(static_cast<size_t>(x.dim() - 1), 1));
        s[0] = channels;
        w = w.view(s);  // [C, 1, ...]: broadcasts against [N, C, ...]
    } else if (x.dim() == 0) {
        w = w.view({});
    }
    const Tensor positive = gt(x, 0.0);
    return where(positive, x, mul(w, where(positive, 0.0, x)));
}

Tensor leaky_relu(const Tensor& x, float negative_slope) {
    return detail::unary_op(x, "leaky_relu", detail::LeakyReluOp{negative_slope});
}
Tensor elu(const Tensor& x, float alpha) { return detail::unary_op(x, "elu", detail::EluOp{alpha}); }
Tensor gelu(const Tensor& x, std::string_view approximate) {
    if (approximate == "none") return detail::unary_op(x, "gelu", detail::GeluOp{});
    NORMNET_CHECK(approximate == "tanh", "gelu: approximate must be 'none' or 'tanh', got '", approximate, "'");
    return detail::unary_op(x, "gelu", detail::GeluTanhOp{});
}
Tensor silu(const Tensor& x) { return detail::unary_op(x, "silu", detail::SiluOp{}); }
Tensor tanh(const Tensor& x) { return detail::unary_op(x, "tanh", detail::TanhOp{}); }
Tensor sigmoid(const Tensor& x) { return detail::unary_op(x, "sigmoid", detail::SigmoidOp{}); }
Tensor softplus(const Tensor& x, float beta, float threshold) {
    return detail::unary_op(x, "softplus", detail::SoftplusOp{beta, threshold});
}

Tensor Tensor::relu() const { return normnet::relu(*this); }
Tensor Tensor::tanh() const { return normnet::tanh(*this); }
Tensor Tensor::sigmoid() const { return normnet::sigmoid(*this); }

// ---- softmax and log_softmax over any dim -----------------------------------------------------
// x is seen as [outer, C, inner], C the softmax dimension. Rows (inner = 1) are done one at a
// time; otherwise blocks of up to kColumns neighbouring columns are done together, the inner
// loops running along them (unit stride, vectorised), with their maxima and sums on the stack.
// Sums of exponentials accumulate in double. log_softmax is formed as (x - max) - log(sum),
// never x - (max + log(sum)): at logits of 1e4 the latter rounds to 1e-3.

namespace detail {
namespace {

constexpr int64_t kColumns = 256;

// y: [R, C] = softmax (kLog false) or log_softmax (kLog true) of each row of x: [R, C]
template <bool kLog>
void softmax_rows_forward(float* __restrict y, const float* __restrict x, int64_t R, int64_t C) {
    for (int64_t r = 0; r < R; ++r) {
        const float* xr = x + r * C;
        float* yr = y + r * C;
        float m = -INFINITY;
#pragma omp simd reduction(max : m)
        for (int64_t c = 0; c < C; ++c) m = xr[c] > m ? xr[c] : m;  // (std::max here stays scalar)
        double s = 0.0;
        if constexpr (kLog) {
#pragma omp simd reduction(+ : s)
            for (int64_t c = 0; c < C; ++c) s += vmath::exp(xr[c] - m);
            const float log_s = static_cast<float>(std::log(s));
            for (int64_t c = 0; c < C; ++c) yr[c] = (xr[c] - m) - log_s;
        } else {
#pragma omp simd reduction(+ : s)
            for (int64_t c = 0; c < C; ++c) {
                const float e = vmath::exp(xr[c] - m);
                yr[c] = e;
                s += e;
            }
            const float inv = static_cast<float>(1.0 / s);
            for (int64_t c = 0; c < C; ++c) yr[c] *= inv;
        }
    }
}

// The same over n <= kColumns neighbouring columns of one [C, inner] block: x, y point at the
// first column's element c = 0.
template <bool kLog>
void softmax_columns_forward(float* __restrict y, const float* __restrict x, int64_t C, int64_t inner, int64_t n) {
    float m[kColumns];
    double s[kColumns];
    for (int64_t j = 0; j < n; ++j) m[j] = -INFINITY, s[j] = 0.0;
    for (int64_t c = 0; c < C; ++c) {
        const float* xc = x + c * inner;
        for (int64_t j = 0; j < n; ++j) m[j] = xc[j] > m[j] ? xc[j] : m[j];
    }
    for (int64_t c = 0; c < C; ++c) {
        const float* xc = x + c * inner;
        float* yc = y + c * inner;
        for (int64_t j = 0; j < n; ++j) {
            const float e = vmath::exp(xc[j] - m[j]);
            if constexpr (!kLog) yc[j] = e;
            s[j] += e;
        }
    }
    float t[kColumns];  // log(sum) or 1 / sum
    for (int64_t j = 0; j < n; ++j) t[j] = static_cast<float>(kLog ? std::log(s[j]) : 1.0 / s[j]);
    for (int64_t c = 0; c < C; ++c) {
        const float* xc = x + c * inner;
        float* yc = y + c * inner;
        for (int64_t j = 0; j < n; ++j) yc[j] = kLog ? (xc[j] - m[j]) - t[j] : yc[j] * t[j];
    }
}

// dx: [R, C] (Store) = y (dy - sum(dy y)) (softmax) or dy - e^y sum(dy) (log_softmax), by rows
template <class Store, bool kLog>
void softmax_rows_backward(float* __restrict dx, const float* __restrict dy, const float* __restrict y, int64_t R,
                           int64_t C) {
    for (int64_t r = 0; r < R; ++r) {
        const float* dyr = dy + r * C;
        const float* yr = y + r * C;
        float* dxr = dx + r * C;
        double s = 0.0;
#pragma omp simd reduction(+ : s)
        for (int64_t c = 0; c < C; ++c) s += kLog ? dyr[c] : dyr[c] * yr[c];
        const float sf = static_cast<float>(s);
        for (int64_t c = 0; c < C; ++c) {
            Store::put(dxr[c], kLog ? dyr[c] - vmath::exp(yr[c]) * sf : yr[c] * (dyr[c] - sf));
        }
    }
}

// The same over n <= kColumns neighbouring columns of one [C, inner] block.
template <class Store, bool kLog>
void softmax_columns_backward(float* __restrict dx, const float* __restrict dy, const float* __restrict y, int64_t C,
                              int64_t inner, int64_t n) {
    double s[kColumns];
    for (int64_t j = 0; j < n; ++j) s[j] = 0.0;
    for (int64_t c = 0; c < C; ++c) {
        const float* dyc = dy + c * inner;
        const float* yc = y + c * inner;
        for (int64_t j = 0; j < n; ++j) s[j] += kLog ? dyc[j] : dyc[j] * yc[j];
    }
    float sf[kColumns];
    for (int64_t j = 0; j < n; ++j) sf[j] = static_cast<float>(s[j]);
    for (int64_t c = 0; c < C; ++c) {
        const float* dyc = dy + c * inner;
        const float* yc = y + c * inner;
        float* dxc = dx + c * inner;
        for (int64_t j = 0; j < n; ++j) {
            Store::put(dxc[j], kLog ? dyc[j] - vmath::exp(yc[j]) * sf[j] : yc[j] * (dyc[j] - sf[j]));
        }
    }
}

// The [outer, C, inner] view of a softmax over one dimension.
struct SoftmaxDims {
    int64_t outer = 1, C = 1, inner = 1;
};

// Calls rows(offset, R) or columns(offset, n) over the whole tensor, split between threads:
// offsets are element offsets of the first row or column of each piece.
template <class Rows, class Columns>
void for_softmax_pieces(const SoftmaxDims& d, Rows&& rows, Columns&& columns) {
    if (d.inner == 1) {
        parallel_for(d.outer, item_grain(d.C),
                     [&](int64_t b, int64_t e) { rows(b * d.C, e - b); });
        return;
    }
    const int64_t blocks = (d.inner + kColumns - 1) / kColumns;  // per outer index
    const int64_t grain = item_grain(d.C * kColumns);
    parallel_for(d.outer * blocks, grain, [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p) {
            const int64_t o = p / blocks, j0 = (p % blocks) * kColumns;
            columns(o * d.C * d.inner + j0, std::min(kColumns, d.inner - j0));
        }
    });
}

template <bool kLog>
class SoftmaxBackward final : public OpNode {
public:
    SoftmaxDims dims;
    const char* name() const override { return kLog ? "LogSoftmaxBackward0" : "SoftmaxBackward0"; }
    void backward(const Tensor& dy) override {
        const GradOut dx = grad_out(0);
        if (!dx) return;
        const float* y = saved(0).data();
        const float* g = dy.data();
        dx.write([&]<class Store>(float* d) {
            for_softmax_pieces(
                dims, [&](int64_t at, int64_t R) { softmax_rows_backward<Store, kLog>(d + at, g + at, y + at, R, dims.C); },
                [&](int64_t at, int64_t n) {
                    softmax_columns_backward<Store, kLog>(d + at, g + at, y + at, dims.C, dims.inner, n);
                });
        });
    }
};

template <bool kLog>
Tensor softmax_op(const Tensor& x_in, int dim, const char* op) {
    NORMNET_CHECK(x_in.dtype() == kFloat32, op, ": expected a float32 tensor, got ", x_in.dtype());
    const int nd = std::max(x_in.dim(), 1);  // a 0-d tensor is one row of one element, as torch
    NORMNET_CHECK(dim >= -nd && dim < nd, op, ": dimension out of range (expected to be in range of [", -nd, ", ",
                  nd - 1, "], but got ", dim, ") for a tensor of shape ", x_in.shape());
    const int d = dim < 0 ? dim + nd : dim;
    const Tensor x = x_in.contiguous();
    SoftmaxDims dims;
    for (int k = 0; k < x.dim(); ++k) {
        (k < d ? dims.outer : k == d ? dims.C : dims.inner) *= x.size(k);
    }
    Tensor y = empty(x.shape());
    float* yp = y.data();
    const float* xp = x.data();
    if (y.numel() > 0) {
        for_softmax_pieces(
            dims, [&](int64_t at, int64_t R) { softmax_rows_forward<kLog>(yp + at, xp + at, R, dims.C); },
            [&](int64_t at, int64_t n) { softmax_columns_forward<kLog>(yp + at, xp + at, dims.C, dims.inner, n); });
    }
    if (auto* node = record<SoftmaxBackward<kLog>>(y, {x}, {y})) node->dims = dims;
    return y;
}

}  // namespace
}  // namespace detail

Tensor softmax(const Tensor& x, int dim) { return detail::softmax_op<false>(x, dim, "softmax"); }
Tensor log_softmax(const Tensor& x, int dim) { return detail::softmax_op<true>(x, dim, "log_softmax"); }
Tensor Tensor::softmax(int dim) const { return normnet::softmax(*this, dim); }
Tensor Tensor::log_softmax(int dim) const { return normnet::log_softmax(*this, dim); }

}  // namespace normnet
