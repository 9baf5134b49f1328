// LayerNorm, the BatchNorm and InstanceNorm layers, GroupNorm and RMSNorm: parameters and
// buffers under PyTorch's names, forward through the functional ops in ops/norm.cpp,
// PyTorch-identical repr.
#include "normnet/nn/norm.hpp"

#include "normnet/autograd.hpp"
#include "normnet/dist.hpp"

#include "normnet/ops.hpp"
#include "repr.hpp"

namespace normnet {

using detail::py_bool;
using detail::py_tuple;
using detail::python_float_repr;

namespace {
void check_positive_shape(const std::vector<int64_t>& shape, const char* layer) {
    NORMNET_CHECK(!shape.empty(), layer, ": normalized_shape must not be empty");
    for (int64_t s : shape) NORMNET_CHECK(s > 0, layer, ": normalized_shape ", Shape(shape), " must be positive");
}
}  // namespace

// ---------------------------------------------------------------- LayerNorm

LayerNorm::LayerNorm(const LayerNormOptions& options) : options_(options) {
    check_positive_shape(options.normalized_shape, "LayerNorm");
    if (options.elementwise_affine) {
        weight = register_parameter("weight", empty(Shape(options.normalized_shape)));
        if (options.bias) bias = register_parameter("bias", empty(Shape(options.normalized_shape)));
    }
    reset_parameters();
}

void LayerNorm::reset_parameters() {
    if (weight.defined()) weight.detach().fill_(1.0f);
    if (bias.defined()) bias.detach().fill_(0.0f);
}

Tensor LayerNorm::forward(const Tensor& x) {
    return layer_norm(x, options_.normalized_shape, weight, bias, options_.eps);
}

std::string LayerNorm::extra_repr() const {
    return py_tuple(options_.normalized_shape) + ", eps=" + python_float_repr(options_.eps) +
           ", elementwise_affine=" + py_bool(options_.elementwise_affine);
}

// ---------------------------------------------------------------- NormBase

NormBase::NormBase(const BatchNormOptions& common, const char* layer) : common_(common), layer_(layer) {
    NORMNET_CHECK(common.num_features > 0, layer, ": num_features must be positive, got ", common.num_features);
    if (common.affine) {
        weight = register_parameter("weight", empty({common.num_features}));
        bias = register_parameter("bias", empty({common.num_features}));
    }
    if (common.track_running_stats) {
        running_mean = register_buffer("running_mean", empty({common.num_features}));
        running_var = register_buffer("running_var", empty({common.num_features}));
        num_batches_tracked = register_buffer("num_batches_tracked", zeros(Shape{}, kInt64));
    }
    reset_parameters();
}

void NormBase::reset_running_stats() {
    if (!running_mean.defined()) return;
    running_mean.fill_(0.0f);
    running_var.fill_(1.0f);
    num_batches_tracked.fill_(0.0f);
}

void NormBase::reset_parameters() {
    reset_running_stats();
    if (weight.defined()) weight.detach().fill_(1.0f);
    if (bias.defined()) bias.detach().fill_(0.0f);
}

void NormBase::check_channels(const Tensor& x, int channel_dim) const {
    NORMNET_CHECK(x.size(channel_dim) == common_.num_features, layer_, ": running_mean should contain ",
                  x.size(channel_dim), " elements not ", common_.num_features, " (input of shape ", x.shape(), ")");
}

std::string NormBase::extra_repr() const {
    const auto& o = common_;
    return std::to_string(o.num_features) + ", eps=" + python_float_repr(o.eps) +
           ", momentum=" + (o.momentum ? python_float_repr(*o.momentum) : std::string("None")) +
           ", affine=" + py_bool(o.affine) + ", track_running_stats=" + py_bool(o.track_running_stats);
}

// ---------------------------------------------------------------- BatchNorm1d, BatchNorm2d

Tensor BatchNormBase::forward(const Tensor& x) { return forward_impl(x, false); }

Tensor BatchNormBase::forward_max_pool2d_relu(const Tensor& x) { return forward_impl(x, true); }

Tensor BatchNormBase::forward_impl(const Tensor& x, bool pool_relu) {
    check_input_dim(x);
    check_channels(x, 1);
    const BatchNormOptions& o = options();
    // As torch.nn's _BatchNorm: training counts the batch before batch_norm runs (and may reject
    // it); without running statistics the batch's own statistics are used in eval mode too.
    int64_t batches = 0;
    if (is_training() && o.track_running_stats) {
        batches = num_batches_tracked.item<int64_t>() + 1;
        NoGradGuard no_grad;
        num_batches_tracked.fill_(static_cast<double>(batches));
    }
    const bool batch_stats = is_training() || !o.track_running_stats;
    // As torch.nn.SyncBatchNorm: synchronised in training only.
    if (is_training() && sync_stats_) {
        const Tensor y = dist::sync_batch_norm(x, running_mean, running_var, weight, bias, o.momentum, o.eps, batches);
        return pool_relu ? relu(max_pool2d(y, 2)) : y;
    }
    if (pool_relu) {
        return batch_norm_max_pool2d_relu(x, running_mean, running_var, weight, bias, batch_stats, o.momentum, o.eps,
                                          batches);
    }
    return batch_norm(x, running_mean, running_var, weight, bias, batch_stats, o.momentum, o.eps, batches);
}

void BatchNorm1d::check_input_dim(const Tensor& x) const {
    NORMNET_CHECK(x.dim() == 2 || x.dim() == 3, "BatchNorm1d: expected 2D or 3D input (got ", x.dim(),
                  "D input of shape ", x.shape(), ")");
}

void BatchNorm2d::check_input_dim(const Tensor& x) const {
    NORMNET_CHECK(x.dim() == 4, "BatchNorm2d: expected 4D input (got ", x.dim(), "D input of shape ", x.shape(), ")");
}

// ---------------------------------------------------------------- InstanceNorm2d

InstanceNorm2d::InstanceNorm2d(const InstanceNorm2dOptions& options)
    : NormBase(BatchNormOptions{options.num_features, options.eps, options.momentum, options.affine,
                                options.track_running_stats},
               "InstanceNorm2d"),
      options_(options) {}

Tensor InstanceNorm2d::forward(const Tensor& x) {
    NORMNET_CHECK(x.dim() == 3 || x.dim() == 4, "InstanceNorm2d: expected 3D or 4D input (got ", x.dim(),
                  "D input of shape ", x.shape(), ")");
    if (x.dim() == 3) {
        // Unbatched [C, H, W], as torch: a batch of one.
        const Tensor y = forward(x.reshape({1, x.size(0), x.size(1), x.size(2)}));
        return y.view(x.shape());
    }
    // torch only warns about a channel count other than num_features when there is nothing per
    // channel (no affine, no running statistics); then the layer works for any count.
    if (options_.affine || options_.track_running_stats) check_channels(x, 1);
    const bool input_stats = is_training() || !options_.track_running_stats;
    return instance_norm(x, running_mean, running_var, weight, bias, input_stats, options_.momentum, options_.eps);
}

Tensor InstanceNorm2d::forward_max_pool2d_relu(const Tensor& x) {
    // Without running statistics InstanceNorm is group_norm with a group per channel (an empty
    // batch goes through forward, which says whether torch would take it).
    if (x.dim() == 4 && !options_.track_running_stats && x.size(0) > 0) {
        if (options_.affine) check_channels(x, 1);
        NORMNET_CHECK(x.size(2) * x.size(3) > 1, "Expected more than 1 spatial element when training, got input size ",
                      x.shape());
        return group_norm_max_pool2d_relu(x, x.size(1), weight, bias, options_.eps);
    }
    return relu(max_pool2d(forward(x), 2));
}

// ---------------------------------------------------------------- GroupNorm

GroupNorm::GroupNorm(const GroupNormOptions& options) : options_(options) {
    NORMNET_CHECK(options.num_groups > 0 && options.num_channels > 0, "GroupNorm: num_groups (", options.num_groups,
                  ") and num_channels (", options.num_channels, ") must be positive");
    NORMNET_CHECK(options.num_channels % options.num_groups == 0,
                  "GroupNorm: num_channels must be divisible by num_groups (got ", options.num_channels, " and ",
                  options.num_groups, ")");
    if (options.affine) {
        weight = register_parameter("weight", empty({options.num_channels}));
        bias = register_parameter("bias", empty({options.num_channels}));
    }
    reset_parameters();
}

void GroupNorm::reset_parameters() {
    if (weight.defined()) weight.detach().fill_(1.0f);
    if (bias.defined()) bias.detach().fill_(0.0f);
}

Tensor GroupNorm::forward(const Tensor& x) {
    return group_norm(x, options_.num_groups, weight, bias, options_.eps);
}

Tensor GroupNorm::forward_max_pool2d_relu(const Tensor& x) {
    return group_norm_max_pool2d_relu(x, options_.num_groups, weight, bias, options_.eps);
}

std::string GroupNorm::extra_repr() const {
    return std::to_string(options_.num_groups) + ", " + std::to_string(options_.num_channels) +
           ", eps=" + python_float_repr(options_.eps) + ", affine=" + py_bool(options_.affine);
}

// ---------------------------------------------------------------- RMSNorm

RMSNorm::RMSNorm(const RMSNormOptions& options) : options_(options) {
    check_positive_shape(options.normalized_shape, "RMSNorm");
    if (options.elementwise_affine) weight = register_parameter("weight", empty(Shape(options.normalized_shape)));
    reset_parameters();
}

void RMSNorm::reset_parameters() {
    if (weight.defined()) weight.detach().fill_(1.0f);
}

Tensor RMSNorm::forward(const Tensor& x) { return rms_norm(x, options_.normalized_shape, weight, options_.eps); }

std::string RMSNorm::extra_repr() const {
    return py_tuple(options_.normalized_shape) +
           ", eps=" + (options_.eps ? python_float_repr(*options_.eps) : std::string("None")) +
           ", elementwise_affine=" + py_bool(options_.elementwise_affine);
}

}  // namespace normnet

// ---------------------------------------------------------------- SequenceBatchNorm

namespace normnet {

void SequenceBatchNorm::check_input_dim(const Tensor& x) const {
    NORMNET_CHECK(x.dim() >= 2, "SequenceBatchNorm: expected input [*, C] of at least 2 dimensions (got ", x.dim(),
                  "D input of shape ", x.shape(), ")");
}

Tensor SequenceBatchNorm::forward(const Tensor& x) {
    check_input_dim(x);
    const int64_t C = x.size(x.dim() - 1);
    return BatchNormBase::forward(x.reshape({-1, C})).reshape(x.shape());
}

}  // namespace normnet
