// Convolution layers (torch.nn.Conv2d): options with PyTorch's defaults, parameter names,
// shapes and initialisation as PyTorch's, forward through conv2d (ops/conv.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "normnet/arg.hpp"
#include "normnet/export.hpp"
#include "normnet/module.hpp"
#include "normnet/ops.hpp"

namespace normnet {

/// Options of Conv2d (torch.nn.Conv2d). Sizes take one value or a pair: .kernel_size = 3 or
/// {3, 5}; padding also "same" or "valid". padding_mode: only "zeros" is implemented.
struct Conv2dOptions {
    using Self = Conv2dOptions;
    NORMNET_ARG(int64_t, in_channels) = 0;
    NORMNET_ARG(int64_t, out_channels) = 0;
    NORMNET_ARG(Size2, kernel_size) = {};
    NORMNET_ARG(Size2, stride) = 1;
    NORMNET_ARG(Conv2dPadding, padding) = 0;
    NORMNET_ARG(Size2, dilation) = 1;
    NORMNET_ARG(int64_t, groups) = 1;
    NORMNET_ARG(bool, bias) = true;
    NORMNET_ARG(std::string, padding_mode) = "zeros";
};

/// 2-D convolution of [N, C, H, W] (or [C, H, W]) input: weight [out_channels, in_channels /
/// groups, kH, kW] and bias [out_channels], both initialised from U(-1/sqrt(fan_in),
/// 1/sqrt(fan_in)) with fan_in = in_channels / groups * kH * kW, as PyTorch's
/// kaiming_uniform_(a = sqrt(5)) and bias rule.
class NORMNET_API Conv2d : public Cloneable<Conv2d> {
public:
    /// A layer from its options, e.g. Conv2d(Conv2dOptions{.in_channels = 1, .out_channels = 32, .kernel_size = 3, .padding = 1}).
    explicit Conv2d(const Conv2dOptions& options);
    /// Conv2d(1, 32, 3), as torch::nn::Conv2d(1, 32, 3).
    Conv2d(int64_t in_channels, int64_t out_channels, Size2 kernel_size)
        : Conv2d(Conv2dOptions{in_channels, out_channels, kernel_size}) {}
    Tensor forward(const Tensor& x) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "Conv2d"; }
    std::string extra_repr() const override;
    /// Draws fresh initial values from the default generator.
    void reset_parameters();
    /// The options given at construction.
    const Conv2dOptions& options() const { return options_; }

    Tensor weight;
    Tensor bias;  // undefined when options.bias is false

private:
    Conv2dOptions options_;
};

}  // namespace normnet
