// The layer zoo: construction (PyTorch's parameter names, shapes and initialisation),
// forward through the functional ops, and PyTorch-identical repr text.
#include "normnet/layers.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "normnet/autograd.hpp"
#include "normnet/ops.hpp"

namespace normnet {
namespace {

const char* py_bool(bool b) { return b ? "True" : "False"; }

// "(300,)" or "(2, 3)", as Python prints a tuple of ints.
std::string py_tuple(const std::vector<int64_t>& v) {
    std::string s = "(";
    for (size_t i = 0; i < v.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(v[i]);
    }
    return s + (v.size() == 1 ? ",)" : ")");
}

void check_positive_shape(const std::vector<int64_t>& shape, const char* layer) {
    check(!shape.empty(), layer, ": normalized_shape must not be empty");
    for (int64_t s : shape) check(s > 0, layer, ": normalized_shape ", Shape(shape), " must be positive");
}

}  // namespace

std::string python_float_repr(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);  // shortest round-trip
    std::string sci(buf, res.ptr);
    const auto e = sci.find('e');
    std::string mantissa = sci.substr(0, e);
    const int exponent = std::atoi(sci.c_str() + e + 1);
    const bool negative = mantissa[0] == '-';
    if (negative) mantissa.erase(0, 1);
    std::string digits;
    for (char c : mantissa) {
        if (c != '.') digits += c;
    }
    std::string out;
    if (exponent >= -4 && exponent < 16) {
        // Fixed notation, always with a fractional part ("1.0", "0.001").
        if (exponent < 0) {
            out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
        } else if (static_cast<int>(digits.size()) <= exponent + 1) {
            out = digits + std::string(static_cast<size_t>(exponent + 1) - digits.size(), '0') + ".0";
        } else {
            out = digits.substr(0, static_cast<size_t>(exponent + 1)) + "." + digits.substr(static_cast<size_t>(exponent + 1));
        }
    } else {
        char exp_buf[16];
        std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
        out = mantissa + exp_buf;
    }
    return negative ? "-" + out : out;
}

// ---------------------------------------------------------------- Linear

Linear::Linear(const LinearOptions& options) : options_(options) {
    check(options.in_features > 0 && options.out_features > 0, "Linear: in_features (", options.in_features,
          ") and out_features (", options.out_features, ") must be positive");
    weight = register_parameter("weight", empty({options.out_features, options.in_features}));
    if (options.bias) bias = register_parameter("bias", empty({options.out_features}));
    reset_parameters();
}

void Linear::reset_parameters() {
    // PyTorch's kaiming_uniform_(a=sqrt(5)) reduces to U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
    const float bound = 1.0f / std::sqrt(static_cast<float>(options_.in_features));
    weight.detach().uniform_(-bound, bound);
    if (bias.defined()) bias.detach().uniform_(-bound, bound);
}

Tensor Linear::forward(const Tensor& x) { return linear(x, weight, bias); }

std::string Linear::extra_repr() const {
    return "in_features=" + std::to_string(options_.in_features) +
           ", out_features=" + std::to_string(options_.out_features) + ", bias=" + py_bool(options_.bias);
}

// ---------------------------------------------------------------- ReLU

Tensor ReLU::forward(const Tensor& x) { return relu(x); }

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
    check(options.num_features > 0, "BatchNorm1d: num_features must be positive, got ", options.num_features);
    if (options.affine) {
        weight = register_parameter("weight", empty({options.num_features}));
        bias = register_parameter("bias", empty({options.num_features}));
    }
    if (options.track_running_stats) {
        running_mean = register_buffer("running_mean", empty({options.num_features}));
        running_var = register_buffer("running_var", empty({options.num_features}));
        num_batches_tracked = register_buffer("num_batches_tracked", empty(Shape{}));
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
    check(x.dim() == 2 || x.dim() == 3, "BatchNorm1d: expected 2D or 3D input (got ", x.dim(), "D input of shape ",
          x.shape(), ")");
    check(x.size(1) == options_.num_features, "BatchNorm1d: running_mean should contain ", x.size(1),
          " elements not ", options_.num_features, " (input of shape ", x.shape(), ")");
    const bool update = is_training() && options_.track_running_stats;
    int64_t batches = 0;
    if (update) {
        // Checked before counting, so a rejected batch of one leaves the buffers untouched.
        check(x.size(0) * (x.dim() == 3 ? x.size(2) : 1) > 1,
              "Expected more than 1 value per channel when training, got input size ", x.shape());
        batches = static_cast<int64_t>(num_batches_tracked.item()) + 1;
        num_batches_tracked.fill_(static_cast<float>(batches));
    }
    const bool use_running = !is_training() && options_.track_running_stats;
    return batch_norm(x, update || use_running ? running_mean : Tensor(),
                      update || use_running ? running_var : Tensor(), weight, bias, !use_running, options_.momentum,
                      options_.eps, batches);
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

// ---------------------------------------------------------------- Sequential

Sequential::Sequential(std::initializer_list<AnyModule> modules) {
    for (const auto& m : modules) push_back(m);
}

void Sequential::push_back(AnyModule module) { add_child(std::to_string(size()), module.ptr()); }

Tensor Sequential::forward(const Tensor& x) {
    Tensor h = x;
    for (const auto& [name, child] : named_children()) h = child->forward(h);
    return h;
}

const std::shared_ptr<Module>& Sequential::operator[](size_t index) const {
    check(index < size(), "Sequential: index ", index, " is out of range for ", size(), " modules");
    return named_children()[index].second;
}

}  // namespace normnet
