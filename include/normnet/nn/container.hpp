// Containers: Sequential, which chains modules as torch.nn.Sequential.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>

#include "normnet/export.hpp"
#include "normnet/module.hpp"

namespace normnet {

/// Runs its children in order, each on the previous one's output; children are named "0", "1", ...
class NORMNET_API Sequential : public Module {
public:
    Sequential() = default;
    /// Sequential{Linear(784, 300), ReLU(), ...}: modules by value (moved) or as shared_ptrs.
    Sequential(std::initializer_list<AnyModule> modules);
    /// Appends a module, named by its index.
    void push_back(AnyModule module);
    Tensor forward(const Tensor& x) override;
    std::string type_name() const override { return "Sequential"; }
    /// Number of modules.
    size_t size() const { return named_children().size(); }
    const std::shared_ptr<Module>& operator[](size_t index) const;
    /// The child at `index` as type M (throws normnet::Error when it is another type).
    template <class M>
    std::shared_ptr<M> at(size_t index) const {
        auto m = std::dynamic_pointer_cast<M>((*this)[index]);
        NORMNET_CHECK(m != nullptr, "Sequential::at: module ", index, " is a ", (*this)[index]->type_name());
        return m;
    }
};

}  // namespace normnet
