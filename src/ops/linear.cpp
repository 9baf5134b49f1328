// Matrix products: matmul (with mm and bmm) and linear (y = x W^T + b), forward and backward,
// through sgemm with transpose flags instead of explicit transposes.
#include <algorithm>

#include "../parallel.hpp"
#include "gemm.hpp"
#include "loop.hpp"
#include "normnet/ops.hpp"
#include "op.hpp"
#include "reduce.hpp"

namespace normnet {
namespace detail {

void linear_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t N, int64_t C,
                    int64_t OC) {
    if (bias) {
        // The rows start as the bias, which the product adds to; split between the threads as
        // the product is (filled on one thread, they were a serial step in every Linear).
        parallel_for(N, item_grain(OC), [&](int64_t b, int64_t e) {
            for (int64_t n = b; n < e; ++n) std::copy(bias, bias + OC, out + n * OC);
        });
    }
    gemm(false, true, N, OC, C, 1.0f, inp, C, weight, C, bias ? 1.0f : 0.0f, out, OC);
}

namespace {

// ---- matmul -------------------------------------------------------------------------------
//
// PyTorch's rules: a 1-D left operand is a row [1, K], a 1-D right one a column [K, 1] (that
// dimension is dropped from the result); leading dims are batch dims and broadcast. Every
// matrix is read in place by sgemm: row-major, or column-major through the transpose flag (a
// transposed view costs no copy); only other layouts are copied first. The batch is one loop of
// sgemm calls over strided offsets, split between threads when the products are small; a
// batched, contiguous left operand times a plain matrix folds into a single sgemm.

// One operand seen as a batch of matrices [rows, cols]: element (r, c) of batch element i at
// data + offset(i) + r * sr + c * sc.
struct Mat {
    const float* data = nullptr;
    int64_t rows = 0, cols = 0, sr = 0, sc = 0;
    Shape batch, batch_strides;  // its own batch dims and their strides
    bool trans = false;          // sgemm reads it column-major (a transposed view)
    int64_t ld = 0;              // sgemm's leading dimension
};

// t's matrices; left: a 1-D t is a row, else a column. Returns false when sgemm cannot read them in place.
bool mat_of(const Tensor& t, bool left, Mat& m) {
    m = Mat{};
    const int nd = t.dim();
    m.data = t.data();
    if (nd == 1) {
        const int64_t n = t.size(0), s = t.strides()[0];
        m.rows = left ? 1 : n, m.cols = left ? n : 1;
        m.sr = left ? n * s : s, m.sc = left ? s : 1;
    } else {
        m.rows = t.size(-2), m.cols = t.size(-1), m.sr = t.strides()[nd - 2], m.sc = t.strides()[nd - 1];
        for (int d = 0; d + 2 < nd; ++d) m.batch.push_back(t.size(d)), m.batch_strides.push_back(t.strides()[d]);
    }
    // Size-1 dims place no constraint on their stride.
    if ((m.cols <= 1 || m.sc == 1) && (m.rows <= 1 || m.sr >= std::max<int64_t>(1, m.cols))) {
        m.trans = false, m.ld = m.rows <= 1 ? std::max<int64_t>(1, m.cols) : m.sr;
        return m.cols <= 1 || m.sc == 1;
    }
    if ((m.rows <= 1 || m.sr == 1) && (m.cols <= 1 || m.sc >= std::max<int64_t>(1, m.rows))) {
        m.trans = true, m.ld = m.cols <= 1 ? std::max<int64_t>(1, m.rows) : m.sc;
        return true;
    }
    return false;
}

// Offset of batch element i of `shape` under `strides`.
int64_t batch_offset(const Shape& shape, const Shape& strides, int64_t i) {
    int64_t offset = 0;
    for (int d = shape.size() - 1; d >= 0; --d) {
        offset += (i % shape[d]) * strides[d];
        i /= shape[d];
    }
    return offset;
}

// True when some element of the batch `shape` reads the same place as another (a stride-0 dim of size > 1).
bool broadcasts(const Shape& shape, const Shape& strides) {
    for (int d = 0; d < shape.size(); ++d) {
        if (shape[d] > 1 && strides[d] == 0) return true;
    }
    return false;
}

// True for the first batch element of `shape` reading each place: its broadcast indices are 0.
bool first_visit(const Shape& shape, const Shape& strides, int64_t i) {
    for (int d = shape.size() - 1; d >= 0; --d) {
        if (strides[d] == 0 && i % shape[d] != 0) return false;
        i /= shape[d];
    }
    return true;
}

// Calls product(i) for every batch element, split between threads when the products are small
// (each then runs single-threaded sgemm) and `parallel`; in order otherwise.
template <class F>
void for_batches(int64_t batches, double flops_each, bool parallel, F&& product) {
    if (!parallel) {
        for (int64_t i = 0; i < batches; ++i) product(i);
        return;
    }
    const auto grain = static_cast<int64_t>(std::max(1.0, 4e5 / std::max(flops_each, 1.0)));
    parallel_for(batches, grain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) product(i);
    });
}

class MatmulBackward final : public OpNode {
public:
    Mat A, B;
    Shape batch;                  // the result's batch dims
    Shape a_strides, b_strides;   // A's and B's batch strides in `batch` (0: broadcast)
    Shape da_strides, db_strides; // the same for their contiguous gradients
    int64_t M = 0, K = 0, N = 0;
    bool fold = false;  // a contiguous batched A times an unbatched B: one product of [batches * M, K]
    const char* backward_name = "MmBackward0";
    const char* name() const override { return backward_name; }
    void backward(const Tensor& dy) override {
        const int64_t batches = batch.numel();
        const float* g = dy.data();
        const double flops = 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
        // da: [M, K] = dy: [M, N] @ op(B)^T, for each batch element (summed over those A was broadcast to).
        if (const GradOut da = grad_out(0)) {
            if (fold) {
                gemm(false, !B.trans, batches * M, K, N, 1.0f, g, N, B.data, B.ld, da.beta(), da.data, K);
            } else {
                write_batches(da, da_strides, A.batch.numel() * M * K, flops, [&](int64_t i, float beta, float* d) {
                    gemm(false, !B.trans, M, K, N, 1.0f, g + i * M * N, N, B.data + batch_offset(batch, b_strides, i),
                         B.ld, beta, d, K);
                });
            }
        }
        // db: [K, N] = op(A)^T @ dy: [M, N], likewise.
        if (const GradOut db = grad_out(1)) {
            if (fold) {
                gemm(true, false, K, N, batches * M, 1.0f, A.data, K, g, N, db.beta(), db.data, N);
            } else {
                write_batches(db, db_strides, B.batch.numel() * K * N, flops, [&](int64_t i, float beta, float* d) {
                    gemm(!A.trans, false, K, N, M, 1.0f, A.data + batch_offset(batch, a_strides, i), A.ld, g + i * M * N,
                         N, beta, d, N);
                });
            }
        }
    }

private:
    // Calls product(i, beta, destination) for each batch element: in parallel when every element
    // has its own destination, in order (the first visit of a destination writing it, later
    // ones adding) when the operand was broadcast.
    template <class F>
    void write_batches(const GradOut& dx, const Shape& strides, int64_t count, double flops, F&& product) const {
        const int64_t batches = batch.numel();
        const bool shared = broadcasts(batch, strides);
        if (batches == 0) {
            // No products: an operand broadcast to an empty batch gets a zero gradient.
            if (dx.fresh) std::fill_n(dx.data, count, 0.0f);
            return;
        }
        for_batches(batches, flops, !shared, [&](int64_t i) {
            const float beta = !shared || first_visit(batch, strides, i) ? dx.beta() : 1.0f;
            product(i, beta, dx.data + batch_offset(batch, strides, i));
        });
    }
};

// The contiguous strides of a gradient of batch dims `from` (each matrix `matrix` elements) in `shape`.
Shape gradient_batch_strides(const Shape& from, int64_t matrix, const Shape& shape) {
    Shape strides = from;
    int64_t stride = matrix;
    for (int d = from.size() - 1; d >= 0; --d) strides[d] = stride, stride *= from[d];
    return broadcast_strides(from, strides, shape);
}

// ---- linear -------------------------------------------------------------------------------

class AddmmBackward final : public OpNode {
public:
    int64_t N = 0, C = 0, OC = 0;
    const char* name() const override { return "AddmmBackward0"; }
    void backward(const Tensor& dout) override {
        const Tensor &x = saved(0), &weight = saved(1);
        // dweight: [OC, C] = dout^T @ inp, first: inp is often recomputed (a GELU's or a norm's
        // output), and is given back before dinp's buffer is made.
        if (const GradOut dw = grad_out(1)) gemm(true, false, OC, C, N, 1.0f, dout.data(), OC, x.data(), C, dw.beta(), dw.data, C);
        drop_saved(0);
        // dinp: [N, C] = dout: [N, OC] @ weight: [OC, C]
        if (const GradOut dx = grad_out(0)) gemm(false, false, N, C, OC, 1.0f, dout.data(), OC, weight.data(), C, dx.beta(), dx.data, C);
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
    NORMNET_CHECK(a_in.dim() >= 1 && b_in.dim() >= 1, "matmul: both arguments need to be at least 1D, but they are ",
                  a_in.dim(), "D and ", b_in.dim(), "D");
    detail::Mat A, B;
    // Layouts sgemm cannot read are copied (differentiably) into contiguous ones.
    const Tensor a = detail::mat_of(a_in, true, A) ? a_in : a_in.contiguous();
    const Tensor b = detail::mat_of(b_in, false, B) ? b_in : b_in.contiguous();
    detail::mat_of(a, true, A);
    detail::mat_of(b, false, B);
    NORMNET_CHECK(A.cols == B.rows, "matmul: shapes ", a.shape(), " and ", b.shape(), " cannot be multiplied (", A.rows,
                  "x", A.cols, " and ", B.rows, "x", B.cols, ")");
    const int64_t M = A.rows, K = A.cols, N = B.cols;
    const Shape batch = detail::broadcast_shapes(A.batch, B.batch, "matmul");
    Shape shape = batch;
    if (a.dim() > 1) shape.push_back(M);
    if (b.dim() > 1) shape.push_back(N);
    NORMNET_CHECK(shape.size() <= kMaxDims, "matmul: the result of ", a.shape(), " and ", b.shape(), " has too many dims");
    Tensor out = empty(shape);
    const int64_t batches = batch.numel();
    const Shape a_strides = detail::broadcast_strides(A.batch, A.batch_strides, batch);
    const Shape b_strides = detail::broadcast_strides(B.batch, B.batch_strides, batch);
    const bool fold = B.batch.empty() && a.dim() > 2 && a.is_contiguous();
    const double flops = 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
    if (fold) {
        detail::gemm(false, B.trans, batches * M, N, K, 1.0f, A.data, K, B.data, B.ld, 0.0f, out.data(), N);
    } else {
        detail::for_batches(batches, flops, true, [&](int64_t i) {
            detail::gemm(A.trans, B.trans, M, N, K, 1.0f, A.data + detail::batch_offset(batch, a_strides, i), A.ld,
                         B.data + detail::batch_offset(batch, b_strides, i), B.ld, 0.0f, out.data() + i * M * N, N);
        });
    }
    if (auto* node = detail::record<detail::MatmulBackward>(out, {a, b}, {a, b})) {
        node->A = A, node->B = B, node->batch = batch, node->a_strides = a_strides, node->b_strides = b_strides;
        node->da_strides = detail::gradient_batch_strides(A.batch, M * K, batch);
        node->db_strides = detail::gradient_batch_strides(B.batch, K * N, batch);
        node->M = M, node->K = K, node->N = N, node->fold = fold;
        node->backward_name = a.dim() == 1 && b.dim() == 1 ? "DotBackward0"
                              : a.dim() == 2 && b.dim() == 1 ? "MvBackward0"
                              : a.dim() == 2 && b.dim() == 2 ? "MmBackward0"
                              : a.dim() == 3 && b.dim() == 3 && A.batch == B.batch ? "BmmBackward0"
                                                                                   : "MatmulBackward0";
    }
    return out;
}

Tensor mm(const Tensor& a, const Tensor& b) {
    NORMNET_CHECK(a.dim() == 2 && b.dim() == 2, "mm: expected 2-D tensors, got shapes ", a.shape(), " and ", b.shape());
    return matmul(a, b);
}

Tensor bmm(const Tensor& a, const Tensor& b) {
    NORMNET_CHECK(a.dim() == 3 && b.dim() == 3, "bmm: expected 3-D tensors, got shapes ", a.shape(), " and ", b.shape());
    NORMNET_CHECK(a.size(0) == b.size(0), "bmm: batch sizes differ: shapes ", a.shape(), " and ", b.shape());
    return matmul(a, b);
}

Tensor Tensor::matmul(const Tensor& other) const { return normnet::matmul(*this, other); }

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
