// The autograd engine: grad mode, graph construction helpers, and the backward pass.
// Backward visits nodes in reverse topological order found by an iterative depth-first search,
// so graphs of any depth work; each node adds its inputs' gradients into their producers'
// buffers, then drops its saved tensors. Leaves receive gradients through an AccumulateGrad
// node that writes straight into their .grad.
#include "normnet/autograd.hpp"

#include <utility>
#include <vector>

namespace normnet {
namespace {

thread_local bool g_grad_mode = true;
uint64_t g_visit_epoch = 0;

// The node behind a leaf that requires grad: its gradient buffer is the leaf's .grad itself.
struct AccumulateGrad final : Node {
    std::weak_ptr<detail::TensorImpl> leaf;
    void backward(const Tensor&) override {}  // the gradient is already in leaf.grad
    const char* name() const override { return "AccumulateGrad"; }
    Tensor gradient_buffer(bool* fresh) override {
        // The leaf may be gone (a graph kept alive longer than its parameter); then the
        // gradient goes to a scratch buffer that nobody reads.
        auto impl = leaf.lock();
        if (!impl) return Node::gradient_buffer(fresh);
        if (fresh) *fresh = !impl->grad;
        if (!impl->grad) impl->grad = (fresh ? empty(impl->shape) : zeros(impl->shape)).impl_ptr();
        return Tensor(impl->grad);
    }
};

const std::shared_ptr<Node>& accumulator_of(const Tensor& leaf) {
    auto& impl = leaf.impl();
    if (!impl.grad_accumulator) {
        auto acc = std::allocate_shared<AccumulateGrad>(detail::PoolAllocator<AccumulateGrad>{});
        acc->leaf = leaf.impl_ptr();
        acc->out_shape_ = impl.shape;
        impl.grad_accumulator = std::move(acc);
    }
    return impl.grad_accumulator;
}

}  // namespace

namespace {
// Nodes waiting to be freed by ~Node; reserved up front so freeing a graph allocates nothing.
std::vector<std::shared_ptr<Node>>& pending_nodes() {
    thread_local std::vector<std::shared_ptr<Node>> pending = [] {
        std::vector<std::shared_ptr<Node>> v;
        v.reserve(256);
        return v;
    }();
    return pending;
}
}  // namespace

// Frees the chain of producers iteratively: with plain recursive destruction a graph of
// 100,000 ops would overflow the stack when its last tensor dies.
Node::~Node() {
    std::vector<std::shared_ptr<Node>>& pending = pending_nodes();
    thread_local bool draining = false;
    for (auto& edge : next_) {
        if (edge) pending.push_back(std::move(edge));
    }
    if (draining) return;  // an outer destructor is already emptying `pending`
    draining = true;
    while (!pending.empty()) {
        std::shared_ptr<Node> node = std::move(pending.back());
        pending.pop_back();
        if (node.use_count() == 1) {
            for (auto& edge : node->next_) {
                if (edge) pending.push_back(std::move(edge));
            }
        }
    }  // `node` dies here with no edges left, so its destructor does not recurse
    draining = false;
}

Tensor Node::gradient_buffer(bool* fresh) {
    if (fresh) *fresh = !grad_.defined();
    if (!grad_.defined()) grad_ = fresh ? empty(out_shape_) : zeros(out_shape_);
    return grad_;
}

Tensor Node::grad_input(int i) {
    Node* producer = next_[static_cast<size_t>(i)].get();
    return producer ? producer->gradient_buffer() : Tensor();
}

Tensor Node::grad_input_for_overwrite(int i, bool& fresh) {
    Node* producer = next_[static_cast<size_t>(i)].get();
    fresh = false;
    return producer ? producer->gradient_buffer(&fresh) : Tensor();
}

bool grad_mode_enabled() { return g_grad_mode; }

NoGradGuard::NoGradGuard() : previous_(g_grad_mode) { g_grad_mode = false; }
NoGradGuard::~NoGradGuard() { g_grad_mode = previous_; }

namespace autograd {

bool any_requires_grad(std::initializer_list<const Tensor*> inputs) {
    if (!g_grad_mode) return false;
    for (const Tensor* t : inputs) {
        if (t && t->defined() && t->requires_grad()) return true;
    }
    return false;
}

void connect(Node& node, std::initializer_list<const Tensor*> inputs) {
    pending_nodes();  // set up the free list's storage while building, not while freeing
    check(inputs.size() <= static_cast<size_t>(kMaxNodeInputs), "a node takes at most ", kMaxNodeInputs,
          " inputs");
    size_t i = 0;
    for (const Tensor* t : inputs) {
        if (t && t->defined() && t->requires_grad()) {
            const auto& producer = t->grad_fn() ? t->grad_fn() : accumulator_of(*t);
            check(!producer->released_,
                  "an input of this op belongs to a graph that backward() has already freed; recompute it");
            node.next_[i] = producer;
        }
        ++i;
    }
}

void set_history(Tensor& out, const std::shared_ptr<Node>& node) {
    node->out_shape_ = out.shape();
    out.impl().requires_grad = true;
    out.impl().grad_fn = node;
}

void run_backward(const Tensor& root, const Tensor& grad) {
    check(root.defined() && root.requires_grad(),
          "backward: element 0 of tensors does not require grad and does not have a grad_fn");
    check(grad.defined() && grad.shape() == root.shape(), "backward: gradient of shape ",
          grad.defined() ? grad.shape().str() : "undefined", " does not match the tensor's shape ",
          root.shape().str());
    const std::shared_ptr<Node>& root_node = root.grad_fn() ? root.grad_fn() : accumulator_of(root);
    check(!root_node->released_,
          "backward: trying to backward through the graph a second time; its saved tensors were freed by the "
          "first backward (recompute the forward pass)");

    // Post-order depth-first search without recursion: producers end up before consumers.
    thread_local std::vector<std::pair<Node*, int>> stack;
    thread_local std::vector<Node*> order;
    stack.clear();
    order.clear();
    const uint64_t mark = ++g_visit_epoch;
    root_node->visit_mark_ = mark;
    stack.emplace_back(root_node.get(), 0);
    while (!stack.empty()) {
        auto& [node, next] = stack.back();
        if (next < kMaxNodeInputs) {
            Node* producer = node->next_[static_cast<size_t>(next++)].get();
            if (producer && producer->visit_mark_ != mark) {
                producer->visit_mark_ = mark;
                stack.emplace_back(producer, 0);
            }
        } else {
            order.push_back(node);
            stack.pop_back();
        }
    }

    root_node->gradient_buffer().add_(grad);
    // Consumers first: when a node runs, every gradient contribution to its output has arrived.
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        Node* node = *it;
        if (node->grad_.defined()) {
            node->backward(node->grad_);
            node->grad_ = Tensor();
        }
        if (dynamic_cast<AccumulateGrad*>(node) == nullptr) {
            node->released_ = true;
            node->release_saved();
        }
    }
    order.clear();
}

}  // namespace autograd
}  // namespace normnet
