// VisionTransformer: a small ViT (Dosovitskiy et al. 2021) for 28x28 images such as MNIST, in
// torchvision.models' naming (conv_proj, class_token, pos_embedding, encoder, head).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "normnet/arg.hpp"
#include "normnet/export.hpp"
#include "normnet/module.hpp"
#include "normnet/nn/conv.hpp"
#include "normnet/nn/linear.hpp"
#include "normnet/nn/transformer.hpp"

namespace normnet::models {

/// Options of VisionTransformer; the defaults are issue 13's MNIST model: 7x7 patches of a 28x28
/// image give 16 tokens plus the class token, d_model 64, 4 blocks of 4 heads, pre-LN.
struct VisionTransformerOptions {
    using Self = VisionTransformerOptions;
    NORMNET_ARG(int64_t, image_size) = 28;
    NORMNET_ARG(int64_t, patch_size) = 7;      // must divide image_size
    NORMNET_ARG(int64_t, in_channels) = 1;
    NORMNET_ARG(int64_t, num_classes) = 10;
    NORMNET_ARG(int64_t, d_model) = 64;
    NORMNET_ARG(int64_t, num_layers) = 4;
    NORMNET_ARG(int64_t, num_heads) = 4;
    NORMNET_ARG(int64_t, dim_feedforward) = 128;
    NORMNET_ARG(double, dropout) = 0.0;
    NORMNET_ARG(Norm, norm) = NormKind::layer;  // layer, rms, batch or none
    NORMNET_ARG(bool, norm_first) = true;      // pre-LN (with a final norm) or post-LN (without)
};

/// Patches embedded by conv_proj (a Conv2d of kernel and stride patch_size), a learned class_token
/// [1, 1, d_model] (zeros, as torchvision) in front, a learned pos_embedding [1, 1 + patches,
/// d_model] (N(0, 0.02^2)) added, the TransformerEncoder "encoder" (GELU, batch_first; final norm
/// encoder.norm when norm_first), and the linear head on the class token's output.
class NORMNET_API VisionTransformer : public Cloneable<VisionTransformer> {
public:
    explicit VisionTransformer(const VisionTransformerOptions& options = {});
    /// x: [N, C, H, W], or [N, C * H * W] (flattened images) -> logits [N, num_classes].
    Tensor forward(const Tensor& x) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "VisionTransformer"; }
    const VisionTransformerOptions& options() const { return options_; }

    std::shared_ptr<Conv2d> conv_proj;
    Tensor class_token, pos_embedding;
    std::shared_ptr<TransformerEncoder> encoder;
    std::shared_ptr<Linear> head;

private:
    VisionTransformerOptions options_;
};

}  // namespace normnet::models
