// Trainer: one training run of the command line, of any task — the model, optimizer and
// schedule built from a RunConfig, the step (forward, loss, backward, clipping, the policy for
// non-finite values; under mpirun the gradient all-reduce or the sharded step, and BatchNorm's
// statistics across the ranks), evaluation after every epoch, and checkpoints that resume bit for
// bit, also from inside an epoch (after a signal). The task (task.hpp) supplies the data, the
// loss and the metrics. `normnet train`, `lm train`, `compare` and `bench` all drive this loop.
//
// A run counts in epochs (classification: an evaluation after each pass over the data) or in
// optimizer steps (the language model: an evaluation every --eval-every steps, the "epochs" of
// this class); the checkpoints keep the metadata each has always had.
#pragma once

#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "normnet/checkpoint.hpp"
#include "normnet/dist.hpp"
#include "replicas.hpp"
#include "run_config.hpp"
#include "run_folder.hpp"
#include "task.hpp"

namespace normnet::cli {

/// One evaluation of a run and the training since the one before.
struct EpochMetrics {
    int64_t epoch = 0;  // 1-based
    int64_t step = 0;   // optimizer steps done (what a run counted in steps reports)
    double train_loss = 0, train_acc = 0, test_loss = 0, test_acc = 0, lr = 0;  // test: the held-out data
    double test_rmse = NAN, test_mae = NAN, test_r2 = NAN;  // a regression's, in the target's units
    double seconds = 0;   // NaN when unknown (an epoch whose metrics.csv row a crash lost)
    int64_t skipped = 0;  // steps skipped for a non-finite loss (--on-nan skip)
    double bits_per_char() const;  // test_loss in bits
};

/// Where the run stands inside the current epoch: the steps done and their running sums.
struct EpochProgress {
    int64_t batch = 0;              // steps done in this epoch
    int64_t correct = 0, seen = 0;  // over the steps that were not skipped; seen: rows, or steps (Task::mean_over_rows)
    int64_t skipped = 0;
    double loss_sum = 0;    // sum of loss x rows (or of the steps' losses)
    double seconds = 0;     // training time of this epoch so far
    bool complete = false;  // the epoch ran to its end
    double mean_loss() const { return loss_sum / static_cast<double>(seen); }
    double accuracy() const { return static_cast<double>(correct) / static_cast<double>(seen); }
};

/// A non-finite loss, gradient norm or weight with --on-nan stop: the run stops without saving.
class NonFinite : public Error {
public:
    using Error::Error;
};

/// Everything a checkpoint's metadata says about where to resume, parsed and range-checked
/// before anything is built or changed.
struct ResumePoint {
    ModelSpec spec;
    RunConfig config;
    int64_t epoch = 0;  // epochs finished (a run counted in steps: 0; its epoch follows from the step)
    int64_t step = 0;   // optimizer steps done (the schedule's position)
    std::array<uint64_t, 4> rng{};
    std::string optimizer;
    EpochProgress progress;
    std::vector<EpochMetrics> history;  // one entry per finished epoch (empty in old checkpoints)
    bool has_history = false;
};
ResumePoint parse_resume_point(const LoadedCheckpoint& checkpoint);

/// Called after each training step: steps done in the epoch, steps in it, running mean loss.
using BatchCallback = std::function<void(int64_t batch, int64_t batches, double running_loss)>;
/// Asked after each training step: true stops the epoch there (it can be resumed from that point).
using StopCheck = std::function<bool()>;

/// Wall seconds of the training loop's phases, summed over steps (steady_clock around each; for
/// `normnet bench --profile`). allreduce is the whole gradient all-reduce call (packing, waiting
/// for the slowest rank, MPI); optimizer the step, clipping and the finite checks included.
struct StepTimes {
    double data = 0, forward = 0, backward = 0, allreduce = 0, optimizer = 0, other = 0;
    int64_t steps = 0;
};

class Trainer {
public:
    /// Under mpirun, `replicas` makes this process one replica of a data-parallel run: it
    /// trains on its slice of every global batch (config.batch_size, which must divide by the
    /// world size), the gradients are summed over the ranks once per step, metrics and
    /// evaluation are reduced over them, and only rank 0 writes checkpoints. Every rank makes the
    /// same calls.
    Trainer(const RunConfig& config, std::unique_ptr<Task> task, const Replicas& replicas = {});

    /// Trains the rest of the current epoch and evaluates on the held-out data; nullopt when
    /// `stop` ended the epoch early.
    std::optional<EpochMetrics> run_epoch(const BatchCallback& on_batch = {}, const StopCheck& stop = {});
    /// The training loop of the rest of one epoch; returns its sums (complete unless stopped).
    EpochProgress train_epoch(const BatchCallback& on_batch = {}, const StopCheck& stop = {});
    /// The model in eval mode on the task's held-out data.
    Evaluation evaluate();

    /// Commits model.safetensors (the state_dict PyTorch loads, with the architecture and config
    /// as metadata) and training_state.safetensors (optimizer, schedule, position, progress inside
    /// the epoch, RNG, metrics history) into dir as one pair (see run_folder.hpp). Throws
    /// NonFinite, writing nothing, when a weight or buffer is NaN or infinite.
    void save_checkpoint(const std::string& dir) const;
    /// Restores model and training state from a checkpoint read by read_checkpoint(), after
    /// checking everything it says against this run; returns what its metadata said.
    ResumePoint resume(const LoadedCheckpoint& checkpoint);
    /// Copies the weights (only) of a file written by normnet or PyTorch.
    void init_from(const SafetensorsData& weights);

    Module& model() { return *model_; }
    Optimizer& optimizer() { return *optimizer_; }
    Task& task() { return *task_; }
    const RunConfig& config() const { return config_; }
    int64_t epochs_done() const { return epochs_done_; }
    /// Epochs of the whole run (a run counted in steps: its evaluations).
    int64_t epochs() const;
    /// True when the run has nothing left to train (a run counted in steps: a checkpoint resumed
    /// with a shorter --steps may already be past its end, inside an interval).
    bool finished() const { return config_.counts_steps() ? step() >= total_steps() : epochs_done_ >= epochs(); }
    /// Optimizer steps done, and of the whole run.
    int64_t step() const { return scheduler_->position(); }
    int64_t total_steps() const { return task_->total_steps(); }
    /// Steps of the current epoch.
    int64_t batches_per_epoch() const;
    const EpochProgress& progress() const { return progress_; }
    const Replicas& replicas() const { return replicas_; }
    /// Where the run stands, for messages: "epoch 3", "epoch 3, batch 120 of 469", "step 37".
    std::string position() const;
    /// The label of the current epoch's line: "epoch 3/20", or "step 400/2000".
    std::string epoch_label() const;
    /// Seconds spent in the gradient all-reduce so far (0 in one process).
    double seconds_in_allreduce() const { return reduce_ ? reduce_->seconds_in_allreduce() : 0.0; }
    /// The phases of every training step so far.
    const StepTimes& step_times() const { return times_; }
    /// The metrics of every finished epoch, from the first (also those before a resume).
    const std::vector<EpochMetrics>& history() const { return history_; }
    std::vector<EpochMetrics>& history() { return history_; }

private:
    // One step's sums over every rank; `stop` goes in as this rank's wish, comes out as any rank's.
    struct StepSums {
        double loss_sum = 0;  // loss x weight
        int64_t correct = 0, seen = 0;
        bool stop = false;
    };
    bool parallel_step(const StepData& data, const std::vector<Tensor>& params, StepSums& sums);
    void average_running_stats() const;
    void check_replicas() const;
    std::string where_in_run() const;  // "epoch 2, batch 5 of 10" / "step 7 of 20", for errors

    RunConfig config_;
    std::unique_ptr<Task> task_;
    Replicas replicas_;
    std::unique_ptr<dist::GradientAllReduce> reduce_;  // world > 1 only
    bool sharded_ = false;                              // reduce_ runs the sharded step
    std::shared_ptr<Module> model_;
    std::unique_ptr<Optimizer> optimizer_;
    std::unique_ptr<LRScheduler> scheduler_;
    int64_t epochs_done_ = 0;
    EpochProgress progress_;
    double last_lr_ = 0;  // of the last step taken
    std::vector<EpochMetrics> history_;
    StepTimes times_;
    std::chrono::steady_clock::time_point lap_start_;
    void lap(double& phase);  // adds the time since the last lap to phase
};

/// Reads the architecture and training config stored in a checkpoint's metadata.
std::pair<ModelSpec, RunConfig> read_checkpoint_config(const SafetensorsData& checkpoint);

/// Throws normnet::Error (starting with `option`, when given) unless `weights` could hold a model
/// of `spec` (its weights alone need parameters() values): checked before building the model, so
/// that metadata promising huge layers cannot make a small file allocate gigabytes.
void check_file_fits(const ModelSpec& spec, const SafetensorsData& weights, const std::string& option = "");

/// A model file read back (normnet's checkpoints, any task): its metadata's spec and config, the
/// file, and the model built from the spec with the file's weights loaded, in eval mode. Nothing
/// is built before the file is checked to hold the weights the spec needs.
struct ModelFile {
    ModelSpec spec;
    RunConfig config;
    SafetensorsData file;
    std::shared_ptr<Module> model;
};
ModelFile load_model_file(const std::string& path);

}  // namespace normnet::cli
