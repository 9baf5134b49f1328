// CharTransformer: embeddings, a causal TransformerEncoder and the head.
#include "normnet/models/char_transformer.hpp"

#include "encoder_stack.hpp"
#include "normnet/autograd.hpp"
#include "normnet/nn/init.hpp"
#include "normnet/ops.hpp"

namespace normnet::models {

CharTransformer::CharTransformer(const CharTransformerOptions& options) : options_(options) {
    const auto& o = options;
    NORMNET_CHECK(o.vocab_size > 0 && o.context > 0, "CharTransformer: vocab_size (", o.vocab_size, ") and context (",
                  o.context, ") must be positive");
    const int64_t ff = o.dim_feedforward > 0 ? o.dim_feedforward() : 4 * o.d_model;
    set_checkpoint_blocks(o.checkpoint_blocks);
    tok_emb = register_module("tok_emb", std::make_shared<Embedding>(o.vocab_size, o.d_model));
    pos_emb = register_parameter("pos_emb", empty({o.context, o.d_model}));
    nn::init::normal_(tok_emb->weight, 0.0, 0.02);
    nn::init::normal_(pos_emb, 0.0, 0.02);
    drop = register_module("drop", std::make_shared<Dropout>(o.dropout));
    encoder = register_module(
        "encoder", detail::encoder_stack(o.d_model, o.n_heads, ff, o.n_layers, o.dropout, o.norm, o.norm_first));
    head = register_module("head", std::make_shared<Linear>(o.d_model, o.vocab_size, false));
    set_checkpoint_ffn(o.checkpoint_ffn);  // sets it on the encoder's layers
}

Tensor CharTransformer::forward(const Tensor& tokens) {
    NORMNET_CHECK(tokens.dtype() == kInt64 && tokens.dim() == 2, "CharTransformer: expected int64 tokens [B, T], got ",
                  tokens.dtype(), " ", tokens.shape());
    const int64_t T = tokens.size(1);
    NORMNET_CHECK(T >= 1 && T <= options_.context, "CharTransformer: sequence length ", T,
                  " must be in [1, context = ", options_.context, "] (tokens ", tokens.shape(), ")");
    const Tensor x = drop->forward(tok_emb->forward(tokens) + pos_emb.narrow(0, 0, T));
    if (!options_.checkpoint_blocks) return head->forward(encoder->forward(x, Tensor{}, Tensor{}, /*is_causal=*/true));
    // The encoder's loop, each block under checkpoint (its lambda captures one pointer, so the
    // std::function the node keeps needs no allocation).
    Tensor h = x;
    for (size_t i = 0; i < encoder->num_layers(); ++i) {
        TransformerEncoderLayer* layer = &encoder->layer(i);
        h = checkpoint([layer](const Tensor& in) { return layer->forward(in, Tensor{}, Tensor{}, /*is_causal=*/true); }, h);
    }
    return head->forward(encoder->norm ? encoder->norm->forward(h) : h);
}

void CharTransformer::set_checkpoint_blocks(bool on) {
    NORMNET_CHECK(!on || !options_.norm.batch_statistics(), "CharTransformer: checkpointing blocks with BatchNorm would update "
                  "its running statistics twice per step");
    options_.checkpoint_blocks = on;
}

void CharTransformer::set_checkpoint_ffn(bool on) {
    options_.checkpoint_ffn = on;
    // Each layer checkpoints its own feed-forward sublayer (TransformerEncoderLayer).
    for (size_t i = 0; i < encoder->num_layers(); ++i) encoder->layer(i).checkpoint_feedforward = on;
}

}  // namespace normnet::models
