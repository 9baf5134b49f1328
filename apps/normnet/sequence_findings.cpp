// The sequence-model anchors of compare's report, computed from the runs.
#include "sequence_findings.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "norms.hpp"

namespace normnet::cli {
namespace {

// With one seed per cell there is no noise estimate: differences below this many accuracy
// points are reported as ties, as batch_size_report does.
constexpr double kTiePoints = 0.3;

std::string fixed(double v, const char* format = "%.2f") {
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

// Test accuracy (%) and train loss per epoch, averaged over the seeds of one cell.
struct MeanCurve {
    std::vector<double> acc, loss;
    bool empty() const { return acc.empty(); }
};

MeanCurve mean_curve(const std::vector<SequenceRun>& runs, const std::string& norm, const std::string& placement,
                     int64_t batch) {
    MeanCurve m;
    int n = 0;
    for (const SequenceRun& r : runs) {
        if (r.norm != norm || r.placement != placement || r.batch != batch || r.curve.empty()) continue;
        const size_t epochs = m.empty() ? r.curve.size() : std::min(m.acc.size(), r.curve.size());
        m.acc.resize(epochs, 0.0);
        m.loss.resize(epochs, 0.0);
        for (size_t e = 0; e < epochs; ++e) {
            m.acc[e] += 100 * r.curve[e].test_acc;
            m.loss[e] += r.curve[e].train_loss;
        }
        ++n;
    }
    for (size_t e = 0; e < m.acc.size(); ++e) {
        m.acc[e] /= n;
        m.loss[e] /= n;
    }
    return m;
}

std::string at_epoch(const MeanCurve& c, size_t e) {
    return fixed(c.acc[e]) + " % test accuracy (train loss " + (std::isfinite(c.loss[e]) ? fixed(c.loss[e], "%.4f") : "not finite") + ")";
}

// "after epoch 1 A has ... against B's ...; after epoch N ...; A first reaches B's final
// accuracy at epoch k", and the signed epoch-1 gap of A over B in points.
std::string race(const std::string& a_name, const MeanCurve& a, const std::string& b_name, const MeanCurve& b, double& gap) {
    const size_t last = std::min(a.acc.size(), b.acc.size()) - 1;
    gap = a.acc[0] - b.acc[0];
    std::string s = "after epoch 1 " + a_name + " has " + at_epoch(a, 0) + ", " + b_name + " " + at_epoch(b, 0);
    if (last > 0) s += "; after epoch " + std::to_string(last + 1) + " " + fixed(a.acc[last]) + " % against " + fixed(b.acc[last]) + " %";
    if (last > 0) {
        for (size_t e = 0; e <= last; ++e) {
            if (a.acc[e] >= b.acc[last]) {
                s += "; " + a_name + " reaches " + b_name + "'s final accuracy at epoch " + std::to_string(e + 1);
                break;
            }
        }
    }
    return s;
}

std::vector<int64_t> batches_of(const std::vector<SequenceRun>& runs) {
    std::vector<int64_t> b;
    for (const SequenceRun& r : runs) {
        if (std::find(b.begin(), b.end(), r.batch) == b.end()) b.push_back(r.batch);
    }
    return b;
}

std::vector<std::string> norms_of(const std::vector<SequenceRun>& runs) {
    std::vector<std::string> n;
    for (const SequenceRun& r : runs) {
        if (std::find(n.begin(), n.end(), r.norm) == n.end()) n.push_back(r.norm);
    }
    return n;
}

std::string ba_point(const std::vector<SequenceRun>& runs, int64_t batch) {
    const MeanCurve ln = mean_curve(runs, "layer", "", batch), plain = mean_curve(runs, "none", "", batch);
    if (ln.empty() || plain.empty()) return "";
    double gap = 0;
    std::string s = "**Ba et al. 2016** (LayerNorm LSTMs converge faster than plain ones), batch " + std::to_string(batch) +
                    ": " + race("the LayerNorm LSTM", ln, "the plain LSTM", plain, gap) + ". ";
    if (gap > kTiePoints) {
        s += "Agrees: the LayerNorm LSTM is " + fixed(gap) + " points ahead after the first epoch.";
    } else if (gap < -kTiePoints) {
        s += "Does not agree: the plain LSTM is " + fixed(-gap) + " points ahead after the first epoch.";
    } else {
        s += "Cannot tell: the two are within " + fixed(kTiePoints, "%.1f") + " points after the first epoch (" +
             (ln.loss[0] < plain.loss[0] ? "the LayerNorm LSTM's" : "the plain LSTM's") + " train loss is the lower).";
    }
    return s;
}

std::string xiong_point(const std::vector<SequenceRun>& runs, const std::string& norm, int64_t batch, const SequenceSetting& s) {
    const MeanCurve pre = mean_curve(runs, norm, "pre", batch), post = mean_curve(runs, norm, "post", batch);
    if (pre.empty() || post.empty()) return "";
    const std::string warmup =
        s.warmup == 0 ? "no warm-up (--warmup 0)"
                      : "--warmup " + std::to_string(s.warmup) + " steps (" +
                            fixed(static_cast<double>(s.warmup * batch) / static_cast<double>(std::max<int64_t>(1, s.train_images))) +
                            " epochs)";
    double gap = 0;
    std::string line = "**Xiong et al. 2020** (pre-LN trains without warm-up, post-LN needs it), " + norm_label(norm) +
                       ", batch " + std::to_string(batch) + ", " + warmup + ": " + race("pre-LN", pre, "post-LN", post, gap) + ". ";
    const bool diverged = !std::isfinite(post.loss[0]);
    if (diverged || gap > kTiePoints) {
        line += std::string(s.warmup == 0 ? "Agrees" : "Pre-LN is ahead even with warm-up") + ": post-LN " +
                (diverged ? "did not train (its loss is not finite)" : "trails pre-LN by " + fixed(gap) + " points after the first epoch") + ".";
    } else if (gap < -kTiePoints) {
        line += "Does not agree: post-LN is " + fixed(-gap) + " points ahead after the first epoch.";
    } else {
        line += "Post-LN trains as well as pre-LN here (within " + fixed(kTiePoints, "%.1f") + " points after the first epoch)" +
                (s.warmup == 0 ? ": without warm-up the anchor's gap does not show at this depth and learning rate."
                               : ".");
    }
    if (s.warmup > 0) line += " Both had warm-up, which is what Xiong et al. say post-LN needs; --warmup 0 tests the anchor itself.";
    return line;
}

}  // namespace

std::string sequence_findings_md(const std::vector<SequenceRun>& runs, const SequenceSetting& setting) {
    std::vector<std::string> points;
    for (int64_t batch : batches_of(runs)) {
        if (setting.recurrent) {
            if (std::string p = ba_point(runs, batch); !p.empty()) points.push_back(p);
        }
        for (const std::string& norm : norms_of(runs)) {
            // Without a normalisation pre- and post-LN are the same network: nothing to compare.
            if (norm == "none") continue;
            if (std::string p = xiong_point(runs, norm, batch, setting); !p.empty()) points.push_back(p);
        }
    }
    if (points.empty()) return "";
    std::string md;
    for (const std::string& p : points) md += "- " + p + "\n";
    return md + "\nThese are " + setting.what + "; differences under " + fixed(kTiePoints, "%.1f") +
           " points are not told from noise with one seed.\n";
}

}  // namespace normnet::cli
