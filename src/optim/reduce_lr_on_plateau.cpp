// ReduceLROnPlateau, as torch.optim.lr_scheduler.ReduceLROnPlateau (1.13): step(metric) after each
// evaluation; after more than `patience` steps without an improvement beyond the threshold, each
// group's lr is multiplied by factor (not below its min_lr, and only by more than eps), then
// `cooldown` steps pass before bad steps count again.
#include <algorithm>
#include <cmath>
#include <limits>

#include "normnet/optim.hpp"

#include "exact.hpp"

namespace normnet {
namespace {

Optimizer& checked(Optimizer& optimizer, const ReduceLROnPlateauOptions& o) {
    NORMNET_CHECK(o.factor < 1.0 && o.factor >= 0.0, "ReduceLROnPlateau: factor must be in [0, 1), got ", o.factor);
    NORMNET_CHECK(o.patience >= 0, "ReduceLROnPlateau: patience must be >= 0, got ", o.patience);
    NORMNET_CHECK(o.cooldown >= 0, "ReduceLROnPlateau: cooldown must be >= 0, got ", o.cooldown);
    NORMNET_CHECK(std::isfinite(o.threshold), "ReduceLROnPlateau: threshold must be finite, got ", o.threshold);
    NORMNET_CHECK(std::isfinite(o.eps) && o.eps >= 0.0, "ReduceLROnPlateau: eps must be finite and >= 0, got ", o.eps);
    NORMNET_CHECK(o.mode == PlateauMode::min || o.mode == PlateauMode::max, "ReduceLROnPlateau: unknown mode ",
                  static_cast<int>(o.mode()));
    NORMNET_CHECK(o.threshold_mode == ThresholdMode::rel || o.threshold_mode == ThresholdMode::abs,
                  "ReduceLROnPlateau: unknown threshold_mode ", static_cast<int>(o.threshold_mode()));
    for (size_t g = 0; g < optimizer.num_param_groups(); ++g) {
        const double min_lr = o.min_lr.at(g, optimizer.num_param_groups(), "ReduceLROnPlateau", "min_lr");
        NORMNET_CHECK(std::isfinite(min_lr) && min_lr >= 0.0, "ReduceLROnPlateau: min_lr must be finite and >= 0, got ",
                      min_lr);
    }
    return optimizer;
}

// torch's mode_worse: the best value before any step.
double worst(PlateauMode mode) {
    return mode == PlateauMode::min ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
}

}  // namespace

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, ReduceLROnPlateauOptions options)
    : optimizer_(&checked(optimizer, options)), options_(std::move(options)), best_(worst(options_.mode)) {
    for (size_t g = 0; g < optimizer.num_param_groups(); ++g) {
        min_lrs_.push_back(options_.min_lr.at(g, optimizer.num_param_groups(), "ReduceLROnPlateau", "min_lr"));
        last_lr_.push_back(optimizer.lr(g));
    }
}

bool ReduceLROnPlateau::is_better(double a, double best) const {
    const double t = options_.threshold;
    if (options_.mode == PlateauMode::min) {
        return options_.threshold_mode == ThresholdMode::rel ? a < best * (1.0 - t) : a < best - t;
    }
    return options_.threshold_mode == ThresholdMode::rel ? a > best * (t + 1.0) : a > best + t;
}

void ReduceLROnPlateau::step(double metric) {
    ++last_epoch_;
    if (is_better(metric, best_)) {
        best_ = metric;
        num_bad_epochs_ = 0;
    } else {
        ++num_bad_epochs_;
    }
    if (in_cooldown()) {
        --cooldown_counter_;
        num_bad_epochs_ = 0;  // bad epochs in the cooldown do not count
    }
    if (num_bad_epochs_ > options_.patience) {
        for (size_t g = 0; g < last_lr_.size(); ++g) {
            const double old_lr = optimizer_->lr(g);
            const double new_lr = std::max(old_lr * options_.factor, min_lrs_[g]);
            if (old_lr - new_lr > options_.eps) optimizer_->set_lr(g, new_lr);
        }
        cooldown_counter_ = options_.cooldown;
        num_bad_epochs_ = 0;
    }
    for (size_t g = 0; g < last_lr_.size(); ++g) last_lr_[g] = optimizer_->lr(g);
}

NamedTensors ReduceLROnPlateau::state_dict() const {
    return {{"last_epoch", detail::int64_scalar(last_epoch_)},
            {"num_bad_epochs", detail::int64_scalar(num_bad_epochs_)},
            {"cooldown_counter", detail::int64_scalar(cooldown_counter_)},
            {"best", detail::exact_scalar(best_)},
            {"last_lr", detail::exact_vector(last_lr_)}};
}

void ReduceLROnPlateau::load_state_dict(const NamedTensors& state) {
    const std::string who = "ReduceLROnPlateau: load_state_dict";
    auto get = [&](const std::string& key) {
        const Tensor t = find_tensor(state, key);
        NORMNET_CHECK(t.defined(), who, ": missing key \"", key, "\"");
        return t;
    };
    for (const auto& [key, t] : state) {
        NORMNET_CHECK(key == "last_epoch" || key == "num_bad_epochs" || key == "cooldown_counter" || key == "best" ||
                          key == "last_lr",
                      who, ": unexpected key \"", key, "\"");
    }
    const int64_t last_epoch = detail::counter_value(get("last_epoch"), 0, who, "last_epoch");
    const int64_t bad = detail::counter_value(get("num_bad_epochs"), 0, who, "num_bad_epochs");
    const int64_t cooldown = detail::counter_value(get("cooldown_counter"), 0, who, "cooldown_counter");
    const double best = detail::exact_value(get("best"), who, "best");
    const std::vector<double> last_lr = detail::exact_values(get("last_lr"), last_lr_.size(), who, "last_lr");
    last_epoch_ = last_epoch;
    num_bad_epochs_ = bad;
    cooldown_counter_ = cooldown;
    best_ = best;
    last_lr_ = last_lr;
}

}  // namespace normnet
