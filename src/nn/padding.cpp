// The padding layers' shared parts: the padding expanded to every side, and PyTorch's repr.
#include "normnet/nn/padding.hpp"

#include "repr.hpp"

namespace normnet {

std::vector<int64_t> PadParts::expand(const char* layer, const std::vector<int64_t>& padding, int dims) {
    const auto sides = static_cast<size_t>(2 * dims);
    NORMNET_CHECK(padding.size() == 1 || padding.size() == sides, layer, ": padding takes one size or ", sides,
                  " (left, right", dims == 2 ? ", top, bottom" : "", "), got ", padding.size(), " values");
    return padding.size() == 1 ? std::vector<int64_t>(sides, padding[0]) : padding;
}

std::string PadParts::repr(const std::vector<int64_t>& padding, bool constant, double value) {
    if (!constant) return detail::py_tuple(padding);
    return "padding=" + detail::py_tuple(padding) + ", value=" + detail::python_float_repr(value);
}

}  // namespace normnet
