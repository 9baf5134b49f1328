// `normnet train`: trains the seed MLP (or any --hidden/--norm variant) on MNIST or
// Fashion-MNIST, writes RUN_DIR/{config.json, metrics.csv, model.safetensors,
// training_state.safetensors} and can resume from a checkpoint. Everything that can be wrong
// with the input is checked before RUN_DIR is created, so a bad call leaves nothing behind.
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "progress.hpp"
#include "svg_chart.hpp"
#include "trainer.hpp"
#include "normnet/normnet.hpp"

namespace normnet::cli {
namespace {

struct TrainArgs {
    RunConfig config;
    std::string hidden = "300,100";
    std::string out;
    std::string resume;
    bool quiet = false;
};

std::string default_run_dir() {
    const std::time_t now = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%d_%H-%M-%S", std::localtime(&now));
    std::string dir = std::string("runs/") + stamp;
    for (int i = 2; std::filesystem::exists(dir); ++i) dir = std::string("runs/") + stamp + "_" + std::to_string(i);
    return dir;
}

std::string percent(double fraction) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f%%", 100.0 * fraction);
    return buf;
}

// Applies the options given on this command line over the config saved in a checkpoint.
RunConfig merge_resumed(const RunConfig& saved, const RunConfig& given, const CLI::App& cmd) {
    RunConfig c = saved;
    const auto take = [&](const char* option, auto RunConfig::*field) {
        if (cmd.count(option) > 0) c.*field = given.*field;
    };
    take("--dataset", &RunConfig::dataset);
    take("--data", &RunConfig::data_dir);
    take("--epochs", &RunConfig::epochs);
    take("--batch-size", &RunConfig::batch_size);
    take("--optimizer", &RunConfig::optimizer);
    take("--lr", &RunConfig::lr);
    take("--momentum", &RunConfig::momentum);
    take("--weight-decay", &RunConfig::weight_decay);
    take("--schedule", &RunConfig::schedule);
    take("--warmup", &RunConfig::warmup);
    take("--clip", &RunConfig::clip);
    take("--label-smoothing", &RunConfig::label_smoothing);
    take("--seed", &RunConfig::seed);
    take("--threads", &RunConfig::threads);
    take("--limit", &RunConfig::limit);
    if (cmd.count("--hidden") > 0) c.model.hidden = given.model.hidden;
    if (cmd.count("--norm") > 0) c.model.norm = given.model.norm;
    return c;
}

void write_config_json(const std::string& dir, const RunConfig& config, const std::string& resumed_from) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(config.to_json());
    j["threads"] = config.threads;
    j["resumed_from"] = resumed_from;
    j["versions"] = nlohmann::json::parse(versions_json());
    write_text_file_atomic((std::filesystem::path(dir) / "config.json").string(), j.dump(2) + "\n");
}

void run_train(TrainArgs& args, const CLI::App& cmd) {
    RunConfig config = args.config;
    as_usage_error([&] {
        config.model.hidden = parse_size_list(args.hidden, "--hidden");
        config.validate();
    });
    std::string resumed_from;
    if (!args.resume.empty()) {
        const SafetensorsData checkpoint = load_safetensors(args.resume);
        config = merge_resumed(read_checkpoint_config(checkpoint).second, config, cmd);
        resumed_from = args.resume;
        as_usage_error([&] { config.validate(); });
    }
    config.threads = config.resolved_threads();
    set_num_threads(config.threads);

    // Everything that can fail on bad input happens before the run folder exists.
    const auto train = load_split(config, "train");
    const auto test = load_split(config, "test");
    Trainer trainer(config, train, test);
    if (!args.resume.empty()) {
        trainer.resume(args.resume);
        check(trainer.epochs_done() < config.epochs, "--resume ", args.resume, ": the checkpoint has already trained ",
              trainer.epochs_done(), " of ", config.epochs, " epochs (pass --epochs N to train more)");
    }
    std::string dir = args.out;
    if (dir.empty()) dir = args.resume.empty() ? default_run_dir() : std::filesystem::path(args.resume).parent_path().string();
    if (dir.empty()) dir = ".";
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    check(!ec && std::filesystem::is_directory(dir), "--out ", dir, ": cannot create the run folder",
          ec ? ": " + ec.message() : std::string(" (a file of that name exists)"));
    write_config_json(dir, config, resumed_from);
    const std::string metrics_path = (std::filesystem::path(dir) / "metrics.csv").string();
    const bool append = !args.resume.empty() && std::filesystem::exists(metrics_path);
    std::ofstream metrics(metrics_path, append ? std::ios::app : std::ios::trunc);
    check(metrics.good(), "cannot write ", metrics_path);
    if (!append) metrics << "epoch,train_loss,train_acc,test_loss,test_acc,epoch_seconds,lr\n" << std::flush;

    const bool tty = stdout_is_terminal() && !args.quiet;
    if (!args.quiet) {
        std::printf("normnet train: %s on %s (%lld train / %lld test images), %s lr %g, batch %lld, %lld epochs, %d threads\n",
                    config.model.str().c_str(), config.dataset.c_str(), static_cast<long long>(train->size()),
                    static_cast<long long>(test->size()), config.optimizer.c_str(), config.lr,
                    static_cast<long long>(config.batch_size), static_cast<long long>(config.epochs), config.threads);
        std::printf("run folder: %s\n", dir.c_str());
        std::fflush(stdout);
    }
    EpochMetrics last;
    double best = 0.0;
    while (trainer.epochs_done() < config.epochs) {
        const std::string label = "epoch " + std::to_string(trainer.epochs_done() + 1) + "/" + std::to_string(config.epochs);
        ProgressBar bar(label, trainer.batches_per_epoch(), config.batch_size, tty);
        last = trainer.run_epoch([&](int64_t batch, int64_t, double running_loss) {
            char detail[32];
            std::snprintf(detail, sizeof detail, "loss %.4f", running_loss);
            bar.update(batch, detail);
        });
        bar.finish();
        best = std::max(best, last.test_acc);
        char line[256];
        std::snprintf(line, sizeof line, "%s  train loss %.4f acc %s  test loss %.4f acc %s  lr %.2e  %s", label.c_str(),
                      last.train_loss, percent(last.train_acc).c_str(), last.test_loss, percent(last.test_acc).c_str(),
                      last.lr, format_duration(last.seconds).c_str());
        if (!args.quiet) {
            std::printf("%s\n", line);
            std::fflush(stdout);
        }
        char row[256];
        std::snprintf(row, sizeof row, "%lld,%.6f,%.6f,%.6f,%.6f,%.3f,%.6g\n", static_cast<long long>(last.epoch),
                      last.train_loss, last.train_acc, last.test_loss, last.test_acc, last.seconds, last.lr);
        metrics << row << std::flush;
        trainer.save_checkpoint(dir);
    }
    std::printf("final test accuracy %s (best %s), model saved to %s\n", percent(last.test_acc).c_str(),
                percent(best).c_str(), (std::filesystem::path(dir) / "model.safetensors").c_str());
}

}  // namespace

void add_train_command(CLI::App& app) {
    auto args = std::make_shared<TrainArgs>();
    RunConfig& c = args->config;
    CLI::App* cmd = app.add_subcommand("train", "Train an MLP (default: the seed 784-300-100-10 with LayerNorm) on MNIST");
    add_data_options(*cmd, c);
    cmd->add_option("--hidden", args->hidden, "Hidden layer sizes, comma-separated")->capture_default_str();
    cmd->add_option("--norm", c.model.norm, "Normalisation after each hidden ReLU: layer, batch, rms or none")
        ->check(CLI::IsMember(kNorms))->capture_default_str();
    cmd->add_option("--epochs", c.epochs, "Epochs to train")->capture_default_str();
    cmd->add_option("--batch-size", c.batch_size, "Images per batch")->capture_default_str();
    cmd->add_option("--lr", c.lr, "Peak learning rate")->capture_default_str();
    add_optimizer_options(*cmd, c);
    cmd->add_option("--label-smoothing", c.label_smoothing, "Cross-entropy label smoothing")->capture_default_str();
    cmd->add_option("--seed", c.seed, "Seed of the initial weights and the data order")->capture_default_str();
    cmd->add_option("--out", args->out, "Run folder (default: runs/<date-time>)");
    cmd->add_option("--resume", args->resume, "Continue from a model.safetensors written by normnet train");
    cmd->add_flag("--quiet", args->quiet, "Print only the final line");
    cmd->callback([args, cmd] { run_train(*args, *cmd); });
}

}  // namespace normnet::cli
