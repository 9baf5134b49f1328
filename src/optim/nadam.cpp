// NAdam, matching torch.optim.NAdam (1.13, single-tensor path) bit for bit: the same float32
// operations in the same order, with the fused multiply-adds of torch's CPU kernels (add with
// alpha and addcmul contract to one fma; div and addcdiv do not). mu_t and mu_{t+1} are computed
// in double, as torch computes them in Python floats; mu_product is a float32 value per
// parameter, multiplied in float32 as torch's 0-d tensor is, and the two step sizes are
// computed in double from its value.

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
struct NAdamScalars {
    float beta1, one_minus_beta1, beta2, one_minus_beta2, weight_decay, bias_correction2, eps;
    float grad_step, avg_step;  // -lr (1 - mu) / (1 - mu_product), -lr mu_next / (1 - mu_product_next)
};

// param, exp_avg, exp_avg_sq: [n] updated; grad: [n]. A plain loop: GCC vectorises its sqrt and
// division.
void nadam_update(float* __restrict param, float* __restrict exp_avg, float* __restrict exp_avg_sq,
                  const float* __restrict grad, int64_t n, const NAdamScalars& scalars) {
    const NAdamScalars s = scalars;  // a local copy: the float stores below cannot alias it
    detail::with_flags(
        [&]<bool kDecay>() {
            for (int64_t i = 0; i < n; ++i) {
                float g = grad[i];
                if constexpr (kDecay) g = detail::madd(s.weight_decay, param[i], g);  // grad.add(param, alpha=wd)
                const float m = detail::madd(s.one_minus_beta1, g, exp_avg[i] * s.beta1);  // mul_(b1).add_(g, alpha=1-b1)
                const float v = detail::madd(s.one_minus_beta2 * g, g, exp_avg_sq[i] * s.beta2);  // addcmul_(g, g, 1-b2)
                exp_avg[i] = m, exp_avg_sq[i] = v;
                const float denom = std::sqrt(v / s.bias_correction2) + s.eps;  // div(bc2).sqrt().add_(eps)
                const float p = param[i] + (s.grad_step * g) / denom;          // addcdiv_(g, denom, value)
                param[i] = p + (s.avg_step * m) / denom;                        // addcdiv_(exp_avg, denom, value)
            }
        },
        s.weight_decay != 0.0f);
}

ParamGroupOptions nadam_defaults(const NAdamOptions& o) {
    return {.lr = o.lr, .weight_decay = o.weight_decay, .betas = o.betas, .eps = o.eps,
            .momentum_decay = o.momentum_decay};
}

}  // namespace

NAdam::NAdam(std::vector<ParamGroup> groups, NAdamOptions options)
    : Optimizer(std::move(groups), nadam_defaults(options)) {
    check_param_groups();
    count_param_steps();
    exp_avg_ = add_state("exp_avg");
    exp_avg_sq_ = add_state("exp_avg_sq");
    mu_product_ = add_state("mu_product", nullptr, /*scalar=*/true);
}

NAdam::NAdam(NamedTensors params, NAdamOptions options)
    : NAdam(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

NAdam::NAdam(std::initializer_list<ParamGroup> groups, NAdamOptions options)
    : NAdam(std::vector<ParamGroup>(groups), options) {}

NAdam::NAdam(const std::vector<Tensor>& params, NAdamOptions options)
    : NAdam(std::vector<ParamGroup>{ParamGroup(params)}, options) {}

NAdamOptions NAdam::options(size_t group) const {
    const ParamGroupOptions& g = param_group_options(group);
    return {.lr = *g.lr, .betas = *g.betas, .eps = *g.eps, .weight_decay = *g.weight_decay,
            .momentum_decay = *g.momentum_decay};
}

void NAdam::check_options(const ParamGroupOptions& g, const GroupName& who) const {
    // PyTorch's rules, plus rejecting NaN and infinity, which its `< 0` tests let through.
    const double lr = *g.lr, eps = *g.eps, weight_decay = *g.weight_decay, momentum_decay = *g.momentum_decay;
    const auto [beta1, beta2] = *g.betas;
    NORMNET_CHECK(std::isfinite(lr) && lr >= 0.0, who, ": invalid learning rate (lr) ", lr, ": it must be finite and >= 0");
    NORMNET_CHECK(beta1 >= 0.0 && beta1 < 1.0, who, ": invalid betas.first (beta1) ", beta1, ": it must be in [0, 1)");
    NORMNET_CHECK(beta2 >= 0.0 && beta2 < 1.0, who, ": invalid betas.second (beta2) ", beta2, ": it must be in [0, 1)");
    NORMNET_CHECK(std::isfinite(eps) && eps >= 0.0, who, ": invalid eps ", eps, ": it must be finite and >= 0");
    NORMNET_CHECK(std::isfinite(weight_decay) && weight_decay >= 0.0, who, ": invalid weight_decay ", weight_decay,
                  ": it must be finite and >= 0");
    NORMNET_CHECK(std::isfinite(momentum_decay) && momentum_decay >= 0.0, who, ": invalid momentum_decay ",
                  momentum_decay, ": it must be finite and >= 0");
}

void NAdam::step() {
    advance_step();
    auto& exp_avg = state(exp_avg_);
    auto& exp_avg_sq = state(exp_avg_sq_);
    auto& mu_product = state(mu_product_);
    std::vector<NAdamScalars> scalars(params().size());
    for (size_t i = 0; i < params().size(); ++i) {
        if (grad_data(i) == nullptr) continue;
        const NAdamOptions o = options(param_group_of(i));
        const Shape& shape = params()[i].second.shape();
        if (!exp_avg[i].defined()) exp_avg[i] = zeros(shape), exp_avg_sq[i] = zeros(shape);
        if (!mu_product[i].defined()) mu_product[i] = ones({});
        const auto t = static_cast<double>(advance_param_step(i));
        const auto [beta1, beta2] = o.betas;
        const double mu = beta1 * (1.0 - 0.5 * std::pow(0.96, t * o.momentum_decay));
        const double mu_next = beta1 * (1.0 - 0.5 * std::pow(0.96, (t + 1.0) * o.momentum_decay));
        float& product = *mu_product[i].data();
        product = product * static_cast<float>(mu);  // mu_product *= mu (a float32 tensor)
        const float product_next = product * static_cast<float>(mu) * static_cast<float>(mu_next);
        scalars[i] = {static_cast<float>(beta1),
                      static_cast<float>(1.0 - beta1),
                      static_cast<float>(beta2),
                      static_cast<float>(1.0 - beta2),
                      static_cast<float>(o.weight_decay),
                      static_cast<float>(1.0 - std::pow(beta2, t)),
                      static_cast<float>(o.eps),
                      static_cast<float>(-o.lr * (1.0 - mu) / (1.0 - static_cast<double>(product))),
                      static_cast<float>(-o.lr * mu_next / (1.0 - static_cast<double>(product_next)))};
        params()[i].second.bump_version();  // an in-place update, as in torch
    }
    detail::for_each_parameter_range(params(), [&](size_t i, int64_t b, int64_t e) {
        const float* grad = grad_data(i);
        if (grad == nullptr) return;
        nadam_update(params()[i].second.data() + b, exp_avg[i].data() + b, exp_avg_sq[i].data() + b, grad + b, e - b,
                     scalars[i]);
    }, shard());
}

}  // namespace normnet
