// Linear and Identity: construction (PyTorch's names, shapes and initialisation), forward, repr;
// Flatten and Unflatten.
#include "normnet/nn/linear.hpp"

#include <algorithm>
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

// ---------------------------------------------------------------- Flatten, Unflatten

Flatten::Flatten(const FlattenOptions& options) : options_(options) {}

Tensor Flatten::forward(const Tensor& x) {
    return x.flatten(static_cast<int>(options_.start_dim), static_cast<int>(options_.end_dim));
}

std::string Flatten::extra_repr() const {
    return "start_dim=" + std::to_string(options_.start_dim) + ", end_dim=" + std::to_string(options_.end_dim);
}

Unflatten::Unflatten(const UnflattenOptions& options) : options_(options) {
    NORMNET_CHECK(!options.sizes.empty(), "Unflatten: sizes must not be empty");
}

Tensor Unflatten::forward(const Tensor& x) {
    const int64_t n = std::max(x.dim(), 1);
    const int64_t dim = options_.dim < 0 ? options_.dim + n : options_.dim();
    NORMNET_CHECK(dim >= 0 && dim < x.dim(), "Unflatten: dimension ", options_.dim,
                  " is out of range for an input of shape ", x.shape());
    int64_t known = 1;
    int inferred = 0;
    for (int64_t s : options_.sizes) s == -1 ? ++inferred : known *= s;
    const int64_t size = x.size(static_cast<int>(dim));
    NORMNET_CHECK(inferred <= 1 && (inferred == 1 ? known != 0 && size % known == 0 : known == size),
                  "Unflatten: provided sizes ", Shape(options_.sizes), " don't multiply up to the size of dim ", dim, " (",
                  size, ") in the input of shape ", x.shape());
    Shape shape;
    for (int d = 0; d < x.dim(); ++d) {
        if (d != dim) {
            shape.push_back(x.size(d));
            continue;
        }
        for (int64_t s : options_.sizes) shape.push_back(s == -1 ? size / known : s);
    }
    return x.reshape(shape);
}

std::string Unflatten::extra_repr() const {
    return "dim=" + std::to_string(options_.dim) + ", unflattened_size=" + py_tuple(options_.sizes);
}

}  // namespace normnet
