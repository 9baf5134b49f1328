// Linear layers (torch.nn.Linear, Identity) and the reshaping layers libtorch keeps beside them
// (Flatten, Unflatten): options with PyTorch's defaults, parameter names, shapes and
// initialisation as PyTorch's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "normnet/arg.hpp"
#include "normnet/export.hpp"
#include "normnet/module.hpp"

namespace normnet {

/// Options of Linear (torch.nn.Linear).
struct LinearOptions {
    using Self = LinearOptions;
    NORMNET_ARG(int64_t, in_features) = 0;
    NORMNET_ARG(int64_t, out_features) = 0;
    NORMNET_ARG(bool, bias) = true;
};

/// y = x W^T + b with weight [out_features, in_features] and bias [out_features], both
/// initialised from U(-1/sqrt(in_features), 1/sqrt(in_features)) as in PyTorch.
class NORMNET_API Linear : public Cloneable<Linear> {
public:
    /// A layer from its options, e.g. Linear(LinearOptions{.in_features = 784, .out_features = 300}).
    explicit Linear(const LinearOptions& options);
    /// Linear(784, 300), as torch::nn::Linear(784, 300).
    Linear(int64_t in_features, int64_t out_features, bool bias = true)
        : Linear(LinearOptions{in_features, out_features, bias}) {}
    Tensor forward(const Tensor& x) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "Linear"; }
    std::string extra_repr() const override;
    /// Draws fresh initial values from the default generator.
    void reset_parameters();
    /// The options given at construction.
    const LinearOptions& options() const { return options_; }

    Tensor weight;
    Tensor bias;  // undefined when options.bias is false

private:
    LinearOptions options_;
};

/// Returns its input unchanged (a placeholder, e.g. for "no normalisation").
class NORMNET_API Identity : public Cloneable<Identity> {
public:
    Tensor forward(const Tensor& x) override { return x; }
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "Identity"; }
};

/// Options of Flatten (torch.nn.Flatten).
struct FlattenOptions {
    using Self = FlattenOptions;
    NORMNET_ARG(int64_t, start_dim) = 1;
    NORMNET_ARG(int64_t, end_dim) = -1;
};

/// Flattens dimensions start_dim..end_dim into one: [N, C, H, W] -> [N, C*H*W] by default.
class NORMNET_API Flatten : public Cloneable<Flatten> {
public:
    explicit Flatten(const FlattenOptions& options = {});
    /// Flatten(0, -1), as torch::nn::Flatten(FlattenOptions().start_dim(0)).
    Flatten(int64_t start_dim, int64_t end_dim = -1) : Flatten(FlattenOptions{start_dim, end_dim}) {}
    Tensor forward(const Tensor& x) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "Flatten"; }
    std::string extra_repr() const override;
    const FlattenOptions& options() const { return options_; }

private:
    FlattenOptions options_;
};

/// Options of Unflatten (torch.nn.Unflatten): dimension dim becomes `sizes` (one may be -1).
struct UnflattenOptions {
    using Self = UnflattenOptions;
    NORMNET_ARG(int64_t, dim) = 0;
    NORMNET_ARG(std::vector<int64_t>, sizes);
};

/// Splits one dimension into several: Unflatten(1, {2, 5}) maps [N, 10] to [N, 2, 5].
class NORMNET_API Unflatten : public Cloneable<Unflatten> {
public:
    explicit Unflatten(const UnflattenOptions& options);
    Unflatten(int64_t dim, std::vector<int64_t> sizes) : Unflatten(UnflattenOptions{dim, std::move(sizes)}) {}
    Tensor forward(const Tensor& x) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "Unflatten"; }
    std::string extra_repr() const override;
    const UnflattenOptions& options() const { return options_; }

private:
    UnflattenOptions options_;
};

}  // namespace normnet
