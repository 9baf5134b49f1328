// The autograd engine: grad mode, recording (attach), saved-tensor checks, gradient buffers and
// the backward pass. Backward visits nodes in reverse topological order found by an iterative
// depth-first search, so graphs of any depth work; each node writes its inputs' gradients into
// their producers' buffers, then drops its saved tensors. Leaves receive gradients through an
// AccumulateGrad node whose buffer is the leaf's .grad itself.
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
uint64_t g_visit_epoch = 0;
}  // namespace

bool grad_mode_enabled() { return g_grad_mode; }
NoGradGuard::NoGradGuard() : previous_(g_grad_mode) { g_grad_mode = false; }
NoGradGuard::~NoGradGuard() { g_grad_mode = previous_; }

namespace detail {

PoisonFreshGradients::PoisonFreshGradients() : previous_(g_poison_fresh) { g_poison_fresh = true; }
PoisonFreshGradients::~PoisonFreshGradients() { g_poison_fresh = previous_; }

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
    if (draining) return;  // an outer destructor is already emptying `pending`
    draining = true;
    while (!pending.empty()) {
        std::shared_ptr<OpNode> node = std::move(pending.back());
        pending.pop_back();
        if (node.use_count() == 1) {
            for (size_t i = 0; i < node->next_.size(); ++i) {
                if (node->next_[i]) pending.push_back(std::move(node->next_[i]));
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

void OpNode::release() {
    released_ = true;
    for (Tensor& t : saved_) t = Tensor();
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

// Saves `saved` in the node with their versions, and makes `out` its output.
void finish(const std::shared_ptr<OpNode>& node, Tensor& out, TensorRefs saved) {
    NORMNET_CHECK(saved.size() <= static_cast<size_t>(kMaxSaved), node->name(), ": a node saves at most ", kMaxSaved,
                  " tensors");
    for (size_t i = 0; i < saved.size(); ++i) {
        // Saved without their history: a saved output would keep its own node alive, and a saved
        // input its producer (so freeing a long graph would recurse through saved tensors).
        const Tensor& t = saved[i];
        node->saved_[i] = t.defined() ? t.detach() : Tensor();
        node->saved_version_[i] = t.defined() ? t.version() : 0;
    }
    node->out_shape_ = out.shape();
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

    // Post-order depth-first search without recursion: producers end up before consumers.
    thread_local std::vector<std::pair<OpNode*, int>> stack;
    thread_local std::vector<OpNode*> order;
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
                node->backward(node->grad_);
                node->grad_ = Tensor();
            }
            node->release();
        }
    }
    order.clear();
}

}  // namespace detail
}  // namespace normnet
