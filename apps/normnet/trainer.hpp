// Trainer: one training run of the command line — model, optimizer, schedule and loaders
// built from a RunConfig — with per-epoch training, evaluation and resumable checkpoints.
// `normnet train`, `normnet compare` and `normnet bench` all drive this one loop.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "normnet/checkpoint.hpp"
#include "run_config.hpp"

namespace normnet::cli {

struct EpochMetrics {
    int64_t epoch = 0;  // 1-based
    double train_loss = 0, train_acc = 0, test_loss = 0, test_acc = 0, seconds = 0, lr = 0;
};

struct Evaluation {
    double loss = 0, accuracy = 0;
    int64_t correct = 0, count = 0;
    std::vector<std::vector<int64_t>> confusion;  // [true class][predicted class]
    std::vector<int64_t> predictions;             // predicted class of every example, in order
};

/// Called after each training batch: batch index (1-based), batches in the epoch, running mean loss.
using BatchCallback = std::function<void(int64_t batch, int64_t batches, double running_loss)>;

class Trainer {
public:
    Trainer(const RunConfig& config, std::shared_ptr<const Dataset> train, std::shared_ptr<const Dataset> test);

    /// Trains one epoch and evaluates on the test set.
    EpochMetrics run_epoch(const BatchCallback& on_batch = {});
    /// The training loop of one epoch only; returns {mean loss, accuracy} over its batches.
    std::pair<double, double> train_epoch(const BatchCallback& on_batch = {});
    /// Loss, accuracy and confusion matrix of the model in eval mode over `data`.
    Evaluation evaluate(const Dataset& data, int64_t batch_size = 1000);

    /// Writes model.safetensors (the state_dict PyTorch loads, with the architecture and config
    /// as metadata) and training_state.safetensors (optimizer, schedule, epoch, RNG) into dir.
    void save_checkpoint(const std::string& dir) const;
    /// Restores model and training state from a model.safetensors written by save_checkpoint.
    void resume(const std::string& model_path);

    Sequential& model() { return *model_; }
    Optimizer& optimizer() { return *optimizer_; }
    const RunConfig& config() const { return config_; }
    int64_t epochs_done() const { return epochs_done_; }
    int64_t batches_per_epoch() const { return loader_.num_batches(); }

private:
    RunConfig config_;
    std::shared_ptr<const Dataset> train_, test_;
    std::shared_ptr<Sequential> model_;
    std::unique_ptr<Optimizer> optimizer_;
    std::unique_ptr<LRScheduler> scheduler_;
    DataLoader loader_;
    int64_t epochs_done_ = 0;
};

/// Reads the architecture and training config stored in a checkpoint's metadata.
std::pair<ModelSpec, RunConfig> read_checkpoint_config(const SafetensorsData& checkpoint);

/// Name of the sibling file that holds the training state of `model_path`.
std::string training_state_path(const std::string& model_path);

}  // namespace normnet::cli
