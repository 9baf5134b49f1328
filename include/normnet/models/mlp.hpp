// MLP: the seed model of normnet, a multi-layer perceptron with a normalisation after each hidden
// ReLU (784-300-100-10 with LayerNorm by default).
#pragma once

#include <cstdint>
#include <vector>

#include "normnet/arg.hpp"
#include "normnet/export.hpp"
#include "normnet/module.hpp"
#include "normnet/nn/norm_choice.hpp"

namespace normnet::models {

/// Options of MLP; the defaults are the seed model.
struct MLPOptions {
    using Self = MLPOptions;
    NORMNET_ARG(int64_t, in_features) = 784;
    NORMNET_ARG(std::vector<int64_t>, hidden) = {300, 100};
    NORMNET_ARG(int64_t, num_classes) = 10;
    NORMNET_ARG(Norm, norm) = NormKind::layer;  // after each hidden ReLU: layer, batch, rms or none
};

/// Linear -> ReLU -> norm for each hidden size, then the output Linear, as children "0", "1", ...
/// so that the state_dict is that of the torch.nn.Sequential of the same layers (no module for
/// norm "none"). The norm layers draw no random numbers: one seed gives the same Linear weights
/// whatever the normalisation.
class NORMNET_API MLP : public Cloneable<MLP> {
public:
    explicit MLP(const MLPOptions& options = {});
    /// x: [N, in_features] -> logits [N, num_classes].
    Tensor forward(const Tensor& x) override;
    std::string type_name() const override { return "MLP"; }
    /// Its children in order, as the torch.nn.Sequential of the same layers exports.
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    const MLPOptions& options() const { return options_; }

private:
    MLPOptions options_;
};

}  // namespace normnet::models
