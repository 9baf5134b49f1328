// Module goldens (tests/golden/gen_seq_modules.py, gen_seq_models.py): a case holds its torch
// module's state_dict as "<case>.sd.<key>" (keys in order in the metadata "<case>.keys") and
// each parameter's gradient as "<case>.grad.<name>". These load the state into a normnet module
// strictly (same names, shapes and order as PyTorch's) and compare the gradients.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "test_helpers.hpp"

namespace normnet::test {

inline std::vector<std::string> split_commas(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream in(s);
    for (std::string part; std::getline(in, part, ',');) out.push_back(part);
    return out;
}

/// Loads case c's torch state_dict into `module` (strict), after checking that the module's own
/// state_dict has exactly torch's keys in torch's order.
inline void load_torch_state(Module& module, const SafetensorsData& g, const std::string& c) {
    const std::vector<std::string> keys = split_commas(g.metadata.at(c + ".keys"));
    std::vector<std::string> ours;
    for (const auto& [name, t] : module.state_dict()) ours.push_back(name);
    REQUIRE(ours == keys);
    NamedTensors state;
    for (const auto& k : keys) state.emplace_back(k, g.at(c + ".sd." + k));
    module.load_state_dict(state, true);
}

/// Every parameter's gradient against torch's.
inline void require_torch_grads(const Module& module, const SafetensorsData& g, const std::string& c,
                                double tol = 1e-5) {
    for (const auto& [name, p] : module.named_parameters()) {
        const Tensor want = g.at(c + ".grad." + name);
        require_close(p.grad().defined() ? p.grad() : zeros(p.shape()), want, tol, c + ".grad." + name);
    }
}

/// A metadata flag written by Python ("True"/"False").
inline bool meta_flag(const SafetensorsData& g, const std::string& key) { return g.metadata.at(key) == "True"; }

}  // namespace normnet::test
