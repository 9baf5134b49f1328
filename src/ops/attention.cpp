// scaled_dot_product_attention, as torch.nn.functional's: softmax(q k^T * scale + mask) v, with a
// boolean or additive mask, a causal flag and dropout on the attention weights. Each (batch,
// head) slice is two sgemm products around a fused row softmax forward, and four products
// around the softmax's backward (five when it recomputes the weights, below); slices are split
// between threads, each slice's products on one.
//
// Long rows of attention weights ([B, L, S], S floats per query) are not saved: each query row's
// maximum and 1 / sum of exponentials are (2 floats), and the backward recomputes the weights
// from q, k and them, as FlashAttention and PyTorch's memory-efficient attention do (the LM's
// block saved 512 floats per token for them, a fifth of its activations; the extra q k^T product
// is about 1% of a step's FLOPs). The recomputation repeats the forward's own float operations
// (the same sgemm call, the same exp and scale loops), so the weights, and so the gradients, are
// the forward's bit for bit. Short rows, no longer than a query's q, k and v rows together
// (S <= 2 E + Ev: the ViT's 17 keys of 16-wide heads), are saved instead: they cost no more
// memory than the projection saves anyway, and recomputing them took about a quarter of the
// ViT's attention backward (one of five sgemm calls per tiny slice, and the exps). With dropout
// the keep mask is saved (one byte per weight).
//
// Operands are read through their strides (sgemm's leading dimensions), so the heads of a
// projection are not copied out; MultiheadAttention's packed self-attention also writes its
// output, and its gradient, in the layouts of the products around it.
#include <algorithm>
#include <cmath>
#include <limits>

#include "../parallel.hpp"
#include "gemm.hpp"
#include "loop.hpp"
#include "normnet/ops.hpp"
#include "attention.hpp"
#include "op.hpp"
#include "reduce.hpp"
#include "vmath.hpp"

namespace normnet {
namespace detail {
namespace {

// out: [S] = exp(row - m): the one loop the forward and the backward's recomputation share, so
// both round alike. vmath's exp, which vectorises: with glibc's expf, a call per element, the
// exps were 6% of the ViT's step on one thread (perf).
[[gnu::flatten]] void exp_shifted(float* __restrict out, const float* __restrict row, int64_t S, float m) {
    for (int64_t j = 0; j < S; ++j) out[j] = vmath::exp(row[j] - m);
}

// out: [S] *= inv, the softmax's normalisation (shared as exp_shifted).
void scale_row(float* out, int64_t S, float inv) {
    for (int64_t j = 0; j < S; ++j) out[j] *= inv;
}

// Columns of row i that a causal mask leaves (j <= i); the others' weights are exactly 0
// (exp(-inf) in the full row), so neither softmax computes them: the same results for half the exps.
int64_t row_extent(int64_t i, int64_t S, bool causal) { return causal ? std::min(S, i + 1) : S; }

// p: [L, S] = softmax over each row of s: [L, S] (in place: s may be p), and stats: [L, 2] each
// row's maximum and 1 / sum, what softmax_rows_again needs; a row that is all -inf gives NaN, as torch.
void softmax_rows(float* p, float* __restrict stats, const float* s, int64_t L, int64_t S, bool causal) {
    for (int64_t i = 0; i < L; ++i) {
        const float* row = s + i * S;
        float* out = p + i * S;
        const int64_t n = row_extent(i, S, causal);
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < n; ++j) m = std::max(m, row[j]);
        exp_shifted(out, row, n, m);
        double sum = 0.0;
        for (int64_t j = 0; j < n; ++j) sum += out[j];
        const auto inv = static_cast<float>(1.0 / sum);
        scale_row(out, n, inv);
        std::fill(out + n, out + S, 0.0f);
        stats[2 * i] = m;
        stats[2 * i + 1] = inv;
    }
}

// p: [L, S] = softmax_rows's output again, from the same scores s (in place: s may be p) and its stats.
void softmax_rows_again(float* p, const float* __restrict stats, const float* s, int64_t L, int64_t S, bool causal) {
    for (int64_t i = 0; i < L; ++i) {
        const int64_t n = row_extent(i, S, causal);
        exp_shifted(p + i * S, s + i * S, n, stats[2 * i]);
        scale_row(p + i * S, n, stats[2 * i + 1]);
        std::fill(p + i * S + n, p + (i + 1) * S, 0.0f);
    }
}

// ds: [L, S] = p * (dp - rowsum(dp * p)), in place over dp
void softmax_rows_backward(float* __restrict ds, const float* __restrict p, int64_t L, int64_t S) {
    for (int64_t i = 0; i < L; ++i) {
        float* d = ds + i * S;
        const float* q = p + i * S;
        double dot = 0.0;
        for (int64_t j = 0; j < S; ++j) dot += static_cast<double>(d[j]) * q[j];
        const auto c = static_cast<float>(dot);
        for (int64_t j = 0; j < S; ++j) d[j] = q[j] * (d[j] - c);
    }
}

// The sizes of one call: B slices of q [L, E], k [S, E], v [S, Ev].
struct Dims {
    int64_t B = 0, L = 0, S = 0, E = 0, Ev = 0;
};

// One operand as a batch of matrices read or written in place by sgemm: slice b (row-major over
// the batch sizes) starts at data + the offset its batch strides give, its rows are ld apart and
// its columns adjacent. So q, k and v can be strided views of the packed in_proj output, and an
// output or gradient can be written in another tensor's layout, with no copy.
struct Slices {
    float* data = nullptr;
    int64_t ld = 0;
    Shape batch, strides;
    float* operator[](int64_t b) const {
        int64_t offset = 0;
        for (int dim = batch.size() - 1; dim >= 0; --dim) {
            offset += (b % batch[dim]) * strides[dim];
            b /= batch[dim];
        }
        return data + offset;
    }
    explicit operator bool() const { return data != nullptr; }
};

// t: [*batch, rows, cols] with adjacent columns and rows at least a row apart (sgemm's layouts).
bool readable_in_place(const Tensor& t) {
    const int64_t rows = t.size(-2), cols = t.size(-1);
    const Shape& strides = t.strides();
    const int n = t.dim();
    return (strides[n - 1] == 1 || cols == 1) && (rows == 1 || strides[n - 2] >= std::max<int64_t>(cols, 1));
}

Slices slices_of(const Tensor& t) {
    const Shape& strides = t.strides();
    const int n = t.dim();
    Slices s{t.data(), t.size(-2) == 1 ? std::max<int64_t>(t.size(-1), 1) : strides[n - 2], {}, {}};
    for (int dim = 0; dim < n - 2; ++dim) s.batch.push_back(t.size(dim)), s.strides.push_back(strides[dim]);
    return s;
}

// Contiguous [B, rows, cols] at data (a gradient buffer); null data gives an empty operand.
Slices dense_slices(float* data, int64_t B, int64_t rows, int64_t cols) { return {data, cols, {B}, {rows * cols}}; }

// The attention of one call: out: B slices [L, Ev]; softmax: what the backward takes the
// weights from: [B, L, S] the weights themselves when saves_weights(), else [B, L, 2] each query
// row's softmax maximum and 1 / sum, to recompute them; keep: [B, L, S] the kept weights under
// dropout; mask: additive [Bm, L, S], Bm = 1 or B, or undefined.
struct Attention {
    Dims d;
    float scale = 1.0f, keep_scale = 1.0f;  // keep_scale = 1 / (1 - dropout_p)
    bool dropout = false, causal = false;

    // Whether the weights are saved rather than recomputed (see the top of this file).
    bool saves_weights() const { return d.S <= 2 * d.E + d.Ev; }
    Shape softmax_shape() const { return {d.B, d.L, saves_weights() ? d.S : 2}; }

    // p: [L, S] = slice b's scores, scale * q @ k^T (+ mask), which the softmax then
    // takes in place: in the forward, and again in the backward.
    void scores(float* p, int64_t b, const Slices& q, const Slices& k, const Tensor& mask) const {
        const int64_t L = d.L, S = d.S, E = d.E;
        gemm(false, true, L, S, E, scale, q[b], q.ld, k[b], k.ld, 0.0f, p, S);
        if (mask.defined()) {
            const float* m = mask.data() + (mask.size(0) == 1 ? 0 : b * L * S);
            for (int64_t i = 0; i < L * S; ++i) p[i] += m[i];
        }
        // (a causal mask is applied by the softmaxes, which skip the masked columns)
    }

    // w: [L, S] = the weights after dropout, from p (slice b's kept positions).
    void drop(float* w, const float* p, int64_t b, const Tensor& keep) const {
        const int64_t n = d.L * d.S;
        const bool* kept = keep.data_ptr<bool>() + b * n;
        for (int64_t i = 0; i < n; ++i) w[i] = kept[i] ? p[i] * keep_scale : 0.0f;
    }

    void forward(const Slices& out, float* softmax, const Slices& q, const Slices& k, const Slices& v, const Tensor& keep,
                 const Tensor& mask) const {
        const int64_t L = d.L, S = d.S, Ev = d.Ev;
        const bool saved = saves_weights();
        parallel_for(d.B, 1, [&](int64_t b0, int64_t b1) {
            // Per thread: the weights' dropped copy; unless saved, one slice's weights at a time
            // ([L, S], not [B, L, S]); when saved, the stats they do not keep.
            const Tensor scratch = empty({((dropout ? 1 : 0) + (saved ? 0 : 1)) * L * S + (saved ? 2 * L : 0)});
            float* const dropped = scratch.data();
            float* const own = dropped + (dropout ? L * S : 0);  // p, or the stats when p is saved
            for (int64_t b = b0; b < b1; ++b) {
                float* p = saved ? softmax + b * L * S : own;
                float* stats = saved ? own : softmax + b * L * 2;
                float* w = dropout ? dropped : p;  // what multiplies v
                scores(p, b, q, k, mask);
                softmax_rows(p, stats, p, L, S, causal);
                if (dropout) drop(w, p, b, keep);
                // out: [L, Ev] = w @ v
                gemm(false, false, L, Ev, S, 1.0f, w, S, v[b], v.ld, 0.0f, out[b], out.ld);
            }
        });
    }

    // Gradients with sgemm's beta (0: overwrite, 1: accumulate); an empty one is not computed.
    // dscores, when given: [B, L, S], the gradient of the scores (a float mask's, before its broadcast).
    void backward(const Slices& dq, float dq_beta, const Slices& dk, float dk_beta, const Slices& dv, float dv_beta,
                  const Slices& dout, const Slices& q, const Slices& k, const Slices& v, const float* softmax,
                  const Tensor& keep, const Tensor& mask, float* dscores = nullptr) const {
        const int64_t L = d.L, S = d.S, E = d.E, Ev = d.Ev;
        const bool saved = saves_weights();
        parallel_for(d.B, 1, [&](int64_t b0, int64_t b1) {
            // dp and ds, and p unless saved, of one slice at a time: [L, S] each per thread, not [B, L, S].
            const Tensor scratch = empty({saved ? 1 : 2, L, S});
            float* ds = scratch.data();
            float* recomputed = saved ? nullptr : ds + L * S;
            for (int64_t b = b0; b < b1; ++b) {
                // The softmax's output, as the forward computed it.
                const float* p = saved ? softmax + b * L * S : recomputed;
                if (!saved) {
                    scores(recomputed, b, q, k, mask);
                    softmax_rows_again(recomputed, softmax + b * L * 2, recomputed, L, S, causal);
                }
                // dv: [S, Ev] = w^T @ dout, w the weights v was multiplied by (after dropout; ds
                // holds them until dp overwrites it)
                if (dv) {
                    if (dropout) drop(ds, p, b, keep);
                    gemm(true, false, S, Ev, L, 1.0f, dropout ? ds : p, S, dout[b], dout.ld, dv_beta, dv[b], dv.ld);
                }
                if (!dq && !dk && !dscores) continue;
                // dp: [L, S] = dout @ v^T, through dropout back to the softmax's output
                gemm(false, true, L, S, Ev, 1.0f, dout[b], dout.ld, v[b], v.ld, 0.0f, ds, S);
                if (dropout) {
                    const bool* kept = keep.data_ptr<bool>() + b * L * S;
                    for (int64_t i = 0; i < L * S; ++i) ds[i] = kept[i] ? ds[i] * keep_scale : 0.0f;
                }
                softmax_rows_backward(ds, p, L, S);
                if (dscores) std::copy_n(ds, L * S, dscores + b * L * S);
                // dq: [L, E] = scale * ds @ k;  dk: [S, E] = scale * ds^T @ q
                if (dq) gemm(false, false, L, E, S, scale, ds, S, k[b], k.ld, dq_beta, dq[b], dq.ld);
                if (dk) gemm(true, false, S, E, L, scale, ds, S, q[b], q.ld, dk_beta, dk[b], dk.ld);
            }
        });
    }
};

class ScaledDotProductAttentionBackward final : public OpNode {
public:
    Attention a;
    Shape scores_shape, mask_shape;  // [*batch, L, S] and a float attn_mask's (input 3), broadcast to it
    const char* name() const override { return "ScaledDotProductAttentionBackward0"; }
    void backward(const Tensor& dout) override {
        const Tensor &q = saved(0), &k = saved(1), &v = saved(2), &softmax = saved(3), &keep = saved(4), &mask = saved(5);
        const GradOut dq = grad_out(0), dk = grad_out(1), dv = grad_out(2);
        const Dims& d = a.d;
        // The mask is added to the scores: its gradient is theirs, summed over its broadcast dims.
        const Tensor dscores = needs_grad(3) ? empty({d.B, d.L, d.S}) : Tensor();
        a.backward(dense_slices(dq.data, d.B, d.L, d.E), dq.beta(), dense_slices(dk.data, d.B, d.S, d.E), dk.beta(),
                   dense_slices(dv.data, d.B, d.S, d.Ev), dv.beta(), dense_slices(dout.data(), d.B, d.L, d.Ev), slices_of(q),
                   slices_of(k), slices_of(v), softmax.data(), keep, mask, dscores.defined() ? dscores.data() : nullptr);
        if (const GradOut dmask = grad_out(3)) sum_to(dmask, dscores.view(scores_shape), mask_shape);
    }
};

// Self-attention over the packed in_proj output qkv: [N, L, 3E] (q, k, v side by side, each
// [L, H, D] per sequence), writing the heads' output as out: [N, L, E] (head h in columns
// h D .. (h + 1) D), the layout out_proj reads. Its gradient goes straight into qkv's.
class PackedSelfAttentionBackward final : public OpNode {
public:
    Attention a;
    int64_t heads = 1;
    const char* name() const override { return "PackedSelfAttentionBackward0"; }
    void backward(const Tensor& dout) override {
        const Tensor &qkv = saved(0), &softmax = saved(1), &keep = saved(2), &mask = saved(3);
        const GradOut dqkv = grad_out(0);
        if (!dqkv) return;
        const auto part = [&](float* base, int64_t i) { return packed_slices(base, qkv.size(0), a.d.L, heads, a.d.E, i); };
        float* g = dqkv.data;
        a.backward(part(g, 0), dqkv.beta(), part(g, 1), dqkv.beta(), part(g, 2), dqkv.beta(), heads_slices(dout.data()),
                   part(qkv.data(), 0), part(qkv.data(), 1), part(qkv.data(), 2), softmax.data(), keep, mask);
    }
    // head h of sequence n in out or its gradient: [N, L, H * D]
    Slices heads_slices(float* data) const {
        const int64_t E = a.d.E * heads;
        return {data, E, {a.d.B / heads, heads}, {a.d.L * E, a.d.E}};
    }
    // part i (0: q, 1: k, 2: v) of head h of sequence n in qkv: [N, L, 3, H, D]
    static Slices packed_slices(float* data, int64_t N, int64_t L, int64_t H, int64_t D, int64_t i) {
        const int64_t E = H * D;
        return {data + i * E, 3 * E, {N, H}, {L * 3 * E, D}};
    }
};

// The mask as an additive float tensor [Bm, L, S], Bm = 1 (shared) or B: -inf where a boolean
// mask is false, the values of a float mask, 0 for none; the causal mask is applied separately.
Tensor additive_mask(const Tensor& mask, const Shape& batch, int64_t L, int64_t S) {
    Shape full = batch;
    full.push_back(L);
    full.push_back(S);
    const Shape target = broadcast_shapes(mask.shape(), full, "scaled_dot_product_attention: attn_mask");
    NORMNET_CHECK(target == full, "scaled_dot_product_attention: attn_mask of shape ", mask.shape(),
                  " does not broadcast to the attention's shape ", full);
    bool per_batch = false;
    for (int dim = 0; dim < mask.dim() - 2; ++dim) per_batch = per_batch || mask.size(dim) != 1;
    // [B, L, S] with the batch dims flattened, as Attention::scores reads it: its size(0) says
    // shared or not, so [1, H, L, S] (batch 1, a mask per head) must not keep its leading 1.
    Tensor out = empty(per_batch ? Shape{batch.numel(), L, S} : Shape{1, L, S});
    const Shape& walk = per_batch ? full : Shape{L, S};
    const Tensor m = mask.dim() > walk.size() ? mask.view(Shape{mask.size(-2), mask.size(-1)}) : mask;
    const Shape strides = broadcast_strides(m, walk);
    const StridedLoop<2> loop(walk, {contiguous_strides(walk), strides});
    if (mask.dtype() == kBool) {
        loop.run(std::tuple<float*, const bool*>{out.data(), m.data_ptr<bool>()},
                 [](const std::tuple<float*, const bool*>& p, const std::array<int64_t, 2>& s, int64_t n) {
                     const auto [o, x] = p;
                     for (int64_t i = 0; i < n; ++i) o[i * s[0]] = x[i * s[1]] ? 0.0f : -std::numeric_limits<float>::infinity();
                 });
    } else {
        NORMNET_CHECK(mask.dtype() == kFloat32, "scaled_dot_product_attention: attn_mask must be bool or float32, got ",
                      mask.dtype());
        loop.run(std::tuple<float*, const float*>{out.data(), m.data()}, [](const std::tuple<float*, const float*>& p,
                                                                           const std::array<int64_t, 2>& s, int64_t n) {
            const auto [o, x] = p;
            for (int64_t i = 0; i < n; ++i) o[i * s[0]] = x[i * s[1]];
        });
    }
    return out;
}

// Runs the attention of `d` over the operands (batch: their batch sizes, for the mask), making
// softmax, keep and mask as the backward needs them; returns what the backward needs besides.
Attention attend(const Dims& d, const Slices& out, const Slices& q, const Slices& k, const Slices& v, const Shape& batch,
                 const Tensor& attn_mask, double dropout_p, bool is_causal, float scale, Generator& generator,
                 Tensor& softmax, Tensor& keep, Tensor& mask) {
    Attention a;
    a.d = d;
    a.scale = scale;
    a.dropout = dropout_p > 0.0;
    a.causal = is_causal;
    a.keep_scale = static_cast<float>(1.0 / (1.0 - dropout_p));
    mask = attn_mask.defined() ? additive_mask(attn_mask, batch, d.L, d.S) : Tensor();
    softmax = empty(a.softmax_shape());
    keep = a.dropout ? empty({d.B, d.L, d.S}, kBool) : Tensor();
    if (a.dropout) {
        bool* kp = keep.data_ptr<bool>();
        for (int64_t i = 0; i < keep.numel(); ++i) kp[i] = generator.uniform() >= static_cast<float>(dropout_p);
    }
    a.forward(out, softmax.data(), q, k, v, keep, mask);
    return a;
}

}  // namespace
}  // namespace detail

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& attn_mask,
                                    double dropout_p, bool is_causal, std::optional<double> scale, Generator& generator) {
    const char* op = "scaled_dot_product_attention";
    for (const Tensor* t : {&query, &key, &value}) {
        NORMNET_CHECK(t->dtype() == kFloat32, op, ": expected float32 query, key and value, got ", t->dtype());
        NORMNET_CHECK(t->dim() >= 2, op, ": expected query, key and value of at least 2 dimensions [*, L, E], got ",
                      t->shape());
    }
    NORMNET_CHECK(query.dim() == key.dim() && key.dim() == value.dim(), op, ": query ", query.shape(), ", key ",
                  key.shape(), " and value ", value.shape(), " must have the same number of dimensions");
    Shape batch;
    for (int dim = 0; dim < query.dim() - 2; ++dim) {
        NORMNET_CHECK(query.size(dim) == key.size(dim) && key.size(dim) == value.size(dim), op, ": query ", query.shape(),
                      ", key ", key.shape(), " and value ", value.shape(), " differ in their leading dimensions");
        batch.push_back(query.size(dim));
    }
    detail::Dims d;
    d.B = batch.numel(), d.L = query.size(-2), d.S = key.size(-2), d.E = query.size(-1), d.Ev = value.size(-1);
    NORMNET_CHECK(key.size(-1) == d.E && value.size(-2) == d.S, op, ": query ", query.shape(), ", key ", key.shape(),
                  " and value ", value.shape(), " do not fit ([*, L, E], [*, S, E], [*, S, Ev])");
    NORMNET_CHECK(dropout_p >= 0.0 && dropout_p < 1.0, op, ": dropout_p must be in [0, 1), got ", dropout_p);
    NORMNET_CHECK(!(is_causal && attn_mask.defined()), op, ": give attn_mask or is_causal, not both (as torch)");
    // Views sgemm can read (the heads of a packed projection) are read in place.
    const auto operand = [](const Tensor& t) { return detail::readable_in_place(t) ? t : t.contiguous(); };
    const Tensor q = operand(query), k = operand(key), v = operand(value);
    const float s = static_cast<float>(scale.value_or(1.0 / std::sqrt(static_cast<double>(d.E))));
    Shape out_shape = batch;
    out_shape.push_back(d.L);
    out_shape.push_back(d.Ev);
    Tensor out = empty(out_shape);
    Tensor softmax, keep, mask;
    const detail::Attention a =
        detail::attend(d, detail::dense_slices(out.data(), d.B, d.L, d.Ev), detail::slices_of(q), detail::slices_of(k),
                       detail::slices_of(v), batch, attn_mask, dropout_p, is_causal, s, generator, softmax, keep, mask);
    // A float mask takes a gradient (a learned bias), as torch; a bool one does not.
    const Tensor float_mask = attn_mask.defined() && attn_mask.dtype() == kFloat32 ? attn_mask : Tensor();
    if (auto* node = detail::record<detail::ScaledDotProductAttentionBackward>(out, {q, k, v, float_mask},
                                                                               {q, k, v, softmax, keep, mask})) {
        node->a = a;
        node->scores_shape = batch;
        node->scores_shape.push_back(d.L);
        node->scores_shape.push_back(d.S);
        if (float_mask.defined()) node->mask_shape = float_mask.shape();
    }
    return out;
}

namespace detail {

Tensor packed_self_attention(const Tensor& qkv, int64_t heads, const Tensor& attn_mask, double dropout_p, bool is_causal,
                             Generator& generator) {
    NORMNET_CHECK(qkv.dtype() == kFloat32 && qkv.dim() == 3 && qkv.is_contiguous() && heads > 0 &&
                      qkv.size(2) % (3 * heads) == 0,
                  "packed_self_attention: expected a contiguous float32 [N, L, 3 E] with E divisible by ", heads,
                  " heads, got ", qkv.dtype(), " ", qkv.shape());
    NORMNET_CHECK(dropout_p >= 0.0 && dropout_p < 1.0, "packed_self_attention: dropout_p must be in [0, 1), got ", dropout_p);
    NORMNET_CHECK(!(is_causal && attn_mask.defined()), "packed_self_attention: give attn_mask or is_causal, not both");
    const int64_t N = qkv.size(0), L = qkv.size(1), E = qkv.size(2) / 3, D = E / heads;
    Dims d;
    d.B = N * heads, d.L = L, d.S = L, d.E = D, d.Ev = D;
    Tensor out = empty({N, L, E});
    Tensor softmax, keep, mask;
    const auto part = [&](int64_t i) { return PackedSelfAttentionBackward::packed_slices(qkv.data(), N, L, heads, D, i); };
    const Slices out_heads{out.data(), E, {N, heads}, {L * E, D}};
    const Attention a = attend(d, out_heads, part(0), part(1), part(2), Shape{N, heads}, attn_mask, dropout_p, is_causal,
                               static_cast<float>(1.0 / std::sqrt(static_cast<double>(D))), generator, softmax, keep, mask);
    if (auto* node = record<PackedSelfAttentionBackward>(out, {qkv}, {qkv, softmax, keep, mask})) {
        node->a = a;
        node->heads = heads;
    }
    return out;
}

}  // namespace detail
}  // namespace normnet
