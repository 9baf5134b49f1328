// Pooling layers (torch.nn.MaxPool1d/2d, AvgPool1d/2d, AdaptiveAvgPool1d/2d, AdaptiveMaxPool1d/2d):
// options with PyTorch's defaults and repr, forward through the functional ops of ops/pooling.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

#include "normnet/arg.hpp"
#include "normnet/export.hpp"
#include "normnet/module.hpp"
#include "normnet/ops.hpp"

namespace normnet {

/// Options of MaxPool2d (torch.nn.MaxPool2d); a stride not given is the kernel size.
struct MaxPool2dOptions {
    using Self = MaxPool2dOptions;
    NORMNET_ARG(Size2, kernel_size) = {};
    NORMNET_ARG(Size2, stride) = {};  // not given: the kernel size
    NORMNET_ARG(Size2, padding) = 0;
    NORMNET_ARG(Size2, dilation) = 1;
    NORMNET_ARG(bool, ceil_mode) = false;
};

/// The maximum over each kernel_size window (max_pool2d).
class NORMNET_API MaxPool2d : public Cloneable<MaxPool2d> {
public:
    /// A layer from its options, e.g. MaxPool2d(MaxPool2dOptions{.kernel_size = 3, .stride = 2, .padding = 1}).
    explicit MaxPool2d(const MaxPool2dOptions& options);
    /// MaxPool2d(2), as torch::nn::MaxPool2d(2).
    explicit MaxPool2d(Size2 kernel_size) : MaxPool2d(MaxPool2dOptions{kernel_size}) {}
    Tensor forward(const Tensor& x) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    /// The output and the int64 index of each maximum in its input plane (torch's forward_with_indices).
    std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& x);
    std::string type_name() const override { return "MaxPool2d"; }
    std::string extra_repr() const override;
    /// The options given at construction.
    const MaxPool2dOptions& options() const { return options_; }

private:
    MaxPool2dOptions options_;
};

/// Options of AvgPool2d (torch.nn.AvgPool2d); a stride not given is the kernel size.
struct AvgPool2dOptions {
    using Self = AvgPool2dOptions;
    NORMNET_ARG(Size2, kernel_size) = {};
    NORMNET_ARG(Size2, stride) = {};  // not given: the kernel size
    NORMNET_ARG(Size2, padding) = 0;
    NORMNET_ARG(bool, ceil_mode) = false;
    NORMNET_ARG(bool, count_include_pad) = true;
    NORMNET_ARG(std::optional<int64_t>, divisor_override) = std::nullopt;
};

/// The mean over each kernel_size window (avg_pool2d).
class NORMNET_API AvgPool2d : public Cloneable<AvgPool2d> {
public:
    /// A layer from its options, e.g. AvgPool2d(AvgPool2dOptions{.kernel_size = 3, .count_include_pad = false}).
    explicit AvgPool2d(const AvgPool2dOptions& options);
    /// AvgPool2d(2), as torch::nn::AvgPool2d(2).
    explicit AvgPool2d(Size2 kernel_size) : AvgPool2d(AvgPool2dOptions{kernel_size}) {}
    Tensor forward(const Tensor& x) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "AvgPool2d"; }
    std::string extra_repr() const override;
    /// The options given at construction.
    const AvgPool2dOptions& options() const { return options_; }

private:
    AvgPool2dOptions options_;
};

/// Options of AdaptiveAvgPool2d (torch.nn.AdaptiveAvgPool2d).
struct AdaptiveAvgPool2dOptions {
    using Self = AdaptiveAvgPool2dOptions;
    NORMNET_ARG(Size2, output_size) = {};
};

/// The mean over output_size adaptive windows (adaptive_avg_pool2d), e.g. AdaptiveAvgPool2d(1)
/// for global average pooling.
class NORMNET_API AdaptiveAvgPool2d : public Cloneable<AdaptiveAvgPool2d> {
public:
    explicit AdaptiveAvgPool2d(const AdaptiveAvgPool2dOptions& options);
    /// AdaptiveAvgPool2d(1) or AdaptiveAvgPool2d({2, 3}), as torch::nn::AdaptiveAvgPool2d.
    explicit AdaptiveAvgPool2d(Size2 output_size) : AdaptiveAvgPool2d(AdaptiveAvgPool2dOptions{output_size}) {}
    Tensor forward(const Tensor& x) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "AdaptiveAvgPool2d"; }
    std::string extra_repr() const override;
    /// The options given at construction.
    const AdaptiveAvgPool2dOptions& options() const { return options_; }

private:
    AdaptiveAvgPool2dOptions options_;
};

/// Options of MaxPool1d (torch.nn.MaxPool1d); a stride not given is the kernel size.
struct MaxPool1dOptions {
    using Self = MaxPool1dOptions;
    NORMNET_ARG(int64_t, kernel_size) = 0;
    NORMNET_ARG(std::optional<int64_t>, stride) = std::nullopt;
    NORMNET_ARG(int64_t, padding) = 0;
    NORMNET_ARG(int64_t, dilation) = 1;
    NORMNET_ARG(bool, ceil_mode) = false;
};

/// The maximum over each window of [N, C, L] (max_pool1d).
class NORMNET_API MaxPool1d : public Cloneable<MaxPool1d> {
public:
    explicit MaxPool1d(const MaxPool1dOptions& options);
    /// MaxPool1d(2), as torch::nn::MaxPool1d(2).
    explicit MaxPool1d(int64_t kernel_size) : MaxPool1d(MaxPool1dOptions{kernel_size}) {}
    Tensor forward(const Tensor& x) override;
    std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& x);
    std::string type_name() const override { return "MaxPool1d"; }
    std::string extra_repr() const override;
    const MaxPool1dOptions& options() const { return options_; }

private:
    MaxPool1dOptions options_;
};

/// Options of AvgPool1d (torch.nn.AvgPool1d); a stride not given is the kernel size.
struct AvgPool1dOptions {
    using Self = AvgPool1dOptions;
    NORMNET_ARG(int64_t, kernel_size) = 0;
    NORMNET_ARG(std::optional<int64_t>, stride) = std::nullopt;
    NORMNET_ARG(int64_t, padding) = 0;
    NORMNET_ARG(bool, ceil_mode) = false;
    NORMNET_ARG(bool, count_include_pad) = true;
};

/// The mean over each window of [N, C, L] (avg_pool1d).
class NORMNET_API AvgPool1d : public Cloneable<AvgPool1d> {
public:
    explicit AvgPool1d(const AvgPool1dOptions& options);
    explicit AvgPool1d(int64_t kernel_size) : AvgPool1d(AvgPool1dOptions{kernel_size}) {}
    Tensor forward(const Tensor& x) override;
    std::string type_name() const override { return "AvgPool1d"; }
    std::string extra_repr() const override;
    const AvgPool1dOptions& options() const { return options_; }

private:
    AvgPool1dOptions options_;
};

/// Options of AdaptiveAvgPool1d and AdaptiveMaxPool1d.
struct AdaptiveAvgPool1dOptions {
    using Self = AdaptiveAvgPool1dOptions;
    NORMNET_ARG(int64_t, output_size) = 0;
};
using AdaptiveMaxPool1dOptions = AdaptiveAvgPool1dOptions;
/// Options of AdaptiveMaxPool2d (torch.nn.AdaptiveMaxPool2d).
using AdaptiveMaxPool2dOptions = AdaptiveAvgPool2dOptions;

/// The mean over output_size adaptive windows of [N, C, L] (adaptive_avg_pool1d).
class NORMNET_API AdaptiveAvgPool1d : public Cloneable<AdaptiveAvgPool1d> {
public:
    explicit AdaptiveAvgPool1d(const AdaptiveAvgPool1dOptions& options);
    explicit AdaptiveAvgPool1d(int64_t output_size) : AdaptiveAvgPool1d(AdaptiveAvgPool1dOptions{output_size}) {}
    Tensor forward(const Tensor& x) override;
    std::string type_name() const override { return "AdaptiveAvgPool1d"; }
    std::string extra_repr() const override;
    const AdaptiveAvgPool1dOptions& options() const { return options_; }

private:
    AdaptiveAvgPool1dOptions options_;
};

/// The maximum over output_size adaptive windows of [N, C, L] (adaptive_max_pool1d).
class NORMNET_API AdaptiveMaxPool1d : public Cloneable<AdaptiveMaxPool1d> {
public:
    explicit AdaptiveMaxPool1d(const AdaptiveMaxPool1dOptions& options);
    explicit AdaptiveMaxPool1d(int64_t output_size) : AdaptiveMaxPool1d(AdaptiveMaxPool1dOptions{output_size}) {}
    Tensor forward(const Tensor& x) override;
    std::string type_name() const override { return "AdaptiveMaxPool1d"; }
    std::string extra_repr() const override;
    const AdaptiveMaxPool1dOptions& options() const { return options_; }

private:
    AdaptiveMaxPool1dOptions options_;
};

/// The maximum over output_size adaptive windows of [N, C, H, W] (adaptive_max_pool2d).
class NORMNET_API AdaptiveMaxPool2d : public Cloneable<AdaptiveMaxPool2d> {
public:
    explicit AdaptiveMaxPool2d(const AdaptiveMaxPool2dOptions& options);
    /// AdaptiveMaxPool2d(1) or AdaptiveMaxPool2d({2, 3}).
    explicit AdaptiveMaxPool2d(Size2 output_size) : AdaptiveMaxPool2d(AdaptiveMaxPool2dOptions{output_size}) {}
    Tensor forward(const Tensor& x) override;
    /// The output and the int64 index of each maximum in its input plane.
    std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& x);
    std::string type_name() const override { return "AdaptiveMaxPool2d"; }
    std::string extra_repr() const override;
    const AdaptiveMaxPool2dOptions& options() const { return options_; }

private:
    AdaptiveMaxPool2dOptions options_;
};

}  // namespace normnet
