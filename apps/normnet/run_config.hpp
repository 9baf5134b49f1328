// The options of one training run (`normnet train`, and each run of `normnet compare`), their
// defaults (the recipe that reaches >= 98.5% on MNIST) and their JSON form for config.json and
// checkpoint metadata.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

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
    int threads = 0;    // 0: normnet::default_num_threads()
    int64_t limit = 0;  // use only the first `limit` training and test images (0: all)
    std::string on_nan = "stop";  // a non-finite loss: stop (keeping the last checkpoint) | skip the step
    std::string bn_sync = "local";  // BatchNorm under mpirun: per-rank statistics (local) | every rank's (sync)

    std::string to_json() const;
    /// Reads to_json()'s text (missing keys keep their defaults); `where` names the source in
    /// errors. Every value must have its field's JSON type (an integer field rejects 1e300).
    static RunConfig from_json(const std::string& text, const std::string& where);
    /// Throws normnet::Error for values out of range, naming the option.
    void validate() const;
    /// The data folder actually used.
    std::string resolved_data_dir() const;
    /// The thread count actually used: `threads`, or normnet::default_num_threads() when it is 0.
    int resolved_threads() const;
};

/// The optimizers the command line knows (--optimizer), as one table: parsing, help and
/// building read it; adding one is one row in run_config.cpp.
struct OptimizerKind {
    std::string name, help;
    std::unique_ptr<Optimizer> (*make)(const RunConfig& config, const NamedTensors& params) = nullptr;
};
const std::vector<OptimizerKind>& optimizer_kinds();

/// The learning-rate schedules (--schedule), likewise.
struct ScheduleKind {
    std::string name, help;
    Schedule schedule = Schedule::constant;
};
const std::vector<ScheduleKind>& schedule_kinds();

/// The datasets (--dataset).
const std::vector<std::string>& dataset_names();
/// The class names of a dataset (--dataset), in label order.
const std::vector<std::string>& dataset_class_names(const std::string& dataset);

/// The names of a table's rows, for CLI::IsMember and messages ("sgd, adam or adamw").
template <class Row>
std::vector<std::string> names_of(const std::vector<Row>& rows) {
    std::vector<std::string> names;
    for (const Row& r : rows) names.push_back(r.name);
    return names;
}
std::string choices_text(const std::vector<std::string>& names);

/// RunConfig's fields, declared once: their JSON key (config.json and checkpoint metadata),
/// their command-line option ("" for none) with its help, and the member. to_json, from_json,
/// the options of train/compare/bench and the options a resumed run takes over all read it.
/// The model is not among them: its options come from the model registry (models.hpp).
using ConfigMember =
    std::variant<std::string RunConfig::*, int64_t RunConfig::*, double RunConfig::*, uint64_t RunConfig::*, int RunConfig::*>;
struct ConfigField {
    std::string key, flag, help;
    ConfigMember member;
    std::vector<std::string> choices{};  // accepted values of a string option (empty: any)
};
const std::vector<ConfigField>& config_fields();
/// The field of option `flag` (throws normnet::Error for an unknown one).
const ConfigField& config_field(const std::string& flag);

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
