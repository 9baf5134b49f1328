// LayerNorm, BatchNorm1d and RMSNorm: parameters and buffers under PyTorch's names, forward
// through the functional ops in ops/norm.cpp, PyTorch-identical repr.
#include "normnet/nn/norm.hpp"

#include "normnet/autograd.hpp"

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

// ---------------------------------------------------------------- BatchNorm1d

BatchNorm1d::BatchNorm1d(const BatchNorm1dOptions& options) : options_(options) {
    NORMNET_CHECK(options.num_features > 0, "BatchNorm1d: num_features must be positive, got ", options.num_features);
    if (options.affine) {
        weight = register_parameter("weight", empty({options.num_features}));
        bias = register_parameter("bias", empty({options.num_features}));
    }
    if (options.track_running_stats) {
        running_mean = register_buffer("running_mean", empty({options.num_features}));
        running_var = register_buffer("running_var", empty({options.num_features}));
        num_batches_tracked = register_buffer("num_batches_tracked", zeros(Shape{}, kInt64));
    }
    reset_parameters();
}

void BatchNorm1d::reset_running_stats() {
    if (!running_mean.defined()) return;
    running_mean.fill_(0.0f);
    running_var.fill_(1.0f);
    num_batches_tracked.fill_(0.0f);
}

void BatchNorm1d::reset_parameters() {
    reset_running_stats();
    if (weight.defined()) weight.detach().fill_(1.0f);
    if (bias.defined()) bias.detach().fill_(0.0f);
}

Tensor BatchNorm1d::forward(const Tensor& x) {
    NORMNET_CHECK(x.dim() == 2 || x.dim() == 3, "BatchNorm1d: expected 2D or 3D input (got ", x.dim(),
                  "D input of shape ", x.shape(), ")");
    NORMNET_CHECK(x.size(1) == options_.num_features, "BatchNorm1d: running_mean should contain ", x.size(1),
                  " elements not ", options_.num_features, " (input of shape ", x.shape(), ")");
    // As torch.nn.BatchNorm1d: training counts the batch before batch_norm runs (and may reject
    // it); without running statistics the batch's own statistics are used in eval mode too.
    int64_t batches = 0;
    if (is_training() && options_.track_running_stats) {
        batches = num_batches_tracked.item<int64_t>() + 1;
        NoGradGuard no_grad;
        num_batches_tracked.fill_(static_cast<double>(batches));
    }
    const bool batch_stats = is_training() || !options_.track_running_stats;
    return batch_norm(x, running_mean, running_var, weight, bias, batch_stats, options_.momentum, options_.eps, batches);
}

std::string BatchNorm1d::extra_repr() const {
    return std::to_string(options_.num_features) + ", eps=" + python_float_repr(options_.eps) +
           ", momentum=" + (options_.momentum ? python_float_repr(*options_.momentum) : std::string("None")) +
           ", affine=" + py_bool(options_.affine) + ", track_running_stats=" + py_bool(options_.track_running_stats);
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
