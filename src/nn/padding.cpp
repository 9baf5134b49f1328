// The padding layers' shared parts: the padding expanded to every side, and PyTorch's repr.
#include "normnet/nn/padding.hpp"

#include "repr.hpp"

namespace normnet::detail {

std::vector<int64_t> expand_padding(const char* layer, const std::vector<int64_t>& padding, int dims) {
    const auto sides = static_cast<size_t>(2 * dims);
    NORMNET_CHECK(padding.size() == 1 || padding.size() == sides, layer, ": padding takes one size or ", sides,
                  " (left, right", dims == 2 ? ", top, bottom" : "", "), got ", padding.size(), " values");
    return padding.size() == 1 ? std::vector<int64_t>(sides, padding[0]) : padding;
}

std::string pad_repr(const std::vector<int64_t>& padding, bool constant, double value) {
    if (!constant) return py_tuple(padding);
    return "padding=" + py_tuple(padding) + ", value=" + python_float_repr(value);
}

}  // namespace normnet::detail
