// Internal: float transcendental functions that GCC vectorises. glibc's expf, logf and tanhf
// are calls that no loop around them can vectorise (without -ffast-math, which normnet does not
// use), so the elementwise kernels call these instead: straight-line code of multiplies, adds,
// integer bit operations and selects, inlined into the loop, which GCC turns into AVX-512 (or
// AVX2) code. The algorithms are Cephes' (S. L. Moshier): Cody-Waite range reduction and short
// polynomials, with the special values (inf, NaN, denormal results and arguments) handled by
// selects rather than branches. Polynomial steps are fused multiply-adds where the CPU has FMA
// (madd, as the optimizers'); -ffp-contract=off keeps every other rounding where it is written,
// so results do not depend on the thread count or the vector width. The loops vectorise only with
// -fno-trapping-math (set for the whole project): under GCC's default, code used on one side of
// a select is sunk into a branch and then not speculated back, since it might raise an FP flag.
//
// Maximum errors in units in the last place of the correctly rounded result (denormal results:
// units of 2^-149), measured against double-precision references over every 61st float (all
// binades, denormals, +-inf, NaN): the bound tests/test_ops_vmath.cpp holds, then the measured
// maximum with FMA (the -march=native build) and without (-march=x86-64-v2):
//   exp 1.1 (1.00, 0.97)  expm1 1.6 (1.40, 1.55)  log 0.9 (0.78, 0.80)  log1p 1.5 (1.44, 1.44)
//   tanh 1.4 (1.30, 1.30)  sigmoid 2.4 (2.30, 2.30)  erf 3.5 (3.25, 3.34)  gelu 8 (7.27, 7.52)
//   gelu_grad, GELU's derivative, which crosses 0 at x = -0.75: 4.5 units of 2^-24 absolute
//   (4.12 with FMA), and 5.5 ulp (5.01) where |x| > 1.5
//   gelu, tanh approximation: 2.5 (2.34, 2.34) for x >= 0; 5 + 2.5 x^2 for x < 0, where the
//   rounding of the cubic inside the tanh is amplified (inherent to evaluating it in float).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cmath>
#include <cstdint>
#include <limits>

#define NORMNET_VINLINE [[gnu::always_inline]] inline

namespace normnet::detail::vmath {

inline constexpr float kInf = std::numeric_limits<float>::infinity();

NORMNET_VINLINE float as_float(int32_t i) { return std::bit_cast<float>(i); }
NORMNET_VINLINE int32_t as_int(float f) { return std::bit_cast<int32_t>(f); }
/// a * b + c, fused where the CPU has FMA (one rounding, and faster), as the optimizers' madd.
NORMNET_VINLINE float madd(float a, float b, float c) {
#ifdef __FMA__
    return std::fma(a, b, c);
#else
    return a * b + c;
#endif
}

/// c[0] x^(N-1) + ... + c[N-1] by Horner's rule in madd steps (coefficients highest degree first,
/// as tests/golden/vmath_fit.py prints them).
template <size_t N>
NORMNET_VINLINE float horner(float x, const float (&c)[N]) {
    float p = c[0];
#pragma GCC unroll 16  // unrolled before the caller's loop is vectorised
    for (size_t i = 1; i < N; ++i) p = madd(p, x, c[i]);
    return p;
}

/// 2^n for an integer n in [-126, 127].
NORMNET_VINLINE float pow2i(int32_t n) { return as_float(static_cast<int32_t>(static_cast<uint32_t>(n + 127) << 23)); }

/// The integer nearest to x * scale (|x * scale| < 2^22) as (float, int): adding 1.5 * 2^23 leaves
/// the integer in the low mantissa bits. Defined for any x, NaN included (no float-to-int
/// conversion, which would also stop the vectorisation under -ftrapping-math).
struct Rounded {
    float f;
    int32_t i;
};
NORMNET_VINLINE Rounded round_to_int(float x, float scale) {
    constexpr float kMagic = 12582912.0f;
    const float t = madd(x, scale, kMagic);
    return {t - kMagic, as_int(t) - as_int(kMagic)};
}

// ln 2 split so that n * kLn2Hi is exact for |n| < 2^15 (Cody and Waite).
inline constexpr float kLn2Hi = 0.693359375f;
inline constexpr float kLn2Lo = -2.12194440e-4f;
inline constexpr float kLog2e = 1.44269504088896341f;

// Cephes expf: exp(r) = 1 + r + r^2 P(r).
inline constexpr float kExpP[] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                  4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

/// exp(r) - 1 - r for |r| <= ln2 / 2, over r^2 (Cephes expf's polynomial, minus its 1 + r).
NORMNET_VINLINE float expm1_poly(float r) {
    const float p = horner(r, kExpP);
    return madd(p, r * r, r);
}

/// exp(x + lo) for x in [-105, 89] and a correction |lo| << 1 (0 for plain exp; exact products
/// need it); NaN passes. The range keeps n = round(x / ln 2) within [-152, 128].
NORMNET_VINLINE float exp_sum_in_range(float xc, float lo) {
    const Rounded n = round_to_int(xc, kLog2e);
    const float r = madd(n.f, -kLn2Lo, madd(n.f, -kLn2Hi, xc)) + lo;
    const float y = expm1_poly(r) + 1.0f;
    // Scaled by 2^n in two exact steps, so denormal results and those near FLT_MAX round once.
    const int32_t half = n.i >> 1;
    return y * pow2i(half) * pow2i(n.i - half);
}

/// e^(x + lo) 2^64 for x in [-105, 0]: always a normal number, so 2^n is applied by adding n + 64
/// to the exponent bits (cheaper than exp's two multiplications); the caller multiplies the
/// product it forms by 2^-64, rounding once into a denormal where that is the result.
NORMNET_VINLINE float exp_sum_times_2p64(float xc, float lo) {
    const Rounded n = round_to_int(xc, kLog2e);
    const float r = madd(n.f, -kLn2Lo, madd(n.f, -kLn2Hi, xc)) + lo;
    const float y = expm1_poly(r) + 1.0f;
    return as_float(as_int(y) + static_cast<int32_t>(static_cast<uint32_t>(n.i + 64) << 23));
}

/// exp(x + lo) for any x and a correction |lo| << 1.
NORMNET_VINLINE float exp_sum(float x, float lo) {
    // Below -104 the result rounds to 0, above 89 to inf; the clamp keeps n in range (NaN passes).
    const float low = x < -104.0f ? -104.0f : x;
    return exp_sum_in_range(low > 89.0f ? 89.0f : low, lo);
}

/// e^x.
NORMNET_VINLINE float exp(float x) { return exp_sum(x, 0.0f); }

/// e^x - 1, accurate near 0.
NORMNET_VINLINE float expm1(float x) {
    const float low = x < -86.0f ? -86.0f : x;  // below -86: -1 in float (NaN passes)
    const float xc = low > 89.0f ? 89.0f : low;
    const Rounded n = round_to_int(xc, kLog2e);
    const float r = madd(n.f, -kLn2Lo, madd(n.f, -kLn2Hi, xc));
    const float q = expm1_poly(r);
    // e^x - 1 = 2^n (1 + q) - 1 = 2 ((s - 1/2) + s q) with s = 2^(n-1), which stays finite up to
    // n = 128 (the doubling overflows to inf where the result does).
    const float s = pow2i(n.i - 1);
    const float y = 2.0f * madd(s, q, s - 0.5f);
    return n.i == 0 ? q : y;
}

/// (f, e) with x = 2^e (1 + f), 1 + f in [sqrt(1/2), sqrt(2)); x > 0 finite (denormals included).
struct Reduced {
    float f;
    float e;
};
NORMNET_VINLINE Reduced reduce_log(float x) {
    const bool denormal = x < 1.17549435e-38f;
    const float xs = denormal ? x * 8388608.0f : x;  // * 2^23
    const int32_t bits = as_int(xs);
    const float m = as_float((bits & 0x007fffff) | 0x3f000000);  // mantissa in [1/2, 1)
    int32_t e = ((bits >> 23) & 0xff) - 126 - (denormal ? 23 : 0);
    const bool low = m < 0.707106781186547524f;
    e -= low ? 1 : 0;
    return {low ? (m + m) - 1.0f : m - 1.0f, static_cast<float>(e)};
}

// Cephes logf: log(1 + f) = f - f^2 / 2 + f^3 P(f).
inline constexpr float kLogP[] = {7.0376836292e-2f,  -1.1514610310e-1f, 1.1676998740e-1f,
                                  -1.2420140846e-1f, 1.4249322787e-1f,  -1.6668057665e-1f,
                                  2.0000714765e-1f,  -2.4999993993e-1f, 3.3333331174e-1f};

/// log(1 + f) for 1 + f in [sqrt(1/2), sqrt(2)), plus e ln 2 (Cephes logf).
NORMNET_VINLINE float log_reduced(Reduced v) {
    const float f = v.f, z = f * f;
    const float p = horner(f, kLogP);
    float y = p * f * z;
    y = madd(v.e, kLn2Lo, y);
    y = madd(-0.5f, z, y);
    return madd(v.e, kLn2Hi, f + y);
}

/// Log of an argument whose special cases are decided by x: log(+inf) = inf, log(0) = -inf,
/// negative or NaN: NaN.
NORMNET_VINLINE float log_specials(float x, float finite_positive_result) {
    const float r = x < kInf ? finite_positive_result : x;
    const float other = x == 0.0f ? -kInf : std::numeric_limits<float>::quiet_NaN();
    return x > 0.0f ? r : other;
}

/// Natural logarithm.
NORMNET_VINLINE float log(float x) { return log_specials(x, log_reduced(reduce_log(x))); }

/// log(1 + x), accurate near 0.
NORMNET_VINLINE float log1p(float x) {
    const float u = 1.0f + x;
    // u - 1 is exact for u < 2^24; (x - (u - 1)) is what rounding 1 + x lost, log1p(x) =
    // log(u) + that / u to first order. Outside (0, 2^24) the correction is 0 or meaningless.
    const float c = (x - (u - 1.0f)) / u;
    const float corr = u > 0.0f && u < 16777216.0f ? c : 0.0f;
    return log_specials(u, log_reduced(reduce_log(u)) + corr);
}

// Cephes tanhf: tanh(x) = x + x^3 P(x^2) for |x| < 0.625.
inline constexpr float kTanhP[] = {-5.70498872745e-3f, 2.06390887954e-2f, -5.37397155531e-2f, 1.33314422036e-1f,
                                   -3.33332819422e-1f};

/// tanh(x): an odd polynomial below 0.625 (Cephes tanhf), 1 - 2 / (e^2|x| + 1) above.
NORMNET_VINLINE float tanh(float x) {
    const float a = std::fabs(x);
    const float z = x * x;
    const float p = horner(z, kTanhP);
    const float small = madd(p * z, x, x);
    const float big = 1.0f - 2.0f / (exp(a + a) + 1.0f);
    const float big_signed = x < 0.0f ? -big : big;
    return a < 0.625f ? small : big_signed;  // NaN: big, which is NaN
}

/// 1 / (1 + e^-x), as e^x / (1 + e^x) for x < 0 so that tiny results keep their precision.
NORMNET_VINLINE float sigmoid(float x) {
    const float e = exp(x < 0.0f ? x : -x);  // e^-|x|, NaN stays NaN
    return (x < 0.0f ? e : 1.0f) / (1.0f + e);
}

// R(t) = Phi(-a) e^(a^2/2), t = 1 / (1 + 0.3 a), 0 <= a <= 14.5: a minimax fit in relative error.
inline constexpr float kCdfTailR[] = {3.840740752e-02f, -1.693075280e-01f, 2.289519032e-01f,
                                      -7.683978756e-02f, 1.427653495e-01f, 9.458583692e-02f,
                                      1.219452685e-01f,  1.194842066e-01f, 7.372414136e-06f};
// P(s) = (Phi(x) - 1/2) / x, s = x^2 <= 1: a least-squares fit in relative error.
inline constexpr float kCdfCentralP[] = {-7.652140073e-06f, 1.134811618e-04f,  -1.186325338e-03f,
                                         9.973321744e-03f,  -6.649035971e-02f, 3.989422801e-01f};

/// -a^2 / 2 as an exact sum hi + lo (exp(-a^2/2) from a rounded a^2 would lose up to a^2 * 2^-24
/// of relative accuracy): with FMA, the rounded square and its exact error; without, the square
/// of a's top 12 bits (exact) and the rest.
struct Split {
    float hi, lo;
};
NORMNET_VINLINE Split neg_half_square(float a) {
#ifdef __FMA__
    const float p = a * a;
    return {-0.5f * p, -0.5f * std::fma(a, a, -p)};
#else
    const float top = as_float(as_int(a) & static_cast<int32_t>(0xfffff000u));
    return {-0.5f * (top * top), -0.5f * ((a - top) * (a + top))};
#endif
}

/// Phi(-|x|) 2^64 and e^(-x^2/2) 2^64 (both 0 beyond |x| = 14.5, and for NaN), where Phi(x) =
/// (1 + erf(x / sqrt 2)) / 2 is the standard normal CDF, with relative accuracy in the tail:
/// Phi(-a) = e^(-a^2/2) R(t), t = 1 / (1 + 0.3 a). R is a minimax fit in relative error
/// (tests/golden/vmath_fit.py) for a up to 14.5, where Phi underflows. The 2^64 keeps both
/// normal numbers: callers apply their factors first and 2^-64 last, rounding once.
struct NormalTail {
    float cdf, gauss;
};
NORMNET_VINLINE NormalTail normal_tail_times_2p64(float x) {
    // Beyond 14.5, Phi(-a) is 0 in float: a is clamped there (keeping e^(-a^2/2) in range and inf
    // out) and the results zeroed. Both on the bits, which order as the values for a >= 0: a float
    // select here makes GCC compute the clamped case separately, with masked copies of half the
    // function. NaN is clamped too (callers propagate NaN through their own factors).
    const int32_t abits = as_int(std::fabs(x));
    const float a = as_float(std::min(abits, as_int(14.5f)));
    const int32_t in_range = -static_cast<int32_t>(abits <= as_int(14.5f));
    const float t = 1.0f / madd(0.3f, a, 1.0f);
    const float r = horner(t, kCdfTailR);
    const Split e = neg_half_square(a);
    const float g = as_float(as_int(exp_sum_times_2p64(e.hi, e.lo)) & in_range);
    return {r * g, g};
}

inline constexpr float k2m64 = 0x1p-64f;

/// w Phi(x) from q = Phi(-|x|) 2^64 (normal_tail_times_2p64's cdf). The factor w is applied
/// before the (possibly denormal) Gaussian, so x Phi(x) keeps full precision where Phi(x) alone
/// would be denormal.
NORMNET_VINLINE float scaled_cdf_from_tail(float x, float w, float q) {
    return x < 0.0f ? (w * q) * k2m64 : w * madd(-q, k2m64, 1.0f);
}

/// w Phi(x) (see normal_tail_times_2p64 and scaled_cdf_from_tail).
NORMNET_VINLINE float scaled_normal_cdf(float x, float w) {
    return scaled_cdf_from_tail(x, w, normal_tail_times_2p64(x).cdf);
}

/// Phi(x), the standard normal CDF (for NaN: some number in [0, 1]).
NORMNET_VINLINE float normal_cdf(float x) { return scaled_normal_cdf(x, 1.0f); }

/// erf(x) = 2 Phi(x sqrt 2) - 1 through normal_cdf, except below |x sqrt 2| = 1, where that
/// would cancel: there 2 u P(u^2), u = x sqrt 2, P a fit of (Phi(u) - 1/2) / u (vmath_fit.py).
/// (The rounding of x sqrt 2 costs at most half an ulp, erf being flat where it matters.)
NORMNET_VINLINE float erf(float x) {
    const float u = x * 1.41421356237309505f;
    const float s = u * u;
    const float p = horner(s, kCdfCentralP);
    const float central = 2.0f * (u * p);
    const float outer = madd(2.0f, normal_cdf(u), -1.0f);
    return std::fabs(u) >= 1.0f ? outer : central;  // NaN: central, which is NaN
}

/// x Phi(x): GELU, exact form.
NORMNET_VINLINE float gelu(float x) { return scaled_normal_cdf(x, x); }

/// GELU's derivative Phi(x) + x phi(x), phi(x) = e^(-x^2/2) / sqrt(2 pi) the normal density:
/// one exponential for both terms (computing them apart took two).
NORMNET_VINLINE float gelu_grad(float x) {
    const NormalTail n = normal_tail_times_2p64(x);
    return scaled_cdf_from_tail(x, 1.0f, n.cdf) + ((x * 0.398942280401432678f) * n.gauss) * k2m64;
}

/// sqrt(2 / pi) and the cubic coefficient of GELU's tanh approximation.
inline constexpr float kGeluBeta = 0.797884560802865356f;
inline constexpr float kGeluKappa = 0.044715f;

/// x (1 + tanh(z)) / 2 = x sigmoid(2 z), z = sqrt(2/pi) (x + 0.044715 x^3): GELU's tanh
/// approximation, written with the sigmoid, which keeps relative accuracy for negative x.
NORMNET_VINLINE float gelu_tanh(float x) {
    const float z = kGeluBeta * madd(kGeluKappa, x * x * x, x);
    return x * sigmoid(z + z);
}

}  // namespace normnet::detail::vmath
