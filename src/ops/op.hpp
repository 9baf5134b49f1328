// Internal: how an op is written. An op's public function computes its output and, in one
// statement, records an OpNode that holds the tensors backward needs:
//
//   Tensor relu(const Tensor& x) {
//       ...forward kernel into y...
//       record<ReluBackward>(y, {x}, {y});      // output, inputs, saved tensors
//       return y;
//   }
//
// The node's backward reads saved(i) (checked against in-place changes since the forward) and
// writes each input's gradient through grad_out(i), which decides the one rule for gradient
// buffers: a buffer made now is written (Overwrite), one that already holds gradient is added
// into (Accumulate). Kernels get that rule as a template policy, never as a flag; threading is
// applied around the kernel call. The node base frees the saved tensors after backward.
//
// A saved tensor that is the untouched output of a node that can recompute it from what that
// node saves anyway (GELU from its input, LayerNorm from its input and statistics: override
// recompute_output) is not kept alive by the consumer: attach() records a recipe (the producer)
// in its slot, and the engine recomputes the tensor into a transient buffer just before the
// consumer's backward (restore_saved). So Linear after GELU or LayerNorm, which saves its input
// for dW = dy^T x, holds nothing of it between forward and backward. Ops need not know: they save
// and read saved(i) as always.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>

#include "../tensor_impl.hpp"
#include "normnet/autograd.hpp"
#include "../pool.hpp"

namespace normnet::detail {

/// Inputs a node holds inline (more, as cat's, come from the small-object pool); most saved tensors.
inline constexpr int kInlineInputs = 4;
inline constexpr int kMaxSaved = 8;

/// The two ways a backward kernel stores an input's gradient element.
struct Overwrite {
    static constexpr float beta = 0.0f;  // for sgemm's C = alpha * AB + beta * C
    static void put(float& dst, float v) { dst = v; }
};
struct Accumulate {
    static constexpr float beta = 1.0f;
    static void put(float& dst, float v) { dst += v; }
};

/// An input's gradient buffer as handed to a backward: its data, and whether it was just made
/// (then every element must be written: Overwrite) or already holds gradient (Accumulate).
struct GradOut {
    float* data = nullptr;
    bool fresh = false;
    explicit operator bool() const { return data != nullptr; }
    /// beta for an sgemm writing this gradient.
    float beta() const { return fresh ? 0.0f : 1.0f; }
    /// Writes n computed values (e.g. a parameter's summed gradient) by the rule.
    void store(const float* values, int64_t n) const {
        for (int64_t i = 0; i < n; ++i) data[i] = fresh ? values[i] : data[i] + values[i];
    }
    /// Calls kernel.template operator()<Overwrite or Accumulate>(data).
    template <class Kernel>
    void write(Kernel&& kernel) const {
        if (fresh) {
            kernel.template operator()<Overwrite>(data);
        } else {
            kernel.template operator()<Accumulate>(data);
        }
    }
};

class OpNode;

/// A node's edges to the producers of its inputs: up to kInlineInputs inline, more in one
/// block from the small-object pool (so recording allocates nothing once warmed up).
class Edges {
public:
    Edges() = default;
    ~Edges() { resize(0); }
    Edges(const Edges&) = delete;
    Edges& operator=(const Edges&) = delete;
    /// Sets the number of edges (all empty).
    void resize(size_t n);
    size_t size() const { return n_; }
    std::shared_ptr<OpNode>& operator[](size_t i) { return data_[i]; }
    const std::shared_ptr<OpNode>& operator[](size_t i) const { return data_[i]; }

private:
    std::array<std::shared_ptr<OpNode>, kInlineInputs> inline_{};
    std::shared_ptr<OpNode>* data_ = inline_.data();
    size_t n_ = 0;
};

/// A node of the autograd graph: one recorded op with its edges to the producers of its inputs.
class OpNode : public Node {
public:
    /// Frees the chain of producers iteratively, so graphs of any depth die without deep recursion.
    ~OpNode() override;
    /// Writes the gradients of the inputs given dout, the gradient of the output (contiguous).
    virtual void backward(const Tensor& dout) = 0;

    /// True when input i needs a gradient (skip computing it otherwise).
    bool needs_grad(int i) const { return static_cast<size_t>(i) < next_.size() && next_[static_cast<size_t>(i)] != nullptr; }
    /// Input i's gradient buffer, for a backward that writes every element of it; empty when
    /// input i needs no gradient.
    GradOut grad_out(int i);
    /// For a backward that computes input i's gradient elementwise over dout (same shape; dx[j]
    /// read from dout[j] before it is written, no other dout element after): when nothing else
    /// holds dout and input i has no gradient yet, makes dout's own buffer input i's gradient and
    /// returns it (fresh), so the backward writes dx over dout and the step needs one
    /// activation-sized buffer fewer; otherwise returns an empty GradOut and changes nothing
    /// (then use grad_out(i)). dout must be the dout backward got.
    GradOut grad_over_dout(int i, const Tensor& dout);
    /// Input i's gradient buffer, zero-filled when new, for a backward that adds into part of it
    /// (a slice, a scatter); undefined when input i needs no gradient.
    Tensor grad_to_add(int i);
    /// Saved tensor i, as record() saved it (the engine has checked that it was not modified
    /// in place since).
    const Tensor& saved(int i) const { return saved_[static_cast<size_t>(i)]; }
    /// Lets go of saved tensor i before backward() returns, after its last read: a tensor
    /// recomputed for this backward (a recipe) is then given back before the gradient buffers
    /// made after it, instead of coexisting with them (the step's peak holds one buffer fewer).
    void drop_saved(int i) { saved_[static_cast<size_t>(i)] = Tensor(); }
    /// Throws PyTorch's error when a saved tensor's data was modified in place after it was
    /// saved; the engine calls it before backward(), so a failing node writes no gradient.
    void check_saved() const;

    /// True when recompute_output() can write this node's output again from its saved tensors
    /// (read only before its own backward), so a consumer that saves the output need not keep it.
    virtual bool recomputes_output() const { return false; }
    /// Writes the output, bit for bit as the forward did, into out (contiguous, out_shape_).
    virtual void recompute_output(float* /*out*/) const {}
    /// Fills the slots that hold a recipe with the recomputed tensors (or the original, when
    /// something else kept it alive), checking versions as check_saved() does; the engine calls
    /// it before backward(), and release() drops them with the rest.
    void restore_saved();

    // The engine's bookkeeping (autograd.cpp).
    Edges next_;  // producers of the inputs (null: the input needs no gradient)
    std::array<Tensor, kMaxSaved> saved_{};
    std::array<uint32_t, kMaxSaved> saved_version_{};
    // Slot i's recipe: the producer that recomputes it (then saved_[i] is empty until
    // restore_saved), and the original tensor, used instead while something else holds it.
    std::array<std::shared_ptr<OpNode>, kMaxSaved> saved_recipe_{};
    std::array<std::weak_ptr<TensorImpl>, kMaxSaved> saved_original_{};
    uint32_t out_version_ = 0;  // the output's version when recorded (a recipe needs it unchanged)
    Shape out_shape_;     // shape of the gradient this node receives
    Tensor grad_;         // that gradient, accumulated during backward
    uint64_t visit_mark_ = 0;
    bool released_ = false;

    /// The buffer that receives this node's output gradient, allocated on first use: as zeros,
    /// or uninitialised when `fresh` is given (then *fresh tells whether it was just allocated).
    virtual Tensor gradient_buffer(bool* fresh);
    /// Drops the saved tensors (after backward).
    void release();
};

/// The tensors given to record(): a braced list {x, weight, bias} (undefined tensors allowed)
/// or a span of tensors (cat's inputs).
/// Used only during the call it is passed to (a braced list lives until the call returns).
class TensorRefs {
public:
    TensorRefs(std::initializer_list<std::reference_wrapper<const Tensor>> list) : list_(list) {}  // NOLINT
    TensorRefs(std::span<const Tensor> tensors) : span_(tensors) {}  // NOLINT: implicit
    size_t size() const { return span_.empty() ? list_.size() : span_.size(); }
    const Tensor& operator[](size_t i) const { return span_.empty() ? list_.begin()[i].get() : span_[i]; }

private:
    std::initializer_list<std::reference_wrapper<const Tensor>> list_;
    std::span<const Tensor> span_;
};

/// True when grad mode is on and any of the (possibly undefined) tensors requires grad.
bool any_requires_grad(TensorRefs inputs);
/// Connects node to the producers of `inputs`, saves `saved` (with their versions; the output
/// itself is saved detached) and makes `out` the node's output.
void attach(const std::shared_ptr<OpNode>& node, Tensor& out, TensorRefs inputs, TensorRefs saved);

/// Records node type N for `out` when any input requires grad: the one recording helper every op
/// uses. Returns the node, for ops that keep sizes or flags in it, or null when nothing is recorded.
template <class N>
N* record(Tensor& out, TensorRefs inputs, TensorRefs saved = {}) {
    if (!any_requires_grad(inputs)) return nullptr;
    auto node = std::allocate_shared<N>(PoolAllocator<N>{});
    N* raw = node.get();
    attach(node, out, inputs, saved);
    return raw;
}

/// Checks that `self` may be updated in place by an op recorded as a new node: as torch, not a
/// leaf that requires grad (in grad mode), and (a normnet limit) not a view of a tensor that
/// requires grad. Call before changing self's data.
void check_inplace(const Tensor& self, const char* op);

/// After an in-place op has written its result into self's data: bumps the version and, when
/// anything requires grad, records node type N with self's previous history as its input 0 and
/// `others` after it, so self's grad_fn becomes the new node (torch's rebase_history). `saved`
/// must not include self's old values (they are gone): save a clone taken before the update.
template <class N>
N* record_inplace(Tensor& self, TensorRefs others, TensorRefs saved = {});

/// While alive, gradient buffers handed out as fresh are filled with NaN first (gradcheck uses
/// it: a backward that adds into a fresh buffer instead of writing it then fails visibly).
class PoisonFreshGradients {
public:
    PoisonFreshGradients();
    ~PoisonFreshGradients();
    PoisonFreshGradients(const PoisonFreshGradients&) = delete;
    PoisonFreshGradients& operator=(const PoisonFreshGradients&) = delete;

private:
    bool previous_;
};

void attach_inplace(const std::shared_ptr<OpNode>& node, Tensor& self, TensorRefs others, TensorRefs saved);

template <class N>
N* record_inplace(Tensor& self, TensorRefs others, TensorRefs saved) {
    self.bump_version();
    if (!any_requires_grad({self}) && !any_requires_grad(others)) return nullptr;
    auto node = std::allocate_shared<N>(PoolAllocator<N>{});
    N* raw = node.get();
    attach_inplace(node, self, others, saved);
    return raw;
}

/// While alive, attach() saves every tensor itself, with no recipes (tests compare the two ways).
class KeepSavedOutputs {
public:
    KeepSavedOutputs();
    ~KeepSavedOutputs();
    KeepSavedOutputs(const KeepSavedOutputs&) = delete;
    KeepSavedOutputs& operator=(const KeepSavedOutputs&) = delete;

private:
    bool previous_;
};

/// The node behind t (its grad_fn, or a leaf's gradient accumulator).
OpNode* node_of(const Tensor& t);

/// Runs backward from `root` with gradient `grad` (both the same shape).
void run_backward(const Tensor& root, const Tensor& grad);

}  // namespace normnet::detail
