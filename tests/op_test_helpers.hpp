// Helpers of the op tests (test_ops_*.cpp): gradcheck that reports its message, and seeded
// inputs that require grad.
#pragma once

#include "test_helpers.hpp"

namespace normnet::test {

/// REQUIREs that gradcheck passed, showing its message otherwise.
inline void require_gradcheck(const GradcheckResult& r) {
    INFO(r.message);
    REQUIRE(r.ok);
}

/// A leaf of standard normal values * scale + offset from Generator(seed), requiring grad.
inline Tensor input(const Shape& shape, uint64_t seed, float scale = 1.0f, float offset = 0.0f) {
    Generator gen(seed);
    return add(mul(randn(shape, gen), scale), offset).detach().requires_grad_();
}

}  // namespace normnet::test
