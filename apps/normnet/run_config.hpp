// The options of one training run of any task (`normnet train`, `normnet lm train`, each run of
// `normnet compare` and `normnet bench`), declared once in one table: their defaults (the recipe
// that reaches >= 98.5% on MNIST; a model's registry row changes them, the LM's most), their
// command-line options and their JSON form for config.json and checkpoint metadata.
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

/// Debian's `fortunes`: the language model's default corpus.
inline constexpr const char* kDefaultCorpus = "/usr/share/games/fortunes";

struct RunConfig {
    // The data: an image dataset (classification), or a text corpus (the language model).
    std::string dataset = "mnist";  // mnist | fashion-mnist
    std::string data_dir;           // empty: the dataset's default folder
    std::string text = kDefaultCorpus;  // a UTF-8 file or a folder of them
    double val_fraction = 0.2;          // share held out: of a table's rows (no --test), of the text's records
    // A table: --data names a CSV file (raw or gzipped) instead of an image folder.
    std::string target;           // the target column, by name or 0-based index; empty: the last
    std::string task = "auto";    // auto | classification | regression
    std::string test;             // a CSV file of test rows; empty: val_fraction of --data's rows
    std::string loss = "mse";     // regression: mse | huber
    std::string delimiter = ",";  // one character
    // An image folder: --data DIR holding train/<class>/ (and test/<class>/).
    std::string image_size;  // "HxW": every image resized to it; empty: their own (one) size
    ModelSpec model;
    int64_t steps = 0;  // the run's length in optimizer steps; 0: in epochs
    int64_t epochs = 20;
    int64_t batch_size = 128;
    std::string optimizer = "adamw";  // sgd | adam | adamw
    double lr = 2e-3;
    double momentum = 0.9;  // sgd only
    double weight_decay = 0.2;
    std::string schedule = "cosine";  // constant | step | cosine
    int64_t warmup = 0;               // warm-up steps (batches)
    double step_gamma = 0.1;          // step schedule: factor every step_epochs epochs
    int64_t step_epochs = 5;
    double clip = 0.0;  // max gradient norm, 0 = off
    double label_smoothing = 0.0;
    int64_t eval_every = 200;  // steps between evaluations (and checkpoints) of a run counted in steps
    uint64_t seed = 0;
    int threads = 0;    // 0: the number of cores
    int64_t limit = 0;  // use only the first `limit` training and test images (0: all)
    std::string on_nan = "stop";    // a non-finite loss: stop (keeping the last checkpoint) | skip the step
    std::string bn_sync = "local";  // BatchNorm under mpirun: per-rank statistics (local) | every rank's (sync)
    // Activation checkpointing of each Transformer block: less memory, each block's forward run
    // twice. A recipe choice, not the architecture.
    bool recompute = false;
    // Each block's feed-forward hidden activations recomputed in backward: on by default, a
    // quarter less memory for a few percent of time; moot with `recompute`.
    bool recompute_ffn = true;

    /// The JSON of the fields the model's task has (in the table's order).
    std::string to_json() const;
    /// Reads to_json()'s text (missing keys keep the task's defaults); `where` names the source in
    /// errors. Every value must have its field's JSON type (an integer field rejects 1e300).
    static RunConfig from_json(const std::string& text, const std::string& where);
    /// Throws normnet::Error for values out of range, naming the option.
    void validate() const;
    /// The data folder actually used.
    std::string resolved_data_dir() const;
    /// The thread count actually used: `threads`, or the number of cores when it is 0.
    int resolved_threads() const;
    /// True when the run's length is counted in optimizer steps (the language model), with an
    /// evaluation every eval_every steps; otherwise in epochs, with one after each.
    bool counts_steps() const;
    /// True when --data names a table: a .csv or .tsv file (or its .gz), or any regular file.
    bool is_table() const;
    /// True when --data names a folder of images by class (DIR/train/<class>/...), not IDX files.
    bool is_image_folder() const;
    /// The model's task bits, with kOwnData for a table or an image folder: the config fields this run has.
    unsigned task_bits() const;
};

/// --image-size's "HxW" as (height, width), each in [1, 4096]; a usage error otherwise.
std::pair<int64_t, int64_t> parse_image_size(const std::string& text);

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
    unsigned tasks = kAnyTask;  // the tasks it applies to (the LM counts no epochs to step by)
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
/// their command-line option ("" for none) with its help, the member, the tasks that have it, and
/// for the language model the help of `normnet lm train` where it words the option otherwise.
/// to_json, from_json, the options of train, lm train, compare and bench and the options a resumed
/// run takes over all read it. "model" is a row of its own (the architecture, from the model
/// registry, models.hpp), so that the JSON keeps its place.
using ConfigMember = std::variant<std::string RunConfig::*, int64_t RunConfig::*, double RunConfig::*,
                                  uint64_t RunConfig::*, int RunConfig::*, bool RunConfig::*>;
struct ConfigField {
    std::string key, flag, help;
    ConfigMember member;
    std::vector<std::string> choices{};  // accepted values of a string option (empty: any)
    unsigned tasks = kAnyTask;
    std::string lm_help{};  // `normnet lm train`'s help, when it differs
};
const std::vector<ConfigField>& config_fields();
/// The field of option `flag` (throws normnet::Error for an unknown one).
const ConfigField& config_field(const std::string& flag);

/// The config of a run of model `type` before any option: RunConfig's defaults, the model's
/// default sizes and normalisation, then its registry row's recipe.
RunConfig recipe_config(const std::string& type);

/// Loads a split of the configured image dataset; errors name the folder and how to get the data.
std::shared_ptr<const Dataset> load_split(const RunConfig& config, const std::string& split);

/// The optimizer the config names, over the model's named parameters (for the language model,
/// without weight decay on biases and norm weights, as GPT-2 and nanoGPT).
std::unique_ptr<Optimizer> make_optimizer(const RunConfig& config, const NamedTensors& params);

/// The per-step schedule the config names, over `total_steps` steps of `steps_per_epoch` each.
/// Throws UsageError naming the option when the schedule cannot run (e.g. --warmup beyond the run).
LRSchedulerOptions schedule_options(const RunConfig& config, int64_t total_steps, int64_t steps_per_epoch);

/// Bounds on options, so that products such as epochs x batches cannot overflow.
inline constexpr int64_t kMaxEpochs = 1'000'000;
inline constexpr int64_t kMaxBatchSize = int64_t{1} << 30;
inline constexpr int64_t kMaxSteps = int64_t{1} << 40;

/// Library versions for config.json.
std::string versions_json();

/// Writes dir/config.json (atomically): a run's config as JSON (with what the caller adds, such
/// as the threads used and where it resumed from) and the library versions.
void write_config_json(const std::string& dir, nlohmann::ordered_json config);

}  // namespace normnet::cli
