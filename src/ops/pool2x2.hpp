// Internal: the vector pieces of the 2x2 max-pooling kernels (stride 2, every window inside the
// input), shared by max_pool2d (pooling.cpp) and the normalisations that pool as they write
// (norm.cpp's *_max_pool2d_relu): a row's windows as vectors of their four elements, torch's
// scan for the maximum, and the stores of a window's gradients.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

// Vectors passed by value between these internal functions: no ABI to keep, so GCC's note that
// it would change without AVX is noise.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace normnet::detail::pool2x2 {

// Which of a 2x2 window's elements (0..3, row-major) torch's scan picks, and its value.
inline int argmax_2x2(float a, float b, float c, float d, float& m) {
    int k = 0;
    m = a;  // the scan starts at -inf: a is taken, or a is -inf and its index is kept anyway
    const bool tb = b > m || b != b;
    m = tb ? b : m, k = tb ? 1 : k;
    const bool tc = c > m || c != c;
    m = tc ? c : m, k = tc ? 2 : k;
    const bool td = d > m || d != d;
    m = td ? d : m, k = td ? 3 : k;
    return k;
}

// The 2x2 kernels work on vectors of 8 (or 4) outputs of a row, written with GCC's vector
// extensions (a row is 14 or 7 outputs in small CNNs: too short for the auto-vectoriser, whose
// 16-lane loops would leave it all to the scalar remainder). A row's last vector overlaps the
// one before instead of running a remainder. Without AVX the compiler splits the vectors.
using Floats8 = float __attribute__((vector_size(32)));
using Floats4 = float __attribute__((vector_size(16)));
template <class F>
constexpr int64_t kLanes = sizeof(F) / sizeof(float);

template <class F>
F load(const float* p) {
    F v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
template <class F>
void store(float* p, F v) {
    std::memcpy(p, &v, sizeof v);
}
// even, odd = the even and odd elements of p[0, 2 * lanes)
template <class F>
void deinterleave(const float* p, F& even, F& odd) {
    const F lo = load<F>(p), hi = load<F>(p + kLanes<F>);
    if constexpr (kLanes<F> == 8) {
        even = __builtin_shufflevector(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14);
        odd = __builtin_shufflevector(lo, hi, 1, 3, 5, 7, 9, 11, 13, 15);
    } else {
        even = __builtin_shufflevector(lo, hi, 0, 2, 4, 6);
        odd = __builtin_shufflevector(lo, hi, 1, 3, 5, 7);
    }
}
// p[0, 2 * lanes) = even and odd interleaved
template <class F>
void interleave(float* p, F even, F odd) {
    if constexpr (kLanes<F> == 8) {
        store(p, __builtin_shufflevector(even, odd, 0, 8, 1, 9, 2, 10, 3, 11));
        store(p + 8, __builtin_shufflevector(even, odd, 4, 12, 5, 13, 6, 14, 7, 15));
    } else {
        store(p, __builtin_shufflevector(even, odd, 0, 4, 1, 5));
        store(p + 4, __builtin_shufflevector(even, odd, 2, 6, 3, 7));
    }
}
// One step of torch's scan, lane by lane: v replaces the maximum m when greater or NaN.
template <class F>
F scan(F m, F v) {
    return ((v > m) | (v != v)) ? v : m;
}

// A vector's lanes as bools (0 or 1 bytes) and back: a mask of F (lanes -1 or 0) stored as
// kLanes<F> bytes, and loaded as such a mask.
template <class F>
using MaskOf = decltype(F{} > F{});
using Bytes8 = uint8_t __attribute__((vector_size(8)));
using Bytes4 = uint8_t __attribute__((vector_size(4)));
template <class F>
using BytesOf = std::conditional_t<kLanes<F> == 8, Bytes8, Bytes4>;

// The gradients of a vector of 2x2 windows (per lane: top-left, top-right, bottom-left,
// bottom-right element) stored by the Store rule into the row pair d0, d1 from column 2 * s.
template <class F, class Store>
void store_windows(float* __restrict d0, float* __restrict d1, int64_t s, F top0, F top1, F bottom0, F bottom1) {
    if (Store::beta != 0.0f) {
        F old0, old1;
        deinterleave(d0 + 2 * s, old0, old1);
        top0 += old0, top1 += old1;
        deinterleave(d1 + 2 * s, old0, old1);
        bottom0 += old0, bottom1 += old1;
    }
    interleave(d0 + 2 * s, top0, top1);
    interleave(d1 + 2 * s, bottom0, bottom1);
}

}  // namespace normnet::detail::pool2x2
