// Activation modules: forward through the functional ops.
#include "normnet/nn/activation.hpp"

#include "normnet/ops.hpp"

namespace normnet {


Tensor ReLU::forward(const Tensor& x) { return relu(x); }

}  // namespace normnet
