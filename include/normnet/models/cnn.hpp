// CNN: a small convolutional classifier, conv 3x3 -> norm -> max-pool 2 -> ReLU per block, then
// Linear layers (issue 12's network: conv 1->32, conv 32->64, linear 3136->128, linear 128->10).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "normnet/arg.hpp"
#include "normnet/export.hpp"
#include "normnet/module.hpp"
#include "normnet/nn/norm_choice.hpp"

namespace normnet::models {

/// Options of CNN; the defaults are issue 12's network on 1x28x28 images with BatchNorm.
struct CNNOptions {
    using Self = CNNOptions;
    NORMNET_ARG(int64_t, in_channels) = 1;
    NORMNET_ARG(int64_t, height) = 28;
    NORMNET_ARG(int64_t, width) = 28;
    NORMNET_ARG(std::vector<int64_t>, channels) = {32, 64};  // one block per entry
    NORMNET_ARG(std::vector<int64_t>, fc) = {128};           // hidden Linear sizes after the blocks
    NORMNET_ARG(int64_t, num_classes) = 10;
    NORMNET_ARG(Norm, norm) = NormKind::batch;  // after each convolution: layer (GroupNorm 1), batch, group, instance or none
    NORMNET_ARG(int64_t, groups) = 8;           // GroupNorm's groups with norm group
};

/// Children "0", "1", ... as the torch.nn.Sequential of the same layers, so that the state_dict is
/// its: Unflatten(1, (C, H, W)) (the data loader's rows become images), per block Conv2d(3, padding
/// 1), the norm (none for "none"), MaxPool2d(2), ReLU, then Flatten, Linear -> ReLU per fc size and
/// the output Linear. Max-pool runs before ReLU: the same function and gradient (max commutes with
/// max(., 0)) with ReLU on a quarter of the values. forward runs each norm -> max-pool -> ReLU as
/// the norm's fused op (make_norm's max_pool2d_relu), so the normalised maps are never stored.
class NORMNET_API CNN : public Cloneable<CNN> {
public:
    explicit CNN(const CNNOptions& options = {});
    /// x: [N, C * H * W] or [N, C, H, W] -> logits [N, num_classes].
    Tensor forward(const Tensor& x) override;
    std::string type_name() const override { return "CNN"; }
    /// Its children in order, as the torch.nn.Sequential of the same layers exports.
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    const CNNOptions& options() const { return options_; }

private:
    CNNOptions options_;
    // The forward pass in order: each child's forward, except a norm's fused op in place of the
    // norm, max-pool and ReLU after it. Pointers into this module's own children.
    std::vector<std::function<Tensor(const Tensor&)>> steps_;
};

}  // namespace normnet::models
