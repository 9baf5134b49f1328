// The engine of every `normnet compare`: a grid of runs (rows: a normalisation, with an optional
// second axis such as pre-/post-LN; batch sizes; seeds) trained one after another by the Trainer,
// each run of a seed from the same initial weights; every run's setup checked before the first
// trains; the output folder locked; a signal ends the grid after the current step, the finished
// runs written as an incomplete report. What a task measures after a run and the files it writes
// come from its plan: compare.cpp (classification: Wu and He's batch-size grid) and
// compare_lm.cpp (the character LM: Shen et al. and Xiong et al.).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "batch_size_report.hpp"
#include "task.hpp"
#include "trainer.hpp"

namespace normnet::cli {

/// One row of the grid.
struct GridRow {
    std::string key;     // "layer", or with a second axis "layer/post-LN": the runs' cell key
    std::string norm;    // "layer"
    std::string choice;  // the second axis's value ("post"), "" without one
    std::string label;   // "LayerNorm, post-LN": tables and charts
};

/// One finished run: its cell and its metrics at every evaluation.
struct GridRun {
    std::string key;  // GridRow::key
    int64_t batch = 0;
    uint64_t seed = 0;
    double lr = 0;
    std::vector<EpochMetrics> curve;
    std::string diverged;  // the NonFinite message of a run that blew up (a finding, with GridPlan::diverged_is_result)
    double seconds() const;
};

struct GridPlan {
    std::vector<GridRow> rows{};
    std::vector<int64_t> batches;
    int seeds = 1;
    std::string name;                // the progress bar's label: "compare"
    std::string header{};            // printed once the runs are checked and the folder is ready
    std::string out;                 // the output folder
    std::vector<std::string> files;  // what the plan writes there
    bool overwrite = false;
    bool diverged_is_result = false;  // a non-finite loss ends that run as a result instead of the grid
    int64_t samples_per_unit = 0;     // the progress bar counts epochs (or steps, for runs counted in steps)
    std::function<RunConfig(const GridRow&, int64_t batch, int seed_index)> config{};
    const TaskData* data = nullptr;
    /// After each finished run, with its trainer (measurements that need the model).
    std::function<void(Trainer&, GridRun&&)> done{};
    /// The plan's files from the runs kept so far; `incomplete` says why some are missing ("" when none is).
    std::function<void(double seconds, const std::string& incomplete)> write{};
    int64_t total_runs() const { return static_cast<int64_t>(rows.size() * batches.size()) * seeds; }
};

/// Checks every run's setup, locks and prepares the folder, trains the grid in order (seed, batch
/// size, row) and writes the files; returns the wall seconds. On a signal, writes what finished
/// and throws Interrupted.
double run_grid(const GridPlan& plan);

/// Mean and sample standard deviation over seeds (a NaN value makes the mean NaN: "n/a").
CellStat stat_of(const std::vector<double>& values);
/// The finite values only (a diverged run has no final loss).
std::vector<double> finite(const std::vector<double>& values);

/// The runs of one cell, one per seed.
template <class Run>
std::vector<const Run*> cell_runs(const std::vector<Run>& runs, const std::string& key, int64_t batch) {
    std::vector<const Run*> cell;
    for (const Run& r : runs) {
        if (r.key == key && r.batch == batch) cell.push_back(&r);
    }
    return cell;
}

/// printf of one number: fmt("%.2f", x).
std::string fmt(const char* format, double v);

}  // namespace normnet::cli
