// Loss modules (torch.nn.CrossEntropyLoss, MSELoss, ...): thin modules holding a loss's options
// and calling the functional loss, forward(input, target). A given weight or pos_weight is
// copied into a buffer of that name, so it is in the state_dict as in PyTorch.
#pragma once

#include "normnet/export.hpp"
#include "normnet/module.hpp"
#include "normnet/ops.hpp"

namespace normnet {

/// A loss as a module: forward(input, target) = loss(input, target, options()).
template <class Derived, class Options, Tensor (*loss)(const Tensor&, const Tensor&, const Options&)>
class LossModule : public Cloneable<Derived> {
public:
    explicit LossModule(const Options& options = {}) : options_(options) {
        if constexpr (requires { options_.weight; }) {
            if (options_.weight.defined()) options_.weight = this->register_buffer("weight", options_.weight.detach().clone());
        }
        if constexpr (requires { options_.pos_weight; }) {
            if (options_.pos_weight.defined()) {
                options_.pos_weight = this->register_buffer("pos_weight", options_.pos_weight.detach().clone());
            }
        }
    }
    /// The loss of input against target.
    Tensor forward(const Tensor& input, const Tensor& target) { return loss(input, target, options_); }
    /// Module's one-input forward stays visible (it fails: a loss takes two tensors); without this
    /// the two-input one hides it, which clang's -Wall reports in every user's build.
    using Module::forward;
    Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
    /// The options (their weight tensors are the module's buffers).
    const Options& options() const { return options_; }

private:
    Options options_;
};

class NORMNET_API NLLLoss : public LossModule<NLLLoss, NLLLossOptions, nll_loss> {
public:
    using LossModule::LossModule;
};
class NORMNET_API CrossEntropyLoss : public LossModule<CrossEntropyLoss, CrossEntropyLossOptions, cross_entropy> {
public:
    using LossModule::LossModule;
};
class NORMNET_API BCELoss : public LossModule<BCELoss, BCELossOptions, binary_cross_entropy> {
public:
    using LossModule::LossModule;
};
class NORMNET_API BCEWithLogitsLoss
    : public LossModule<BCEWithLogitsLoss, BCEWithLogitsLossOptions, binary_cross_entropy_with_logits> {
public:
    using LossModule::LossModule;
};
class NORMNET_API L1Loss : public LossModule<L1Loss, L1LossOptions, l1_loss> {
public:
    using LossModule::LossModule;
};
class NORMNET_API MSELoss : public LossModule<MSELoss, MSELossOptions, mse_loss> {
public:
    using LossModule::LossModule;
};
class NORMNET_API SmoothL1Loss : public LossModule<SmoothL1Loss, SmoothL1LossOptions, smooth_l1_loss> {
public:
    using LossModule::LossModule;
};
class NORMNET_API HuberLoss : public LossModule<HuberLoss, HuberLossOptions, huber_loss> {
public:
    using LossModule::LossModule;
};

class NORMNET_API KLDivLoss : public LossModule<KLDivLoss, KLDivLossOptions, kl_div> {
public:
    using LossModule::LossModule;
};

}  // namespace normnet
