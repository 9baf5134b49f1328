// The options of one training run (`normnet train`, and each run of `normnet compare`), their
// defaults (the recipe that reaches >= 98.5% on MNIST) and their JSON form for config.json and
// checkpoint metadata.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "model_spec.hpp"
#include "normnet/data.hpp"
#include "normnet/optim.hpp"

namespace normnet::cli {

struct RunConfig {
    std::string dataset = "mnist";  // mnist | fashion-mnist
    std::string data_dir;           // empty: the dataset's default folder
    ModelSpec model;
    int64_t epochs = 20;
    int64_t batch_size = 128;
    std::string optimizer = "adamw";  // sgd | adam | adamw
    double lr = 2e-3;
    double momentum = 0.9;       // sgd only
    double weight_decay = 0.2;
    std::string schedule = "cosine";  // constant | step | cosine
    int64_t warmup = 0;               // warm-up steps (batches)
    double step_gamma = 0.1;          // step schedule: factor every step_epochs epochs
    int64_t step_epochs = 5;
    double clip = 0.0;  // max gradient norm, 0 = off
    double label_smoothing = 0.0;
    uint64_t seed = 0;
    int threads = 0;    // 0: the number of cores
    int64_t limit = 0;  // use only the first `limit` training and test images (0: all)
    std::string on_nan = "stop";  // a non-finite loss: stop (keeping the last checkpoint) | skip the step

    std::string to_json() const;
    /// Reads to_json()'s text (missing keys keep their defaults); `where` names the source in
    /// errors. Every value must have its field's JSON type (an integer field rejects 1e300).
    static RunConfig from_json(const std::string& text, const std::string& where);
    /// Throws normnet::Error for values out of range, naming the option.
    void validate() const;
    /// The data folder actually used.
    std::string resolved_data_dir() const;
    /// The thread count actually used: `threads`, or the number of cores when it is 0.
    int resolved_threads() const;
};

/// Loads a split of the configured dataset; errors name the folder and how to get the data.
std::shared_ptr<const Dataset> load_split(const RunConfig& config, const std::string& split);

/// The optimizer the config names, over the model's named parameters.
std::unique_ptr<Optimizer> make_optimizer(const RunConfig& config, const NamedTensors& params);

/// The per-batch schedule the config names, over epochs x batches_per_epoch batches. Throws
/// UsageError naming the option when the schedule cannot run (e.g. --warmup beyond the run).
LRSchedulerOptions schedule_options(const RunConfig& config, int64_t batches_per_epoch);

/// Bounds on options, so that products such as epochs x batches cannot overflow.
inline constexpr int64_t kMaxEpochs = 1'000'000;
inline constexpr int64_t kMaxBatchSize = int64_t{1} << 30;

/// Library versions for config.json.
std::string versions_json();

/// Writes dir/config.json (atomically): a run's config as JSON (with what the caller adds, such
/// as the threads used and where it resumed from) and the library versions.
void write_config_json(const std::string& dir, nlohmann::ordered_json config);

}  // namespace normnet::cli
