// ExponentialLR, as torch.optim.lr_scheduler.ExponentialLR (1.13): the lr is multiplied by gamma
// every epoch (chainable), with torch's closed form for SequentialLR's milestones.
#include <cmath>

#include "normnet/optim.hpp"

namespace normnet {
namespace {

Optimizer& checked(Optimizer& optimizer, const ExponentialLROptions& o) {
    NORMNET_CHECK(std::isfinite(o.gamma) && o.gamma > 0.0, "ExponentialLR: gamma must be finite and > 0 (torch requires it), got ", o.gamma);
    return optimizer;
}

}  // namespace

ExponentialLR::ExponentialLR(Optimizer& optimizer, ExponentialLROptions options)
    : LRSchedulerBase(checked(optimizer, options)), options_(options) {
    initial_step();
}

double ExponentialLR::get_lr(size_t group) {
    const double lr = optimizer_->lr(group);
    return last_epoch_ == 0 ? lr : lr * options_.gamma;
}

double ExponentialLR::closed_form_lr(size_t group) {
    return base_lrs_[group] * std::pow(options_.gamma, static_cast<double>(last_epoch_));
}

}  // namespace normnet
