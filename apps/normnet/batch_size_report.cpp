// Figure 1 of Wu and He next to compare's grid: tables, chart and the computed findings.
#include "batch_size_report.hpp"

#include <algorithm>
#include <cstdio>

#include "norms.hpp"
#include "normnet/error.hpp"
#include "svg_chart.hpp"

namespace normnet::cli {
namespace {

// Y. Wu and K. He, "Group Normalization", ECCV 2018 (arXiv:1803.08494): ResNet-50 trained on
// ImageNet, validation error (%). Table 3 / Figure 1: batch size per GPU 32, 16, 8, 4, 2 for BN
// and GN; Table 1: every normalisation at batch 32.
const std::vector<int64_t> kPaperBatches{32, 16, 8, 4, 2};
struct PaperRow {
    const char* norm;
    std::vector<double> error;  // per kPaperBatches; NaN: not reported
};
const std::vector<PaperRow> kPaper{
    {"batch", {23.6, 23.7, 24.8, 27.3, 34.7}},
    {"group", {24.1, 24.2, 24.0, 24.2, 24.1}},
    {"layer", {25.3, NAN, NAN, NAN, NAN}},
    {"instance", {28.4, NAN, NAN, NAN, NAN}},
};
constexpr const char* kSource =
    "Y. Wu and K. He, \"Group Normalization\", ECCV 2018 (arXiv:1803.08494): ResNet-50 on ImageNet, validation "
    "error; batch sizes per GPU from Table 3 and Figure 1 (BN, GN), batch 32 from Table 1 (LN = GN with G = 1, IN = "
    "GN with G = C).";

std::string fixed(double v, int digits = 2) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

std::string signed_points(double v) { return (v >= 0 ? "+" : "") + fixed(v); }

std::vector<int64_t> decreasing(std::vector<int64_t> b) {
    std::sort(b.rbegin(), b.rend());
    return b;
}

// Points (percent) of a cell, NaN when it did not run.
double pts(const CellStat& c) { return c.n > 0 ? 100 * c.mean : NAN; }

std::string cell_text(const CellStat& c, int seeds) {
    if (c.n == 0) return "";
    if (std::isnan(c.mean)) return "n/a";  // not measured (precise statistics inside a library model)
    return seeds > 1 ? fixed(100 * c.mean) + " ± " + fixed(100 * c.std) : fixed(100 * c.mean);
}

// A difference smaller than this many points is not read as a difference: twice the larger
// seed std of the two cells, and at least 0.3 points (one seed gives no noise estimate).
double threshold(const CellStat& a, const CellStat& b, int seeds) {
    return std::max(0.3, seeds > 1 ? 200 * std::max(a.std, b.std) : 0.0);
}

}  // namespace

const CellStat& ErrorGrid::at(const std::string& norm, int64_t batch) const {
    static const CellStat missing;
    for (size_t n = 0; n < norms.size(); ++n) {
        for (size_t b = 0; b < batches.size(); ++b) {
            if (norms[n] == norm && batches[b] == batch) return error[n][b];
        }
    }
    return missing;
}

std::string ErrorGrid::label(const std::string& norm) const {
    for (size_t n = 0; n < norms.size() && n < labels.size(); ++n) {
        if (norms[n] == norm) return labels[n];
    }
    return norm_label(norm);
}

bool ErrorGrid::has(const std::string& norm) const {
    for (int64_t b : batches) {
        if (at(norm, b).n > 0) return true;
    }
    return false;
}

std::string batch_table_head(const std::vector<int64_t>& batches) {
    std::string t = "| normalisation |";
    for (int64_t b : batches) t += " batch " + std::to_string(b) + " |";
    t += "\n|---|";
    for (size_t i = 0; i < batches.size(); ++i) t += "---:|";
    return t + "\n";
}

std::string error_table_md(const ErrorGrid& g) {
    const std::vector<int64_t> batches = decreasing(g.batches);
    std::string t = batch_table_head(batches);
    for (const auto& n : g.norms) {
        t += "| " + g.label(n) + " |";
        for (int64_t b : batches) t += " " + cell_text(g.at(n, b), g.seeds) + " |";
        t += "\n";
    }
    return t;
}

std::string paper_table_md() {
    std::string t = batch_table_head(kPaperBatches);
    for (const PaperRow& row : kPaper) {
        t += "| " + norm_label(row.norm) + " |";
        for (double e : row.error) t += " " + (std::isnan(e) ? std::string("—") : fixed(e, 1)) + " |";
        t += "\n";
    }
    return t + "\nSource: " + kSource + "\n";
}

std::string batch_norm_table_md(const BatchNormErrors& bn) {
    std::string t = "| batch | running statistics (eval) | precise statistics (recomputed) | batch statistics (each test batch) |\n"
                    "|---:|---:|---:|---:|\n";
    std::vector<size_t> order(bn.batches.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bn.batches[a] > bn.batches[b]; });
    for (size_t i : order) {
        t += "| " + std::to_string(bn.batches[i]) + " | " + cell_text(bn.running[i], bn.seeds) + " | " +
             cell_text(bn.precise[i], bn.seeds) + " | " + cell_text(bn.batch_stats[i], bn.seeds) + " |\n";
    }
    return t;
}

std::string findings_md(const ErrorGrid& g, const BatchNormErrors& bn, const std::string& setting) {
    if (g.batches.empty()) return "";
    const int64_t hi = *std::max_element(g.batches.begin(), g.batches.end());
    const int64_t lo = *std::min_element(g.batches.begin(), g.batches.end());
    const std::string at_hi = "batch " + std::to_string(hi), at_lo = "batch " + std::to_string(lo);
    std::vector<std::string> points;
    const auto spread = [&](const std::string& n, int64_t& best, int64_t& worst) {
        double min = INFINITY, max = -INFINITY;
        for (int64_t b : g.batches) {
            const double e = pts(g.at(n, b));
            if (std::isnan(e)) continue;
            if (e < min) min = e, best = b;
            if (e > max) max = e, worst = b;
        }
        return max - min;
    };
    double bn_rise = NAN;
    if (g.has("batch") && hi != lo) {
        const CellStat &a = g.at("batch", hi), &b = g.at("batch", lo);
        bn_rise = pts(b) - pts(a);
        const double t = threshold(a, b, g.seeds);
        int64_t best = hi, worst = hi;
        spread("batch", best, worst);
        std::string s = "**BatchNorm**: ";
        if (bn_rise > t) {
            s += "the error rises as the batch shrinks, from " + fixed(pts(a)) + " % at " + at_hi + " to " + fixed(pts(b)) +
                 " % at " + at_lo + " (" + signed_points(bn_rise) + " points" +
                 (worst != lo ? "; worst at batch " + std::to_string(worst) : "") + ")";
        } else if (bn_rise < -t) {
            s += "the error does not rise as the batch shrinks: it falls from " + fixed(pts(a)) + " % at " + at_hi + " to " +
                 fixed(pts(b)) + " % at " + at_lo + " (" + signed_points(bn_rise) + " points)";
        } else {
            s += "the error stays within " + fixed(t) + " points between " + at_hi + " (" + fixed(pts(a)) + " %) and " + at_lo +
                 " (" + fixed(pts(b)) + " %): no rise that this grid can tell from noise";
        }
        points.push_back(s + ". In the paper it rises from 23.6 % at batch 32 to 34.7 % at batch 2 (+11.1 points).");
    }
    if (g.has("group")) {
        int64_t best = hi, worst = hi;
        const double s = spread("group", best, worst);
        const double t = threshold(g.at("group", best), g.at("group", worst), g.seeds);
        const bool flat = s <= t || (!std::isnan(bn_rise) && bn_rise > t && s < bn_rise / 3);
        std::string line = "**GroupNorm**: " + std::string(flat ? "flat" : "not flat") + ": its error spans " + fixed(s) +
                           " points across the batch sizes (" + fixed(pts(g.at("group", best))) + " % at batch " +
                           std::to_string(best) + " to " + fixed(pts(g.at("group", worst))) + " % at batch " +
                           std::to_string(worst) + ")";
        if (!std::isnan(bn_rise)) line += ", against BatchNorm's " + signed_points(bn_rise) + " from " + at_hi + " to " + at_lo;
        points.push_back(line + ". In the paper it spans 0.2 points (24.0 to 24.2 %).");
        if (g.has("batch")) {
            // The smallest batch down to which BatchNorm is at least as good as GroupNorm.
            std::vector<int64_t> down = decreasing(g.batches);
            int64_t last_bn = 0;
            for (int64_t b : down) {
                if (pts(g.at("batch", b)) <= pts(g.at("group", b))) last_bn = b;
                else break;
            }
            points.push_back(std::string("**BatchNorm against GroupNorm**: ") +
                             (last_bn == 0      ? "GroupNorm has the lower error at every batch size here"
                              : last_bn == lo   ? "BatchNorm's error is at most GroupNorm's at every batch size here"
                                                : "BatchNorm's error is at most GroupNorm's down to batch " +
                                                    std::to_string(last_bn) + "; below it GroupNorm's is lower") +
                             ". In the paper BatchNorm is better at 32 and 16, GroupNorm from 8 down.");
        }
    }
    if (g.has("layer")) {
        const CellStat& l = g.at("layer", hi);
        std::string line = "**LayerNorm** (GroupNorm with one group): " + fixed(pts(l)) + " % at " + at_hi;
        for (const char* other : {"batch", "group"}) {
            const CellStat& o = g.at(other, hi);
            if (o.n == 0) continue;
            const double d = pts(l) - pts(o);
            line += std::string(", ") + fixed(std::abs(d)) + " points " + (d >= 0 ? "above " : "below ") + g.label(other);
        }
        if (hi != lo && g.at("layer", lo).n > 0) line += "; " + fixed(pts(g.at("layer", lo))) + " % at " + at_lo;
        points.push_back(line + ". In the paper, at batch 32: 25.3 %, 1.7 points above BatchNorm and 1.2 above GroupNorm.");
    }
    // The ranking at the two ends of the grid.
    for (int64_t b : hi == lo ? std::vector<int64_t>{hi} : std::vector<int64_t>{hi, lo}) {
        std::vector<std::pair<double, std::string>> ranked;
        for (const auto& n : g.norms) {
            if (g.at(n, b).n > 0) ranked.emplace_back(pts(g.at(n, b)), n);
        }
        std::sort(ranked.begin(), ranked.end());
        std::string line = "**Ranking at batch " + std::to_string(b) + "** (lowest error first): ";
        for (size_t i = 0; i < ranked.size(); ++i) {
            line += (i ? ", " : "") + g.label(ranked[i].second) + " " + fixed(ranked[i].first) + " %";
        }
        points.push_back(line + ".");
    }
    // A rise that every normalisation shows is the training setting's, not BatchNorm's.
    if (hi != lo && g.norms.size() > 1) {
        std::vector<std::pair<std::string, double>> rises;
        bool all = true;
        for (const auto& n : g.norms) {
            const CellStat &a = g.at(n, hi), &b = g.at(n, lo);
            if (a.n == 0 || b.n == 0) continue;
            rises.emplace_back(n, pts(b) - pts(a));
            all = all && pts(b) - pts(a) > threshold(a, b, g.seeds);
        }
        if (all && rises.size() > 1) {
            std::string line = "**Every normalisation** loses accuracy from " + at_hi + " to " + at_lo + " here (";
            for (size_t i = 0; i < rises.size(); ++i) {
                line += (i ? ", " : "") + g.label(rises[i].first) + " " + signed_points(rises[i].second);
            }
            line += " points): that much of the rise is shared by every normalisation, so it is the training setting's "
                    "(e.g. the lr scaled with the batch over the same epochs), not BatchNorm's";
            if (g.has("batch") && g.has("group")) {
                const double excess = (pts(g.at("batch", lo)) - pts(g.at("batch", hi))) -
                                      (pts(g.at("group", lo)) - pts(g.at("group", hi)));
                line += "; BatchNorm's own excess over GroupNorm's rise is " + signed_points(excess) + " points";
            }
            points.push_back(line + ".");
        }
    }
    // How much of BatchNorm's small-batch error is its statistics at test time.
    const auto index = [&](int64_t b) {
        return static_cast<size_t>(std::find(bn.batches.begin(), bn.batches.end(), b) - bn.batches.begin());
    };
    // Precise statistics are not measured inside a library model (the ViT's blocks): NaN.
    if (!bn.batches.empty() && index(lo) < bn.batches.size() && index(hi) < bn.batches.size() &&
        !std::isnan(bn.precise[index(lo)].mean)) {
        const double running = pts(bn.running[index(lo)]), precise = pts(bn.precise[index(lo)]),
                     batch_stats = pts(bn.batch_stats[index(lo)]), base = pts(bn.running[index(hi)]);
        std::string line = "**BatchNorm's statistics at " + at_lo + "**: test error " + fixed(running) +
                           " % with its running statistics, " + fixed(precise) + " % with precise population statistics and " +
                           fixed(batch_stats) + " % with each test batch's own statistics";
        const double loss = running - base, recovered = running - precise;
        const double t = threshold(bn.running[index(lo)], bn.running[index(hi)], g.seeds);
        if (hi != lo && loss > t && recovered > t) {
            const double share = recovered / loss;
            line += ". Of the " + fixed(loss) + " points BatchNorm loses between " + at_hi + " and " + at_lo +
                    ", recomputing the statistics recovers " + fixed(recovered) + " (" + fixed(100 * share, 0) + " %): " +
                    (share > 0.6   ? "most of the loss is the running averages disagreeing with the final weights (the train/eval mismatch)"
                     : share > 0.2 ? "part of the loss is the train/eval mismatch, the rest training with noisy small-batch statistics"
                                   : "little of the loss is the train/eval mismatch; it comes from training with noisy small-batch statistics");
        } else {
            line += std::string(". Recomputing the statistics changes the error by ") + signed_points(precise - running) +
                    " points: " +
                    (hi != lo && loss > t ? "none of the loss between " + at_hi + " and " + at_lo +
                                                " is the train/eval mismatch; it comes from training with noisy small-batch statistics"
                                          : "the running statistics match the final weights");
        }
        points.push_back(line + ".");
    }
    std::string md;
    for (const auto& p : points) md += "- " + p + "\n";
    return md + "\nThese are " + setting +
           ", not ResNet-50 on ImageNet: the levels are not comparable with the paper's, only the shapes of the curves.\n";
}

std::string error_chart_svg(const ErrorGrid& g, const std::string& title) {
    std::vector<Series> series;
    for (size_t n = 0; n < g.norms.size(); ++n) {
        Series s;
        s.label = g.label(g.norms[n]);
        for (int64_t b : decreasing(g.batches)) {
            const CellStat& c = g.at(g.norms[n], b);
            if (c.n == 0) continue;
            s.x.push_back(static_cast<double>(b));
            s.y.push_back(c.mean);
            if (g.seeds > 1) s.y_err.push_back(c.std);
        }
        series.push_back(s);
    }
    ChartOptions o;
    o.title = title;
    o.x_label = "batch size (images per step)";
    o.y_label = "test error";
    o.log_x = true;
    o.reverse_x = true;
    o.percent_y = true;
    return line_chart_svg(series, o);
}

}  // namespace normnet::cli
