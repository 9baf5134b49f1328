// SVG line charts for `normnet compare`, written by hand so the CLI needs no plotting library.
// Layout is computed from estimated text widths (no font metrics), numbers are printed with two
// decimals via std::to_chars (locale-independent), so the same results give byte-identical files.
#include "svg_chart.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <string_view>
#include <system_error>

#include "normnet/error.hpp"

namespace normnet::cli {
namespace {

// Okabe-Ito palette: stays distinguishable under the common colour-vision deficiencies. Its
// yellow is left out because it is too faint on white. Marker shapes cycle too, so the lines
// can be told apart in greyscale prints.
constexpr std::array<const char*, 7> kPalette = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                                 "#E69F00", "#56B4E9", "#000000"};
enum class Shape { circle, square, triangle, diamond };
constexpr std::array<Shape, 4> kShapes = {Shape::circle, Shape::square, Shape::triangle,
                                          Shape::diamond};

constexpr double kCharWidth = 7.0;  // a 12px sans-serif glyph, on the wide side so text never collides
constexpr double kMarkerRadius = 4.0;
constexpr double kTickLength = 5.0;
constexpr double kInf = std::numeric_limits<double>::infinity();

std::string escape_xml(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            default: out += c;
        }
    }
    return out;
}

// Fixed-point text. Drawing code never passes a non-finite value; the guard makes sure "nan"
// cannot reach the file even if it did.
std::string fixed(double v, int decimals = 2) {
    if (!std::isfinite(v)) v = 0.0;
    char buf[400];
    auto end = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, decimals).ptr;
    std::string s(buf, end);
    if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);  // "-0.00"
    return s;
}

// Short general form for tick labels of unknown magnitude: "4", "256", "0.001", "1e+06".
std::string general(double v) {
    if (!std::isfinite(v)) v = 0.0;
    char buf[64];
    auto end = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 4).ptr;
    return std::string(buf, end);
}

double text_width(std::string_view text) { return static_cast<double>(text.size()) * kCharWidth; }

struct Point {
    double x, y, err;  // err = 0 when there is no error bar
};

// The drawable points of a series in the caller's order, split where a point had to be skipped
// so the line breaks at a gap instead of bridging it.
std::vector<std::vector<Point>> runs_of(const Series& s, bool log_x) {
    std::vector<std::vector<Point>> runs(1);
    for (size_t i = 0; i < s.x.size(); ++i) {
        const double x = s.x[i], y = s.y[i];
        if (!std::isfinite(x) || !std::isfinite(y) || (log_x && x <= 0.0)) {
            if (!runs.back().empty()) runs.emplace_back();
            continue;
        }
        double err = s.y_err.empty() ? 0.0 : std::abs(s.y_err[i]);
        if (!std::isfinite(err)) err = 0.0;
        runs.back().push_back({x, y, err});
    }
    if (runs.back().empty()) runs.pop_back();
    return runs;
}

void check_series(const Series& s) {
    NORMNET_CHECK(s.x.size() == s.y.size(), "chart series '", s.label, "': x has ", s.x.size(),
          " values but y has ", s.y.size());
    NORMNET_CHECK(s.y_err.empty() || s.y_err.size() == s.y.size(), "chart series '", s.label, "': y_err has ",
          s.y_err.size(), " values but y has ", s.y.size(), " (give none or one per point)");
}

struct Range {
    double lo = kInf, hi = -kInf;
    void add(double v) { lo = std::min(lo, v), hi = std::max(hi, v); }
    bool empty() const { return lo > hi; }
};

// Maps data values to pixels. For a log axis lo/hi are in log10 units.
struct Axis {
    double lo = 0, hi = 1;
    bool log = false;
    double px_lo = 0, px_hi = 1;  // pixel positions of lo and hi
    double to_px(double v) const {
        const double t = log ? std::log10(v) : v;
        const double p = px_lo + (t - lo) / (hi - lo) * (px_hi - px_lo);
        return std::clamp(p, -1e4, 1e4);  // far-off points get clipped anyway; keeps numbers short
    }
    bool contains(double v) const {
        const double t = log ? std::log10(v) : v, slack = 1e-9 * (hi - lo);
        return t >= lo - slack && t <= hi + slack;
    }
};

// The 1-2-5 step that splits `span` into about `target` intervals.
double nice_step(double span, int target) {
    const double raw = span / target;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    const double f = raw / magnitude;
    return magnitude * (f < 1.5 ? 1.0 : f < 3.0 ? 2.0 : f < 7.0 ? 5.0 : 10.0);
}

// Multiples of the nice step inside [lo, hi] (at least `min_step` apart: 1 for counts such as
// epochs, which have no fractional ticks); computed as i * step so errors do not accumulate.
std::vector<double> linear_ticks(double lo, double hi, int target, double& step, double min_step = 0) {
    step = std::max(nice_step(hi - lo, std::max(target, 1)), min_step);
    std::vector<double> ticks;
    if (!std::isfinite(step) || !(step > 0) || (hi - lo) / step > 100) return ticks;  // degenerate range
    const double first = std::ceil(lo / step - 1e-9), last = std::floor(hi / step + 1e-9);
    for (double i = first; i <= last; ++i) ticks.push_back(std::abs(i) < 0.5 ? 0.0 : i * step);
    return ticks;
}

// Few distinct x values (batch sizes 4, 16, 64, 256) are labelled as they are; many get decades,
// or 1-2-5 steps when the data spans too little for two decades to show.
std::vector<double> log_ticks(const Axis& axis, std::vector<double> xs) {
    std::sort(xs.begin(), xs.end());
    xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
    if (!xs.empty() && xs.size() <= 10) return xs;
    auto multiples_of_decades = [&](std::initializer_list<double> mantissas) {
        std::vector<double> ticks;
        for (double e = std::floor(axis.lo); e <= std::ceil(axis.hi); ++e)
            for (double m : mantissas)
                if (axis.contains(m * std::pow(10.0, e))) ticks.push_back(m * std::pow(10.0, e));
        return ticks;
    };
    std::vector<double> ticks = multiples_of_decades({1.0});
    if (ticks.size() < 2) ticks = multiples_of_decades({1.0, 2.0, 5.0});
    if (ticks.size() < 2 && !xs.empty()) ticks = {xs.front(), xs.back()};
    return ticks;
}

struct Ticks {
    std::vector<double> values;
    std::vector<std::string> labels;
};

// Enough decimals to tell 1-2-5 steps apart: step 0.5 -> 1 decimal, step 20 -> none.
std::string linear_label(double v, double step, bool percent) {
    if (percent) v *= 100.0, step *= 100.0;
    std::string text = (step >= 1e-4 && std::abs(v) < 1e7)
                           ? fixed(v, std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9))))
                           : general(v);
    return percent ? text + "%" : text;
}

Ticks y_ticks(const Axis& axis, int target, bool percent) {
    Ticks t;
    double step = 0;
    t.values = linear_ticks(axis.lo, axis.hi, target, step);
    for (double v : t.values) t.labels.push_back(linear_label(v, step, percent));
    return t;
}

Ticks x_ticks(const Axis& axis, const std::vector<double>& xs, int target, bool integer) {
    Ticks t;
    double step = 0;
    t.values = axis.log ? log_ticks(axis, xs) : linear_ticks(axis.lo, axis.hi, target, step, integer ? 1.0 : 0.0);
    for (double v : t.values) t.labels.push_back(axis.log ? general(v) : linear_label(v, step, false));
    return t;
}

// Padded data range; an all-equal range is widened so the line sits mid-plot. Percent charts are
// not padded past 0% or 100% unless the data is.
void set_y_domain(Axis& axis, const Range& data, const ChartOptions& options) {
    double lo = 0.0, hi = 1.0;
    if (!data.empty()) {
        const double span = data.hi - data.lo;
        const double pad = span > 0 ? 0.06 * span : (data.lo != 0 ? 0.1 * std::abs(data.lo) : 1.0);
        lo = data.lo - pad, hi = data.hi + pad;
        if (options.percent_y) lo = std::max(lo, std::min(0.0, data.lo)), hi = std::min(hi, std::max(1.0, data.hi));
    }
    axis.lo = options.y_min.value_or(lo);
    axis.hi = options.y_max.value_or(hi);
    if (axis.lo >= axis.hi) {  // only one bound given, on the wrong side of the data
        if (options.y_min) axis.hi = axis.lo + std::max(1.0, std::abs(axis.lo));
        else axis.lo = axis.hi - std::max(1.0, std::abs(axis.hi));
    }
}

void set_x_domain(Axis& axis, Range data) {
    if (data.empty()) data = axis.log ? Range{1.0, 10.0} : Range{0.0, 1.0};
    const double lo = axis.log ? std::log10(data.lo) : data.lo;
    const double hi = axis.log ? std::log10(data.hi) : data.hi;
    const double span = hi - lo;
    // Padding keeps end markers and error-bar caps off the frame.
    const double pad = span > 0 ? 0.05 * span : (axis.log ? 0.5 : (lo != 0 ? 0.1 * std::abs(lo) : 1.0));
    axis.lo = lo - pad, axis.hi = hi + pad;
}

// --- drawing -------------------------------------------------------------------------------

struct Svg {
    std::string out;
    Svg& operator<<(std::string_view s) { out += s; return *this; }
    Svg& operator<<(double v) { out += fixed(v); return *this; }
};

struct Frame {
    double left, top, right, bottom;  // the plot area, in pixels
};

void text(Svg& svg, double x, double y, std::string_view anchor, std::string_view content,
          std::string_view extra = "") {
    svg << "<text x=\"" << x << "\" y=\"" << y << "\" text-anchor=\"" << anchor << "\"" << extra
        << ">" << escape_xml(content) << "</text>\n";
}

void line(Svg& svg, double x1, double y1, double x2, double y2, std::string_view extra = "") {
    svg << "<line x1=\"" << x1 << "\" y1=\"" << y1 << "\" x2=\"" << x2 << "\" y2=\"" << y2 << "\"" << extra
        << "/>\n";
}

// Keeps a label only if it does not run into the previous kept one (log axes with close x values).
std::vector<bool> readable_x_labels(const Ticks& ticks, const Axis& x) {
    std::vector<bool> keep(ticks.values.size(), false);
    double last_right = -kInf;
    const size_t n = ticks.values.size();
    for (size_t k = 0; k < n; ++k) {
        const size_t i = x.px_hi < x.px_lo ? n - 1 - k : k;  // left to right on a reversed axis too
        const double half = text_width(ticks.labels[i]) / 2, centre = x.to_px(ticks.values[i]);
        if (centre - half >= last_right + 6) keep[i] = true, last_right = centre + half;
    }
    return keep;
}

void draw_axes(Svg& svg, const Frame& f, const Axis& x, const Axis& y, const Ticks& xt, const Ticks& yt) {
    svg << "<g class=\"grid\" stroke=\"#e6e6e6\" stroke-width=\"1\">\n";
    for (double v : xt.values) line(svg, x.to_px(v), f.top, x.to_px(v), f.bottom);
    for (double v : yt.values) line(svg, f.left, y.to_px(v), f.right, y.to_px(v));
    svg << "</g>\n<g class=\"axes\" stroke=\"#333333\" stroke-width=\"1\">\n";
    svg << "<rect x=\"" << f.left << "\" y=\"" << f.top << "\" width=\"" << f.right - f.left
        << "\" height=\"" << f.bottom - f.top << "\" fill=\"none\"/>\n";
    for (double v : xt.values) line(svg, x.to_px(v), f.bottom, x.to_px(v), f.bottom + kTickLength);
    for (double v : yt.values) line(svg, f.left - kTickLength, y.to_px(v), f.left, y.to_px(v));
    svg << "</g>\n<g class=\"tick-labels\" fill=\"#333333\" font-size=\"12\">\n";
    const std::vector<bool> keep = readable_x_labels(xt, x);
    for (size_t i = 0; i < xt.values.size(); ++i)
        if (keep[i]) text(svg, x.to_px(xt.values[i]), f.bottom + kTickLength + 14, "middle", xt.labels[i]);
    for (size_t i = 0; i < yt.values.size(); ++i)
        text(svg, f.left - kTickLength - 4, y.to_px(yt.values[i]) + 4, "end", yt.labels[i]);
    svg << "</g>\n";
}

void draw_marker(Svg& svg, Shape shape, double cx, double cy) {
    const double r = kMarkerRadius;
    switch (shape) {
        case Shape::circle:
            svg << "<circle cx=\"" << cx << "\" cy=\"" << cy << "\" r=\"" << r << "\"/>\n";
            break;
        case Shape::square:
            svg << "<rect x=\"" << cx - r * 0.9 << "\" y=\"" << cy - r * 0.9 << "\" width=\"" << r * 1.8
                << "\" height=\"" << r * 1.8 << "\"/>\n";
            break;
        case Shape::triangle:  // a little larger than r: a triangle looks smaller than a circle of equal size
            svg << "<polygon points=\"" << cx << "," << cy - r * 1.2 << " " << cx + r * 1.1 << ","
                << cy + r * 0.8 << " " << cx - r * 1.1 << "," << cy + r * 0.8 << "\"/>\n";
            break;
        case Shape::diamond:
            svg << "<polygon points=\"" << cx << "," << cy - r * 1.2 << " " << cx + r * 1.2 << "," << cy
                << " " << cx << "," << cy + r * 1.2 << " " << cx - r * 1.2 << "," << cy << "\"/>\n";
            break;
    }
}

// The stroke-dasharray attribute of a Series::dash pattern ("" for solid lines).
std::string dash_attribute(int dash) {
    switch (dash) {
        case 1: return " stroke-dasharray=\"7,4\"";
        case 2: return " stroke-dasharray=\"2,3\"";
        case 3: return " stroke-dasharray=\"8,3,2,3\"";
        default: return "";
    }
}

// The palette index (colour and marker) of series i.
size_t style_index(const Series& s, size_t i) { return s.colour >= 0 ? static_cast<size_t>(s.colour) : i; }

// `dodge` shifts the whole series sideways by a few pixels so that error bars of different series
// at the same x do not sit on top of each other.
void draw_series(Svg& svg, const std::vector<std::vector<Point>>& runs, size_t index, int dash, double dodge,
                 const Axis& x, const Axis& y) {
    const char* colour = kPalette[index % kPalette.size()];
    svg << "<g class=\"series\" stroke=\"" << colour << "\" fill=\"" << colour << "\">\n";
    svg << "<g class=\"error-bars\" stroke-width=\"1.2\">\n";
    for (const auto& run : runs)
        for (const Point& p : run) {
            if (p.err <= 0) continue;
            const double px = x.to_px(p.x) + dodge, top = y.to_px(p.y + p.err), bottom = y.to_px(p.y - p.err);
            line(svg, px, top, px, bottom);
            line(svg, px - 3, top, px + 3, top);
            line(svg, px - 3, bottom, px + 3, bottom);
        }
    svg << "</g>\n";
    for (const auto& run : runs) {
        if (run.size() < 2) continue;
        svg << "<polyline fill=\"none\" stroke-width=\"2\" stroke-linejoin=\"round\"" << dash_attribute(dash)
            << " points=\"";
        for (size_t i = 0; i < run.size(); ++i)
            svg << (i ? " " : "") << x.to_px(run[i].x) + dodge << "," << y.to_px(run[i].y);
        svg << "\"/>\n";
    }
    // A white outline separates markers of different series where they overlap.
    svg << "<g class=\"markers\" stroke=\"#ffffff\" stroke-width=\"1\">\n";
    for (const auto& run : runs)
        for (const Point& p : run)
            draw_marker(svg, kShapes[index % kShapes.size()], x.to_px(p.x) + dodge, y.to_px(p.y));
    svg << "</g>\n</g>\n";
}

// Series are dodged only when they have error bars: then bars at the same x would coincide.
void draw_all_series(Svg& svg, const std::vector<Series>& series,
                     const std::vector<std::vector<std::vector<Point>>>& runs, const Axis& x, const Axis& y) {
    const bool any_error_bars =
        std::any_of(series.begin(), series.end(), [](const Series& s) { return !s.y_err.empty(); });
    // At most 4 px between neighbours and 12 px overall, so points stay over their x ticks.
    const double n = static_cast<double>(runs.size()), spacing = n > 1 ? std::min(4.0, 12.0 / (n - 1)) : 0.0;
    svg << "<g clip-path=\"url(#plot-area)\">\n";
    for (size_t i = 0; i < runs.size(); ++i) {
        const double dodge = any_error_bars ? spacing * (static_cast<double>(i) - (n - 1) / 2) : 0.0;
        draw_series(svg, runs[i], style_index(series[i], i), series[i].dash, dodge, x, y);
    }
    svg << "</g>\n";
}

constexpr double kLegendRow = 20, kLegendSample = 26, kLegendPad = 10;

double legend_width(const std::vector<Series>& series) {
    double widest = 0;
    for (const Series& s : series) widest = std::max(widest, text_width(s.label));
    return widest > 0 ? kLegendPad + kLegendSample + 8 + widest + kLegendPad : 0;
}

// Right of the plot area, so it can never cover data.
void draw_legend(Svg& svg, const std::vector<Series>& series, double left, double top) {
    size_t rows = 0;
    for (const Series& s : series) rows += !s.label.empty();
    if (rows == 0) return;
    svg << "<g class=\"legend\" font-size=\"12\">\n";
    svg << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << legend_width(series)
        << "\" height=\"" << 2 * kLegendPad + static_cast<double>(rows) * kLegendRow - 6
        << "\" fill=\"#ffffff\" stroke=\"#cccccc\" rx=\"3\"/>\n";
    double cy = top + kLegendPad + 7;
    for (size_t i = 0; i < series.size(); ++i) {
        if (series[i].label.empty()) continue;
        const size_t style = style_index(series[i], i);
        const char* colour = kPalette[style % kPalette.size()];
        const double x0 = left + kLegendPad, x1 = x0 + kLegendSample;
        svg << "<g stroke=\"" << colour << "\" fill=\"" << colour << "\" stroke-width=\"2\">\n";
        line(svg, x0, cy, x1, cy, dash_attribute(series[i].dash));
        svg << "<g stroke=\"#ffffff\" stroke-width=\"1\">\n";
        draw_marker(svg, kShapes[style % kShapes.size()], (x0 + x1) / 2, cy);
        svg << "</g>\n</g>\n";
        text(svg, x1 + 8, cy + 4, "start", series[i].label, " fill=\"#222222\"");
        cy += kLegendRow;
    }
    svg << "</g>\n";
}

}  // namespace

std::string line_chart_svg(const std::vector<Series>& series, const ChartOptions& options) {
    NORMNET_CHECK(options.width >= 240 && options.height >= 160, "chart size ", options.width, "x",
          options.height, " is too small (need at least 240x160)");
    NORMNET_CHECK(!options.y_min || std::isfinite(*options.y_min), "chart y_min must be finite");
    NORMNET_CHECK(!options.y_max || std::isfinite(*options.y_max), "chart y_max must be finite");
    NORMNET_CHECK(!options.y_min || !options.y_max || *options.y_min < *options.y_max, "chart y_min (",
          options.y_min.value_or(0), ") must be below y_max (", options.y_max.value_or(0), ")");

    std::vector<std::vector<std::vector<Point>>> runs;
    Range xr, yr;
    std::vector<double> xs;
    for (const Series& s : series) {
        check_series(s);
        runs.push_back(runs_of(s, options.log_x));
        for (const auto& run : runs.back())
            for (const Point& p : run) xr.add(p.x), yr.add(p.y - p.err), yr.add(p.y + p.err), xs.push_back(p.x);
    }

    double width = options.width;
    const double height = options.height;
    Frame f{0, options.title.empty() ? 20.0 : 48.0, 0, height - (options.x_label.empty() ? 34.0 : 56.0)};
    Axis y;
    set_y_domain(y, yr, options);
    y.px_lo = f.bottom, y.px_hi = f.top;
    const Ticks yt = y_ticks(y, std::max(2, static_cast<int>((f.bottom - f.top) / 60)), options.percent_y);

    // The left margin fits the widest y tick label, plus the rotated y-axis label.
    double widest = 0;
    for (const auto& l : yt.labels) widest = std::max(widest, text_width(l));
    f.left = widest + kTickLength + 12 + (options.y_label.empty() ? 0 : 24);
    const double legend = legend_width(series);
    const double right_margin = legend > 0 ? legend + 28 : 24;
    // Long legend labels squeeze the plot only so far; past that the picture grows wider rather
    // than cutting the legend off.
    width = std::ceil(std::max(width, f.left + std::max(160.0, 0.4 * width) + right_margin));
    f.right = width - right_margin;
    Axis x;
    x.log = options.log_x;
    set_x_domain(x, xr);
    x.px_lo = options.reverse_x ? f.right : f.left, x.px_hi = options.reverse_x ? f.left : f.right;
    const Ticks xt = x_ticks(x, xs, std::max(2, static_cast<int>((f.right - f.left) / 90)), options.integer_x);

    Svg svg;
    svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << fixed(width, 0) << "\" height=\""
        << fixed(height, 0) << "\" viewBox=\"0 0 " << fixed(width, 0) << " " << fixed(height, 0)
        << "\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n";
    // Markers on the frame (e.g. 100% accuracy with y_max = 1) stay whole; anything further out is cut.
    const double m = kMarkerRadius + 2;
    svg << "<defs><clipPath id=\"plot-area\"><rect x=\"" << f.left - m << "\" y=\"" << f.top - m
        << "\" width=\"" << f.right - f.left + 2 * m << "\" height=\"" << f.bottom - f.top + 2 * m
        << "\"/></clipPath></defs>\n";
    svg << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
    if (!options.title.empty())
        text(svg, (f.left + f.right) / 2, 28, "middle", options.title, " font-size=\"16\" font-weight=\"bold\"");
    draw_axes(svg, f, x, y, xt, yt);
    if (!options.x_label.empty()) text(svg, (f.left + f.right) / 2, height - 14, "middle", options.x_label);
    if (!options.y_label.empty()) {
        const double cx = 18, cy = (f.top + f.bottom) / 2;
        text(svg, cx, cy, "middle", options.y_label,
             " transform=\"rotate(-90 " + fixed(cx) + " " + fixed(cy) + ")\"");
    }
    draw_all_series(svg, series, runs, x, y);
    if (xs.empty())
        text(svg, (f.left + f.right) / 2, (f.top + f.bottom) / 2, "middle", "no data",
             " fill=\"#888888\" font-size=\"14\" font-style=\"italic\"");
    draw_legend(svg, series, f.right + 16, f.top);
    svg << "</svg>\n";
    return std::move(svg.out);
}

}  // namespace normnet::cli
