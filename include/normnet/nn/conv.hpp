// Convolution layers (torch.nn.Conv1d, Conv2d, ConvTranspose2d): options with PyTorch's defaults,
// parameter names, shapes and initialisation as PyTorch's, forward through conv1d, conv2d and
// conv_transpose2d (ops/conv.cpp).
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

/// Options of Conv1d (torch.nn.Conv1d). padding also "same" or "valid"; padding_mode: only "zeros".
struct Conv1dOptions {
    using Self = Conv1dOptions;
    NORMNET_ARG(int64_t, in_channels) = 0;
    NORMNET_ARG(int64_t, out_channels) = 0;
    NORMNET_ARG(int64_t, kernel_size) = 0;
    NORMNET_ARG(int64_t, stride) = 1;
    NORMNET_ARG(Conv1dPadding, padding) = 0;
    NORMNET_ARG(int64_t, dilation) = 1;
    NORMNET_ARG(int64_t, groups) = 1;
    NORMNET_ARG(bool, bias) = true;
    NORMNET_ARG(std::string, padding_mode) = "zeros";
};

/// 1-D convolution of [N, C, L] (or [C, L]) input: weight [out_channels, in_channels / groups,
/// kernel_size] and bias [out_channels], initialised as Conv2d's (fan_in = in_channels / groups *
/// kernel_size).
class NORMNET_API Conv1d : public Cloneable<Conv1d> {
public:
    explicit Conv1d(const Conv1dOptions& options);
    /// Conv1d(1, 32, 3), as torch::nn::Conv1d(1, 32, 3).
    Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
        : Conv1d(Conv1dOptions{in_channels, out_channels, kernel_size}) {}
    Tensor forward(const Tensor& x) override;
    std::string type_name() const override { return "Conv1d"; }
    std::string extra_repr() const override;
    /// Draws fresh initial values from the default generator.
    void reset_parameters();
    const Conv1dOptions& options() const { return options_; }

    Tensor weight;
    Tensor bias;  // undefined when options.bias is false

private:
    Conv1dOptions options_;
};

/// Options of ConvTranspose2d (torch.nn.ConvTranspose2d), in PyTorch's order.
struct ConvTranspose2dOptions {
    using Self = ConvTranspose2dOptions;
    NORMNET_ARG(int64_t, in_channels) = 0;
    NORMNET_ARG(int64_t, out_channels) = 0;
    NORMNET_ARG(Size2, kernel_size) = {};
    NORMNET_ARG(Size2, stride) = 1;
    NORMNET_ARG(Size2, padding) = 0;
    NORMNET_ARG(Size2, output_padding) = 0;
    NORMNET_ARG(int64_t, groups) = 1;
    NORMNET_ARG(bool, bias) = true;
    NORMNET_ARG(Size2, dilation) = 1;
    NORMNET_ARG(std::string, padding_mode) = "zeros";
};

/// The transposed 2-D convolution (conv_transpose2d): weight [in_channels, out_channels / groups,
/// kH, kW] and bias [out_channels], initialised as PyTorch's (fan_in = out_channels / groups * kH *
/// kW, from the weight's second dim).
class NORMNET_API ConvTranspose2d : public Cloneable<ConvTranspose2d> {
public:
    explicit ConvTranspose2d(const ConvTranspose2dOptions& options);
    /// ConvTranspose2d(16, 8, 2), as torch::nn::ConvTranspose2d(16, 8, 2).
    ConvTranspose2d(int64_t in_channels, int64_t out_channels, Size2 kernel_size)
        : ConvTranspose2d(ConvTranspose2dOptions{in_channels, out_channels, kernel_size}) {}
    Tensor forward(const Tensor& x) override;
    std::string type_name() const override { return "ConvTranspose2d"; }
    std::string extra_repr() const override;
    void reset_parameters();
    const ConvTranspose2dOptions& options() const { return options_; }

    Tensor weight;
    Tensor bias;

private:
    ConvTranspose2dOptions options_;
};

}  // namespace normnet
