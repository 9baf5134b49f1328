// OneCycleLR, as torch.optim.lr_scheduler.OneCycleLR (1.13): the lr rises from max_lr /
// div_factor to max_lr over pct_start of the cycle, then anneals to initial_lr / final_div_factor
// (or, three_phase, back to the initial lr and then down), while momentum (or Adam's beta1) moves
// the other way. Not chainable: every step computes the lr from the phase it is in, with torch's
// operations in torch's order.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "normnet/optim.hpp"

namespace normnet {
namespace {

int64_t total_steps_of(const OneCycleLROptions& o) {
    if (o.total_steps != 0) {
        NORMNET_CHECK(o.total_steps > 0, "OneCycleLR: total_steps must be > 0, got ", o.total_steps);
        return o.total_steps;
    }
    NORMNET_CHECK(o.epochs != 0 || o.steps_per_epoch != 0,
                  "OneCycleLR: give total_steps, or epochs and steps_per_epoch (total_steps = epochs * steps_per_epoch)");
    NORMNET_CHECK(o.epochs > 0, "OneCycleLR: epochs must be > 0, got ", o.epochs);
    NORMNET_CHECK(o.steps_per_epoch > 0, "OneCycleLR: steps_per_epoch must be > 0, got ", o.steps_per_epoch);
    return o.epochs * o.steps_per_epoch;
}

Optimizer& checked(Optimizer& optimizer, const OneCycleLROptions& o) {
    (void)total_steps_of(o);
    NORMNET_CHECK(!o.max_lr.values.empty(), "OneCycleLR: max_lr is required");
    const size_t groups = optimizer.num_param_groups();
    for (size_t g = 0; g < groups; ++g) {
        const double max_lr = o.max_lr.at(g, groups, "OneCycleLR", "max_lr");
        NORMNET_CHECK(std::isfinite(max_lr) && max_lr >= 0.0, "OneCycleLR: max_lr must be finite and >= 0, got ", max_lr);
        if (o.cycle_momentum) {
            (void)o.base_momentum.at(g, groups, "OneCycleLR", "base_momentum");
            (void)o.max_momentum.at(g, groups, "OneCycleLR", "max_momentum");
        }
    }
    NORMNET_CHECK(o.pct_start >= 0.0 && o.pct_start <= 1.0, "OneCycleLR: pct_start must be in [0, 1], got ", o.pct_start);
    // The first phase ends at step pct_start * total_steps - 1; at 0 it has no steps, and the step
    // the constructor takes would divide by zero (as torch's does).
    NORMNET_CHECK(o.pct_start * static_cast<double>(total_steps_of(o)) - 1.0 != 0.0, "OneCycleLR: phase 1 has no steps ",
                  "(pct_start * total_steps = 1); use more total_steps or another pct_start");
    NORMNET_CHECK(std::isfinite(o.div_factor) && o.div_factor > 0.0, "OneCycleLR: div_factor must be finite and > 0, got ",
                  o.div_factor);
    NORMNET_CHECK(std::isfinite(o.final_div_factor) && o.final_div_factor > 0.0,
                  "OneCycleLR: final_div_factor must be finite and > 0, got ", o.final_div_factor);
    NORMNET_CHECK(o.anneal_strategy == AnnealStrategy::cos || o.anneal_strategy == AnnealStrategy::linear,
                  "OneCycleLR: unknown anneal_strategy ", static_cast<int>(o.anneal_strategy()));
    // torch: 'momentum' or 'betas' in optimizer.defaults.
    NORMNET_CHECK(!o.cycle_momentum || optimizer.defaults().momentum || optimizer.defaults().betas, "OneCycleLR: ",
                  optimizer.name(), " has neither momentum nor betas; make it with cycle_momentum = false");
    return optimizer;
}

// torch's _annealing_cos and _annealing_linear: from start to end as pct goes from 0 to 1.
double anneal(AnnealStrategy strategy, double start, double end, double pct) {
    if (strategy == AnnealStrategy::linear) return (end - start) * pct + start;
    const double cos_out = std::cos(std::numbers::pi * pct) + 1.0;
    return end + (start - end) / 2.0 * cos_out;
}

}  // namespace

OneCycleLR::OneCycleLR(Optimizer& optimizer, OneCycleLROptions options)
    : LRSchedulerBase(checked(optimizer, options)), options_(std::move(options)),
      total_steps_(total_steps_of(options_)) {
    const auto total = static_cast<double>(total_steps_);
    const double pct = options_.pct_start;
    using V = GroupValues;
    if (options_.three_phase) {
        phases_ = {{pct * total - 1.0, &V::initial_lr, &V::max_lr, &V::max_momentum, &V::base_momentum},
                   {2.0 * pct * total - 2.0, &V::max_lr, &V::initial_lr, &V::base_momentum, &V::max_momentum},
                   {total - 1.0, &V::initial_lr, &V::min_lr, &V::max_momentum, &V::max_momentum}};
    } else {
        phases_ = {{pct * total - 1.0, &V::initial_lr, &V::max_lr, &V::max_momentum, &V::base_momentum},
                   {total - 1.0, &V::max_lr, &V::min_lr, &V::base_momentum, &V::max_momentum}};
    }
    const size_t groups = optimizer.num_param_groups();
    use_beta1_ = optimizer.defaults().betas.has_value();
    for (size_t g = 0; g < groups; ++g) {
        GroupValues v{};
        v.max_lr = options_.max_lr.at(g, groups, name(), "max_lr");
        v.initial_lr = v.max_lr / options_.div_factor;
        v.min_lr = v.initial_lr / options_.final_div_factor;
        // torch overwrites initial_lr (no setdefault here), so base_lrs are max_lr / div_factor.
        optimizer.set_initial_lr(g, v.initial_lr);
        base_lrs_[g] = v.initial_lr;
        if (options_.cycle_momentum) {
            v.max_momentum = options_.max_momentum.at(g, groups, name(), "max_momentum");
            v.base_momentum = options_.base_momentum.at(g, groups, name(), "base_momentum");
            if (use_beta1_) {
                optimizer.set_param_group_options(g, {.betas = {{v.max_momentum, optimizer.param_group_options(g).betas->second}}});
            } else {
                optimizer.set_param_group_options(g, {.momentum = v.max_momentum});
            }
        }
        groups_.push_back(v);
    }
    initial_step();
}

double OneCycleLR::get_lr(size_t group) {
    const int64_t step_num = last_epoch_;
    NORMNET_CHECK(step_num <= total_steps_, "OneCycleLR: tried to step ", step_num + 1,
                  " times; the specified number of total steps is ", total_steps_);
    const GroupValues& v = groups_[group];
    double start_step = 0.0, lr = 0.0, momentum = 0.0;
    for (size_t i = 0; i < phases_.size(); ++i) {
        const Phase& phase = phases_[i];
        if (static_cast<double>(step_num) <= phase.end_step || i + 1 == phases_.size()) {
            // torch divides by zero here (a phase of no steps, e.g. pct_start * total_steps == 1).
            NORMNET_CHECK(phase.end_step != start_step, "OneCycleLR: phase ", i + 1, " has no steps (it ends at step ",
                          phase.end_step, "); use more total_steps or another pct_start");
            const double pct = (static_cast<double>(step_num) - start_step) / (phase.end_step - start_step);
            lr = anneal(options_.anneal_strategy, v.*phase.start_lr, v.*phase.end_lr, pct);
            if (options_.cycle_momentum) {
                momentum = anneal(options_.anneal_strategy, v.*phase.start_momentum, v.*phase.end_momentum, pct);
            }
            break;
        }
        start_step = phase.end_step;
    }
    // torch lets the schedule be stepped once past the cycle (step_num == total_steps) and
    // extrapolates the last phase there; a linear anneal then overshoots, below zero for the lr.
    // That step's values are never used by a loop that stops after total_steps; keep them within
    // the last phase's range, so that the lr stays >= 0 and beta1 < 1.
    if (step_num == total_steps_) {
        const Phase& last = phases_.back();
        lr = std::clamp(lr, std::min(v.*last.start_lr, v.*last.end_lr), std::max(v.*last.start_lr, v.*last.end_lr));
        momentum = std::clamp(momentum, std::min(v.*last.start_momentum, v.*last.end_momentum),
                              std::max(v.*last.start_momentum, v.*last.end_momentum));
    }
    if (options_.cycle_momentum) {
        if (use_beta1_) {
            optimizer_->set_param_group_options(group, {.betas = {{momentum, optimizer_->param_group_options(group).betas->second}}});
        } else {
            optimizer_->set_param_group_options(group, {.momentum = momentum});
        }
    }
    return lr;
}

}  // namespace normnet
