// Adagrad, matching torch.optim.Adagrad (1.13, dense gradients) bit for bit: the same float32
// operations in the same order, with the fused multiply-adds of torch's CPU kernels (add with
// alpha and addcmul contract to one fma; addcdiv does not). The step size lr / (1 + (t - 1) *
// lr_decay) is computed in double, as torch computes it in Python floats.

// Every rounding happens where the source says (see the header). Included before anything else.
#include "exact_rounding.hpp"

#include <cmath>

#include "elementwise_step.hpp"
#include "kernel_support.hpp"
#include "kernels.hpp"

namespace normnet {
namespace detail {

AdagradScalars adagrad_scalars(const AdagradOptions& o, int64_t step) {
    const double clr = o.lr / (1.0 + (static_cast<double>(step) - 1.0) * o.lr_decay);
    return {static_cast<float>(o.weight_decay), static_cast<float>(o.eps), static_cast<float>(-clr)};
}

// param, sum: [n] updated; grad: [n]. A plain loop: GCC vectorises its sqrt and division.
void adagrad_update(float* __restrict param, float* __restrict sum, const float* __restrict grad, int64_t n,
                    const AdagradScalars& scalars) {
    const AdagradScalars s = scalars;  // a local copy: the float stores below cannot alias it
    with_flags(
        [&]<bool kDecay>() {
            for (int64_t i = 0; i < n; ++i) {
                float g = grad[i];
                if constexpr (kDecay) g = madd(s.weight_decay, param[i], g);  // grad.add(param, alpha=wd)
                const float acc = madd(g, g, sum[i]);                         // sum.addcmul_(g, g, value=1)
                sum[i] = acc;
                const float std_dev = std::sqrt(acc) + s.eps;                 // sum.sqrt().add_(eps)
                param[i] = param[i] + (s.neg_clr * g) / std_dev;              // param.addcdiv_(g, std, value=-clr)
            }
        },
        s.weight_decay != 0.0f);
}

}  // namespace detail

namespace {

ParamGroupOptions adagrad_defaults(const AdagradOptions& o) {
    return {.lr = o.lr, .weight_decay = o.weight_decay, .eps = o.eps, .lr_decay = o.lr_decay,
            .initial_accumulator_value = o.initial_accumulator_value};
}

}  // namespace

Adagrad::Adagrad(std::vector<ParamGroup> groups, AdagradOptions options)
    : Optimizer(std::move(groups), adagrad_defaults(options)) {
    check_param_groups();
    // torch.optim.Adagrad (1.13 and 2.x) fills every sum with the constructor's value and ignores
    // a group's own: a group that sets another one would silently not get it there, so it is refused.
    const double initial = *defaults().initial_accumulator_value;
    for (size_t g = 0; g < num_param_groups(); ++g) {
        const double own = this->options(g).initial_accumulator_value;
        NORMNET_CHECK(own == initial, who(g), ": initial_accumulator_value ", own, " differs from the optimizer's (",
                      initial, "), which torch.optim.Adagrad uses for every group; give it in AdagradOptions");
    }
    count_param_steps();
    sum_ = add_state("sum");
    // As torch: every parameter's sum exists from the start, filled with the initial value.
    for (size_t i = 0; i < params().size(); ++i) state(sum_)[i] = full(params()[i].second.shape(), initial);
}

Adagrad::Adagrad(NamedTensors params, AdagradOptions options)
    : Adagrad(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

Adagrad::Adagrad(std::initializer_list<ParamGroup> groups, AdagradOptions options)
    : Adagrad(std::vector<ParamGroup>(groups), options) {}

Adagrad::Adagrad(const std::vector<Tensor>& params, AdagradOptions options)
    : Adagrad(std::vector<ParamGroup>{ParamGroup(params)}, options) {}

AdagradOptions Adagrad::options(size_t group) const {
    const ParamGroupOptions& g = param_group_options(group);
    return {.lr = *g.lr, .lr_decay = *g.lr_decay, .weight_decay = *g.weight_decay,
            .initial_accumulator_value = *g.initial_accumulator_value, .eps = *g.eps};
}

void Adagrad::check_options(const ParamGroupOptions& g, const GroupName& who) const {
    // PyTorch's rules, plus rejecting NaN and infinity, which its `< 0` tests let through.
    const double lr = *g.lr, lr_decay = *g.lr_decay, weight_decay = *g.weight_decay;
    const double initial = *g.initial_accumulator_value, eps = *g.eps;
    NORMNET_CHECK(std::isfinite(lr) && lr >= 0.0, who, ": invalid learning rate (lr) ", lr, ": it must be finite and >= 0");
    NORMNET_CHECK(std::isfinite(lr_decay) && lr_decay >= 0.0, who, ": invalid lr_decay ", lr_decay,
                  ": it must be finite and >= 0");
    NORMNET_CHECK(std::isfinite(weight_decay) && weight_decay >= 0.0, who, ": invalid weight_decay ", weight_decay,
                  ": it must be finite and >= 0");
    NORMNET_CHECK(std::isfinite(initial) && initial >= 0.0, who, ": invalid initial_accumulator_value ", initial,
                  ": it must be finite and >= 0");
    NORMNET_CHECK(std::isfinite(eps) && eps >= 0.0, who, ": invalid eps ", eps, ": it must be finite and >= 0");
}

void Adagrad::step() {
    advance_step();
    auto& sums = state(sum_);
    for (size_t i = 0; i < params().size(); ++i) {
        if (grad_data(i) == nullptr) continue;
        // A sum that load_state_dict reset starts again from the initial value (the constructor's, as above).
        if (!sums[i].defined()) sums[i] = full(params()[i].second.shape(), *defaults().initial_accumulator_value);
        advance_param_step(i);
        params()[i].second.bump_version();  // an in-place update, as in torch
    }
    detail::for_each_parameter_range(params(), [&](size_t i, int64_t b, int64_t e) {
        const float* grad = grad_data(i);
        if (grad == nullptr) return;
        const detail::AdagradScalars s = detail::adagrad_scalars(options(param_group_of(i)), param_step(i));
        detail::adagrad_update(params()[i].second.data() + b, sums[i].data() + b, grad + b, e - b, s);
    }, shard());
}

}  // namespace normnet
