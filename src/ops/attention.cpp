// scaled_dot_product_attention, as torch.nn.functional's: softmax(q k^T * scale + mask) v, with a
// boolean or additive mask, a causal flag and dropout on the attention weights. Each (batch,
// head) slice is two sgemm products around a fused row softmax forward, and four products
// around the softmax's backward; slices are split between threads, each slice's products on one.
// The attention weights are saved for backward ([B, L, S]); nothing is recomputed.
#include <cmath>
#include <limits>

#include "../parallel.hpp"
#include "gemm.hpp"
#include "loop.hpp"
#include "normnet/ops.hpp"
#include "op.hpp"

namespace normnet {
namespace detail {
namespace {

// p: [L, S] = softmax over each row of s: [L, S] (in place: s may be p); a row that is all -inf
// gives NaN, as torch.
void softmax_rows(float* p, const float* s, int64_t L, int64_t S) {
    for (int64_t i = 0; i < L; ++i) {
        const float* row = s + i * S;
        float* out = p + i * S;
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < S; ++j) m = std::max(m, row[j]);
        double sum = 0.0;
        for (int64_t j = 0; j < S; ++j) {
            out[j] = std::exp(row[j] - m);
            sum += out[j];
        }
        const auto inv = static_cast<float>(1.0 / sum);
        for (int64_t j = 0; j < S; ++j) out[j] *= inv;
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

class ScaledDotProductAttentionBackward final : public OpNode {
public:
    Dims d;
    float scale = 1.0f, keep_scale = 1.0f;  // keep_scale = 1 / (1 - dropout_p)
    bool dropout = false;
    const char* name() const override { return "ScaledDotProductAttentionBackward0"; }
    void backward(const Tensor& dout) override {
        const Tensor &q = saved(0), &k = saved(1), &v = saved(2), &p = saved(3), &keep = saved(4);
        const GradOut dq = grad_out(0), dk = grad_out(1), dv = grad_out(2);
        const int64_t L = d.L, S = d.S, E = d.E, Ev = d.Ev;
        const Tensor scratch = empty({d.B, L, S});
        parallel_for(d.B, 1, [&](int64_t b0, int64_t b1) {
            for (int64_t b = b0; b < b1; ++b) {
                const float* qb = q.data() + b * L * E;
                const float* kb = k.data() + b * S * E;
                const float* vb = v.data() + b * S * Ev;
                const float* pb = p.data() + b * L * S;  // the weights v was multiplied by (after dropout)
                const float* gb = dout.data() + b * L * Ev;
                float* ds = scratch.data() + b * L * S;
                // dv: [S, Ev] = p^T @ dout
                if (dv) gemm(true, false, S, Ev, L, 1.0f, pb, S, gb, Ev, dv.beta(), dv.data + b * S * Ev, Ev);
                if (!dq && !dk) continue;
                // dp: [L, S] = dout @ v^T, through dropout back to the softmax's output
                gemm(false, true, L, S, Ev, 1.0f, gb, Ev, vb, Ev, 0.0f, ds, S);
                if (dropout) {
                    const bool* kept = keep.data_ptr<bool>() + b * L * S;
                    for (int64_t i = 0; i < L * S; ++i) ds[i] = kept[i] ? ds[i] * keep_scale : 0.0f;
                }
                // The softmax's backward needs its output, saved before dropout (p's second half).
                softmax_rows_backward(ds, pb + (dropout ? d.B * L * S : 0), L, S);
                // dq: [L, E] = scale * ds @ k;  dk: [S, E] = scale * ds^T @ q
                if (dq) gemm(false, false, L, E, S, scale, ds, S, kb, E, dq.beta(), dq.data + b * L * E, E);
                if (dk) gemm(true, false, S, E, L, scale, ds, S, qb, E, dk.beta(), dk.data + b * S * E, E);
            }
        });
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
    Shape out_shape = per_batch ? full : Shape{1, L, S};
    Tensor out = empty(out_shape);
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

}  // namespace
}  // namespace detail

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& attn_mask,
                                    double dropout_p, bool is_causal, std::optional<double> scale, Generator* generator) {
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
    const Tensor q = query.contiguous(), k = key.contiguous(), v = value.contiguous();
    const float s = static_cast<float>(scale.value_or(1.0 / std::sqrt(static_cast<double>(d.E))));
    const Tensor mask = attn_mask.defined() ? detail::additive_mask(attn_mask, batch, d.L, d.S) : Tensor();
    const bool dropout = dropout_p > 0.0;
    // p: the softmax's output; with dropout also the weights after it ([2, B, L, S]: kept first).
    Tensor p = empty(dropout ? Shape{2, d.B, d.L, d.S} : Shape{d.B, d.L, d.S});
    Tensor keep = dropout ? empty({d.B, d.L, d.S}, kBool) : Tensor();
    if (dropout) {
        Generator& gen = generator ? *generator : default_generator();
        bool* kp = keep.data_ptr<bool>();
        for (int64_t i = 0; i < keep.numel(); ++i) kp[i] = gen.uniform() >= static_cast<float>(dropout_p);
    }
    const float keep_scale = static_cast<float>(1.0 / (1.0 - dropout_p));
    Shape out_shape = batch;
    out_shape.push_back(d.L);
    out_shape.push_back(d.Ev);
    Tensor out = empty(out_shape);
    detail::parallel_for(d.B, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
            const int64_t L = d.L, S = d.S, E = d.E, Ev = d.Ev;
            float* softmax = p.data() + (dropout ? d.B * L * S : 0) + b * L * S;  // the softmax's output
            float* weights = p.data() + b * L * S;                                  // what multiplies v
            // scores: [L, S] = scale * q @ k^T (+ mask), then their softmax, in place
            detail::gemm(false, true, L, S, E, s, q.data() + b * L * E, E, k.data() + b * S * E, E, 0.0f, softmax, S);
            if (mask.defined()) {
                const float* m = mask.data() + (mask.size(0) == 1 ? 0 : b * L * S);
                for (int64_t i = 0; i < L * S; ++i) softmax[i] += m[i];
            }
            if (is_causal) {
                for (int64_t i = 0; i < L; ++i) {
                    for (int64_t j = i + 1; j < S; ++j) softmax[i * S + j] = -std::numeric_limits<float>::infinity();
                }
            }
            detail::softmax_rows(softmax, softmax, L, S);
            if (dropout) {
                const bool* kept = keep.data_ptr<bool>() + b * L * S;
                for (int64_t i = 0; i < L * S; ++i) weights[i] = kept[i] ? softmax[i] * keep_scale : 0.0f;
            }
            // out: [L, Ev] = weights @ v
            detail::gemm(false, false, L, Ev, S, 1.0f, weights, S, v.data() + b * S * Ev, Ev, 0.0f, out.data() + b * L * Ev, Ev);
        }
    });
    if (auto* node = detail::record<detail::ScaledDotProductAttentionBackward>(out, {q, k, v}, {q, k, v, p, keep})) {
        node->d = d;
        node->scale = s;
        node->keep_scale = keep_scale;
        node->dropout = dropout;
    }
    return out;
}

}  // namespace normnet
