// The autograd graph as users see it: Node (the recorded op behind a tensor's grad_fn), grad
// mode and NoGradGuard. Ops record one node per output while they run; Tensor::backward walks
// the graph in reverse topological order and frees it afterwards. How ops record their nodes is
// internal (src/ops/op.hpp); custom ops are written with normnet::Function (function.hpp).
#pragma once

#include <functional>

#include "normnet/export.hpp"
#include "normnet/tensor.hpp"

namespace normnet {

/// One recorded op of the graph (torch::autograd::Node), e.g. t.grad_fn()->name() is
/// "AddmmBackward0" for the output of linear().
class NORMNET_API Node {
public:
    virtual ~Node();
    Node(const Node&) = delete;
    Node& operator=(const Node&) = delete;
    /// PyTorch's name of the backward, e.g. "NativeLayerNormBackward0".
    virtual const char* name() const = 0;

protected:
    Node() = default;
};

/// True unless a NoGradGuard is alive on this thread.
NORMNET_API bool grad_mode_enabled();

/// While alive, ops record nothing (as torch::NoGradGuard): for evaluation and updates.
class NORMNET_API NoGradGuard {
public:
    /// Turns recording off on this thread; the destructor restores the previous mode.
    NoGradGuard();
    ~NoGradGuard();
    NoGradGuard(const NoGradGuard&) = delete;
    NoGradGuard& operator=(const NoGradGuard&) = delete;

private:
    bool previous_;
};

/// Activation checkpointing, as torch.utils.checkpoint.checkpoint: returns fn(input) but records
/// one node in place of fn's ops, which keeps only `input`; backward runs fn again (recording,
/// with the default generator as it was before the forward, so dropout draws the same) and
/// backpropagates through that graph. fn's activations then exist only during its own backward,
/// for the price of running its forward twice. fn is a function of `input` and of leaves such as
/// parameters (whose gradients it accumulates, as any backward): a non-leaf it reads besides
/// `input` has its graph freed by the first re-run, as with torch's reentrant checkpoint. It
/// must not change state the second run would read (BatchNorm's running statistics would be
/// updated twice, as in torch). With grad mode off, or an input that does not require grad, fn
/// simply runs.
NORMNET_API Tensor checkpoint(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input);

}  // namespace normnet
