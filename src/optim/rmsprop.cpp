// RMSprop (plain, centered, with momentum), matching torch.optim.RMSprop (1.13) bit for bit: the
// same float32 operations in the same order, with the fused multiply-adds of torch's CPU kernels
// (add(other, alpha) and addcmul are a + alpha * b, contracted to one fma; addcdiv is not).

// Every rounding happens where the source says (see the header). Included before anything else.
#include "exact_rounding.hpp"

#include <cmath>

#include "elementwise_step.hpp"
#include "kernel_support.hpp"
#include "kernels.hpp"

namespace normnet {
namespace detail {

RMSpropScalars rmsprop_scalars(const RMSpropOptions& o) {
    return {static_cast<float>(o.alpha), static_cast<float>(1.0 - o.alpha), static_cast<float>(o.eps),
            static_cast<float>(o.weight_decay), static_cast<float>(o.momentum), static_cast<float>(-o.lr), o.centered};
}

// param, square_avg: [n] updated; grad_avg: [n] updated when centered; buf: [n] updated with
// momentum; grad: [n]. A plain loop: with -fno-math-errno GCC vectorises its sqrt and division,
// and every lane rounds as a scalar would.
void rmsprop_update(float* __restrict param, float* __restrict square_avg, float* __restrict grad_avg,
                    float* __restrict buf, const float* __restrict grad, int64_t n, const RMSpropScalars& scalars) {
    const RMSpropScalars s = scalars;  // a local copy: the float stores below cannot alias it
    with_flags(
        [&]<bool kDecay, bool kCentered, bool kMomentum>() {
            for (int64_t i = 0; i < n; ++i) {
                float g = grad[i];
                if constexpr (kDecay) g = madd(s.weight_decay, param[i], g);     // grad.add(param, alpha=wd)
                const float sa = madd(s.one_minus_alpha * g, g, square_avg[i] * s.alpha);  // mul_(alpha).addcmul_(g, g, 1 - alpha)
                square_avg[i] = sa;
                float avg;
                if constexpr (kCentered) {
                    const float ga = madd(s.one_minus_alpha, g, grad_avg[i] * s.alpha);  // mul_(alpha).add_(g, alpha=1 - alpha)
                    grad_avg[i] = ga;
                    avg = std::sqrt(madd(-ga, ga, sa));  // square_avg.addcmul(ga, ga, value=-1).sqrt_()
                } else {
                    avg = std::sqrt(sa);
                }
                avg = avg + s.eps;  // .add_(eps)
                if constexpr (kMomentum) {
                    const float b = buf[i] * s.momentum + g / avg;  // buf.mul_(momentum).addcdiv_(g, avg)
                    buf[i] = b;
                    param[i] = madd(s.neg_lr, b, param[i]);  // param.add_(buf, alpha=-lr)
                } else {
                    param[i] = param[i] + (s.neg_lr * g) / avg;  // param.addcdiv_(g, avg, value=-lr)
                }
            }
        },
        s.weight_decay != 0.0f, s.centered, s.momentum > 0.0f);
}

}  // namespace detail

namespace {

ParamGroupOptions rmsprop_defaults(const RMSpropOptions& o) {
    return {.lr = o.lr, .weight_decay = o.weight_decay, .momentum = o.momentum, .eps = o.eps, .alpha = o.alpha,
            .centered = o.centered};
}

}  // namespace

RMSprop::RMSprop(std::vector<ParamGroup> groups, RMSpropOptions options)
    : Optimizer(std::move(groups), rmsprop_defaults(options)) {
    check_param_groups();
    count_param_steps();
    square_avg_ = add_state("square_avg");
    momentum_buffer_ = add_state("momentum_buffer", [](const ParamGroupOptions& o) { return *o.momentum > 0.0; });
    grad_avg_ = add_state("grad_avg", [](const ParamGroupOptions& o) { return *o.centered; });
}

RMSprop::RMSprop(NamedTensors params, RMSpropOptions options)
    : RMSprop(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

RMSprop::RMSprop(std::initializer_list<ParamGroup> groups, RMSpropOptions options)
    : RMSprop(std::vector<ParamGroup>(groups), options) {}

RMSprop::RMSprop(const std::vector<Tensor>& params, RMSpropOptions options)
    : RMSprop(std::vector<ParamGroup>{ParamGroup(params)}, options) {}

RMSpropOptions RMSprop::options(size_t group) const {
    const ParamGroupOptions& g = param_group_options(group);
    return {.lr = *g.lr, .alpha = *g.alpha, .eps = *g.eps, .weight_decay = *g.weight_decay, .momentum = *g.momentum,
            .centered = *g.centered};
}

void RMSprop::check_options(const ParamGroupOptions& g, const GroupName& who) const {
    // PyTorch's rules, plus rejecting NaN and infinity, which its `< 0` tests let through.
    const double lr = *g.lr, alpha = *g.alpha, eps = *g.eps, weight_decay = *g.weight_decay, momentum = *g.momentum;
    NORMNET_CHECK(std::isfinite(lr) && lr >= 0.0, who, ": invalid learning rate (lr) ", lr, ": it must be finite and >= 0");
    NORMNET_CHECK(std::isfinite(alpha) && alpha >= 0.0, who, ": invalid alpha ", alpha, ": it must be finite and >= 0");
    NORMNET_CHECK(std::isfinite(eps) && eps >= 0.0, who, ": invalid eps ", eps, ": it must be finite and >= 0");
    NORMNET_CHECK(std::isfinite(weight_decay) && weight_decay >= 0.0, who, ": invalid weight_decay ", weight_decay,
                  ": it must be finite and >= 0");
    NORMNET_CHECK(std::isfinite(momentum) && momentum >= 0.0, who, ": invalid momentum ", momentum,
                  ": it must be finite and >= 0");
}

void RMSprop::step() {
    advance_step();
    auto& square_avg = state(square_avg_);
    auto& buffers = state(momentum_buffer_);
    auto& grad_avg = state(grad_avg_);
    for (size_t i = 0; i < params().size(); ++i) {
        if (grad_data(i) == nullptr) continue;
        const RMSpropOptions o = options(param_group_of(i));
        const Shape& shape = params()[i].second.shape();
        // Zeros on the first step, as torch; a buffer that options turned on later starts at zero too
        // (torch would fail on the missing state).
        if (!square_avg[i].defined()) square_avg[i] = zeros(shape);
        if (o.momentum > 0.0 && !buffers[i].defined()) buffers[i] = zeros(shape);
        if (o.centered && !grad_avg[i].defined()) grad_avg[i] = zeros(shape);
        advance_param_step(i);
        params()[i].second.bump_version();  // an in-place update, as in torch
    }
    detail::for_each_parameter_range(params(), [&](size_t i, int64_t b, int64_t e) {
        const float* grad = grad_data(i);
        if (grad == nullptr) return;
        const RMSpropOptions o = options(param_group_of(i));
        detail::rmsprop_update(params()[i].second.data() + b, square_avg[i].data() + b,
                               o.centered ? grad_avg[i].data() + b : nullptr,
                               o.momentum > 0.0 ? buffers[i].data() + b : nullptr, grad + b, e - b,
                               detail::rmsprop_scalars(o));
    }, shard());
}

}  // namespace normnet
