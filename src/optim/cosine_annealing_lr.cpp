// CosineAnnealingLR, as torch.optim.lr_scheduler.CosineAnnealingLR (1.13), in torch's recursive
// form: each step rescales the current lr's distance to eta_min by the ratio of consecutive
// cosine terms, so other changes to the lr carry on (and after T_max the lr rises again, as in
// torch). The operations are torch's, in its order, so the sequence is torch's bit for bit.
#include <cmath>
#include <numbers>

#include "normnet/optim.hpp"

namespace normnet {
namespace {

Optimizer& checked(Optimizer& optimizer, const CosineAnnealingLROptions& o) {
    NORMNET_CHECK(o.T_max >= 1, "CosineAnnealingLR: T_max must be >= 1, got ", o.T_max);
    NORMNET_CHECK(std::isfinite(o.eta_min) && o.eta_min >= 0.0, "CosineAnnealingLR: eta_min must be finite and >= 0, got ",
                  o.eta_min);
    return optimizer;
}

}  // namespace

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, CosineAnnealingLROptions options)
    : LRSchedulerBase(checked(optimizer, options)), options_(options) {
    initial_step();
}

double CosineAnnealingLR::get_lr(size_t group) {
    constexpr double pi = std::numbers::pi;
    const double lr = optimizer_->lr(group), base = base_lrs_[group], eta_min = options_.eta_min;
    const auto e = static_cast<double>(last_epoch_), T = static_cast<double>(options_.T_max);
    if (last_epoch_ == 0) return lr;
    if (step_count() == 1 && last_epoch_ > 0) return eta_min + (base - eta_min) * (1.0 + std::cos(e * pi / T)) / 2.0;
    // The step after each trough, where the ratio below would divide by zero.
    if ((last_epoch_ - 1 - options_.T_max) % (2 * options_.T_max) == 0) {
        return lr + (base - eta_min) * (1.0 - std::cos(pi / T)) / 2.0;
    }
    return (1.0 + std::cos(pi * e / T)) / (1.0 + std::cos(pi * (e - 1.0) / T)) * (lr - eta_min) + eta_min;
}

double CosineAnnealingLR::closed_form_lr(size_t group) {
    constexpr double pi = std::numbers::pi;
    const double base = base_lrs_[group], eta_min = options_.eta_min;
    return eta_min + (base - eta_min) * (1.0 + std::cos(pi * static_cast<double>(last_epoch_) / static_cast<double>(options_.T_max))) / 2.0;
}

}  // namespace normnet
