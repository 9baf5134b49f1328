// StepLR, as torch.optim.lr_scheduler.StepLR (1.13): chainable (the lr is multiplied by gamma at
// every multiple of step_size), with torch's closed form for SequentialLR's milestones.
#include <cmath>

#include "normnet/optim.hpp"

namespace normnet {
namespace {

Optimizer& checked(Optimizer& optimizer, const StepLROptions& o) {
    NORMNET_CHECK(o.step_size >= 1, "StepLR: step_size must be >= 1, got ", o.step_size);
    NORMNET_CHECK(std::isfinite(o.gamma) && o.gamma >= 0.0, "StepLR: gamma must be finite and >= 0, got ", o.gamma);
    return optimizer;
}

}  // namespace

StepLR::StepLR(Optimizer& optimizer, StepLROptions options)
    : LRSchedulerBase(checked(optimizer, options)), options_(options) {
    initial_step();
}

double StepLR::get_lr(size_t group) {
    const double lr = optimizer_->lr(group);
    if (last_epoch_ == 0 || last_epoch_ % options_.step_size != 0) return lr;
    return lr * options_.gamma;
}

double StepLR::closed_form_lr(size_t group) {
    return base_lrs_[group] * std::pow(options_.gamma, static_cast<double>(last_epoch_ / options_.step_size));
}

}  // namespace normnet
