// ProgressBar: drawn with a carriage return and erased with an ANSI clear-line.
#include "progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace normnet::cli {

bool stdout_is_terminal() { return ::isatty(STDOUT_FILENO) == 1; }

std::string format_duration(double seconds) {
    char buf[64];
    if (seconds < 60) {
        std::snprintf(buf, sizeof buf, "%.1f s", seconds);
    } else {
        const auto s = static_cast<long long>(seconds + 0.5);
        std::snprintf(buf, sizeof buf, "%lld min %02lld s", s / 60, s % 60);
    }
    return buf;
}

ProgressBar::ProgressBar(std::string label, int64_t total, int64_t samples_per_step, bool enabled)
    : label_(std::move(label)), total_(std::max<int64_t>(total, 1)), samples_per_step_(samples_per_step),
      enabled_(enabled), start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

void ProgressBar::update(int64_t done, const std::string& detail) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (drawn_ && done < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    drawn_ = true;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const double fraction = static_cast<double>(done) / static_cast<double>(total_);
    constexpr int kWidth = 24;
    const int filled = static_cast<int>(fraction * kWidth);
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(kWidth, '-');
    const double rate = elapsed > 0 ? static_cast<double>(done * samples_per_step_) / elapsed : 0.0;
    const double eta = done > 0 ? elapsed * static_cast<double>(total_ - done) / static_cast<double>(done) : 0.0;
    std::printf("\r\033[2K%s [%s] %3d%%  %s  %.0f samples/s  ETA %s", label_.c_str(), bar.c_str(),
                static_cast<int>(fraction * 100), detail.c_str(), rate, format_duration(eta).c_str());
    std::fflush(stdout);
}

void ProgressBar::finish() {
    if (enabled_ && drawn_) {
        std::printf("\r\033[2K");
        std::fflush(stdout);
    }
    drawn_ = false;
}

}  // namespace normnet::cli
