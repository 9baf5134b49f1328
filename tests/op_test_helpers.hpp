// Helpers of the op family tests (tests/test_ops_*.cpp): run_golden_case, which runs one case of
// tests/golden/gen_<family>.py: loads its inputs (float ones as fresh leaves, int64 ones as index
// tensors), takes the views the case's "view" metadata names (a=t: a.t(), a=T01: a.transpose(0,
// 1), a=narrow: a.narrow(-1, 1, size - 1)), calls the op, and compares the output and every input
// gradient of y.backward(dy) with PyTorch's; and the gradcheck shorthands.
#pragma once

#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "test_helpers.hpp"

namespace normnet::test {

using Inputs = std::map<std::string, Tensor>;
using GradFn = std::function<Tensor(const std::vector<Tensor>&)>;

/// A leaf of standard normal values * scale + offset from Generator(seed), requiring grad.
inline Tensor input(const Shape& shape, uint64_t seed, float scale = 1.0f, float offset = 0.0f) {
    Generator gen(seed);
    return add(mul(randn(shape, gen), scale), offset).detach().requires_grad_();
}

/// REQUIREs that gradcheck passed, showing its message otherwise.
inline void require_gradcheck(const GradcheckResult& r) {
    INFO(r.message);
    REQUIRE(r.ok);
}

/// Requires gradcheck(fn, inputs) to pass, printing its message otherwise.
inline void require_gradcheck(const GradFn& fn, const std::vector<Tensor>& inputs) {
    const GradcheckResult r = gradcheck(fn, inputs);
    INFO(r.message);
    REQUIRE(r.ok);
    REQUIRE(r.checked > 0);
}

/// Case `name` of golden file g: fn(inputs by name) -> y. `ints` names the int64 inputs.
inline void run_golden_case(const SafetensorsData& g, const std::string& name, const std::vector<std::string>& inputs,
                            const std::function<Tensor(Inputs&)>& fn, const std::vector<std::string>& ints = {},
                            double tol = 1e-5) {
    INFO("golden case " << name);
    Inputs leaves, views;
    const auto is_int = [&](const std::string& k) { return std::find(ints.begin(), ints.end(), k) != ints.end(); };
    for (const std::string& k : inputs) {
        const Tensor t = g.at(name + "." + k);
        leaves[k] = is_int(k) ? t.to(kInt64) : leaf(t);
        views[k] = leaves[k];
    }
    std::stringstream spec(g.metadata.count(name + ".view") ? g.metadata.at(name + ".view") : "");
    for (std::string item; std::getline(spec, item, ',');) {
        const std::string k = item.substr(0, item.find('=')), how = item.substr(item.find('=') + 1);
        Tensor& v = views[k];
        if (how == "t") v = v.t();
        else if (how == "T01") v = v.transpose(0, 1);
        else if (how == "narrow") v = v.narrow(-1, 1, v.size(-1) - 1);
        else FAIL("unknown view " << how);
    }
    const Tensor y = fn(views);
    const bool int_output = g.dtypes.at(name + ".y") == "I64";
    if (int_output) {
        REQUIRE(y.dtype() == kInt64);
        require_close(y.to(kFloat32), g.at(name + ".y"), 0.0, name + ".y");
        return;
    }
    require_close(y, g.at(name + ".y"), tol, name + ".y");
    y.backward(g.at(name + ".dy"));
    for (const std::string& k : inputs) {
        if (is_int(k)) continue;
        const Tensor grad = leaves[k].grad();
        const Tensor want = g.at(name + ".d" + k);
        require_close(grad.defined() ? grad : zeros(want.shape()), want, tol, name + ".d" + k);
    }
}

}  // namespace normnet::test
