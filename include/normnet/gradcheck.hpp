// The gradient checker: compares an op's or module's analytic gradients with central
// differences. The analytic gradients are taken three ways that must agree: into .grad
// pre-filled with garbage (an op that overwrites instead of adding fails), into no .grad (new
// buffers are filled with NaN first: an op that adds into one instead of writing it fails), and
// through non-leaf copies of the inputs used by two calls (the second gradient is added).
#pragma once

#include "normnet/arg.hpp"
#include "normnet/export.hpp"

#include <functional>
#include <string>
#include <vector>

#include "normnet/module.hpp"

namespace normnet {

/// Tolerances and step of gradcheck; float32 central differences need loose-ish tolerances.
struct GradcheckOptions {
    using Self = GradcheckOptions;
    NORMNET_ARG(double, eps) = 1e-3;   // finite-difference step
    NORMNET_ARG(double, atol) = 2e-3;  // |analytic - numeric| <= atol + rtol * |numeric|
    NORMNET_ARG(double, rtol) = 2e-2;
    NORMNET_ARG(uint64_t, seed) = 1;   // for the output projection and the garbage pre-fill
};

/// What gradcheck found: ok, or the first mismatch described in `message`.
struct GradcheckResult {
    bool ok = true;
    std::string message;
    int64_t checked = 0;  // number of elements compared
};

/// Checks the gradients of sum(fn(inputs) * w), for a fixed random w, with respect to every
/// input that requires grad. fn may read other tensors too (e.g. a module's parameters, when
/// they are passed in `inputs`): inputs are perturbed in place.
NORMNET_API GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, const GradcheckOptions& options = {});

/// gradcheck of module(x) with respect to x (when it requires grad) and every parameter.
NORMNET_API GradcheckResult gradcheck(Module& module, const Tensor& x, const GradcheckOptions& options = {});

}  // namespace normnet
