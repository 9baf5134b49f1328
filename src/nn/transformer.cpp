// TransformerEncoderLayer and TransformerEncoder: PyTorch's structure and forward (pre- and
// post-LN), with the normalisation inside a block from the norm factory (norm_choice.hpp).
#include "normnet/nn/transformer.hpp"
#include "normnet/autograd.hpp"

#include "normnet/nn/norm_choice.hpp"
#include "normnet/ops.hpp"

namespace normnet {

namespace {

// The block's normalisation over the last dimension (make_norm's tokens site).
std::shared_ptr<Module> sequence_norm(const TransformerEncoderLayerOptions& o, const char* where) {
    return make_norm(o.norm, NormSite::tokens, {.channels = o.d_model, .eps = o.layer_norm_eps}, where).module;
}

}  // namespace

TransformerEncoderLayer::TransformerEncoderLayer(const TransformerEncoderLayerOptions& options) : options_(options) {
    const auto& o = options;
    NORMNET_CHECK(o.d_model > 0 && o.nhead > 0 && o.dim_feedforward > 0, "TransformerEncoderLayer: d_model (", o.d_model,
                  "), nhead (", o.nhead, ") and dim_feedforward (", o.dim_feedforward, ") must be positive");
    NORMNET_CHECK(o.activation == "relu" || o.activation == "gelu",
                  "TransformerEncoderLayer: activation should be relu or gelu, not ", o.activation);
    self_attn = register_module("self_attn", std::make_shared<MultiheadAttention>(MultiheadAttentionOptions{
                                                 o.d_model, o.nhead, o.dropout, true, o.batch_first}));
    linear1 = register_module("linear1", std::make_shared<Linear>(o.d_model, o.dim_feedforward));
    dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout));
    linear2 = register_module("linear2", std::make_shared<Linear>(o.dim_feedforward, o.d_model));
    norm1 = sequence_norm(o, "TransformerEncoderLayer");
    norm2 = sequence_norm(o, "TransformerEncoderLayer");
    add_child("norm1", norm1);
    add_child("norm2", norm2);
    dropout1 = register_module("dropout1", std::make_shared<Dropout>(o.dropout));
    dropout2 = register_module("dropout2", std::make_shared<Dropout>(o.dropout));
}

Tensor TransformerEncoderLayer::forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask,
                                        bool is_causal) {
    const auto sa_block = [&](const Tensor& x) {
        return dropout1->forward(std::get<0>(self_attn->forward(x, x, x, src_key_padding_mask, false, src_mask, true, is_causal)));
    };
    // The feed-forward network: with the dropout between its linears off, through the fused op,
    // which holds at most h (nothing of [*, F] when checkpointed: it recomputes h itself);
    // otherwise as the modules, under checkpoint() when checkpointed (the lambda captures only
    // `this`, so the std::function checkpoint keeps needs no allocation). With pre-LN, norm2
    // runs once, outside: a BatchNorm's running statistics are updated once per step.
    const auto ffn = [this](const Tensor& x) {
        const Tensor h = linear1->forward(x);
        return linear2->forward(dropout->forward(options_.activation == "gelu" ? gelu(h) : relu(h)));
    };
    const auto ff = [&](const Tensor& x) {
        const Tensor in = options_.norm_first ? norm2->forward(x) : x;
        if (!dropout->is_training() || dropout->options().p == 0) {
            return dropout2->forward(feed_forward(in, linear1->weight, linear1->bias, linear2->weight, linear2->bias,
                                                  options_.activation, checkpoint_feedforward));
        }
        return dropout2->forward(checkpoint_feedforward ? checkpoint(ffn, in) : ffn(in));
    };
    Tensor x = src;
    if (options_.norm_first) {
        x = x + sa_block(norm1->forward(x));
        x = x + ff(x);
    } else {
        x = norm1->forward(x + sa_block(x));
        x = norm2->forward(x + ff(x));
    }
    return x;
}

TransformerEncoder::TransformerEncoder(const TransformerEncoderOptions& options) : options_(options) {
    NORMNET_CHECK(options.num_layers > 0, "TransformerEncoder: num_layers must be positive, got ", options.num_layers);
    layers = register_module("layers", std::make_shared<ModuleList>());
    for (int64_t i = 0; i < options.num_layers; ++i) {
        layer_list_.push_back(std::make_shared<TransformerEncoderLayer>(options.encoder_layer));
        layers->push_back(layer_list_.back());
    }
    if (options.final_norm) {
        norm = sequence_norm(options.encoder_layer, "TransformerEncoder");
        add_child("norm", norm);
    }
}

TransformerEncoderLayer& TransformerEncoder::layer(size_t i) const {
    NORMNET_CHECK(i < layer_list_.size(), "TransformerEncoder: layer ", i, " is out of range for ", layer_list_.size(),
                  " layers");
    return *layer_list_[i];
}

Tensor TransformerEncoder::forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask,
                                   bool is_causal) {
    Tensor x = src;
    for (const auto& l : layer_list_) x = l->forward(x, mask, src_key_padding_mask, is_causal);
    return norm ? norm->forward(x) : x;
}

}  // namespace normnet
