// Helpers shared by the optimizer and schedule tests: tolerance checks against goldens and
// comparisons of state_dicts.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "test_helpers.hpp"

namespace normnet::test {

/// Tolerances of the optimizer goldens. With hardware fma the kernels are torch's bit for bit;
/// without (NORMNET_NATIVE=OFF or sanitizer builds) each of torch's fused a + alpha * b rounds
/// twice here, and Nesterov's cancellation makes that ~3e-7 absolute by step 3.
#ifdef __FMA__
inline constexpr double kOptimRtol = 1e-6, kOptimAtol = 1e-7;
#else
inline constexpr double kOptimRtol = 1e-5, kOptimAtol = 1e-6;
#endif

/// Largest violation of |a - e| <= atol + rtol * |e|, or 0 when every element passes.
inline double violation(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
    const auto a = actual.to_vector();
    const auto e = expected.to_vector();
    double worst = 0.0;
    for (size_t i = 0; i < a.size(); ++i) {
        const double err = std::abs(static_cast<double>(a[i]) - e[i]);
        if (!(err <= atol + rtol * std::abs(static_cast<double>(e[i])))) worst = std::max(worst, std::isnan(err) ? INFINITY : err);
    }
    return worst;
}

/// The names of a NamedTensors, in order.
inline std::vector<std::string> keys(const NamedTensors& named) {
    std::vector<std::string> out;
    for (const auto& [name, t] : named) out.push_back(name);
    return out;
}

/// The same names in the same order, with bit-identical tensors.
inline bool same_state(const NamedTensors& a, const NamedTensors& b) {
    if (keys(a) != keys(b)) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        if (!bit_equal(a[i].second, b[i].second)) return false;
    }
    return true;
}

/// `state` with entry `key` set to `value` (replaced, or added at the end).
inline NamedTensors with_entry(NamedTensors state, const std::string& key, const Tensor& value) {
    for (auto& [k, v] : state) {
        if (k == key) {
            v = value;
            return state;
        }
    }
    state.emplace_back(key, value);
    return state;
}

/// `state` without entry `key`.
inline NamedTensors without_entry(const NamedTensors& state, const std::string& key) {
    NamedTensors out;
    for (const auto& [k, v] : state) {
        if (k != key) out.emplace_back(k, v);
    }
    return out;
}

}  // namespace normnet::test
