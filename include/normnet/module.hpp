// Module: the base of every layer and model. It owns named parameters, buffers and child
// modules, recurses train()/eval(), and produces PyTorch's state_dict names and repr.
#pragma once

#include <concepts>
#include <iosfwd>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "normnet/export.hpp"
#include "normnet/tensor.hpp"

namespace normnet {

/// Base class of layers and models. Subclasses register their parameters, buffers and children
/// in the constructor and override forward() (and, for printing, type_name()/extra_repr()).
class NORMNET_API Module {
public:
    Module() = default;
    virtual ~Module() = default;
    Module(Module&&) = default;
    Module& operator=(Module&&) = default;
    // Copies would share parameters silently; share a std::shared_ptr instead.
    Module(const Module&) = delete;
    Module& operator=(const Module&) = delete;

    /// The module's computation on one input. The default throws: modules with other
    /// signatures define their own forward and are not used inside Sequential.
    virtual Tensor forward(const Tensor& x);
    /// model(x), as in PyTorch: calls forward(x).
    Tensor operator()(const Tensor& x) { return forward(x); }

    /// Class name shown by to_string(), e.g. "Linear"; defaults to the C++ class name.
    virtual std::string type_name() const;
    /// The text inside the parentheses of to_string(), e.g. "in_features=784, out_features=300, bias=True".
    virtual std::string extra_repr() const { return {}; }
    /// PyTorch-style multi-line description of the module tree.
    std::string to_string() const;

    /// Registers a trainable tensor under `name` (requires_grad set) and returns it.
    Tensor register_parameter(const std::string& name, Tensor tensor, bool requires_grad = true);
    /// Registers a state tensor (e.g. running statistics) under `name` and returns it.
    Tensor register_buffer(const std::string& name, Tensor tensor);
    /// Registers a child module under `name` and returns it.
    template <class M>
    std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
        add_child(name, module);
        return module;
    }
    /// Registers a child module given by value (moved into a shared_ptr) and returns it.
    template <class M>
        requires std::derived_from<std::remove_cvref_t<M>, Module> && (!std::is_lvalue_reference_v<M>)
    std::shared_ptr<std::remove_cvref_t<M>> register_module(const std::string& name, M&& module) {
        return register_module(name, std::make_shared<std::remove_cvref_t<M>>(std::move(module)));
    }

    /// Parameters of this module and (recursively) its children, named "child.name".
    NamedTensors named_parameters(bool recurse = true) const;
    /// The same tensors without their names, e.g. for an optimizer or clip_grad_norm.
    std::vector<Tensor> parameters(bool recurse = true) const;
    /// Buffers of this module and (recursively) its children.
    NamedTensors named_buffers(bool recurse = true) const;
    /// The same tensors without their names.
    std::vector<Tensor> buffers(bool recurse = true) const;
    /// Direct children in registration order.
    const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const { return children_; }
    /// Parameters and buffers with PyTorch's keys, in PyTorch's order (own parameters, own
    /// buffers, then each child's).
    NamedTensors state_dict() const;
    /// Copies values from `state` into this module's parameters and buffers (shapes must match).
    /// strict: every key must be present in both.
    void load_state_dict(const NamedTensors& state, bool strict = true);

    /// Sets training mode here and in every child.
    virtual void train(bool on = true);
    /// train(false): evaluation mode (BatchNorm uses its running statistics).
    void eval() { train(false); }
    /// True in training mode (the default), false after eval().
    bool is_training() const { return training_; }
    /// Clears the gradients of all parameters (set_to_none, as PyTorch's default, drops them;
    /// otherwise they are zero-filled in place).
    void zero_grad(bool set_to_none = true);

protected:
    /// Registers a child under `name` (what register_module does; for subclasses holding children by base pointer).
    void add_child(const std::string& name, std::shared_ptr<Module> module);

private:
    void collect(NamedTensors& out, const std::string& prefix, bool params, bool buffers, bool recurse) const;
    void repr(std::string& out, int indent) const;

    NamedTensors parameters_;
    NamedTensors buffers_;
    std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
    bool training_ = true;
};

/// Prints module.to_string(), so `std::cout << model` shows the tree as PyTorch's print does.
NORMNET_API std::ostream& operator<<(std::ostream& os, const Module& module);

/// A shared handle to any module; converts implicitly from a module value (moved) or a
/// shared_ptr, so Sequential{Linear(784, 300), ReLU()} reads as in PyTorch.
class AnyModule {
public:
    template <class M>
        requires std::derived_from<std::remove_cvref_t<M>, Module> && (!std::is_lvalue_reference_v<M>)
    AnyModule(M&& module)  // NOLINT: implicit on purpose
        : ptr_(std::make_shared<std::remove_cvref_t<M>>(std::move(module))) {}
    template <class M>
        requires std::derived_from<M, Module>
    AnyModule(std::shared_ptr<M> module)  // NOLINT: implicit on purpose
        : ptr_(std::move(module)) {}
    /// The module held.
    const std::shared_ptr<Module>& ptr() const { return ptr_; }

private:
    std::shared_ptr<Module> ptr_;
};

}  // namespace normnet
