// SGD with momentum, dampening, Nesterov and L2 weight decay, matching torch.optim.SGD (1.13)
// bit for bit: the same float32 operations in the same order, with the fused multiply-adds that
// torch's CPU kernels compile to (its add(other, alpha) is a + alpha * b, contracted to one fma).

// Every rounding happens where the source says (see the header). Included before anything else.
#include "exact_rounding.hpp"

#include <cmath>

#include <algorithm>
#include <vector>

#include "elementwise_step.hpp"
#include "kernel_support.hpp"
#include "kernels.hpp"

namespace normnet {
namespace detail {

SGDScalars sgd_scalars(const SGDOptions& o, double lr, bool first) {
    return {static_cast<float>(-lr), static_cast<float>(o.weight_decay), static_cast<float>(o.momentum),
            static_cast<float>(1.0 - o.dampening), o.nesterov, first};
}

// param: [n] updated, buf: [n] momentum buffer (unused without momentum), grad: [n]
void sgd_update(float* param, float* buf, const float* grad, int64_t n, const SGDScalars& s) {
    // Local copies: stores through the float pointers could alias the struct's floats, which
    // would force a reload per element and keep the loop from vectorising.
    const float neg_lr = s.neg_lr, weight_decay = s.weight_decay, momentum = s.momentum;
    const float one_minus_dampening = s.one_minus_dampening;
    with_flags(
        [&]<bool kDecay, bool kMomentum, bool kNesterov, bool kFirst>() {
            for (int64_t i = 0; i < n; ++i) {
                float d = kDecay ? madd(weight_decay, param[i], grad[i]) : grad[i];
                if constexpr (kMomentum) {
                    // torch: buf.mul_(momentum) is one kernel, .add_(d, alpha=1-dampening) the next.
                    const float b = kFirst ? d : madd(one_minus_dampening, d, buf[i] * momentum);
                    buf[i] = b;
                    d = kNesterov ? madd(momentum, b, d) : b;
                }
                param[i] = madd(neg_lr, d, param[i]);
            }
        },
        s.weight_decay != 0.0f, s.momentum != 0.0f, s.nesterov, s.first);
}

}  // namespace detail

namespace {

ParamGroupOptions sgd_defaults(const SGDOptions& o) {
    return {.lr = o.lr, .weight_decay = o.weight_decay, .momentum = o.momentum, .dampening = o.dampening,
            .nesterov = o.nesterov};
}

}  // namespace

SGD::SGD(std::vector<ParamGroup> groups, SGDOptions options) : Optimizer(std::move(groups), sgd_defaults(options)) {
    check_param_groups();
    momentum_buffer_ = add_state("momentum_buffer");
}

SGD::SGD(NamedTensors params, SGDOptions options) : SGD(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

SGD::SGD(std::initializer_list<ParamGroup> groups, SGDOptions options)
    : SGD(std::vector<ParamGroup>(groups), options) {}

SGD::SGD(const std::vector<Tensor>& params, SGDOptions options)
    : SGD(std::vector<ParamGroup>{ParamGroup(params)}, options) {}

SGDOptions SGD::options(size_t group) const {
    const ParamGroupOptions& g = param_group_options(group);
    return {.lr = *g.lr, .momentum = *g.momentum, .dampening = *g.dampening, .weight_decay = *g.weight_decay,
            .nesterov = *g.nesterov};
}

void SGD::check_options(const ParamGroupOptions& g, const GroupName& who) const {
    // PyTorch's rules, plus rejecting NaN and infinity, which its `< 0` tests let through.
    const double lr = *g.lr, momentum = *g.momentum, dampening = *g.dampening, weight_decay = *g.weight_decay;
    NORMNET_CHECK(std::isfinite(lr) && lr >= 0.0, who, ": invalid learning rate (lr) ", lr, ": it must be finite and >= 0");
    NORMNET_CHECK(std::isfinite(momentum) && momentum >= 0.0, who, ": invalid momentum ", momentum,
          ": it must be finite and >= 0");
    NORMNET_CHECK(std::isfinite(dampening), who, ": invalid dampening ", dampening, ": it must be finite");
    NORMNET_CHECK(std::isfinite(weight_decay) && weight_decay >= 0.0, who, ": invalid weight_decay ", weight_decay,
          ": it must be finite and >= 0");
    NORMNET_CHECK(!*g.nesterov || (momentum > 0.0 && dampening == 0.0), who,
          ": nesterov momentum requires a momentum > 0 and zero dampening (got momentum ", momentum, ", dampening ",
          dampening, ")");
}

void SGD::step() {
    advance_step();
    auto& buffers = state(momentum_buffer_);
    // A momentum buffer starts as the parameter's first gradient (PyTorch's rule): such first
    // updates (a parameter's first step with momentum) run here; every other update runs in one
    // parallel pass.
    std::vector<size_t> started;  // empty, and so not allocated, after the first step
    for (size_t i = 0; i < params().size(); ++i) {
        const float* grad = grad_data(i);
        if (grad == nullptr || buffers[i].defined()) continue;
        const SGDOptions o = options(param_group_of(i));
        if (o.momentum == 0.0) continue;
        const Tensor& p = params()[i].second;
        buffers[i] = empty(p.shape());
        detail::sgd_update(p.data(), buffers[i].data(), grad, p.numel(), detail::sgd_scalars(o, o.lr, true));
        started.push_back(i);
    }
    for (size_t i = 0; i < params().size(); ++i) {
        if (grad_data(i) != nullptr) params()[i].second.bump_version();  // an in-place update, as in torch
    }
    detail::for_each_parameter_range(params(), [&](size_t i, int64_t b, int64_t e) {
        const float* grad = grad_data(i);
        if (grad == nullptr || std::find(started.begin(), started.end(), i) != started.end()) return;
        const SGDOptions o = options(param_group_of(i));
        detail::sgd_update(params()[i].second.data() + b, o.momentum != 0.0 ? buffers[i].data() + b : nullptr, grad + b,
                           e - b, detail::sgd_scalars(o, o.lr, false));
    }, shard());
}

}  // namespace normnet
