// Sequential's forward, ModuleDict's keyed access and Functional.
#include "normnet/nn/container.hpp"

#include <algorithm>

namespace normnet {

Tensor Sequential::forward(const Tensor& x) {
    Tensor h = x;
    for (const auto& [name, child] : named_children()) h = child->forward(h);
    return h;
}

// ---------------------------------------------------------------- ModuleDict

ModuleDict::ModuleDict(std::initializer_list<std::pair<std::string, AnyModule>> modules) {
    for (const auto& [key, module] : modules) insert(key, module);
}

void ModuleDict::insert(const std::string& key, AnyModule module) { replace_child(key, module.ptr()); }

const std::shared_ptr<Module>& ModuleDict::operator[](const std::string& key) const {
    for (const auto& [name, module] : named_children()) {
        if (name == key) return module;
    }
    fail("ModuleDict: no module under key '", key, "'");
}

bool ModuleDict::contains(const std::string& key) const {
    const auto& items = named_children();
    return std::any_of(items.begin(), items.end(), [&](const auto& item) { return item.first == key; });
}

std::shared_ptr<Module> ModuleDict::pop(const std::string& key) {
    NORMNET_CHECK(contains(key), "ModuleDict: no module under key '", key, "'");
    return remove_child(key);
}

std::vector<std::string> ModuleDict::keys() const {
    std::vector<std::string> out;
    for (const auto& [name, module] : named_children()) out.push_back(name);
    return out;
}

std::shared_ptr<Module> ModuleDict::clone() const {
    auto copy = std::make_shared<ModuleDict>();
    for (const auto& [name, module] : named_children()) copy->insert(name, module->clone());
    copy->copy_state_from(*this, false);
    return copy;
}

// ---------------------------------------------------------------- Functional

Functional::Functional(Function function) : function_(std::move(function)) {
    NORMNET_CHECK(function_ != nullptr, "Functional: the function is empty");
}

Tensor Functional::forward(const Tensor& x) { return function_(x); }

}  // namespace normnet
