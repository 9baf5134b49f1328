// `normnet train` (and `normnet lm train`, the same command for the language model under its
// own words): trains a model of the registry — the seed MLP by default, --model cnn|vit|lstm on
// MNIST or Fashion-MNIST, --model lm on a text corpus — and writes RUN_DIR/{config.json,
// metrics.csv, model.safetensors, training_state.safetensors}; can resume from a checkpoint.
// Everything that can be wrong with the input is checked before RUN_DIR is created, so a bad
// call leaves nothing behind; once running, a crash, a full disk, a signal or a NaN leaves the
// last complete checkpoint, and the folder is locked against a second writer.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "metrics_csv.hpp"
#include "models.hpp"
#include "progress.hpp"
#include "signals.hpp"
#include "trainer.hpp"
#include "normnet/normnet.hpp"

namespace normnet::cli {
namespace {

namespace fs = std::filesystem;

struct TrainArgs {
    std::string command = "train";  // or "lm train"
    RunConfig config;
    ModelArgs model;
    std::string norm;  // as given; the model's default when not
    std::string out;
    std::string resume;
    std::string init_from;
    bool overwrite = false;
    bool quiet = false;
    int64_t check_replicas = 0;
};

std::string percent(double fraction) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f%%", 100.0 * fraction);
    return buf;
}

// The config of a run: `base` (the model's recipe, or the config saved in a checkpoint) with the
// options given on this command line, the model's included.
RunConfig with_given_options(const RunConfig& base, const TrainArgs& args, const CLI::App& cmd) {
    RunConfig c = base;
    take_given_options(c, args.config, cmd);
    c.model = model_from_options(args.model, cmd, base.model);
    if (cmd.count("--norm") > 0) c.model.norm = args.norm;
    // A run counted in steps has its length in --steps or in --epochs.
    if (cmd.count("--steps") > 0) c.epochs = 0;
    if (cmd.count("--epochs") > 0 && c.counts_steps()) c.steps = 0;
    return c;
}

// True when the command line says anything about the architecture.
bool model_given(const TrainArgs& args, const CLI::App& cmd) {
    if (cmd.get_option_no_throw("--model") != nullptr && cmd.count("--model") > 0) return true;
    if (cmd.count("--norm") > 0) return true;
    for (const auto& [flag, text] : args.model.values) {
        if (cmd.count(flag) > 0) return true;
    }
    return false;
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

// The first lines: the model, data and recipe, and the data-parallel setting.
void print_header(const TrainArgs& args, Trainer& trainer, const Replicas& replicas) {
    const RunConfig& c = trainer.config();
    const std::string bn = c.bn_sync == "sync" ? "synchronised (sync)" : "per rank (local)";
    if (c.counts_steps()) {
        double parameters = 0;
        for (const Tensor& p : trainer.model().parameters()) parameters += static_cast<double>(p.numel());
        std::printf("normnet %s: %s (%s parameters) on %s, AdamW lr %g, batch %lld, %s, %s\n", args.command.c_str(),
                    c.model.str().c_str(), count_text(parameters).c_str(), trainer.task().data_text().c_str(), c.lr,
                    static_cast<long long>(c.batch_size), plural(trainer.total_steps(), "step").c_str(),
                    plural(c.threads, "thread").c_str());
        if (replicas.parallel()) {
            std::printf("data parallel: %d processes, %lld windows per rank and step%s\n", replicas.world,
                        static_cast<long long>(c.batch_size / replicas.world),
                        c.model.norm.batch_statistics() ? (", BatchNorm statistics " + bn).c_str() : "");
        }
        return;
    }
    std::printf("normnet %s: %s on %s, %s lr %g, batch %lld, %s, %s\n", args.command.c_str(), c.model.str().c_str(),
                trainer.task().data_text().c_str(), c.optimizer.c_str(), c.lr, static_cast<long long>(c.batch_size),
                plural(c.epochs, "epoch").c_str(), plural(c.threads, "thread").c_str());
    if (replicas.parallel()) {
        std::printf("data parallel: %d processes, %lld images per rank and batch, BatchNorm statistics %s\n", replicas.world,
                    static_cast<long long>(c.batch_size / replicas.world), bn.c_str());
    }
}

// An epoch's line after its label: "train loss 0.2087 acc 93.83%  test loss 0.1018 acc 96.93%".
std::string metrics_text(const RunConfig& c, const EpochMetrics& m) {
    char buf[160];
    if (c.counts_steps()) {
        std::snprintf(buf, sizeof buf, "train loss %.4f  %s", m.train_loss, val_loss_text(m.test_loss).c_str());
    } else if (!std::isnan(m.test_rmse)) {  // a regression
        std::snprintf(buf, sizeof buf, "train loss %.4f  test loss %.4f rmse %.4g mae %.4g r2 %.4f", m.train_loss,
                      m.test_loss, m.test_rmse, m.test_mae, m.test_r2);
    } else {
        std::snprintf(buf, sizeof buf, "train loss %.4f acc %s  test loss %.4f acc %s", m.train_loss,
                      percent(m.train_acc).c_str(), m.test_loss, percent(m.test_acc).c_str());
    }
    return buf;
}

void run_train(const TrainArgs& args, const CLI::App& cmd) {
    RunConfig config;
    as_usage_error([&] {
        NORMNET_CHECK(args.resume.empty() || args.init_from.empty(), "--resume and --init-from: give one or the other (--resume "
                      "continues a run, --init-from starts a new one from a model's weights)");
        NORMNET_CHECK(cmd.count("--steps") == 0 || cmd.count("--epochs") == 0,
                      "--steps and --epochs: give the length of the run in one of them");
        // A resumed run's model comes from its checkpoint; its options are checked against it once
        // that is read, and their own ranges at once (a bad option is a usage error before any file).
        if (args.resume.empty()) {
            config = with_given_options(recipe_config(args.model.type), args, cmd);
            refuse_other_tasks_options(cmd, config.model.kind());
        } else {
            config = recipe_config(args.model.type);
            take_given_options(config, args.config, cmd);
        }
        config.validate();
    });
    // The checkpoint (or the weights to start from) is read and checked first, so that nothing
    // is built or written for a file that cannot be used.
    LoadedCheckpoint checkpoint;
    if (!args.resume.empty()) {
        checkpoint = read_checkpoint(model_file_of(args.resume));
        const auto [spec, saved] = read_checkpoint_config(checkpoint.model);
        NORMNET_CHECK(args.command != "lm train" || spec.kind().task == kLanguageModel, "--resume ", checkpoint.model.path,
                      ": not a checkpoint of normnet lm train");
        check_file_fits(spec, checkpoint.model, "--resume");
        as_usage_error([&, saved = saved] {
            config = with_given_options(saved, args, cmd);
            refuse_other_tasks_options(cmd, config.model.kind());
            config.validate();
        });
    }
    SafetensorsData init;
    if (!args.init_from.empty()) {
        init = load_safetensors(model_file_of(args.init_from));
        // A normnet model file brings its architecture unless the command line names one.
        if (init.metadata.count("normnet.architecture") && !model_given(args, cmd)) {
            config.model = read_checkpoint_config(init).first;
            as_usage_error([&] { config.validate(); });
        }
        check_file_fits(config.model, init, "--init-from");
    }
    Replicas replicas = Replicas::current();
    replicas.check_every = args.check_replicas;
    config.threads = threads_per_rank(config.threads, replicas);  // under mpirun the ranks share the cores
    set_num_threads(config.threads);

    Trainer trainer(config, make_task(config, load_task_data(config), replicas), replicas);
    config = trainer.config();  // with what the data decides (the vocabulary)
    // Only rank 0 prints and writes; the other ranks train and join its collectives.
    const bool leader = replicas.leader();
    const bool quiet = args.quiet || !leader;
    const bool steps = config.counts_steps();
    const std::string checkpoint_dir = fs::path(checkpoint.model.path).parent_path().string();
    if (!args.resume.empty()) {
        const ResumePoint resumed = trainer.resume(checkpoint);
        NORMNET_CHECK(!trainer.finished(), "--resume ", checkpoint.model.path, ": the checkpoint has already trained ",
                      steps ? str(trainer.step(), " of ", trainer.total_steps(), " steps (pass --steps N")
                            : str(trainer.epochs_done(), " of ", config.epochs, " epochs (pass --epochs N"),
                      " to train more)");
        complete_history(trainer.history(), resumed.has_history, trainer.epochs_done(),
                         (fs::path(checkpoint_dir) / kMetricsFile).string(), steps);
    }
    if (!args.init_from.empty()) trainer.init_from(init);

    // Everything that can fail on bad input has happened; now the run folder.
    std::string dir = args.out;
    if (dir.empty()) dir = args.resume.empty() ? new_run_dir(steps ? "runs/lm_" : "runs/") : checkpoint_dir;
    if (dir.empty()) dir = ".";
    const bool continuing = !args.resume.empty() && same_folder(dir, checkpoint_dir);
    const bool existed = fs::exists(dir);
    const StopOnSignal signals;
    std::unique_ptr<FolderLock> lock;  // held until the run ends
    const std::string metrics_path = (fs::path(dir) / kMetricsFile).string();
    if (leader) {
        prepare_output_folder(dir, "--out", checkpoint_files(), run_files(), args.overwrite, continuing, lock,
                              "--resume " + dir + " to continue it");
        if (continuing) settle_checkpoint_folder(checkpoint);
        if (!checkpoint.note.empty()) std::fprintf(stderr, "normnet: note: %s\n", checkpoint.note.c_str());
        write_train_config_json(dir, config, checkpoint.model.path, init.path);
        // Rewritten from the checkpoint's history: also repairs a row a crash kept from being written.
        write_file_atomic(metrics_path, metrics_csv(trainer.history(), steps));
    }

    const bool tty = stdout_is_terminal() && !quiet;
    if (!quiet) {
        print_header(args, trainer, replicas);
        std::printf("run folder: %s\n", dir.c_str());
        if (!args.resume.empty()) std::printf("resuming from %s at %s\n", checkpoint.model.path.c_str(), trainer.position().c_str());
        std::fflush(stdout);
    }
    // The last checkpoint in this folder, named when a NaN stops the run.
    std::string saved = continuing ? trainer.position() : "";
    const auto interrupted = [&](int signal) {
        return Interrupted(signal, str("normnet: stopped by ", StopOnSignal::name(signal), " at ", trainer.position(),
                                       "; checkpoint saved, continue with: normnet ", args.command, " --resume ", dir));
    };
    try {
        while (!trainer.finished()) {
            const std::string label = trainer.epoch_label();
            ProgressBar bar(label, trainer.batches_per_epoch(), trainer.task().samples_per_step(), tty);
            const auto last = trainer.run_epoch(
                [&](int64_t batch, int64_t, double running_loss) {
                    char detail[32];
                    std::snprintf(detail, sizeof detail, "loss %.4f", running_loss);
                    bar.update(batch, detail);
                },
                StopOnSignal::stop_after_step);
            bar.finish();
            if (!last) {  // a signal inside the epoch: save where it stopped
                trainer.save_checkpoint(dir);
                saved = trainer.position();  // so that the folder's config.json stays with the checkpoint
                throw interrupted(StopOnSignal::requested());
            }
            if (!quiet) {
                std::printf("%s  %s  lr %.2e  %s%s\n", label.c_str(), metrics_text(config, *last).c_str(), last->lr,
                            format_duration(last->seconds).c_str(),
                            last->skipped ? ("  (" + plural(last->skipped, "step") + " skipped: non-finite)").c_str() : "");
                std::fflush(stdout);
            }
            // The checkpoint first, then its metrics row: a crash between the two loses the row
            // only until the next start rewrites metrics.csv from the checkpoint.
            trainer.save_checkpoint(dir);
            saved = trainer.position();
            if (leader) write_file_atomic(metrics_path, metrics_csv(trainer.history(), steps));
            if (StopOnSignal::requested()) throw interrupted(StopOnSignal::requested());
        }
    } catch (const NonFinite& e) {
        if (saved.empty() && leader) discard_run_folder(dir, existed, lock);
        fail(e.what(), "; stopped without saving, ",
             saved.empty() ? "no checkpoint was written" : "the checkpoint of " + saved + " in " + dir + " is kept",
             steps ? " (try a lower --lr or --clip)" : " (try a lower --lr, --clip, or --on-nan skip)");
    } catch (...) {
        if (saved.empty() && leader) discard_run_folder(dir, existed, lock);
        throw;
    }
    if (!leader) return;
    const std::string model_file = (fs::path(dir) / kModelFile).string();
    const EpochMetrics& last = trainer.history().back();
    if (steps) {
        std::printf("final %s, model saved to %s\n", val_loss_text(last.test_loss).c_str(), model_file.c_str());
    } else if (!std::isnan(last.test_rmse)) {  // a regression
        std::printf("final test rmse %.4g mae %.4g r2 %.4f, model saved to %s\n", last.test_rmse, last.test_mae, last.test_r2,
                    model_file.c_str());
    } else {
        std::printf("final test accuracy %s (best %s), model saved to %s\n", percent(trainer.history().back().test_acc).c_str(),
                    percent(best_accuracy(trainer.history())).c_str(), model_file.c_str());
    }
}

// The run folder's options of both commands.
void add_run_folder_options(CLI::App& cmd, TrainArgs& args, const std::string& default_folder) {
    cmd.add_option("--out", args.out, "Run folder (default: " + default_folder + ")");
    cmd.add_flag("--overwrite", args.overwrite, "Replace the run already in --out");
    cmd.add_option("--resume", args.resume, "Continue the run of a model.safetensors (or of its run folder)");
}

}  // namespace

void add_train_command(CLI::App& app) {
    auto args = std::make_shared<TrainArgs>();
    RunConfig& c = args->config;
    CLI::App* cmd = app.add_subcommand(
        "train", "Train a model on MNIST or Fashion-MNIST (default: the seed MLP 784-300-100-10 with LayerNorm on MNIST; "
                 "--model cnn: the CNN with BatchNorm on Fashion-MNIST), or --model lm on a text corpus");
    add_data_options(*cmd, c);
    add_own_data_options(*cmd, c);
    add_model_options(*cmd, args->model);
    std::string norms;
    for (const Norm& n : Norm::all()) norms += "; " + n.name() + ": " + n.description();
    cmd->add_option("--norm", args->norm, "Normalisation after each hidden layer (default: the model's, mlp layer, cnn batch)" + norms)
        ->check(CLI::IsMember(norm_names()));
    for (const char* flag : {"--epochs", "--batch-size", "--lr"}) add_config_option(*cmd, c, flag);
    add_optimizer_options(*cmd, c);
    for (const char* flag : {"--label-smoothing", "--seed", "--on-nan"}) add_config_option(*cmd, c, flag);
    add_run_folder_options(*cmd, *args, "runs/<date-time>");
    cmd->add_option("--init-from", args->init_from, "Start a new run from the weights of a model.safetensors (normnet's or PyTorch's)");
    cmd->add_flag("--quiet", args->quiet, "Print only the final line");
    add_config_option(*cmd, c, "--bn-sync");
    cmd->add_option("--check-replicas", args->check_replicas,
                    "Under mpirun: compare the parameters of every rank every K steps and stop at the first difference (debug)")
        ->check(kNonNegative);
    for (const char* flag : {"--text", "--steps", "--eval-every", "--recompute", "--recompute-ffn"}) {
        add_config_option(*cmd, c, flag, config_field(flag).help + " (--model lm)");
    }
    cmd->callback([args, cmd] { run_train(*args, *cmd); });
}

void add_lm_train_command(CLI::App& lm) {
    auto args = std::make_shared<TrainArgs>();
    args->command = "lm train";
    RunConfig& c = args->config;
    c = recipe_config("lm");
    CLI::App* cmd = lm.add_subcommand("train", "Train a GPT-style character model (default corpus: Debian's fortunes)");
    for (const char* flag : {"--text", "--steps", "--epochs", "--batch-size", "--lr", "--weight-decay", "--schedule", "--warmup",
                             "--clip"}) {
        add_config_option(*cmd, c, flag, "", true);
    }
    add_model_options(*cmd, args->model, &lm_model());
    cmd->add_option("--norm", args->norm, "Normalisation in the blocks: layer, rms, batch or none")
        ->check(CLI::IsMember(norm_names(NormSite::tokens)))
        ->default_str("layer");
    for (const char* flag : {"--eval-every", "--seed", "--threads", "--bn-sync", "--recompute", "--recompute-ffn"}) {
        add_config_option(*cmd, c, flag, "", true);
    }
    add_run_folder_options(*cmd, *args, "runs/lm_<date-time>");
    cmd->add_flag("--quiet", args->quiet, "Print only the final line");
    cmd->callback([args, cmd] { run_train(*args, *cmd); });
}

}  // namespace normnet::cli
