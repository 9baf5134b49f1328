// The parts of `normnet compare`'s report that put its grid next to Wu and He's batch-size
// experiment ("Group Normalization", ECCV 2018): error against batch size as a table and as a
// chart in the style of the paper's Figure 1, the paper's ImageNet numbers with their source,
// and sentences saying what this run shows, each computed from the grid (never canned).
#pragma once

#include <cmath>
#include <string>
#include <vector>

namespace normnet::cli {

/// Mean and sample standard deviation of one grid cell over its seeds (n 0: the cell did not run).
struct CellStat {
    double mean = NAN, std = 0;
    int n = 0;
};

/// Test error (a fraction) per normalisation and batch size.
struct ErrorGrid {
    std::vector<std::string> norms;
    std::vector<int64_t> batches;
    std::vector<std::vector<CellStat>> error;  // [norm][batch]
    int seeds = 1;
    /// Row labels in reports, parallel to norms ("LayerNorm, post-LN" with compare's choice axis);
    /// empty: each norm's label from the norm table.
    std::vector<std::string> labels{};
    std::string label(const std::string& norm) const;
    const CellStat& at(const std::string& norm, int64_t batch) const;
    bool has(const std::string& norm) const;
};

/// BatchNorm's error per batch size with its running statistics, with precise (recomputed)
/// population statistics and with each test batch's own statistics; empty when BatchNorm did not run.
struct BatchNormErrors {
    std::vector<int64_t> batches;
    std::vector<CellStat> running, precise, batch_stats;
    int seeds = 1;
};

/// The head of a Markdown table with a column per batch size: "| normalisation | batch 4 | ...".
std::string batch_table_head(const std::vector<int64_t>& batches);
/// Markdown: the grid's error (%) with the batch sizes from large to small, as the paper's Figure 1.
std::string error_table_md(const ErrorGrid& grid);
/// Markdown: the paper's ResNet-50 ImageNet validation errors, with their source.
std::string paper_table_md();
/// Markdown bullet points: what the grid shows about BatchNorm, GroupNorm and LayerNorm against
/// the batch size, and how much of BatchNorm's small-batch error its statistics explain.
std::string findings_md(const ErrorGrid& grid, const BatchNormErrors& bn, const std::string& setting);
/// Markdown: BatchNorm's three evaluations per batch size.
std::string batch_norm_table_md(const BatchNormErrors& bn);
/// SVG: error (%) against batch size, batch decreasing to the right on a log axis, one line per
/// normalisation (with error bars over seeds), as the paper's Figure 1.
std::string error_chart_svg(const ErrorGrid& grid, const std::string& title);

}  // namespace normnet::cli
