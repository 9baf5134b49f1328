// Internal: one parallel pass over the elements of every parameter, for optimizers whose update
// is elementwise. The parameters are seen as one concatenated range, split evenly between
// threads; each chunk updates the pieces of the parameters it covers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

#include "../parallel.hpp"
#include "normnet/module.hpp"

namespace normnet::detail {

/// Calls update(i, begin, end) for element ranges of parameter i, covering every element of
/// every parameter once; chunk boundaries fall on multiples of 16 elements within a parameter.
/// With a shard [first, last) (Optimizer::set_shard), only the elements of the concatenation in it.
template <class Update>
void for_each_parameter_range(const NamedTensors& params, Update update,
                              std::pair<int64_t, int64_t> shard = {0, INT64_MAX}) {
    int64_t total = 0;
    for (const auto& [name, p] : params) total += p.numel();
    const int64_t first = std::min(shard.first, total), last = std::min(shard.second, total);
    parallel_for(last - first, 1 << 15, [&](int64_t begin, int64_t end) {
        begin += first, end += first;
        int64_t offset = 0;
        for (size_t i = 0; i < params.size() && offset < end; ++i) {
            const int64_t n = params[i].second.numel();
            const int64_t b = std::max(begin, offset), e = std::min(end, offset + n);
            if (b < e) update(i, b - offset, e - offset);
            offset += n;
        }
    }, 16);
}

}  // namespace normnet::detail
