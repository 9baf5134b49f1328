// Module: registration of parameters, buffers and children; recursive traversal for names,
// modules, state_dict, train/eval, apply and zero_grad; the state copy behind clone();
// PyTorch-style printing.
#include "normnet/module.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <ostream>
#include <typeinfo>

#include "normnet/autograd.hpp"

namespace normnet {

Tensor find_tensor(const NamedTensors& list, const std::string& name) {
    const Tensor* t = list.find(name);
    return t != nullptr ? *t : Tensor();
}

Tensor* NamedTensors::find(const std::string& key) {
    for (auto& entry : *this) {
        if (entry.first == key) return &entry.second;
    }
    return nullptr;
}
const Tensor* NamedTensors::find(const std::string& key) const { return const_cast<NamedTensors&>(*this).find(key); }

Tensor& NamedTensors::operator[](const std::string& key) {
    Tensor* t = find(key);
    NORMNET_CHECK(t != nullptr, "no tensor named '", key, "' among ", size(), " (keys() lists them)");
    return *t;
}
const Tensor& NamedTensors::operator[](const std::string& key) const { return const_cast<NamedTensors&>(*this)[key]; }

std::vector<std::string> NamedTensors::keys() const {
    std::vector<std::string> out;
    for (const auto& entry : *this) out.push_back(entry.first);
    return out;
}

std::vector<Tensor> NamedTensors::values() const {
    std::vector<Tensor> out;
    for (const auto& entry : *this) out.push_back(entry.second);
    return out;
}

Tensor Module::forward(const Tensor&) {
    fail(type_name(), " has no single-input forward(); call its own forward");
}

std::string Module::type_name() const {
    const char* mangled = typeid(*this).name();
    int status = 0;
    char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
    std::string name = status == 0 && demangled ? demangled : mangled;
    std::free(demangled);
    const auto colon = name.rfind("::");
    return colon == std::string::npos ? name : name.substr(colon + 2);
}

namespace {
void check_new_name(const std::string& name, const NamedTensors& params, const NamedTensors& buffers,
                    const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children) {
    NORMNET_CHECK(!name.empty() && name.find('.') == std::string::npos, "invalid module member name '", name,
          "': it must be non-empty and contain no '.'");
    bool taken = !find_tensor(params, name).defined() && !find_tensor(buffers, name).defined();
    for (const auto& [key, child] : children) taken = taken && key != name;
    NORMNET_CHECK(taken, "attribute '", name, "' is already registered");
}
}  // namespace

Tensor Module::register_parameter(const std::string& name, Tensor tensor, bool requires_grad) {
    check_new_name(name, parameters_, buffers_, children_);
    NORMNET_CHECK(tensor.defined(), "register_parameter: '", name, "' is an undefined tensor");
    NORMNET_CHECK(tensor.is_leaf(), "register_parameter: '", name, "' must be a leaf tensor (detach it first)");
    tensor.requires_grad_(requires_grad);
    parameters_.emplace_back(name, tensor);
    return tensor;
}

Tensor Module::register_buffer(const std::string& name, Tensor tensor) {
    check_new_name(name, parameters_, buffers_, children_);
    NORMNET_CHECK(tensor.defined(), "register_buffer: '", name, "' is an undefined tensor");
    buffers_.emplace_back(name, tensor);
    return tensor;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
    check_new_name(name, parameters_, buffers_, children_);
    NORMNET_CHECK(module != nullptr, "register_module: '", name, "' is null");
    children_.emplace_back(name, std::move(module));
}

void Module::replace_child(const std::string& name, std::shared_ptr<Module> module) {
    for (auto& [key, child] : children_) {
        if (key == name) {
            NORMNET_CHECK(module != nullptr, "register_module: '", name, "' is null");
            child = std::move(module);
            return;
        }
    }
    add_child(name, std::move(module));
}

std::shared_ptr<Module> Module::remove_child(const std::string& name) {
    const auto it = std::find_if(children_.begin(), children_.end(), [&](const auto& c) { return c.first == name; });
    if (it == children_.end()) return nullptr;
    std::shared_ptr<Module> module = std::move(it->second);
    children_.erase(it);
    return module;
}

std::vector<std::shared_ptr<Module>> Module::children() const {
    std::vector<std::shared_ptr<Module>> out;
    out.reserve(children_.size());
    for (const auto& [name, child] : children_) out.push_back(child);
    return out;
}

void Module::collect_modules(NamedModules& out, std::vector<const Module*>& seen, const std::string& prefix) const {
    for (const auto& [name, child] : children_) {
        if (std::find(seen.begin(), seen.end(), child.get()) != seen.end()) continue;
        seen.push_back(child.get());
        const std::string child_name = prefix.empty() ? name : prefix + "." + name;
        out.emplace_back(child_name, child);
        child->collect_modules(out, seen, child_name);
    }
}

NamedModules Module::named_modules(const std::string& prefix, bool include_self) const {
    NamedModules out;
    std::vector<const Module*> seen{this};
    // This module is not necessarily owned by a shared_ptr: its entry aliases it without owning it.
    if (include_self) out.emplace_back(prefix, std::shared_ptr<Module>(std::shared_ptr<Module>(), const_cast<Module*>(this)));
    collect_modules(out, seen, prefix);
    return out;
}

std::vector<std::shared_ptr<Module>> Module::modules(bool include_self) const {
    std::vector<std::shared_ptr<Module>> out;
    for (auto& [name, module] : named_modules("", include_self)) out.push_back(std::move(module));
    return out;
}

Module& Module::apply(const std::function<void(Module&)>& fn) {
    for (auto& [name, child] : children_) child->apply(fn);
    fn(*this);
    return *this;
}

std::shared_ptr<Module> Module::clone() const {
    fail(type_name(), " does not support clone(): derive it from Cloneable<", type_name(),
         "> (it rebuilds the module from options() or its default constructor), or override clone()");
}

void Module::copy_state_from(const Module& source, bool recurse) {
    const auto check_same = [&](const NamedTensors& mine, const NamedTensors& theirs, const char* kind) {
        NORMNET_CHECK(mine.size() == theirs.size(), "clone: the rebuilt ", type_name(), " has ", mine.size(), " ", kind,
                      "s, the original ", theirs.size(), "; override clone() for a module whose structure is not set by "
                      "its constructor");
        for (size_t i = 0; i < mine.size(); ++i) {
            const Tensor &to = mine[i].second, &from = theirs[i].second;
            NORMNET_CHECK(mine[i].first == theirs[i].first && to.shape() == from.shape() && to.dtype() == from.dtype(),
                          "clone: the rebuilt ", type_name(), "'s ", kind, " '", mine[i].first, "' ", to.shape(),
                          " differs from the original's '", theirs[i].first, "' ", from.shape(),
                          "; override clone() for a module whose structure is not set by its constructor");
        }
    };
    check_same(parameters_, source.parameters_, "parameter");
    check_same(buffers_, source.buffers_, "buffer");
    NoGradGuard no_grad;
    for (size_t i = 0; i < parameters_.size(); ++i) {
        Tensor& to = parameters_[i].second;
        to.copy_(source.parameters_[i].second);
        to.requires_grad_(source.parameters_[i].second.requires_grad());
    }
    for (size_t i = 0; i < buffers_.size(); ++i) buffers_[i].second.copy_(source.buffers_[i].second);
    training_ = source.training_;
    if (!recurse) return;
    NORMNET_CHECK(children_.size() == source.children_.size(), "clone: the rebuilt ", type_name(), " has ",
                  children_.size(), " children, the original ", source.children_.size(),
                  "; override clone() for a module whose structure is not set by its constructor");
    for (size_t i = 0; i < children_.size(); ++i) {
        NORMNET_CHECK(children_[i].first == source.children_[i].first, "clone: the rebuilt ", type_name(),
                      "'s child '", children_[i].first, "' differs from the original's '", source.children_[i].first, "'");
        children_[i].second->copy_state_from(*source.children_[i].second, true);
    }
}

void Module::collect(NamedTensors& out, const std::string& prefix, bool params, bool buffers, bool recurse) const {
    if (params) {
        for (const auto& [name, t] : parameters_) out.emplace_back(prefix + name, t);
    }
    if (buffers) {
        for (const auto& [name, t] : buffers_) out.emplace_back(prefix + name, t);
    }
    if (!recurse) return;
    for (const auto& [name, child] : children_) child->collect(out, prefix + name + ".", params, buffers, true);
}

NamedTensors Module::named_parameters(bool recurse) const {
    NamedTensors out;
    collect(out, "", true, false, recurse);
    return out;
}

NamedTensors Module::named_buffers(bool recurse) const {
    NamedTensors out;
    collect(out, "", false, true, recurse);
    return out;
}

namespace {
std::vector<Tensor> values(const NamedTensors& named) {
    std::vector<Tensor> out;
    out.reserve(named.size());
    for (const auto& [name, t] : named) out.push_back(t);
    return out;
}
}  // namespace

std::vector<Tensor> Module::parameters(bool recurse) const { return values(named_parameters(recurse)); }
std::vector<Tensor> Module::buffers(bool recurse) const { return values(named_buffers(recurse)); }

NamedTensors Module::state_dict() const {
    NamedTensors out;
    collect(out, "", true, true, true);
    return out;
}

void Module::load_state_dict(const NamedTensors& state, bool strict) {
    const NamedTensors mine = state_dict();
    if (strict) {
        for (const auto& [name, t] : state) {
            NORMNET_CHECK(find_tensor(mine, name).defined(), "load_state_dict: unexpected key \"", name, "\" in state_dict");
        }
    }
    NoGradGuard no_grad;
    for (const auto& [name, target] : mine) {
        const Tensor source = find_tensor(state, name);
        if (!source.defined()) {
            NORMNET_CHECK(!strict, "load_state_dict: missing key \"", name, "\" in state_dict");
            continue;
        }
        NORMNET_CHECK(source.shape() == target.shape(), "load_state_dict: size mismatch for ", name,
              ": copying a param with shape ", source.shape(), ", the shape in current model is ",
              target.shape());
        target.detach().copy_(source);
    }
}

void Module::train(bool on) {
    training_ = on;
    for (auto& [name, child] : children_) child->train(on);
}

void Module::zero_grad(bool set_to_none) {
    for (auto& p : parameters()) {
        if (set_to_none) {
            p.set_grad(Tensor());
        } else if (p.grad().defined()) {
            p.grad().zero_();
        }
    }
}

void Module::repr(std::string& out, int indent) const {
    out += type_name() + "(";
    const std::string extra = extra_repr();
    if (children_.empty()) {
        out += extra + ")";
        return;
    }
    const std::string pad(static_cast<size_t>(indent + 2), ' ');
    out += "\n";
    if (!extra.empty()) out += pad + extra + "\n";
    for (const auto& [name, child] : children_) {
        out += pad + "(" + name + "): ";
        child->repr(out, indent + 2);
        out += "\n";
    }
    out += std::string(static_cast<size_t>(indent), ' ') + ")";
}

std::string Module::to_string() const {
    std::string out;
    repr(out, 0);
    return out;
}

std::ostream& operator<<(std::ostream& os, const Module& module) { return os << module.to_string(); }

}  // namespace normnet
