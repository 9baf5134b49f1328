// The Transformer encoder the libtorch ViT and LM peers share. libtorch 1.13's C++
// TransformerEncoderLayer has neither norm_first nor batch_first, so the layer is written here
// from torch::nn::MultiheadAttention, Linear and LayerNorm, exactly as Python's
// nn.TransformerEncoderLayer(activation="gelu", dropout=0, batch_first=True, norm_first) computes
// it, and with its names: encoder.layers.<i>.{self_attn.in_proj_weight, self_attn.in_proj_bias,
// self_attn.out_proj.*, linear1.*, linear2.*, norm1.*, norm2.*}, encoder.norm.* -- those of
// normnet's VisionTransformer and CharTransformer and of the Python peers (peer_transformer.py).
#pragma once

#include <torch/torch.h>

#include <vector>

namespace peers {

struct EncoderLayerImpl : torch::nn::Module {
    EncoderLayerImpl(int64_t d_model, int64_t nhead, int64_t dim_feedforward, bool norm_first)
        : norm_first(norm_first),
          self_attn(register_module("self_attn", torch::nn::MultiheadAttention(d_model, nhead))),
          linear1(register_module("linear1", torch::nn::Linear(d_model, dim_feedforward))),
          linear2(register_module("linear2", torch::nn::Linear(dim_feedforward, d_model))),
          norm1(register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})))),
          norm2(register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})))) {}

    // x: [N, L, E]; mask: [L, L] float (added to the scores) or undefined.
    torch::Tensor forward(torch::Tensor x, const torch::Tensor& mask) {
        if (norm_first) {
            x = x + attend(norm1(x), mask);
            return x + feed_forward(norm2(x));
        }
        x = norm1(x + attend(x, mask));
        return norm2(x + feed_forward(x));
    }

    // Multi-head attention works sequence-first ([L, N, E]), as Python's batch_first MHA does
    // inside: the transposes are views.
    torch::Tensor attend(const torch::Tensor& x, const torch::Tensor& mask) {
        const auto q = x.transpose(0, 1);
        return std::get<0>(self_attn->forward(q, q, q, /*key_padding_mask=*/{}, /*need_weights=*/false, mask)).transpose(0, 1);
    }
    torch::Tensor feed_forward(const torch::Tensor& x) { return linear2(torch::gelu(linear1(x))); }

    bool norm_first;
    torch::nn::MultiheadAttention self_attn;
    torch::nn::Linear linear1, linear2;
    torch::nn::LayerNorm norm1, norm2;
};
TORCH_MODULE(EncoderLayer);

// num_layers layers, each initialised on its own (libtorch's defaults: xavier_uniform_
// in_proj_weight, zero attention biases, Linear's kaiming-uniform rule), and the final LayerNorm
// a pre-LN stack needs.
struct EncoderImpl : torch::nn::Module {
    EncoderImpl(int64_t d_model, int64_t nhead, int64_t dim_feedforward, int64_t num_layers, bool norm_first)
        : layers(register_module("layers", torch::nn::ModuleList())) {
        for (int64_t i = 0; i < num_layers; ++i) {
            blocks.push_back(EncoderLayer(d_model, nhead, dim_feedforward, norm_first));
            layers->push_back(blocks.back());
        }
        if (norm_first) norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})));
    }
    torch::Tensor forward(torch::Tensor x, const torch::Tensor& mask = {}) {
        for (auto& block : blocks) x = block->forward(x, mask);
        return norm ? norm(x) : x;
    }

    torch::nn::ModuleList layers;
    std::vector<EncoderLayer> blocks;
    torch::nn::LayerNorm norm{nullptr};
};
TORCH_MODULE(Encoder);

// The trainable parameters: libtorch's MultiheadAttention also registers the unused
// q/k/v_proj_weight as undefined tensors, which an optimizer must not see.
inline std::vector<torch::Tensor> defined_parameters(const torch::nn::Module& m) {
    std::vector<torch::Tensor> out;
    for (const auto& p : m.parameters())
        if (p.defined()) out.push_back(p);
    return out;
}

}  // namespace peers
