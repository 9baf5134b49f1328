// Dropout layers (torch.nn.Dropout, Dropout1d, Dropout2d, Dropout3d): forward through the
// functional dropouts, which draws from
// the default generator (manual_seed makes it reproducible) and does nothing in eval mode.
#pragma once

#include <string>

#include "normnet/arg.hpp"
#include "normnet/export.hpp"
#include "normnet/module.hpp"
#include "normnet/ops.hpp"

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

/// Options of Dropout1d, Dropout2d and Dropout3d (as libtorch's Dropout2dOptions = DropoutOptions).
using Dropout1dOptions = DropoutOptions;
using Dropout2dOptions = DropoutOptions;
using Dropout3dOptions = DropoutOptions;

/// The channel dropouts' shared parts, out of line: the check of p (naming the layer) and the repr.
struct NORMNET_API FeatureDropoutParts {
    static void check_probability(const char* layer, double p);
    static std::string repr(double p);
};

/// Channel dropout (dropout1d/2d/3d): in training, zeroes whole channels of a sample with
/// probability p and scales the rest by 1 / (1 - p); in eval mode returns its input.
template <class Derived, Tensor (*drop)(const Tensor&, double, bool, Generator&)>
class FeatureDropoutModule : public Cloneable<Derived> {
public:
    explicit FeatureDropoutModule(const DropoutOptions& options) : options_(options) {
        FeatureDropoutParts::check_probability(Derived::kName, options.p);
    }
    explicit FeatureDropoutModule(double p = 0.5) : FeatureDropoutModule(DropoutOptions{p}) {}
    Tensor forward(const Tensor& x) override { return drop(x, options_.p, this->is_training(), default_generator()); }
    std::string type_name() const override { return Derived::kName; }
    std::string extra_repr() const override { return FeatureDropoutParts::repr(options_.p); }
    const DropoutOptions& options() const { return options_; }

private:
    DropoutOptions options_;
};

/// Channel dropout of [N, C, L] or [C, L].
class NORMNET_API Dropout1d : public FeatureDropoutModule<Dropout1d, dropout1d> {
public:
    static constexpr const char* kName = "Dropout1d";
    using FeatureDropoutModule::FeatureDropoutModule;
};
/// Channel dropout of [N, C, H, W] (pytorch/examples' cpp/mnist puts one after its second conv).
class NORMNET_API Dropout2d : public FeatureDropoutModule<Dropout2d, dropout2d> {
public:
    static constexpr const char* kName = "Dropout2d";
    using FeatureDropoutModule::FeatureDropoutModule;
};
/// Channel dropout of [N, C, D, H, W] or [C, D, H, W].
class NORMNET_API Dropout3d : public FeatureDropoutModule<Dropout3d, dropout3d> {
public:
    static constexpr const char* kName = "Dropout3d";
    using FeatureDropoutModule::FeatureDropoutModule;
};
/// libtorch's earlier name of Dropout2d (examples written for libtorch 1.0-1.4 use it).
using FeatureDropout = Dropout2d;

}  // namespace normnet
