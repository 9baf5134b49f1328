// Adamax, matching torch.optim.Adamax (1.13, single-tensor path) bit for bit: the same float32
// operations in the same order (the fused multiply-adds of add with alpha; amax keeps NaN; addcdiv
// does not fuse). The step size lr / (1 - beta1^t) is computed in double, as torch's Python floats.

// Every rounding happens where the source says (see the header). Included before anything else.
#include "exact_rounding.hpp"

#include <cmath>

#include "elementwise_step.hpp"
#include "kernel_support.hpp"
#include "normnet/optim.hpp"

namespace normnet {
namespace {

// The float32 scalars of one parameter's step.
struct AdamaxScalars {
    float beta1, one_minus_beta1, beta2, weight_decay, eps, neg_clr;
};

// param, exp_avg, exp_inf: [n] updated; grad: [n]
void adamax_update(float* __restrict param, float* __restrict exp_avg, float* __restrict exp_inf,
                   const float* __restrict grad, int64_t n, const AdamaxScalars& scalars) {
    const AdamaxScalars s = scalars;  // a local copy: the float stores below cannot alias it
    detail::with_flags(
        [&]<bool kDecay>() {
            for (int64_t i = 0; i < n; ++i) {
                float g = grad[i];
                if constexpr (kDecay) g = detail::madd(s.weight_decay, param[i], g);  // grad.add(param, alpha=wd)
                const float m = detail::madd(s.one_minus_beta1, g, exp_avg[i] * s.beta1);
                exp_avg[i] = m;
                // amax(cat([exp_inf * beta2, |g| + eps]), 0): the larger, NaN if either is NaN
                const float a = exp_inf[i] * s.beta2, b = std::fabs(g) + s.eps;
                const float u = a != a || b != b ? NAN : a < b ? b : a;
                exp_inf[i] = u;
                param[i] = param[i] + (s.neg_clr * m) / u;  // addcdiv_(exp_avg, exp_inf, value=-clr)
            }
        },
        s.weight_decay != 0.0f);
}

ParamGroupOptions adamax_defaults(const AdamaxOptions& o) {
    return {.lr = o.lr, .weight_decay = o.weight_decay, .betas = o.betas, .eps = o.eps};
}

}  // namespace

Adamax::Adamax(std::vector<ParamGroup> groups, AdamaxOptions options)
    : Optimizer(std::move(groups), adamax_defaults(options)) {
    check_param_groups();
    count_param_steps();
    exp_avg_ = add_state("exp_avg");
    exp_inf_ = add_state("exp_inf");
}

Adamax::Adamax(NamedTensors params, AdamaxOptions options)
    : Adamax(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

Adamax::Adamax(std::initializer_list<ParamGroup> groups, AdamaxOptions options)
    : Adamax(std::vector<ParamGroup>(groups), options) {}

Adamax::Adamax(const std::vector<Tensor>& params, AdamaxOptions options)
    : Adamax(std::vector<ParamGroup>{ParamGroup(params)}, options) {}

AdamaxOptions Adamax::options(size_t group) const {
    const ParamGroupOptions& g = param_group_options(group);
    return {.lr = *g.lr, .betas = *g.betas, .eps = *g.eps, .weight_decay = *g.weight_decay};
}

void Adamax::check_options(const ParamGroupOptions& g, const GroupName& who) const {
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

void Adamax::step() {
    advance_step();
    auto& exp_avg = state(exp_avg_);
    auto& exp_inf = state(exp_inf_);
    for (size_t i = 0; i < params().size(); ++i) {
        if (grad_data(i) == nullptr) continue;
        const Shape& shape = params()[i].second.shape();
        if (!exp_avg[i].defined()) exp_avg[i] = zeros(shape), exp_inf[i] = zeros(shape);
        advance_param_step(i);
        params()[i].second.bump_version();  // an in-place update, as in torch
    }
    detail::for_each_parameter_range(params(), [&](size_t i, int64_t b, int64_t e) {
        const float* grad = grad_data(i);
        if (grad == nullptr) return;
        const AdamaxOptions o = options(param_group_of(i));
        const auto [beta1, beta2] = o.betas;
        const double clr = o.lr / (1.0 - std::pow(beta1, static_cast<double>(param_step(i))));
        const AdamaxScalars s{static_cast<float>(beta1), static_cast<float>(1.0 - beta1), static_cast<float>(beta2),
                              static_cast<float>(o.weight_decay), static_cast<float>(o.eps), static_cast<float>(-clr)};
        adamax_update(params()[i].second.data() + b, exp_avg[i].data() + b, exp_inf[i].data() + b, grad + b, e - b, s);
    }, shard());
}

}  // namespace normnet
