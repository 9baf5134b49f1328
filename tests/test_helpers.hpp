// Helpers shared by the tests: golden-file paths and tensor comparisons with useful messages.
#pragma once

#include <sys/mount.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "normnet/normnet.hpp"

namespace normnet::test {

/// Ends the current test case as skipped: ctest reports a test whose output has this marker as
/// "Skipped" (SKIP_REGULAR_EXPRESSION in tests/CMakeLists.txt), never as passed. For tests that
/// need data, a tool or a privilege the machine lacks.
#define NORMNET_SKIP(reason)                                              \
    do {                                                                  \
        std::ostringstream normnet_skip_reason;                           \
        normnet_skip_reason << reason;                                    \
        std::printf("NORMNET_SKIP: %s\n", normnet_skip_reason.str().c_str()); \
        std::fflush(stdout);                                              \
        return;                                                           \
    } while (0)

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

/// Class indices as an int64 tensor (goldens store them as I64).
inline Tensor to_indices(const Tensor& t) { return t.to(kInt64); }

/// An int64 tensor of class labels, e.g. labels_of({3, 1, 4}).
inline Tensor labels_of(const std::vector<int64_t>& values) {
    return from_vector(values, {static_cast<int64_t>(values.size())});
}

/// Bit-for-bit equality of dtype, shape and data (so -0.0 and NaN payloads count too).
inline bool bit_equal(const Tensor& a, const Tensor& b) {
    if (!(a.shape() == b.shape()) || a.dtype() != b.dtype()) return false;
    if (a.dtype() != kFloat32) return a.to_vector<int64_t>() == b.to_vector<int64_t>();
    const auto x = a.to_vector(), y = b.to_vector();
    return x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

/// Restores the thread count a test changes, also when a failed REQUIRE leaves the test early.
struct ThreadsGuard {
    int saved = get_num_threads();
    ~ThreadsGuard() { set_num_threads(saved); }
};

/// A fresh folder per test case (ctest runs test cases in parallel processes), removed with its
/// contents at the end; write permission is given back first, for tests that take it away.
struct ScratchDir {
    std::filesystem::path path;
    explicit ScratchDir(const std::string& prefix) {
        std::random_device rd;
        path = std::filesystem::temp_directory_path() / (prefix + std::to_string(rd()) + std::to_string(rd()));
        std::filesystem::create_directories(path);
    }
    ~ScratchDir() {
        std::error_code ec;
        std::filesystem::permissions(path, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
        std::filesystem::remove_all(path, ec);
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
    std::string operator/(const std::string& name) const { return (path / name).string(); }
};

/// A small tmpfs mounted on `path` for the lifetime of the object (a full or read-only disk on
/// demand); needs root, so `mounted` says whether it worked.
struct Tmpfs {
    std::filesystem::path path;
    bool mounted = false;
    Tmpfs(std::filesystem::path where, size_t bytes) : path(std::move(where)) {
        std::filesystem::create_directories(path);
        mounted = ::mount("tmpfs", path.c_str(), "tmpfs", 0, ("size=" + std::to_string(bytes)).c_str()) == 0;
    }
    /// Makes it read-only (what is on it stays readable).
    bool make_read_only() const { return ::mount(nullptr, path.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr) == 0; }
    ~Tmpfs() {
        if (mounted) ::umount2(path.c_str(), MNT_DETACH);
    }
    Tmpfs(const Tmpfs&) = delete;
    Tmpfs& operator=(const Tmpfs&) = delete;
};

/// The whole content of a file ("" when it cannot be read).
inline std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// The names of the entries directly in `dir`, sorted.
inline std::vector<std::string> files_in(const std::filesystem::path& dir) {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

/// A contiguous copy that requires grad: a fresh leaf for gradient tests.
inline Tensor leaf(const Tensor& t) { return t.detach().clone().requires_grad_(); }

}  // namespace normnet::test
