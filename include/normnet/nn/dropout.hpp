// Dropout layers (torch.nn.Dropout): forward through the functional dropout, which draws from
// the default generator (manual_seed makes it reproducible) and does nothing in eval mode.
#pragma once

#include <string>

#include "normnet/arg.hpp"
#include "normnet/export.hpp"
#include "normnet/module.hpp"

namespace normnet {

/// Options of Dropout (torch.nn.Dropout); in-place dropout is not offered.
struct DropoutOptions {
    using Self = DropoutOptions;
    NORMNET_ARG(double, p) = 0.5;  // probability of zeroing an element, in [0, 1]
};

/// In training, zeroes each element with probability p and scales the rest by 1 / (1 - p); in
/// eval mode returns its input.
class NORMNET_API Dropout : public Cloneable<Dropout> {
public:
    explicit Dropout(const DropoutOptions& options);
    /// Dropout(0.2), as torch::nn::Dropout(0.2).
    explicit Dropout(double p = 0.5) : Dropout(DropoutOptions{p}) {}
    Tensor forward(const Tensor& x) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "Dropout"; }
    std::string extra_repr() const override;
    const DropoutOptions& options() const { return options_; }

private:
    DropoutOptions options_;
};

}  // namespace normnet
