// The Optimizer base: the named parameters in their groups, each group's options (lr included),
// the step counters, zero_grad, and the state saved and restored by name ("exp_avg.0.weight",
// "param_groups.1.weight_decay"), never by address.
#include <cmath>
#include <ostream>
#include <unordered_map>
#include <unordered_set>

#include "normnet/optim.hpp"

#include "../tensor_impl.hpp"
#include "exact.hpp"
#include "param_group_fields.hpp"

namespace normnet {
namespace {

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

// One option as a state tensor: doubles exactly (their bits), flags as bool.
Tensor option_tensor(double v) { return detail::exact_scalar(v); }
Tensor option_tensor(bool v) { return full(Shape{}, v ? 1.0 : 0.0, kBool); }
Tensor option_tensor(const std::pair<double, double>& v) {
    const double both[2] = {v.first, v.second};
    return detail::exact_vector(both);
}

// The inverse of option_tensor, checking the entry's dtype and size.
void read_option(const Tensor& t, const std::string& key, double& out) {
    out = detail::exact_value(t, "load_state_dict", key);
}
void read_option(const Tensor& t, const std::string& key, bool& out) {
    NORMNET_CHECK(t.dtype() == kBool && t.numel() == 1, "load_state_dict: \"", key,
                  "\" must be a one-element bool tensor, got ", dtype_name(t.dtype()), " ", t.shape());
    out = t.item<bool>();
}
void read_option(const Tensor& t, const std::string& key, std::pair<double, double>& out) {
    const std::vector<double> v = detail::exact_values(t, 2, "load_state_dict", key);
    out = {v[0], v[1]};
}

std::string group_prefix(size_t g) { return "param_groups." + std::to_string(g) + "."; }

}  // namespace

Optimizer::Optimizer(NamedTensors params)
    : Optimizer(std::vector<ParamGroup>{ParamGroup(std::move(params))}, ParamGroupOptions{.lr = 0.0}) {}

Optimizer::Optimizer(const std::vector<Tensor>& params)
    : Optimizer(std::vector<ParamGroup>{ParamGroup(params)}, ParamGroupOptions{.lr = 0.0}) {}

Optimizer::Optimizer(std::vector<ParamGroup> groups, ParamGroupOptions defaults) : defaults_(std::move(defaults)) {
    NORMNET_CHECK(!groups.empty(), "optimizer got an empty list of parameter groups");
    NORMNET_CHECK(defaults_.lr.has_value(), "optimizer: the default options have no lr");
    for (auto& group : groups) {
        Group g;
        g.begin = params_.size();
        for (auto& [name, p] : group.params) {
            params_.emplace_back(group.named ? std::move(name) : std::to_string(params_.size()), std::move(p));
            param_group_.push_back(groups_.size());
        }
        g.end = params_.size();
        g.options = detail::merged(defaults_, group.options);
        groups_.push_back(std::move(g));
    }
    NORMNET_CHECK(!params_.empty(), "optimizer got an empty parameter list");
    param_steps_.assign(params_.size(), 0);
    std::unordered_set<std::string> names;
    std::unordered_set<const detail::TensorImpl*> tensors;
    for (const auto& [name, p] : params_) {
        NORMNET_CHECK(!name.empty(), "optimizer: a parameter has an empty name");
        NORMNET_CHECK(p.defined(), "optimizer: parameter \"", name, "\" is an undefined tensor");
        NORMNET_CHECK(names.insert(name).second, "optimizer: parameter name \"", name, "\" appears more than once");
        // Listed twice (in one group or two), a tensor would be updated twice per step.
        NORMNET_CHECK(tensors.insert(&p.impl()).second, "optimizer: parameter \"", name,
              "\" is the same tensor as an earlier parameter");
        NORMNET_CHECK(p.is_leaf(), "optimizer: can't optimize a non-leaf tensor (\"", name, "\")");
        // The update kernels run over the flat data; a strided view would need a gather.
        NORMNET_CHECK(p.is_contiguous(), "optimizer: parameter \"", name, "\" must be contiguous");
    }
}

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

std::ostream& operator<<(std::ostream& os, const GroupName& who) {
    os << who.optimizer;
    if (who.group) os << " parameter group " << *who.group;
    return os;
}

GroupName Optimizer::who(size_t group) const {
    return {name(), groups_.size() == 1 ? std::nullopt : std::optional<size_t>(group)};
}

void Optimizer::check_options(const ParamGroupOptions&, const GroupName&) const {}

void Optimizer::check_param_groups() const {
    check_options(defaults_, GroupName{name(), std::nullopt});
    for (size_t g = 0; g < groups_.size(); ++g) {
        // An option the optimizer lacks would be ignored silently (torch keeps any key).
        detail::visit_options(
            [&](const char* field, const auto& value, const auto& known) {
                NORMNET_CHECK(!value || known, who(g), ": ", name(), " has no option ", field);
            },
            groups_[g].options, defaults_);
        check_options(groups_[g].options, who(g));
    }
}

double Optimizer::lr(size_t group) const {
    NORMNET_CHECK(group < groups_.size(), name(), ": no parameter group ", group, " (it has ", groups_.size(), ")");
    return *groups_[group].options.lr;
}

void Optimizer::set_lr(double lr) {
    for (size_t g = 0; g < groups_.size(); ++g) set_lr(g, lr);
}

void Optimizer::set_lr(size_t group, double lr) {
    NORMNET_CHECK(group < groups_.size(), name(), ": no parameter group ", group, " (it has ", groups_.size(), ")");
    // if/fail rather than NORMNET_CHECK(): the message names the group only when it fails.
    if (!(std::isfinite(lr) && lr >= 0.0)) fail(who(group), ": invalid learning rate (lr) ", lr, ": it must be finite and >= 0");
    groups_[group].options.lr = lr;
}

std::span<const NamedTensor> Optimizer::param_group_params(size_t group) const {
    NORMNET_CHECK(group < groups_.size(), name(), ": no parameter group ", group, " (it has ", groups_.size(), ")");
    return {params_.data() + groups_[group].begin, groups_[group].end - groups_[group].begin};
}

std::vector<OptimizerParamGroup> Optimizer::param_groups() {
    std::vector<OptimizerParamGroup> out;
    for (size_t g = 0; g < groups_.size(); ++g) out.push_back(OptimizerParamGroup(this, g));
    return out;
}

std::vector<Tensor> OptimizerParamGroup::params() const {
    std::vector<Tensor> out;
    for (const auto& entry : optimizer_->param_group_params(group_)) out.push_back(entry.second);
    return out;
}
double OptimizerParamGroup::Options::get_lr() const { return optimizer_->lr(group_); }
void OptimizerParamGroup::Options::set_lr(double lr) { optimizer_->set_lr(group_, lr); }
const ParamGroupOptions& OptimizerParamGroup::Options::values() const { return optimizer_->param_group_options(group_); }
void OptimizerParamGroup::Options::set(const ParamGroupOptions& overrides) {
    optimizer_->set_param_group_options(group_, overrides);
}

const ParamGroupOptions& Optimizer::param_group_options(size_t group) const {
    NORMNET_CHECK(group < groups_.size(), name(), ": no parameter group ", group, " (it has ", groups_.size(), ")");
    return groups_[group].options;
}

void Optimizer::set_param_group_options(size_t group, const ParamGroupOptions& overrides) {
    NORMNET_CHECK(group < groups_.size(), name(), ": no parameter group ", group, " (it has ", groups_.size(), ")");
    const ParamGroupOptions next = detail::merged(groups_[group].options, overrides);
    detail::visit_options(
        [&](const char* field, const auto& value, const auto& known) {
            NORMNET_CHECK(!value || known, who(group), ": ", name(), " has no option ", field);
        },
        next, defaults_);
    check_options(next, who(group));
    groups_[group].options = next;
}

std::optional<double> Optimizer::initial_lr(size_t group) const {
    NORMNET_CHECK(group < groups_.size(), name(), ": no parameter group ", group, " (it has ", groups_.size(), ")");
    return groups_[group].initial_lr;
}

void Optimizer::set_initial_lr(size_t group, double lr) {
    NORMNET_CHECK(group < groups_.size(), name(), ": no parameter group ", group, " (it has ", groups_.size(), ")");
    NORMNET_CHECK(std::isfinite(lr) && lr >= 0.0, who(group), ": invalid initial_lr ", lr, ": it must be finite and >= 0");
    groups_[group].initial_lr = lr;
}

int Optimizer::add_state(const std::string& prefix, bool (*needed)(const ParamGroupOptions&), bool scalar) {
    states_.push_back({prefix, needed, std::vector<Tensor>(params_.size()), scalar});
    return static_cast<int>(states_.size() - 1);
}

void Optimizer::set_shard(int64_t begin, int64_t end) {
    NORMNET_CHECK(0 <= begin && begin <= end, "Optimizer::set_shard: expected 0 <= begin <= end, got [", begin, ", ",
                  end, ")");
    shard_ = {begin, end};
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
    out.emplace_back("lr", scalar_tensor(static_cast<float>(lr(0))));
    for (size_t g = 0; g < groups_.size(); ++g) {
        const std::string prefix = group_prefix(g);
        const Group& group = groups_[g];
        Tensor indices = empty(Shape{static_cast<int64_t>(group.end - group.begin)}, kInt64);
        for (size_t i = group.begin; i < group.end; ++i) indices.data_ptr<int64_t>()[i - group.begin] = static_cast<int64_t>(i);
        out.emplace_back(prefix + "params", indices);
        detail::visit_options(
            [&](const char* field, const auto& value) {
                if (value) out.emplace_back(prefix + field, option_tensor(*value));
            },
            group.options);
        if (group.initial_lr) out.emplace_back(prefix + "initial_lr", detail::exact_scalar(*group.initial_lr));
    }
    for (size_t i = 0; i < params_.size(); ++i) {
        const bool has_state = !states_.empty() && states_[0].tensors[i].defined();
        if (counts_param_steps_ && (param_steps_[i] > 0 || has_state)) {
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
    std::unordered_map<std::string, const Tensor*> group_entries;  // "param_groups.*", checked after the parameters'
    std::unordered_set<std::string> seen;
    for (const auto& [key, value] : state) {
        NORMNET_CHECK(seen.insert(key).second, "load_state_dict: key \"", key, "\" appears more than once");
        if (key == "step" || key == "lr") continue;
        if (key.rfind("param_groups.", 0) == 0) {
            group_entries.emplace(key, &value);
            continue;
        }
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
        const Shape expected = states_[kind].scalar ? Shape{} : params_[it->second].second.shape();
        NORMNET_CHECK(value.defined() && value.shape() == expected, "load_state_dict: size mismatch for \"", key,
              "\": shape ", value.defined() ? value.shape().str() : "(undefined)", " in the state, but the parameter has shape ",
              expected.str());
        found[kind][it->second] = &value;
    }
    const int64_t step = whole_number(state, "step");
    const double lr0 = scalar_entry(state, "lr");
    NORMNET_CHECK(std::isfinite(lr0) && lr0 >= 0.0, "load_state_dict: \"lr\" must be finite and >= 0, got ", lr0);

    // The groups' options and initial lrs, as saved (torch replaces its param_groups' options).
    std::vector<ParamGroupOptions> options(groups_.size());
    std::vector<std::optional<double>> initial_lrs(groups_.size());
    const bool has_groups = !group_entries.empty();
    if (!has_groups) {
        NORMNET_CHECK(groups_.size() == 1, "load_state_dict: the state has no \"param_groups.*\" entries (it was saved "
                      "by a normnet without parameter groups, with one), but this ", name(), " has ", groups_.size(),
                      " parameter groups");
        options[0] = groups_[0].options;
        // The stored lr is float32: keep the current (double) lr when it rounds to it.
        if (static_cast<float>(*options[0].lr) != static_cast<float>(lr0)) options[0].lr = lr0;
        initial_lrs[0] = groups_[0].initial_lr;
    } else {
        size_t saved_groups = 0;
        while (group_entries.count(group_prefix(saved_groups) + "params") != 0) ++saved_groups;
        NORMNET_CHECK(saved_groups == groups_.size(), "load_state_dict: the state has ", saved_groups,
                      " parameter groups (\"param_groups.<g>.params\"), this ", name(), " has ", groups_.size());
        std::unordered_set<std::string> expected;
        for (size_t g = 0; g < groups_.size(); ++g) {
            const std::string prefix = group_prefix(g);
            expected.insert(prefix + "params");
            expected.insert(prefix + "initial_lr");
            detail::visit_options([&](const char* field, const auto& known) { if (known) expected.insert(prefix + field); },
                                  defaults_);
        }
        for (const auto& [key, value] : state) {
            NORMNET_CHECK(key.rfind("param_groups.", 0) != 0 || expected.count(key) != 0, "load_state_dict: unexpected key \"",
                          key, "\" in the ", name(), " state");
        }
        for (size_t g = 0; g < groups_.size(); ++g) {
            const std::string prefix = group_prefix(g);
            const Tensor& indices = *group_entries.at(prefix + "params");
            const Group& group = groups_[g];
            bool same = indices.dtype() == kInt64 && indices.dim() == 1 &&
                        indices.numel() == static_cast<int64_t>(group.end - group.begin);
            for (int64_t j = 0; same && j < indices.numel(); ++j) {
                same = indices.data_ptr<int64_t>()[j] == static_cast<int64_t>(group.begin) + j;
            }
            NORMNET_CHECK(same, "load_state_dict: \"", prefix, "params\" holds other parameters (", indices.numel(),
                          ", ", dtype_name(indices.dtype()), ") than group ", g, " of this ", name(), " (",
                          group.end - group.begin, " from index ", group.begin, " of params())");
            detail::visit_options(
                [&](const char* field, auto& value, const auto& known) {
                    if (!known) return;
                    const std::string key = prefix + field;
                    const auto it = group_entries.find(key);
                    NORMNET_CHECK(it != group_entries.end(), "load_state_dict: missing key \"", key, "\" in the ", name(),
                                  " state");
                    read_option(*it->second, key, value.emplace());
                },
                options[g], defaults_);
            if (const auto it = group_entries.find(prefix + "initial_lr"); it != group_entries.end()) {
                initial_lrs[g] = detail::exact_value(*it->second, "load_state_dict", it->first);
                NORMNET_CHECK(std::isfinite(*initial_lrs[g]) && *initial_lrs[g] >= 0.0, "load_state_dict: \"",
                              it->first, "\" must be finite and >= 0, got ", *initial_lrs[g]);
            }
            try {
                check_options(options[g], who(g));
            } catch (const Error& e) {
                fail("load_state_dict: ", e.what());
            }
        }
    }

    // A parameter's state comes whole: the first kind with every kind its group's options need.
    for (size_t i = 0; i < params_.size(); ++i) {
        const ParamGroupOptions& o = options[param_group_[i]];
        for (size_t k = 1; k < states_.size(); ++k) {
            const std::string& p = params_[i].first;
            NORMNET_CHECK(found[0][i] != nullptr || found[k][i] == nullptr, "load_state_dict: missing key \"",
                          states_[0].prefix, ".", p, "\" (the state of \"", p, "\" is incomplete)");
            const bool needed = states_[k].needed == nullptr || states_[k].needed(o);
            NORMNET_CHECK(found[0][i] == nullptr || !needed || found[k][i] != nullptr, "load_state_dict: missing key \"",
                          states_[k].prefix, ".", p, "\" (the state of \"", p, "\" is incomplete)");
        }
    }

    step_count_ = step;
    for (size_t i = 0; i < params_.size(); ++i) {
        // A state saved before steps were counted per parameter: every parameter with state took every step.
        const bool has_state = counts_param_steps_ && !states_.empty() && found[0][i] != nullptr;
        param_steps_[i] = steps[i] >= 0 ? steps[i] : has_state ? step : 0;
    }
    for (size_t g = 0; g < groups_.size(); ++g) {
        groups_[g].options = options[g];
        groups_[g].initial_lr = initial_lrs[g];
    }
    for (size_t k = 0; k < states_.size(); ++k) {
        for (size_t i = 0; i < params_.size(); ++i) {
            Tensor& mine = states_[k].tensors[i];
            if (found[k][i] == nullptr) {
                mine = Tensor();
                continue;
            }
            // Copy, never share: two optimizers restored from one dict must not alias.
            if (!mine.defined()) mine = empty(states_[k].scalar ? Shape{} : params_[i].second.shape());
            mine.copy_(*found[k][i]);
        }
    }
}

}  // namespace normnet
