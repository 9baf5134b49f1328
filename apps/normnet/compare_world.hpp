// compare's data-parallel axes (`normnet compare --world 1,2,4 --bn-sync local,sync`): every cell
// of the grid trained again as `mpirun -np W normnet train` in a child process per world size
// W > 1 (and per BatchNorm mode for BatchNorm), from the same seed and with the same global
// batch, so the report can say whether local BatchNorm behaves like one process at the per-rank
// batch and synchronised BatchNorm like one process at the global batch.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "trainer.hpp"

namespace normnet::cli {

struct WorldRun {
    RunConfig config;  // norm, global batch, seed, bn_sync
    int world = 1;
    std::vector<EpochMetrics> curve;
    double seconds = 0;  // wall time of the whole child job
    std::string failure;  // empty when the run finished
};

/// The world sizes (each >= 1) of --world "1,2,4".
std::vector<int> parse_world_list(const std::string& text);
/// The BatchNorm modes of --bn-sync "local,sync".
std::vector<std::string> parse_bn_sync_list(const std::string& text);

/// Trains `cell` (one run of the grid) with each world size > 1 (those that divide its batch) and,
/// for BatchNorm, each mode, as `mpirun -np W` children of this program, into dir/world/<name>/.
/// `stop` is asked between runs.
std::vector<WorldRun> run_world_cell(const RunConfig& cell, const std::vector<int>& worlds,
                                     const std::vector<std::string>& modes, const std::string& dir,
                                     const std::function<bool()>& stop);

/// Final test accuracy of the single-process run of (norm, batch, seed), when the grid has it.
using SingleAccuracy = std::function<std::optional<double>(const std::string& norm, int64_t batch, uint64_t seed)>;

/// world.csv: one row per data-parallel run.
std::string world_csv(const std::vector<WorldRun>& runs);
/// The report's section on the world and BatchNorm-mode axes, with what the runs show.
std::string world_report_md(const std::vector<WorldRun>& runs, const SingleAccuracy& single);

}  // namespace normnet::cli
