// SequentialLR, as torch.optim.lr_scheduler.SequentialLR (1.13): schedulers take turns at the
// milestones; at a milestone the next one restarts from its epoch 0 in closed form (torch's
// deprecated step(0)), so e.g. a cosine after a warm-up starts at its base lr.
#include <algorithm>

#include "normnet/optim.hpp"


namespace normnet {
namespace {

Optimizer& checked(Optimizer& optimizer, const std::vector<std::reference_wrapper<LRSchedulerBase>>& schedulers,
                   const std::vector<int64_t>& milestones) {
    NORMNET_CHECK(!schedulers.empty(), "SequentialLR: expects at least one scheduler");
    for (size_t i = 0; i < schedulers.size(); ++i) {
        NORMNET_CHECK(&schedulers[i].get().optimizer() == &optimizer, "SequentialLR: scheduler ", i, " (",
                      schedulers[i].get().name(), ") belongs to another optimizer than the one passed in");
    }
    NORMNET_CHECK(milestones.size() + 1 == schedulers.size(), "SequentialLR: expects one milestone fewer than ",
                  "schedulers, got ", schedulers.size(), " schedulers and ", milestones.size(), " milestones");
    NORMNET_CHECK(std::is_sorted(milestones.begin(), milestones.end()), "SequentialLR: milestones must be in increasing order");
    return optimizer;
}

}  // namespace

SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<std::reference_wrapper<LRSchedulerBase>> schedulers,
                           std::vector<int64_t> milestones)
    : LRSchedulerBase(checked(optimizer, schedulers, milestones), Composite{}),
      schedulers_(std::move(schedulers)),
      milestones_(std::move(milestones)) {
    for (size_t i = 0; i < schedulers_.size(); ++i) {
        NORMNET_CHECK(!schedulers_[i].get().composite_, "SequentialLR: scheduler ", i, " is a ",
                      schedulers_[i].get().name(), "; SequentialLR takes schedulers that step on their own");
    }
    last_epoch_ = 0;
    // As torch: back to the initial lrs, undo the schedulers' initial steps, and redo the first's.
    for (size_t g = 0; g < optimizer.num_param_groups(); ++g) optimizer.set_lr(g, *optimizer.initial_lr(g));
    for (auto& s : schedulers_) s.get().last_epoch_ -= 1;
    LRSchedulerBase& first = schedulers_[0].get();
    first.initial_step();
    last_lr_ = first.get_last_lr();
}

void SequentialLR::step() {
    ++last_epoch_;
    const auto idx = static_cast<size_t>(std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) -
                                         milestones_.begin());
    LRSchedulerBase& scheduler = schedulers_[idx].get();
    if (idx > 0 && milestones_[idx - 1] == last_epoch_) {
        scheduler.step_to(0);
    } else {
        scheduler.step();
    }
    last_lr_ = scheduler.get_last_lr();
}

double SequentialLR::get_lr(size_t group) { return optimizer_->lr(group); }

NamedTensors SequentialLR::state_dict() const { return composite_state_dict(schedulers_); }

void SequentialLR::load_state_dict(const NamedTensors& state) { load_composite_state_dict(state, schedulers_); }

}  // namespace normnet
