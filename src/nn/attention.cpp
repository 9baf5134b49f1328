// MultiheadAttention: PyTorch's parameters and initialisation; forward projects (one product for
// self-attention), turns PyTorch's masks (true = masked out) into scaled_dot_product_attention's
// (true = may attend) and attends per head. Self-attention runs the packed op, which reads the
// heads from the one product and writes them where out_proj reads them, with no copy either way;
// other attention reads the heads as views. Only need_weights takes the composite path (matmul,
// softmax, dropout), since the fused ops do not return their weights.
#include "normnet/nn/attention.hpp"

#include <cmath>
#include <limits>

#include "normnet/nn/init.hpp"
#include "normnet/ops.hpp"
#include "../ops/attention.hpp"

namespace normnet {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Causal "may attend" mask [L, S]: key j <= query i.
Tensor causal_allowed(int64_t L, int64_t S) {
    Tensor m = empty({L, S}, kBool);
    bool* p = m.data_ptr<bool>();
    for (int64_t i = 0; i < L; ++i)
        for (int64_t j = 0; j < S; ++j) p[i * S + j] = j <= i;
    return m;
}

// A mask in scaled_dot_product_attention's convention: bool "may attend" or float additive.
// Combining two: both bool -> and; otherwise the bool one becomes 0 / -inf and they add.
Tensor combine(const Tensor& a, const Tensor& b) {
    if (!a.defined()) return b;
    if (!b.defined()) return a;
    if (a.dtype() == kBool && b.dtype() == kBool) return logical_and(a, b);
    const auto additive = [](const Tensor& m) {
        return m.dtype() == kBool ? masked_fill(zeros(m.shape()), logical_not(m), kNegInf) : m;
    };
    return additive(a) + additive(b);
}

// PyTorch's convention (bool true = masked out, float added) -> the fused op's.
Tensor to_sdpa(const Tensor& m) { return m.dtype() == kBool ? logical_not(m) : m; }

}  // namespace

MultiheadAttention::MultiheadAttention(const MultiheadAttentionOptions& options) : options_(options) {
    const int64_t E = options.embed_dim, H = options.num_heads;
    NORMNET_CHECK(E > 0 && H > 0, "MultiheadAttention: embed_dim (", E, ") and num_heads (", H, ") must be positive");
    NORMNET_CHECK(E % H == 0, "MultiheadAttention: embed_dim (", E, ") must be divisible by num_heads (", H, ")");
    NORMNET_CHECK(options.dropout >= 0.0 && options.dropout < 1.0, "MultiheadAttention: dropout must be in [0, 1), got ",
                  options.dropout);
    in_proj_weight = register_parameter("in_proj_weight", empty({3 * E, E}));
    if (options.bias) in_proj_bias = register_parameter("in_proj_bias", empty({3 * E}));
    out_proj = register_module("out_proj", std::make_shared<Linear>(E, E, options.bias));
    reset_parameters();
}

void MultiheadAttention::reset_parameters() {
    nn::init::xavier_uniform_(in_proj_weight);
    if (in_proj_bias.defined()) nn::init::zeros_(in_proj_bias);
    if (out_proj->bias.defined()) nn::init::zeros_(out_proj->bias);
}

Tensor MultiheadAttention::forward(const Tensor& x) { return std::get<0>(forward(x, x, x, {}, false)); }

std::tuple<Tensor, Tensor> MultiheadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                       const Tensor& key_padding_mask, bool need_weights,
                                                       const Tensor& attn_mask, bool average_attn_weights,
                                                       bool is_causal) {
    const int64_t E = options_.embed_dim, H = options_.num_heads, D = E / H;
    const bool batched = query.dim() == 3;
    NORMNET_CHECK((query.dim() == 3 || query.dim() == 2) && key.dim() == query.dim() && value.dim() == query.dim(),
                  "MultiheadAttention: expected query, key and value all 3-D (batched) or all 2-D (unbatched), got ",
                  query.shape(), ", ", key.shape(), " and ", value.shape());
    NORMNET_CHECK(query.size(-1) == E && key.size(-1) == E && value.size(-1) == E,
                  "MultiheadAttention: expected embed_dim ", E, " as the last size of query, key and value, got ",
                  query.shape(), ", ", key.shape(), " and ", value.shape());
    // Batch-first views [N, L, E]; unbatched input is a batch of one.
    const auto batch_first = [&](const Tensor& t) {
        if (!batched) return t.unsqueeze(0);
        return options_.batch_first ? t : t.transpose(0, 1);
    };
    const Tensor q_in = batch_first(query), k_in = batch_first(key), v_in = batch_first(value);
    const int64_t N = q_in.size(0), L = q_in.size(1), S = k_in.size(1);
    NORMNET_CHECK(k_in.size(0) == N && v_in.size(0) == N && v_in.size(1) == S,
                  "MultiheadAttention: key ", key.shape(), " and value ", value.shape(),
                  " must have the batch of query ", query.shape(), " and the same sequence length");

    // Masks, broadcast against [N, H, L, S].
    Tensor mask;
    if (attn_mask.defined()) {
        NORMNET_CHECK(attn_mask.dtype() == kBool || attn_mask.dtype() == kFloat32,
                      "MultiheadAttention: attn_mask must be bool or float32, got ", attn_mask.dtype());
        if (attn_mask.dim() == 2) {
            NORMNET_CHECK(attn_mask.size(0) == L && attn_mask.size(1) == S, "MultiheadAttention: the shape of the 2D attn_mask is ",
                          attn_mask.shape(), ", but should be ", Shape{L, S});
            mask = to_sdpa(attn_mask);
        } else {
            NORMNET_CHECK(attn_mask.dim() == 3 && attn_mask.size(0) == N * H && attn_mask.size(1) == L &&
                              attn_mask.size(2) == S,
                          "MultiheadAttention: the shape of the 3D attn_mask is ", attn_mask.shape(), ", but should be ",
                          Shape{N * H, L, S});
            mask = to_sdpa(attn_mask).reshape({N, H, L, S});
        }
    }
    if (key_padding_mask.defined()) {
        const Shape want = batched ? Shape{N, S} : Shape{S};
        NORMNET_CHECK(key_padding_mask.shape() == want, "MultiheadAttention: expected key_padding_mask of shape ", want,
                      ", got ", key_padding_mask.shape());
        NORMNET_CHECK(key_padding_mask.dtype() == kBool || key_padding_mask.dtype() == kFloat32,
                      "MultiheadAttention: key_padding_mask must be bool or float32, got ", key_padding_mask.dtype());
        mask = combine(mask, to_sdpa(key_padding_mask).reshape({N, 1, 1, S}));
    }
    if (is_causal && mask.defined()) mask = combine(mask, causal_allowed(L, S));
    const bool causal = is_causal && !mask.defined();
    const double p = is_training() ? options_.dropout() : 0.0;
    const bool self_attention = &query.impl() == &key.impl() && &key.impl() == &value.impl();

    Tensor out, weights;
    if (self_attention && !need_weights) {
        // One product, and the heads read from it and written for out_proj in place.
        out = detail::packed_self_attention(linear(q_in, in_proj_weight, in_proj_bias), H, mask, p, causal);
    } else {
        // Projections -> [N, H, L, D] per head (views of the products, which sdpa reads in place).
        const auto heads = [&](const Tensor& t, int64_t len) { return t.reshape({N, len, H, D}).permute({0, 2, 1, 3}); };
        Tensor q, k, v;
        if (self_attention) {
            const Tensor qkv = linear(q_in, in_proj_weight, in_proj_bias).reshape({N, L, 3, H, D}).permute({2, 0, 3, 1, 4});
            q = qkv.select(0, 0), k = qkv.select(0, 1), v = qkv.select(0, 2);
        } else {
            const auto part = [&](const Tensor& t, int64_t i) {
                const Tensor b = in_proj_bias.defined() ? in_proj_bias.narrow(0, i * E, E) : Tensor{};
                return linear(t, in_proj_weight.narrow(0, i * E, E), b);
            };
            q = heads(part(q_in, 0), L), k = heads(part(k_in, 1), S), v = heads(part(v_in, 2), S);
        }
        if (!need_weights) {
            out = scaled_dot_product_attention(q, k, v, mask, p, causal);
        } else {
            Tensor s = matmul(q, k.transpose(-2, -1)) * static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
            const Tensor m = causal ? causal_allowed(L, S) : mask;
            if (m.defined()) s = m.dtype() == kBool ? masked_fill(s, logical_not(m), kNegInf) : s + m;
            weights = dropout(softmax(s, -1), p, p > 0.0);
            out = matmul(weights, v);
            if (average_attn_weights) weights = mean(weights, {1});
            if (!batched) weights = weights.squeeze(0);
        }
        out = out.permute({0, 2, 1, 3}).reshape({N, L, E});
    }
    out = out_proj->forward(out);
    if (!batched) out = out.squeeze(0);
    else if (!options_.batch_first) out = out.transpose(0, 1);
    return {out, weights};
}

}  // namespace normnet
