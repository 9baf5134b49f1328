// Internal: copies that read each output element from one input element chosen per dimension
// (src/ops/pad.cpp): pad, flip and nearest-neighbour upsampling are each a set of index maps.
#pragma once

#include <cstdint>
#include <vector>

#include "normnet/tensor.hpp"

namespace normnet::detail {

/// out[i0, ..., ik] = x[maps[0][i0], ..., maps[k][ik]] for float32 x with one map per dim (the
/// output's sizes are the maps' lengths; an entry -1 reads `value` instead); differentiable: the
/// backward adds each output gradient into the element it was read from. The node is named
/// node_name (a string literal).
Tensor remap(const Tensor& x, std::vector<std::vector<int64_t>> maps, float value, const char* node_name);

/// 0, 1, ..., size - 1.
std::vector<int64_t> identity_map(int64_t size);

}  // namespace normnet::detail
