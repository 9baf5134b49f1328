// The autograd graph as users see it: Node (the recorded op behind a tensor's grad_fn), grad
// mode and NoGradGuard. Ops record one node per output while they run; Tensor::backward walks
// the graph in reverse topological order and frees it afterwards. How ops record their nodes is
// internal (src/ops/op.hpp); custom ops are written with normnet::Function (function.hpp).
#pragma once

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

}  // namespace normnet
