// CosineAnnealingWarmRestarts, as torch.optim.lr_scheduler.CosineAnnealingWarmRestarts (1.13): the
// cosine from each base lr to eta_min over T_i epochs, restarting with T_i *= T_mult; step()
// counts epochs (T_cur += 1), step(epoch) places a fractional epoch in its cycle. The operations
// are torch's, in its order (T_cur and the restart arithmetic as Python's ints and floats), so
// the sequence is torch's bit for bit.
#include <cmath>
#include <numbers>

#include "exact.hpp"
#include "normnet/optim.hpp"

namespace normnet {
namespace {

Optimizer& checked(Optimizer& optimizer, const CosineAnnealingWarmRestartsOptions& o) {
    NORMNET_CHECK(o.T_0 >= 1, "CosineAnnealingWarmRestarts: T_0 must be a positive integer, got ", o.T_0);
    NORMNET_CHECK(o.T_mult >= 1, "CosineAnnealingWarmRestarts: T_mult must be an integer >= 1, got ", o.T_mult);
    NORMNET_CHECK(std::isfinite(o.eta_min) && o.eta_min >= 0.0,
                  "CosineAnnealingWarmRestarts: eta_min must be finite and >= 0, got ", o.eta_min);
    return optimizer;
}

}  // namespace

CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(Optimizer& optimizer, CosineAnnealingWarmRestartsOptions options)
    : LRSchedulerBase(checked(optimizer, options)), options_(options), T_i_(options.T_0) {
    initial_step();
}

void CosineAnnealingWarmRestarts::step() {
    if (last_epoch_ < 0) {
        set_epoch(0.0);  // torch's first step is step(0)
    } else {
        T_cur_ += 1.0;
        if (T_cur_ >= static_cast<double>(T_i_)) {
            T_cur_ -= static_cast<double>(T_i_);
            NORMNET_CHECK(T_i_ <= INT64_MAX / options_.T_mult, name(), ": the cycle length overflows");
            T_i_ *= options_.T_mult;
        }
    }
    epoch_ = static_cast<double>(last_epoch_ + 1);
    LRSchedulerBase::step();
}

void CosineAnnealingWarmRestarts::step(double epoch) {
    NORMNET_CHECK(epoch >= 0.0 && std::isfinite(epoch), name(), ": expected a finite non-negative epoch, got ", epoch);
    epoch_ = epoch;
    step_to(static_cast<int64_t>(std::floor(epoch)));
}

void CosineAnnealingWarmRestarts::set_epoch(double epoch) {
    const auto T_0 = static_cast<double>(options_.T_0);
    if (epoch < T_0) {
        T_i_ = options_.T_0;
        T_cur_ = epoch;
    } else if (options_.T_mult == 1) {
        T_cur_ = std::fmod(epoch, T_0);
    } else {
        // torch: n = int(log(epoch / T_0 * (T_mult - 1) + 1, T_mult)); the restarts so far
        const auto m = static_cast<double>(options_.T_mult);
        const auto n = static_cast<int64_t>(std::log(epoch / T_0 * (m - 1.0) + 1.0) / std::log(m));
        int64_t power = 1;  // T_mult ** n
        for (int64_t k = 0; k < n; ++k) power *= options_.T_mult;
        T_cur_ = epoch - static_cast<double>(options_.T_0 * (power - 1)) / static_cast<double>(options_.T_mult - 1);
        T_i_ = options_.T_0 * power;
    }
}

double CosineAnnealingWarmRestarts::get_lr(size_t group) {
    constexpr double pi = std::numbers::pi;
    const double base = base_lrs_[group], eta_min = options_.eta_min;
    return eta_min + (base - eta_min) * (1.0 + std::cos(pi * T_cur_ / static_cast<double>(T_i_))) / 2.0;
}

double CosineAnnealingWarmRestarts::closed_form_lr(size_t group) {
    // step(epoch) set epoch_; a jump from elsewhere (SequentialLR's step_to(0)) gives last_epoch.
    if (std::floor(epoch_) != static_cast<double>(last_epoch_)) epoch_ = static_cast<double>(last_epoch_);
    set_epoch(epoch_);
    return get_lr(group);
}

NamedTensors CosineAnnealingWarmRestarts::state_dict() const {
    NamedTensors s = LRSchedulerBase::state_dict();
    s.emplace_back("T_cur", detail::exact_scalar(T_cur_));
    s.emplace_back("T_i", detail::int64_scalar(T_i_));
    return s;
}

void CosineAnnealingWarmRestarts::load_state_dict(const NamedTensors& state) {
    const std::string who = name() + ": load_state_dict";
    NamedTensors base;
    for (const auto& [key, t] : state) {
        if (key != "T_cur" && key != "T_i") base.emplace_back(key, t);
    }
    const double T_cur = detail::exact_value(entry(state, "T_cur", name()), who, "T_cur");
    const int64_t T_i = detail::int64_value(entry(state, "T_i", name()), who, "T_i");
    NORMNET_CHECK(T_i >= 1 && std::isfinite(T_cur) && T_cur >= 0.0, who, ": \"T_i\" must be >= 1 and \"T_cur\" a finite "
                  "value >= 0, got ", T_i, " and ", T_cur);
    LRSchedulerBase::load_state_dict(base);
    T_cur_ = T_cur;
    T_i_ = T_i;
    epoch_ = static_cast<double>(last_epoch_);
}

}  // namespace normnet
