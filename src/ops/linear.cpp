// Matrix products: matmul and linear (y = x W^T + b), forward and backward, through one sgemm
// per product with transpose flags instead of explicit transposes.
#include "gemm.hpp"
#include "normnet/ops.hpp"
#include "op.hpp"
#include "reduce.hpp"

namespace normnet {
namespace detail {
namespace {

// ---- matmul -------------------------------------------------------------------------------

// out: [N, M] = a: [N, K] @ b: [K, M]
void matmul_forward(float* out, const float* a, const float* b, int64_t N, int64_t K, int64_t M) {
    gemm(false, false, N, M, K, 1.0f, a, K, b, M, 0.0f, out, M);
}

class MmBackward final : public OpNode {
public:
    int64_t N = 0, K = 0, M = 0;
    const char* name() const override { return "MmBackward0"; }
    void backward(const Tensor& dout) override {
        const Tensor &a = saved(0), &b = saved(1);
        // da: [N, K] = dout: [N, M] @ b^T;  db: [K, M] = a^T @ dout
        if (const GradOut da = grad_out(0)) gemm(false, true, N, K, M, 1.0f, dout.data(), M, b.data(), M, da.beta(), da.data, K);
        if (const GradOut db = grad_out(1)) gemm(true, false, K, M, N, 1.0f, a.data(), K, dout.data(), M, db.beta(), db.data, M);
    }
};

// ---- linear -------------------------------------------------------------------------------

// out: [N, OC] = inp: [N, C] @ weight: [OC, C]^T + bias: [OC] (bias may be null)
void linear_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t N, int64_t C,
                    int64_t OC) {
    if (bias) {
        for (int64_t n = 0; n < N; ++n) std::copy(bias, bias + OC, out + n * OC);
    }
    gemm(false, true, N, OC, C, 1.0f, inp, C, weight, C, bias ? 1.0f : 0.0f, out, OC);
}

class AddmmBackward final : public OpNode {
public:
    int64_t N = 0, C = 0, OC = 0;
    const char* name() const override { return "AddmmBackward0"; }
    void backward(const Tensor& dout) override {
        const Tensor &x = saved(0), &weight = saved(1);
        // dinp: [N, C] = dout: [N, OC] @ weight: [OC, C]
        if (const GradOut dx = grad_out(0)) gemm(false, false, N, C, OC, 1.0f, dout.data(), OC, weight.data(), C, dx.beta(), dx.data, C);
        // dweight: [OC, C] = dout^T @ inp
        if (const GradOut dw = grad_out(1)) gemm(true, false, OC, C, N, 1.0f, dout.data(), OC, x.data(), C, dw.beta(), dw.data, C);
        // dbias: [OC] = column sums of dout
        if (const GradOut db = grad_out(2)) sum_to(db, dout.view({N, OC}), {OC});
    }
};

float* data_or_null(const Tensor& t) { return t.defined() ? t.data() : nullptr; }

void check_float(const Tensor& t, const char* op, const char* what) {
    NORMNET_CHECK(!t.defined() || t.dtype() == kFloat32, op, ": expected ", what, " of dtype float32, got ", t.dtype());
}

}  // namespace
}  // namespace detail

Tensor matmul(const Tensor& a_in, const Tensor& b_in) {
    detail::check_float(a_in, "matmul", "self");
    detail::check_float(b_in, "matmul", "other");
    NORMNET_CHECK(a_in.dim() == 2 && b_in.dim() == 2 && a_in.size(1) == b_in.size(0), "matmul: shapes ", a_in.shape(),
                  " and ", b_in.shape(), " cannot be multiplied");
    const Tensor a = a_in.contiguous(), b = b_in.contiguous();
    const int64_t N = a.size(0), K = a.size(1), M = b.size(1);
    Tensor out = empty({N, M});
    detail::matmul_forward(out.data(), a.data(), b.data(), N, K, M);
    if (auto* node = detail::record<detail::MmBackward>(out, {a, b}, {a, b})) node->N = N, node->K = K, node->M = M;
    return out;
}

Tensor linear(const Tensor& x_in, const Tensor& weight_in, const Tensor& bias) {
    detail::check_float(x_in, "linear", "input");
    detail::check_float(weight_in, "linear", "weight");
    detail::check_float(bias, "linear", "bias");
    NORMNET_CHECK(weight_in.dim() == 2, "linear: weight must be 2-D [out_features, in_features], got ",
                  weight_in.shape());
    NORMNET_CHECK(x_in.dim() >= 1 && x_in.size(-1) == weight_in.size(1), "linear: input of shape ", x_in.shape(),
                  " does not match weight of shape ", weight_in.shape(), " (expected input [*, ", weight_in.size(1),
                  "])");
    const int64_t C = weight_in.size(1), OC = weight_in.size(0);
    NORMNET_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == OC), "linear: bias of shape ",
                  bias.shape(), " does not match weight of shape ", weight_in.shape());
    const Tensor x = x_in.contiguous(), weight = weight_in.contiguous();
    const Tensor b = bias.defined() ? bias.contiguous() : Tensor();
    int64_t N = 1;  // rows: the product of the leading sizes (not numel / C, which fails for C = 0)
    for (int d = 0; d + 1 < x.dim(); ++d) N *= x.size(d);
    Shape out_shape = x.shape();
    out_shape[out_shape.size() - 1] = OC;
    Tensor out = empty(out_shape);
    detail::linear_forward(out.data(), x.data(), weight.data(), detail::data_or_null(b), N, C, OC);
    if (auto* node = detail::record<detail::AddmmBackward>(out, {x, weight, b}, {x, weight})) {
        node->N = N, node->C = C, node->OC = OC;
    }
    return out;
}

}  // namespace normnet
