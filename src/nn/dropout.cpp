// Dropout: options checked at construction, forward through the functional op.
#include "normnet/nn/dropout.hpp"

#include "normnet/ops.hpp"
#include "repr.hpp"

namespace normnet {

Dropout::Dropout(const DropoutOptions& options) : options_(options) {
    NORMNET_CHECK(options.p >= 0.0 && options.p <= 1.0,
                  "Dropout: dropout probability has to be between 0 and 1, but got ", options.p);
}

Tensor Dropout::forward(const Tensor& x) { return dropout(x, options_.p, is_training()); }

std::string Dropout::extra_repr() const { return FeatureDropoutParts::repr(options_.p); }

void FeatureDropoutParts::check_probability(const char* layer, double p) {
    NORMNET_CHECK(p >= 0.0 && p <= 1.0, layer, ": dropout probability has to be between 0 and 1, but got ", p);
}
std::string FeatureDropoutParts::repr(double p) { return "p=" + detail::python_float_repr(p) + ", inplace=False"; }

}  // namespace normnet
