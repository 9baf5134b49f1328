// LinearLR, as torch.optim.lr_scheduler.LinearLR (1.13): the factor of the base lr moves linearly
// from start_factor to end_factor over total_iters epochs, chainable (each step multiplies the
// current lr by the ratio of consecutive factors), with torch's closed form for SequentialLR.
#include <algorithm>
#include <cmath>

#include "normnet/optim.hpp"

namespace normnet {
namespace {

Optimizer& checked(Optimizer& optimizer, const LinearLROptions& o) {
    // torch 1.13 accepts start_factor 0, then divides by zero on the second step.
    NORMNET_CHECK(o.start_factor > 0.0 && o.start_factor <= 1.0, "LinearLR: start_factor must be in (0, 1], got ",
                  o.start_factor);
    NORMNET_CHECK(o.end_factor >= 0.0 && o.end_factor <= 1.0, "LinearLR: end_factor must be in [0, 1], got ",
                  o.end_factor);
    NORMNET_CHECK(o.total_iters >= 1, "LinearLR: total_iters must be >= 1, got ", o.total_iters);
    return optimizer;
}

}  // namespace

LinearLR::LinearLR(Optimizer& optimizer, LinearLROptions options)
    : LRSchedulerBase(checked(optimizer, options)), options_(options) {
    initial_step();
}

double LinearLR::get_lr(size_t group) {
    const double lr = optimizer_->lr(group), start = options_.start_factor, end = options_.end_factor;
    const auto total = static_cast<double>(options_.total_iters);
    if (last_epoch_ == 0) return lr * start;
    if (last_epoch_ > options_.total_iters) return lr;
    return lr * (1.0 + (end - start) / (total * start + static_cast<double>(last_epoch_ - 1) * (end - start)));
}

double LinearLR::closed_form_lr(size_t group) {
    const double start = options_.start_factor, end = options_.end_factor;
    const auto done = static_cast<double>(std::min(options_.total_iters(), last_epoch_));
    return base_lrs_[group] * (start + (end - start) * done / static_cast<double>(options_.total_iters));
}

}  // namespace normnet
