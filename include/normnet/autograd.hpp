// The autograd graph: Node (an op's saved state and backward), the backward pass, NoGradGuard.
// Ops record one Node per output while they run; Tensor::backward walks the graph in reverse
// topological order (computed iteratively) and frees it afterwards.
#pragma once

#include <array>
#include <memory>
#include <utility>

#include "normnet/tensor.hpp"

namespace normnet {

/// Most inputs a differentiable op can take.
inline constexpr int kMaxNodeInputs = 4;

/// One recorded op. Subclasses save what backward needs and implement backward(), which
/// adds (+=) the gradient of every input that needs one into grad_input(i).
struct Node {
    /// Frees the chain of producers iteratively, so graphs of any depth die without deep recursion.
    virtual ~Node();
    /// Adds this op's input gradients given dout, the gradient of its output.
    virtual void backward(const Tensor& dout) = 0;
    /// PyTorch-style name shown in printing, e.g. "AddmmBackward0".
    virtual const char* name() const = 0;
    /// Drops saved tensors once backward has run, so the graph's memory is returned.
    virtual void release_saved() {}

    /// The buffer to += input i's gradient into, or an undefined tensor when input i needs none.
    Tensor grad_input(int i);
    /// As grad_input, but a buffer that does not exist yet is allocated without zero-filling and
    /// `fresh` is set: the caller must then write all of it instead of adding (large gradients,
    /// e.g. a weight's, are thus not cleared every step only to be added to once).
    Tensor grad_input_for_overwrite(int i, bool& fresh);
    /// True when input i needs a gradient (skip computing it otherwise).
    bool needs_grad(int i) const { return next_[static_cast<size_t>(i)] != nullptr; }

    // Graph bookkeeping, used by the engine.
    std::array<std::shared_ptr<Node>, kMaxNodeInputs> next_{};  // producers of the inputs
    Shape out_shape_;                                           // shape of the gradient this node receives
    Tensor grad_;                                               // its gradient, accumulated during backward
    uint64_t visit_mark_ = 0;
    bool released_ = false;

    /// The buffer that receives this node's output gradient, allocated on first use: as zeros,
    /// or uninitialised when `fresh` is given (then *fresh tells whether it was just allocated).
    virtual Tensor gradient_buffer(bool* fresh = nullptr);
};

/// True unless a NoGradGuard is alive on this thread.
bool grad_mode_enabled();

/// While alive, ops record nothing (as torch::NoGradGuard): for evaluation and updates.
class NoGradGuard {
public:
    /// Turns recording off on this thread; the destructor restores the previous mode.
    NoGradGuard();
    ~NoGradGuard();
    NoGradGuard(const NoGradGuard&) = delete;
    NoGradGuard& operator=(const NoGradGuard&) = delete;

private:
    bool previous_;
};

namespace autograd {

/// True when grad mode is on and any of the tensors requires grad.
bool any_requires_grad(std::initializer_list<const Tensor*> inputs);

/// Connects `node` to the producers of `inputs` (in order); an undefined input or one that
/// needs no grad gets no edge, so backward skips its gradient.
void connect(Node& node, std::initializer_list<const Tensor*> inputs);

/// Makes `out` the output of `node`: out requires grad and its grad_fn is node.
void set_history(Tensor& out, const std::shared_ptr<Node>& node);

/// Allocates a node of type N from normnet's pool (no heap traffic once warmed up) and
/// connects it to `inputs`.
template <class N>
std::shared_ptr<N> make_node(std::initializer_list<const Tensor*> inputs);

/// Runs backward from `root` with gradient `grad` (both the same shape).
void run_backward(const Tensor& root, const Tensor& grad);

}  // namespace autograd
}  // namespace normnet

#include "normnet/detail/pool.hpp"

namespace normnet::autograd {
template <class N>
std::shared_ptr<N> make_node(std::initializer_list<const Tensor*> inputs) {
    auto node = std::allocate_shared<N>(detail::PoolAllocator<N>{});
    connect(*node, inputs);
    return node;
}
}  // namespace normnet::autograd
