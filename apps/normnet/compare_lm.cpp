// `normnet compare --model lm`: the grid of LM runs, its files (results.csv, results.json,
// curves.csv, report.md, val_loss_curves.svg) and the findings against Shen et al. and Xiong et al.
#include "compare_lm.hpp"
#include "compare_grid.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numbers>
#include <optional>
#include <set>

#include "commands.hpp"
#include "task.hpp"
#include "norms.hpp"
#include "progress.hpp"
#include "run_folder.hpp"
#include "signals.hpp"
#include "svg_chart.hpp"
#include "trainer.hpp"
#include "normnet/normnet.hpp"

namespace normnet::cli {

namespace {

constexpr double kLn2 = std::numbers::ln2;
// Below this a difference of bits per character is called a tie (one seed has no error bar).
constexpr double kTieBits = 0.01;

// compare's defaults for the LM where they differ from the image grid's.
constexpr const char* kLmNorms = "layer,rms,batch,none";
constexpr const char* kLmBatches = "32";
constexpr const char* kLmPlacements = "pre,post";
constexpr int64_t kLmSteps = 500;
constexpr int64_t kLmEvalEvery = 100;

const std::vector<std::string> kLmFiles{"results.csv", "results.json", "curves.csv", "report.md", "val_loss_curves.svg"};

// The options the LM grid reads; any other option given is an error for --model lm.
const std::set<std::string> kLmOptions{"--model", "--norms", "--batch-sizes", "--norm-placement", "--steps", "--text",
                                       "--context", "--d-model", "--layers", "--heads", "--dropout", "--eval-every",
                                       "--warmup", "--lr", "--weight-decay", "--schedule", "--clip", "--seed",
                                       "--seeds", "--threads", "--out", "--overwrite", "--help"};

struct LmCompareArgs {
    RunConfig base = recipe_config("lm");
    std::vector<std::string> norms, placements;
    std::vector<int64_t> batches;
    int seeds = 1;
    std::string out = "compare";
    bool overwrite = false;
    std::string command_line;
};

// One run of the grid.
struct LmRun : GridRun {
    std::string norm, placement;
    int64_t context = 0;
    double tokens_per_second() const {
        return curve.empty() ? NAN : static_cast<double>(curve.back().step * batch * context) / seconds();
    }
    double final_loss() const { return diverged.empty() && !curve.empty() ? curve.back().test_loss : NAN; }
};

RunConfig run_config(const LmCompareArgs& a, const std::string& norm, const std::string& placement, int64_t batch, int seed) {
    RunConfig c = a.base;
    c.model.norm = norm;
    c.model.sizes["norm_placement"] = {placement == "pre" ? 1 : 2};
    c.batch_size = batch;
    c.seed = a.base.seed + static_cast<uint64_t>(seed);
    return c;
}

LmCompareArgs parse_args(const CLI::App& cmd, const std::string& command_line) {
    LmCompareArgs a;
    a.command_line = command_line;
    for (const CLI::Option* o : cmd.get_options()) {
        if (o->count() > 0 && kLmOptions.count(o->get_name()) == 0) {
            throw UsageError(str(o->get_name(), ": does not apply to --model lm (its options: --text, --steps, --context, "
                                               "--d-model, --layers, --heads, --norm-placement, --warmup, --lr, ...; "
                                               "see normnet lm train --help)"));
        }
    }
    RunConfig& c = a.base;
    as_usage_error([&] {
        c.text = given_option<std::string>(cmd, "--text", c.text);
        c.steps = given_option<int64_t>(cmd, "--steps", kLmSteps);
        c.eval_every = given_option<int64_t>(cmd, "--eval-every", std::min(kLmEvalEvery, c.steps));
        for (const auto& [flag, key] : {std::pair{"--context", "context"}, {"--d-model", "d_model"}, {"--layers", "layers"},
                                        {"--heads", "heads"}}) {
            c.model.sizes[key] = {given_option<int64_t>(cmd, flag, c.model.scalar(key))};
        }
        c.model.dropout = given_option<double>(cmd, "--dropout", c.model.dropout);
        c.warmup = given_option<int64_t>(cmd, "--warmup", c.warmup);
        c.lr = given_option<double>(cmd, "--lr", c.lr);
        c.weight_decay = given_option<double>(cmd, "--weight-decay", c.weight_decay);
        c.schedule = given_option<std::string>(cmd, "--schedule", c.schedule);
        NORMNET_CHECK(c.schedule == "cosine" || c.schedule == "constant", "--schedule: --model lm takes cosine or constant, not ",
                      c.schedule);
        c.clip = given_option<double>(cmd, "--clip", c.clip);
        c.seed = given_option<uint64_t>(cmd, "--seed", c.seed);
        c.threads = given_option<int>(cmd, "--threads", 0);
        a.norms = parse_norm_list(given_option<std::string>(cmd, "--norms", kLmNorms), NormSite::features, "lm");
        a.batches = parse_size_list(given_option<std::string>(cmd, "--batch-sizes", kLmBatches), "--batch-sizes");
        const std::string placements = given_option<std::string>(cmd, "--norm-placement", kLmPlacements);
        for (const std::string& p : list_items(placements)) {
            NORMNET_CHECK(p == "pre" || p == "post", "--norm-placement: unknown '", p, "' in '", placements,
                          "' (expected pre and/or post)");
            NORMNET_CHECK(std::find(a.placements.begin(), a.placements.end(), p) == a.placements.end(), "--norm-placement: '",
                          p, "' is listed twice");
            a.placements.push_back(p);
        }
        a.seeds = given_option<int>(cmd, "--seeds", 1);
        NORMNET_CHECK(a.seeds > 0 && a.seeds <= 1000, "--seeds: must be in [1, 1000], got ", a.seeds);
        a.out = given_option<std::string>(cmd, "--out", a.out);
        a.overwrite = cmd.count("--overwrite") > 0;
        for (const auto& n : a.norms) {
            for (const auto& p : a.placements) {
                for (int64_t b : a.batches) run_config(a, n, p, b, 0).validate();
            }
        }
    });
    return a;
}

LmGrid make_grid(const LmCompareArgs& a, const std::vector<LmRun>& runs) {
    LmGrid g{a.norms, a.placements, a.batches, a.seeds, a.base.warmup, std::min(a.base.eval_every, a.base.steps),
             a.base.steps, {}, {}};
    for (const auto& n : a.norms) {
        for (const auto& p : a.placements) {
            for (int64_t b : a.batches) {
                std::vector<double> final_loss, first_loss;
                for (const LmRun* r : cell_runs(runs, n + "/" + p, b)) {
                    final_loss.push_back(r->final_loss());
                    first_loss.push_back(r->curve.empty() ? NAN : r->curve.front().test_loss);
                }
                g.final_loss.push_back(stat_of(finite(final_loss)));
                g.first_loss.push_back(stat_of(finite(first_loss)));
            }
        }
    }
    return g;
}

std::string bits_cell(const CellStat& s, int seeds) {
    if (s.n == 0) return "—";
    return seeds > 1 ? fmt("%.3f", s.mean / kLn2) + " ± " + fmt("%.3f", s.std / kLn2) : fmt("%.3f", s.mean / kLn2);
}

std::string row_label(const std::string& norm, const std::string& placement) {
    return norm_label(norm) + ", " + placement_label(placement);
}

// Markdown: a row per normalisation x placement, a column per batch size; `nats` or bits/char.
std::string loss_table_md(const LmGrid& g, bool nats) {
    std::string t = batch_table_head(g.batches);
    for (const auto& n : g.norms) {
        for (const auto& p : g.placements) {
            t += "| " + row_label(n, p) + " |";
            for (int64_t b : g.batches) {
                const CellStat& s = g.final_at(n, p, b);
                t += " " + (nats ? (s.n ? fmt("%.4f", s.mean) + (g.seeds > 1 ? " ± " + fmt("%.4f", s.std) : "") : "—")
                                 : bits_cell(s, g.seeds)) + " |";
            }
            t += "\n";
        }
    }
    return t;
}

// Markdown: the validation loss (bits/char, mean over seeds) of each cell at every validation.
std::string curve_table_md(const LmCompareArgs& a, const std::vector<LmRun>& runs) {
    std::vector<int64_t> steps;
    for (int64_t s = std::min(a.base.eval_every, a.base.steps); s < a.base.steps; s += a.base.eval_every) steps.push_back(s);
    steps.push_back(a.base.steps);
    std::string t = "| run | batch |";
    std::string rule = "|---|---:|";
    for (int64_t s : steps) {
        t += " step " + std::to_string(s) + " |";
        rule += "---:|";
    }
    t += "\n" + rule + "\n";
    for (const auto& n : a.norms) {
        for (const auto& p : a.placements) {
            for (int64_t b : a.batches) {
                const auto cell = cell_runs(runs, n + "/" + p, b);
                if (cell.empty()) continue;
                t += "| " + row_label(n, p) + " | " + std::to_string(b) + " |";
                for (int64_t s : steps) {
                    std::vector<double> v;
                    for (const LmRun* r : cell) {
                        for (const EpochMetrics& m : r->curve) {
                            if (m.step == s) v.push_back(m.test_loss);
                        }
                    }
                    t += " " + bits_cell(stat_of(finite(v)), a.seeds) + " |";
                }
                t += "\n";
            }
        }
    }
    return t;
}

std::string curves_chart(const LmCompareArgs& a, const std::vector<LmRun>& runs) {
    std::vector<Series> series;
    for (size_t n = 0; n < a.norms.size(); ++n) {
        for (size_t p = 0; p < a.placements.size(); ++p) {
            for (size_t b = 0; b < a.batches.size(); ++b) {
                const auto cell = cell_runs(runs, a.norms[n] + "/" + a.placements[p], a.batches[b]);
                if (cell.empty()) continue;
                Series s;
                s.colour = static_cast<int>(n);
                s.dash = static_cast<int>((p * a.batches.size() + b) % 4);
                s.label = row_label(a.norms[n], a.placements[p]) + (a.batches.size() > 1 ? ", batch " + std::to_string(a.batches[b]) : "");
                for (size_t e = 0; e < cell.front()->curve.size(); ++e) {
                    std::vector<double> v;
                    for (const LmRun* r : cell) v.push_back(e < r->curve.size() ? r->curve[e].test_loss / kLn2 : NAN);
                    const CellStat m = stat_of(finite(v));
                    s.x.push_back(static_cast<double>(cell.front()->curve[e].step));
                    s.y.push_back(m.n ? m.mean : NAN);
                    if (a.seeds > 1) s.y_err.push_back(m.std);
                }
                series.push_back(s);
            }
        }
    }
    ChartOptions o;
    o.title = "Validation loss per step (character LM" + (a.seeds > 1 ? ", mean ± std over " + std::to_string(a.seeds) + " seeds)" : std::string(")"));
    o.x_label = "optimizer step";
    o.y_label = "validation bits/char";
    o.integer_x = true;
    return line_chart_svg(series, o);
}

std::string results_csv(const std::vector<LmRun>& runs) {
    std::string csv = "norm,placement,batch_size,seed,steps,final_train_loss,final_val_loss,final_val_bits_per_char,seconds,"
                      "tokens_per_second,diverged\n";
    for (const LmRun& r : runs) {
        const bool has = !r.curve.empty();
        char row[512];
        std::snprintf(row, sizeof row, "%s,%s,%lld,%llu,%lld,%s,%s,%s,%.3f,%.1f,%s\n", r.norm.c_str(), r.placement.c_str(),
                      static_cast<long long>(r.batch), static_cast<unsigned long long>(r.seed),
                      static_cast<long long>(has ? r.curve.back().step : 0),
                      has ? fmt("%.6f", r.curve.back().train_loss).c_str() : "",
                      r.diverged.empty() && has ? fmt("%.6f", r.final_loss()).c_str() : "",
                      r.diverged.empty() && has ? fmt("%.6f", r.final_loss() / kLn2).c_str() : "", r.seconds(),
                      r.tokens_per_second(), r.diverged.empty() ? "false" : "true");
        csv += row;
    }
    return csv;
}

std::string curves_csv(const std::vector<LmRun>& runs) {
    std::string csv = "norm,placement,batch_size,seed,step,train_loss,val_loss,val_bits_per_char,lr,seconds\n";
    for (const LmRun& r : runs) {
        for (const EpochMetrics& m : r.curve) {
            char row[256];
            std::snprintf(row, sizeof row, "%s,%s,%lld,%llu,%lld,%.6f,%.6f,%.6f,%.6g,%.3f\n", r.norm.c_str(),
                          r.placement.c_str(), static_cast<long long>(r.batch), static_cast<unsigned long long>(r.seed),
                          static_cast<long long>(m.step), m.train_loss, m.test_loss, m.bits_per_char(), m.lr, m.seconds);
            csv += row;
        }
    }
    return csv;
}

nlohmann::ordered_json number_or_null(double v) { return std::isfinite(v) ? nlohmann::ordered_json(v) : nullptr; }

std::string results_json(const LmCompareArgs& a, const std::vector<LmRun>& runs) {
    nlohmann::ordered_json j;
    j["config"] = nlohmann::ordered_json::parse(a.base.to_json());
    j["config"]["model"].erase("norm");
    j["config"]["model"].erase("norm_first");
    j["config"].erase("batch_size");
    j["config"].erase("seed");
    j["norms"] = a.norms;
    j["placements"] = a.placements;
    j["batch_sizes"] = a.batches;
    std::vector<uint64_t> seeds;
    for (int s = 0; s < a.seeds; ++s) seeds.push_back(a.base.seed + static_cast<uint64_t>(s));
    j["seeds"] = seeds;
    j["runs"] = nlohmann::ordered_json::array();
    for (const LmRun& r : runs) {
        nlohmann::ordered_json curve = nlohmann::ordered_json::array();
        for (const EpochMetrics& m : r.curve) {
            curve.push_back({{"step", m.step}, {"train_loss", number_or_null(m.train_loss)}, {"val_loss", number_or_null(m.test_loss)},
                             {"val_bits_per_char", number_or_null(m.bits_per_char())}, {"lr", m.lr}, {"seconds", number_or_null(m.seconds)}});
        }
        j["runs"].push_back({{"norm", r.norm}, {"placement", r.placement}, {"batch_size", r.batch}, {"seed", r.seed},
                             {"final_val_loss", number_or_null(r.final_loss())},
                             {"final_val_bits_per_char", number_or_null(r.final_loss() / kLn2)},
                             {"tokens_per_second", number_or_null(r.tokens_per_second())},
                             {"diverged", r.diverged.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.diverged)},
                             {"curve", curve}});
    }
    return j.dump(2) + "\n";
}

std::string report_md(const LmCompareArgs& a, const std::vector<LmRun>& runs, double total_seconds, const std::string& incomplete,
                      int64_t vocab, int64_t train_chars, int64_t val_chars) {
    const LmGrid g = make_grid(a, runs);
    const ModelSpec& m = a.base.model;
    std::string md = "# normnet compare: character LM, normalisation x placement x batch size\n\n";
    if (!incomplete.empty()) md += "**Incomplete:** " + incomplete + "\n\n";
    md += "Model: GPT-style character Transformer (CharTransformer), context " + std::to_string(m.scalar("context")) + ", d_model " +
          std::to_string(m.scalar("d_model")) + ", " + plural(m.scalar("layers"), "block") + ", " + plural(m.scalar("heads"), "head") + ", vocabulary " +
          std::to_string(vocab) + "; corpus " + a.base.text + " (" + std::to_string(train_chars) + " training / " +
          std::to_string(val_chars) + " held-out characters). " + plural(a.base.steps, "step") + " of AdamW lr " +
          fmt("%g", a.base.lr) + ", weight decay " + fmt("%g", a.base.weight_decay) + ", warm-up " +
          std::to_string(a.base.warmup) + " steps then " + a.base.schedule + ", clip " + fmt("%g", a.base.clip) + ", " +
          plural(a.seeds, "seed") + " from " + std::to_string(a.base.seed) +
          ". For a seed, every run starts from the same weights (the normalisations draw no random numbers) and, for a "
          "batch size, sees the same windows. Validation: mean cross-entropy over the held-out stream's consecutive "
          "windows, in eval mode (BatchNorm with its running statistics).\n\n";
    md += std::string("## Final validation loss, bits per character") + (a.seeds > 1 ? " (mean ± std over seeds)" : "") +
          "\n\n" + loss_table_md(g, false) + "\n";
    md += "## Final validation loss, nats per character\n\n" + loss_table_md(g, true) + "\n";
    md += "## What this run shows\n\n" + lm_findings_md(g) + "\n";
    md += "## Validation loss (bits/char) at each validation\n\n" + curve_table_md(a, runs) +
          "\n![validation loss per step](val_loss_curves.svg)\n\n";
    md += "## Time\n\n| run | batch | seed | seconds | tokens/s | note |\n|---|---:|---:|---:|---:|---|\n";
    for (const LmRun& r : runs) {
        md += "| " + row_label(r.norm, r.placement) + " | " + std::to_string(r.batch) + " | " + std::to_string(r.seed) + " | " +
              fmt("%.1f", r.seconds()) + " | " + fmt("%.0f", r.tokens_per_second()) + " | " +
              (r.diverged.empty() ? "" : "diverged: " + r.diverged) + " |\n";
    }
    md += "\nTotal wall time " + format_duration(total_seconds) + " on " + plural(a.base.threads, "thread") + ".\n\n";
    md += "## Command and config\n\n```\n" + a.command_line + "\n```\n\n```json\n" + results_json(a, {}) + "```\n";
    return md;
}

void write_outputs(const LmCompareArgs& a, const std::vector<LmRun>& runs, double total, const std::string& incomplete,
                   const TextCorpus& corpus) {
    const auto path = [&](const char* name) { return (std::filesystem::path(a.out) / name).string(); };
    write_file_atomic(path("results.csv"), results_csv(runs));
    write_file_atomic(path("results.json"), results_json(a, runs));
    write_file_atomic(path("curves.csv"), curves_csv(runs));
    write_file_atomic(path("val_loss_curves.svg"), curves_chart(a, runs));
    write_file_atomic(path("report.md"), report_md(a, runs, total, incomplete, corpus.vocab_size(), corpus.train.size(),
                                                   corpus.val.size()));
}

// A difference of two cells in nats and whether it exceeds the noise.
struct Gap {
    double nats = NAN;
    bool real = false;
    double bits() const { return nats / kLn2; }
};

Gap gap(const CellStat& a, const CellStat& b) {
    Gap g;
    if (a.n == 0 || b.n == 0) return g;
    g.nats = a.mean - b.mean;
    const double se = std::sqrt(a.std * a.std / a.n + b.std * b.std / b.n);
    g.real = std::abs(g.nats) > std::max(kTieBits * kLn2, 2 * se);
    return g;
}

// "0.123 bits/char above", "0.045 bits/char below", "within 0.01 bits/char of"
std::string gap_words(const Gap& g) {
    if (!g.real) return "within " + fmt("%.3f", std::max(std::abs(g.bits()), kTieBits)) + " bits/char of";
    return fmt("%.3f", std::abs(g.bits())) + " bits/char " + (g.nats > 0 ? "above" : "below");
}

std::string setting_words(const LmGrid& g, const std::string& placement, int64_t batch) {
    std::string s = placement.empty() ? "" : placement_label(placement);
    if (g.batches.size() > 1) s += (s.empty() ? "" : ", ") + std::string("batch ") + std::to_string(batch);
    return s.empty() ? "" : s + ": ";
}

// Each placement x batch: `norm` against LayerNorm; returns how many settings it was worse, better, tied.
struct Tally {
    int worse = 0, better = 0, tied = 0, missing = 0;
};

Tally against_layer(const LmGrid& g, const std::string& norm, std::string& md) {
    Tally t;
    for (const auto& p : g.placements) {
        for (int64_t b : g.batches) {
            const CellStat &x = g.final_at(norm, p, b), &ln = g.final_at("layer", p, b);
            const std::string where = setting_words(g, g.placements.size() > 1 ? p : "", b);
            if (x.n == 0 || ln.n == 0) {
                // A run that diverged (or did not finish) loses to one that ended.
                (x.n == 0 && ln.n == 0 ? t.missing : x.n == 0 ? t.worse : t.better)++;
                md += "  - " + where + (x.n == 0 && ln.n == 0 ? "both" : x.n == 0 ? norm_label(norm) : std::string("LayerNorm")) +
                      " diverged or did not finish.\n";
                continue;
            }
            const Gap d = gap(x, ln);
            (d.real ? (d.nats > 0 ? t.worse : t.better) : t.tied)++;
            md += "  - " + where + norm_label(norm) + " ends " + gap_words(d) + " LayerNorm (" + fmt("%.3f", x.mean / kLn2) +
                  " vs " + fmt("%.3f", ln.mean / kLn2) + " bits/char, " + fmt("%+.1f", 100 * (x.mean / ln.mean - 1)) + "%).\n";
        }
    }
    return t;
}

// "in every setting", "in 2 of 3 settings"
std::string share_words(int k, const Tally& t) {
    const int n = t.worse + t.better + t.tied + t.missing;
    return k == n ? std::string(n == 1 ? "in the one setting" : "in every setting")
                  : "in " + std::to_string(k) + " of " + std::to_string(n) + " settings";
}

std::string tally_words(const Tally& t) {
    const int n = t.worse + t.better + t.tied;
    return std::to_string(t.worse) + " of " + std::to_string(n + t.missing) + " setting(s) worse, " +
           std::to_string(t.better) + " better, " + std::to_string(t.tied) + " tied" +
           (t.missing ? ", " + std::to_string(t.missing) + " without a result" : "");
}

}  // namespace

size_t LmGrid::index(size_t norm, size_t placement, size_t batch) const {
    return (norm * placements.size() + placement) * batches.size() + batch;
}

namespace {
template <class V>
size_t position(const std::vector<V>& v, const V& x) {
    return static_cast<size_t>(std::find(v.begin(), v.end(), x) - v.begin());
}
const CellStat& cell_of(const LmGrid& g, const std::vector<CellStat>& cells, const std::string& norm, const std::string& placement,
                        int64_t batch) {
    static const CellStat none;
    const size_t n = position(g.norms, norm), p = position(g.placements, placement), b = position(g.batches, batch);
    if (n == g.norms.size() || p == g.placements.size() || b == g.batches.size()) return none;
    const size_t i = g.index(n, p, b);
    return i < cells.size() ? cells[i] : none;
}
}  // namespace

const CellStat& LmGrid::final_at(const std::string& norm, const std::string& placement, int64_t batch) const {
    return cell_of(*this, final_loss, norm, placement, batch);
}

const CellStat& LmGrid::first_at(const std::string& norm, const std::string& placement, int64_t batch) const {
    return cell_of(*this, first_loss, norm, placement, batch);
}

std::string placement_label(const std::string& placement) { return placement == "pre" ? "pre-LN" : "post-LN"; }

std::string lm_findings_md(const LmGrid& g) {
    std::string md;
    const bool has_layer = std::find(g.norms.begin(), g.norms.end(), "layer") != g.norms.end();
    const auto has = [&](const std::string& n) { return std::find(g.norms.begin(), g.norms.end(), n) != g.norms.end(); };
    // Shen et al.: BatchNorm against LayerNorm.
    if (has_layer && has("batch")) {
        std::string lines;
        const Tally t = against_layer(g, "batch", lines);
        std::string verdict;
        if (t.worse > 0 && t.better == 0) {
            verdict = "BatchNorm trains worse than LayerNorm " + share_words(t.worse, t) +
                      " (none better), as Shen et al. (PowerNorm, ICML 2020) found for NLP Transformers";
        } else if (t.better > 0 && t.worse == 0) {
            verdict = "BatchNorm trains better than LayerNorm " + share_words(t.better, t) +
                      " (none worse), unlike Shen et al.'s (PowerNorm, ICML 2020) finding for NLP Transformers";
        } else if (t.worse == 0 && t.better == 0) {
            verdict = "BatchNorm and LayerNorm end level here (within the noise), so this run neither shows nor contradicts "
                      "Shen et al.'s (PowerNorm, ICML 2020) gap";
        } else {
            verdict = "the run is mixed on Shen et al.'s (PowerNorm, ICML 2020) finding";
        }
        md += "- **BatchNorm vs LayerNorm (Shen et al. 2020):** " + verdict + " (" + tally_words(t) + "; a difference below " +
              fmt("%.2f", kTieBits) + " bits/char" + (g.seeds > 1 ? " or two standard errors over seeds" : "") +
              " counts as tied):\n" + lines;
    } else {
        md += "- **BatchNorm vs LayerNorm (Shen et al. 2020):** needs both `layer` and `batch` in --norms.\n";
    }
    // Xiong et al.: post-LN against pre-LN, under the warm-up used.
    const bool both = std::find(g.placements.begin(), g.placements.end(), "pre") != g.placements.end() &&
                      std::find(g.placements.begin(), g.placements.end(), "post") != g.placements.end();
    if (both) {
        std::string lines;
        Tally t, early;
        for (const auto& n : g.norms) {
            if (n == "none") continue;  // no normalisation has no placement: both runs are the same model
            for (int64_t b : g.batches) {
                const CellStat &post = g.final_at(n, "post", b), &pre = g.final_at(n, "pre", b);
                const std::string where = norm_label(n) + (g.batches.size() > 1 ? ", batch " + std::to_string(b) : "") + ": ";
                if (post.n == 0 || pre.n == 0) {
                    (post.n == 0 && pre.n == 0 ? t.missing : post.n == 0 ? t.worse : t.better)++;
                    lines += "  - " + where + (post.n == 0 && pre.n == 0 ? "both" : post.n == 0 ? "post-LN" : "pre-LN") +
                             " diverged or did not finish.\n";
                    continue;
                }
                const Gap d = gap(post, pre), e = gap(g.first_at(n, "post", b), g.first_at(n, "pre", b));
                (d.real ? (d.nats > 0 ? t.worse : t.better) : t.tied)++;
                (e.real ? (e.nats > 0 ? early.worse : early.better) : early.tied)++;
                lines += "  - " + where + "post-LN ends " + gap_words(d) + " pre-LN (" + fmt("%.3f", post.mean / kLn2) + " vs " +
                         fmt("%.3f", pre.mean / kLn2) + " bits/char); at step " + std::to_string(g.first_step) + " it was " +
                         gap_words(e) + " it.\n";
            }
        }
        const std::string warm = g.warmup == 0 ? "without warm-up (--warmup 0)" : "with a warm-up of " + std::to_string(g.warmup) + " steps (--warmup " + std::to_string(g.warmup) + ")";
        std::string verdict;
        if (t.worse + t.better + t.tied == 0) {
            verdict = "no setting has both placements";
        } else if (g.warmup == 0) {
            verdict = t.worse > 0 && t.better == 0
                          ? "post-LN trails pre-LN " + warm + " " + share_words(t.worse, t) +
                                " (never ahead), as Xiong et al. (2020) found: post-LN needs the warm-up that pre-LN does without"
                          : t.worse == 0 ? "post-LN does not trail pre-LN " + warm +
                                               " here, so this run does not show Xiong et al.'s (2020) need for warm-up"
                                         : "post-LN trails pre-LN " + warm + " " + share_words(t.worse, t) + " and leads " +
                                               share_words(t.better, t) + ": mixed on Xiong et al.'s (2020) finding";
        } else {
            verdict = (t.worse > 0 && t.better == 0 ? "post-LN still trails pre-LN " + share_words(t.worse, t) + " "
                                                    : std::string("post-LN keeps up with pre-LN ")) +
                      warm + "; Xiong et al.'s (2020) claim is about runs without warm-up: run again with --warmup 0 to test it";
        }
        md += "- **Post-LN vs pre-LN (Xiong et al. 2020):** " + verdict + " (final loss: " + tally_words(t) +
              "; at the first validation: " + tally_words(early) + "):\n" + lines;
    } else {
        md += "- **Post-LN vs pre-LN (Xiong et al. 2020):** needs `--norm-placement pre,post`.\n";
    }
    for (const char* other : {"rms", "none"}) {
        if (!has_layer || !has(other)) continue;
        std::string lines;
        const Tally t = against_layer(g, other, lines);
        md += std::string("- **") + norm_label(other) + " vs LayerNorm:** " + tally_words(t) + ":\n" + lines;
    }
    return md;
}

void add_compare_lm_options(CLI::App& cmd) {
    const auto add = [&](const std::string& flag, const std::string& help) { add_lm_option(cmd, flag, help); };
    const std::string lm = " (--model lm)";
    add("--text", "A UTF-8 text file or folder" + lm + " [" + std::string(kDefaultCorpus) + "]");
    add("--steps", "Optimizer steps per run" + lm + " [" + std::to_string(kLmSteps) + "]");
    add("--eval-every", "Steps between validations" + lm + " [" + std::to_string(kLmEvalEvery) + "]");
}

void run_compare_lm(const CLI::App& cmd, const std::string& command_line) {
    LmCompareArgs a = parse_args(cmd, command_line);
    a.base.threads = a.base.resolved_threads();
    set_num_threads(a.base.threads);
    const TaskData data = load_task_data(a.base);
    const bool tty = stdout_is_terminal();
    const int64_t context = a.base.model.scalar("context");
    std::vector<LmRun> runs;
    GridPlan plan{.batches = a.batches, .seeds = a.seeds, .name = "compare lm", .out = a.out, .files = kLmFiles,
                  .overwrite = a.overwrite, .diverged_is_result = true,  // post-LN without warm-up: a finding
                  .samples_per_unit = a.batches.front() * context, .data = &data};
    for (const auto& placement : a.placements) {  // the order the runs train in
        for (const auto& norm : a.norms) plan.rows.push_back({norm + "/" + placement, norm, placement, row_label(norm, placement)});
    }
    plan.config = [&](const GridRow& row, int64_t batch, int seed) { return run_config(a, row.norm, row.choice, batch, seed); };
    plan.done = [&](Trainer&, GridRun&& run) {
        LmRun r;
        static_cast<GridRun&>(r) = std::move(run);
        r.norm = r.key.substr(0, r.key.find('/'));
        r.placement = r.key.substr(r.key.find('/') + 1);
        r.context = context;
        runs.push_back(r);
        if (!tty) {
            std::printf("%-22s batch %4lld seed %llu: %s, %.0f tokens/s\n", row_label(r.norm, r.placement).c_str(),
                        static_cast<long long>(r.batch), static_cast<unsigned long long>(r.seed),
                        r.diverged.empty() ? val_loss_text(r.final_loss()).c_str() : ("diverged: " + r.diverged).c_str(),
                        r.tokens_per_second());
            std::fflush(stdout);
        }
    };
    plan.write = [&](double seconds, const std::string& incomplete) { write_outputs(a, runs, seconds, incomplete, *data.corpus); };
    plan.header = str("normnet compare --model lm: ", given_option<std::string>(cmd, "--norms", kLmNorms), " x ",
                      given_option<std::string>(cmd, "--norm-placement", kLmPlacements), " x batch sizes ",
                      given_option<std::string>(cmd, "--batch-sizes", kLmBatches), ", ", plural(a.seeds, "seed"), ", ",
                      plural(a.base.steps, "step"), " each, ", plural(plan.total_runs(), "run"), " -> ", a.out, "/");
    const double total = run_grid(plan);
    const LmGrid g = make_grid(a, runs);
    std::printf("\nFinal validation loss (bits/char):\n\n%s\n%s\n", loss_table_md(g, false).c_str(), lm_findings_md(g).c_str());
    std::printf("wrote %s/results.csv, results.json, curves.csv, report.md, val_loss_curves.svg in %s\n", a.out.c_str(),
                format_duration(total).c_str());
}

}  // namespace normnet::cli
