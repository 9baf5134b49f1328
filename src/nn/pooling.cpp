// MaxPool2d, AvgPool2d and AdaptiveAvgPool2d: options resolved as PyTorch's (stride defaults to
// the kernel size), forward through the functional ops, PyTorch-identical repr.
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

}  // namespace normnet
