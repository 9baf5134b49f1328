// Module goldens (tests/golden/gen_seq_modules.py, gen_seq_models.py): a case holds its torch
// module's state_dict as "<case>.sd.<key>" (keys in order in the metadata "<case>.keys") and
// each parameter's gradient as "<case>.grad.<name>". These load the state into a normnet module
// strictly (same names, shapes and order as PyTorch's) and compare the gradients.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "normnet/gradcheck.hpp"
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
/// A metadata integer.
inline int64_t meta_int(const SafetensorsData& g, const std::string& key) { return std::stoll(g.metadata.at(key)); }

/// CHECKs a gradcheck result, printing its message on failure.
inline void check_gradcheck(const GradcheckResult& r) {
    INFO(r.message);
    CHECK(r.ok);
}

/// The whole case for a module of one input: torch's state loaded, forward of "x" against "out",
/// backward of "dout", the input's gradient against "dx" and every parameter's.
inline void require_module_case(Module& module, const SafetensorsData& g, const std::string& c) {
    load_torch_state(module, g, c);
    Tensor x = leaf(g.at(c + ".x"));
    const Tensor out = module.forward(x);
    require_close(out, g.at(c + ".out"), 1e-5, c + ".out");
    out.backward(g.at(c + ".dout"));
    require_close(x.grad(), g.at(c + ".dx"), 1e-5, c + ".dx");
    require_torch_grads(module, g, c);
}

}  // namespace normnet::test
