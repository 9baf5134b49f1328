// `normnet train`: trains the seed MLP (or any --hidden/--norm variant) on MNIST or
// Fashion-MNIST, writes RUN_DIR/{config.json, metrics.csv, model.safetensors,
// training_state.safetensors} and can resume from a checkpoint. Everything that can be wrong
// with the input is checked before RUN_DIR is created, so a bad call leaves nothing behind; once
// running, a crash, a full disk, a signal or a NaN leaves the last complete checkpoint.
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "metrics_csv.hpp"
#include "progress.hpp"
#include "signals.hpp"
#include "trainer.hpp"
#include "normnet/normnet.hpp"

namespace normnet::cli {
namespace {

namespace fs = std::filesystem;

struct TrainArgs {
    RunConfig config;
    std::string hidden = "300,100";
    std::string out;
    std::string resume;
    std::string init_from;
    bool overwrite = false;
    bool quiet = false;
};

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
    take("--on-nan", &RunConfig::on_nan);
    if (cmd.count("--hidden") > 0) c.model.hidden = given.model.hidden;
    if (cmd.count("--norm") > 0) c.model.norm = given.model.norm;
    return c;
}

void write_train_config_json(const std::string& dir, const RunConfig& config, const std::string& resumed_from,
                             const std::string& initialized_from) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(config.to_json());
    j["threads"] = config.threads;
    j["resumed_from"] = resumed_from;
    j["initialized_from"] = initialized_from;
    write_config_json(dir, std::move(j));
}

double best_accuracy(const std::vector<EpochMetrics>& history) {
    double best = 0.0;
    for (const EpochMetrics& m : history) {
        if (m.test_acc > best) best = m.test_acc;  // NaN (unknown) never wins
    }
    return best;
}

// Where the run stands, for messages: "epoch 3", or "epoch 3, batch 120 of 469" inside one.
std::string position(const Trainer& t) {
    if (t.progress().batch == 0) return "epoch " + std::to_string(t.epochs_done());
    return "epoch " + std::to_string(t.epochs_done() + 1) + ", batch " + std::to_string(t.progress().batch) + " of " +
           std::to_string(t.batches_per_epoch());
}

void run_train(TrainArgs& args, const CLI::App& cmd) {
    RunConfig config = args.config;
    as_usage_error([&] {
        NORMNET_CHECK(args.resume.empty() || args.init_from.empty(), "--resume and --init-from: give one or the other (--resume "
              "continues a run, --init-from starts a new one from a model's weights)");
        config.model.hidden = parse_size_list(args.hidden, "--hidden");
        config.validate();
    });
    // The checkpoint (or the weights to start from) is read and checked first, so that nothing
    // is built or written for a file that cannot be used.
    LoadedCheckpoint checkpoint;
    if (!args.resume.empty()) {
        checkpoint = read_checkpoint(model_file_of(args.resume));
        const auto [spec, saved] = read_checkpoint_config(checkpoint.model);
        check_file_fits(spec, checkpoint.model, "--resume");
        config = merge_resumed(saved, config, cmd);
        as_usage_error([&] { config.validate(); });
    }
    SafetensorsData init;
    if (!args.init_from.empty()) {
        init = load_safetensors(model_file_of(args.init_from));
        // A normnet model file brings its architecture unless --hidden or --norm say otherwise.
        if (init.metadata.count("normnet.architecture") && cmd.count("--hidden") == 0 && cmd.count("--norm") == 0) {
            config.model = read_checkpoint_config(init).first;
            as_usage_error([&] { config.validate(); });
        }
        check_file_fits(config.model, init, "--init-from");
    }
    config.threads = config.resolved_threads();
    set_num_threads(config.threads);

    const auto train = load_split(config, "train");
    const auto test = load_split(config, "test");
    Trainer trainer(config, train, test);
    const std::string checkpoint_dir = fs::path(checkpoint.model.path).parent_path().string();
    if (!args.resume.empty()) {
        const ResumePoint resumed = trainer.resume(checkpoint);
        NORMNET_CHECK(trainer.epochs_done() < config.epochs, "--resume ", checkpoint.model.path,
              ": the checkpoint has already trained ", trainer.epochs_done(), " of ", config.epochs,
              " epochs (pass --epochs N to train more)");
        complete_history(trainer.history(), resumed.has_history, trainer.epochs_done(),
                         (fs::path(checkpoint_dir) / kMetricsFile).string());
    }
    if (!args.init_from.empty()) trainer.init_from(init);

    // Everything that can fail on bad input has happened; now the run folder.
    std::string dir = args.out;
    if (dir.empty()) dir = args.resume.empty() ? new_run_dir("runs/") : checkpoint_dir;
    if (dir.empty()) dir = ".";
    const bool continuing = !args.resume.empty() && same_folder(dir, checkpoint_dir);
    const bool existed = fs::exists(dir);
    const StopOnSignal signals;
    prepare_output_folder(dir, "--out", checkpoint_files(), run_files(), args.overwrite, continuing,
                          "--resume " + dir + " to continue it");
    if (continuing) settle_checkpoint_folder(checkpoint);
    if (!checkpoint.note.empty()) std::fprintf(stderr, "normnet: note: %s\n", checkpoint.note.c_str());
    write_train_config_json(dir, config, checkpoint.model.path, init.path);
    const std::string metrics_path = (fs::path(dir) / kMetricsFile).string();
    // Rewritten from the checkpoint's history: also repairs a row a crash kept from being written.
    write_file_atomic(metrics_path, metrics_csv(trainer.history()));

    const bool tty = stdout_is_terminal() && !args.quiet;
    if (!args.quiet) {
        std::printf("normnet train: %s on %s (%lld train / %lld test images), %s lr %g, batch %lld, %s, %s\n",
                    config.model.str().c_str(), config.dataset.c_str(), static_cast<long long>(train->size()),
                    static_cast<long long>(test->size()), config.optimizer.c_str(), config.lr,
                    static_cast<long long>(config.batch_size), plural(config.epochs, "epoch").c_str(),
                    plural(config.threads, "thread").c_str());
        std::printf("run folder: %s\n", dir.c_str());
        if (!args.resume.empty()) std::printf("resuming from %s at %s\n", checkpoint.model.path.c_str(), position(trainer).c_str());
        std::fflush(stdout);
    }
    // The last checkpoint in this folder, named when a NaN stops the run.
    std::string saved = continuing ? position(trainer) : "";
    const auto interrupted = [&](int signal) {
        return Interrupted(signal, str("normnet: stopped by ", StopOnSignal::name(signal), " at ", position(trainer),
                                                  "; checkpoint saved, continue with: normnet train --resume ", dir));
    };
    try {
        while (trainer.epochs_done() < config.epochs) {
            const std::string label = "epoch " + std::to_string(trainer.epochs_done() + 1) + "/" + std::to_string(config.epochs);
            ProgressBar bar(label, trainer.batches_per_epoch(), config.batch_size, tty);
            const auto last = trainer.run_epoch(
                [&](int64_t batch, int64_t, double running_loss) {
                    char detail[32];
                    std::snprintf(detail, sizeof detail, "loss %.4f", running_loss);
                    bar.update(batch, detail);
                },
                [] { return StopOnSignal::requested() != 0; });
            bar.finish();
            if (!last) {  // a signal inside the epoch: save where it stopped
                trainer.save_checkpoint(dir);
                throw interrupted(StopOnSignal::requested());
            }
            if (!args.quiet) {
                std::printf("%s  train loss %.4f acc %s  test loss %.4f acc %s  lr %.2e  %s%s\n", label.c_str(),
                            last->train_loss, percent(last->train_acc).c_str(), last->test_loss,
                            percent(last->test_acc).c_str(), last->lr, format_duration(last->seconds).c_str(),
                            last->skipped ? ("  (" + plural(last->skipped, "step") + " skipped: non-finite)").c_str() : "");
                std::fflush(stdout);
            }
            // The checkpoint first, then its metrics row: a crash between the two loses the row
            // only until the next start rewrites metrics.csv from the checkpoint.
            trainer.save_checkpoint(dir);
            saved = position(trainer);
            write_file_atomic(metrics_path, metrics_csv(trainer.history()));
            if (StopOnSignal::requested()) throw interrupted(StopOnSignal::requested());
        }
    } catch (const NonFinite& e) {
        if (saved.empty()) discard_run_folder(dir, existed);
        fail(e.what(), "; stopped without saving, ",
             saved.empty() ? "no checkpoint was written" : "the checkpoint of " + saved + " in " + dir + " is kept",
             " (try a lower --lr, --clip, or --on-nan skip)");
    } catch (...) {
        if (saved.empty()) discard_run_folder(dir, existed);
        throw;
    }
    std::printf("final test accuracy %s (best %s), model saved to %s\n", percent(trainer.history().back().test_acc).c_str(),
                percent(best_accuracy(trainer.history())).c_str(), (fs::path(dir) / kModelFile).c_str());
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
    cmd->add_option("--seed", c.seed, "Seed of the initial weights and the data order")
        ->check(kNonNegative)->capture_default_str();
    cmd->add_option("--on-nan", c.on_nan, "A non-finite loss: stop (keep the last checkpoint) or skip the step")
        ->check(CLI::IsMember({"stop", "skip"}))->capture_default_str();
    cmd->add_option("--out", args->out, "Run folder (default: runs/<date-time>)");
    cmd->add_flag("--overwrite", args->overwrite, "Replace the run already in --out");
    cmd->add_option("--resume", args->resume, "Continue the run of a model.safetensors (or of its run folder)");
    cmd->add_option("--init-from", args->init_from, "Start a new run from the weights of a model.safetensors (normnet's or PyTorch's)");
    cmd->add_flag("--quiet", args->quiet, "Print only the final line");
    cmd->callback([args, cmd] { run_train(*args, *cmd); });
}

}  // namespace normnet::cli
