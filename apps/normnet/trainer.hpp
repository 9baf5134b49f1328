// Trainer: one training run of the command line — model, optimizer, schedule and loaders
// built from a RunConfig — with per-epoch training, evaluation and resumable checkpoints
// (also from the middle of an epoch, after a signal). `normnet train`, `normnet compare` and
// `normnet bench` all drive this one loop.
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

namespace normnet::cli {

struct EpochMetrics {
    int64_t epoch = 0;  // 1-based
    double train_loss = 0, train_acc = 0, test_loss = 0, test_acc = 0, lr = 0;
    double seconds = 0;   // NaN when unknown (an epoch whose metrics.csv row a crash lost)
    int64_t skipped = 0;  // steps skipped for a non-finite loss (--on-nan skip)
};

/// Where the run stands inside the current epoch: the batches done and their running sums.
struct EpochProgress {
    int64_t batch = 0;            // batches done in this epoch
    int64_t correct = 0, seen = 0;  // over the batches that were not skipped
    int64_t skipped = 0;
    double loss_sum = 0;    // sum of loss x batch size
    double seconds = 0;     // training time of this epoch so far
    bool complete = false;  // the epoch ran to its end
    double mean_loss() const { return loss_sum / static_cast<double>(seen); }
    double accuracy() const { return static_cast<double>(correct) / static_cast<double>(seen); }
};

struct Evaluation {
    double loss = 0, accuracy = 0;
    int64_t correct = 0, count = 0;
    std::vector<std::vector<int64_t>> confusion;  // [true class][predicted class]
    std::vector<int64_t> predictions;             // predicted class of every example, in order
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
    int64_t epoch = 0;  // epochs finished
    int64_t scheduler_position = 0;
    std::array<uint64_t, 4> rng{};
    std::string optimizer;
    EpochProgress progress;
    std::vector<EpochMetrics> history;  // one entry per finished epoch (empty in old checkpoints)
    bool has_history = false;
};
ResumePoint parse_resume_point(const LoadedCheckpoint& checkpoint);

/// Called after each training batch: batch index (1-based), batches in the epoch, running mean loss.
using BatchCallback = std::function<void(int64_t batch, int64_t batches, double running_loss)>;
/// Asked after each training batch: true stops the epoch there (it can be resumed from that point).
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
    /// evaluation are reduced over them, and only rank 0 writes checkpoints.
    Trainer(const RunConfig& config, std::shared_ptr<const Dataset> train, std::shared_ptr<const Dataset> test,
            const Replicas& replicas = {});

    /// Trains the rest of the current epoch (all of it, unless resumed from its middle) and
    /// evaluates on the test set; nullopt when `stop` ended the epoch early.
    std::optional<EpochMetrics> run_epoch(const BatchCallback& on_batch = {}, const StopCheck& stop = {});
    /// The training loop of the rest of one epoch; returns its sums (complete unless stopped).
    EpochProgress train_epoch(const BatchCallback& on_batch = {}, const StopCheck& stop = {});
    /// Loss, accuracy and confusion matrix of the model in eval mode over `data`.
    Evaluation evaluate(const Dataset& data, int64_t batch_size = 1000);

    /// Commits model.safetensors (the state_dict PyTorch loads, with the architecture and config
    /// as metadata) and training_state.safetensors (optimizer, schedule, epoch, progress inside
    /// the epoch, RNG, metrics history) into dir as one pair (see run_folder.hpp). Throws
    /// NonFinite, writing nothing, when a weight or buffer is NaN or infinite.
    void save_checkpoint(const std::string& dir) const;
    /// Restores model and training state from a checkpoint read by read_checkpoint(); returns
    /// what its metadata said.
    ResumePoint resume(const LoadedCheckpoint& checkpoint);
    /// Copies the weights (only) of a file written by normnet or PyTorch.
    void init_from(const SafetensorsData& weights);

    Module& model() { return *model_; }
    Optimizer& optimizer() { return *optimizer_; }
    const RunConfig& config() const { return config_; }
    int64_t epochs_done() const { return epochs_done_; }
    int64_t batches_per_epoch() const { return loader_.num_batches(); }
    const EpochProgress& progress() const { return progress_; }
    const Replicas& replicas() const { return replicas_; }
    /// Seconds spent in the gradient all-reduce so far (0 in one process).
    double seconds_in_allreduce() const { return reduce_ ? reduce_->seconds_in_allreduce() : 0.0; }
    /// The phases of every training step so far.
    const StepTimes& step_times() const { return times_; }
    /// The metrics of every finished epoch, from the first (also those before a resume).
    const std::vector<EpochMetrics>& history() const { return history_; }
    std::vector<EpochMetrics>& history() { return history_; }

private:
    // What data parallelism adds to a step (only called with a world of more than one).
    // One step's sums over every rank; `stop` goes in as this rank's wish, comes out as any rank's.
    struct StepSums {
        double loss_sum = 0;  // loss x rows
        int64_t correct = 0, seen = 0;
        bool stop = false;
    };
    bool parallel_step(const Batch& batch, const std::vector<Tensor>& params, StepSums& sums);
    void average_running_stats() const;
    void check_replicas() const;

    RunConfig config_;
    Replicas replicas_;
    std::unique_ptr<dist::GradientAllReduce> reduce_;  // world > 1 only
    bool sharded_ = false;                              // reduce_ runs the sharded step
    std::shared_ptr<const Dataset> train_, test_;
    std::shared_ptr<Module> model_;
    std::unique_ptr<Optimizer> optimizer_;
    std::unique_ptr<LRScheduler> scheduler_;
    DataLoader loader_;
    int64_t epochs_done_ = 0;
    EpochProgress progress_;
    std::vector<EpochMetrics> history_;
    StepTimes times_;
    std::chrono::steady_clock::time_point lap_start_;
    void lap(double& phase);  // adds the time since the last lap to phase
};

/// Loss, accuracy and confusion matrix of `model` (of `classes` outputs) in eval mode over `data`;
/// with num_replicas > 1, over this rank's shard of every batch of batch_size x num_replicas
/// (the counts, sums and confusion are this rank's part; predictions too).
Evaluation evaluate(Module& model, const Dataset& data, int64_t classes, int64_t batch_size = 1000,
                    int64_t num_replicas = 1, int64_t rank = 0);

/// Reads the architecture and training config stored in a checkpoint's metadata.
std::pair<ModelSpec, RunConfig> read_checkpoint_config(const SafetensorsData& checkpoint);

/// Throws normnet::Error (starting with `option`, when given) unless `weights` could hold a model
/// of `spec` (its weights alone need parameters() values): checked before building
/// the model, so that metadata promising huge layers cannot make a small file allocate gigabytes.
void check_file_fits(const ModelSpec& spec, const SafetensorsData& weights, const std::string& option = "");

}  // namespace normnet::cli
