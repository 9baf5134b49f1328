// Transformer encoder blocks (torch.nn.TransformerEncoderLayer, TransformerEncoder) with
// PyTorch's options, submodule names (self_attn, linear1, linear2, norm1, norm2, dropout*) and
// forward, pre-LN (norm_first) or post-LN, and one addition: the normalisation inside a block is
// selectable (layer, rms, batch over batch x time, none), with LayerNorm as PyTorch's default.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "normnet/arg.hpp"
#include "normnet/export.hpp"
#include "normnet/module.hpp"
#include "normnet/nn/attention.hpp"
#include "normnet/nn/container.hpp"
#include "normnet/nn/dropout.hpp"
#include "normnet/nn/linear.hpp"
#include "normnet/nn/norm_choice.hpp"

namespace normnet {

/// Options of TransformerEncoderLayer (torch.nn.TransformerEncoderLayer) with PyTorch's defaults,
/// plus `norm`, the normalisation inside the block (make_norm at NormSite::tokens).
struct TransformerEncoderLayerOptions {
    using Self = TransformerEncoderLayerOptions;
    NORMNET_ARG(int64_t, d_model) = 0;
    NORMNET_ARG(int64_t, nhead) = 0;
    NORMNET_ARG(int64_t, dim_feedforward) = 2048;
    NORMNET_ARG(double, dropout) = 0.1;
    NORMNET_ARG(std::string, activation) = "relu";  // "relu" or "gelu"
    NORMNET_ARG(double, layer_norm_eps) = 1e-5;
    NORMNET_ARG(bool, batch_first) = false;
    NORMNET_ARG(bool, norm_first) = false;  // pre-LN: x + sa(norm1(x)); post-LN (PyTorch's default): norm1(x + sa(x))
    NORMNET_ARG(Norm, norm) = NormKind::layer;  // layer, rms, batch or none
};

/// Self-attention and a feed-forward network, each with a residual connection and a normalisation
/// (before the branch with norm_first, after the sum without), as PyTorch's layer; its state_dict
/// loads into torch.nn.TransformerEncoderLayer with the same options (norm "layer").
class NORMNET_API TransformerEncoderLayer : public Cloneable<TransformerEncoderLayer> {
public:
    explicit TransformerEncoderLayer(const TransformerEncoderLayerOptions& options);
    /// TransformerEncoderLayer(64, 4), as torch::nn::TransformerEncoderLayer(64, 4).
    TransformerEncoderLayer(int64_t d_model, int64_t nhead)
        : TransformerEncoderLayer(TransformerEncoderLayerOptions{d_model, nhead}) {}
    /// src [S, N, E] ([N, S, E] with batch_first; [S, E] unbatched) -> the same shape. Masks as
    /// MultiheadAttention's (bool true = masked out, float added); is_causal masks later positions.
    Tensor forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask = {},
                   bool is_causal = false);
    Tensor forward(const Tensor& src) override { return forward(src, Tensor{}); }
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "TransformerEncoderLayer"; }
    const TransformerEncoderLayerOptions& options() const { return options_; }
    /// Recomputes the feed-forward network's hidden activations in backward instead of keeping
    /// them ([*, dim_feedforward] per block): feed_forward's recompute_hidden, or with the
    /// dropout between the linears on, the network under checkpoint(). Same results bit for bit.
    bool checkpoint_feedforward = false;

    std::shared_ptr<MultiheadAttention> self_attn;
    std::shared_ptr<Linear> linear1, linear2;
    std::shared_ptr<Dropout> dropout, dropout1, dropout2;
    std::shared_ptr<Module> norm1, norm2;  // as options.norm chose

private:
    TransformerEncoderLayerOptions options_;
};

/// Options of TransformerEncoder: num_layers copies of a layer, and optionally a final
/// normalisation (of the layer's norm kind; PyTorch's `norm` argument), which pre-LN stacks need.
struct TransformerEncoderOptions {
    using Self = TransformerEncoderOptions;
    // A plain field, so that nested designated initialisers work (.encoder_layer = {.d_model = 8});
    // an options field of class type would not be an aggregate.
    TransformerEncoderLayerOptions encoder_layer;
    NORMNET_ARG(int64_t, num_layers) = 1;
    NORMNET_ARG(bool, final_norm) = false;
};

/// A stack of TransformerEncoderLayer named layers.0, layers.1, ... and the final norm "norm",
/// as torch.nn.TransformerEncoder; each layer is initialised on its own (PyTorch deep-copies one
/// layer, so its layers start equal: load a state_dict to match it exactly).
class NORMNET_API TransformerEncoder : public Cloneable<TransformerEncoder> {
public:
    explicit TransformerEncoder(const TransformerEncoderOptions& options);
    /// src as TransformerEncoderLayer's; every layer gets the same masks.
    Tensor forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask = {},
                   bool is_causal = false);
    Tensor forward(const Tensor& src) override { return forward(src, Tensor{}); }
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "TransformerEncoder"; }
    const TransformerEncoderOptions& options() const { return options_; }
    /// Layer i.
    TransformerEncoderLayer& layer(size_t i) const;
    size_t num_layers() const { return static_cast<size_t>(options_.num_layers); }

    std::shared_ptr<ModuleList> layers;
    std::shared_ptr<Module> norm;  // null without final_norm

private:
    TransformerEncoderOptions options_;
    std::vector<std::shared_ptr<TransformerEncoderLayer>> layer_list_;
};

}  // namespace normnet
