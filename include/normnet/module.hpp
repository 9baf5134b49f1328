// Module: the base of every layer and model. It owns named parameters, buffers and child
// modules, recurses train()/eval(), walks its tree (named_modules, apply), produces PyTorch's
// state_dict names and repr, and deep-copies itself (clone(), through Cloneable<M>).
#pragma once

#include <array>
#include <concepts>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "normnet/export.hpp"
#include "normnet/tensor.hpp"

namespace normnet {

namespace onnx {
class GraphBuilder;
struct Value;
}  // namespace onnx

class Module;
/// (name, module) pairs in order, as named_children() and named_modules() return them.
using NamedModules = std::vector<std::pair<std::string, std::shared_ptr<Module>>>;

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

    /// ONNX export (normnet/onnx.hpp): adds to `graph` the nodes that compute forward(x) in eval
    /// mode from the graph value x and returns the output's value. normnet's modules define it;
    /// the default throws normnet::Error naming the module and its path. A custom module
    /// overrides it to be exportable, e.g. for forward(x) = x + fc(relu(x)):
    ///   onnx::Value to_onnx(onnx::GraphBuilder& g, const onnx::Value& x) const override {
    ///       return g.add(x, g.call(*fc, g.relu(x)));
    ///   }
    /// A subclass whose forward computes something else than its base's overrides it too.
    virtual onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const;

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
    const NamedModules& named_children() const { return children_; }
    /// The same modules without their names.
    std::vector<std::shared_ptr<Module>> children() const;
    /// Every module of the tree under its dotted name ("0", "0.fc", ...; prefixed by `prefix`):
    /// this one first (named `prefix`) when include_self, then depth-first in registration order; a
    /// module reachable twice is listed once, as PyTorch. The entry for this module points at it
    /// without owning it.
    NamedModules named_modules(const std::string& prefix = "", bool include_self = true) const;
    /// The same modules without their names.
    std::vector<std::shared_ptr<Module>> modules(bool include_self = true) const;
    /// Calls fn on every child's tree, then on this module (PyTorch's order), e.g. to initialise
    /// weights by module type; returns *this.
    Module& apply(const std::function<void(Module&)>& fn);
    /// A deep copy: the same tree of modules with copies of every parameter and buffer (gradients
    /// are not copied) and the same training modes. Modules derived from Cloneable<M>, as all of
    /// normnet's, have it; the default throws.
    virtual std::shared_ptr<Module> clone() const;
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
    /// Replaces the child registered under `name`, or registers it when there is none.
    void replace_child(const std::string& name, std::shared_ptr<Module> module);
    /// Unregisters the child `name` and returns it (null when there is none).
    std::shared_ptr<Module> remove_child(const std::string& name);
    /// Copies source's parameter and buffer values (and requires_grad flags) and its training mode
    /// into this module, which must have the same structure; into the children too when recurse.
    void copy_state_from(const Module& source, bool recurse = true);

private:
    void collect(NamedTensors& out, const std::string& prefix, bool params, bool buffers, bool recurse) const;
    void collect_modules(NamedModules& out, std::vector<const Module*>& seen, const std::string& prefix) const;
    void repr(std::string& out, int indent) const;

    NamedTensors parameters_;
    NamedTensors buffers_;
    NamedModules children_;
    bool training_ = true;
};

/// The base of modules that support clone() (as torch::nn::Cloneable): write `class M : public
/// Cloneable<M>` instead of deriving from Module. clone() rebuilds M the way it was built, as
/// M(options()) when M has options() and otherwise as M(), then copies the state of every
/// parameter, buffer and child of this module into the rebuilt one (the default generator is left
/// as it was). A module whose structure is not set by its constructor (a container filled after
/// construction) overrides clone().
template <class Derived>
class Cloneable : public Module {
public:
    std::shared_ptr<Module> clone() const override {
        std::shared_ptr<Derived> copy = rebuild(static_cast<const Derived&>(*this));
        copy->copy_state_from(*this);
        return copy;
    }

protected:
    /// A fresh Derived as its constructor makes it; the initial values it draws do not advance
    /// the default generator.
    static std::shared_ptr<Derived> rebuild(const Derived& self) {
        struct KeepGenerator {
            std::array<uint64_t, 4> state = default_generator().state();
            ~KeepGenerator() { default_generator().set_state(state); }
        } keep;
        if constexpr (requires { self.options(); }) {
            static_assert(std::constructible_from<Derived, decltype(self.options())>,
                          "Cloneable<M>::clone() rebuilds M as M(options()): M needs that constructor");
            return std::make_shared<Derived>(self.options());
        } else {
            static_assert(std::is_default_constructible_v<Derived>,
                          "Cloneable<M>::clone() rebuilds M as M(options()) or M(): give M one of them, or "
                          "override clone()");
            return std::make_shared<Derived>();
        }
    }
};

/// Prints module.to_string(), so `std::cout << model` shows the tree as PyTorch's print does.
NORMNET_API std::ostream& operator<<(std::ostream& os, const Module& module);

namespace detail {
template <class T>
struct is_shared_ptr : std::false_type {};
template <class T>
struct is_shared_ptr<std::shared_ptr<T>> : std::true_type {};
}  // namespace detail

/// A shared handle to any module, converting implicitly from a module or a shared_ptr, so
/// Sequential{Linear(784, 300), ReLU()} reads as in PyTorch: a temporary (or std::move(m)) is
/// moved in, a std::shared_ptr is shared, and a named module (an lvalue) is copied with clone(),
/// so the container owns its own parameters. Anything else is a compile error saying so.
class AnyModule {
public:
    template <class M>
        requires(!std::same_as<std::remove_cvref_t<M>, AnyModule>)
    AnyModule(M&& module)  // NOLINT: implicit on purpose
        : ptr_(hold(std::forward<M>(module))) {}
    /// The module held.
    const std::shared_ptr<Module>& ptr() const { return ptr_; }

private:
    template <class M>
    static std::shared_ptr<Module> hold(M&& module) {
        using T = std::remove_cvref_t<M>;
        // One branch per case, so a mistake gives its static_assert and no follow-up errors.
        if constexpr (detail::is_shared_ptr<T>::value) {
            static_assert(std::derived_from<typename T::element_type, Module>,
                          "a std::shared_ptr given as a module must point to a class derived from normnet::Module");
            if constexpr (std::derived_from<typename T::element_type, Module>) return std::forward<M>(module);
            else return nullptr;
        } else if constexpr (!std::derived_from<T, Module>) {
            static_assert(std::derived_from<T, Module>,
                          "expected a module (a class derived from normnet::Module) or a std::shared_ptr to one");
            return nullptr;
        } else if constexpr (std::is_lvalue_reference_v<M> || std::is_const_v<std::remove_reference_t<M>>) {
            static_assert(std::derived_from<T, Cloneable<T>>,
                          "a named module (an lvalue) is copied with clone(), which needs its class M to derive from "
                          "Cloneable<M>; pass std::move(module) to move it in, or a std::shared_ptr to share it");
            return module.clone();
        } else {
            return std::make_shared<T>(std::move(module));
        }
    }

    std::shared_ptr<Module> ptr_;
};

}  // namespace normnet
