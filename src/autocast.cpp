// The process-wide precision of matrix products (include/normnet/autocast.hpp); ops/gemm.cpp
// reads it for every product.
#include "normnet/autocast.hpp"

#include <cpuid.h>

#include <atomic>
#include <cstdlib>

#include "normnet/error.hpp"

namespace normnet {
namespace {

std::atomic<MatmulPrecision> g_precision{MatmulPrecision::float32};

// AVX512_BF16 (CPUID leaf 7, subleaf 1, EAX bit 5) with the AVX-512 state saved by the system.
// NORMNET_TEST_NO_BF16 in the environment makes a CPU that has it act as one without (the tests
// of the refusal).
bool cpu_has_avx512_bf16() {
    if (std::getenv("NORMNET_TEST_NO_BF16") != nullptr) return false;
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid(1, &a, &b, &c, &d) == 0 || (c & (1u << 27)) == 0) return false;  // OSXSAVE
    unsigned xcr0 = 0, xcr0_high = 0;
    __asm__("xgetbv" : "=a"(xcr0), "=d"(xcr0_high) : "c"(0));
    if ((xcr0 & 0xe6u) != 0xe6u) return false;  // SSE, AVX and the three AVX-512 states
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0 || (b & (1u << 16)) == 0) return false;  // AVX512F
    return __get_cpuid_count(7, 1, &a, &b, &c, &d) != 0 && (a & (1u << 5)) != 0;
}

}  // namespace

std::string bf16_unavailable_reason() {
#ifndef NORMNET_WITH_DNNL
    return "this build of normnet has no bfloat16 matrix products: oneDNN (libdnnl-dev) was not found when it was built";
#else
    return cpu_has_avx512_bf16() ? "" : "this CPU has no AVX512_BF16 instructions (bfloat16 dot products), which bfloat16 training needs";
#endif
}

void set_matmul_precision(MatmulPrecision precision) {
    if (precision == MatmulPrecision::bfloat16) {
        const std::string why = bf16_unavailable_reason();
        NORMNET_CHECK(why.empty(), "bfloat16 matrix products: ", why);
    }
    g_precision.store(precision, std::memory_order_relaxed);
}

MatmulPrecision matmul_precision() { return g_precision.load(std::memory_order_relaxed); }

AutocastGuard::AutocastGuard(MatmulPrecision precision) : previous_(matmul_precision()) { set_matmul_precision(precision); }

AutocastGuard::~AutocastGuard() { g_precision.store(previous_, std::memory_order_relaxed); }

}  // namespace normnet
