// Normalisation layers (torch.nn.LayerNorm, BatchNorm1d, BatchNorm2d, InstanceNorm2d, GroupNorm,
// RMSNorm): options with PyTorch's defaults, parameter and buffer names as PyTorch's, forward
// through the functional ops.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "normnet/arg.hpp"
#include "normnet/export.hpp"
#include "normnet/module.hpp"

namespace normnet {

/// Options of LayerNorm (torch.nn.LayerNorm).
struct LayerNormOptions {
    using Self = LayerNormOptions;
    NORMNET_ARG(std::vector<int64_t>, normalized_shape);
    NORMNET_ARG(double, eps) = 1e-5;
    NORMNET_ARG(bool, elementwise_affine) = true;
    NORMNET_ARG(bool, bias) = true;  // only with elementwise_affine
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
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
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

/// Options of the BatchNorm layers (torch::nn::BatchNormOptions; BatchNorm1dOptions and
/// BatchNorm2dOptions are this struct, as in libtorch). An empty momentum averages all batches
/// seen so far (PyTorch's momentum=None).
struct BatchNormOptions {
    using Self = BatchNormOptions;
    NORMNET_ARG(int64_t, num_features) = 0;
    NORMNET_ARG(double, eps) = 1e-5;
    NORMNET_ARG(std::optional<double>, momentum) = 0.1;
    NORMNET_ARG(bool, affine) = true;
    NORMNET_ARG(bool, track_running_stats) = true;
};
using BatchNorm1dOptions = BatchNormOptions;
using BatchNorm2dOptions = BatchNormOptions;

/// What BatchNorm and InstanceNorm layers share (torch's _NormBase): weight (init 1) and bias
/// (init 0) of [num_features] with affine, running_mean (0), running_var (1) and the int64 scalar
/// num_batches_tracked with track_running_stats, and the repr
/// "32, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True".
class NORMNET_API NormBase : public Module {
public:
    std::string extra_repr() const override;
    /// Sets weight 1, bias 0 and resets the running statistics.
    void reset_parameters();
    /// running_mean = 0, running_var = 1, num_batches_tracked = 0.
    void reset_running_stats();

    Tensor weight, bias;               // undefined without affine
    Tensor running_mean, running_var;  // undefined without track_running_stats
    Tensor num_batches_tracked;        // an int64 scalar, as in PyTorch

protected:
    /// Registers the parameters and buffers `common` asks for; `layer` names the layer in messages.
    NormBase(const BatchNormOptions& common, const char* layer);
    /// clone() of a layer M derived from NormBase (as Cloneable<M> would: M(options()), then the
    /// state copied; these layers draw nothing at construction).
    template <class M>
    static std::shared_ptr<Module> clone_of(const M& self) {
        auto copy = std::make_shared<M>(self.options());
        copy->copy_state_from(self);
        return copy;
    }
    /// The options in BatchNormOptions' shape.
    const BatchNormOptions& common() const { return common_; }
    /// Throws unless x [N, C, ...] has num_features channels (torch's running_mean message).
    void check_channels(const Tensor& x, int channel_dim) const;

private:
    BatchNormOptions common_;
    const char* layer_;
};

/// BatchNorm1d and BatchNorm2d (torch's _BatchNorm): each channel normalised over the batch and
/// the trailing dimensions. Training uses the batch statistics and updates running_mean,
/// running_var and num_batches_tracked (counted before the batch is checked, as PyTorch); eval
/// uses the running ones (the batch's own without track_running_stats). The two layers differ
/// only in the input ranks they accept.
class NORMNET_API BatchNormBase : public NormBase {
public:
    Tensor forward(const Tensor& x) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    /// relu(max_pool2d(forward(x), 2)), a CNN block's norm -> MaxPool2d(2) -> ReLU, as one op
    /// where the norm's op fuses it (*_max_pool2d_relu); the same state updates as forward.
    Tensor forward_max_pool2d_relu(const Tensor& x);
    /// The options given at construction.
    const BatchNormOptions& options() const { return common(); }
    /// Training statistics over every rank of the process group (dist::sync_batch_norm) instead
    /// of this process's batch; set by dist::convert_sync_batchnorm. Eval mode is unaffected.
    void set_sync_stats(bool on) { sync_stats_ = on; }
    bool sync_stats() const { return sync_stats_; }

protected:
    BatchNormBase(const BatchNormOptions& options, const char* layer) : NormBase(options, layer) {}
    /// Throws unless x has a rank this layer accepts.
    virtual void check_input_dim(const Tensor& x) const = 0;

private:
    Tensor forward_impl(const Tensor& x, bool pool_relu);
    bool sync_stats_ = false;
};

/// BatchNorm over [N, C] or [N, C, L] input (torch.nn.BatchNorm1d).
class NORMNET_API BatchNorm1d : public BatchNormBase {
public:
    /// A layer from its options, e.g. BatchNorm1d(BatchNorm1dOptions{.num_features = 300, .momentum = {}}).
    explicit BatchNorm1d(const BatchNorm1dOptions& options) : BatchNormBase(options, "BatchNorm1d") {}
    /// BatchNorm1d(300), as torch::nn::BatchNorm1d(300).
    explicit BatchNorm1d(int64_t num_features) : BatchNorm1d(BatchNorm1dOptions{num_features}) {}
    std::string type_name() const override { return "BatchNorm1d"; }
    std::shared_ptr<Module> clone() const override { return clone_of(*this); }

protected:
    void check_input_dim(const Tensor& x) const override;
};

/// BatchNorm over [N, C, H, W] input (torch.nn.BatchNorm2d): statistics over N, H and W; a batch
/// with one value per channel (N x H x W == 1) is refused in training, as PyTorch.
class NORMNET_API BatchNorm2d : public BatchNormBase {
public:
    /// A layer from its options, e.g. BatchNorm2d(BatchNorm2dOptions{.num_features = 32, .affine = false}).
    explicit BatchNorm2d(const BatchNorm2dOptions& options) : BatchNormBase(options, "BatchNorm2d") {}
    /// BatchNorm2d(32), as torch::nn::BatchNorm2d(32).
    explicit BatchNorm2d(int64_t num_features) : BatchNorm2d(BatchNorm2dOptions{num_features}) {}
    std::string type_name() const override { return "BatchNorm2d"; }
    std::shared_ptr<Module> clone() const override { return clone_of(*this); }

protected:
    void check_input_dim(const Tensor& x) const override;
};

/// Options of InstanceNorm2d (torch::nn::InstanceNormOptions), with PyTorch's defaults: no
/// affine parameters, no running statistics. momentum is a number (torch's instance_norm
/// accepts no None).
struct InstanceNormOptions {
    using Self = InstanceNormOptions;
    NORMNET_ARG(int64_t, num_features) = 0;
    NORMNET_ARG(double, eps) = 1e-5;
    NORMNET_ARG(double, momentum) = 0.1;
    NORMNET_ARG(bool, affine) = false;
    NORMNET_ARG(bool, track_running_stats) = false;
};
using InstanceNorm2dOptions = InstanceNormOptions;

/// Normalises each (sample, channel) plane of [N, C, H, W] (or unbatched [C, H, W]) over its
/// H x W values (torch.nn.InstanceNorm2d). With track_running_stats, training also updates
/// running_mean/running_var (the batch's average of the instances' statistics) and eval uses
/// them; num_batches_tracked is registered but, as in PyTorch, not counted.
class NORMNET_API InstanceNorm2d : public NormBase {
public:
    /// A layer from its options, e.g. InstanceNorm2d(InstanceNorm2dOptions{.num_features = 32, .affine = true}).
    explicit InstanceNorm2d(const InstanceNorm2dOptions& options);
    /// InstanceNorm2d(32), as torch::nn::InstanceNorm2d(32).
    explicit InstanceNorm2d(int64_t num_features) : InstanceNorm2d(InstanceNorm2dOptions{num_features}) {}
    Tensor forward(const Tensor& x) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    /// relu(max_pool2d(forward(x), 2)), a CNN block's norm -> MaxPool2d(2) -> ReLU, as one op
    /// where the norm's op fuses it (*_max_pool2d_relu); the same state updates as forward.
    Tensor forward_max_pool2d_relu(const Tensor& x);
    std::string type_name() const override { return "InstanceNorm2d"; }
    std::shared_ptr<Module> clone() const override { return clone_of(*this); }
    /// The options given at construction.
    const InstanceNormOptions& options() const { return options_; }

private:
    InstanceNormOptions options_;
};

/// Options of GroupNorm (torch.nn.GroupNorm).
struct GroupNormOptions {
    using Self = GroupNormOptions;
    NORMNET_ARG(int64_t, num_groups) = 0;
    NORMNET_ARG(int64_t, num_channels) = 0;
    NORMNET_ARG(double, eps) = 1e-5;
    NORMNET_ARG(bool, affine) = true;
};

/// Group normalisation (torch.nn.GroupNorm, Wu and He 2018): the channels of each sample of
/// [N, C, *] fall into num_groups groups, each normalised over its channels and trailing
/// dimensions, then a per-channel weight [C] (init 1) and bias [C] (init 0). num_groups 1 is
/// the paper's LayerNorm, num_groups == num_channels InstanceNorm. Same in training and eval.
class NORMNET_API GroupNorm : public Cloneable<GroupNorm> {
public:
    /// A layer from its options, e.g. GroupNorm(GroupNormOptions{.num_groups = 2, .num_channels = 32, .affine = false}).
    explicit GroupNorm(const GroupNormOptions& options);
    /// GroupNorm(2, 32), as torch::nn::GroupNorm(2, 32).
    GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true)
        : GroupNorm(GroupNormOptions{num_groups, num_channels, eps, affine}) {}
    Tensor forward(const Tensor& x) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    /// relu(max_pool2d(forward(x), 2)), a CNN block's norm -> MaxPool2d(2) -> ReLU, as one op
    /// where the norm's op fuses it (*_max_pool2d_relu); the same state updates as forward.
    Tensor forward_max_pool2d_relu(const Tensor& x);
    std::string type_name() const override { return "GroupNorm"; }
    std::string extra_repr() const override;
    /// Sets weight 1, bias 0.
    void reset_parameters();
    /// The options given at construction.
    const GroupNormOptions& options() const { return options_; }

    Tensor weight, bias;  // [num_channels]; undefined without affine

private:
    GroupNormOptions options_;
};

/// Options of RMSNorm (torch.nn.RMSNorm). An empty eps means float32's machine epsilon.
struct RMSNormOptions {
    using Self = RMSNormOptions;
    NORMNET_ARG(std::vector<int64_t>, normalized_shape);
    NORMNET_ARG(std::optional<double>, eps) = std::nullopt;
    NORMNET_ARG(bool, elementwise_affine) = true;
};

/// x / sqrt(mean(x^2) + eps) * weight over the trailing normalized_shape dimensions.
class NORMNET_API RMSNorm : public Cloneable<RMSNorm> {
public:
    /// A layer from its options, e.g. RMSNorm(RMSNormOptions{.normalized_shape = {300}, .eps = 1e-6}).
    explicit RMSNorm(const RMSNormOptions& options);
    /// RMSNorm({300}), as torch.nn.RMSNorm(300).
    RMSNorm(std::vector<int64_t> normalized_shape) : RMSNorm(RMSNormOptions{std::move(normalized_shape)}) {}
    Tensor forward(const Tensor& x) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
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

namespace normnet {

/// BatchNorm over batch x time for sequences (PowerNorm's "BN in Transformers"): input [*, C]
/// (e.g. [N, T, C] or [T, N, C]) is normalised per channel C over all the leading positions
/// together, as BatchNorm1d over the [N * T, C] rows. The same options, parameters and buffers as
/// BatchNorm1d, so its state_dict loads into a torch.nn.BatchNorm1d applied to x.reshape(-1, C).
class NORMNET_API SequenceBatchNorm : public BatchNormBase {
public:
    explicit SequenceBatchNorm(const BatchNorm1dOptions& options) : BatchNormBase(options, "SequenceBatchNorm") {}
    explicit SequenceBatchNorm(int64_t num_features) : SequenceBatchNorm(BatchNorm1dOptions{num_features}) {}
    Tensor forward(const Tensor& x) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "SequenceBatchNorm"; }
    std::shared_ptr<Module> clone() const override { return clone_of(*this); }

protected:
    void check_input_dim(const Tensor& x) const override;
};

}  // namespace normnet
