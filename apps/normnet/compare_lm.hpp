// `normnet compare --model lm`: the character language model of `normnet lm train` (the Trainer)
// over a grid of normalisations x placements (pre-LN, post-LN) x batch sizes x seeds, and a report
// that puts the measured validation losses next to two anchors: Shen et al., "PowerNorm" (ICML
// 2020: BatchNorm in NLP Transformers trains markedly worse than LayerNorm) and Xiong et al., "On
// Layer Normalization in the Transformer Architecture" (ICML 2020: pre-LN trains without warm-up
// where post-LN needs it). compare.cpp hands `--model lm` over to run_compare_lm().
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "batch_size_report.hpp"

namespace normnet::cli {

/// Validation loss (nats per character) per normalisation x placement x batch size, over seeds:
/// at the end of the runs and at their first validation (how fast they start).
struct LmGrid {
    std::vector<std::string> norms;       // "layer", "rms", "batch", "none"
    std::vector<std::string> placements;  // "pre", "post"
    std::vector<int64_t> batches;
    int seeds = 1;
    int64_t warmup = 0;       // the warm-up steps every run used
    int64_t first_step = 0;   // the step of the first validation
    int64_t steps = 0;        // of the whole run
    std::vector<CellStat> final_loss, first_loss;  // [norm][placement][batch], flattened; n 0: diverged or did not run
    size_t index(size_t norm, size_t placement, size_t batch) const;
    const CellStat& final_at(const std::string& norm, const std::string& placement, int64_t batch) const;
    const CellStat& first_at(const std::string& norm, const std::string& placement, int64_t batch) const;
};

/// "pre-LN" / "post-LN"
std::string placement_label(const std::string& placement);

/// Markdown bullet points computed from the grid: BatchNorm's gap to LayerNorm in bits/char
/// (Shen et al.), post-LN against pre-LN under the warm-up used (Xiong et al.), RMSNorm and no
/// normalisation against LayerNorm. Differences below the noise (0.01 bits/char, or two standard
/// errors of the difference over seeds) are called ties.
std::string lm_findings_md(const LmGrid& grid);

/// Adds to compare's command the options only the LM grid reads (--text, --steps, --context,
/// --d-model, --layers, --heads, --dropout, --norm-placement, --eval-every), each unless the
/// command has it already, and lets --model take `lm`.
void add_compare_lm_options(CLI::App& cmd);

/// Runs `normnet compare --model lm` from the options given on `cmd`; options of the image
/// models (--dataset, --hidden, --world...) are usage errors.
void run_compare_lm(const CLI::App& cmd, const std::string& command_line);

}  // namespace normnet::cli
