// `normnet compare`: trains the same architecture under several normalisations and batch sizes
// from the same seed (identical initial Linear weights for every normalisation, identical data
// order for a given batch size) and reports accuracy, batch-size sensitivity, the train/eval
// discrepancy and time, as CSV, Markdown and SVG charts.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "batch_statistics.hpp"
#include "batch_size_report.hpp"
#include "commands.hpp"
#include "compare_grid.hpp"
#include "compare_lm.hpp"
#include "compare_world.hpp"
#include "models.hpp"
#include "progress.hpp"
#include "sequence_findings.hpp"
#include "signals.hpp"
#include "svg_chart.hpp"
#include "trainer.hpp"
#include "normnet/normnet.hpp"

namespace normnet::cli {
namespace {

struct CompareArgs {
    RunConfig base;
    std::string norms = "layer,batch,none";
    std::string batch_sizes = "4,16,64,256";
    ModelArgs model;
    std::string lr_scaling = "none";  // none | linear | sqrt
    int64_t reference_batch = 128;
    int seeds = 1;
    int64_t discrepancy_images = 10000;
    std::string out;
    bool overwrite = false;
    std::string command_line;
    int64_t train_images = 0;  // after --limit
    std::string data_name;            // "mnist", or a table's file name
    std::string samples = "images";   // or "rows" (a table's)
    std::string worlds = "1";           // data-parallel axis (compare_world.hpp)
    std::string bn_sync_modes = "local,sync";
    // A choice option of the model given as a list (the ViT's --norm-placement pre,post): a second
    // axis of the grid's rows. Null without one.
    const ModelOption* axis = nullptr;
    std::vector<std::string> axis_labels;
    // A regression table: the grid's score is R² (the share of the target's variance explained)
    // where a classification's is accuracy, and its error 1 - R².
    bool r2 = false;
    std::string target;  // a table's target column
    std::string score_name() const { return r2 ? "R²" : "accuracy"; }
    std::string score_short() const { return r2 ? "R²" : "acc"; }
    std::string error_name() const { return r2 ? "1 − R²" : "error"; }
};

// The grid's rows are keyed by normalisation ("layer"), or with a choice axis by normalisation
// and choice label ("layer/post-LN"), so that every table, chart and cell lookup keeps one key.
std::string row_norm(const std::string& row) { return row.substr(0, row.find('/')); }

std::string row_label(const std::string& row) {
    const size_t slash = row.find('/');
    return slash == std::string::npos ? norm_label(row) : norm_label(row.substr(0, slash)) + ", " + row.substr(slash + 1);
}

// The base model's architecture; with a choice axis, its choice's label replaced by the axis's
// labels ("... pre-LN/post-LN"), since the rows differ in it.
std::string grid_architecture(const CompareArgs& a) {
    std::string s = a.base.model.architecture();
    if (a.axis == nullptr) return s;
    std::string labels;
    for (const std::string& l : a.axis_labels) labels += (labels.empty() ? "" : "/") + l;
    const std::string own = choice_of(a.base.model, *a.axis).label;
    const size_t at = s.rfind(own);
    return at == std::string::npos ? s + " " + labels : s.replace(at, own.size(), labels);
}

// The choice (its name) of a row with a choice axis, "" without.
std::string row_choice(const CompareArgs& a, const std::string& row) {
    const size_t slash = row.find('/');
    if (a.axis == nullptr || slash == std::string::npos) return "";
    for (const ModelChoice& c : a.axis->choices) {
        if (c.label == row.substr(slash + 1)) return c.name;
    }
    return "";
}

// Epochs per run unless --epochs says otherwise.
constexpr int64_t kCompareEpochs = 5;

// The files compare writes, in its output folder.
const std::vector<std::string> kCompareFiles{"results.csv", "curves.csv", "report.md", "world.csv",
                                             "accuracy_vs_batch.svg", "test_acc_curves.svg", "error_vs_batch.svg"};

// Everything measured for one (grid row, batch size, seed) run.
struct RunResult : GridRun {
    bool r2 = false;  // CompareArgs::r2
    double train_mode_acc = 0, eval_mode_acc = 0, logit_mad = 0;  // train/eval discrepancy
    double single_sample_acc = 0, full_batch_acc = 0;
    int64_t single_sample_mismatches = 0;  // predictions that differ between batch 1 and full batch
    // Normalisations with batch statistics only (NaN otherwise): test accuracy with each test
    // batch's own statistics (training mode, batches of the run's size), and with precise
    // population statistics recomputed over the discrepancy images.
    double batch_stats_test_acc = NAN, precise_test_acc = NAN;
    // Accuracies, or with r2 the R² of the same outputs.
    bool consistent() const { return r2 ? single_sample_mismatches == 0 : single_sample_acc == full_batch_acc; }
    double score(const EpochMetrics& m) const { return r2 ? m.test_r2 : m.test_acc; }
    double final_score() const { return score(curve.back()); }
    const EpochMetrics& last() const { return curve.back(); }
    double best_test_acc() const {
        double best = -INFINITY;
        for (const EpochMetrics& m : curve) best = std::max(best, score(m));
        return best;
    }
    double seconds_per_epoch() const { return seconds() / static_cast<double>(curve.size()); }
};

double scaled_lr(const CompareArgs& a, int64_t batch) {
    const double ratio = static_cast<double>(batch) / static_cast<double>(a.reference_batch);
    if (a.lr_scaling == "linear") return a.base.lr * ratio;
    if (a.lr_scaling == "sqrt") return a.base.lr * std::sqrt(ratio);
    return a.base.lr;
}

// Logits of `data` rows in batches of `batch_size` in the model's current mode, without
// recording a graph. Training-mode BatchNorm would update its running statistics: the caller
// restores the buffers afterwards.
Tensor logits_of(Module& model, const Examples& data, int64_t batch_size, int64_t classes) {
    NoGradGuard no_grad;
    Tensor all = empty({data.size(), classes});
    int64_t row = 0;
    for (const Batch& batch : data.loader(DataLoaderOptions{.batch_size = batch_size, .shuffle = false})) {
        if (batch.size() < 2 && model.is_training()) {
            // A batch of one cannot be normalised over the batch; use eval mode for that row.
            model.eval();
            all.narrow(0, row, batch.size()).copy_(model.forward(batch.inputs.flatten(1)));
            model.train();
        } else {
            all.narrow(0, row, batch.size()).copy_(model.forward(batch.inputs.flatten(1)));
        }
        row += batch.size();
    }
    return all;
}

// The grid's score of outputs on labelled examples: accuracy, or (one output column) R² against
// the labels, a regression's standardised targets.
double score_of(const Tensor& out, const Examples& data) {
    if (out.size(1) > 1) return static_cast<double>(count_correct(out, data.label_tensor())) / static_cast<double>(data.size());
    const float* p = out.data();
    const float* y = data.labels.data();
    double mean = 0, sse = 0, sst = 0;
    for (int64_t i = 0; i < data.size(); ++i) mean += y[i];
    mean /= static_cast<double>(data.size());
    for (int64_t i = 0; i < data.size(); ++i) {
        sse += (p[i] - y[i]) * (p[i] - y[i]);
        sst += (y[i] - mean) * (y[i] - mean);
    }
    return sst > 0 ? 1 - sse / sst : NAN;
}

// Rows predicted differently by two outputs of the same examples: the class, or (one output
// column) the value beyond float rounding.
int64_t differing_predictions(const Tensor& a, const Tensor& b) {
    const int64_t cols = a.size(1);
    int64_t n = 0;
    for (int64_t i = 0; i < a.size(0); ++i) {
        const float* x = a.data() + i * cols;
        const float* y = b.data() + i * cols;
        n += cols == 1 ? std::abs(x[0] - y[0]) > 1e-5f * (1 + std::abs(y[0]))
                       : std::max_element(x, x + cols) - x != std::max_element(y, y + cols) - y;
    }
    return n;
}

// Train-mode vs eval-mode outputs on the same training images, and eval-mode batch-of-one vs
// full-batch predictions on the test set.
void measure_discrepancy(Trainer& trainer, RunResult& r, const Examples& train_subset, const Examples& test) {
    Module& model = trainer.model();
    const int64_t classes = trainer.config().model.classes;
    SavedBuffers saved(model);
    model.train();
    const Tensor train_logits = logits_of(model, train_subset, r.batch, classes);
    saved.restore();
    model.eval();
    const Tensor eval_logits = logits_of(model, train_subset, r.batch, classes);  // same batches: only the mode differs
    r.train_mode_acc = score_of(train_logits, train_subset);
    r.eval_mode_acc = score_of(eval_logits, train_subset);
    double mad = 0.0;
    const float* a = train_logits.data();
    const float* b = eval_logits.data();
    for (int64_t i = 0; i < train_logits.numel(); ++i) mad += std::abs(static_cast<double>(a[i]) - b[i]);
    r.logit_mad = mad / static_cast<double>(train_logits.numel());

    const Tensor full = logits_of(model, test, 1000, classes);
    const Tensor single = logits_of(model, test, 1, classes);
    r.full_batch_acc = score_of(full, test);
    r.single_sample_acc = score_of(single, test);
    r.single_sample_mismatches = differing_predictions(full, single);

    if (!uses_batch_statistics(row_norm(r.key))) return;
    model.train();
    r.batch_stats_test_acc = score_of(logits_of(model, test, r.batch, classes), test);
    saved.restore();
    // Precise statistics walk the model layer by layer; inside a model whose forward is not its
    // layers in order (the ViT's blocks) there is no such walk, and the cell stays NaN ("n/a").
    if (trainer.config().model.kind().layers_in_order) {
        recompute_population_statistics(model, train_subset);
        model.eval();
        r.precise_test_acc = score_of(logits_of(model, test, 1000, classes), test);
    }
    saved.restore();
    model.eval();
}

template <class F>
CellStat summarize(const std::vector<RunResult>& runs, const std::string& norm, int64_t batch, F value) {
    std::vector<double> v;
    for (const RunResult* r : cell_runs(runs, norm, batch)) v.push_back(value(*r));
    return stat_of(v);
}

std::string pct_cell(const CellStat& s, int seeds) {
    if (s.n == 0) return "";
    return seeds > 1 ? fmt("%.2f", 100 * s.mean) + " ± " + fmt("%.2f", 100 * s.std) : fmt("%.2f", 100 * s.mean);
}

// With a choice axis, its key ("norm_placement") as a last column.
std::string axis_column(const CompareArgs& a) { return a.axis == nullptr ? "" : "," + a.axis->key; }
std::string axis_cell(const CompareArgs& a, const RunResult& r) { return a.axis == nullptr ? "" : "," + row_choice(a, r.key); }

// A regression's columns say r2 where a classification's say acc.
std::string score_columns(const CompareArgs& a, std::string header) {
    for (size_t at = 0; a.r2 && (at = header.find("acc", at)) != std::string::npos;) header.replace(at, 3, "r2");
    if (const size_t at = header.find("logit_mad"); a.r2 && at != std::string::npos) header.replace(at, 9, "output_mad");
    return header;
}

std::string results_csv(const CompareArgs& a, const std::vector<RunResult>& runs) {
    std::string csv = score_columns(a,
        "norm,batch_size,seed,lr,epochs,final_test_acc,best_test_acc,final_test_loss,seconds_per_epoch,"
        "train_mode_acc,eval_mode_acc,train_eval_logit_mad,single_sample_test_acc,full_batch_test_acc,"
        "single_sample_mismatches,single_sample_consistent,batch_stats_test_acc,precise_stats_test_acc") +
        axis_column(a) + "\n";
    for (const auto& r : runs) {
        char row[512];
        const auto optional = [](double v) { return std::isnan(v) ? std::string() : fmt("%.6f", v); };
        std::snprintf(row, sizeof row, "%s,%lld,%llu,%.6g,%zu,%.6f,%.6f,%.6f,%.4f,%.6f,%.6f,%.6g,%.6f,%.6f,%lld,%s,%s,%s",
                      row_norm(r.key).c_str(), static_cast<long long>(r.batch), static_cast<unsigned long long>(r.seed), r.lr,
                      r.curve.size(), r.final_score(), r.best_test_acc(), r.last().test_loss, r.seconds_per_epoch(),
                      r.train_mode_acc, r.eval_mode_acc, r.logit_mad, r.single_sample_acc, r.full_batch_acc,
                      static_cast<long long>(r.single_sample_mismatches), r.consistent() ? "true" : "false",
                      optional(r.batch_stats_test_acc).c_str(), optional(r.precise_test_acc).c_str());
        csv += row + axis_cell(a, r) + "\n";
    }
    return csv;
}

std::string curves_csv(const CompareArgs& a, const std::vector<RunResult>& runs) {
    std::string csv = std::string("norm,batch_size,seed,epoch,train_loss,") +
                      (a.r2 ? "test_loss,test_rmse,test_r2" : "train_acc,test_loss,test_acc") + ",epoch_seconds,lr" + axis_column(a) + "\n";
    for (const auto& r : runs) {
        for (const auto& m : r.curve) {
            char row[256];
            std::snprintf(row, sizeof row, "%s,%lld,%llu,%lld,%.6f,%.6f,%.6f,%.6f,%.4f,%.6g", row_norm(r.key).c_str(),
                          static_cast<long long>(r.batch), static_cast<unsigned long long>(r.seed), static_cast<long long>(m.epoch),
                          m.train_loss, a.r2 ? m.test_loss : m.train_acc, a.r2 ? m.test_rmse : m.test_loss, r.score(m), m.seconds, m.lr);
            csv += row + axis_cell(a, r) + "\n";
        }
    }
    return csv;
}

// One Markdown table: a row per normalisation, a column per batch size.
template <class F>
std::string grid_table(const std::vector<RunResult>& runs, const std::vector<std::string>& norms,
                       const std::vector<int64_t>& batches, F cell) {
    std::string t = batch_table_head(batches);
    for (const auto& n : norms) {
        t += "| " + row_label(n) + " |";
        for (int64_t b : batches) t += " " + cell(runs, n, b) + " |";
        t += "\n";
    }
    return t;
}

std::string accuracy_table(const std::vector<RunResult>& runs, const std::vector<std::string>& norms,
                           const std::vector<int64_t>& batches, int seeds) {
    return grid_table(runs, norms, batches, [&](auto& rs, auto& n, int64_t b) {
        return pct_cell(summarize(rs, n, b, [](const RunResult& r) { return r.final_score(); }), seeds);
    });
}

// The configuration that really ran: the base options, with the grid in place of the one
// normalisation, batch size, seed and lr of a single run.
std::string grid_config_json(const CompareArgs& a, const std::vector<std::string>& norms, const std::vector<int64_t>& batches) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(a.base.to_json());
    j["model"].erase("norm");
    j.erase("batch_size");
    j.erase("seed");
    std::vector<std::string> norm_names;
    for (const auto& row : norms) {
        if (std::find(norm_names.begin(), norm_names.end(), row_norm(row)) == norm_names.end()) norm_names.push_back(row_norm(row));
    }
    j["norms"] = norm_names;
    if (a.axis != nullptr) {
        std::vector<std::string> choices;
        for (const auto& row : norms) {
            const std::string c = row_choice(a, row);
            if (std::find(choices.begin(), choices.end(), c) == choices.end()) choices.push_back(c);
        }
        j["model"][a.axis->key] = choices;
    }
    j["batch_sizes"] = batches;
    std::vector<uint64_t> seeds;
    for (int s = 0; s < a.seeds; ++s) seeds.push_back(a.base.seed + static_cast<uint64_t>(s));
    j["seeds"] = seeds;
    j["lr_scaling"] = a.lr_scaling;
    j["reference_batch"] = a.reference_batch;
    return j.dump(2);
}

// Test error per cell (1 - final test accuracy), for the paper's view of the grid.
ErrorGrid error_grid(const std::vector<RunResult>& runs, const std::vector<std::string>& norms,
                     const std::vector<int64_t>& batches, int seeds) {
    ErrorGrid g{norms, batches, {}, seeds};
    for (const auto& n : norms) g.labels.push_back(row_label(n));
    for (const auto& n : norms) {
        g.error.emplace_back();
        for (int64_t b : batches) {
            const CellStat s = summarize(runs, n, b, [](const RunResult& r) { return 1 - r.final_score(); });
            g.error.back().push_back(s);
        }
    }
    return g;
}

// BatchNorm's error with running, precise and batch statistics per batch size (the first
// normalisation of the grid that uses batch statistics).
BatchNormErrors batch_norm_errors(const std::vector<RunResult>& runs, const std::vector<std::string>& norms,
                                  const std::vector<int64_t>& batches, int seeds) {
    BatchNormErrors e;
    e.seeds = seeds;
    const auto bn = std::find_if(norms.begin(), norms.end(), [](const std::string& n) { return uses_batch_statistics(row_norm(n)); });
    if (bn == norms.end()) return e;
    const auto cell = [&](int64_t b, auto value) { return summarize(runs, *bn, b, value); };
    for (int64_t b : batches) {
        if (cell_runs(runs, *bn, b).empty()) continue;
        e.batches.push_back(b);
        e.running.push_back(cell(b, [](const RunResult& r) { return 1 - r.final_score(); }));
        e.precise.push_back(cell(b, [](const RunResult& r) { return 1 - r.precise_test_acc; }));
        e.batch_stats.push_back(cell(b, [](const RunResult& r) { return 1 - r.batch_stats_test_acc; }));
    }
    return e;
}

// The report's sentences on the sequence-model anchors (Ba et al., Xiong et al.); "" when none applies.
std::string anchors_md(const CompareArgs& a, const std::vector<RunResult>& runs) {
    std::vector<SequenceRun> seq;
    for (const RunResult& r : runs) seq.push_back({row_norm(r.key), row_choice(a, r.key), r.batch, r.curve});
    return sequence_findings_md(seq, {.recurrent = a.base.model.kind().site == NormSite::cell,
                                      .warmup = a.base.warmup,
                                      .train_images = a.train_images,
                                      .what = grid_architecture(a) + " on " + std::to_string(a.train_images) + " " +
                                              a.data_name + " training " + a.samples + " for " + plural(a.base.epochs, "epoch")});
}

std::string report_md(const CompareArgs& a, const std::vector<RunResult>& runs, const std::vector<std::string>& norms,
                      const std::vector<int64_t>& batches, double total_seconds, const std::string& incomplete) {
    const int seeds = a.seeds;
    std::string md = "# normnet compare: normalisation x batch size\n\n";
    if (!incomplete.empty()) md += "**Incomplete:** " + incomplete + "\n\n";
    md += "Model " + grid_architecture(a) + " with each normalisation " + a.base.model.kind().norm_position +
          ", data " + a.data_name +
          ", " + std::to_string(a.base.epochs) + " epochs, " + a.base.optimizer + " lr " + fmt("%g", a.base.lr) +
          " (scaling: " + a.lr_scaling + ", reference batch " + std::to_string(a.reference_batch) + "), schedule " +
          a.base.schedule + ", " + std::to_string(seeds) + " seed(s) from " + std::to_string(a.base.seed) +
          ". Every run of a seed starts from identical initial weights (the normalisation layers draw no random "
          "numbers) and sees the data in the same order for a given batch size.\n\n";
    if (const std::string anchors = anchors_md(a, runs); !anchors.empty()) {
        md += "## What this run shows against the sequence-model anchors\n\n" + anchors + "\n";
    }
    const ErrorGrid grid = error_grid(runs, norms, batches, seeds);
    const BatchNormErrors bn = batch_norm_errors(runs, norms, batches, seeds);
    if (a.r2) {
        md += "The target " + a.target + " is a regression: the score is R² (the share of its variance explained, in %), "
              "the error 1 − R².\n\n";
    }
    md += "## Test " + a.error_name() + " against batch size (%" + std::string(seeds > 1 ? ", mean ± std over seeds" : "") +
          "), as in Wu and He's Figure 1\n\n";
    md += error_table_md(grid) + "\n![test error vs batch size](error_vs_batch.svg)\n\n";
    md += "### The paper's numbers (ResNet-50, ImageNet, validation error %)\n\n" + paper_table_md() + "\n";
    md += "### What this run shows\n\n" +
          findings_md(grid, bn,
                      grid_architecture(a) + " on " + std::to_string(a.train_images) + " " +
                          a.data_name + " training " + a.samples + " for " + plural(a.base.epochs, "epoch")) +
          "\n";
    if (!bn.batches.empty()) {
        md += "### BatchNorm evaluated three ways (test error %, mean over seeds)\n\n"
              "Running statistics: the usual eval mode. Precise statistics: each BatchNorm layer's mean and variance "
              "recomputed over the first " + std::to_string(std::min(a.discrepancy_images, a.train_images)) +
              " training " + a.samples + " under the final weights, layer by layer. Batch statistics: the test set in training "
              "mode, in batches of the run's size. The gap between the first two is the train/eval mismatch of the "
              "running averages; what remains at small batches comes from training on noisy batch statistics.\n\n" +
              batch_norm_table_md(bn) + "\n";
    }
    md += "## Final test " + a.score_name() + " (%" + std::string(seeds > 1 ? ", mean ± std over seeds" : "") + ")\n\n";
    md += accuracy_table(runs, norms, batches, seeds) + "\n";
    md += "## Best test " + a.score_name() + " over epochs (%)\n\n";
    md += grid_table(runs, norms, batches, [&](auto& rs, auto& n, int64_t b) {
        return pct_cell(summarize(rs, n, b, [](const RunResult& r) { return r.best_test_acc(); }), seeds);
    }) + "\n";
    md += "## Train/eval discrepancy\n\n";
    md += "The first " + std::to_string(std::min(a.discrepancy_images, a.train_images)) +
          " training " + a.samples + " through the final model in training mode (batches of the run's size; running "
          "statistics restored afterwards) and in eval mode. The normalisations without batch statistics behave "
          "the same in both modes, so their difference is zero by construction; for BatchNorm it measures how far "
          "the running statistics are from the batch statistics.\n\n";
    md += "| normalisation | batch | train-mode " + a.score_short() + " % | eval-mode " + a.score_short() + " % | mean abs " +
          (a.r2 ? "output" : "logit") + " difference |\n|---|---:|---:|---:|---:|\n";
    for (const auto& n : norms) {
        for (int64_t b : batches) {
            const auto tm = summarize(runs, n, b, [](const RunResult& r) { return r.train_mode_acc; });
            const auto em = summarize(runs, n, b, [](const RunResult& r) { return r.eval_mode_acc; });
            const auto mad = summarize(runs, n, b, [](const RunResult& r) { return r.logit_mad; });
            md += "| " + row_label(n) + " | " + std::to_string(b) + " | " + fmt("%.2f", 100 * tm.mean) + " | " +
                  fmt("%.2f", 100 * em.mean) + " | " + fmt("%.4g", mad.mean) + " |\n";
        }
    }
    md += "\n## Eval mode, one sample at a time vs the full batch\n\n";
    md += "| normalisation | batch | seed | single-sample test " + a.score_short() + " % | full-batch test " + a.score_short() +
          " % | differing predictions | result |\n"
          "|---|---:|---:|---:|---:|---:|---|\n";
    for (const auto& r : runs) {
        md += "| " + row_label(r.key) + " | " + std::to_string(r.batch) + " | " + std::to_string(r.seed) + " | " +
              fmt("%.2f", 100 * r.single_sample_acc) +
              " | " + fmt("%.2f", 100 * r.full_batch_acc) + " | " + std::to_string(r.single_sample_mismatches) + " | " +
              (r.consistent() ? "ok" : "**FAIL**") + " |\n";
    }
    md += "\n## Seconds per training epoch\n\n";
    md += grid_table(runs, norms, batches, [&](auto& rs, auto& n, int64_t b) {
        const auto s = summarize(rs, n, b, [](const RunResult& r) { return r.seconds_per_epoch(); });
        return s.n ? fmt("%.2f", s.mean) : std::string();
    }) + "\n";
    md += "Total wall time " + format_duration(total_seconds) + " on " + plural(a.base.threads, "thread") + ".\n\n";
    md += "## Charts\n\n![accuracy vs batch size](accuracy_vs_batch.svg)\n\n![test accuracy per epoch](test_acc_curves.svg)\n\n";
    md += "## Command and config\n\n```\n" + a.command_line + "\n```\n\n```json\n" + grid_config_json(a, norms, batches) +
          "\n```\n";
    return md;
}

std::string accuracy_chart(const std::vector<RunResult>& runs, const std::vector<std::string>& norms,
                           const std::vector<int64_t>& batches, int seeds, const std::string& dataset, const std::string& score) {
    std::vector<Series> series;
    for (const auto& n : norms) {
        Series s;
        s.label = row_label(n);
        for (int64_t b : batches) {
            const auto acc = summarize(runs, n, b, [](const RunResult& r) { return r.final_score(); });
            if (acc.n == 0) continue;
            s.x.push_back(static_cast<double>(b));
            s.y.push_back(acc.mean);
            if (seeds > 1) s.y_err.push_back(acc.std);
        }
        series.push_back(s);
    }
    ChartOptions o;
    o.title = "Final test " + score + " vs batch size (" + dataset + (seeds > 1 ? ", mean ± std over " + std::to_string(seeds) + " seeds)" : ")");
    o.x_label = "batch size";
    o.y_label = "test " + score;
    o.log_x = true;
    o.percent_y = true;
    return line_chart_svg(series, o);
}

std::string curves_chart(const std::vector<RunResult>& runs, const std::vector<std::string>& norms,
                         const std::vector<int64_t>& batches, int seeds, const std::string& dataset, const std::string& score) {
    std::vector<Series> series;
    // One colour per normalisation, one line pattern per batch size; the seeds of a cell become
    // their mean with error bars of one standard deviation, as in the accuracy chart.
    for (size_t n = 0; n < norms.size(); ++n) {
        for (size_t b = 0; b < batches.size(); ++b) {
            const std::vector<const RunResult*> cell = cell_runs(runs, norms[n], batches[b]);
            if (cell.empty()) continue;
            Series s;
            s.colour = static_cast<int>(n);
            s.dash = static_cast<int>(b % 4);
            s.label = row_label(norms[n]) + ", batch " + std::to_string(batches[b]);
            for (size_t e = 0; e < cell.front()->curve.size(); ++e) {
                std::vector<double> acc;
                for (const RunResult* r : cell) acc.push_back(r->score(r->curve[e]));
                const CellStat m = stat_of(acc);
                s.x.push_back(static_cast<double>(cell.front()->curve[e].epoch));
                s.y.push_back(m.mean);
                if (seeds > 1) s.y_err.push_back(m.std);
            }
            series.push_back(s);
        }
    }
    ChartOptions o;
    o.title = "Test " + score + " per epoch (" + dataset + (seeds > 1 ? ", mean ± std over " + std::to_string(seeds) + " seeds)" : ")");
    o.x_label = "epoch";
    o.y_label = "test " + score;
    o.integer_x = true;
    o.percent_y = true;
    return line_chart_svg(series, o);
}

// The config of one run of the grid.
RunConfig run_config(const CompareArgs& a, const std::string& row, int64_t batch, int seed_index) {
    RunConfig c = a.base;
    c.model.norm = row_norm(row);
    if (const std::string choice = row_choice(a, row); !choice.empty()) {
        c.model.sizes[a.axis->key] = {choice_index(*a.axis, choice, a.axis->flag)};
    }
    c.batch_size = batch;
    c.seed = a.base.seed + static_cast<uint64_t>(seed_index);
    c.lr = scaled_lr(a, batch);
    return c;
}

void write_outputs(const std::string& dir, const CompareArgs& a, const std::vector<RunResult>& runs,
                   const std::vector<std::string>& norms, const std::vector<int64_t>& batches, double total,
                   const std::string& incomplete, const std::vector<WorldRun>& world_runs = {}) {
    const auto path = [&](const char* name) { return (std::filesystem::path(dir) / name).string(); };
    write_file_atomic(path("results.csv"), results_csv(a, runs));
    write_file_atomic(path("curves.csv"), curves_csv(a, runs));
    write_file_atomic(path("accuracy_vs_batch.svg"), accuracy_chart(runs, norms, batches, a.seeds, a.data_name, a.score_name()));
    write_file_atomic(path("test_acc_curves.svg"), curves_chart(runs, norms, batches, a.seeds, a.data_name, a.score_name()));
    write_file_atomic(path("error_vs_batch.svg"),
                      error_chart_svg(error_grid(runs, norms, batches, a.seeds),
                                      "Test " + a.error_name() + " vs batch size (" + grid_architecture(a) + ", " + a.data_name +
                                          (a.seeds > 1 ? ", mean ± std over " + std::to_string(a.seeds) + " seeds)" : ")")));
    std::string world_section;
    if (!world_runs.empty()) {
        write_file_atomic(path("world.csv"), world_csv(world_runs));
        world_section = world_report_md(world_runs, [&](const std::string& norm, int64_t batch, uint64_t seed) {
            for (const RunResult& r : runs) {
                if (r.key == norm && r.batch == batch && r.seed == seed) return std::optional<double>(r.final_score());
            }
            return std::optional<double>();
        });
    }
    write_file_atomic(path("report.md"), report_md(a, runs, norms, batches, total, incomplete) + world_section);
}

void run_compare(CompareArgs& a, const CLI::App& cmd) {
    std::vector<std::string> norms;
    std::vector<int64_t> batches;
    std::vector<int> worlds;
    std::vector<std::string> modes;
    as_usage_error([&] {
        worlds = parse_world_list(a.worlds);
        modes = parse_bn_sync_list(a.bn_sync_modes);
        // The model's recipe (dataset, lr...) with compare's own epochs, then the options given.
        RunConfig base = recipe_config(a.model.type);
        base.epochs = kCompareEpochs;
        take_given_options(base, a.base, cmd);
        // A choice option given as a list becomes the rows' second axis; the model takes the rest.
        ModelArgs fixed = a.model;
        std::vector<std::string> axis_names;
        for (const ModelOption& o : model_kind(a.model.type).options) {
            const auto given = fixed.values.find(o.flag);
            if (o.choices.empty() || cmd.count(o.flag) == 0 || given == fixed.values.end()) continue;
            const std::vector<std::string> items = list_items(given->second);
            if (items.size() < 2) continue;
            NORMNET_CHECK(a.axis == nullptr, o.flag, ": only one option can list several values (", a.axis->flag, " does)");
            for (const std::string& item : items) {
                const ModelChoice& choice = o.choices.at(static_cast<size_t>(choice_index(o, item, o.flag) - 1));
                NORMNET_CHECK(std::find(axis_names.begin(), axis_names.end(), item) == axis_names.end(), o.flag, ": '",
                              item, "' is listed twice");
                axis_names.push_back(item);
                a.axis_labels.push_back(choice.label);
            }
            a.axis = &o;
            fixed.values.erase(given);
        }
        base.model = model_from_options(fixed, cmd, base.model);
        a.base = base;
        norms = parse_norm_list(a.norms, a.base.model.kind().site, a.base.model.type);
        if (a.axis != nullptr) {
            std::vector<std::string> rows;
            for (const auto& n : norms) {
                for (const auto& label : a.axis_labels) rows.push_back(n + "/" + label);
            }
            norms = rows;
            NORMNET_CHECK(worlds == std::vector<int>{1}, "--world: not with a list of ", a.axis->flag, " values");
        }
        batches = parse_size_list(a.batch_sizes, "--batch-sizes");
        NORMNET_CHECK(a.seeds > 0 && a.seeds <= 1000, "--seeds: must be in [1, 1000], got ", a.seeds);
        NORMNET_CHECK(a.lr_scaling == "none" || a.lr_scaling == "linear" || a.lr_scaling == "sqrt", "--lr-scaling: unknown '",
              a.lr_scaling, "' (expected none, linear or sqrt)");
        NORMNET_CHECK(a.discrepancy_images > 0, "--discrepancy-images: must be positive, got ", a.discrepancy_images);
        a.base.validate();
        for (const auto& norm : norms) {
            for (int64_t batch : batches) run_config(a, norm, batch, 0).validate();  // e.g. BatchNorm at batch 1
        }
    });
    a.base.threads = a.base.resolved_threads();
    set_num_threads(a.base.threads);
    const TaskData data = load_task_data(a.base);
    Examples train(data.train), test(data.test);
    a.data_name = a.base.dataset;
    if (data.table) {
        // A regression is measured by R² against the standardised targets the model learns.
        const data::EncodedTable &tr = data.table->train, &te = data.table->test;
        a.r2 = data.table->schema.task == data::TableTask::regression;
        a.target = data.table->schema.target;
        NORMNET_CHECK(!a.r2 || worlds == std::vector<int>{1}, "--world: compare runs a regression (", a.target,
                      ") in one process only");
        train = Examples(tr.inputs, a.r2 ? standardised(data.table->schema, tr.targets) : tr.labels);
        test = Examples(te.inputs, a.r2 ? standardised(data.table->schema, te.targets) : te.labels);
        a.data_name = std::filesystem::path(a.base.data_dir).filename().string();
        a.samples = "rows";
    } else if (!data.classes.empty()) {  // an image folder
        a.data_name = std::filesystem::path(a.base.data_dir).filename().string();
    }
    // A table or an image folder sizes the model: its inputs (image shape) and classes.
    make_task(a.base, data, {})->complete(a.base.model);
    const Examples train_subset = train.first(a.discrepancy_images);
    a.train_images = train.size();
    const std::string dir = a.out.empty() ? "compare" : a.out;
    const bool tty = stdout_is_terminal();
    const std::string axis = a.axis == nullptr ? "" : " x " + a.axis->flag + " " + a.model.values.at(a.axis->flag);
    std::vector<RunResult> runs;
    std::vector<WorldRun> world_runs;
    GridPlan plan{.batches = batches, .seeds = a.seeds, .name = "compare", .out = dir, .files = kCompareFiles,
                  .overwrite = a.overwrite, .samples_per_unit = a.train_images, .data = &data};
    for (const std::string& n : norms) plan.rows.push_back({n, row_norm(n), row_choice(a, n), row_label(n)});
    plan.config = [&](const GridRow& row, int64_t batch, int seed) { return run_config(a, row.key, batch, seed); };
    plan.done = [&](Trainer& trainer, GridRun&& run) {
        RunResult r;
        static_cast<GridRun&>(r) = std::move(run);
        r.r2 = a.r2;
        measure_discrepancy(trainer, r, train_subset, test);
        runs.push_back(r);
        for (WorldRun& w : run_world_cell(trainer.config(), worlds, modes, dir, [] { return StopOnSignal::requested() != 0; })) {
            if (!tty) {
                std::printf("  %s batch %lld over %d processes (%s): %s\n", row_label(r.key).c_str(),
                            static_cast<long long>(r.batch), w.world, w.config.bn_sync.c_str(),
                            w.failure.empty() ? ("test acc " + fmt("%.2f", 100 * w.curve.back().test_acc) + "%").c_str()
                                              : ("failed: " + w.failure).c_str());
            }
            world_runs.push_back(std::move(w));
        }
        if (!tty) {
            std::printf("%-12s batch %4lld seed %llu: test %s %.2f%% (best %.2f%%), train/eval %s diff %.4g, "
                        "single-sample eval %s, %.2f s/epoch\n",
                        row_label(r.key).c_str(), static_cast<long long>(r.batch), static_cast<unsigned long long>(r.seed), a.score_short().c_str(),
                        100 * r.final_score(), 100 * r.best_test_acc(), a.r2 ? "output" : "logit", r.logit_mad, r.consistent() ? "ok" : "FAIL",
                        r.seconds_per_epoch());
            std::fflush(stdout);
        }
    };
    plan.write = [&](double seconds, const std::string& incomplete) {
        write_outputs(dir, a, runs, norms, batches, seconds, incomplete, incomplete.empty() ? world_runs : std::vector<WorldRun>{});
    };
    plan.header = str("normnet compare: ", a.norms, axis, " x batch sizes ", a.batch_sizes, ", ", plural(a.seeds, "seed"), ", ",
                      plural(a.base.epochs, "epoch"), " each, ", plural(plan.total_runs(), "run"), " -> ", dir, "/");
    const double total = run_grid(plan);
    std::printf("\nFinal test %s (%%):\n\n%s\n", a.score_name().c_str(), accuracy_table(runs, norms, batches, a.seeds).c_str());
    if (batches.size() > 1) {
        std::printf("Test %s (%%) against batch size, as Wu and He's Figure 1:\n\n%s\n", a.error_name().c_str(),
                    error_table_md(error_grid(runs, norms, batches, a.seeds)).c_str());
    }
    if (const std::string anchors = anchors_md(a, runs); !anchors.empty()) {
        std::printf("What this run shows against the sequence-model anchors:\n\n%s\n", anchors.c_str());
    }
    std::printf("wrote %s/results.csv, curves.csv, report.md, accuracy_vs_batch.svg, test_acc_curves.svg, error_vs_batch.svg in %s\n",
                dir.c_str(),
                format_duration(total).c_str());
    int64_t failures = 0;
    for (const auto& r : runs) failures += r.consistent() ? 0 : 1;
    NORMNET_CHECK(failures == 0, failures, " run(s) gave different eval-mode test predictions one sample at a time than in full "
          "batches (see ", dir, "/report.md)");
}

}  // namespace

void add_compare_command(CLI::App& app) {
    auto a = std::make_shared<CompareArgs>();
    RunConfig& c = a->base;
    c.epochs = kCompareEpochs;
    CLI::App* cmd = app.add_subcommand("compare", "Train under several normalisations and batch sizes and compare them");
    cmd->add_option("--norms", a->norms, "Normalisations, comma-separated: " + norms_per_model())
        ->capture_default_str();
    cmd->add_option("--batch-sizes", a->batch_sizes, "Batch sizes, comma-separated")->capture_default_str();
    add_config_option(*cmd, c, "--epochs", "Epochs per run");
    add_model_options(*cmd, a->model);
    cmd->add_option("--seeds", a->seeds, "Repeats with seeds seed, seed+1, ... (reported as mean ± std)")->capture_default_str();
    add_config_option(*cmd, c, "--lr", "Learning rate at the reference batch size");
    cmd->add_option("--lr-scaling", a->lr_scaling, "Scale the lr with batch/reference: none, linear or sqrt")
        ->check(CLI::IsMember({"none", "linear", "sqrt"}))->capture_default_str();
    cmd->add_option("--reference-batch", a->reference_batch, "Batch size at which --lr applies unscaled")->check(kSizeRange)->capture_default_str();
    add_optimizer_options(*cmd, c);
    add_config_option(*cmd, c, "--seed", "First seed");
    add_data_options(*cmd, c);
    add_own_data_options(*cmd, c);
    cmd->add_option("--discrepancy-images", a->discrepancy_images, "Training images (or a table's rows) used for the train/eval discrepancy")->capture_default_str();
    cmd->add_option("--world", a->worlds,
                    "Also train every run with these numbers of processes (mpirun -np W children of this program), "
                    "e.g. 1,2,4; the batch size is the global batch")->capture_default_str();
    cmd->add_option("--bn-sync", a->bn_sync_modes, "BatchNorm modes of the --world runs: local and/or sync")
        ->capture_default_str();
    cmd->add_option("--out", a->out, "Output folder (default: compare)");
    cmd->add_flag("--overwrite", a->overwrite, "Replace the results already in --out");
    add_compare_lm_options(*cmd);  // --model lm: compare_lm.hpp
    cmd->callback([a, cmd] {
        a->command_line = "normnet compare";
        for (const CLI::Option* o : cmd->get_options()) {
            if (o->count() == 0 || o->get_name() == "--help") continue;
            a->command_line += " " + o->get_name() + (o->get_expected_min() == 0 ? "" : " " + o->as<std::string>());
        }
        if (a->model.type == "lm") return run_compare_lm(*cmd, a->command_line);
        refuse_lm_options(*cmd, a->model.type);
        run_compare(*a, *cmd);
    });
}

}  // namespace normnet::cli
