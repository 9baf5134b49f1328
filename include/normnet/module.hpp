// Module: the base of every layer and model. It owns named parameters, buffers and child
// modules, recurses train()/eval(), walks its tree (named_modules, apply), produces PyTorch's
// state_dict names and repr, and deep-copies itself (clone(), through Cloneable<M>).
#pragma once

#include <array>
#include <cstddef>
#include <concepts>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "normnet/error.hpp"
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
template <class M>
class ModuleHolder;

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
    /// Registers the module a holder (nn::Linear, a NORMNET_MODULE class) holds, shared with it,
    /// and returns it, as libtorch: `register_module("fc1", fc1);` or `fc1 = register_module("fc1", nn::Linear(4, 2));`.
    template <class M>
    std::shared_ptr<M> register_module(const std::string& name, const ModuleHolder<M>& holder) {
        return register_module(name, holder.ptr());
    }
    /// A named module value (an lvalue) cannot be registered: it is not held by a shared_ptr, so
    /// the parent could not share it. Refused at compile time, with the ways that work.
    template <class M>
        requires std::derived_from<std::remove_cvref_t<M>, Module> && std::is_lvalue_reference_v<M>
    void register_module(const std::string&, M&&) {
        static_assert(!std::is_lvalue_reference_v<M>,
                      "register_module: a named module (an lvalue) cannot be shared; register std::move(module), a "
                      "std::shared_ptr, or a holder (nn::Linear fc{nullptr}; NORMNET_MODULE) to share it");
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

/// A shared handle on a module of type M, as libtorch's ModuleHolder: what normnet::nn::Linear
/// and the classes of NORMNET_MODULE are. `nn::Linear fc{nullptr};` is empty; `nn::Linear fc(784,
/// 300)` makes the module from M's constructor arguments (`nn::ReLU relu;`: M's default one);
/// `fc->forward(x)`, `fc(x)`, `*fc` reach it; copies share it, and register_module("fc", fc) or
/// Sequential{fc} register that same module (never a copy). A shared_ptr<M> converts to a holder.
template <class M>
class ModuleHolder {
public:
    using ContainedType = M;
    /// M made by its default constructor.
    ModuleHolder() : ptr_(std::make_shared<M>()) {
        static_assert(std::is_default_constructible_v<M>,
                      "this module has no default constructor: give its arguments, or declare an empty holder with {nullptr}");
    }
    /// An empty holder, to be assigned later (as a member assigned by register_module).
    ModuleHolder(std::nullptr_t) {}  // NOLINT: implicit, as libtorch's
    /// Shares an existing module.
    ModuleHolder(std::shared_ptr<M> module) : ptr_(std::move(module)) {}  // NOLINT: implicit, as libtorch's
    /// M made from these arguments: M(args...), or M{args...} for containers taking a list.
    template <class First, class... Rest>
        requires(!std::same_as<std::remove_cvref_t<First>, std::nullptr_t> || sizeof...(Rest) > 0) &&
                (!std::derived_from<std::remove_cvref_t<First>, ModuleHolder> || sizeof...(Rest) > 0) &&
                (!std::same_as<std::remove_cvref_t<First>, std::shared_ptr<M>> || sizeof...(Rest) > 0)
    explicit ModuleHolder(First&& first, Rest&&... rest) : ptr_(make(std::forward<First>(first), std::forward<Rest>(rest)...)) {}

    M* operator->() { return &**this; }
    const M* operator->() const { return &**this; }
    M& operator*() { return checked(); }
    const M& operator*() const { return checked(); }
    /// The module's forward (libtorch's holder calls forward): fc(x), lstm(x).
    template <class... Args>
    decltype(auto) operator()(Args&&... args) {
        return checked().forward(std::forward<Args>(args)...);
    }
    const std::shared_ptr<M>& ptr() const { return ptr_; }
    M* get() const { return ptr_.get(); }
    bool is_empty() const { return ptr_ == nullptr; }
    explicit operator bool() const { return !is_empty(); }

private:
    template <class... Args>
    static std::shared_ptr<M> make(Args&&... args) {
        if constexpr (std::is_constructible_v<M, Args...>) {
            return std::make_shared<M>(std::forward<Args>(args)...);
        } else {
            return std::make_shared<M>(M{std::forward<Args>(args)...});
        }
    }
    M& checked() const {
        NORMNET_CHECK(ptr_ != nullptr, "accessing an empty module holder (declared with {nullptr}; assign it, e.g. "
                                       "fc = register_module(\"fc\", nn::Linear(4, 2)))");
        return *ptr_;
    }
    std::shared_ptr<M> ptr_;
};

/// Declares Name, a holder of NameImpl, as libtorch's TORCH_MODULE: write `struct NetImpl :
/// normnet::Module {...}; NORMNET_MODULE(Net);`, then `Net net; net->forward(x)`.
#define NORMNET_MODULE(Name)                                          \
    class Name : public ::normnet::ModuleHolder<Name##Impl> {         \
    public:                                                           \
        using ::normnet::ModuleHolder<Name##Impl>::ModuleHolder;      \
        using Impl = Name##Impl;                                      \
    }

namespace detail {
template <class T>
concept IsModuleHolder = requires(const T& h) {
    typename T::ContainedType;
    { h.ptr() } -> std::convertible_to<std::shared_ptr<Module>>;
};
}  // namespace detail

/// A shared handle to any module, converting implicitly from a module, a shared_ptr or a holder,
/// so Sequential{Linear(784, 300), ReLU()} reads as in PyTorch: a temporary (or std::move(m)) is
/// moved in, a std::shared_ptr or a holder (nn::Linear) is shared. A named module value (an
/// lvalue) is refused at compile time rather than copied silently: share it through a holder or
/// a shared_ptr, move it, or pass m.clone() for a copy. Anything else is a compile error saying so.
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
        if constexpr (detail::IsModuleHolder<T>) {
            return module.ptr();
        } else if constexpr (detail::is_shared_ptr<T>::value) {
            static_assert(std::derived_from<typename T::element_type, Module>,
                          "a std::shared_ptr given as a module must point to a class derived from normnet::Module");
            if constexpr (std::derived_from<typename T::element_type, Module>) return std::forward<M>(module);
            else return nullptr;
        } else if constexpr (!std::derived_from<T, Module>) {
            static_assert(std::derived_from<T, Module>,
                          "expected a module (a class derived from normnet::Module) or a std::shared_ptr to one");
            return nullptr;
        } else if constexpr (std::is_lvalue_reference_v<M> || std::is_const_v<std::remove_reference_t<M>>) {
            static_assert(!std::is_lvalue_reference_v<M> && !std::is_const_v<std::remove_reference_t<M>>,
                          "a named module (an lvalue) is not copied silently and cannot be shared (no shared_ptr "
                          "holds it): pass std::move(module) to move it in, a holder or a std::shared_ptr to share "
                          "it, or module.clone() for a copy");
            return nullptr;
        } else {
            return std::make_shared<T>(std::move(module));
        }
    }

    std::shared_ptr<Module> ptr_;
};

}  // namespace normnet
