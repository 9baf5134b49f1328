// Helpers shared by the tests: golden-file paths and tensor comparisons with useful messages.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "normnet/normnet.hpp"

namespace normnet::test {

/// Path of a committed PyTorch golden file (tests/golden/).
inline std::string golden_path(const std::string& file) { return std::string(NORMNET_TEST_DIR) + "/golden/" + file; }

/// Loads a golden file once per call site's need.
inline SafetensorsData golden(const std::string& file) { return load_safetensors(golden_path(file)); }

/// Largest violation of |a - e| <= tol * (1 + |e|) (absolute + relative), or 0 when all pass.
inline double worst_violation(const Tensor& actual, const Tensor& expected, double tol) {
    const auto a = actual.to_vector();
    const auto e = expected.to_vector();
    double worst = 0.0;
    for (size_t i = 0; i < a.size(); ++i) {
        const double err = std::abs(static_cast<double>(a[i]) - e[i]);
        const double excess = err - tol * (1.0 + std::abs(static_cast<double>(e[i])));
        if (!(excess <= 0.0)) worst = std::max(worst, std::isnan(excess) ? INFINITY : err);
    }
    return worst;
}

/// Requires equal shapes and every element within tol (absolute + relative).
inline void require_close(const Tensor& actual, const Tensor& expected, double tol = 1e-5,
                          const std::string& what = "") {
    INFO(what << ": shapes " << actual.shape().str() << " vs " << expected.shape().str());
    REQUIRE(actual.shape() == expected.shape());
    const double worst = worst_violation(actual, expected, tol);
    INFO(what << ": largest error beyond tolerance " << tol << ": " << worst);
    REQUIRE(worst == 0.0);
}

/// Class indices stored as a float tensor (goldens keep I64 targets), as int64.
inline std::vector<int64_t> to_indices(const Tensor& t) {
    std::vector<int64_t> out;
    for (float v : t.to_vector()) out.push_back(static_cast<int64_t>(v));
    return out;
}

/// Bit-for-bit equality of shape and data (so -0.0 and NaN payloads count too).
inline bool bit_equal(const Tensor& a, const Tensor& b) {
    if (!(a.shape() == b.shape())) return false;
    const auto x = a.to_vector(), y = b.to_vector();
    return x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

/// Restores the thread count a test changes, also when a failed REQUIRE leaves the test early.
struct ThreadsGuard {
    int saved = get_num_threads();
    ~ThreadsGuard() { set_num_threads(saved); }
};

/// A contiguous copy that requires grad: a fresh leaf for gradient tests.
inline Tensor leaf(const Tensor& t) { return t.detach().clone().requires_grad_(); }

}  // namespace normnet::test
