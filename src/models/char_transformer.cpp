// CharTransformer: embeddings, a causal TransformerEncoder and the head.
#include "normnet/models/char_transformer.hpp"

#include "normnet/nn/init.hpp"
#include "normnet/ops.hpp"

namespace normnet::models {

CharTransformer::CharTransformer(const CharTransformerOptions& options) : options_(options) {
    const auto& o = options;
    NORMNET_CHECK(o.vocab_size > 0 && o.context > 0, "CharTransformer: vocab_size (", o.vocab_size, ") and context (",
                  o.context, ") must be positive");
    const int64_t ff = o.dim_feedforward > 0 ? o.dim_feedforward : 4 * o.d_model;
    tok_emb = register_module("tok_emb", std::make_shared<Embedding>(o.vocab_size, o.d_model));
    pos_emb = register_parameter("pos_emb", empty({o.context, o.d_model}));
    nn::init::normal_(tok_emb->weight, 0.0, 0.02);
    nn::init::normal_(pos_emb, 0.0, 0.02);
    drop = register_module("drop", std::make_shared<Dropout>(o.dropout));
    TransformerEncoderLayerOptions layer{.d_model = o.d_model,
                                         .nhead = o.n_heads,
                                         .dim_feedforward = ff,
                                         .dropout = o.dropout,
                                         .activation = "gelu",
                                         .batch_first = true,
                                         .norm_first = o.norm_first,
                                         .norm = o.norm};
    encoder = register_module("encoder", std::make_shared<TransformerEncoder>(TransformerEncoderOptions{
                                             layer, o.n_layers, /*final_norm=*/o.norm_first}));
    head = register_module("head", std::make_shared<Linear>(o.d_model, o.vocab_size, false));
}

Tensor CharTransformer::forward(const Tensor& tokens) {
    NORMNET_CHECK(tokens.dtype() == kInt64 && tokens.dim() == 2, "CharTransformer: expected int64 tokens [B, T], got ",
                  tokens.dtype(), " ", tokens.shape());
    const int64_t T = tokens.size(1);
    NORMNET_CHECK(T >= 1 && T <= options_.context, "CharTransformer: sequence length ", T,
                  " must be in [1, context = ", options_.context, "] (tokens ", tokens.shape(), ")");
    const Tensor x = drop->forward(tok_emb->forward(tokens) + pos_emb.narrow(0, 0, T));
    return head->forward(encoder->forward(x, Tensor{}, Tensor{}, /*is_causal=*/true));
}

}  // namespace normnet::models
