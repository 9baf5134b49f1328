// Activation layers: modules that apply one of the functional activations of ops.hpp.
#pragma once

#include <string>

#include "normnet/export.hpp"
#include "normnet/module.hpp"

namespace normnet {

/// max(x, 0) elementwise.
class NORMNET_API ReLU : public Cloneable<ReLU> {
public:
    Tensor forward(const Tensor& x) override;
    std::string type_name() const override { return "ReLU"; }
};

}  // namespace normnet
