// Activation modules: options checked at construction, forward through the functional ops,
// extra_repr as PyTorch prints them.
#include "normnet/nn/activation.hpp"

#include <cmath>

#include "normnet/ops.hpp"
#include "repr.hpp"

namespace normnet {

using detail::python_float_repr;

Tensor ReLU::forward(const Tensor& x) { return relu(x); }

GELU::GELU(GELUOptions options) : options_(std::move(options)) {
    NORMNET_CHECK(options_.approximate == "none" || options_.approximate == "tanh",
                  "GELU: approximate must be 'none' or 'tanh', got '", options_.approximate, "'");
}
Tensor GELU::forward(const Tensor& x) { return gelu(x, options_.approximate); }
std::string GELU::extra_repr() const { return "approximate='" + options_.approximate + "'"; }

Tensor Tanh::forward(const Tensor& x) { return tanh(x); }
Tensor Sigmoid::forward(const Tensor& x) { return sigmoid(x); }
Tensor SiLU::forward(const Tensor& x) { return silu(x); }

LeakyReLU::LeakyReLU(LeakyReLUOptions options) : options_(options) {}
Tensor LeakyReLU::forward(const Tensor& x) { return leaky_relu(x, static_cast<float>(options_.negative_slope)); }
std::string LeakyReLU::extra_repr() const { return "negative_slope=" + python_float_repr(options_.negative_slope); }

ELU::ELU(ELUOptions options) : options_(options) {}
Tensor ELU::forward(const Tensor& x) { return elu(x, static_cast<float>(options_.alpha)); }
std::string ELU::extra_repr() const { return "alpha=" + python_float_repr(options_.alpha); }

Softplus::Softplus(SoftplusOptions options) : options_(options) {}
Tensor Softplus::forward(const Tensor& x) {
    return softplus(x, static_cast<float>(options_.beta), static_cast<float>(options_.threshold));
}
std::string Softplus::extra_repr() const {
    // PyTorch's defaults are ints (beta=1, threshold=20) and print so.
    const auto number = [](double v) {
        return v == std::floor(v) && std::abs(v) < 1e15 ? std::to_string(static_cast<long long>(v)) : python_float_repr(v);
    };
    return "beta=" + number(options_.beta) + ", threshold=" + number(options_.threshold);
}

Softmax::Softmax(SoftmaxOptions options) : options_(options) {}
Tensor Softmax::forward(const Tensor& x) { return softmax(x, options_.dim); }
std::string Softmax::extra_repr() const { return "dim=" + std::to_string(options_.dim); }

LogSoftmax::LogSoftmax(SoftmaxOptions options) : options_(options) {}
Tensor LogSoftmax::forward(const Tensor& x) { return log_softmax(x, options_.dim); }
std::string LogSoftmax::extra_repr() const { return "dim=" + std::to_string(options_.dim); }

Hardtanh::Hardtanh(const HardtanhOptions& options) : options_(options) {
    NORMNET_CHECK(options.max_val > options.min_val, "Hardtanh: max_val (", options.max_val,
                  ") must be greater than min_val (", options.min_val, ")");
}
Tensor Hardtanh::forward(const Tensor& x) {
    return hardtanh(x, static_cast<float>(options_.min_val), static_cast<float>(options_.max_val));
}
std::string Hardtanh::extra_repr() const {
    return "min_val=" + python_float_repr(options_.min_val) + ", max_val=" + python_float_repr(options_.max_val);
}

Tensor ReLU6::forward(const Tensor& x) { return relu6(x); }
Tensor SELU::forward(const Tensor& x) { return selu(x); }
Tensor Mish::forward(const Tensor& x) { return mish(x); }
Tensor Hardswish::forward(const Tensor& x) { return hardswish(x); }

PReLU::PReLU(const PReLUOptions& options) : options_(options) {
    NORMNET_CHECK(options.num_parameters > 0, "PReLU: num_parameters must be positive, got ", options.num_parameters);
    weight = register_parameter("weight", empty({options.num_parameters}));
    reset_parameters();
}
void PReLU::reset_parameters() { weight.detach().fill_(options_.init); }
Tensor PReLU::forward(const Tensor& x) { return prelu(x, weight); }
std::string PReLU::extra_repr() const { return "num_parameters=" + std::to_string(options_.num_parameters); }

}  // namespace normnet
