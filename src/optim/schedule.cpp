// LRScheduler, the schedules the `normnet` command steps once per batch: constant, step decay and
// cosine annealing, each with an optional linear warm-up, in closed form (lr_at(t)), so a resumed
// run only needs the position; each parameter group is scaled from its own base lr. The values are
// torch's LambdaLR / StepLR / CosineAnnealingLR sequences (tests/golden/schedule.safetensors).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "normnet/optim.hpp"

namespace normnet {
namespace {

LRSchedulerOptions checked(const LRSchedulerOptions& o) {
    NORMNET_CHECK(o.warmup_steps >= 0, "LRScheduler: warmup_steps must be >= 0, got ", o.warmup_steps);
    NORMNET_CHECK(o.total_steps >= 0, "LRScheduler: total_steps must be >= 0, got ", o.total_steps);
    switch (o.schedule) {
        case Schedule::constant:
            break;
        case Schedule::step:
            NORMNET_CHECK(o.step_size >= 1, "LRScheduler: step_size must be >= 1, got ", o.step_size);
            NORMNET_CHECK(std::isfinite(o.gamma) && o.gamma > 0.0, "LRScheduler: gamma must be finite and > 0, got ", o.gamma);
            break;
        case Schedule::cosine:
            // The cosine needs a horizon after the warm-up: T = total_steps - warmup_steps.
            NORMNET_CHECK(o.total_steps > o.warmup_steps, "LRScheduler: the cosine schedule needs total_steps > warmup_steps, got total_steps ",
                  o.total_steps, " and warmup_steps ", o.warmup_steps);
            NORMNET_CHECK(std::isfinite(o.eta_min) && o.eta_min >= 0.0, "LRScheduler: eta_min must be finite and >= 0, got ",
                  o.eta_min);
            break;
        default:
            fail("LRScheduler: unknown schedule ", static_cast<int>(o.schedule()));
    }
    return o;
}

}  // namespace

LRScheduler::LRScheduler(Optimizer& optimizer, LRSchedulerOptions options)
    : optimizer_(&optimizer), options_(checked(options)) {
    for (size_t g = 0; g < optimizer.num_param_groups(); ++g) base_lrs_.push_back(optimizer.lr(g));
    set_position(0);
}

void LRScheduler::step() {
    // A position restored from a checkpoint can be anything up to INT64_MAX; never overflow it.
    NORMNET_CHECK(position_ < std::numeric_limits<int64_t>::max(), "LRScheduler: cannot step past position ", position_);
    set_position(position_ + 1);
}

void LRScheduler::set_position(int64_t t) {
    NORMNET_CHECK(t >= 0, "LRScheduler: position must be >= 0, got ", t);
    for (size_t g = 0; g < base_lrs_.size(); ++g) optimizer_->set_lr(g, lr_at(t, g));
    position_ = t;
}

double LRScheduler::lr_at(int64_t t, size_t group) const {
    NORMNET_CHECK(t >= 0, "LRScheduler: lr_at needs a step >= 0, got ", t);
    NORMNET_CHECK(group < base_lrs_.size(), "LRScheduler: no parameter group ", group, " (the optimizer has ",
                  base_lrs_.size(), ")");
    const double base_lr = base_lrs_[group];
    const int64_t w = options_.warmup_steps;
    // As torch's LambdaLR: base * factor, the warm-up ending at the base lr on step w - 1.
    if (t < w) return base_lr * (static_cast<double>(t + 1) / static_cast<double>(w));
    const int64_t s = t - w;
    switch (options_.schedule) {
        case Schedule::constant:
            return base_lr;
        case Schedule::step:
            return base_lr * std::pow(options_.gamma, static_cast<double>(s / options_.step_size));
        case Schedule::cosine: {
            const int64_t horizon = options_.total_steps - w;
            // Past the horizon the lr stays at eta_min (torch's cosine would rise again).
            const double x = static_cast<double>(std::min(s, horizon)) / static_cast<double>(horizon);
            const double eta_min = options_.eta_min;
            return eta_min + (base_lr - eta_min) * (1.0 + std::cos(std::numbers::pi * x)) / 2.0;
        }
    }
    return base_lr;
}

}  // namespace normnet
