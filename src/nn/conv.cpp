// Conv1d, Conv2d, ConvTranspose2d: construction (PyTorch's names, shapes and initialisation), forward, repr.
#include "normnet/nn/conv.hpp"

#include <algorithm>
#include <cmath>

#include "repr.hpp"

namespace normnet {

using detail::py_bool;
using detail::py_tuple;

Conv2d::Conv2d(const Conv2dOptions& options) : options_(options) {
    const auto& o = options;
    NORMNET_CHECK(o.in_channels > 0 && o.out_channels > 0, "Conv2d: in_channels (", o.in_channels,
                  ") and out_channels (", o.out_channels, ") must be positive");
    NORMNET_CHECK(o.kernel_size.h > 0 && o.kernel_size.w > 0, "Conv2d: kernel_size must be positive, got (",
                  o.kernel_size.h, ", ", o.kernel_size.w, ")");
    NORMNET_CHECK(o.groups > 0, "Conv2d: groups must be a positive integer, got ", o.groups);
    NORMNET_CHECK(o.in_channels % o.groups == 0, "Conv2d: in_channels must be divisible by groups (got ",
                  o.in_channels, " and ", o.groups, ")");
    NORMNET_CHECK(o.out_channels % o.groups == 0, "Conv2d: out_channels must be divisible by groups (got ",
                  o.out_channels, " and ", o.groups, ")");
    NORMNET_CHECK(o.padding.mode != Conv2dPadding::Mode::same || (o.stride.h == 1 && o.stride.w == 1),
                  "Conv2d: padding='same' is not supported for strided convolutions");
    if (o.padding_mode == "reflect" || o.padding_mode == "replicate" || o.padding_mode == "circular") {
        fail("Conv2d: padding_mode='", o.padding_mode, "' is not supported (only 'zeros' is)");
    }
    NORMNET_CHECK(o.padding_mode == "zeros",
                  "Conv2d: padding_mode must be one of ['zeros', 'reflect', 'replicate', 'circular'], but got "
                  "padding_mode='", o.padding_mode, "'");
    weight = register_parameter("weight",
                                empty({o.out_channels, o.in_channels / o.groups, o.kernel_size.h, o.kernel_size.w}));
    if (o.bias) bias = register_parameter("bias", empty({o.out_channels}));
    reset_parameters();
}

void Conv2d::reset_parameters() {
    // PyTorch's kaiming_uniform_(a=sqrt(5)) reduces to U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and
    // the bias uses the same bound.
    const int64_t fan_in = weight.size(1) * weight.size(2) * weight.size(3);
    const float bound = 1.0f / std::sqrt(static_cast<float>(fan_in));
    weight.detach().uniform_(-bound, bound);
    if (bias.defined()) bias.detach().uniform_(-bound, bound);
}

Tensor Conv2d::forward(const Tensor& x) {
    const auto& o = options_;
    return conv2d(x, weight, bias, o.stride, o.padding, o.dilation, o.groups);
}

std::string Conv2d::extra_repr() const {
    // As torch's _ConvNd.extra_repr: sizes as pairs, the settings at their defaults left out.
    const auto& o = options_;
    std::string s = std::to_string(o.in_channels) + ", " + std::to_string(o.out_channels) +
                    ", kernel_size=" + py_tuple({o.kernel_size.h, o.kernel_size.w}) +
                    ", stride=" + py_tuple({o.stride.h, o.stride.w});
    switch (o.padding.mode) {
        case Conv2dPadding::Mode::same: s += ", padding=same"; break;
        case Conv2dPadding::Mode::valid: s += ", padding=valid"; break;
        case Conv2dPadding::Mode::sizes:
            if (o.padding.size.h != 0 || o.padding.size.w != 0) {
                s += ", padding=" + py_tuple({o.padding.size.h, o.padding.size.w});
            }
            break;
    }
    if (o.dilation.h != 1 || o.dilation.w != 1) s += ", dilation=" + py_tuple({o.dilation.h, o.dilation.w});
    if (o.groups != 1) s += ", groups=" + std::to_string(o.groups);
    if (!o.bias) s += ", bias=" + std::string(py_bool(false));
    return s;
}

namespace {

// The checks the convolution layers share, naming the layer.
void check_channels(const char* layer, int64_t in, int64_t out, int64_t groups, const std::string& padding_mode) {
    NORMNET_CHECK(in > 0 && out > 0, layer, ": in_channels (", in, ") and out_channels (", out, ") must be positive");
    NORMNET_CHECK(groups > 0, layer, ": groups must be a positive integer, got ", groups);
    NORMNET_CHECK(in % groups == 0, layer, ": in_channels must be divisible by groups (got ", in, " and ", groups, ")");
    NORMNET_CHECK(out % groups == 0, layer, ": out_channels must be divisible by groups (got ", out, " and ", groups, ")");
    NORMNET_CHECK(padding_mode == "zeros", layer, ": padding_mode='", padding_mode,
                  "' is not supported (only 'zeros' is)");
}

// PyTorch's kaiming_uniform_(a=sqrt(5)) and bias rule: U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in
// the weight's dim 1 times its kernel.
void init_uniform(Tensor& weight, Tensor& bias) {
    const int64_t fan_in = weight.numel() / std::max<int64_t>(weight.size(0), 1);
    const float bound = 1.0f / std::sqrt(static_cast<float>(fan_in));
    weight.detach().uniform_(-bound, bound);
    if (bias.defined()) bias.detach().uniform_(-bound, bound);
}

}  // namespace

Conv1d::Conv1d(const Conv1dOptions& options) : options_(options) {
    const auto& o = options;
    check_channels("Conv1d", o.in_channels, o.out_channels, o.groups, o.padding_mode);
    NORMNET_CHECK(o.kernel_size > 0, "Conv1d: kernel_size must be positive, got ", o.kernel_size);
    NORMNET_CHECK(o.padding.mode != Conv2dPadding::Mode::same || o.stride == 1,
                  "Conv1d: padding='same' is not supported for strided convolutions");
    weight = register_parameter("weight", empty({o.out_channels, o.in_channels / o.groups, o.kernel_size}));
    if (o.bias) bias = register_parameter("bias", empty({o.out_channels}));
    reset_parameters();
}

void Conv1d::reset_parameters() { init_uniform(weight, bias); }

Tensor Conv1d::forward(const Tensor& x) {
    const auto& o = options_;
    return conv1d(x, weight, bias, o.stride, o.padding, o.dilation, o.groups);
}

std::string Conv1d::extra_repr() const {
    const auto& o = options_;
    std::string s = std::to_string(o.in_channels) + ", " + std::to_string(o.out_channels) +
                    ", kernel_size=" + py_tuple({o.kernel_size}) + ", stride=" + py_tuple({o.stride});
    switch (o.padding.mode) {
        case Conv2dPadding::Mode::same: s += ", padding=same"; break;
        case Conv2dPadding::Mode::valid: s += ", padding=valid"; break;
        case Conv2dPadding::Mode::sizes:
            if (o.padding.size != 0) s += ", padding=" + py_tuple({o.padding.size});
            break;
    }
    if (o.dilation != 1) s += ", dilation=" + py_tuple({o.dilation});
    if (o.groups != 1) s += ", groups=" + std::to_string(o.groups);
    if (!o.bias) s += ", bias=" + std::string(py_bool(false));
    return s;
}

ConvTranspose2d::ConvTranspose2d(const ConvTranspose2dOptions& options) : options_(options) {
    const auto& o = options;
    check_channels("ConvTranspose2d", o.in_channels, o.out_channels, o.groups, o.padding_mode);
    NORMNET_CHECK(o.kernel_size.h > 0 && o.kernel_size.w > 0, "ConvTranspose2d: kernel_size must be positive, got (",
                  o.kernel_size.h, ", ", o.kernel_size.w, ")");
    weight = register_parameter("weight",
                                empty({o.in_channels, o.out_channels / o.groups, o.kernel_size.h, o.kernel_size.w}));
    if (o.bias) bias = register_parameter("bias", empty({o.out_channels}));
    reset_parameters();
}

void ConvTranspose2d::reset_parameters() { init_uniform(weight, bias); }

Tensor ConvTranspose2d::forward(const Tensor& x) {
    const auto& o = options_;
    return conv_transpose2d(x, weight, bias, o.stride, o.padding, o.output_padding, o.groups, o.dilation);
}

std::string ConvTranspose2d::extra_repr() const {
    // As torch's _ConvNd.extra_repr: padding, dilation, output_padding when not zero/one.
    const auto& o = options_;
    const auto pair = [](const Size2& v) { return py_tuple({v.h, v.w}); };
    std::string s = std::to_string(o.in_channels) + ", " + std::to_string(o.out_channels) +
                    ", kernel_size=" + pair(o.kernel_size) + ", stride=" + pair(o.stride);
    if (o.padding.h != 0 || o.padding.w != 0) s += ", padding=" + pair(o.padding);
    if (o.dilation.h != 1 || o.dilation.w != 1) s += ", dilation=" + pair(o.dilation);
    if (o.output_padding.h != 0 || o.output_padding.w != 0) s += ", output_padding=" + pair(o.output_padding);
    if (o.groups != 1) s += ", groups=" + std::to_string(o.groups);
    if (!o.bias) s += ", bias=" + std::string(py_bool(false));
    return s;
}

}  // namespace normnet
