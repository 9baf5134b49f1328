// Runs the data-driven golden cases of tests/golden/gen_elementwise.py: each case names an op,
// its inputs (with the views to apply to them) and its arguments; the test supplies a table from
// op names to normnet calls, and every case of a file is run through it, output and gradients
// compared with PyTorch's (NaN where torch has NaN, equal infinities, finite values to 1e-5
// absolute + relative; *.special cases against their float64 reference).
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "test_helpers.hpp"

namespace normnet::test {

/// An op of the table: the views of the case's inputs, in call order, and its "args" object.
using GoldenOp = std::function<Tensor(const std::vector<Tensor>&, const nlohmann::json&)>;

/// A number from a case's args, where JSON's missing infinities are written "inf" and "-inf".
inline double arg(const nlohmann::json& args, const char* name) {
    const nlohmann::json& v = args.at(name);
    if (v.is_string()) return v.get<std::string>() == "inf" ? INFINITY : -INFINITY;
    return v.get<double>();
}

/// Largest violation of `actual` against `expected` (same shape): 0 when every element passes.
inline double special_aware_violation(const Tensor& actual, const Tensor& expected, double tol) {
    const auto a = actual.to_vector<double>();
    const auto e = expected.to_vector<double>();
    double worst = 0.0;
    for (size_t i = 0; i < a.size(); ++i) {
        if (std::isnan(e[i]) || std::isinf(e[i])) {
            const bool same = std::isnan(e[i]) ? std::isnan(a[i]) : a[i] == e[i];
            if (!same) worst = INFINITY;
            continue;
        }
        const double err = std::abs(a[i] - e[i]);
        if (!(err <= tol * (1.0 + std::abs(e[i])))) worst = std::max(worst, std::isnan(err) ? INFINITY : err);
    }
    return worst;
}

inline void require_golden_close(const Tensor& actual, const Tensor& expected, const std::string& what) {
    INFO(what << ": shapes " << actual.shape() << " vs " << expected.shape() << "; got " << actual.str()
              << "\nwant " << expected.str());
    REQUIRE(actual.shape() == expected.shape());
    if (expected.dtype() != kFloat32) {
        REQUIRE(actual.dtype() == expected.dtype());
        REQUIRE(actual.to_vector<int64_t>() == expected.to_vector<int64_t>());
        return;
    }
    REQUIRE(actual.dtype() == kFloat32);
    REQUIRE(special_aware_violation(actual, expected, 1e-5) == 0.0);
}

/// Applies a case's view steps (["t"], ["transpose", d0, d1], ["narrow", dim, start, length],
/// ["permute", dims], ["slice", dim, start, end, step], ["expand", sizes]).
inline Tensor apply_view(Tensor t, const nlohmann::json& steps) {
    for (const auto& step : steps) {
        const std::string kind = step.at(0).get<std::string>();
        if (kind == "t") {
            t = t.t();
        } else if (kind == "transpose") {
            t = t.transpose(step.at(1).get<int>(), step.at(2).get<int>());
        } else if (kind == "permute") {
            t = t.permute(Shape(step.at(1).get<std::vector<int64_t>>()));
        } else if (kind == "slice") {
            t = t.slice(step.at(1).get<int64_t>(), step.at(2).get<int64_t>(), step.at(3).get<int64_t>(),
                        step.at(4).get<int64_t>());
        } else if (kind == "expand") {
            t = t.expand(Shape(step.at(1).get<std::vector<int64_t>>()));
        } else {
            REQUIRE(kind == "narrow");
            t = t.narrow(step.at(1).get<int>(), step.at(2).get<int64_t>(), step.at(3).get<int64_t>());
        }
    }
    return t;
}

/// Runs every case of golden `file` through `ops`; returns the number of cases run. Every op of
/// the file must be in the table.
inline int run_golden_cases(const std::string& file, const std::map<std::string, GoldenOp>& ops) {
    const SafetensorsData g = golden(file);
    int count = 0;
    for (const auto& [key, op_name] : g.metadata) {
        if (key.size() < 3 || key.compare(key.size() - 3, 3, ".op") != 0) continue;
        const std::string c = key.substr(0, key.size() - 3);
        INFO("golden case " << c << " (" << op_name << ") of " << file);
        const auto op = ops.find(op_name);
        REQUIRE(op != ops.end());
        const auto args = nlohmann::json::parse(g.metadata.at(c + ".args"));
        const auto names = nlohmann::json::parse(g.metadata.at(c + ".inputs"));
        const bool grad = g.metadata.count(c + ".grad") > 0;
        std::vector<Tensor> bases, views;
        for (const auto& n : names) {
            const std::string name = n.get<std::string>();
            Tensor base = g.at(c + "." + name);
            if (grad && base.dtype() == kFloat32) base = leaf(base);
            bases.push_back(base);
            const auto view = g.metadata.find(c + ".view." + name);
            views.push_back(view == g.metadata.end() ? base : apply_view(base, nlohmann::json::parse(view->second)));
        }
        const Tensor y = op->second(views, args);
        const bool has64 = g.dtypes.count(c + ".y64") > 0;
        require_golden_close(y, g.at(c + (has64 ? ".y64" : ".y")), c + ".y");
        if (grad) {
            y.backward(g.at(c + ".dy"));
            for (size_t i = 0; i < bases.size(); ++i) {
                if (!bases[i].requires_grad()) continue;
                const std::string name = names[i].get<std::string>();
                require_golden_close(bases[i].grad(), g.at(c + ".d" + name), c + ".d" + name);
            }
        }
        ++count;
    }
    return count;
}

}  // namespace normnet::test
