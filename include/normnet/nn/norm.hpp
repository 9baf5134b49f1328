// Normalisation layers (torch.nn.LayerNorm, BatchNorm1d, RMSNorm): options with PyTorch's
// defaults, parameter and buffer names as PyTorch's, forward through the functional ops.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "normnet/export.hpp"
#include "normnet/module.hpp"

namespace normnet {

/// Options of LayerNorm (torch.nn.LayerNorm).
struct LayerNormOptions {
    std::vector<int64_t> normalized_shape;
    double eps = 1e-5;
    bool elementwise_affine = true;
    bool bias = true;  // only with elementwise_affine
};

/// Normalises each sample over its trailing normalized_shape dimensions (mean and biased
/// variance of that sample), then scales by weight (init 1) and shifts by bias (init 0).
class NORMNET_API LayerNorm : public Cloneable<LayerNorm> {
public:
    /// A layer from its options. Name the struct when using designated initialisers:
    /// LayerNorm(LayerNormOptions{.normalized_shape = {300}, .eps = 1e-5}); GCC 12 finds
    /// LayerNorm({.normalized_shape = {300}}) ambiguous.
    explicit LayerNorm(const LayerNormOptions& options);
    /// LayerNorm({300}), as torch::nn::LayerNorm(300).
    LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-5)
        : LayerNorm(LayerNormOptions{std::move(normalized_shape), eps}) {}
    Tensor forward(const Tensor& x) override;
    std::string type_name() const override { return "LayerNorm"; }
    std::string extra_repr() const override;
    /// Sets the parameters back to their initial values (weight 1, bias 0).
    void reset_parameters();
    /// The options given at construction.
    const LayerNormOptions& options() const { return options_; }

    Tensor weight;  // undefined without elementwise_affine
    Tensor bias;    // undefined without elementwise_affine or bias

private:
    LayerNormOptions options_;
};

/// Options of BatchNorm1d (torch.nn.BatchNorm1d). An empty momentum averages all batches
/// seen so far (PyTorch's momentum=None).
struct BatchNorm1dOptions {
    int64_t num_features = 0;
    double eps = 1e-5;
    std::optional<double> momentum = 0.1;
    bool affine = true;
    bool track_running_stats = true;
};

/// Normalises each channel over the batch (input [N, C] or [N, C, L]). Training uses the batch
/// statistics and updates running_mean/running_var/num_batches_tracked; eval uses the running ones.
class NORMNET_API BatchNorm1d : public Cloneable<BatchNorm1d> {
public:
    /// A layer from its options, e.g. BatchNorm1d(BatchNorm1dOptions{.num_features = 300, .momentum = {}}).
    explicit BatchNorm1d(const BatchNorm1dOptions& options);
    /// BatchNorm1d(300), as torch::nn::BatchNorm1d(300).
    explicit BatchNorm1d(int64_t num_features) : BatchNorm1d(BatchNorm1dOptions{num_features}) {}
    Tensor forward(const Tensor& x) override;
    std::string type_name() const override { return "BatchNorm1d"; }
    std::string extra_repr() const override;
    /// Sets weight 1, bias 0 and resets the running statistics.
    void reset_parameters();
    /// running_mean = 0, running_var = 1, num_batches_tracked = 0.
    void reset_running_stats();
    /// The options given at construction.
    const BatchNorm1dOptions& options() const { return options_; }

    Tensor weight, bias;                     // undefined without affine
    Tensor running_mean, running_var;        // undefined without track_running_stats
    Tensor num_batches_tracked;              // an int64 scalar, as in PyTorch

private:
    BatchNorm1dOptions options_;
};

/// Options of RMSNorm (torch.nn.RMSNorm). An empty eps means float32's machine epsilon.
struct RMSNormOptions {
    std::vector<int64_t> normalized_shape;
    std::optional<double> eps = std::nullopt;
    bool elementwise_affine = true;
};

/// x / sqrt(mean(x^2) + eps) * weight over the trailing normalized_shape dimensions.
class NORMNET_API RMSNorm : public Cloneable<RMSNorm> {
public:
    /// A layer from its options, e.g. RMSNorm(RMSNormOptions{.normalized_shape = {300}, .eps = 1e-6}).
    explicit RMSNorm(const RMSNormOptions& options);
    /// RMSNorm({300}), as torch.nn.RMSNorm(300).
    RMSNorm(std::vector<int64_t> normalized_shape) : RMSNorm(RMSNormOptions{std::move(normalized_shape)}) {}
    Tensor forward(const Tensor& x) override;
    std::string type_name() const override { return "RMSNorm"; }
    std::string extra_repr() const override;
    /// Sets the parameters back to their initial values (weight 1, bias 0).
    void reset_parameters();
    /// The options given at construction.
    const RMSNormOptions& options() const { return options_; }

    Tensor weight;  // undefined without elementwise_affine

private:
    RMSNormOptions options_;
};

}  // namespace normnet
