// The autograd engine: grad mode, recording (attach), saved-tensor checks, gradient buffers and
// the backward pass. Backward visits nodes in reverse topological order found by an iterative
// depth-first search, so graphs of any depth work; each node writes its inputs' gradients into
// their producers' buffers, then drops its saved tensors. Leaves receive gradients through an
// AccumulateGrad node whose buffer is the leaf's .grad itself.
#include <algorithm>
#include <deque>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "ops/op.hpp"

#include <new>

namespace normnet {

Node::~Node() = default;

namespace {
thread_local bool g_grad_mode = true;
thread_local bool g_poison_fresh = false;
thread_local bool g_keep_saved_outputs = false;
uint64_t g_visit_epoch = 0;
}  // namespace

bool grad_mode_enabled() { return g_grad_mode; }
NoGradGuard::NoGradGuard() : previous_(g_grad_mode) { g_grad_mode = false; }
NoGradGuard::~NoGradGuard() { g_grad_mode = previous_; }

namespace detail {

PoisonFreshGradients::PoisonFreshGradients() : previous_(g_poison_fresh) { g_poison_fresh = true; }
PoisonFreshGradients::~PoisonFreshGradients() { g_poison_fresh = previous_; }
KeepSavedOutputs::KeepSavedOutputs() : previous_(g_keep_saved_outputs) { g_keep_saved_outputs = true; }
KeepSavedOutputs::~KeepSavedOutputs() { g_keep_saved_outputs = previous_; }

namespace {

// A gradient buffer of `shape`: zeros, or (fresh) uninitialised, or NaN under PoisonFreshGradients.
Tensor new_gradient(const Shape& shape, bool fresh) {
    if (!fresh) return zeros(shape);
    return g_poison_fresh ? full(shape, std::numeric_limits<double>::quiet_NaN()) : empty(shape);
}

// The node behind a leaf that requires grad: its gradient buffer is the leaf's .grad itself.
class AccumulateGrad final : public OpNode {
public:
    std::weak_ptr<TensorImpl> leaf;
    void backward(const Tensor&) override {}  // the gradient is already in leaf.grad
    const char* name() const override { return "AccumulateGrad"; }
    Tensor gradient_buffer(bool* fresh) override {
        // The leaf may be gone (a graph kept alive longer than its parameter); then the
        // gradient goes to a scratch buffer that nobody reads.
        auto impl = leaf.lock();
        if (!impl) return OpNode::gradient_buffer(fresh);
        if (fresh) *fresh = !impl->grad;
        if (!impl->grad) impl->grad = new_gradient(impl->shape, fresh != nullptr).impl_ptr();
        return Tensor(impl->grad);
    }
};

const std::shared_ptr<OpNode>& accumulator_of(const Tensor& leaf) {
    TensorImpl& impl = leaf.impl();
    if (!impl.grad_accumulator) {
        auto acc = std::allocate_shared<AccumulateGrad>(PoolAllocator<AccumulateGrad>{});
        acc->leaf = leaf.impl_ptr();
        acc->out_shape_ = impl.shape;
        impl.grad_accumulator = std::move(acc);
    }
    return impl.grad_accumulator;
}

const std::shared_ptr<OpNode>& producer_of(const Tensor& t) {
    return t.impl().grad_fn ? t.impl().grad_fn : accumulator_of(t);
}

// Nodes waiting to be freed by ~OpNode; reserved up front so freeing a graph allocates nothing.
std::vector<std::shared_ptr<OpNode>>& pending_nodes() {
    thread_local std::vector<std::shared_ptr<OpNode>> pending = [] {
        std::vector<std::shared_ptr<OpNode>> v;
        v.reserve(256);
        return v;
    }();
    return pending;
}

// "[torch.FloatTensor [2, 3]]", as PyTorch describes a tensor in its autograd errors.
std::string describe(const Tensor& t) {
    const char* type = t.dtype() == kFloat32 ? "FloatTensor" : t.dtype() == kInt64 ? "LongTensor" : "BoolTensor";
    return std::string("[torch.") + type + " " + t.shape().str() + "]";
}

}  // namespace

void Edges::resize(size_t n) {
    if (data_ != inline_.data()) {
        for (size_t i = 0; i < n_; ++i) data_[i].~shared_ptr();
        pool_deallocate(data_, n_ * sizeof(std::shared_ptr<OpNode>));
    } else {
        for (auto& e : inline_) e.reset();
    }
    data_ = inline_.data();
    n_ = n;
    if (n > inline_.size()) {
        data_ = static_cast<std::shared_ptr<OpNode>*>(pool_allocate(n * sizeof(std::shared_ptr<OpNode>)));
        for (size_t i = 0; i < n; ++i) new (data_ + i) std::shared_ptr<OpNode>();
    }
}

// Frees the chain of producers iteratively: with plain recursive destruction a graph of
// 100,000 ops would overflow the stack when its last tensor dies.
OpNode::~OpNode() {
    std::vector<std::shared_ptr<OpNode>>& pending = pending_nodes();
    thread_local bool draining = false;
    for (size_t i = 0; i < next_.size(); ++i) {
        if (next_[i]) pending.push_back(std::move(next_[i]));
    }
    for (auto& producer : saved_recipe_) {  // recipes link producers too
        if (producer) pending.push_back(std::move(producer));
    }
    if (draining) return;  // an outer destructor is already emptying `pending`
    draining = true;
    while (!pending.empty()) {
        std::shared_ptr<OpNode> node = std::move(pending.back());
        pending.pop_back();
        if (node.use_count() == 1) {
            for (size_t i = 0; i < node->next_.size(); ++i) {
                if (node->next_[i]) pending.push_back(std::move(node->next_[i]));
            }
            for (auto& producer : node->saved_recipe_) {
                if (producer) pending.push_back(std::move(producer));
            }
        }
    }  // `node` dies here with no edges left, so its destructor does not recurse
    draining = false;
}

Tensor OpNode::gradient_buffer(bool* fresh) {
    if (fresh) *fresh = !grad_.defined();
    if (!grad_.defined()) grad_ = new_gradient(out_shape_, fresh != nullptr);
    return grad_;
}

GradOut OpNode::grad_out(int i) {
    OpNode* producer = needs_grad(i) ? next_[static_cast<size_t>(i)].get() : nullptr;
    if (!producer) return {};
    bool fresh = false;
    const Tensor buffer = producer->gradient_buffer(&fresh);
    return {buffer.data(), fresh};
}

GradOut OpNode::grad_over_dout(int i, const Tensor& dout) {
    OpNode* producer = needs_grad(i) ? next_[static_cast<size_t>(i)].get() : nullptr;
    // Only the engine's own buffer (grad_), held by nothing else, to a plain node (a leaf's
    // accumulator keeps its gradient in the leaf) that has received no gradient yet.
    if (producer && &dout == &grad_ && !producer->grad_.defined() && dynamic_cast<AccumulateGrad*>(producer) == nullptr &&
        producer->out_shape_ == grad_.shape() && grad_.impl_ptr().use_count() == 1 &&
        grad_.impl().storage.use_count() == 1) {
        producer->grad_ = grad_;
        return {grad_.data(), true};
    }
    return {};
}

Tensor OpNode::grad_to_add(int i) {
    OpNode* producer = needs_grad(i) ? next_[static_cast<size_t>(i)].get() : nullptr;
    return producer ? producer->gradient_buffer(nullptr) : Tensor();
}

void OpNode::check_saved() const {
    for (size_t i = 0; i < saved_.size(); ++i) {
        const Tensor& t = saved_[i];
        if (t.defined() && t.version() != saved_version_[i]) {
            fail("one of the variables needed for gradient computation has been modified by an inplace operation: ",
                 describe(t), ", which is saved by ", name(), ", is at version ", t.version(), "; expected version ",
                 saved_version_[i], " instead");
        }
    }
}

void OpNode::restore_saved() {
    for (size_t i = 0; i < saved_.size(); ++i) {
        const std::shared_ptr<OpNode> producer = std::move(saved_recipe_[i]);
        if (!producer) continue;  // saved itself, or restored already
        std::shared_ptr<TensorImpl> original = saved_original_[i].lock();
        saved_original_[i].reset();
        if (original) {
            // Still held elsewhere: read it, as any saved tensor, if it is unchanged.
            const Tensor t = Tensor(std::move(original)).detach();
            if (t.version() != saved_version_[i]) {
                fail("one of the variables needed for gradient computation has been modified by an inplace "
                     "operation: ", describe(t), ", which is saved by ", name(), ", is at version ", t.version(),
                     "; expected version ", saved_version_[i], " instead");
            }
            saved_[i] = t;
            continue;
        }
        // Gone: nobody can read it, so recomputing gives what was saved (whatever happened to the
        // tensor after, as long as the producer's own saved tensors are intact).
        NORMNET_CHECK(!producer->released_, name(), ": a tensor it saved was made by ", producer->name(),
                      ", whose saved tensors an earlier backward() freed; recompute the forward pass");
        producer->restore_saved();  // its own saved tensors may be recipes too
        producer->check_saved();
        Tensor out = empty(producer->out_shape_);
        producer->recompute_output(out.data());
        saved_version_[i] = out.version();
        saved_[i] = std::move(out);
    }
}

void OpNode::release() {
    released_ = true;
    for (Tensor& t : saved_) t = Tensor();
    for (auto& producer : saved_recipe_) producer.reset();
    for (auto& original : saved_original_) original.reset();
}

bool any_requires_grad(TensorRefs inputs) {
    if (!g_grad_mode) return false;
    for (size_t i = 0; i < inputs.size(); ++i) {
        if (inputs[i].defined() && inputs[i].requires_grad()) return true;
    }
    return false;
}

namespace {

// Edge `slot` of node to t's producer, when t requires grad.
void connect(OpNode& node, size_t slot, const Tensor& t) {
    if (!t.defined() || !t.requires_grad()) return;
    const auto& producer = producer_of(t);
    NORMNET_CHECK(!producer->released_,
                  "an input of this op belongs to a graph that backward() has already freed; recompute it");
    node.next_[slot] = producer;
}

// The producer that can recompute t for a node saving it, or null: t must be its producer's
// whole output (not a view, contiguous), unchanged since the producer made it (so in-place
// results, and tensors updated under NoGradGuard, are saved themselves), and not out's buffer.
OpNode* recipe_for(const Tensor& t, const Tensor& out) {
    if (g_keep_saved_outputs || !t.defined() || t.dtype() != kFloat32) return nullptr;
    const TensorImpl& impl = t.impl();
    OpNode* producer = impl.grad_fn.get();
    if (!producer || impl.is_view || impl.offset != 0 || !producer->recomputes_output() || producer->released_ ||
        impl.shape != producer->out_shape_ || !t.is_contiguous() || t.version() != producer->out_version_ ||
        (out.defined() && impl.storage == out.impl().storage)) {
        return nullptr;
    }
    return producer;
}

// Saves `saved` in the node with their versions, and makes `out` its output.
void finish(const std::shared_ptr<OpNode>& node, Tensor& out, TensorRefs saved) {
    NORMNET_CHECK(saved.size() <= static_cast<size_t>(kMaxSaved), node->name(), ": a node saves at most ", kMaxSaved,
                  " tensors");
    for (size_t i = 0; i < saved.size(); ++i) {
        // Saved without their history: a saved output would keep its own node alive, and a saved
        // input its producer (so freeing a long graph would recurse through saved tensors).
        const Tensor& t = saved[i];
        node->saved_version_[i] = t.defined() ? t.version() : 0;
        if (recipe_for(t, out) != nullptr) {
            node->saved_recipe_[i] = t.impl().grad_fn;
            node->saved_original_[i] = t.impl_ptr();
            continue;
        }
        node->saved_[i] = t.defined() ? t.detach() : Tensor();
    }
    node->out_shape_ = out.shape();
    node->out_version_ = out.version();
    TensorImpl& impl = out.impl();
    impl.requires_grad = true;
    impl.grad_fn = node;
}

}  // namespace

void attach(const std::shared_ptr<OpNode>& node, Tensor& out, TensorRefs inputs, TensorRefs saved) {
    pending_nodes();  // set up the free list's storage while building, not while freeing
    node->next_.resize(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) connect(*node, i, inputs[i]);
    finish(node, out, saved);
}

void check_inplace(const Tensor& self, const char* op) {
    if (!g_grad_mode || !self.requires_grad()) return;
    NORMNET_CHECK(!self.is_leaf(), op, ": a leaf Variable that requires grad is being used in an in-place operation "
                  "(run it under NoGradGuard, or on detach())");
    NORMNET_CHECK(!self.impl().is_view, op, ": in-place updates of a view of a tensor that requires grad are not "
                  "supported (update a contiguous copy, or the tensor itself)");
}

void attach_inplace(const std::shared_ptr<OpNode>& node, Tensor& self, TensorRefs others, TensorRefs saved) {
    pending_nodes();
    node->next_.resize(others.size() + 1);
    connect(*node, 0, self);  // self's history before the update
    for (size_t i = 0; i < others.size(); ++i) connect(*node, i + 1, others[i]);
    finish(node, self, saved);
}

OpNode* node_of(const Tensor& t) { return producer_of(t).get(); }

void run_backward(const Tensor& root, const Tensor& grad) {
    NORMNET_CHECK(root.defined() && root.requires_grad(),
                  "element 0 of tensors does not require grad and does not have a grad_fn");
    NORMNET_CHECK(grad.defined() && grad.shape() == root.shape(), "backward: gradient of shape ",
                  grad.defined() ? grad.shape().str() : "undefined", " does not match the tensor's shape ",
                  root.shape().str());
    NORMNET_CHECK(grad.dtype() == kFloat32, "backward: the gradient must be float32, got ", grad.dtype());
    OpNode* root_node = producer_of(root).get();
    NORMNET_CHECK(!root_node->released_,
                  "Trying to backward through the graph a second time: its saved tensors were freed by the first "
                  "backward (recompute the forward pass)");

    // Post-order depth-first search without recursion: producers end up before consumers. A
    // checkpoint's backward runs a backward of its own inside this one, so each depth has its
    // own lists (a deque: adding a depth moves no other's; kept, so no step allocates them again).
    struct Lists {
        std::vector<std::pair<OpNode*, int>> stack;
        std::vector<OpNode*> order;
    };
    thread_local std::deque<Lists> lists;
    thread_local size_t depth = 0;
    if (lists.size() <= depth) lists.emplace_back();
    auto& [stack, order] = lists[depth];
    struct Depth {
        explicit Depth(size_t& d) : d_(d) { ++d_; }
        ~Depth() { --d_; }
        size_t& d_;
    } const nested(depth);
    stack.clear();
    order.clear();
    const uint64_t mark = ++g_visit_epoch;
    root_node->visit_mark_ = mark;
    stack.emplace_back(root_node, 0);
    while (!stack.empty()) {
        auto& [node, next] = stack.back();
        if (static_cast<size_t>(next) < node->next_.size()) {
            OpNode* producer = node->next_[static_cast<size_t>(next++)].get();
            if (producer && producer->visit_mark_ != mark) {
                producer->visit_mark_ = mark;
                stack.emplace_back(producer, 0);
            }
        } else {
            order.push_back(node);
            stack.pop_back();
        }
    }

    {
        NoGradGuard no_grad;  // a backward built from ops must not record them
        root_node->gradient_buffer(nullptr).add_(grad);
        // Consumers first: when a node runs, every gradient contribution to its output has arrived.
        for (auto it = order.rbegin(); it != order.rend(); ++it) {
            OpNode* node = *it;
            if (dynamic_cast<AccumulateGrad*>(node) != nullptr) continue;
            if (node->grad_.defined()) {
                node->check_saved();
                node->restore_saved();
                node->backward(node->grad_);
                node->grad_ = Tensor();
            }
            node->release();
        }
    }
    order.clear();
}

namespace {

// Grad mode on for its lifetime: a checkpoint's backward records its re-run inside backward's
// NoGradGuard.
class EnableGrad {
public:
    EnableGrad() : previous_(g_grad_mode) { g_grad_mode = true; }
    ~EnableGrad() { g_grad_mode = previous_; }
    EnableGrad(const EnableGrad&) = delete;
    EnableGrad& operator=(const EnableGrad&) = delete;

private:
    bool previous_;
};

// checkpoint()'s node: saves fn's input only; its backward runs fn again, recording, and
// backpropagates dout through that graph (the parameters' gradients accumulate on the way; the
// input's is read from a detached copy and written by the one rule).
class CheckpointBackward final : public OpNode {
public:
    std::function<Tensor(const Tensor&)> fn;
    std::array<uint64_t, 4> rng{};  // the default generator before the forward, for the same dropout draws
    const char* name() const override { return "CheckpointFunctionBackward"; }
    void backward(const Tensor& dout) override {
        Tensor input = saved(0).detach();
        input.requires_grad_();
        Tensor out;
        {
            EnableGrad grad;
            Generator& generator = default_generator();
            const std::array<uint64_t, 4> now = generator.state();
            generator.set_state(rng);
            try {
                out = fn(input);
            } catch (...) {
                generator.set_state(now);
                throw;
            }
            generator.set_state(now);
        }
        NORMNET_CHECK(out.defined() && out.shape() == out_shape_, "checkpoint: the function returned ",
                      out.defined() ? out.shape().str() : std::string("an undefined tensor"), " when run again in "
                      "backward, not ", out_shape_.str(), " as in the forward");
        if (out.requires_grad()) run_backward(out, dout);
        const GradOut dx = grad_out(0);
        if (!dx) return;
        const Tensor g = input.grad();
        if (g.defined()) {
            dx.store(g.data(), g.numel());
        } else if (dx.fresh) {
            std::fill_n(dx.data, saved(0).numel(), 0.0f);  // fn's output did not depend on its input
        }
    }
};

}  // namespace
}  // namespace detail

Tensor checkpoint(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input) {
    NORMNET_CHECK(static_cast<bool>(fn), "checkpoint: no function given");
    // Nothing to save memory on: run fn as it is (as torch, which also needs an input that
    // requires grad to record its node).
    if (!detail::any_requires_grad({input})) return fn(input);
    NORMNET_CHECK(input.dtype() == kFloat32, "checkpoint: expected a float32 input, got ", input.dtype());
    const std::array<uint64_t, 4> rng = default_generator().state();
    Tensor out;
    {
        NoGradGuard no_grad;
        out = fn(input);
    }
    NORMNET_CHECK(out.defined() && out.dtype() == kFloat32, "checkpoint: the function must return a float32 tensor");
    // A handle of its own: fn may return its input, or a view of it, whose history must stay.
    out = out.detach();
    auto* node = detail::record<detail::CheckpointBackward>(out, {input}, {input});
    node->fn = fn;
    node->rng = rng;
    return out;
}

}  // namespace normnet
