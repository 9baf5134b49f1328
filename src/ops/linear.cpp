// Matrix products: matmul and linear (y = x W^T + b), forward and backward, through
// cblas_sgemm with transpose flags instead of explicit transposes; gemm_naive is the reference.
#include <cblas.h>

#include <algorithm>

#include "../parallel.hpp"
#include "gemm.hpp"
#include "normnet/autograd.hpp"
#include "normnet/ops.hpp"

namespace normnet {
namespace detail {

namespace {
// Below this many flops a product is not worth splitting between threads.
constexpr double kParallelGemmFlops = 4e5;

void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
           const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                static_cast<blasint>(M), static_cast<blasint>(N), static_cast<blasint>(K), alpha, A,
                static_cast<blasint>(lda), B, static_cast<blasint>(ldb), beta, C, static_cast<blasint>(ldc));
}
}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
    if (M == 0 || N == 0) return;
    use_single_threaded_blas();
    if (pool_threads() == 1 || 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K) <
                                   kParallelGemmFlops) {
        sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    if (N >= M) {
        // Column blocks of C: columns [b, e) of op(B), all of op(A).
        parallel_for(N, 16, [&](int64_t b, int64_t e) {
            sgemm(trans_a, trans_b, M, e - b, K, alpha, A, lda, trans_b ? B + b * ldb : B + b, ldb, beta, C + b, ldc);
        }, 16);
    } else {
        // Row blocks of C: rows [b, e) of op(A), all of op(B).
        parallel_for(M, 8, [&](int64_t b, int64_t e) {
            sgemm(trans_a, trans_b, e - b, N, K, alpha, trans_a ? A + b : A + b * lda, lda, B, ldb, beta, C + b * ldc, ldc);
        }, 8);
    }
}

void gemm_naive(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
    for (int64_t i = 0; i < M; ++i) {
        for (int64_t j = 0; j < N; ++j) {
            double acc = 0.0;
            for (int64_t k = 0; k < K; ++k) {
                const float a = trans_a ? A[k * lda + i] : A[i * lda + k];
                const float b = trans_b ? B[j * ldb + k] : B[k * ldb + j];
                acc += static_cast<double>(a) * b;
            }
            float& c = C[i * ldc + j];
            c = static_cast<float>(alpha * acc + (beta == 0.0f ? 0.0 : static_cast<double>(beta) * c));
        }
    }
}

// out: [N, M] = a: [N, K] @ b: [K, M]
void matmul_forward(float* out, const float* a, const float* b, int64_t N, int64_t K, int64_t M) {
    gemm(false, false, N, M, K, 1.0f, a, K, b, M, 0.0f, out, M);
}

// da: [N, K] += dout: [N, M] @ b^T;  db: [K, M] += a^T @ dout. Either may be null.
void matmul_backward(float* da, float* db, const float* dout, const float* a, const float* b, int64_t N, int64_t K,
                     int64_t M) {
    if (da) gemm(false, true, N, K, M, 1.0f, dout, M, b, M, 1.0f, da, K);
    if (db) gemm(true, false, K, M, N, 1.0f, a, K, dout, M, 1.0f, db, M);
}

// out: [N, OC] = inp: [N, C] @ weight: [OC, C]^T + bias: [OC] (bias may be null)
void linear_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t N, int64_t C,
                    int64_t OC) {
    if (bias) {
        for (int64_t n = 0; n < N; ++n) std::copy(bias, bias + OC, out + n * OC);
    }
    gemm(false, true, N, OC, C, 1.0f, inp, C, weight, C, bias ? 1.0f : 0.0f, out, OC);
}

// dinp: [N, C] += dout: [N, OC] @ weight: [OC, C]; dweight: [OC, C] += dout^T @ inp;
// dbias: [OC] += column sums of dout. Any of the three may be null. A gradient whose `fresh_*`
// flag is set holds garbage and is overwritten instead (beta = 0), sparing a zero-fill.
void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int64_t N, int64_t C, int64_t OC, bool fresh_inp, bool fresh_weight,
                     bool fresh_bias) {
    if (dinp) gemm(false, false, N, C, OC, 1.0f, dout, OC, weight, C, fresh_inp ? 0.0f : 1.0f, dinp, C);
    if (dweight) gemm(true, false, OC, C, N, 1.0f, dout, OC, inp, C, fresh_weight ? 0.0f : 1.0f, dweight, C);
    if (dbias) {
        if (fresh_bias) std::fill(dbias, dbias + OC, 0.0f);
        for (int64_t n = 0; n < N; ++n) {
            const float* row = dout + n * OC;
            for (int64_t o = 0; o < OC; ++o) dbias[o] += row[o];
        }
    }
}

}  // namespace detail

namespace {

float* data_or_null(const Tensor& t) { return t.defined() ? t.data() : nullptr; }

struct MatmulBackward final : Node {
    Tensor a, b;  // saved inputs, detached
    int64_t N = 0, K = 0, M = 0;
    const char* name() const override { return "MmBackward0"; }
    void backward(const Tensor& dout) override {
        detail::matmul_backward(data_or_null(grad_input(0)), data_or_null(grad_input(1)), dout.data(), a.data(),
                                b.data(), N, K, M);
    }
    void release_saved() override { a = b = Tensor(); }
};

struct LinearBackward final : Node {
    Tensor x, weight;  // saved inputs, detached and contiguous
    int64_t N = 0, C = 0, OC = 0;
    const char* name() const override { return "AddmmBackward0"; }
    void backward(const Tensor& dout) override {
        bool fresh_x = false, fresh_w = false, fresh_b = false;
        const Tensor dx = grad_input_for_overwrite(0, fresh_x);
        const Tensor dw = grad_input_for_overwrite(1, fresh_w);
        const Tensor db = grad_input_for_overwrite(2, fresh_b);
        detail::linear_backward(data_or_null(dx), data_or_null(dw), data_or_null(db), dout.data(), x.data(),
                                weight.data(), N, C, OC, fresh_x, fresh_w, fresh_b);
    }
    void release_saved() override { x = weight = Tensor(); }
};

}  // namespace

Tensor matmul(const Tensor& a_in, const Tensor& b_in) {
    check(a_in.dim() == 2 && b_in.dim() == 2 && a_in.size(1) == b_in.size(0), "matmul: shapes ", a_in.shape(),
          " and ", b_in.shape(), " cannot be multiplied");
    const Tensor a = a_in.contiguous(), b = b_in.contiguous();
    const int64_t N = a.size(0), K = a.size(1), M = b.size(1);
    Tensor out = empty({N, M});
    detail::matmul_forward(out.data(), a.data(), b.data(), N, K, M);
    if (autograd::any_requires_grad({&a, &b})) {
        auto node = autograd::make_node<MatmulBackward>({&a, &b});
        node->a = a.detach();
        node->b = b.detach();
        node->N = N, node->K = K, node->M = M;
        autograd::set_history(out, node);
    }
    return out;
}

Tensor linear(const Tensor& x_in, const Tensor& weight_in, const Tensor& bias) {
    check(weight_in.dim() == 2, "linear: weight must be 2-D [out_features, in_features], got ",
          weight_in.shape());
    check(x_in.dim() >= 1 && x_in.size(-1) == weight_in.size(1), "linear: input of shape ", x_in.shape(),
          " does not match weight of shape ", weight_in.shape(), " (expected input [*, ", weight_in.size(1),
          "])");
    const int64_t C = weight_in.size(1), OC = weight_in.size(0);
    if (bias.defined()) {
        check(bias.dim() == 1 && bias.size(0) == OC, "linear: bias of shape ", bias.shape(),
              " does not match weight of shape ", weight_in.shape());
    }
    const Tensor x = x_in.contiguous(), weight = weight_in.contiguous();
    const Tensor b = bias.defined() ? bias.contiguous() : Tensor();
    const int64_t N = x.numel() / C;
    Shape out_shape = x.shape();
    out_shape[out_shape.size() - 1] = OC;
    Tensor out = empty(out_shape);
    detail::linear_forward(out.data(), x.data(), weight.data(), data_or_null(b), N, C, OC);
    if (autograd::any_requires_grad({&x, &weight, &b})) {
        auto node = autograd::make_node<LinearBackward>({&x, &weight, &b});
        node->x = x.detach();
        node->weight = weight.detach();
        node->N = N, node->C = C, node->OC = OC;
        autograd::set_history(out, node);
    }
    return out;
}

}  // namespace normnet
