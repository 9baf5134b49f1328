// Upsample: options checked at construction, forward through interpolate, PyTorch's repr.
#include "normnet/nn/upsampling.hpp"

#include "repr.hpp"

namespace normnet {

Upsample::Upsample(const UpsampleOptions& options) : options_(options) {
    NORMNET_CHECK(options.size.has_value() != options.scale_factor.has_value(),
                  "Upsample: give exactly one of size and scale_factor");
    NORMNET_CHECK(options.mode == "nearest" || options.mode == "linear" || options.mode == "bilinear",
                  "Upsample: mode '", options.mode, "' is not supported (nearest, linear and bilinear are)");
}

Tensor Upsample::forward(const Tensor& x) {
    const auto& o = options_;
    return interpolate(x, InterpolateFuncOptions{.size = o.size, .scale_factor = o.scale_factor, .mode = o.mode,
                                                 .align_corners = o.align_corners});
}

std::string Upsample::extra_repr() const {
    // As torch: the one value given prints bare, several as a tuple (factors as floats).
    const auto& o = options_;
    std::string s;
    if (o.scale_factor) {
        const auto& f = *o.scale_factor;
        if (f.size() == 1) {
            s = "scale_factor=" + detail::python_float_repr(f[0]);
        } else {
            s = "scale_factor=(";
            for (size_t i = 0; i < f.size(); ++i) s += (i ? ", " : "") + detail::python_float_repr(f[i]);
            s += ")";
        }
    } else {
        const auto& z = *o.size;
        s = "size=" + (z.size() == 1 ? std::to_string(z[0]) : detail::py_tuple(z));
    }
    return s + ", mode=" + o.mode;
}

}  // namespace normnet
