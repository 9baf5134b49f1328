// Custom differentiable ops written by users, in the spirit of torch::autograd::Function:
// a class with a static forward(ctx, args...) and a static backward(ctx, grad_outputs), run by
// Function<Derived>::apply(args...), which records the autograd node. Built-in ops subclass
// Node directly (see src/ops/); this is the convenient route for everyone else.
//
//   struct Square : normnet::Function<Square> {
//       static normnet::Tensor forward(normnet::AutogradContext* ctx, const normnet::Tensor& x) {
//           ctx->save_for_backward({x});
//           return x * x;
//       }
//       static normnet::tensor_list backward(normnet::AutogradContext* ctx, normnet::tensor_list grad_outputs) {
//           const normnet::Tensor x = ctx->get_saved_variables()[0];
//           return {grad_outputs[0] * x * 2.0f};
//       }
//   };
//   normnet::Tensor y = Square::apply(x);
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#if __has_include(<cxxabi.h>)
#include <cxxabi.h>

#include <cstdlib>
#endif

#include "normnet/autograd.hpp"
#include "normnet/tensor.hpp"

namespace normnet {

/// A list of tensors, as torch::autograd::variable_list.
using tensor_list = std::vector<Tensor>;

/// What a Function's forward hands to its backward (as torch::autograd::AutogradContext):
/// saved tensors, non-tensor values by name, and which inputs need a gradient.
class AutogradContext {
public:
    /// Keeps tensors for backward (inputs, the output or intermediates). They are stored
    /// detached (their data is shared, not copied) and freed once backward has run.
    void save_for_backward(tensor_list tensors) {
        saved_.clear();
        saved_.reserve(tensors.size());
        for (const Tensor& t : tensors) saved_.push_back(t.defined() ? t.detach() : Tensor());
    }
    /// The tensors given to save_for_backward, in the same order.
    const tensor_list& get_saved_variables() const { return saved_; }
    /// True when forward argument `index` (0 = the first after ctx) is a tensor that needs a
    /// gradient; backward may skip computing the others (return an undefined Tensor for them).
    bool needs_input_grad(std::size_t index) const {
        return index < needs_input_grad_.size() && needs_input_grad_[index];
    }
    /// Non-tensor values forward wants backward to see, e.g. ctx->saved_data["beta"] = beta.
    std::map<std::string, double> saved_data;

    /// Drops everything saved (called by the engine after backward).
    void release() {
        saved_.clear();
        saved_.shrink_to_fit();
        saved_data.clear();
    }

    /// Used by Function::apply: which forward arguments need a gradient.
    void set_needs_input_grad(std::vector<bool> flags) { needs_input_grad_ = std::move(flags); }

private:
    tensor_list saved_;
    std::vector<bool> needs_input_grad_;
};

namespace detail {

template <class T>
inline constexpr bool is_tensor_arg_v = std::is_same_v<std::remove_cvref_t<T>, Tensor>;

/// "Swish" for struct Swish (namespaces stripped), used to name a Function's node "SwishBackward".
template <class Derived>
const char* function_node_name() {
    static const std::string name = [] {
        const char* mangled = typeid(Derived).name();
        std::string s = mangled;
#if __has_include(<cxxabi.h>)
        int status = 0;
        char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
        if (status == 0 && demangled) s = demangled;
        std::free(demangled);
#endif
        const auto colon = s.rfind("::");
        if (colon != std::string::npos) s = s.substr(colon + 2);
        return s + "Backward";
    }();
    return name.c_str();
}

/// The node a Function records: it calls Derived::backward and adds (+=) the returned
/// gradients into the inputs' gradient buffers, checking their count and shapes.
template <class Derived>
struct FunctionNode final : Node {
    AutogradContext ctx;
    int num_args = 0;                             // forward arguments after ctx
    std::array<int, 16> slot_of_arg{};            // argument -> node input index, or -1
    std::array<Shape, kMaxNodeInputs> input_shapes{};

    const char* name() const override { return function_node_name<Derived>(); }

    void backward(const Tensor& dout) override {
        NoGradGuard no_grad;  // a backward that uses normnet ops must not record them
        const tensor_list grads = Derived::backward(&ctx, tensor_list{dout});
        check(static_cast<int>(grads.size()) == num_args, name(), ": backward returned ", grads.size(),
              " gradients, expected ", num_args, " (one per forward argument after ctx; an undefined Tensor for "
              "arguments without one)");
        for (int a = 0; a < num_args; ++a) {
            const Tensor& g = grads[static_cast<std::size_t>(a)];
            const int slot = slot_of_arg[static_cast<std::size_t>(a)];
            if (slot < 0) {
                check(!g.defined(), name(), ": backward returned a gradient for argument ", a,
                      ", which is not a Tensor; return an undefined Tensor there");
                continue;
            }
            if (!g.defined() || !needs_grad(slot)) continue;
            const Shape& expected = input_shapes[static_cast<std::size_t>(slot)];
            check(g.shape() == expected, name(), ": backward returned a gradient of shape ", g.shape(),
                  " for argument ", a, " of shape ", expected);
            bool fresh = false;  // a gradient buffer made just now is written, not zero-filled and added to
            Tensor buffer = grad_input_for_overwrite(slot, fresh);
            if (fresh) {
                buffer.copy_(g);
            } else {
                buffer.add_(g);
            }
        }
    }
    void release_saved() override { ctx.release(); }
};

}  // namespace detail

/// Base of a user-defined differentiable op (CRTP, as torch::autograd::Function<T>). Derived
/// defines
///   static Tensor forward(AutogradContext* ctx, <args>...);
///   static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs);
/// forward may take Tensors (at most kMaxNodeInputs; only arguments of type Tensor get
/// gradients) and any other values, and returns one Tensor. Its inputs may be views: call
/// contiguous() before walking data(). It runs with grad mode off, so normnet ops inside it
/// record nothing (nor do they in backward). backward
/// receives grad_outputs[0], the gradient of forward's output (contiguous, same shape; do not
/// modify it), and returns one entry per forward argument after ctx: the gradient of that
/// argument (same shape), or an undefined Tensor for non-tensor arguments and for inputs that
/// need none. The engine adds the returned gradients into the inputs' gradients.
template <class Derived>
struct Function {
    /// Runs Derived::forward on args and, when grad mode is on and a Tensor argument requires
    /// grad, records a node whose backward calls Derived::backward. Returns forward's result.
    template <class... Args>
    static Tensor apply(Args&&... args) {
        constexpr std::size_t num_args = sizeof...(Args);
        constexpr std::size_t num_tensors = (std::size_t{0} + ... + (detail::is_tensor_arg_v<Args> ? 1 : 0));
        static_assert(num_tensors <= static_cast<std::size_t>(kMaxNodeInputs),
                      "a Function takes at most kMaxNodeInputs Tensor arguments");
        static_assert(num_args <= 16, "a Function takes at most 16 arguments");
        static_assert(kMaxNodeInputs == 4, "update the connect() call below");

        // Tensor arguments in order, and each argument's slot among them (-1: not a Tensor).
        std::array<const Tensor*, 4> tensors{};
        std::array<int, 16> slot_of_arg{};
        slot_of_arg.fill(-1);
        std::vector<bool> needs(num_args, false);
        int next_slot = 0;
        std::size_t arg = 0;
        const bool grad_on = grad_mode_enabled();
        auto visit = [&](const auto& a) {
            if constexpr (detail::is_tensor_arg_v<decltype(a)>) {
                tensors[static_cast<std::size_t>(next_slot)] = &a;
                slot_of_arg[arg] = next_slot++;
                needs[arg] = grad_on && a.defined() && a.requires_grad();
            }
            ++arg;
        };
        (visit(args), ...);

        const bool record = autograd::any_requires_grad({tensors[0], tensors[1], tensors[2], tensors[3]});
        if (!record) {
            AutogradContext ctx;
            ctx.set_needs_input_grad(std::move(needs));
            NoGradGuard no_grad;
            return Derived::forward(&ctx, std::forward<Args>(args)...);
        }

        // Connect before forward runs: forward may take its Tensors by value and move from them.
        auto node = autograd::make_node<detail::FunctionNode<Derived>>({tensors[0], tensors[1], tensors[2], tensors[3]});
        node->num_args = static_cast<int>(num_args);
        node->slot_of_arg = slot_of_arg;
        for (int s = 0; s < next_slot; ++s) {
            const Tensor* t = tensors[static_cast<std::size_t>(s)];
            if (t->defined()) node->input_shapes[static_cast<std::size_t>(s)] = t->shape();
        }
        node->ctx.set_needs_input_grad(std::move(needs));
        Tensor out;
        {
            NoGradGuard no_grad;
            out = Derived::forward(&node->ctx, std::forward<Args>(args)...);
        }
        check(out.defined(), detail::function_node_name<Derived>(), ": forward returned an undefined Tensor");
        // A fresh handle on the same data: forward may have returned an input or a tensor the
        // caller keeps, whose own autograd state must not change.
        out = out.detach();
        autograd::set_history(out, node);
        return out;
    }
};

}  // namespace normnet
