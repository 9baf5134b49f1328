// VisionTransformer: patch embedding by a strided convolution, class token and positional
// embedding, the encoder, the head on the class token.
#include "normnet/models/vision_transformer.hpp"

#include "normnet/nn/init.hpp"
#include "normnet/ops.hpp"

namespace normnet::models {

VisionTransformer::VisionTransformer(const VisionTransformerOptions& options) : options_(options) {
    const auto& o = options;
    NORMNET_CHECK(o.patch_size > 0 && o.image_size > 0 && o.image_size % o.patch_size == 0,
                  "VisionTransformer: patch_size (", o.patch_size, ") must divide image_size (", o.image_size, ")");
    const int64_t side = o.image_size / o.patch_size, tokens = 1 + side * side;
    conv_proj = register_module("conv_proj", std::make_shared<Conv2d>(Conv2dOptions{
                                                 .in_channels = o.in_channels,
                                                 .out_channels = o.d_model,
                                                 .kernel_size = o.patch_size,
                                                 .stride = o.patch_size}));
    class_token = register_parameter("class_token", zeros({1, 1, o.d_model}));
    pos_embedding = register_parameter("pos_embedding", empty({1, tokens, o.d_model}));
    nn::init::normal_(pos_embedding, 0.0, 0.02);
    TransformerEncoderLayerOptions layer{.d_model = o.d_model,
                                         .nhead = o.num_heads,
                                         .dim_feedforward = o.dim_feedforward,
                                         .dropout = o.dropout,
                                         .activation = "gelu",
                                         .batch_first = true,
                                         .norm_first = o.norm_first,
                                         .norm = o.norm};
    encoder = register_module("encoder", std::make_shared<TransformerEncoder>(TransformerEncoderOptions{
                                             layer, o.num_layers, /*final_norm=*/o.norm_first}));
    head = register_module("head", std::make_shared<Linear>(o.d_model, o.num_classes));
}

Tensor VisionTransformer::forward(const Tensor& x_in) {
    const auto& o = options_;
    const int64_t pixels = o.in_channels * o.image_size * o.image_size;
    NORMNET_CHECK((x_in.dim() == 2 && x_in.size(1) == pixels) ||
                      (x_in.dim() == 4 && x_in.size(1) == o.in_channels && x_in.size(2) == o.image_size &&
                       x_in.size(3) == o.image_size),
                  "VisionTransformer: expected images [N, ", o.in_channels, ", ", o.image_size, ", ", o.image_size,
                  "] or [N, ", pixels, "], got ", x_in.shape());
    const int64_t N = x_in.size(0);
    const Tensor x = x_in.dim() == 2 ? x_in.reshape({N, o.in_channels, o.image_size, o.image_size}) : x_in;
    // [N, D, side, side] -> [N, patches, D], the class token first.
    const Tensor patches = conv_proj->forward(x).flatten(2).transpose(1, 2);
    Tensor h = cat({class_token.expand({N, 1, o.d_model}), patches}, 1) + pos_embedding;
    h = encoder->forward(h);
    return head->forward(h.select(1, 0));
}

}  // namespace normnet::models
