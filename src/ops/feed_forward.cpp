// The Transformer's feed-forward network as one op: y = act(x W1^T + b1) W2^T + b2, act ReLU
// or GELU, the same value as linear -> relu/gelu -> linear. Fused because of memory: composed,
// the three ops hold act(h) [N, F] beside h in the forward, and in the backward the recomputed
// act(h) and then the gradient of act(h), each [N, F] (8 MB in the LM, F = 512 at 4096 tokens),
// on top of every saved activation: the peak of the LM's step. Here the work goes by blocks of
// rows, each block's act(h) and gradient in a per-thread scratch that stays in cache;
// only h is kept, and with recompute_hidden not even h (backward recomputes each block's h
// with the same kernel, so bit for bit). The weight gradients are summed per thread and the
// threads' sums added at the end, as conv2d does: results depend on the thread count only
// through the order of those sums (which rows each product sums, and how the sums are added).
#include <algorithm>
#include <cstring>

#include "../parallel.hpp"
#include "activation_ops.hpp"
#include "gemm.hpp"
#include "normnet/ops.hpp"
#include "op.hpp"
#include "reduce.hpp"

namespace normnet {
namespace detail {
namespace {

// Values of [rows, F] per block: 256 rows of F = 512 are a 512 KB scratch, which stays in a
// core's L2 between the products.
constexpr int64_t kBlockValues = 256 * 512;
// The fewest rows worth a thread of their own.
constexpr int64_t kMinChunkRows = 32;

struct FeedForwardSizes {
    int64_t N = 0, D = 0, F = 0;  // rows, model width (x's and y's), hidden width (h's)
    int64_t max_block() const { return std::max<int64_t>(1, kBlockValues / std::max<int64_t>(F, 1)); }
};

// Calls body(chunk, row, rows) for the blocks of rows [0, N): the rows are split evenly between
// the threads (as parallel_for_chunks does), and each thread's share into equal blocks of at
// most max_block() rows. Equal blocks, not max_block()-row ones and a remainder: a thread then
// does not end on a thin product (the ViT's 544 rows went as 256 on one thread, 256 + 32 on the
// other), and fewer, larger blocks keep sgemm efficient where F is small.
template <class Body>
void for_each_block(const FeedForwardSizes& s, Body&& body) {
    parallel_for_chunks(s.N, kMinChunkRows, [&](int t, int64_t begin, int64_t end) {
        const int64_t blocks = (end - begin + s.max_block() - 1) / s.max_block();
        const int64_t rows = (end - begin + blocks - 1) / blocks;
        for (int64_t r = begin; r < end; r += rows) body(t, r, std::min(rows, end - r));
    });
}

// g: [n, F] = act(pre), pre: [n, F] = x W1^T + b1 for n rows.
template <class Act>
void hidden_block(float* g, float* pre, const float* x, const float* w1, const float* b1, int64_t n,
                  const FeedForwardSizes& s, Act act) {
    linear_forward(pre, x, w1, b1, n, s.D, s.F);
    unary_forward(g, pre, n * s.F, act);
}

// sums: [F] += column sums of m: [n, F]
void add_column_sums(double* __restrict sums, const float* __restrict m, int64_t n, int64_t F) {
    for (int64_t r = 0; r < n; ++r) {
        for (int64_t j = 0; j < F; ++j) sums[j] += m[r * F + j];
    }
}

// sum: [n] += part: [n] (pointers taken once: indexing the scratch per element was an
// out-of-line call per element, which kept the loop from vectorising).
void add_partial_sum(float* __restrict sum, const float* __restrict part, int64_t n) {
    for (int64_t i = 0; i < n; ++i) sum[i] += part[i];
}

// Each chunk's scratch, one 64-byte aligned stretch per chunk: db1's partial sums [F] (doubles),
// in backward; then for chunks after the first dW1's [F, D] and dW2's [D, F] (the first adds
// into the gradients themselves); act(h) and then its gradient [block, F]; and h itself
// [block, F] when it is recomputed.
class Scratch {
public:
    Scratch(const FeedForwardSizes& s, bool recompute, bool backward) : chunks_(parallel_chunks(s.N, kMinChunkRows)) {
        const int64_t share = (std::max<int64_t>(s.N, 1) + chunks_ - 1) / chunks_;  // a chunk's rows, at most
        const int64_t block = std::min(s.max_block(), share) * s.F;
        const int64_t db1 = backward ? 2 * s.F : 0, dw = backward ? 2 * s.D * s.F : 0;
        const auto round = [](int64_t n) { return (n + 15) / 16 * 16; };
        dw1_ = db1, dw2_ = db1 + s.D * s.F;
        first_ = round(db1 + block * (recompute ? 2 : 1));
        other_ = round(db1 + dw + block * (recompute ? 2 : 1));
        act_first_ = db1, act_other_ = db1 + dw;
        buffer_ = empty({first_ + (chunks_ - 1) * other_});
        for (int t = 0; backward && t < chunks_; ++t) {
            std::memset(at(t), 0, static_cast<size_t>(t == 0 ? db1 : db1 + dw) * sizeof(float));
        }
        block_ = block;
    }
    /// The chunks for_each_block splits the rows into (parallel_for_chunks's count).
    int chunks() const { return chunks_; }
    double* db1(int t) const { return reinterpret_cast<double*>(at(t)); }
    float* dw1(int t) const { return at(t) + dw1_; }  // t > 0
    float* dw2(int t) const { return at(t) + dw2_; }  // t > 0
    float* act(int t) const { return at(t) + (t == 0 ? act_first_ : act_other_); }
    float* hidden(int t) const { return act(t) + block_; }

private:
    float* at(int t) const { return buffer_.data() + (t == 0 ? 0 : first_ + (t - 1) * other_); }
    int chunks_ = 1;
    int64_t dw1_ = 0, dw2_ = 0, first_ = 0, other_ = 0, act_first_ = 0, act_other_ = 0, block_ = 0;
    Tensor buffer_;
};

// A weight gradient the first chunk adds into: zeroed first when new.
GradOut zeroed(GradOut g, int64_t n) {
    if (g && g.fresh) std::memset(g.data, 0, static_cast<size_t>(n) * sizeof(float));
    return g;
}

template <class Act>
class FeedForwardBackward final : public OpNode {
public:
    FeedForwardSizes s;
    bool recompute = false;  // h not saved: recomputed block by block
    const char* name() const override { return "FeedForwardBackward"; }
    void backward(const Tensor& dy_tensor) override {
        const Tensor &x = saved(0), &w1 = saved(1), &w2 = saved(2), &b1 = saved(3);
        const float* dy = dy_tensor.data();
        const int64_t DF = s.D * s.F;
        const GradOut dx = grad_out(0), dw1 = zeroed(grad_out(1), DF), dw2 = zeroed(grad_out(3), DF);
        const bool need_b1 = needs_grad(2), need_dh = dx || dw1 || need_b1;
        const Scratch scratch(s, recompute, true);
        const Act act{};
        for_each_block(s, [&](int t, int64_t r, int64_t n) {
            float* g = scratch.act(t);
            float* sum_w1 = t == 0 ? dw1.data : scratch.dw1(t);
            float* sum_w2 = t == 0 ? dw2.data : scratch.dw2(t);
            const float* xr = x.data() + r * s.D;
            const float* dyr = dy + r * s.D;
            float* h = recompute ? scratch.hidden(t) : saved(4).data() + r * s.F;
            if (recompute) {
                hidden_block(g, h, xr, w1.data(), b1.defined() ? b1.data() : nullptr, n, s, act);
            } else if (dw2) {
                unary_forward(g, h, n * s.F, act);
            }
            // dW2 += dy^T act(h); then g becomes d act(h) = dy W2, then dh.
            if (dw2) gemm(true, false, s.D, s.F, n, 1.0f, dyr, s.D, g, s.F, 1.0f, sum_w2, s.F);
            if (!need_dh) return;
            gemm(false, false, n, s.F, s.D, 1.0f, dyr, s.D, w2.data(), s.F, 0.0f, g, s.F);
            unary_backward_over(g, h, h, n * s.F, act);  // dh written over d act(h)
            if (need_b1) add_column_sums(scratch.db1(t), g, n, s.F);
            if (dw1) gemm(true, false, s.F, s.D, n, 1.0f, g, s.F, xr, s.D, 1.0f, sum_w1, s.D);
            if (dx) gemm(false, false, n, s.D, s.F, 1.0f, g, s.F, w1.data(), s.D, dx.beta(), dx.data + r * s.D, s.D);
        });
        // The other chunks' partial sums, added in chunk order.
        double* db1 = scratch.db1(0);
        for (int t = 1; t < scratch.chunks(); ++t) {
            if (dw1) add_partial_sum(dw1.data, scratch.dw1(t), DF);
            if (dw2) add_partial_sum(dw2.data, scratch.dw2(t), DF);
            const double* part = scratch.db1(t);
            for (int64_t j = 0; j < s.F; ++j) db1[j] += part[j];
        }
        if (const GradOut g = grad_out(2)) {
            for (int64_t j = 0; j < s.F; ++j) g.data[j] = static_cast<float>(db1[j]) + (g.fresh ? 0.0f : g.data[j]);
        }
        if (const GradOut g = grad_out(4)) sum_to(g, dy_tensor.view({s.N, s.D}), {s.D});
    }
};

template <class Act>
Tensor feed_forward_with(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& b2,
                         const FeedForwardSizes& s, bool recompute_hidden, const Shape& out_shape) {
    Tensor y = empty(out_shape);
    const bool grad = any_requires_grad({x, w1, b1, w2, b2});
    const bool keep_h = grad && !recompute_hidden;
    Tensor h = keep_h ? empty({s.N, s.F}) : Tensor();
    const Scratch scratch(s, !keep_h, false);
    const Act act{};
    const float* bias1 = b1.defined() ? b1.data() : nullptr;
    const float* bias2 = b2.defined() ? b2.data() : nullptr;
    for_each_block(s, [&](int t, int64_t r, int64_t n) {
        float* g = scratch.act(t);
        float* pre = keep_h ? h.data() + r * s.F : scratch.hidden(t);
        hidden_block(g, pre, x.data() + r * s.D, w1.data(), bias1, n, s, act);
        linear_forward(y.data() + r * s.D, g, w2.data(), bias2, n, s.F, s.D);
    });
    if (keep_h) {
        if (auto* node = record<FeedForwardBackward<Act>>(y, {x, w1, b1, w2, b2}, {x, w1, w2, b1, h})) node->s = s;
    } else if (auto* node = record<FeedForwardBackward<Act>>(y, {x, w1, b1, w2, b2}, {x, w1, w2, b1})) {
        node->s = s, node->recompute = true;
    }
    return y;
}

}  // namespace
}  // namespace detail

Tensor feed_forward(const Tensor& x_in, const Tensor& w1_in, const Tensor& b1_in, const Tensor& w2_in,
                    const Tensor& b2_in, std::string_view activation, bool recompute_hidden) {
    NORMNET_CHECK(activation == "relu" || activation == "gelu", "feed_forward: activation should be relu or gelu, not ",
                  activation);
    for (const Tensor* t : {&x_in, &w1_in, &b1_in, &w2_in, &b2_in}) {
        NORMNET_CHECK(!t->defined() || t->dtype() == kFloat32, "feed_forward: expected float32 tensors, got ", t->dtype());
    }
    NORMNET_CHECK(w1_in.dim() == 2 && w2_in.dim() == 2 && w2_in.size(0) == w1_in.size(1) && w2_in.size(1) == w1_in.size(0),
                  "feed_forward: weights of shapes ", w1_in.shape(), " and ", w2_in.shape(),
                  " do not chain (expected [F, D] and [D, F])");
    const int64_t D = w1_in.size(1), F = w1_in.size(0);
    NORMNET_CHECK(x_in.dim() >= 1 && x_in.size(-1) == D, "feed_forward: input of shape ", x_in.shape(),
                  " does not match weight1 of shape ", w1_in.shape(), " (expected input [*, ", D, "])");
    NORMNET_CHECK(!b1_in.defined() || (b1_in.dim() == 1 && b1_in.size(0) == F), "feed_forward: bias1 of shape ",
                  b1_in.shape(), " does not match weight1 of shape ", w1_in.shape());
    NORMNET_CHECK(!b2_in.defined() || (b2_in.dim() == 1 && b2_in.size(0) == D), "feed_forward: bias2 of shape ",
                  b2_in.shape(), " does not match weight2 of shape ", w2_in.shape());
    const auto contiguous = [](const Tensor& t) { return t.defined() ? t.contiguous() : Tensor(); };
    const Tensor x = x_in.contiguous(), w1 = w1_in.contiguous(), w2 = w2_in.contiguous();
    const Tensor b1 = contiguous(b1_in), b2 = contiguous(b2_in);
    detail::FeedForwardSizes s{1, D, F};
    for (int d = 0; d + 1 < x.dim(); ++d) s.N *= x.size(d);
    return activation == "gelu"
               ? detail::feed_forward_with<detail::GeluOp>(x, w1, b1, w2, b2, s, recompute_hidden, x.shape())
               : detail::feed_forward_with<detail::ReluOp>(x, w1, b1, w2, b2, s, recompute_hidden, x.shape());
}

}  // namespace normnet
