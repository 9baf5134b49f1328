// Broadcasting by PyTorch's rules: the shape two operands broadcast to, and the strides that
// read an operand as that shape (see loop.hpp).
#include "loop.hpp"

namespace normnet::detail {

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
    const int nd = std::max(a.size(), b.size());
    Shape out;
    for (int d = 0; d < nd; ++d) {
        const int da = d - (nd - a.size()), db = d - (nd - b.size());
        const int64_t sa = da >= 0 ? a[da] : 1, sb = db >= 0 ? b[db] : 1;
        NORMNET_CHECK(sa == sb || sa == 1 || sb == 1, op, ": the size of tensor a (", sa,
                      ") must match the size of tensor b (", sb, ") at non-singleton dimension ", d, " (shapes ", a,
                      " and ", b, ")");
        out.push_back(sa == 1 ? sb : sa);
    }
    return out;
}

Shape broadcast_strides(const Tensor& t, const Shape& shape) { return broadcast_strides(t.shape(), t.strides(), shape); }

Shape broadcast_strides(const Shape& from, const Shape& strides, const Shape& shape) {
    const int lead = shape.size() - from.size();
    Shape out;
    for (int d = 0; d < shape.size(); ++d) {
        const int s = d - lead;
        out.push_back(s < 0 || from[s] == 1 ? 0 : strides[s]);
    }
    return out;
}

}  // namespace normnet::detail
