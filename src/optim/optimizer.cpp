// The Optimizer base: the named parameters, lr, the one step counter, zero_grad, and the
// per-parameter state saved and restored by name ("exp_avg.0.weight"), never by address.
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "normnet/optim.hpp"

#include "../tensor_impl.hpp"

namespace normnet {
namespace {

NamedTensors name_by_index(const std::vector<Tensor>& params) {
    NamedTensors named;
    named.reserve(params.size());
    for (size_t i = 0; i < params.size(); ++i) named.emplace_back(std::to_string(i), params[i]);
    return named;
}

// The value of a one-element state entry such as "lr".
double scalar_entry(const NamedTensors& state, const std::string& key) {
    const Tensor t = find_tensor(state, key);
    NORMNET_CHECK(t.defined(), "load_state_dict: missing key \"", key, "\" in the optimizer state");
    NORMNET_CHECK(t.numel() == 1, "load_state_dict: \"", key, "\" must have one element, got shape ", t.shape());
    return t.item<double>();
}

// A step count: a whole number in [0, 2^53) (float32 in files written before steps were int64).
int64_t whole_number(const NamedTensors& state, const std::string& key) {
    const double v = scalar_entry(state, key);
    NORMNET_CHECK(std::isfinite(v) && v >= 0.0 && v == std::floor(v) && v < 9007199254740992.0,
                  "load_state_dict: \"", key, "\" must be a whole number >= 0, got ", v);
    return static_cast<int64_t>(v);
}

}  // namespace

Optimizer::Optimizer(NamedTensors params) : params_(std::move(params)), param_steps_(params_.size(), 0) {
    NORMNET_CHECK(!params_.empty(), "optimizer got an empty parameter list");
    std::unordered_set<std::string> names;
    std::unordered_set<const detail::TensorImpl*> tensors;
    for (const auto& [name, p] : params_) {
        NORMNET_CHECK(!name.empty(), "optimizer: a parameter has an empty name");
        NORMNET_CHECK(p.defined(), "optimizer: parameter \"", name, "\" is an undefined tensor");
        NORMNET_CHECK(names.insert(name).second, "optimizer: parameter name \"", name, "\" appears more than once");
        // Listed twice, a tensor would be updated twice per step.
        NORMNET_CHECK(tensors.insert(&p.impl()).second, "optimizer: parameter \"", name,
              "\" is the same tensor as an earlier parameter");
        NORMNET_CHECK(p.is_leaf(), "optimizer: can't optimize a non-leaf tensor (\"", name, "\")");
        // The update kernels run over the flat data; a strided view would need a gather.
        NORMNET_CHECK(p.is_contiguous(), "optimizer: parameter \"", name, "\" must be contiguous");
    }
}

Optimizer::Optimizer(const std::vector<Tensor>& params) : Optimizer(name_by_index(params)) {}

Optimizer::~Optimizer() = default;

void Optimizer::zero_grad(bool set_to_none) {
    for (auto& [name, p] : params_) {
        if (set_to_none) {
            p.set_grad(Tensor());
        } else if (p.grad().defined()) {
            p.grad().zero_();
        }
    }
}

void Optimizer::step_and_zero_grad() {
    step();
    zero_grad(/*set_to_none=*/false);
}

void Optimizer::set_lr(double lr) {
    // if/fail rather than NORMNET_CHECK(): schedules call this every batch and name() makes a string.
    if (!(std::isfinite(lr) && lr >= 0.0)) fail(name(), ": invalid learning rate (lr) ", lr, ": it must be finite and >= 0");
    lr_ = lr;
}

int Optimizer::add_state(const std::string& prefix) {
    states_.push_back({prefix, std::vector<Tensor>(params_.size())});
    return static_cast<int>(states_.size() - 1);
}

float* Optimizer::grad_data(size_t i) const {
    const Tensor& p = params_[i].second;
    const auto& grad = p.impl().grad;
    if (!grad) return nullptr;
    const Tensor g(grad);
    if (!g.is_contiguous()) fail(name(), ": the gradient of \"", params_[i].first, "\" must be contiguous");
    return g.data();
}

NamedTensors Optimizer::state_dict() const {
    NamedTensors out;
    out.emplace_back("step", full(Shape{}, static_cast<double>(step_count_), kInt64));
    out.emplace_back("lr", scalar_tensor(static_cast<float>(lr_)));
    for (size_t i = 0; i < params_.size(); ++i) {
        if (param_steps_[i] > 0) {
            out.emplace_back("step." + params_[i].first, full(Shape{}, static_cast<double>(param_steps_[i]), kInt64));
        }
        for (const auto& kind : states_) {
            const Tensor& t = kind.tensors[i];
            if (t.defined()) out.emplace_back(kind.prefix + "." + params_[i].first, t.detach().clone());
        }
    }
    return out;
}

void Optimizer::load_state_dict(const NamedTensors& state) {
    // Validate everything first, so a bad entry leaves the optimizer as it was.
    std::unordered_map<std::string, size_t> param_index;
    for (size_t i = 0; i < params_.size(); ++i) param_index.emplace(params_[i].first, i);
    // found[k][i]: the entry holding state kind k of parameter i, or null.
    std::vector<std::vector<const Tensor*>> found(states_.size(), std::vector<const Tensor*>(params_.size()));
    std::vector<int64_t> steps(params_.size(), -1);  // -1: no "step.<name>" entry
    std::unordered_set<std::string> seen;
    for (const auto& [key, value] : state) {
        NORMNET_CHECK(seen.insert(key).second, "load_state_dict: key \"", key, "\" appears more than once");
        if (key == "step" || key == "lr") continue;
        if (key.rfind("step.", 0) == 0) {
            const auto it = param_index.find(key.substr(5));
            NORMNET_CHECK(it != param_index.end(), "load_state_dict: key \"", key, "\" names no parameter of this ",
                          name());
            NORMNET_CHECK(counts_param_steps_, "load_state_dict: unexpected key \"", key, "\" in the ", name(), " state");
            steps[it->second] = whole_number(state, key);
            continue;
        }
        const size_t dot = key.find('.');
        size_t kind = states_.size();
        if (dot != std::string::npos) {
            for (size_t k = 0; k < states_.size(); ++k) {
                if (key.compare(0, dot, states_[k].prefix) == 0 && states_[k].prefix.size() == dot) kind = k;
            }
        }
        NORMNET_CHECK(kind < states_.size(), "load_state_dict: unexpected key \"", key, "\" in the ", name(), " state");
        const auto it = param_index.find(key.substr(dot + 1));
        NORMNET_CHECK(it != param_index.end(), "load_state_dict: key \"", key, "\" names no parameter of this ", name());
        const Shape& expected = params_[it->second].second.shape();
        NORMNET_CHECK(value.defined() && value.shape() == expected, "load_state_dict: size mismatch for \"", key,
              "\": shape ", value.defined() ? value.shape().str() : "(undefined)", " in the state, but the parameter has shape ",
              expected.str());
        found[kind][it->second] = &value;
    }
    const int64_t step = whole_number(state, "step");
    const double lr = scalar_entry(state, "lr");
    NORMNET_CHECK(std::isfinite(lr) && lr >= 0.0, "load_state_dict: \"lr\" must be finite and >= 0, got ", lr);
    // A parameter's state comes whole (Adam's exp_avg with its exp_avg_sq) or not at all.
    for (size_t i = 0; i < params_.size(); ++i) {
        for (size_t k = 1; k < states_.size(); ++k) {
            const size_t missing = found[k][i] ? 0 : k;
            NORMNET_CHECK((found[0][i] == nullptr) == (found[k][i] == nullptr), "load_state_dict: missing key \"",
                  states_[missing].prefix, ".", params_[i].first, "\" (the state of \"", params_[i].first,
                  "\" is incomplete)");
        }
    }

    step_count_ = step;
    for (size_t i = 0; i < params_.size(); ++i) {
        // A state saved before steps were counted per parameter: every parameter with state took every step.
        const bool has_state = counts_param_steps_ && !states_.empty() && found[0][i] != nullptr;
        param_steps_[i] = steps[i] >= 0 ? steps[i] : has_state ? step : 0;
    }
    if (static_cast<float>(lr_) != static_cast<float>(lr)) lr_ = lr;
    for (size_t k = 0; k < states_.size(); ++k) {
        for (size_t i = 0; i < params_.size(); ++i) {
            Tensor& mine = states_[k].tensors[i];
            if (found[k][i] == nullptr) {
                mine = Tensor();
                continue;
            }
            // Copy, never share: two optimizers restored from one dict must not alias.
            if (!mine.defined()) mine = empty(params_[i].second.shape());
            mine.copy_(*found[k][i]);
        }
    }
}

}  // namespace normnet
