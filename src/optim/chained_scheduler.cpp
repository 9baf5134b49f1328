// ChainedScheduler, as torch.optim.lr_scheduler.ChainedScheduler (1.13): one step() steps every
// scheduler in order, each scaling the lr the previous one left.
#include "normnet/optim.hpp"


namespace normnet {
namespace {

Optimizer& checked(const std::vector<std::reference_wrapper<LRSchedulerBase>>& schedulers) {
    NORMNET_CHECK(!schedulers.empty(), "ChainedScheduler: expects at least one scheduler");
    for (size_t i = 1; i < schedulers.size(); ++i) {
        NORMNET_CHECK(&schedulers[i].get().optimizer() == &schedulers[0].get().optimizer(),
                      "ChainedScheduler: expects all schedulers to belong to the same optimizer, but schedulers 0 and ",
                      i, " do not");
    }
    return schedulers[0].get().optimizer();
}

}  // namespace

ChainedScheduler::ChainedScheduler(std::vector<std::reference_wrapper<LRSchedulerBase>> schedulers)
    : LRSchedulerBase(checked(schedulers), Composite{}), schedulers_(std::move(schedulers)) {
    last_epoch_ = 0;
}

void ChainedScheduler::step() {
    ++last_epoch_;
    for (auto& s : schedulers_) s.get().step();
    for (size_t g = 0; g < last_lr_.size(); ++g) last_lr_[g] = optimizer_->lr(g);
}

double ChainedScheduler::get_lr(size_t group) { return optimizer_->lr(group); }

NamedTensors ChainedScheduler::state_dict() const { return composite_state_dict(schedulers_); }

void ChainedScheduler::load_state_dict(const NamedTensors& state) { load_composite_state_dict(state, schedulers_); }

}  // namespace normnet
