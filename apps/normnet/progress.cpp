// ProgressBar: drawn with a carriage return and erased with an ANSI clear-line.
#include "progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace normnet::cli {

bool stdout_is_terminal() { return ::isatty(STDOUT_FILENO) == 1; }

int terminal_width() {
    winsize size{};
    if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
    if (const char* columns = std::getenv("COLUMNS")) {
        const int n = std::atoi(columns);
        if (n > 0) return n;
    }
    return 80;
}

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

std::string plural(int64_t n, const std::string& noun) {
    return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string progress_line(const std::string& label, double fraction, const std::string& detail, double rate, double eta,
                          int width) {
    char percent[16], speed[48];
    std::snprintf(percent, sizeof percent, "%3d%%", static_cast<int>(fraction * 100));
    std::snprintf(speed, sizeof speed, "%.0f samples/s", rate);
    const std::string tail = std::string("  ") + (detail.empty() ? "" : detail + "  ") + speed + "  ETA " + format_duration(eta);
    const size_t room = static_cast<size_t>(std::max(width - 1, 0));
    // The bar takes what the text leaves, up to 24 characters; with less than 10 for it the
    // details go, then the bar, then the label is cut.
    std::string line = label + " " + percent;
    for (const std::string& text : {" " + std::string(percent) + tail, " " + std::string(percent)}) {
        const size_t fixed = label.size() + 3 + text.size();  // " [" and "]" around the bar
        if (room < fixed + 10) continue;
        const size_t bar = std::min<size_t>(room - fixed, 24);
        const auto filled = static_cast<size_t>(fraction * static_cast<double>(bar));
        line = label + " [" + std::string(filled, '#') + std::string(bar - filled, '-') + "]" + text;
        break;
    }
    if (line.size() > room) line.resize(room);
    return line;
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
    const double rate = elapsed > 0 ? static_cast<double>(done * samples_per_step_) / elapsed : 0.0;
    const double eta = done > 0 ? elapsed * static_cast<double>(total_ - done) / static_cast<double>(done) : 0.0;
    std::printf("\r\033[2K%s", progress_line(label_, fraction, detail, rate, eta, terminal_width()).c_str());
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
