// RunConfig: JSON round trip, validation, and turning it into datasets, optimizers, schedules.
#include "run_config.hpp"

#include <cblas.h>
#include <unistd.h>

#include <CLI/Version.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "commands.hpp"
#include "models.hpp"
#include "json_field.hpp"
#include "normnet/checkpoint.hpp"
#include "run_folder.hpp"
#include "normnet/threads.hpp"

namespace normnet::cli {

const std::vector<OptimizerKind>& optimizer_kinds() {
    static const std::vector<OptimizerKind> table{
        {"sgd", "SGD with --momentum and L2 --weight-decay",
         [](const RunConfig& c, const NamedTensors& p) -> std::unique_ptr<Optimizer> {
             return std::make_unique<SGD>(p, SGDOptions{.lr = c.lr, .momentum = c.momentum, .weight_decay = c.weight_decay});
         }},
        {"adam", "Adam with L2 --weight-decay",
         [](const RunConfig& c, const NamedTensors& p) -> std::unique_ptr<Optimizer> {
             return std::make_unique<Adam>(p, AdamOptions{.lr = c.lr, .weight_decay = c.weight_decay});
         }},
        {"adamw", "AdamW with decoupled --weight-decay",
         [](const RunConfig& c, const NamedTensors& p) -> std::unique_ptr<Optimizer> {
             return std::make_unique<AdamW>(p, AdamWOptions{.lr = c.lr, .weight_decay = c.weight_decay});
         }},
    };
    return table;
}

const std::vector<ScheduleKind>& schedule_kinds() {
    static const std::vector<ScheduleKind> table{
        {"constant", "the same lr throughout", Schedule::constant},
        {"step", "the lr times step_gamma every step_epochs epochs", Schedule::step, kClassification},
        {"cosine", "cosine annealing to 0 over the run", Schedule::cosine},
    };
    return table;
}

const std::vector<std::string>& dataset_names() {
    static const std::vector<std::string> names{"mnist", "fashion-mnist"};
    return names;
}

const std::vector<std::string>& dataset_class_names(const std::string& dataset) {
    static const std::vector<std::string> digits{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
    // Fashion-MNIST's labels 0-9, as its authors name them.
    static const std::vector<std::string> fashion{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                  "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
    return dataset == "fashion-mnist" ? fashion : digits;
}

std::string choices_text(const std::vector<std::string>& names) {
    std::string s;
    for (size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
    return s;
}

const std::vector<ConfigField>& config_fields() {
    using R = RunConfig;
    constexpr unsigned C = kClassification, L = kLanguageModel, A = kAnyTask, T = kOwnData;
    static const std::vector<ConfigField> table{
        {"dataset", "--dataset", "mnist or fashion-mnist", &R::dataset, dataset_names(), C},
        {"data_dir", "--data", "Dataset folder (default: data/mnist, or /usr/share/datasets/fashion-mnist)", &R::data_dir, {}, C},
        {"text", "--text", "A UTF-8 text file, or a folder of them (fortune records split by %)", &R::text, {}, L},
        {"target", "--target", "A table's target column, by name or 0-based index (default: the last)", &R::target, {}, T},
        {"task", "--task", "A table's task: auto (a text target, or one of at most 20 distinct integers, is "
         "classification), classification or regression", &R::task, {"auto", "classification", "regression"}, T},
        {"test", "--test", "A CSV file of a table's test rows (default: --val-fraction of --data's rows)", &R::test, {}, T},
        {"loss", "--loss", "A regression's loss: mse or huber", &R::loss, {"mse", "huber"}, T},
        {"delimiter", "--delimiter", "A table's field delimiter (one character)", &R::delimiter, {}, T},
        {"image_size", "--image-size", "An image folder's images resized to HxW (default: their own size, the same for all)",
         &R::image_size, {}, T},
        {"val_fraction", "--val-fraction", "Share of a table's rows (or an image folder's images) held out without --test "
         "(or test/) (seeded, stratified)",
         &R::val_fraction, {}, L | T, "Share of the corpus's records held out for validation"},
        {"model", "", "", ConfigMember{}, {}, A},  // the architecture, in ModelSpec's own JSON (no member)
        {"steps", "--steps", "Optimizer steps", &R::steps, {}, L},
        {"epochs", "--epochs", "Epochs to train", &R::epochs, {}, A, "Or the run's length in passes over the training text"},
        {"batch_size", "--batch-size", "Images per batch (under mpirun: the global batch, divided among the ranks)",
         &R::batch_size, {}, A, "Windows per step (under mpirun: of all ranks together)"},
        {"optimizer", "--optimizer", choices_text(names_of(optimizer_kinds())), &R::optimizer, names_of(optimizer_kinds()), C},
        {"lr", "--lr", "Peak learning rate", &R::lr, {}, A, "Peak learning rate (AdamW)"},
        {"momentum", "--momentum", "SGD momentum", &R::momentum, {}, C},
        {"weight_decay", "--weight-decay", "Weight decay (decoupled for adamw, L2 otherwise)", &R::weight_decay, {}, A,
         "AdamW weight decay (matrices and embeddings)"},
        {"schedule", "--schedule", "Learning-rate schedule per batch: " + choices_text(names_of(schedule_kinds())),
         &R::schedule, names_of(schedule_kinds()), A, "After the warm-up: cosine or constant"},
        {"warmup", "--warmup", "Linear warm-up, in batches", &R::warmup, {}, A, "Linear warm-up, in steps"},
        {"step_gamma", "", "", &R::step_gamma, {}, C},
        {"step_epochs", "", "", &R::step_epochs, {}, C},
        {"clip", "--clip", "Clip the gradient norm to this value (0: off)", &R::clip},
        {"label_smoothing", "--label-smoothing", "Cross-entropy label smoothing", &R::label_smoothing, {}, C},
        {"eval_every", "--eval-every", "Steps between validations and checkpoints", &R::eval_every, {}, L},
        {"seed", "--seed", "Seed of the initial weights and the data order", &R::seed, {}, A,
         "Seed of the initial weights, the windows and dropout"},
        {"threads", "--threads", "Threads (default: NORMNET_NUM_THREADS, else OMP_NUM_THREADS, else the CPUs this process may use)",
         &R::threads, {}, A,
         "Threads (default: NORMNET_NUM_THREADS, else OMP_NUM_THREADS, else the CPUs this process may use; under mpirun, "
         "shared among the ranks)"},
        {"limit", "--limit", "Use only the first N images of each split (0: all), for quick runs", &R::limit, {}, C},
        {"on_nan", "--on-nan", "A non-finite loss: stop (keep the last checkpoint) or skip the step", &R::on_nan,
         {"stop", "skip"}, C},
        {"bn_sync", "--bn-sync",
         "BatchNorm under mpirun: local (each rank's own statistics, as DDP) or sync (over every rank's samples)",
         &R::bn_sync, {"local", "sync"}, A,
         "Under mpirun, with --norm batch: each rank's statistics over its windows x positions (local) or every rank's, "
         "as one process over the global batch (sync)"},
        {"recompute", "--recompute",
         "Activation checkpointing: each block keeps only its input and runs its forward again in backward (less "
         "memory, more time; not with --norm batch)", &R::recompute, {}, L},
        {"recompute_ffn", "--recompute-ffn",
         "Recompute each block's feed-forward hidden activations in backward (on by default: a quarter less memory for "
         "a few percent of time; moot with --recompute)", &R::recompute_ffn, {}, L},
    };
    return table;
}

const ConfigField& config_field(const std::string& flag) {
    for (const ConfigField& f : config_fields()) {
        if (f.flag == flag) return f;
    }
    fail("no run option ", flag);
}

bool RunConfig::counts_steps() const { return model.kind().task == kLanguageModel; }

bool RunConfig::is_table() const {
    if (data_dir.empty()) return false;
    for (const char* ext : {".csv", ".tsv", ".csv.gz", ".tsv.gz"})
        if (data_dir.ends_with(ext)) return true;
    std::error_code ec;
    return std::filesystem::is_regular_file(data_dir, ec);
}

std::pair<int64_t, int64_t> parse_image_size(const std::string& text) {
    const size_t x = text.find('x');
    int64_t h = 0, w = 0;
    try {
        size_t used_h = 0, used_w = 0;
        if (x != std::string::npos) {
            h = std::stoll(text.substr(0, x), &used_h);
            w = std::stoll(text.substr(x + 1), &used_w);
        }
        NORMNET_CHECK(x != std::string::npos && used_h == x && used_w == text.size() - x - 1, "");
    } catch (const std::exception&) {
        fail("--image-size: expected HxW (e.g. 32x32), got '", text, "'");
    }
    NORMNET_CHECK(h >= 1 && w >= 1 && h <= 4096 && w <= 4096, "--image-size: each side must be in [1, 4096], got '", text, "'");
    return {h, w};
}

bool RunConfig::is_image_folder() const {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (data_dir.empty() || !fs::is_directory(fs::path(data_dir) / "train", ec)) return false;
    for (const char* idx : {"train-images-idx3-ubyte", "train-images-idx3-ubyte.gz"})
        if (fs::exists(fs::path(data_dir) / idx, ec)) return false;
    return true;
}

unsigned RunConfig::task_bits() const {
    return model.kind().task | (is_table() || is_image_folder() ? kOwnData : 0u);
}

std::string RunConfig::to_json() const {
    nlohmann::ordered_json j;
    const unsigned task = task_bits();
    for (const ConfigField& f : config_fields()) {
        if (!(f.tasks & task) || (f.key == "dataset" && is_table())) continue;
        if (f.key == "model") {
            j["model"] = nlohmann::json::parse(model.to_json());
        } else if (f.key == "data_dir") {
            j["data_dir"] = resolved_data_dir();
        } else {
            std::visit([&](auto member) { j[f.key] = this->*member; }, f.member);
        }
    }
    return j.dump();
}

RunConfig RunConfig::from_json(const std::string& text, const std::string& where) {
    RunConfig c;
    try {
        const auto j = nlohmann::json::parse(text);
        NORMNET_CHECK(j.is_object(), "not a JSON object");
        if (j.contains("model")) c.model = ModelSpec::from_json(j.at("model").dump(), where);
        // Missing keys keep the task's defaults: RunConfig's for classification, the recipe of the
        // language model (whose defaults differ in most fields).
        const unsigned task = c.model.kind().task;
        if (task == kLanguageModel) {
            const ModelSpec model = c.model;
            c = recipe_config(model.type);
            c.model = model;
        }
        for (const ConfigField& f : config_fields()) {
            // A table's fields follow data_dir, so that it is known by then whether this is one.
            if (!(f.tasks & (task | (c.is_table() || c.is_image_folder() ? kOwnData : 0u))) || f.key == "model") continue;
            std::visit([&](auto member) { read_field(j, f.key, c.*member); }, f.member);
        }
    } catch (const std::exception& e) {
        fail(where, ": malformed training config metadata: ", e.what());
    }
    return c;
}

void RunConfig::validate() const {
    const auto known = [](const std::vector<std::string>& names, const std::string& v) {
        return std::find(names.begin(), names.end(), v) != names.end();
    };
    const ModelKind& kind = model_kind(model.type);
    const bool lm = kind.task == kLanguageModel;
    if (lm) {
        NORMNET_CHECK(val_fraction > 0 && val_fraction < 1, "val_fraction: must be in (0, 1), got ", val_fraction);
        NORMNET_CHECK((steps > 0) != (epochs > 0), "--steps and --epochs: give the length of the run in one of them, got ",
                      steps, " steps and ", epochs, " epochs");
        NORMNET_CHECK(steps >= 0 && steps <= kMaxSteps, "--steps: must be in [1, ", kMaxSteps, "], got ", steps);
        NORMNET_CHECK(epochs >= 0 && epochs <= kMaxEpochs, "--epochs: must be in [1, ", kMaxEpochs, "], got ", epochs);
        NORMNET_CHECK(eval_every >= 1 && eval_every <= kMaxSteps, "--eval-every: must be in [1, ", kMaxSteps, "], got ",
                      eval_every);
        NORMNET_CHECK(!recompute || !model.norm.batch_statistics(), "--recompute: not with --norm batch (its running "
                      "statistics would be updated twice per step)");
    } else if (is_table()) {
        NORMNET_CHECK(image_size.empty(), "--image-size: applies to an image folder, not to the table ", data_dir);
        NORMNET_CHECK(model.type == "mlp", "--model ", model.type, ": a table (--data ", data_dir, ") trains the mlp");
        NORMNET_CHECK(task == "auto" || task == "classification" || task == "regression",
                      "--task: expected auto, classification or regression, got '", task, "'");
        NORMNET_CHECK(loss == "mse" || loss == "huber", "--loss: expected mse or huber, got '", loss, "'");
        NORMNET_CHECK(delimiter.size() == 1 && delimiter != "\"" && delimiter != "\n" && delimiter != "\r",
                      "--delimiter: one character other than a quote or a line end, got '", delimiter, "'");
        NORMNET_CHECK(!test.empty() || (val_fraction > 0 && val_fraction < 1), "--val-fraction: must be in (0, 1), got ",
                      val_fraction);
        NORMNET_CHECK(epochs > 0 && epochs <= kMaxEpochs, "--epochs: must be in [1, ", kMaxEpochs, "], got ", epochs);
    } else {
        for (const auto& [flag, given] : {std::pair{"--target", !target.empty()}, {"--test", !test.empty()},
                                          {"--task", task != "auto"}, {"--loss", loss != "mse"}, {"--delimiter", delimiter != ","}})
            NORMNET_CHECK(!given, flag, ": applies to a table (--data FILE.csv), not to ", data_dir.empty() ? dataset : data_dir);
        if (is_image_folder()) {
            NORMNET_CHECK(val_fraction > 0 && val_fraction < 1, "--val-fraction: must be in (0, 1), got ", val_fraction);
            if (!image_size.empty()) (void)parse_image_size(image_size);
        } else {
            NORMNET_CHECK(image_size.empty(), "--image-size: applies to an image folder (--data DIR with DIR/train/<class>/), "
                          "not to ", data_dir.empty() ? dataset : data_dir);
        }
        NORMNET_CHECK(known(dataset_names(), dataset), "--dataset: unknown dataset '", dataset, "' (expected ",
                      choices_text(dataset_names()), ")");
        NORMNET_CHECK(epochs > 0 && epochs <= kMaxEpochs, "--epochs: must be in [1, ", kMaxEpochs, "], got ", epochs);
    }
    NORMNET_CHECK(batch_size > 0 && batch_size <= kMaxBatchSize, "--batch-size: must be in [1, ", kMaxBatchSize, "], got ",
                  batch_size);
    NORMNET_CHECK(known(names_of(optimizer_kinds()), optimizer), "--optimizer: unknown optimizer '", optimizer, "' (expected ",
                  choices_text(names_of(optimizer_kinds())), ")");
    // Non-finite values are rejected here, naming the option, before an optimizer sees them.
    NORMNET_CHECK(std::isfinite(lr) && lr > 0, "--lr: must be a positive finite number, got ", lr);
    NORMNET_CHECK(std::isfinite(momentum) && momentum >= 0, "--momentum: must be a finite number >= 0, got ", momentum);
    NORMNET_CHECK(std::isfinite(weight_decay) && weight_decay >= 0, "--weight-decay: must be a finite number >= 0, got ",
                  weight_decay);
    std::vector<std::string> schedules;
    for (const ScheduleKind& k : schedule_kinds()) {
        if (k.tasks & kind.task) schedules.push_back(k.name);
    }
    NORMNET_CHECK(known(names_of(schedule_kinds()), schedule), "--schedule: unknown schedule '", schedule, "' (expected ",
                  choices_text(schedules), ")");
    NORMNET_CHECK(known(schedules, schedule), "--schedule: --model ", kind.name, " takes ", choices_text(schedules), ", not ",
                  schedule);
    NORMNET_CHECK(warmup >= 0 && warmup <= kMaxSteps, "--warmup: must be >= 0, got ", warmup);
    NORMNET_CHECK(std::isfinite(step_gamma) && step_gamma > 0, "step_gamma: must be a positive finite number, got ", step_gamma);
    NORMNET_CHECK(step_epochs > 0 && step_epochs <= kMaxEpochs, "step_epochs: must be in [1, ", kMaxEpochs, "], got ", step_epochs);
    NORMNET_CHECK(std::isfinite(clip) && clip >= 0, "--clip: must be a finite number >= 0 (0 turns clipping off), got ", clip);
    NORMNET_CHECK(label_smoothing >= 0 && label_smoothing < 1, "--label-smoothing: must be in [0, 1), got ", label_smoothing);
    NORMNET_CHECK(threads >= 0 && threads <= 1024, "--threads: must be in [1, 1024], got ", threads);
    NORMNET_CHECK(limit >= 0, "--limit: must be >= 0 (0: all images), got ", limit);
    NORMNET_CHECK(on_nan == "stop" || on_nan == "skip", "--on-nan: unknown '", on_nan, "' (expected stop or skip)");
    NORMNET_CHECK(bn_sync == "local" || bn_sync == "sync", "--bn-sync: unknown '", bn_sync, "' (expected local or sync)");
    NORMNET_CHECK(model.norm.sits_at(kind.site), "--norm ", model.norm.name(), ": ", model.norm.label(),
                  " does not apply to --model ", kind.name, " (expected ", norm_choices(kind.site), ")");
    // Messages about the model's sizes name its first option (--hidden, --channels).
    std::string where;
    for (const ModelOption& o : kind.options) {
        if (where.empty()) where = o.flag;
    }
    // An image folder's images give the model's image size: --image-size's, or (unknown until they
    // are read) their own, which the Trainer checks once the task has sized the model.
    ModelSpec sized = model;
    const bool unsized = is_image_folder() && image_size.empty() && sized.sizes.count("image");
    if (is_image_folder() && !image_size.empty() && sized.sizes.count("image")) {
        const auto [h, w] = parse_image_size(image_size);
        sized.sizes["image"] = {sized.size("image").front(), h, w};
        sized.inputs = sized.size("image").front() * h * w;
    }
    if (!unsized) sized.validate(where);
    // An LM's batch is of windows of `context` positions: BatchNorm normalises over all of them.
    const int64_t positions = lm ? batch_size * model.scalar("context") : batch_size;
    NORMNET_CHECK(!model.norm.batch_statistics() || positions >= 2, "--batch-size ", batch_size, ": ", model.norm.label(),
                  lm ? " needs at least 2 positions per batch" :
                       " needs at least 2 samples per batch (use --norm layer, or a larger --batch-size)");
}

RunConfig recipe_config(const std::string& type) {
    RunConfig c;
    c.model = ModelSpec::defaults(type);
    model_kind(type).recipe(c);
    return c;
}

std::string RunConfig::resolved_data_dir() const {
    if (!data_dir.empty()) return data_dir;
    return dataset == "fashion-mnist" ? "/usr/share/datasets/fashion-mnist" : "data/mnist";
}

int RunConfig::resolved_threads() const {
    return threads > 0 ? threads : default_num_threads();
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
        // Only the first --limit images are kept from the file, so a quick run's peak memory
        // does not include the whole split.
        data = std::make_shared<Dataset>(load_mnist_split(dir, split, config.limit));
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
    if (c.model.kind().task == kLanguageModel) {
        // As in GPT-2 and nanoGPT: matrices (and embeddings) decay, biases and norm weights do not.
        auto [decay, no_decay] = split_parameters(params, [](const std::string&, const Tensor& p) { return p.dim() >= 2; });
        return std::make_unique<AdamW>(std::vector<ParamGroup>{ParamGroup(std::move(decay)),
                                                               ParamGroup(std::move(no_decay), {.weight_decay = 0.0})},
                                       AdamWOptions{.lr = c.lr, .weight_decay = c.weight_decay});
    }
    for (const OptimizerKind& k : optimizer_kinds()) {
        if (k.name == c.optimizer) return k.make(c, params);
    }
    fail("--optimizer: unknown optimizer '", c.optimizer, "'");
}

LRSchedulerOptions schedule_options(const RunConfig& c, int64_t total_steps, int64_t steps_per_epoch) {
    // Both are bounded (kMaxEpochs x batches <= dataset size, kMaxSteps), so no product overflows.
    NORMNET_CHECK(steps_per_epoch >= 1 && steps_per_epoch <= kMaxSteps, "schedule_options: ", steps_per_epoch,
                  " steps per epoch");
    LRSchedulerOptions o;
    for (const ScheduleKind& k : schedule_kinds()) {
        if (k.name == c.schedule) o.schedule = k.schedule;
    }
    o.total_steps = total_steps;
    o.warmup_steps = c.warmup;
    o.step_size = c.step_epochs * steps_per_epoch;
    o.gamma = c.step_gamma;
    if (o.schedule == Schedule::cosine && o.warmup_steps >= o.total_steps) {
        const std::string run = c.counts_steps() ? std::to_string(total_steps) + " steps"
                                                 : str(c.epochs, " epoch(s) x ", steps_per_epoch, " batch(es) = ", total_steps);
        throw UsageError(str("--warmup ", c.warmup, ": the cosine schedule needs the warm-up to end before the run does (",
                             run, ")"));
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
