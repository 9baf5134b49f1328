// Internal: one parallel pass over the elements of every parameter, for optimizers whose update
// is elementwise. The parameters are seen as one concatenated range, split evenly between
// threads; each chunk updates the pieces of the parameters it covers.
#pragma once

#include <algorithm>

#include "../parallel.hpp"
#include "normnet/module.hpp"

namespace normnet::detail {

/// Calls update(i, begin, end) for element ranges of parameter i, covering every element of
/// every parameter once; chunk boundaries fall on multiples of 16 elements within a parameter.
template <class Update>
void for_each_parameter_range(const NamedTensors& params, Update update) {
    int64_t total = 0;
    for (const auto& [name, p] : params) total += p.numel();
    parallel_for(total, 1 << 15, [&](int64_t begin, int64_t end) {
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
