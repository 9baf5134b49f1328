// Containers (torch.nn.Sequential, ModuleList, ModuleDict) and Functional, a module made from a
// callable (torch::nn::Functional). Children of the indexed containers are named "0", "1", ...,
// a ModuleDict's by their keys, so state_dict keys are PyTorch's.
#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "normnet/export.hpp"
#include "normnet/module.hpp"

namespace normnet {

/// Iterates over the modules of a container (the values of its named_children()).
class ModuleIterator {
public:
    using Base = NamedModules::const_iterator;
    using value_type = std::shared_ptr<Module>;
    using difference_type = std::ptrdiff_t;
    using reference = const value_type&;
    using pointer = const value_type*;
    using iterator_category = std::forward_iterator_tag;
    ModuleIterator() = default;
    explicit ModuleIterator(Base it) : it_(it) {}
    reference operator*() const { return it_->second; }
    pointer operator->() const { return &it_->second; }
    ModuleIterator& operator++() {
        ++it_;
        return *this;
    }
    ModuleIterator operator++(int) {
        ModuleIterator old = *this;
        ++it_;
        return old;
    }
    bool operator==(const ModuleIterator& other) const = default;

private:
    Base it_{};
};

namespace detail {
/// `module` as type M; throws normnet::Error naming the container, the entry and the actual type.
template <class M>
std::shared_ptr<M> module_as(const std::shared_ptr<Module>& module, const Module& container, const std::string& entry) {
    auto m = std::dynamic_pointer_cast<M>(module);
    NORMNET_CHECK(m != nullptr, container.type_name(), "::at: module ", entry, " is a ", module->type_name());
    return m;
}
}  // namespace detail

/// What Sequential and ModuleList share: modules held in order and named by their index.
template <class Derived>
class IndexedModules : public Cloneable<Derived> {
public:
    IndexedModules() = default;
    /// From modules given as temporaries (moved in), named modules (copied) or shared_ptrs (shared).
    IndexedModules(std::initializer_list<AnyModule> modules) {
        for (const auto& m : modules) push_back(m);
    }
    /// Appends a module, named by its index.
    void push_back(AnyModule module) { this->add_child(std::to_string(size()), module.ptr()); }
    /// Appends (shares) every module of another container.
    template <class Other>
    void extend(const IndexedModules<Other>& other) {
        for (const auto& m : other) push_back(m);
    }
    /// Number of modules.
    size_t size() const { return this->named_children().size(); }
    bool is_empty() const { return size() == 0; }
    const std::shared_ptr<Module>& operator[](size_t index) const {
        NORMNET_CHECK(index < size(), this->type_name(), ": index ", index, " is out of range for ", size(), " modules");
        return this->named_children()[index].second;
    }
    /// The module at `index` as type M (throws normnet::Error when it is another type).
    template <class M>
    std::shared_ptr<M> at(size_t index) const {
        return detail::module_as<M>((*this)[index], *this, std::to_string(index));
    }
    ModuleIterator begin() const { return ModuleIterator(this->named_children().begin()); }
    ModuleIterator end() const { return ModuleIterator(this->named_children().end()); }
    /// A new container of clones of the modules.
    std::shared_ptr<Module> clone() const override {
        auto copy = std::make_shared<Derived>();
        for (const auto& m : *this) copy->push_back(m->clone());
        copy->copy_state_from(*this, false);
        return copy;
    }
};

/// Runs its modules in order, each on the previous one's output (torch.nn.Sequential).
class NORMNET_API Sequential : public IndexedModules<Sequential> {
public:
    using IndexedModules::IndexedModules;
    Tensor forward(const Tensor& x) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "Sequential"; }
};

/// Holds modules in a list without running them (torch.nn.ModuleList): a model's forward
/// indexes or iterates it. It has no forward of its own.
class NORMNET_API ModuleList : public IndexedModules<ModuleList> {
public:
    using IndexedModules::IndexedModules;
    std::string type_name() const override { return "ModuleList"; }
};

/// Holds modules under string keys in insertion order (torch.nn.ModuleDict). It has no forward.
class NORMNET_API ModuleDict : public Cloneable<ModuleDict> {
public:
    ModuleDict() = default;
    /// ModuleDict{{"fc", Linear(3, 3)}, {"act", ReLU()}}: modules as for Sequential.
    ModuleDict(std::initializer_list<std::pair<std::string, AnyModule>> modules);
    /// Adds `module` under `key`, or replaces the module held there (as PyTorch's dict[key] = m).
    void insert(const std::string& key, AnyModule module);
    /// The module under `key` (throws normnet::Error when there is none).
    const std::shared_ptr<Module>& operator[](const std::string& key) const;
    /// The module under `key` as type M.
    template <class M>
    std::shared_ptr<M> at(const std::string& key) const {
        return detail::module_as<M>((*this)[key], *this, "'" + key + "'");
    }
    bool contains(const std::string& key) const;
    /// Removes the module under `key` and returns it.
    std::shared_ptr<Module> pop(const std::string& key);
    /// The keys, in insertion order.
    std::vector<std::string> keys() const;
    /// The modules, in insertion order.
    std::vector<std::shared_ptr<Module>> values() const { return children(); }
    /// (key, module) pairs, in insertion order.
    const NamedModules& items() const { return named_children(); }
    size_t size() const { return named_children().size(); }
    bool is_empty() const { return size() == 0; }
    NamedModules::const_iterator begin() const { return named_children().begin(); }
    NamedModules::const_iterator end() const { return named_children().end(); }
    std::string type_name() const override { return "ModuleDict"; }
    /// A new dict of clones of the modules.
    std::shared_ptr<Module> clone() const override;
};

/// A module whose forward calls a function (torch::nn::Functional), to put an op in a Sequential:
/// Functional(relu), Functional([](const Tensor& x) { return x * 2.0f; }), or with bound trailing
/// arguments, Functional(log_softmax, 1) for forward(x) = log_softmax(x, 1).
class NORMNET_API Functional : public Cloneable<Functional> {
public:
    using Function = std::function<Tensor(const Tensor&)>;
    explicit Functional(Function function);
    template <class F, class... Args>
        requires(sizeof...(Args) > 0)
    Functional(F&& f, Args&&... args)
        : Functional(Function([f = std::forward<F>(f), ... args = std::forward<Args>(args)](const Tensor& x) {
              return f(x, args...);
          })) {}
    Tensor forward(const Tensor& x) override;
    std::string type_name() const override { return "Functional"; }
    /// The function called (what clone() rebuilds the module from).
    const Function& options() const { return function_; }

private:
    Function function_;
};

}  // namespace normnet
