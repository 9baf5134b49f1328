// What `normnet bench` measures with, for every model: wall seconds, the median of repeats, and
// the process's peak resident memory.
#pragma once

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace normnet::cli {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// getrusage's ru_maxrss in MB: the process's peak resident memory (since the start, or the
/// last reset of Linux's high-water mark).
inline double peak_rss_mb() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

/// The peak resident memory of a bench row's training, without its GEMM floor's: the floor's
/// operands are mapped only while it runs (FloorOperands), and the floor runs beside the
/// training's cached buffers, so the process's peak would count both. pause() before each floor
/// run keeps the peak so far; resume() after it (once its operands are unmapped) restarts the
/// kernel's high-water mark (/proc/self/clear_refs, "5") from what is resident then. Where
/// the kernel refuses, the figure stays the whole process's, floor included.
class TrainingPeakRss {
public:
    void pause() { peak_ = std::max(peak_, peak_rss_mb()); }
    void resume() {
        if (std::FILE* f = std::fopen("/proc/self/clear_refs", "w")) {
            std::fputs("5", f);
            std::fclose(f);
        }
    }
    double mb() const { return std::max(peak_, peak_rss_mb()); }

private:
    double peak_ = 0;
};

}  // namespace normnet::cli
