// Internal: summing a gradient back down to the shape of a broadcast input (the backward of
// broadcasting, used by every broadcasting op).
#pragma once

#include "op.hpp"

namespace normnet::detail {

/// dst (written or added to, as dst.fresh says) = src summed down to `shape`, a shape src's
/// shape was broadcast from. src is contiguous float32.
void sum_to(const GradOut& dst, const Tensor& src, const Shape& shape);

}  // namespace normnet::detail
