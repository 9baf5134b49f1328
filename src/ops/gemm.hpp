// Internal: row-major single-precision GEMM, C = alpha * op(A) @ op(B) + beta * C, through
// OpenBLAS, with large products split over normnet's threads.
#pragma once

#include <cstdint>

namespace normnet::detail {

/// Sets OpenBLAS to one thread, once per process: normnet splits products over its own pool (threads.cpp).
void use_single_threaded_blas();

/// C: [M, N], op(A): [M, K], op(B): [K, N]; lda/ldb/ldc are the row strides of A, B, C as stored.
/// In the precision matmul_precision() says (normnet/autocast.hpp). Large products are split by blocks of rows or columns of C over normnet's threads. K = 0
/// gives C = beta * C (so beta = 0 writes zeros).
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

#ifdef NORMNET_WITH_DNNL
/// gemm on one thread with op(A) and op(B) rounded to bfloat16 and float32 sums (gemm_bf16.cpp):
/// what gemm runs under MatmulPrecision::bfloat16 (normnet/autocast.hpp).
void gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
               const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
#endif

/// out: [N, OC] = inp: [N, C] @ weight: [OC, C]^T + bias: [OC] (bias may be null): linear's
/// forward, and the fused feed-forward network's (the same kernel, so the same bits).
void linear_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t N, int64_t C,
                    int64_t OC);

}  // namespace normnet::detail
