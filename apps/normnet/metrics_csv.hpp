// metrics.csv of a run folder: one row per finished epoch, rewritten whole (atomically) after
// every checkpoint from the run's history, so it never has a duplicate, missing or torn row. The
// checkpoint keeps every column but the seconds (so that the same run always writes the same
// checkpoint bytes); those come from the file itself when a resumed run rewrites it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "trainer.hpp"

namespace normnet::cli {

/// The header and one row per epoch of `history` (an unknown number of seconds is an empty cell):
/// epoch,train_loss,train_acc,test_loss,test_acc,epoch_seconds,lr (a regression:
/// epoch,train_loss,test_loss,test_rmse,test_mae,test_r2,epoch_seconds,lr), or for a run counted in
/// `steps` step,train_loss,val_loss,val_bits_per_char,lr,seconds.
std::string metrics_csv(const std::vector<EpochMetrics>& history, bool steps = false);

/// The rows of an existing metrics.csv by epoch, by its header's column names (nothing when it is
/// absent; malformed rows are left out).
std::map<int64_t, EpochMetrics> read_metrics_csv(const std::string& path);

/// Completes a resumed run's history from the metrics.csv it wrote before: the seconds of each
/// epoch (matched by step for a run counted in `steps`), and for a checkpoint older than the
/// history it carries (has_history false), the rows.
void complete_history(std::vector<EpochMetrics>& history, bool has_history, int64_t epochs, const std::string& path,
                      bool steps = false);

}  // namespace normnet::cli
