// MultiStepLR, as torch.optim.lr_scheduler.MultiStepLR (1.13): at each milestone the lr is
// multiplied by gamma once per time the milestone is listed; torch's closed form for SequentialLR.
#include <algorithm>
#include <cmath>

#include "normnet/optim.hpp"

namespace normnet {
namespace {

Optimizer& checked(Optimizer& optimizer, const MultiStepLROptions& o) {
    NORMNET_CHECK(std::isfinite(o.gamma) && o.gamma >= 0.0, "MultiStepLR: gamma must be finite and >= 0, got ", o.gamma);
    return optimizer;
}

// torch keeps a Counter: the order does not matter, a repeated milestone counts twice.
MultiStepLROptions sorted(MultiStepLROptions o) {
    std::sort(o.milestones.begin(), o.milestones.end());
    return o;
}

}  // namespace

MultiStepLR::MultiStepLR(Optimizer& optimizer, MultiStepLROptions options)
    : LRSchedulerBase(checked(optimizer, options)), options_(sorted(std::move(options))) {
    initial_step();
}

double MultiStepLR::get_lr(size_t group) {
    const double lr = optimizer_->lr(group);
    const auto [first, last] = std::equal_range(options_.milestones.begin(), options_.milestones.end(), last_epoch_);
    if (first == last) return lr;
    return lr * std::pow(options_.gamma, static_cast<double>(last - first));
}

double MultiStepLR::closed_form_lr(size_t group) {
    // bisect_right: the milestones passed, repeats included.
    const auto passed = std::upper_bound(options_.milestones.begin(), options_.milestones.end(), last_epoch_) -
                        options_.milestones.begin();
    return base_lrs_[group] * std::pow(options_.gamma, static_cast<double>(passed));
}

}  // namespace normnet
