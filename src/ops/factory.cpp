// Factories beyond those of tensor.cpp: linspace, and the seeded integer draws randint and randperm
// (int64, as torch's), from normnet's Generator.
#include <algorithm>
#include <cstdint>

#include "../tensor_impl.hpp"

namespace normnet {

Tensor linspace(double start, double end, int64_t steps, Dtype dtype) {
    NORMNET_CHECK(steps >= 0, "linspace: number of steps must be non-negative, got ", steps);
    Tensor t = empty({steps}, dtype);
    // torch's symmetric form: the first half counts up from start, the second down from end, so
    // both ends are exact.
    const double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
    const int64_t half = steps == 1 ? 1 : steps / 2;  // one step: just start
    detail::visit_dtype(dtype, [&](auto type) {
        using T = decltype(type);
        T* p = t.data_ptr<T>();
        for (int64_t i = 0; i < steps; ++i) {
            p[i] = static_cast<T>(i < half ? start + step * static_cast<double>(i)
                                           : end - step * static_cast<double>(steps - 1 - i));
        }
    });
    return t;
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, Generator& gen) {
    NORMNET_CHECK(low < high, "randint: expected 'low' to be less than 'high', but got low=", low, " >= high=", high);
    Tensor t = empty(shape, kInt64);
    int64_t* p = t.data_ptr<int64_t>();
    const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = low + static_cast<int64_t>(gen.below(range));
    return t;
}

Tensor randint(int64_t high, const Shape& shape, Generator& gen) { return randint(0, high, shape, gen); }

Tensor randint(int64_t low, int64_t high, const Shape& shape, Dtype dtype, Generator& gen) {
    NORMNET_CHECK(dtype != kBool, "randint: dtype bool is not supported (torch: \"check_uniform_bounds\" not implemented for 'Bool')");
    NORMNET_CHECK(dtype != kInt32 || (low >= INT32_MIN && high <= int64_t{INT32_MAX} + 1), "randint: [", low, ", ", high,
                  ") does not fit in dtype int32");
    return randint(low, high, shape, gen).to(dtype);
}

Tensor randint(int64_t high, const Shape& shape, Dtype dtype, Generator& gen) { return randint(0, high, shape, dtype, gen); }

Tensor randperm(int64_t n, Generator& gen) {
    NORMNET_CHECK(n >= 0, "randperm: n must be non-negative, got ", n);
    Tensor t = empty({n}, kInt64);
    int64_t* p = t.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i) p[i] = i;
    // Fisher-Yates: position i takes a uniform pick among the not yet placed [0, i].
    for (int64_t i = n - 1; i > 0; --i) std::swap(p[i], p[static_cast<int64_t>(gen.below(static_cast<uint64_t>(i) + 1))]);
    return t;
}

}  // namespace normnet
