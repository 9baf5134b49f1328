// Linear and Identity: construction (PyTorch's names, shapes and initialisation), forward, repr.
#include "normnet/nn/linear.hpp"

#include <cmath>

#include "normnet/ops.hpp"
#include "repr.hpp"

namespace normnet {

using detail::py_bool;
using detail::py_tuple;
using detail::python_float_repr;


Linear::Linear(const LinearOptions& options) : options_(options) {
    NORMNET_CHECK(options.in_features > 0 && options.out_features > 0, "Linear: in_features (", options.in_features,
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

}  // namespace normnet
