// RunConfig: JSON round trip, validation, and turning it into datasets, optimizers, schedules.
#include "run_config.hpp"

#include <cblas.h>

#include <CLI/Version.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

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
                             {"limit", limit}};
    return j.dump();
}

RunConfig RunConfig::from_json(const std::string& text, const std::string& where) {
    RunConfig c;
    try {
        const auto j = nlohmann::json::parse(text);
        const auto get = [&](const char* key, auto& field) {
            if (j.contains(key)) field = j.at(key).get<std::remove_reference_t<decltype(field)>>();
        };
        get("dataset", c.dataset);
        get("data_dir", c.data_dir);
        if (j.contains("model")) c.model = ModelSpec::from_json(j.at("model").dump(), where);
        get("epochs", c.epochs);
        get("batch_size", c.batch_size);
        get("optimizer", c.optimizer);
        get("lr", c.lr);
        get("momentum", c.momentum);
        get("weight_decay", c.weight_decay);
        get("schedule", c.schedule);
        get("warmup", c.warmup);
        get("step_gamma", c.step_gamma);
        get("step_epochs", c.step_epochs);
        get("clip", c.clip);
        get("label_smoothing", c.label_smoothing);
        get("seed", c.seed);
        get("threads", c.threads);
        get("limit", c.limit);
    } catch (const nlohmann::json::exception& e) {
        fail(where, ": malformed training config metadata: ", e.what());
    }
    return c;
}

void RunConfig::validate() const {
    check(dataset == "mnist" || dataset == "fashion-mnist", "--dataset: unknown dataset '", dataset,
          "' (expected mnist or fashion-mnist)");
    check(epochs > 0, "--epochs: must be positive, got ", epochs);
    check(batch_size > 0, "--batch-size: must be positive, got ", batch_size);
    check(optimizer == "sgd" || optimizer == "adam" || optimizer == "adamw", "--optimizer: unknown optimizer '",
          optimizer, "' (expected sgd, adam or adamw)");
    check(lr > 0, "--lr: must be positive, got ", lr);
    check(momentum >= 0, "--momentum: must be non-negative, got ", momentum);
    check(weight_decay >= 0, "--weight-decay: must be non-negative, got ", weight_decay);
    check(schedule == "constant" || schedule == "step" || schedule == "cosine", "--schedule: unknown schedule '",
          schedule, "' (expected constant, step or cosine)");
    check(warmup >= 0, "--warmup: must be non-negative, got ", warmup);
    check(clip >= 0, "--clip: must be non-negative (0 turns clipping off), got ", clip);
    check(label_smoothing >= 0 && label_smoothing < 1, "--label-smoothing: must be in [0, 1), got ", label_smoothing);
    check(threads >= 0, "--threads: must be positive, got ", threads);
    check(limit >= 0, "--limit: must be positive, got ", limit);
    check(step_epochs > 0, "--step-epochs: must be positive, got ", step_epochs);
    check(std::find(kNorms.begin(), kNorms.end(), model.norm) != kNorms.end(), "--norm: unknown normalisation '",
          model.norm, "' (expected layer, batch, rms or none)");
}

std::string RunConfig::resolved_data_dir() const {
    if (!data_dir.empty()) return data_dir;
    return dataset == "fashion-mnist" ? "/usr/share/datasets/fashion-mnist" : "data/mnist";
}

int RunConfig::resolved_threads() const {
    return threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

std::shared_ptr<const Dataset> load_split(const RunConfig& config, const std::string& split) {
    const std::string dir = config.resolved_data_dir();
    if (!std::filesystem::is_directory(dir)) {
        fail("--data: no dataset folder ", dir, config.dataset == "mnist"
                                                     ? " (run data/fetch_mnist.sh to download MNIST, or pass --data DIR)"
                                                     : " (apt-get install dataset-fashion-mnist, or pass --data DIR)");
    }
    auto data = std::make_shared<Dataset>(load_mnist_split(dir, split));
    if (config.limit > 0 && config.limit < data->size()) *data = take(*data, config.limit);
    check(data->features() == config.model.inputs, dir, ": images have ", data->features(),
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
    LRSchedulerOptions o;
    o.schedule = c.schedule == "cosine" ? Schedule::cosine : c.schedule == "step" ? Schedule::step : Schedule::constant;
    o.total_steps = c.epochs * batches_per_epoch;
    o.warmup_steps = c.warmup;
    o.step_size = c.step_epochs * batches_per_epoch;
    o.gamma = c.step_gamma;
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

}  // namespace normnet::cli
