// CyclicLR, as torch.optim.lr_scheduler.CyclicLR (1.13): the lr of each group moves between
// base_lr and max_lr in triangles of step_size_up + step_size_down iterations, the amplitude
// scaled by the mode (or a custom function); with cycle_momentum the group's momentum moves the
// other way. Not chainable: every step computes the lr from last_epoch, with torch's double
// operations in its order, so the sequence is torch's bit for bit.
#include <cmath>

#include "normnet/optim.hpp"

namespace normnet {
namespace {

// torch sets the lrs (and momenta) before its base constructor reads initial_lr from them.
Optimizer& prepared(Optimizer& optimizer, const CyclicLROptions& o) {
    const size_t groups = optimizer.num_param_groups();
    NORMNET_CHECK(!o.base_lr.values.empty() && !o.max_lr.values.empty(), "CyclicLR: base_lr and max_lr are required");
    NORMNET_CHECK(o.step_size_up >= 1, "CyclicLR: step_size_up must be >= 1, got ", o.step_size_up);
    NORMNET_CHECK(!o.step_size_down || *o.step_size_down >= 0, "CyclicLR: step_size_down must be >= 0, got ",
                  o.step_size_down.value_or(0));
    NORMNET_CHECK(std::isfinite(o.gamma) && o.gamma > 0.0, "CyclicLR: gamma must be finite and > 0, got ", o.gamma);
    NORMNET_CHECK(!o.cycle_momentum || optimizer.defaults().momentum, "CyclicLR: ", optimizer.name(),
                  " has no momentum; make it with cycle_momentum = false (optimizer must support momentum with "
                  "cycle_momentum)");
    for (size_t g = 0; g < groups; ++g) {
        const double base = o.base_lr.at(g, groups, "CyclicLR", "base_lr"), max = o.max_lr.at(g, groups, "CyclicLR", "max_lr");
        NORMNET_CHECK(std::isfinite(base) && base >= 0.0 && std::isfinite(max) && max >= 0.0,
                      "CyclicLR: base_lr and max_lr must be finite and >= 0, got ", base, " and ", max);
        if (o.cycle_momentum) {
            (void)o.max_momentum.at(g, groups, "CyclicLR", "max_momentum");
            optimizer.set_param_group_options(g, {.momentum = o.base_momentum.at(g, groups, "CyclicLR", "base_momentum")});
        }
        optimizer.set_lr(g, base);
    }
    return optimizer;
}

}  // namespace

CyclicLR::CyclicLR(Optimizer& optimizer, CyclicLROptions options)
    : LRSchedulerBase(prepared(optimizer, options)), options_(std::move(options)) {
    const auto up = static_cast<double>(options_.step_size_up);
    const double down = options_.step_size_down ? static_cast<double>(*options_.step_size_down) : up;
    total_size_ = up + down;
    step_ratio_ = up / total_size_;
    if (!options_.scale_fn) {  // the mode decides what the scaling is given
        options_.scale_mode = options_.mode == CyclicMode::exp_range ? CyclicScaleMode::iterations : CyclicScaleMode::cycle;
    }
    const size_t groups = optimizer.num_param_groups();
    for (size_t g = 0; g < groups; ++g) {
        max_lrs_.push_back(options_.max_lr.at(g, groups, name(), "max_lr"));
        if (options_.cycle_momentum) {
            base_momentums_.push_back(*optimizer.param_group_options(g).momentum);
            max_momentums_.push_back(options_.max_momentum.at(g, groups, name(), "max_momentum"));
        }
    }
    initial_step();
    // As torch: the first step used the groups' initial_lr; from here on, base_lr.
    for (size_t g = 0; g < groups; ++g) base_lrs_[g] = options_.base_lr.at(g, groups, name(), "base_lr");
}

double CyclicLR::scale(double x) const {
    if (options_.scale_fn) return options_.scale_fn(x);
    switch (options_.mode) {
        case CyclicMode::triangular: return 1.0;
        case CyclicMode::triangular2: return 1.0 / std::pow(2.0, x - 1.0);
        case CyclicMode::exp_range: return std::pow(options_.gamma, x);
    }
    return 1.0;
}

double CyclicLR::get_lr(size_t group) {
    const auto e = static_cast<double>(last_epoch_);
    const double cycle = std::floor(1.0 + e / total_size_);
    const double x = 1.0 + e / total_size_ - cycle;
    const double scale_factor = x <= step_ratio_ ? x / step_ratio_ : (x - 1.0) / (step_ratio_ - 1.0);
    const double s = scale(options_.scale_mode == CyclicScaleMode::cycle ? cycle : e);
    const double lr = base_lrs_[group] + (max_lrs_[group] - base_lrs_[group]) * scale_factor * s;
    if (options_.cycle_momentum) {
        const double base_height = (max_momentums_[group] - base_momentums_[group]) * scale_factor;
        optimizer_->set_param_group_options(group, {.momentum = max_momentums_[group] - base_height * s});
    }
    return lr;
}

}  // namespace normnet
