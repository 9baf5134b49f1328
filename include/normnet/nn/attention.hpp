// Multi-head attention (torch.nn.MultiheadAttention): PyTorch's options, parameter names
// (in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias), initialisation and mask
// conventions, on the fused scaled_dot_product_attention.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>

#include "normnet/arg.hpp"
#include "normnet/export.hpp"
#include "normnet/module.hpp"
#include "normnet/nn/linear.hpp"

namespace normnet {

/// Options of MultiheadAttention (torch.nn.MultiheadAttention); kdim/vdim other than embed_dim,
/// add_bias_kv and add_zero_attn are not offered.
struct MultiheadAttentionOptions {
    using Self = MultiheadAttentionOptions;
    NORMNET_ARG(int64_t, embed_dim) = 0;
    NORMNET_ARG(int64_t, num_heads) = 0;   // must divide embed_dim
    NORMNET_ARG(double, dropout) = 0.0;    // on the attention weights, in training
    NORMNET_ARG(bool, bias) = true;
    NORMNET_ARG(bool, batch_first) = false;  // inputs [N, L, E] instead of PyTorch's default [L, N, E]
};

/// Attention of `num_heads` heads of embed_dim / num_heads each: the query, key and value are
/// projected by the rows of in_proj_weight [3E, E] (+ in_proj_bias [3E]), attend per head, and
/// the heads' outputs are joined and projected by out_proj (a Linear(E, E)). Initialised as
/// PyTorch: xavier_uniform_ in_proj_weight, zero biases, out_proj.weight as a Linear's.
class NORMNET_API MultiheadAttention : public Cloneable<MultiheadAttention> {
public:
    explicit MultiheadAttention(const MultiheadAttentionOptions& options);
    /// MultiheadAttention(64, 4), as torch::nn::MultiheadAttention(64, 4).
    MultiheadAttention(int64_t embed_dim, int64_t num_heads)
        : MultiheadAttention(MultiheadAttentionOptions{embed_dim, num_heads}) {}

    /// query [L, N, E], key and value [S, N, E] ([N, L, E] and [N, S, E] with batch_first;
    /// [L, E] and [S, E] unbatched) -> (output shaped as query, attention weights [N, L, S]
    /// averaged over the heads, or [N, H, L, S] without average_attn_weights; undefined without
    /// need_weights). Masks as PyTorch: key_padding_mask [N, S] and attn_mask [L, S] or
    /// [N * H, L, S] are bool (true = may NOT attend) or float (added to the scores). is_causal
    /// masks key j > query i (torch 2's flag; with an attn_mask both apply).
    std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                       const Tensor& key_padding_mask = {}, bool need_weights = true,
                                       const Tensor& attn_mask = {}, bool average_attn_weights = true,
                                       bool is_causal = false);
    /// Self-attention without masks: forward(x, x, x) without the weights.
    Tensor forward(const Tensor& x) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "MultiheadAttention"; }
    /// Draws the initial values again, as PyTorch's _reset_parameters.
    void reset_parameters();
    const MultiheadAttentionOptions& options() const { return options_; }

    Tensor in_proj_weight;  // [3E, E]: rows 0..E the query's, E..2E the key's, 2E..3E the value's
    Tensor in_proj_bias;    // [3E]; undefined without bias
    std::shared_ptr<Linear> out_proj;

private:
    MultiheadAttentionOptions options_;
};

}  // namespace normnet
