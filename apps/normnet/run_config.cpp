// RunConfig: JSON round trip, validation, and turning it into datasets, optimizers, schedules.
#include "run_config.hpp"

#include <cblas.h>
#include <unistd.h>

#include <CLI/Version.hpp>
#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>

#include "commands.hpp"
#include "json_field.hpp"
#include "normnet/checkpoint.hpp"
#include "run_folder.hpp"

namespace normnet::cli {

std::string RunConfig::to_json() const {
    nlohmann::ordered_json j{{"dataset", dataset},
                             {"data_dir", resolved_data_dir()},
                             {"model", nlohmann::json::parse(model.to_json())},
                             {"epochs", epochs},
                             {"batch_size", batch_size},
                             {"optimizer", optimizer},
                             {"lr", lr},
                             {"momentum", momentum},
                             {"weight_decay", weight_decay},
                             {"schedule", schedule},
                             {"warmup", warmup},
                             {"step_gamma", step_gamma},
                             {"step_epochs", step_epochs},
                             {"clip", clip},
                             {"label_smoothing", label_smoothing},
                             {"seed", seed},
                             {"threads", threads},
                             {"limit", limit},
                             {"on_nan", on_nan}};
    return j.dump();
}

RunConfig RunConfig::from_json(const std::string& text, const std::string& where) {
    RunConfig c;
    try {
        const auto j = nlohmann::json::parse(text);
        NORMNET_CHECK(j.is_object(), "not a JSON object");
        read_field(j, "dataset", c.dataset);
        read_field(j, "data_dir", c.data_dir);
        if (j.contains("model")) c.model = ModelSpec::from_json(j.at("model").dump(), where);
        read_field(j, "epochs", c.epochs);
        read_field(j, "batch_size", c.batch_size);
        read_field(j, "optimizer", c.optimizer);
        read_field(j, "lr", c.lr);
        read_field(j, "momentum", c.momentum);
        read_field(j, "weight_decay", c.weight_decay);
        read_field(j, "schedule", c.schedule);
        read_field(j, "warmup", c.warmup);
        read_field(j, "step_gamma", c.step_gamma);
        read_field(j, "step_epochs", c.step_epochs);
        read_field(j, "clip", c.clip);
        read_field(j, "label_smoothing", c.label_smoothing);
        read_field(j, "seed", c.seed);
        read_field(j, "threads", c.threads);
        read_field(j, "limit", c.limit);
        read_field(j, "on_nan", c.on_nan);
    } catch (const std::exception& e) {
        fail(where, ": malformed training config metadata: ", e.what());
    }
    return c;
}

void RunConfig::validate() const {
    NORMNET_CHECK(dataset == "mnist" || dataset == "fashion-mnist", "--dataset: unknown dataset '", dataset,
          "' (expected mnist or fashion-mnist)");
    NORMNET_CHECK(epochs > 0 && epochs <= kMaxEpochs, "--epochs: must be in [1, ", kMaxEpochs, "], got ", epochs);
    NORMNET_CHECK(batch_size > 0 && batch_size <= kMaxBatchSize, "--batch-size: must be in [1, ", kMaxBatchSize, "], got ",
          batch_size);
    NORMNET_CHECK(optimizer == "sgd" || optimizer == "adam" || optimizer == "adamw", "--optimizer: unknown optimizer '",
          optimizer, "' (expected sgd, adam or adamw)");
    // Non-finite values are rejected here, naming the option, before an optimizer sees them.
    NORMNET_CHECK(std::isfinite(lr) && lr > 0, "--lr: must be a positive finite number, got ", lr);
    NORMNET_CHECK(std::isfinite(momentum) && momentum >= 0, "--momentum: must be a finite number >= 0, got ", momentum);
    NORMNET_CHECK(std::isfinite(weight_decay) && weight_decay >= 0, "--weight-decay: must be a finite number >= 0, got ",
          weight_decay);
    NORMNET_CHECK(schedule == "constant" || schedule == "step" || schedule == "cosine", "--schedule: unknown schedule '",
          schedule, "' (expected constant, step or cosine)");
    NORMNET_CHECK(warmup >= 0 && warmup <= kMaxEpochs * kMaxBatchSize, "--warmup: must be >= 0, got ", warmup);
    NORMNET_CHECK(std::isfinite(step_gamma) && step_gamma > 0, "step_gamma: must be a positive finite number, got ", step_gamma);
    NORMNET_CHECK(step_epochs > 0 && step_epochs <= kMaxEpochs, "step_epochs: must be in [1, ", kMaxEpochs, "], got ", step_epochs);
    NORMNET_CHECK(std::isfinite(clip) && clip >= 0, "--clip: must be a finite number >= 0 (0 turns clipping off), got ", clip);
    NORMNET_CHECK(label_smoothing >= 0 && label_smoothing < 1, "--label-smoothing: must be in [0, 1), got ", label_smoothing);
    NORMNET_CHECK(threads >= 0 && threads <= 1024, "--threads: must be in [1, 1024], got ", threads);
    NORMNET_CHECK(limit >= 0, "--limit: must be >= 0 (0: all images), got ", limit);
    NORMNET_CHECK(on_nan == "stop" || on_nan == "skip", "--on-nan: unknown '", on_nan, "' (expected stop or skip)");
    model.validate("--hidden");
    NORMNET_CHECK(model.norm != "batch" || batch_size >= 2, "--batch-size ", batch_size,
          ": BatchNorm needs at least 2 samples per batch (use --norm layer, or a larger --batch-size)");
}

std::string RunConfig::resolved_data_dir() const {
    if (!data_dir.empty()) return data_dir;
    return dataset == "fashion-mnist" ? "/usr/share/datasets/fashion-mnist" : "data/mnist";
}

int RunConfig::resolved_threads() const {
    return threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

namespace {

// How to get the dataset: for MNIST, the fetch script where this program can find it (installed
// beside it under share/normnet, or in the source tree it was built from).
std::string data_hint(const RunConfig& config, const std::string& dir) {
    if (config.dataset != "mnist") return "apt-get install dataset-fashion-mnist, or pass --data DIR";
    std::error_code ec;
    std::vector<std::filesystem::path> scripts;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) scripts.push_back(exe.parent_path().parent_path() / "share/normnet/fetch_mnist.sh");
    scripts.push_back(std::filesystem::path(NORMNET_SOURCE_DIR) / "data/fetch_mnist.sh");
    for (const auto& script : scripts) {
        if (std::filesystem::exists(script, ec)) return "fetch it with " + script.string() + " " + dir + ", or pass --data DIR";
    }
    return "pass --data DIR with the four MNIST IDX files";
}

}  // namespace

std::shared_ptr<const Dataset> load_split(const RunConfig& config, const std::string& split) {
    const std::string dir = config.resolved_data_dir();
    NORMNET_CHECK(std::filesystem::is_directory(dir), "--data: no dataset folder ", dir, " (", data_hint(config, dir), ")");
    std::shared_ptr<Dataset> data;
    try {
        data = std::make_shared<Dataset>(load_mnist_split(dir, split));
    } catch (const Error& e) {
        const std::string what = e.what();
        if (what.rfind("cannot find ", 0) != 0) throw;
        fail(what, " (", data_hint(config, dir), ")");
    }
    if (config.limit > 0 && config.limit < data->size()) *data = take(*data, config.limit);
    NORMNET_CHECK(data->features() == config.model.inputs, dir, ": images have ", data->features(),
          " pixels but the model takes ", config.model.inputs, " inputs");
    return data;
}

std::unique_ptr<Optimizer> make_optimizer(const RunConfig& c, const NamedTensors& params) {
    if (c.optimizer == "sgd") {
        return std::make_unique<SGD>(params, SGDOptions{.lr = c.lr, .momentum = c.momentum, .weight_decay = c.weight_decay});
    }
    if (c.optimizer == "adam") return std::make_unique<Adam>(params, AdamOptions{.lr = c.lr, .weight_decay = c.weight_decay});
    return std::make_unique<AdamW>(params, AdamWOptions{.lr = c.lr, .weight_decay = c.weight_decay});
}

LRSchedulerOptions schedule_options(const RunConfig& c, int64_t batches_per_epoch) {
    // Both factors are bounded (kMaxEpochs, and batches <= dataset size), so no product overflows.
    NORMNET_CHECK(batches_per_epoch >= 1 && batches_per_epoch <= (int64_t{1} << 40), "schedule_options: ", batches_per_epoch,
          " batches per epoch");
    LRSchedulerOptions o;
    o.schedule = c.schedule == "cosine" ? Schedule::cosine : c.schedule == "step" ? Schedule::step : Schedule::constant;
    o.total_steps = c.epochs * batches_per_epoch;
    o.warmup_steps = c.warmup;
    o.step_size = c.step_epochs * batches_per_epoch;
    o.gamma = c.step_gamma;
    if (o.schedule == Schedule::cosine && o.warmup_steps >= o.total_steps) {
        throw UsageError(str("--warmup ", c.warmup, ": the cosine schedule needs the warm-up to end before the run does (",
                                        c.epochs, " epoch(s) x ", batches_per_epoch, " batch(es) = ", o.total_steps, ")"));
    }
    return o;
}

std::string versions_json() {
    return nlohmann::ordered_json{{"normnet", NORMNET_VERSION},
                                  {"openblas", openblas_get_config()},
                                  {"cli11", CLI11_VERSION},
                                  {"nlohmann_json", std::to_string(NLOHMANN_JSON_VERSION_MAJOR) + "." +
                                                        std::to_string(NLOHMANN_JSON_VERSION_MINOR) + "." +
                                                        std::to_string(NLOHMANN_JSON_VERSION_PATCH)},
                                  {"compiler", __VERSION__}}
        .dump();
}

void write_config_json(const std::string& dir, nlohmann::ordered_json config) {
    config["versions"] = nlohmann::json::parse(versions_json());
    write_file_atomic((std::filesystem::path(dir) / kConfigFile).string(), config.dump(2) + "\n");
}

}  // namespace normnet::cli
