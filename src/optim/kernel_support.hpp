// Internal: two helpers the optimizer kernels share: a multiply-add rounded as PyTorch's CPU
// kernels round it, and turning runtime flags into template arguments for branch-free loops.
#pragma once

#include <cmath>

namespace normnet::detail {

// a * b + c rounded once where the CPU has fma (as torch's kernels are built), else twice.
// (adam.cpp has the same for SIMD vectors, calling std::experimental::fma by name: reached
// through `using std::fma` and argument-dependent lookup, GCC 12 fell back to one lane at a time.)
inline float madd(float a, float b, float c) {
#ifdef __FMA__
    return std::fma(a, b, c);
#else
    return a * b + c;
#endif
}

// Calls f.template operator()<flags...>() with the runtime flags as template arguments, so each
// variant of a kernel gets a loop without branches.
template <bool... kFlags, class F>
void with_flags(F&& f) {
    f.template operator()<kFlags...>();
}
template <bool... kFlags, class F, class... Rest>
void with_flags(F&& f, bool flag, Rest... rest) {
    if (flag) {
        with_flags<kFlags..., true>(f, rest...);
    } else {
        with_flags<kFlags..., false>(f, rest...);
    }
}

}  // namespace normnet::detail
