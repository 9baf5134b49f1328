// RAdam, matching torch.optim.RAdam (1.13, single-tensor path) bit for bit: the same float32
// operations in the same order (the fused multiply-adds of add with alpha and addcmul; Python's
// `scalar / tensor` is reciprocal() times the scalar in torch 1.13). The rectification rho_t and
// r_t are computed in double, as torch computes them in Python floats.

// Every rounding happens where the source says (see the header). Included before anything else.
#include "exact_rounding.hpp"

#include <cmath>
#include <vector>

#include "elementwise_step.hpp"
#include "kernel_support.hpp"
#include "normnet/optim.hpp"

namespace normnet {
namespace {

// The float32 scalars of one parameter's step.
struct RAdamScalars {
    float beta1, one_minus_beta1, beta2, one_minus_beta2, weight_decay, bias_correction1, lr;
    bool rectified;                                 // rho_t > 5: the adaptive step
    float bias_correction2_sqrt, eps, rect;
};

// param, exp_avg, exp_avg_sq: [n] updated; grad: [n]. A plain loop: GCC vectorises its sqrt and
// division.
void radam_update(float* __restrict param, float* __restrict exp_avg, float* __restrict exp_avg_sq,
                  const float* __restrict grad, int64_t n, const RAdamScalars& scalars) {
    const RAdamScalars s = scalars;  // a local copy: the float stores below cannot alias it
    detail::with_flags(
        [&]<bool kDecay, bool kRectified>() {
            for (int64_t i = 0; i < n; ++i) {
                float g = grad[i];
                if constexpr (kDecay) g = detail::madd(s.weight_decay, param[i], g);  // grad.add(param, alpha=wd)
                const float m = detail::madd(s.one_minus_beta1, g, exp_avg[i] * s.beta1);
                const float v = detail::madd(s.one_minus_beta2 * g, g, exp_avg_sq[i] * s.beta2);
                exp_avg[i] = m, exp_avg_sq[i] = v;
                const float corrected = m / s.bias_correction1;  // exp_avg / bias_correction1
                if constexpr (kRectified) {
                    // adaptive_lr = sqrt(bc2) / (sqrt(v) + eps), as reciprocal() * sqrt(bc2)
                    const float adaptive = (1.0f / (std::sqrt(v) + s.eps)) * s.bias_correction2_sqrt;
                    param[i] = param[i] - corrected * s.lr * adaptive * s.rect;  // add_(... * rect, alpha=-1)
                } else {
                    param[i] = param[i] - corrected * s.lr;  // add_(corrected * lr, alpha=-1)
                }
            }
        },
        s.weight_decay != 0.0f, s.rectified);
}

ParamGroupOptions radam_defaults(const RAdamOptions& o) {
    return {.lr = o.lr, .weight_decay = o.weight_decay, .betas = o.betas, .eps = o.eps};
}

}  // namespace

RAdam::RAdam(std::vector<ParamGroup> groups, RAdamOptions options)
    : Optimizer(std::move(groups), radam_defaults(options)) {
    check_param_groups();
    count_param_steps();
    exp_avg_ = add_state("exp_avg");
    exp_avg_sq_ = add_state("exp_avg_sq");
}

RAdam::RAdam(NamedTensors params, RAdamOptions options)
    : RAdam(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

RAdam::RAdam(std::initializer_list<ParamGroup> groups, RAdamOptions options)
    : RAdam(std::vector<ParamGroup>(groups), options) {}

RAdam::RAdam(const std::vector<Tensor>& params, RAdamOptions options)
    : RAdam(std::vector<ParamGroup>{ParamGroup(params)}, options) {}

RAdamOptions RAdam::options(size_t group) const {
    const ParamGroupOptions& g = param_group_options(group);
    return {.lr = *g.lr, .betas = *g.betas, .eps = *g.eps, .weight_decay = *g.weight_decay};
}

void RAdam::check_options(const ParamGroupOptions& g, const GroupName& who) const {
    // PyTorch's rules, plus rejecting NaN and infinity, which its `< 0` tests let through.
    const double lr = *g.lr, eps = *g.eps, weight_decay = *g.weight_decay;
    const auto [beta1, beta2] = *g.betas;
    NORMNET_CHECK(std::isfinite(lr) && lr >= 0.0, who, ": invalid learning rate (lr) ", lr, ": it must be finite and >= 0");
    NORMNET_CHECK(beta1 >= 0.0 && beta1 < 1.0, who, ": invalid betas.first (beta1) ", beta1, ": it must be in [0, 1)");
    NORMNET_CHECK(beta2 >= 0.0 && beta2 < 1.0, who, ": invalid betas.second (beta2) ", beta2, ": it must be in [0, 1)");
    NORMNET_CHECK(std::isfinite(eps) && eps >= 0.0, who, ": invalid eps ", eps, ": it must be finite and >= 0");
    NORMNET_CHECK(std::isfinite(weight_decay) && weight_decay >= 0.0, who, ": invalid weight_decay ", weight_decay,
                  ": it must be finite and >= 0");
}

void RAdam::step() {
    advance_step();
    auto& exp_avg = state(exp_avg_);
    auto& exp_avg_sq = state(exp_avg_sq_);
    std::vector<RAdamScalars> scalars(params().size());
    for (size_t i = 0; i < params().size(); ++i) {
        if (grad_data(i) == nullptr) continue;
        const RAdamOptions o = options(param_group_of(i));
        const Shape& shape = params()[i].second.shape();
        if (!exp_avg[i].defined()) exp_avg[i] = zeros(shape), exp_avg_sq[i] = zeros(shape);
        const auto t = static_cast<double>(advance_param_step(i));
        const auto [beta1, beta2] = o.betas;
        const double bias_correction1 = 1.0 - std::pow(beta1, t), bias_correction2 = 1.0 - std::pow(beta2, t);
        // The length of the approximated simple moving average, and its limit.
        const double rho_inf = 2.0 / (1.0 - beta2) - 1.0;
        const double rho_t = rho_inf - 2.0 * t * std::pow(beta2, t) / bias_correction2;
        const bool rectified = rho_t > 5.0;
        const double rect = rectified ? std::sqrt((rho_t - 4.0) * (rho_t - 2.0) * rho_inf /
                                                  ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t))
                                      : 0.0;
        scalars[i] = {static_cast<float>(beta1),
                      static_cast<float>(1.0 - beta1),
                      static_cast<float>(beta2),
                      static_cast<float>(1.0 - beta2),
                      static_cast<float>(o.weight_decay),
                      static_cast<float>(bias_correction1),
                      static_cast<float>(o.lr),
                      rectified,
                      static_cast<float>(std::sqrt(bias_correction2)),
                      static_cast<float>(o.eps),
                      static_cast<float>(rect)};
        params()[i].second.bump_version();  // an in-place update, as in torch
    }
    detail::for_each_parameter_range(params(), [&](size_t i, int64_t b, int64_t e) {
        const float* grad = grad_data(i);
        if (grad == nullptr) return;
        radam_update(params()[i].second.data() + b, exp_avg[i].data() + b, exp_avg_sq[i].data() + b, grad + b, e - b,
                     scalars[i]);
    }, shard());
}

}  // namespace normnet
