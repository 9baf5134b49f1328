// The timing and argument helpers ops_bench and its libtorch peer (apps/peers/libtorch_ops.cpp)
// share, so both sides time a case the same way. Header-only, no normnet or torch dependency.
#pragma once

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

namespace bench {

/// "a,b,,c" -> {"a", "b", "c"}.
inline std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    size_t at = 0;
    while (at <= s.size()) {
        const size_t comma = std::min(s.find(',', at), s.size());
        if (comma > at) out.push_back(s.substr(at, comma - at));
        at = comma + 1;
    }
    return out;
}

/// Median seconds of one call of f, over repetitions filling at least min_time (3 at least),
/// after one untimed call (warming the allocator, the pages and the threads).
template <class F>
double time_case(F&& f, double min_time) {
    f();
    std::vector<double> times;
    const auto start = std::chrono::steady_clock::now();
    while (times.size() < 3 ||
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < min_time) {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

}  // namespace bench
