// Upsample (torch.nn.Upsample): interpolate (ops/upsample.cpp) as a layer, with PyTorch's options
// and printed form.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "normnet/arg.hpp"
#include "normnet/export.hpp"
#include "normnet/module.hpp"
#include "normnet/ops.hpp"

namespace normnet {

/// Options of Upsample (torch.nn.Upsample): the output's spatial size or the factor to scale by
/// (exactly one; one value stands for every spatial dim).
struct UpsampleOptions {
    using Self = UpsampleOptions;
    NORMNET_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
    NORMNET_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
    NORMNET_ARG(std::string, mode) = "nearest";  // "nearest", "linear" or "bilinear"
    NORMNET_ARG(std::optional<bool>, align_corners) = std::nullopt;
};

/// interpolate(x, size or scale_factor, mode, align_corners), printed as PyTorch's
/// Upsample(scale_factor=2.0, mode=nearest).
class NORMNET_API Upsample : public Cloneable<Upsample> {
public:
    explicit Upsample(const UpsampleOptions& options = {});
    Tensor forward(const Tensor& x) override;
    std::string type_name() const override { return "Upsample"; }
    std::string extra_repr() const override;
    const UpsampleOptions& options() const { return options_; }

private:
    UpsampleOptions options_;
};

}  // namespace normnet
