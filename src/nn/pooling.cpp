// The pooling layers: options resolved as PyTorch's (stride defaults to the kernel size), forward
// through the functional ops, PyTorch-identical repr.
#include "normnet/nn/pooling.hpp"

#include "repr.hpp"

namespace normnet {

using detail::py_bool;
using detail::py_int_or_pair;

namespace {
std::string py_size(const Size2& s) { return py_int_or_pair(s.h, s.w, s.single); }
}  // namespace

MaxPool2d::MaxPool2d(const MaxPool2dOptions& options) : options_(options) {
    if (!options_.stride.given) options_.stride = options_.kernel_size;
}

Tensor MaxPool2d::forward(const Tensor& x) {
    const auto& o = options_;
    return max_pool2d(x, o.kernel_size, o.stride, o.padding, o.dilation, o.ceil_mode);
}

std::tuple<Tensor, Tensor> MaxPool2d::forward_with_indices(const Tensor& x) {
    const auto& o = options_;
    return max_pool2d_with_indices(x, o.kernel_size, o.stride, o.padding, o.dilation, o.ceil_mode);
}

std::string MaxPool2d::extra_repr() const {
    const auto& o = options_;
    return "kernel_size=" + py_size(o.kernel_size) + ", stride=" + py_size(o.stride) + ", padding=" +
           py_size(o.padding) + ", dilation=" + py_size(o.dilation) + ", ceil_mode=" + py_bool(o.ceil_mode);
}

AvgPool2d::AvgPool2d(const AvgPool2dOptions& options) : options_(options) {
    if (!options_.stride.given) options_.stride = options_.kernel_size;
}

Tensor AvgPool2d::forward(const Tensor& x) {
    const auto& o = options_;
    return avg_pool2d(x, o.kernel_size, o.stride, o.padding, o.ceil_mode, o.count_include_pad, o.divisor_override);
}

std::string AvgPool2d::extra_repr() const {
    const auto& o = options_;
    return "kernel_size=" + py_size(o.kernel_size) + ", stride=" + py_size(o.stride) + ", padding=" + py_size(o.padding);
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(const AdaptiveAvgPool2dOptions& options) : options_(options) {
    NORMNET_CHECK(options.output_size.given && options.output_size.h >= 0 && options.output_size.w >= 0,
                  "AdaptiveAvgPool2d: output_size must be given and not negative");
}

Tensor AdaptiveAvgPool2d::forward(const Tensor& x) { return adaptive_avg_pool2d(x, options_.output_size); }

std::string AdaptiveAvgPool2d::extra_repr() const { return "output_size=" + py_size(options_.output_size); }

MaxPool1d::MaxPool1d(const MaxPool1dOptions& options) : options_(options) {
    if (!options_.stride) options_.stride = options_.kernel_size;
}
Tensor MaxPool1d::forward(const Tensor& x) {
    const auto& o = options_;
    return max_pool1d(x, o.kernel_size, o.stride, o.padding, o.dilation, o.ceil_mode);
}
std::tuple<Tensor, Tensor> MaxPool1d::forward_with_indices(const Tensor& x) {
    const auto& o = options_;
    return max_pool1d_with_indices(x, o.kernel_size, o.stride, o.padding, o.dilation, o.ceil_mode);
}
std::string MaxPool1d::extra_repr() const {
    const auto& o = options_;
    return "kernel_size=" + std::to_string(o.kernel_size) + ", stride=" + std::to_string(*o.stride) +
           ", padding=" + std::to_string(o.padding) + ", dilation=" + std::to_string(o.dilation) +
           ", ceil_mode=" + py_bool(o.ceil_mode);
}

AvgPool1d::AvgPool1d(const AvgPool1dOptions& options) : options_(options) {
    if (!options_.stride) options_.stride = options_.kernel_size;
}
Tensor AvgPool1d::forward(const Tensor& x) {
    const auto& o = options_;
    return avg_pool1d(x, o.kernel_size, o.stride, o.padding, o.ceil_mode, o.count_include_pad);
}
std::string AvgPool1d::extra_repr() const {
    // torch keeps AvgPool1d's sizes as 1-tuples.
    const auto& o = options_;
    return "kernel_size=" + detail::py_tuple({o.kernel_size}) + ", stride=" + detail::py_tuple({*o.stride}) +
           ", padding=" + detail::py_tuple({o.padding});
}

AdaptiveAvgPool1d::AdaptiveAvgPool1d(const AdaptiveAvgPool1dOptions& options) : options_(options) {
    NORMNET_CHECK(options.output_size >= 0, "AdaptiveAvgPool1d: output_size must not be negative");
}
Tensor AdaptiveAvgPool1d::forward(const Tensor& x) { return adaptive_avg_pool1d(x, options_.output_size); }
std::string AdaptiveAvgPool1d::extra_repr() const { return "output_size=" + std::to_string(options_.output_size); }

AdaptiveMaxPool1d::AdaptiveMaxPool1d(const AdaptiveMaxPool1dOptions& options) : options_(options) {
    NORMNET_CHECK(options.output_size >= 0, "AdaptiveMaxPool1d: output_size must not be negative");
}
Tensor AdaptiveMaxPool1d::forward(const Tensor& x) { return adaptive_max_pool1d(x, options_.output_size); }
std::string AdaptiveMaxPool1d::extra_repr() const { return "output_size=" + std::to_string(options_.output_size); }

AdaptiveMaxPool2d::AdaptiveMaxPool2d(const AdaptiveMaxPool2dOptions& options) : options_(options) {
    NORMNET_CHECK(options.output_size.given && options.output_size.h >= 0 && options.output_size.w >= 0,
                  "AdaptiveMaxPool2d: output_size must be given and not negative");
}
Tensor AdaptiveMaxPool2d::forward(const Tensor& x) { return adaptive_max_pool2d(x, options_.output_size); }
std::tuple<Tensor, Tensor> AdaptiveMaxPool2d::forward_with_indices(const Tensor& x) {
    return adaptive_max_pool2d_with_indices(x, options_.output_size);
}
std::string AdaptiveMaxPool2d::extra_repr() const { return "output_size=" + py_size(options_.output_size); }

}  // namespace normnet
