// Progress reporting for long loops: a one-line bar with running loss, samples/s and ETA that
// redraws in place on a terminal (never wider than it, so it never wraps), and stays silent when
// output goes to a file or pipe.
#pragma once

#include <chrono>
#include <string>

namespace normnet::cli {

/// True when standard output is a terminal (so a redrawn bar makes sense).
bool stdout_is_terminal();

/// The terminal's width in columns: TIOCGWINSZ on standard output, else $COLUMNS, else 80.
int terminal_width();

/// The text of one redraw, at most `width` - 1 characters (a line that fills the last column
/// wraps on some terminals): "label [####----]  42%  detail  1234 samples/s  ETA 3.1 s", with
/// the bar narrowed, then the details dropped, then the label cut, as the width requires.
std::string progress_line(const std::string& label, double fraction, const std::string& detail, double rate, double eta,
                          int width);

class ProgressBar {
public:
    /// label: e.g. "epoch 3/15"; total: steps; samples_per_step: for the samples/s figure.
    ProgressBar(std::string label, int64_t total, int64_t samples_per_step, bool enabled);
    /// Redraws (at most ~10 times a second) after `done` steps; `detail` is shown after the bar.
    void update(int64_t done, const std::string& detail = "");
    /// Erases the bar so the next line starts clean.
    void finish();

private:
    std::string label_;
    int64_t total_, samples_per_step_;
    bool enabled_;
    std::chrono::steady_clock::time_point start_, last_draw_;
    bool drawn_ = false;
};

/// "1.2 s", "3 min 04 s"
std::string format_duration(double seconds);

/// "1 epoch", "2 epochs": a count with its noun, singular for one.
std::string plural(int64_t n, const std::string& noun);

}  // namespace normnet::cli
