// Elementwise losses and their backwards: mse_loss, l1_loss, smooth_l1_loss, huber_loss,
// binary_cross_entropy and binary_cross_entropy_with_logits; kl_div, a composition, at the end. Each loss is one small struct (its
// value and its partial derivatives in input and target) run by the shared forward and backward
// below, which apply the optional weight and pos_weight and the reduction of loss.hpp; adding a
// loss is a struct and a one-line public function. Formulas and their clamps are torch 1.13's.
#include <algorithm>
#include <cmath>
#include <tuple>

#include "loop.hpp"
#include "loss.hpp"
#include "normnet/ops.hpp"
#include "op.hpp"

namespace normnet {
namespace detail {
namespace {

// ---- The shared machinery -----------------------------------------------------------------------

// loss: [n] = w * op.value(x, t, pw); w and pw are 1 where not given (null)
template <class Op>
void pointwise_loss_forward(float* __restrict loss, const float* x, const float* t, const float* w, const float* pw,
                            const Op& op, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const float v = op.value(x[i], t[i], pw ? pw[i] : 1.0f);
        loss[i] = w ? w[i] * v : v;
    }
}

// d: [n] (Store) = g_i * w_i * dloss/dinput (Which 0) or dloss/dtarget (Which 1), elements [b, e)
template <class Store, class Op, int Which>
void pointwise_loss_backward(float* __restrict d, LossGrad g, const float* x, const float* t, const float* w,
                             const float* pw, const Op& op, int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
        const float p = pw ? pw[i] : 1.0f;
        const float v = Which == 0 ? op.dinput(x[i], t[i], p) : op.dtarget(x[i], t[i], p);
        Store::put(d[i], g[i] * (w ? w[i] * v : v));
    }
}

const float* data_or_null(const Tensor& t) { return t.defined() ? t.data() : nullptr; }

template <class Op>
class PointwiseLossBackward final : public OpNode {
public:
    Op op{};
    Reduction reduction = kMean;
    double divisor = 1.0;
    const char* name() const override { return Op::kBackwardName; }
    void backward(const Tensor& dout) override {
        const LossGrad g = loss_grad(dout, reduction, divisor);
        input_grad<0>(g);
        input_grad<1>(g);
    }

private:
    template <int Which>
    void input_grad(LossGrad g) {
        const GradOut d = grad_out(Which);
        if (!d) return;
        const Tensor &x = saved(0), &t = saved(1);
        const float *w = data_or_null(saved(2)), *pw = data_or_null(saved(3));
        d.write([&]<class Store>(float* out) {
            parallel_for(x.numel(), kElementGrain, [&](int64_t b, int64_t e) {
                pointwise_loss_backward<Store, Op, Which>(out, g, x.data(), t.data(), w, pw, op, b, e);
            });
        });
    }
};

// `w` (a weight or pos_weight) broadcast to `shape`, contiguous; undefined when not given.
Tensor expand_weight(const Tensor& w, const Shape& shape, const char* op, const char* what) {
    if (!w.defined()) return {};
    NORMNET_CHECK(w.dtype() == kFloat32, op, ": expected a float32 ", what, ", got ", w.dtype());
    check_constant_weight(w, op, what);
    bool fits = w.dim() <= shape.size();
    for (int d = 0; fits && d < w.dim(); ++d) {
        const int64_t size = w.shape()[d], want = shape[d + shape.size() - w.dim()];
        fits = size == want || size == 1;
    }
    NORMNET_CHECK(fits, op, ": ", what, " of shape ", w.shape(), " does not broadcast to the input's shape ", shape);
    if (w.shape() == shape) return w.contiguous();
    Tensor out = empty(shape);
    const StridedLoop<2> loop(shape, {contiguous_strides(shape), broadcast_strides(w, shape)});
    loop.run(std::tuple<float*, const float*>{out.data(), w.data()},
             [](const std::tuple<float*, const float*>& p, const std::array<int64_t, 2>& s, int64_t n) {
                 const auto [dst, src] = p;
                 for (int64_t i = 0; i < n; ++i) dst[i * s[0]] = src[i * s[1]];
             });
    return out;
}

template <class Op>
Tensor pointwise_loss(const Tensor& input, const Tensor& target, const Tensor& weight, const Tensor& pos_weight,
                      Reduction reduction, const Op& op) {
    NORMNET_CHECK(input.dtype() == kFloat32 && target.dtype() == kFloat32, Op::kName,
                  ": expected float32 input and target, got ", input.dtype(), " and ", target.dtype());
    NORMNET_CHECK(input.shape() == target.shape(), Op::kName, ": input of shape ", input.shape(),
                  " and target of shape ", target.shape(), " differ");
    const Tensor x = input.contiguous(), t = target.contiguous();
    const Tensor w = expand_weight(weight, x.shape(), Op::kName, "weight");
    const Tensor pw = expand_weight(pos_weight, x.shape(), Op::kName, "pos_weight");
    const int64_t n = x.numel();
    op.check_input(x.data(), n);
    Tensor losses = empty(reduction == kNone ? x.shape() : Shape{n});
    const float *wp = data_or_null(w), *pwp = data_or_null(pw);
    parallel_for(n, kElementGrain, [&](int64_t b, int64_t e) {
        pointwise_loss_forward(losses.data() + b, x.data() + b, t.data() + b, wp ? wp + b : nullptr,
                               pwp ? pwp + b : nullptr, op, e - b);
    });
    Tensor out = reduce_loss(losses, reduction, static_cast<double>(n));
    if (auto* node = record<PointwiseLossBackward<Op>>(out, {x, t}, {x, t, w, pw})) {
        node->op = op, node->reduction = reduction, node->divisor = static_cast<double>(n);
    }
    return out;
}

// ---- The losses ---------------------------------------------------------------------------------
// value(x, t, pw), dinput(x, t, pw), dtarget(x, t, pw); pw is pos_weight (1 unless given).

// Inputs of any value are fine for all but binary_cross_entropy.
struct AnyInput {
    void check_input(const float*, int64_t) const {}
};

// As torch.sign: 0 (and nan) pass through.
float sign_of(float d) { return d > 0.0f ? 1.0f : (d < 0.0f ? -1.0f : d); }

// (x - t)^2
struct MseLoss : AnyInput {
    static constexpr const char* kName = "mse_loss";
    static constexpr const char* kBackwardName = "MseLossBackward0";
    float value(float x, float t, float) const { return (x - t) * (x - t); }
    float dinput(float x, float t, float) const { return 2.0f * (x - t); }
    float dtarget(float x, float t, float) const { return -2.0f * (x - t); }
};

// |x - t|
struct L1Loss : AnyInput {
    static constexpr const char* kName = "l1_loss";
    static constexpr const char* kBackwardName = "L1LossBackward0";
    float value(float x, float t, float) const { return std::abs(x - t); }
    float dinput(float x, float t, float) const { return sign_of(x - t); }
    float dtarget(float x, float t, float) const { return -sign_of(x - t); }
};

// 0.5 d^2 / beta for |d| < beta, else |d| - 0.5 beta; beta 0 is l1 (torch's dispatch, so the
// gradient at d = 0 is 0, not 0/0)
struct SmoothL1Loss : AnyInput {
    static constexpr const char* kName = "smooth_l1_loss";
    static constexpr const char* kBackwardName = "SmoothL1LossBackward0";
    float beta = 1.0f;
    float value(float x, float t, float) const {
        const float z = std::abs(x - t);
        return z < beta ? 0.5f * z * z / beta : z - 0.5f * beta;
    }
    float dinput(float x, float t, float) const {
        const float d = x - t;
        if (beta == 0.0f) return sign_of(d);
        return d < -beta ? -1.0f : (d > beta ? 1.0f : d / beta);
    }
    float dtarget(float x, float t, float p) const { return -dinput(x, t, p); }
};

// 0.5 d^2 for |d| < delta, else delta (|d| - 0.5 delta)
struct HuberLoss : AnyInput {
    static constexpr const char* kName = "huber_loss";
    static constexpr const char* kBackwardName = "HuberLossBackward0";
    float delta = 1.0f;
    float value(float x, float t, float) const {
        const float z = std::abs(x - t);
        return z < delta ? 0.5f * z * z : delta * (z - 0.5f * delta);
    }
    float dinput(float x, float t, float) const {
        const float d = x - t;
        return d < -delta ? -delta : (d > delta ? delta : d);
    }
    float dtarget(float x, float t, float p) const { return -dinput(x, t, p); }
};

// (t - 1) max(log(1 - x), -100) - t max(log x, -100); torch's gradients: (x - t) / max(x (1 - x),
// 1e-12) for the input, -logit(x) for the target
struct BinaryCrossEntropy {
    static constexpr const char* kName = "binary_cross_entropy";
    static constexpr const char* kBackwardName = "BinaryCrossEntropyBackward0";
    void check_input(const float* x, int64_t n) const {
        for (int64_t i = 0; i < n; ++i) {
            NORMNET_CHECK(x[i] >= 0.0f && x[i] <= 1.0f, kName, ": all elements of input should be between 0 and 1, got ",
                          x[i], " at index ", i);
        }
    }
    float value(float x, float t, float) const {
        return (t - 1.0f) * std::max(std::log1p(-x), -100.0f) - t * std::max(std::log(x), -100.0f);
    }
    float dinput(float x, float t, float) const { return (x - t) / std::max((1.0f - x) * x, 1e-12f); }
    float dtarget(float x, float, float) const { return -std::log(x / (1.0f - x)); }
};

// log(1 + e^z) without overflow
float softplus(float z) { return std::max(z, 0.0f) + std::log1p(std::exp(-std::abs(z))); }
// 1 / (1 + e^-z) without overflow
float sigmoid(float z) {
    if (z >= 0.0f) return 1.0f / (1.0f + std::exp(-z));
    const float e = std::exp(z);
    return e / (1.0f + e);
}

// (1 - t) x + (1 + (pw - 1) t) softplus(-x): binary_cross_entropy(sigmoid(x), t) with the
// positive term weighted by pw, exact at logits of +-1e4 (no log of a rounded sigmoid)
struct BinaryCrossEntropyWithLogits : AnyInput {
    static constexpr const char* kName = "binary_cross_entropy_with_logits";
    static constexpr const char* kBackwardName = "BinaryCrossEntropyWithLogitsBackward0";
    float value(float x, float t, float pw) const { return (1.0f - t) * x + (1.0f + (pw - 1.0f) * t) * softplus(-x); }
    float dinput(float x, float t, float pw) const { return (pw * t + 1.0f - t) * sigmoid(x) - pw * t; }
    float dtarget(float x, float, float pw) const { return -x + (pw - 1.0f) * softplus(-x); }
};

}  // namespace
}  // namespace detail

Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& options) {
    return detail::pointwise_loss(input, target, {}, {}, options.reduction, detail::MseLoss{});
}

Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& options) {
    return detail::pointwise_loss(input, target, {}, {}, options.reduction, detail::L1Loss{});
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& options) {
    NORMNET_CHECK(options.beta >= 0.0, "smooth_l1_loss: beta must not be negative, got ", options.beta);
    detail::SmoothL1Loss op;
    op.beta = static_cast<float>(options.beta);
    return detail::pointwise_loss(input, target, {}, {}, options.reduction, op);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& options) {
    NORMNET_CHECK(options.delta > 0.0, "huber_loss: delta must be positive, got ", options.delta);
    detail::HuberLoss op;
    op.delta = static_cast<float>(options.delta);
    return detail::pointwise_loss(input, target, {}, {}, options.reduction, op);
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BinaryCrossEntropyFuncOptions& options) {
    return detail::pointwise_loss(input, target, options.weight, {}, options.reduction, detail::BinaryCrossEntropy{});
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& options) {
    return detail::pointwise_loss(input, target, options.weight, options.pos_weight, options.reduction,
                                  detail::BinaryCrossEntropyWithLogits{});
}

// kl_div: torch 1.13's formula in existing ops (the product, log and where carry the gradients;
// where keeps 0 log 0 at 0, as xlogy).
Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& options) {
    NORMNET_CHECK(input.dtype() == kFloat32 && target.dtype() == kFloat32, "kl_div: expected float32 tensors, got ",
                  input.dtype(), " and ", target.dtype());
    Tensor losses;
    if (options.log_target) {
        losses = mul(exp(target), sub(target, input));
    } else {
        const Tensor t_log_t = where(eq(target, 0.0), 0.0, mul(target, log(target)));
        losses = sub(t_log_t, mul(target, input));
    }
    const KLDivReduction r = options.reduction;
    if (r.batchmean) return input.dim() == 0 ? sum(losses) : div(sum(losses), static_cast<float>(input.size(0)));
    if (r.reduction == kSum) return sum(losses);
    if (r.reduction == kMean) return mean(losses);
    return losses;
}

}  // namespace normnet
