// Linear layers (torch.nn.Linear, torch.nn.Identity): options with PyTorch's defaults,
// parameter names, shapes and initialisation as PyTorch's.
#pragma once

#include <cstdint>
#include <string>

#include "normnet/export.hpp"
#include "normnet/module.hpp"

namespace normnet {

/// Options of Linear (torch.nn.Linear).
struct LinearOptions {
    int64_t in_features = 0;
    int64_t out_features = 0;
    bool bias = true;
};

/// y = x W^T + b with weight [out_features, in_features] and bias [out_features], both
/// initialised from U(-1/sqrt(in_features), 1/sqrt(in_features)) as in PyTorch.
class NORMNET_API Linear : public Module {
public:
    /// A layer from its options, e.g. Linear(LinearOptions{.in_features = 784, .out_features = 300}).
    explicit Linear(const LinearOptions& options);
    /// Linear(784, 300), as torch::nn::Linear(784, 300).
    Linear(int64_t in_features, int64_t out_features, bool bias = true)
        : Linear(LinearOptions{in_features, out_features, bias}) {}
    Tensor forward(const Tensor& x) override;
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
class NORMNET_API Identity : public Module {
public:
    Tensor forward(const Tensor& x) override { return x; }
    std::string type_name() const override { return "Identity"; }
};

}  // namespace normnet
