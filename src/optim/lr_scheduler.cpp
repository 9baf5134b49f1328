// LRSchedulerBase, the base of PyTorch's schedulers (torch.optim.lr_scheduler._LRScheduler in
// 1.13): initial_lr and base_lrs, the initial step, step() and torch's step(epoch), and the state.
// The subclasses, one file each, give torch's get_lr() and _get_closed_form_lr() formulas, written
// with the same double operations in the same order so the lr sequences are torch's bit for bit.
#include <cmath>
#include <cstdlib>

#include "normnet/optim.hpp"

#include "exact.hpp"

namespace normnet {

double PerGroup::at(size_t g, size_t n, const std::string& who, const char* what) const {
    NORMNET_CHECK(values.size() == 1 || values.size() == n, who, ": expected ", n, " values for ", what,
                  " (one per parameter group) or one for all, got ", values.size());
    return values.size() == 1 ? values[0] : values[g];
}

LRSchedulerBase::LRSchedulerBase(Optimizer& optimizer) : optimizer_(&optimizer) {
    const size_t groups = optimizer.num_param_groups();
    for (size_t g = 0; g < groups; ++g) {
        // torch: group.setdefault('initial_lr', group['lr']): the first scheduler decides.
        if (!optimizer.initial_lr(g)) optimizer.set_initial_lr(g, optimizer.lr(g));
        base_lrs_.push_back(*optimizer.initial_lr(g));
    }
    last_lr_.assign(groups, 0.0);
}

LRSchedulerBase::LRSchedulerBase(Optimizer& optimizer, Composite) : optimizer_(&optimizer), composite_(true) {
    for (size_t g = 0; g < optimizer.num_param_groups(); ++g) last_lr_.push_back(optimizer.lr(g));
}

LRSchedulerBase::~LRSchedulerBase() = default;

void LRSchedulerBase::initial_step() {
    step_count_ = 0;
    step();
}

double LRSchedulerBase::closed_form_lr(size_t group) { return get_lr(group); }

void LRSchedulerBase::step() {
    ++step_count_;
    ++last_epoch_;
    set_lrs(false);
}

void LRSchedulerBase::step_to(int64_t epoch) {
    ++step_count_;
    last_epoch_ = epoch;
    set_lrs(true);
}

// Schedules that end at 0 reach it by cancellation, in torch's formulas as here, and can land a
// few ulps below: LinearLR(end_factor = 0) at total_iters gives -1.5e-18 for a base lr of 0.1, a
// cosine chained with it -2.4e-17. torch goes on with that lr; the optimizers here refuse a
// negative one. A value below 0 by at most kLrRounding times the group's base lr is such a
// rounding and becomes 0: that is 4,500 ulps of the base lr, far more than the recursions
// accumulate (at most 2.4e-17 for a base of 0.1, 2 ulps, over LinearLR(end_factor = 0) with
// totals of 3 to 30 and cosines of T_max 2 to 30 chained with it in torch), and far below any
// step a float32 parameter can take (its resolution is 6e-8 of its value). A larger negative
// value is the schedule's own (a cosine with eta_min chained with a decay overshoots to -5e-5
// from a base of 0.1) and stays an error, where torch would silently ascend the gradient.
constexpr double kLrRounding = 1e-12;

void LRSchedulerBase::set_lrs(bool closed_form) {
    // torch computes every group's value, then sets them; each group's value depends on its own
    // lr only, so group by group is the same.
    for (size_t g = 0; g < last_lr_.size(); ++g) {
        double lr = closed_form ? closed_form_lr(g) : get_lr(g);
        const double base = g < base_lrs_.size() ? base_lrs_[g] : 0.0;
        if (lr < 0.0 && lr >= -kLrRounding * base) lr = 0.0;
        if (!(std::isfinite(lr) && lr >= 0.0)) {
            fail(name(), ": the schedule gives parameter group ", g, " the learning rate ", lr, " at epoch ", last_epoch_);
        }
        optimizer_->set_lr(g, lr);
        last_lr_[g] = lr;
    }
}

const Tensor& LRSchedulerBase::entry(const NamedTensors& state, const std::string& key, const std::string& who) {
    for (const auto& [name, t] : state) {
        if (name == key) return t;
    }
    fail(who, ": load_state_dict: missing key \"", key, "\"");
}

NamedTensors LRSchedulerBase::state_dict() const {
    return {{"last_epoch", detail::int64_scalar(last_epoch_)},
            {"step_count", detail::int64_scalar(step_count_)},
            {"base_lrs", detail::exact_vector(base_lrs_)},
            {"last_lr", detail::exact_vector(last_lr_)}};
}

void LRSchedulerBase::load_state_dict(const NamedTensors& state) {
    const std::string who = name() + ": load_state_dict";
    for (const auto& [key, t] : state) {
        NORMNET_CHECK(key == "last_epoch" || key == "step_count" || key == "base_lrs" || key == "last_lr", who,
                      ": unexpected key \"", key, "\"");
    }
    const int64_t last_epoch = detail::counter_value(entry(state, "last_epoch", name()), -1, who, "last_epoch");
    const int64_t step_count = detail::counter_value(entry(state, "step_count", name()), 0, who, "step_count");
    const std::vector<double> base_lrs = detail::exact_values(entry(state, "base_lrs", name()), base_lrs_.size(), who, "base_lrs");
    const std::vector<double> last_lr = detail::exact_values(entry(state, "last_lr", name()), last_lr_.size(), who, "last_lr");
    last_epoch_ = last_epoch;
    step_count_ = step_count;
    base_lrs_ = base_lrs;
    last_lr_ = last_lr;
}

NamedTensors LRSchedulerBase::composite_state_dict(const std::vector<std::reference_wrapper<LRSchedulerBase>>& schedulers) const {
    NamedTensors out{{"last_epoch", detail::int64_scalar(last_epoch_)}, {"last_lr", detail::exact_vector(last_lr_)}};
    for (size_t i = 0; i < schedulers.size(); ++i) {
        for (auto& [key, t] : schedulers[i].get().state_dict()) out.emplace_back("schedulers." + std::to_string(i) + "." + key, t);
    }
    return out;
}

void LRSchedulerBase::load_composite_state_dict(const NamedTensors& state,
                                                const std::vector<std::reference_wrapper<LRSchedulerBase>>& schedulers) {
    const std::string who = name() + ": load_state_dict";
    std::vector<NamedTensors> parts(schedulers.size());
    for (const auto& [key, t] : state) {
        if (key == "last_epoch" || key == "last_lr") continue;
        const size_t i = key.rfind("schedulers.", 0) == 0 ? std::strtoull(key.c_str() + 11, nullptr, 10) : parts.size();
        const std::string prefix = "schedulers." + std::to_string(i) + ".";
        NORMNET_CHECK(i < parts.size() && key.rfind(prefix, 0) == 0, who, ": unexpected key \"", key, "\"");
        parts[i].emplace_back(key.substr(prefix.size()), t);
    }
    const int64_t last_epoch = detail::counter_value(entry(state, "last_epoch", name()), -1, who, "last_epoch");
    const std::vector<double> last_lr = detail::exact_values(entry(state, "last_lr", name()), last_lr_.size(), who, "last_lr");
    // Each scheduler checks its part before changing; put back the ones loaded before one that fails.
    std::vector<NamedTensors> before(schedulers.size());
    for (size_t i = 0; i < schedulers.size(); ++i) before[i] = schedulers[i].get().state_dict();
    try {
        for (size_t i = 0; i < schedulers.size(); ++i) schedulers[i].get().load_state_dict(parts[i]);
    } catch (...) {
        for (size_t i = 0; i < schedulers.size(); ++i) schedulers[i].get().load_state_dict(before[i]);
        throw;
    }
    last_epoch_ = last_epoch;
    last_lr_ = last_lr;
}

}  // namespace normnet
