// CharTransformer: a GPT-style decoder for character-level language modelling (as
// torchvision.models is for images, normnet::models holds whole models built from nn modules).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "normnet/arg.hpp"
#include "normnet/export.hpp"
#include "normnet/module.hpp"
#include "normnet/nn/dropout.hpp"
#include "normnet/nn/embedding.hpp"
#include "normnet/nn/linear.hpp"
#include "normnet/nn/transformer.hpp"

namespace normnet::models {

/// Options of CharTransformer; the defaults are issue 13's model (context 128, d_model 128, 4
/// blocks of 4 heads, pre-LN).
struct CharTransformerOptions {
    using Self = CharTransformerOptions;
    NORMNET_ARG(int64_t, vocab_size) = 0;
    NORMNET_ARG(int64_t, context) = 128;         // the longest sequence forward accepts
    NORMNET_ARG(int64_t, d_model) = 128;
    NORMNET_ARG(int64_t, n_layers) = 4;
    NORMNET_ARG(int64_t, n_heads) = 4;
    NORMNET_ARG(double, dropout) = 0.0;          // on the embeddings, attention weights and residual branches
    NORMNET_ARG(Norm, norm) = NormKind::layer;  // layer, rms, batch or none
    NORMNET_ARG(bool, norm_first) = true;        // pre-LN (with a final norm) or post-LN (without)
    NORMNET_ARG(int64_t, dim_feedforward) = 0;   // 0: 4 * d_model
    // Activation checkpointing of each block (normnet::checkpoint): a block keeps only its input
    // between forward and backward and runs again in backward. Changes no result, only memory and
    // time; with norm "batch" the running statistics would be updated twice, so it is refused.
    NORMNET_ARG(bool, checkpoint_blocks) = false;
    // Selective recomputation: each block's feed-forward network (linear1 -> GELU -> linear2)
    // recomputes its hidden [N, ff] activations in backward instead of keeping them
    // (TransformerEncoderLayer::checkpoint_feedforward); attention keeps its own. Any norm (the
    // norm before the network runs once). With checkpoint_blocks on too it only nests inside the
    // block's checkpoint (no further saving).
    NORMNET_ARG(bool, checkpoint_ffn) = false;
};

/// Token embedding tok_emb [vocab_size, d_model] plus a learned positional embedding pos_emb
/// [context, d_model] (both drawn from N(0, 0.02^2), as GPT-2), dropout "drop", n_layers
/// TransformerEncoderLayers (GELU, batch_first) under causal attention in "encoder" (with the
/// final norm encoder.norm when norm_first), and an untied linear head [vocab_size, d_model]
/// without bias. State_dict keys: tok_emb.weight, pos_emb, encoder.layers.0.self_attn.in_proj_weight,
/// ..., encoder.norm.weight, head.weight.
class NORMNET_API CharTransformer : public Cloneable<CharTransformer> {
public:
    explicit CharTransformer(const CharTransformerOptions& options);
    /// tokens: int64 [B, T] with T <= context, each in [0, vocab_size) -> logits [B, T, vocab_size];
    /// position t sees tokens 0..t only.
    Tensor forward(const Tensor& tokens) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "CharTransformer"; }
    const CharTransformerOptions& options() const { return options_; }
    /// Turns options().checkpoint_blocks on or off (it changes no parameter).
    void set_checkpoint_blocks(bool on);
    /// Turns options().checkpoint_ffn on or off (it changes no parameter).
    void set_checkpoint_ffn(bool on);

    std::shared_ptr<Embedding> tok_emb;
    Tensor pos_emb;
    std::shared_ptr<Dropout> drop;
    std::shared_ptr<TransformerEncoder> encoder;
    std::shared_ptr<Linear> head;

private:
    CharTransformerOptions options_;
};

}  // namespace normnet::models
