// The one sgemm wrapper: OpenBLAS single-threaded (or under bfloat16 autocast oneDNN, also on one
// thread: gemm_bf16.cpp), large products split into per-thread blocks of rows or columns of C on
// normnet's pool (two pools on two cores would take turns).
#include "gemm.hpp"

#include <cblas.h>

#include <algorithm>

#include "../parallel.hpp"
#include "normnet/autocast.hpp"

namespace normnet::detail {
namespace {

// Below this many flops a product is not worth splitting between threads.
constexpr double kParallelGemmFlops = 4e5;

void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
           const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                static_cast<blasint>(M), static_cast<blasint>(N), static_cast<blasint>(K), alpha, A,
                static_cast<blasint>(std::max<int64_t>(lda, 1)), B, static_cast<blasint>(std::max<int64_t>(ldb, 1)),
                beta, C, static_cast<blasint>(std::max<int64_t>(ldc, 1)));
}

using Kernel = void (*)(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t, float,
                       float*, int64_t);

Kernel kernel() {
#ifdef NORMNET_WITH_DNNL
    if (matmul_precision() == MatmulPrecision::bfloat16) return gemm_bf16;
#endif
    return sgemm;
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
    if (M == 0 || N == 0) return;
    if (K == 0) {
        // An empty sum: C = beta * C, which BLAS implementations may skip.
        for (int64_t i = 0; i < M; ++i) {
            float* row = C + i * ldc;
            for (int64_t j = 0; j < N; ++j) row[j] = beta == 0.0f ? 0.0f : beta * row[j];
        }
        return;
    }
    use_single_threaded_blas();
    const Kernel product = kernel();
    if (pool_threads() == 1 || 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K) <
                                   kParallelGemmFlops) {
        product(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    if (N >= M) {
        // Column blocks of C: columns [b, e) of op(B), all of op(A).
        parallel_for(N, 16, [&](int64_t b, int64_t e) {
            product(trans_a, trans_b, M, e - b, K, alpha, A, lda, trans_b ? B + b * ldb : B + b, ldb, beta, C + b, ldc);
        }, 16);
    } else {
        // Row blocks of C: rows [b, e) of op(A), all of op(B).
        parallel_for(M, 8, [&](int64_t b, int64_t e) {
            product(trans_a, trans_b, e - b, N, K, alpha, trans_a ? A + b : A + b * lda, lda, B, ldb, beta, C + b * ldc, ldc);
        }, 8);
    }
}

}  // namespace normnet::detail
