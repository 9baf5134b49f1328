// The op table: one row per public op of normnet (include/normnet/ops.hpp and the Tensor methods
// that are ops), as PyTorch's OpInfo. A row lives in two places that share one golden file:
//   - tests/golden/gen_optable.py: the op's PyTorch call and its sample generator (shapes with
//     size-0 and size-1 dims, every subset of dims, broadcasting pairs, views, NaN/inf/-0.0,
//     large offsets, ties, and error cases: samples on which torch raises), which writes the
//     samples and torch's answers to tests/golden/optable_<group>.safetensors;
//   - tests/op_table_rows.cpp: the op's normnet call, its other public spellings (operators,
//     methods, overloads), its golden tolerance and gradcheck settings, its known bugs.
// tests/test_op_table.cpp runs every row over every sample of the file: torch's result or
// torch's error (a normnet::Error, never a crash), and gradcheck on the smooth samples.
// Adding an op is adding a row on both sides (the tests fail while either side lacks it).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "normnet/normnet.hpp"

namespace normnet::test {

/// A sample's non-tensor arguments (its "args" object), read by name. JSON has no infinities:
/// numbers may be the strings "inf", "-inf" and "nan".
class Args {
public:
    explicit Args(const nlohmann::json& j) : j_(j) {}
    bool has(const char* name) const { return j_.contains(name) && !j_.at(name).is_null(); }
    double num(const char* name) const;
    float f(const char* name) const { return static_cast<float>(num(name)); }
    int64_t i(const char* name) const { return j_.at(name).get<int64_t>(); }
    std::optional<int64_t> opt_i(const char* name) const {
        return has(name) ? std::optional<int64_t>(i(name)) : std::nullopt;
    }
    bool b(const char* name) const { return j_.at(name).get<bool>(); }
    std::string s(const char* name) const { return j_.at(name).get<std::string>(); }
    /// A list of ints (dims, shapes).
    Shape dims(const char* name = "dims") const { return Shape(j_.at(name).get<std::vector<int64_t>>()); }
    const nlohmann::json& json() const { return j_; }

private:
    const nlohmann::json& j_;
};

/// What a row's call returns: its outputs in torch's order (one tensor, a tuple's or a list's).
using Outputs = std::vector<Tensor>;
/// A row's call: the inputs as the op sees them (views taken) and the sample's arguments.
using Call = std::function<Outputs(const std::vector<Tensor>& in, const Args& a)>;

/// A call written as a lambda returning a Tensor, a tuple of tensors or a vector of them.
template <class F>
Call call(F f) {
    return [f](const std::vector<Tensor>& in, const Args& a) -> Outputs {
        auto r = f(in, a);
        using R = decltype(r);
        if constexpr (std::is_same_v<R, Tensor>) {
            return {r};
        } else if constexpr (std::is_same_v<R, Outputs>) {
            return r;
        } else {
            return std::apply([](auto&... t) { return Outputs{t...}; }, r);
        }
    };
}

/// One sample as a known-bug entry sees it.
struct Sample {
    std::string op, kind;   // kind: normal, distinct, special, offset, ties
    std::vector<Shape> shapes;  // the inputs' shapes as the op sees them (after the views)
    std::vector<Dtype> dtypes;
    std::vector<bool> viewed;   // whether each input is a view of its stored base
    std::vector<Tensor> inputs; // the inputs as the op sees them
    const nlohmann::json* args = nullptr;
    bool torch_raises = false;
    bool torch_grads = false;   // torch took gradients
    /// The number of elements of input i.
    int64_t numel(size_t i) const { return shapes.at(i).numel(); }
    /// True when some input has no elements.
    bool any_empty() const;
    const nlohmann::json& arg(const char* name) const { return args->at(name); }
};

/// An expected failure, named after its issue: the samples `matches` selects may fail; the test
/// reports them loudly, and fails once none of them does (the entry must then go). Samples that
/// would crash the process or read uninitialised memory are not run at all (`unsafe`), and
/// reported. A `deliberate` entry is a documented choice to differ from torch: it stays, its
/// samples must still not crash, and it is reported too.
struct KnownBug {
    std::string what;
    std::function<bool(const Sample&)> matches;
    bool unsafe = false;
    bool gradients_only = false;  // it excuses a wrong input gradient only (the outputs must match)
    bool deliberate = false;
};

/// Another public spelling of a row's op (an operator, a method, an overload), called on the
/// same inputs: it must give the same outputs, bit for bit. An empty result means "does not
/// apply to these arguments" (x + s has no alpha).
struct Alias {
    std::string api;
    Call call;
};

struct OpRow {
    std::string name;       // the golden file's op name (gen_optable.py's row)
    std::string api;        // the public function or method the call exercises: "add", "Tensor::fill_"
    Call call;
    std::vector<Alias> also = {};
    double tol = 1e-5;      // |normnet - torch| <= tol * (1 + |torch|)
    // An output of int64 indices whose ties may come in another order than torch's (topk, sort):
    // compared through the values of input 0 they pick along the "dim" argument.
    int tie_indices = -1;
    bool gradcheck = true;  // gradcheck on the smooth samples (kinds normal and distinct)
    GradcheckOptions grad_options = {};
    // Samples whose analytic gradient is by definition not the numeric one (embedding's padding row).
    std::function<bool(const Sample&)> gradcheck_skips = nullptr;
    std::vector<KnownBug> known_bugs = {};
};

/// The groups of rows, one golden file each (optable_<group>.safetensors).
const std::vector<std::string>& op_groups();
/// The rows of a group.
const std::vector<OpRow>& op_rows(const std::string& group);

}  // namespace normnet::test
