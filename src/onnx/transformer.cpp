// ONNX forms of MultiheadAttention (self-attention) and the Transformer encoder: the projections
// as MatMul, the heads by Reshape and Transpose, softmax((q * scale) k^T + causal mask) v by
// Mul, MatMul, Add and Softmax; the fused feed-forward network as Linear -> activation -> Linear.
#include <cmath>
#include <limits>

#include "emit.hpp"
#include "normnet/nn/attention.hpp"
#include "normnet/nn/transformer.hpp"

namespace normnet {

using onnx::GraphBuilder;
using onnx::Ints;
using onnx::Value;
namespace emit = onnx::emit;

namespace {

// Self-attention of batch-first x [B, L, E], inside the MultiheadAttention's path.
Value self_attention(GraphBuilder& g, const MultiheadAttention& m, const Value& x, bool causal) {
    const auto& o = m.options();
    const int64_t E = o.embed_dim, H = o.num_heads, D = E / H;
    if (x.dim() != 3 || x.size(2) != E) g.fail("expected [N, L, " + std::to_string(E) + "] input");
    const int64_t B = x.size(0), L = x.size(1);
    const std::vector<Value> qkv =
        emit::split(g, emit::linear(g, x, m.in_proj_weight, m.in_proj_bias, "in_proj_weight", "in_proj_bias"), 2, 3);
    // [B, L, E] -> [B, H, L, D] (the key as [B, H, D, L], ready for q k^T).
    const auto heads = [&](const Value& t, const Ints& perm) { return g.transpose(g.reshape(t, {B, L, H, D}), perm); };
    const Value q = heads(qkv[0], {0, 2, 1, 3}), k_t = heads(qkv[1], {0, 2, 3, 1}), v = heads(qkv[2], {0, 2, 1, 3});
    // The scale on q before the product (OpenCV 4.6 computes a Mul after a MatMul of two
    // computed inputs wrongly); the same as scaling the scores, but for rounding.
    const Value scale = g.scalar(static_cast<float>(1.0 / std::sqrt(static_cast<double>(D))));
    Value scores = g.matmul(g.mul(q, scale), k_t);
    if (causal) {
        if (L == onnx::kBatch) g.fail("a causal mask needs a fixed sequence length");
        // Key j > query i is masked out: -inf there, so its weight is exactly 0.
        Tensor mask = zeros({L, L});
        for (int64_t i = 0; i < L; ++i) {
            for (int64_t j = i + 1; j < L; ++j) mask.data()[i * L + j] = -std::numeric_limits<float>::infinity();
        }
        scores = g.add(scores, g.constant(mask));
    }
    const Value out = g.matmul(g.softmax(scores, -1), v);  // [B, H, L, D]
    return g.call(*m.out_proj, g.reshape(g.transpose(out, {0, 2, 1, 3}), {B, L, E}));
}

// [L, N, E] <-> [N, L, E]
Value swap_01(GraphBuilder& g, const Value& x) { return g.transpose(x, {1, 0, 2}); }

Value encoder_layer(GraphBuilder& g, const TransformerEncoderLayer& layer, const Value& src, bool causal) {
    const auto& o = layer.options();
    if (src.dim() != 3) g.fail("expected a batch of sequences (3-D input)");
    const Value x0 = o.batch_first ? src : swap_01(g, src);
    const auto attention = [&](const Value& v) {
        return g.call(*layer.self_attn, [&] { return self_attention(g, *layer.self_attn, v, causal); });
    };
    const auto feed_forward = [&](const Value& v) {
        const Value h = g.call(*layer.linear1, v);
        return g.call(*layer.linear2, o.activation == "gelu" ? emit::gelu(g, h, "none") : g.relu(h));
    };
    Value x = x0;
    if (o.norm_first) {
        x = g.add(x, attention(g.call(*layer.norm1, x)));
        x = g.add(x, feed_forward(g.call(*layer.norm2, x)));
    } else {
        x = g.call(*layer.norm1, g.add(x, attention(x)));
        x = g.call(*layer.norm2, g.add(x, feed_forward(x)));
    }
    return o.batch_first ? x : swap_01(g, x);
}

}  // namespace

Value MultiheadAttention::to_onnx(GraphBuilder& graph, const Value& x) const {
    if (x.dim() == 2) return emit::squeeze(graph, self_attention(graph, *this, emit::unsqueeze(graph, x, 0), false), 0);
    if (options_.batch_first) return self_attention(graph, *this, x, false);
    return swap_01(graph, self_attention(graph, *this, swap_01(graph, x), false));
}

Value TransformerEncoderLayer::to_onnx(GraphBuilder& graph, const Value& x) const {
    return encoder_layer(graph, *this, x, false);
}

Value TransformerEncoder::to_onnx(GraphBuilder& graph, const Value& x) const {
    return emit::transformer_encoder(graph, *this, x, false);
}

Value onnx::emit::transformer_encoder(GraphBuilder& g, const TransformerEncoder& encoder, const Value& x, bool causal) {
    return g.call(encoder, [&] {
        Value h = x;
        for (size_t i = 0; i < encoder.num_layers(); ++i) {
            const TransformerEncoderLayer& layer = encoder.layer(i);
            h = g.call(layer, [&] { return encoder_layer(g, layer, h, causal); });
        }
        return encoder.norm ? g.call(*encoder.norm, h) : h;
    });
}

}  // namespace normnet
