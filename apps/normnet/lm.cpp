// `normnet lm train` and `normnet lm sample`: a character-level language model (a GPT-style
// decoder, normnet::models::CharTransformer) trained on a UTF-8 corpus (default: Debian's
// fortunes), validated on held-out records in nats and bits per character, with the run folder,
// checkpoints, resume and signals of `normnet train`; and text sampled from a checkpoint. As in
// `train`, everything a bad call can get wrong (options, the corpus, the checkpoint) is checked
// before the run folder is touched.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "lm_trainer.hpp"
#include "norms.hpp"
#include "progress.hpp"
#include "run_config.hpp"
#include "signals.hpp"
#include "trainer.hpp"
#include "normnet/normnet.hpp"

namespace normnet::cli {
namespace {

namespace fs = std::filesystem;

struct LmTrainArgs {
    LmConfig config;
    std::string norm_placement = "pre";
    std::string out;
    std::string resume;
    bool overwrite = false;
    bool quiet = false;
};

// The options given on this command line over the config saved in a checkpoint.
LmConfig merge_resumed(const LmConfig& saved, const LmConfig& given, const CLI::App& cmd) {
    LmConfig c = saved;
    const auto take = [&](const char* option, auto LmConfig::*field) {
        if (cmd.count(option) > 0) c.*field = given.*field;
    };
    const auto take_model = [&](const char* option, auto LmSpec::*field) {
        if (cmd.count(option) > 0) c.model.*field = given.model.*field;
    };
    take("--text", &LmConfig::text);
    if (cmd.count("--steps") > 0 || cmd.count("--epochs") > 0) {
        c.steps = given.steps;
        c.epochs = given.epochs;
    }
    take("--batch-size", &LmConfig::batch_size);
    take("--lr", &LmConfig::lr);
    take("--weight-decay", &LmConfig::weight_decay);
    take("--schedule", &LmConfig::schedule);
    take("--warmup", &LmConfig::warmup);
    take("--clip", &LmConfig::clip);
    take("--eval-every", &LmConfig::eval_every);
    take("--threads", &LmConfig::threads);
    take("--bn-sync", &LmConfig::bn_sync);
    take("--recompute", &LmConfig::recompute);
    take("--recompute-ffn", &LmConfig::recompute_ffn);
    // Architecture options are taken too, so that asking for another model than the
    // checkpoint's is an error rather than silently ignored.
    take_model("--context", &LmSpec::context);
    take_model("--d-model", &LmSpec::d_model);
    take_model("--layers", &LmSpec::n_layers);
    take_model("--heads", &LmSpec::n_heads);
    take_model("--dropout", &LmSpec::dropout);
    take_model("--norm", &LmSpec::norm);
    take_model("--norm-placement", &LmSpec::norm_first);
    return c;
}

void write_lm_config_json(const std::string& dir, const LmConfig& config, const std::string& resumed_from) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(config.to_json());
    j["threads"] = config.threads;
    j["resumed_from"] = resumed_from;
    write_config_json(dir, std::move(j));
}

// The seconds of each validation from the metrics.csv an earlier process of the run wrote (the
// checkpoint keeps everything else).
void complete_seconds(std::vector<LmMetrics>& history, const std::string& path) {
    std::ifstream in(path);
    std::map<int64_t, double> seconds;
    for (std::string line; std::getline(in, line);) {
        const size_t comma = line.find(','), last = line.rfind(',');
        if (comma == std::string::npos || last + 1 >= line.size()) continue;
        try {
            seconds[std::stoll(line.substr(0, comma))] = std::stod(line.substr(last + 1));
        } catch (const std::exception&) {
            // the header, or a row damaged by hand: left out
        }
    }
    for (LmMetrics& m : history) {
        const auto it = seconds.find(m.step);
        if (it != seconds.end()) m.seconds = it->second;
    }
}

void run_lm_train(LmTrainArgs& args, const CLI::App& cmd, const LmModelFactory& factory) {
    LmConfig config = args.config;
    as_usage_error([&] {
        NORMNET_CHECK(cmd.count("--steps") == 0 || cmd.count("--epochs") == 0,
                      "--steps and --epochs: give the length of the run in one of them");
        if (cmd.count("--epochs") > 0) config.steps = 0;
        config.model.norm_first = args.norm_placement == "pre";
        config.validate();
    });
    LoadedCheckpoint checkpoint;
    if (!args.resume.empty()) {
        checkpoint = read_checkpoint(model_file_of(args.resume));
        const auto& metadata = checkpoint.model.metadata;
        const auto it = metadata.find("normnet.config");
        NORMNET_CHECK(it != metadata.end() && metadata.count("normnet.vocab"), "--resume ", checkpoint.model.path,
                      ": not a checkpoint of normnet lm train");
        config = merge_resumed(LmConfig::from_json(it->second, checkpoint.model.path), config, cmd);
        as_usage_error([&] { config.validate(); });
    }
    // Under mpirun every rank runs this: only rank 0 prints and writes; the others train and
    // join its collectives.
    const Replicas& replicas = Replicas::current();
    const bool leader = replicas.leader();
    config.threads = threads_per_rank(config.threads, replicas);  // the ranks on a machine share its cores
    set_num_threads(config.threads);

    const TextCorpus corpus = load_text_corpus(config.text, {.val_fraction = config.val_fraction});
    LmTrainer trainer(config, corpus, factory, replicas);
    const std::string checkpoint_dir = fs::path(checkpoint.model.path).parent_path().string();
    if (!args.resume.empty()) {
        trainer.resume(checkpoint);
        complete_seconds(trainer.history(), (fs::path(checkpoint_dir) / kMetricsFile).string());
    }
    config = trainer.config();

    // Everything that can fail on bad input has happened; now the run folder.
    std::string dir = args.out;
    if (dir.empty()) dir = args.resume.empty() ? new_run_dir("runs/lm_") : checkpoint_dir;
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
        write_lm_config_json(dir, config, checkpoint.model.path);
        write_file_atomic(metrics_path, lm_metrics_csv(trainer.history()));
    }

    const bool quiet = args.quiet || !leader;
    const bool tty = stdout_is_terminal() && !quiet;
    if (!quiet) {
        double parameters = 0;
        for (const Tensor& p : trainer.model().parameters()) parameters += static_cast<double>(p.numel());
        std::printf("normnet lm train: %s (%s parameters) on %s (%lld records: %lld training / %lld held-out characters), "
                    "AdamW lr %g, batch %lld, %s, %s\n",
                    config.model.str().c_str(), count_text(parameters).c_str(), config.text.c_str(),
                    static_cast<long long>(corpus.records), static_cast<long long>(corpus.train.size()),
                    static_cast<long long>(corpus.val.size()), config.lr, static_cast<long long>(config.batch_size),
                    plural(trainer.total_steps(), "step").c_str(), plural(config.threads, "thread").c_str());
        if (replicas.parallel()) {
            std::printf("data parallel: %d processes, %lld windows per rank and step%s\n", replicas.world,
                        static_cast<long long>(config.batch_size / replicas.world),
                        config.model.norm != "batch" ? ""
                        : config.bn_sync == "sync"   ? ", BatchNorm statistics synchronised (sync)"
                                                     : ", BatchNorm statistics per rank (local)");
        }
        std::printf("run folder: %s\n", dir.c_str());
        if (!args.resume.empty()) {
            std::printf("resuming from %s at step %lld\n", checkpoint.model.path.c_str(), static_cast<long long>(trainer.step()));
        }
        std::fflush(stdout);
    }
    bool saved = continuing;
    const auto interrupted = [&](int signal) {
        return Interrupted(signal, str("normnet: stopped by ", StopOnSignal::name(signal), " at step ", trainer.step(),
                                       "; checkpoint saved, continue with: normnet lm train --resume ", dir));
    };
    try {
        while (trainer.step() < trainer.total_steps()) {
            const int64_t from = trainer.step();
            const int64_t to = std::min(trainer.total_steps(), (from / config.eval_every + 1) * config.eval_every);
            const std::string label = "step " + std::to_string(to) + "/" + std::to_string(trainer.total_steps());
            ProgressBar bar(label, to - from, config.batch_size * config.model.context, tty);
            const auto m = trainer.run_interval(
                [&](int64_t step, int64_t, double running_loss) {
                    char detail[32];
                    std::snprintf(detail, sizeof detail, "loss %.4f", running_loss);
                    bar.update(step - from, detail);
                },
                [] { return StopOnSignal::requested() != 0; });
            bar.finish();
            if (!m) {  // a signal between two validations: save where it stopped
                trainer.save_checkpoint(dir);
                saved = true;
                throw interrupted(StopOnSignal::requested());
            }
            if (!quiet) {
                std::printf("%s  train loss %.4f  %s  lr %.2e  %s\n", label.c_str(), m->train_loss,
                            val_loss_text(m->val_loss).c_str(), m->lr, format_duration(m->seconds).c_str());
                std::fflush(stdout);
            }
            trainer.save_checkpoint(dir);
            saved = true;
            if (leader) write_file_atomic(metrics_path, lm_metrics_csv(trainer.history()));
            if (StopOnSignal::requested()) throw interrupted(StopOnSignal::requested());
        }
    } catch (const NonFinite& e) {
        if (!saved && leader) discard_run_folder(dir, existed, lock);
        fail(e.what(), "; stopped without saving, ",
             saved ? "the last checkpoint in " + dir + " is kept" : std::string("no checkpoint was written"),
             " (try a lower --lr or --clip)");
    } catch (...) {
        if (!saved && leader) discard_run_folder(dir, existed, lock);
        throw;
    }
    if (!leader) return;
    std::printf("final %s, model saved to %s\n", val_loss_text(trainer.history().back().val_loss).c_str(),
                (fs::path(dir) / kModelFile).c_str());
}

struct LmSampleArgs {
    std::string checkpoint;
    std::string prompt;
    SampleOptions options;
    int threads = 1;
};

// "'Z' (U+005A)"
std::string character_text(char32_t c) {
    TextCorpus one;
    one.vocab = {c};
    char code[16];
    std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(c));
    return (c >= 0x20 && c != 0x7f ? "'" + one.decode({0}) + "' (" : std::string("(")) + code + ")";
}

void run_lm_sample(const LmSampleArgs& args, const LmModelFactory& factory) {
    as_usage_error([&] {
        NORMNET_CHECK(std::isfinite(args.options.temperature) && args.options.temperature >= 0,
                      "--temperature: must be a finite number >= 0 (0: the most likely character), got ",
                      args.options.temperature);
        NORMNET_CHECK(args.options.top_k >= 0, "--top-k: must be >= 0 (0: all characters), got ", args.options.top_k);
    });
    const std::string path = model_file_of(args.checkpoint);
    set_num_threads(args.threads);
    const LmCheckpoint c = load_lm_checkpoint(path, factory);
    TextCorpus vocabulary;
    vocabulary.vocab = c.vocab;
    std::vector<int64_t> ids;
    const std::vector<char32_t> prompt = decode_utf8(args.prompt, "--prompt");
    for (size_t i = 0; i < prompt.size(); ++i) {
        const auto it = std::lower_bound(c.vocab.begin(), c.vocab.end(), prompt[i]);
        if (it == c.vocab.end() || *it != prompt[i]) {
            throw UsageError(str("--prompt: character ", i + 1, " ", character_text(prompt[i]),
                                 " is not in the vocabulary of ", path, " (the ", c.vocab.size(),
                                 " characters of its training text)"));
        }
        ids.push_back(it - c.vocab.begin());
    }
    if (ids.empty()) {
        // No prompt: start as a record does, after a newline.
        const auto it = std::lower_bound(c.vocab.begin(), c.vocab.end(), U'\n');
        NORMNET_CHECK(it != c.vocab.end() && *it == U'\n', "--prompt: give at least one character (the vocabulary of ",
                      path, " has no newline to start from)");
        ids.push_back(it - c.vocab.begin());
    }
    std::fputs(args.prompt.c_str(), stdout);
    sample_text(*c.model, c.spec.context, ids, args.options, [&](int64_t id) {
        std::fputs(vocabulary.decode({id}).c_str(), stdout);
        std::fflush(stdout);
    });
    std::fputs("\n", stdout);
}

}  // namespace

void add_lm_command(CLI::App& app, const LmModelFactory& factory) {
    CLI::App* lm = app.add_subcommand("lm", "Character-level language model: train on a text corpus, sample from a checkpoint");
    lm->require_subcommand(1);
    // A later option overrides an earlier one (a recipe with one value changed).
    lm->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

    auto args = std::make_shared<LmTrainArgs>();
    LmConfig& c = args->config;
    CLI::App* train = lm->add_subcommand("train", "Train a GPT-style character model (default corpus: Debian's fortunes)");
    train->add_option("--text", c.text, "A UTF-8 text file, or a folder of them (fortune records split by %)")
        ->capture_default_str();
    train->add_option("--steps", c.steps, "Optimizer steps")->check(kSizeRange)->capture_default_str();
    train->add_option("--epochs", c.epochs, "Or the run's length in passes over the training text")->check(kSizeRange);
    train->add_option("--batch-size", c.batch_size, "Windows per step (under mpirun: of all ranks together)")->check(kSizeRange)->capture_default_str();
    train->add_option("--lr", c.lr, "Peak learning rate (AdamW)")->capture_default_str();
    train->add_option("--weight-decay", c.weight_decay, "AdamW weight decay (matrices and embeddings)")->capture_default_str();
    train->add_option("--schedule", c.schedule, "After the warm-up: cosine or constant")
        ->check(CLI::IsMember({"cosine", "constant"}))->capture_default_str();
    train->add_option("--warmup", c.warmup, "Linear warm-up, in steps")->check(kNonNegative)->capture_default_str();
    train->add_option("--clip", c.clip, "Clip the gradient norm to this value (0: off)")->capture_default_str();
    train->add_option("--context", c.model.context, "Characters the model sees")->check(kSizeRange)->capture_default_str();
    train->add_option("--d-model", c.model.d_model, "Width of the model")->check(kSizeRange)->capture_default_str();
    train->add_option("--layers", c.model.n_layers, "Transformer blocks")->check(kSizeRange)->capture_default_str();
    train->add_option("--heads", c.model.n_heads, "Attention heads per block")->check(kSizeRange)->capture_default_str();
    train->add_option("--norm", c.model.norm, "Normalisation in the blocks: layer, rms, batch or none")
        ->check(CLI::IsMember(norm_names(NormSite::features)))->capture_default_str();  // per token, over its features
    train->add_option("--norm-placement", args->norm_placement, "pre (pre-LN, with a final norm) or post (post-LN)")
        ->check(CLI::IsMember({"pre", "post"}))->capture_default_str();
    train->add_option("--dropout", c.model.dropout, "Dropout on embeddings, attention and residual branches")
        ->capture_default_str();
    train->add_option("--eval-every", c.eval_every, "Steps between validations and checkpoints")
        ->check(kSizeRange)->capture_default_str();
    train->add_option("--seed", c.seed, "Seed of the initial weights, the windows and dropout")
        ->check(kNonNegative)->capture_default_str();
    train->add_option("--threads", c.threads, "Threads (default: NORMNET_NUM_THREADS, else OMP_NUM_THREADS, else the CPUs this process may use; under mpirun, shared among the ranks)")
        ->check(kThreadsRange);
    train->add_option("--bn-sync", c.bn_sync,
                      "Under mpirun, with --norm batch: each rank's statistics over its windows x positions (local) or "
                      "every rank's, as one process over the global batch (sync)")
        ->check(CLI::IsMember({"local", "sync"}))->capture_default_str();
    train->add_flag("--recompute", c.recompute,
                    "Activation checkpointing: each block keeps only its input and runs its forward again in "
                    "backward (less memory, more time; not with --norm batch)");
    train->add_flag("--recompute-ffn,!--no-recompute-ffn", c.recompute_ffn,
                    "Recompute each block's feed-forward hidden activations in backward (on by default: a quarter "
                    "less memory for a few percent of time; moot with --recompute)");
    train->add_option("--out", args->out, "Run folder (default: runs/lm_<date-time>)");
    train->add_flag("--overwrite", args->overwrite, "Replace the run already in --out");
    train->add_option("--resume", args->resume, "Continue the run of a model.safetensors (or of its run folder)");
    train->add_flag("--quiet", args->quiet, "Print only the final line");
    train->callback([args, train, factory] { run_lm_train(*args, *train, factory); });

    auto sample_args = std::make_shared<LmSampleArgs>();
    CLI::App* sample = lm->add_subcommand("sample", "Generate text from a checkpoint of normnet lm train");
    sample->add_option("--checkpoint", sample_args->checkpoint, "A model.safetensors of normnet lm train, or its run folder")
        ->required();
    sample->add_option("--prompt", sample_args->prompt, "Text to continue (default: start after a newline)");
    sample->add_option("--tokens", sample_args->options.tokens, "Characters to generate")
        ->check(kSizeRange)->capture_default_str();
    sample->add_option("--temperature", sample_args->options.temperature, "Softmax temperature (0: the most likely)")
        ->capture_default_str();
    sample->add_option("--top-k", sample_args->options.top_k, "Draw among the k most likely characters (0: all)")
        ->check(kNonNegative)->capture_default_str();
    sample->add_option("--seed", sample_args->options.seed, "Seed of the draws")->check(kNonNegative)->capture_default_str();
    sample->add_option("--threads", sample_args->threads, "Threads")->check(kThreadsRange)->capture_default_str();
    sample->callback([sample_args, factory] { run_lm_sample(*sample_args, factory); });
}

}  // namespace normnet::cli
