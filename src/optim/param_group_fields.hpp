// Internal: the options of a ParamGroupOptions, visited field by field with their torch names,
// for merging overrides, checking which options an optimizer has, and saving and loading them.
#pragma once

#include "normnet/optim.hpp"

namespace normnet::detail {

/// Calls f(name, o.field...) for each field of the ParamGroupOptions `o...` (one or more, const
/// or not), in declaration order.
template <class F, class... Options>
void visit_options(F&& f, Options&... o) {
    f("lr", o.lr...);
    f("weight_decay", o.weight_decay...);
    f("momentum", o.momentum...);
    f("dampening", o.dampening...);
    f("nesterov", o.nesterov...);
    f("betas", o.betas...);
    f("eps", o.eps...);
    f("amsgrad", o.amsgrad...);
    f("alpha", o.alpha...);
    f("centered", o.centered...);
    f("lr_decay", o.lr_decay...);
    f("initial_accumulator_value", o.initial_accumulator_value...);
    f("momentum_decay", o.momentum_decay...);
}

/// `base` with the fields set in `overrides` replaced.
inline ParamGroupOptions merged(ParamGroupOptions base, const ParamGroupOptions& overrides) {
    visit_options(
        [](const char*, auto& field, const auto& override_field) {
            if (override_field) field = override_field;
        },
        base, overrides);
    return base;
}

}  // namespace normnet::detail
