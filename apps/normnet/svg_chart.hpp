// Dependency-free SVG line charts for `normnet compare` (accuracy or time against batch size, one
// line per normalisation, with error bars).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace normnet::cli {

/// One line of a chart. Points are drawn in the given order; a point whose x or y is NaN or
/// infinite (or whose x is <= 0 on a log axis) is skipped and breaks the line there.
struct Series {
    std::string label{};           ///< legend text; empty = left out of the legend
    std::vector<double> x{}, y{};  ///< same size
    std::vector<double> y_err{};   ///< empty = no error bars; else same size as y, half-height of the bar
    int colour = -1;               ///< palette index (colour and marker); -1 = the series' position
    int dash = 0;                  ///< line pattern: 0 solid, 1 dashed, 2 dotted, 3 dash-dot
};

// Every member has a default initialiser so designated initialisers ({.log_x = true}) compile
// cleanly under -Wextra.
struct ChartOptions {
    std::string title{}, x_label{}, y_label{};
    bool log_x = false;             ///< batch sizes 4, 16, 64, 256 get one tick each
    bool integer_x = false;         ///< x counts something (epochs): ticks at whole numbers only
    bool reverse_x = false;         ///< x decreasing from left to right (batch sizes, as Wu and He's Figure 1)
    int width = 760, height = 480;  ///< pixels, at least 240 x 160; wider if the legend needs it
    std::optional<double> y_min{}, y_max{};  ///< default: padded data range
    bool percent_y = false;                  ///< y in [0,1] shown as percent
};

/// The chart as a standalone SVG document: title, axes with ticks, light grid, one line with
/// markers (and error bars) per series in a colour-blind-friendly palette, legend right of the plot.
/// Throws normnet::Error on series whose sizes disagree, a chart below 240 x 160, or y_min >= y_max.
std::string line_chart_svg(const std::vector<Series>& series, const ChartOptions& options);

}  // namespace normnet::cli
