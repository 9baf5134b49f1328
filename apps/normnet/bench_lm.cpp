// `normnet bench --model lm`: timed LM steps next to their GEMM floor.
#include "bench_lm.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "bench_timing.hpp"
#include "commands.hpp"
#include "lm_trainer.hpp"
#include "models.hpp"
#include "norms.hpp"
#include "progress.hpp"
#include "normnet/normnet.hpp"

namespace normnet::cli {
namespace {

constexpr int64_t kBenchSteps = 50;
constexpr int64_t kBenchWarmupSteps = 5;
constexpr int kBenchRepeats = 3;

// The options the LM bench reads; any other option given is an error for --model lm.
const std::set<std::string> kBenchLmOptions{"--model", "--batch-sizes", "--norms", "--norm-placement", "--steps",
                                            "--warmup-steps", "--epochs", "--data", "--text", "--context", "--d-model",
                                            "--layers", "--heads", "--threads", "--json", "--recompute", "--recompute-ffn", "--help"};

}  // namespace

std::vector<FloorLayer> lm_gemm_products(const LmSpec& spec, int64_t batch) {
    std::vector<FloorLayer> layers;
    for (int64_t l = 0; l < spec.n_layers; ++l) {
        bench::add_encoder_layer_products(layers, batch, spec.context, spec.d_model, spec.n_heads, 4 * spec.d_model);
    }
    add_linear_products(layers, spec.d_model, {spec.vocab_size}, batch * spec.context, true);  // the head
    return layers;
}

void add_bench_lm_options(CLI::App& cmd) {
    accept_lm_model(cmd, "the character LM of normnet lm train, timed over --steps steps (--data: its corpus)");
    const std::string lm = " (--model lm)";
    add_lm_option(cmd, "--steps", "Timed optimizer steps per repeat" + lm + " [" + std::to_string(kBenchSteps) + "]");
    add_lm_option(cmd, "--warmup-steps", "Untimed steps first" + lm + " [" + std::to_string(kBenchWarmupSteps) + "]");
    add_lm_option(cmd, "--text", "The corpus, as --data" + lm + " [" + std::string(kDefaultCorpus) + "]");
    add_lm_option(cmd, "--context", "Characters the model sees" + lm + " [128]");
    add_lm_option(cmd, "--d-model", "Width of the model" + lm + " [128]");
    add_lm_option(cmd, "--layers", "Transformer blocks" + lm + " [4]");
    add_lm_option(cmd, "--heads", "Attention heads per block" + lm + " [4]");
    add_lm_option(cmd, "--norm-placement", "pre or post" + lm + " [pre]");
    if (cmd.get_option_no_throw("--recompute") == nullptr) {
        cmd.add_flag("--recompute")
            ->description("Activation checkpointing of each block, as lm train --recompute" + lm)
            ->group(kLmOptionGroup);
    }
    if (cmd.get_option_no_throw("--recompute-ffn") == nullptr) {
        cmd.add_flag("--recompute-ffn,!--no-recompute-ffn")
            ->description("Recompute each block's feed-forward hidden activations in backward, as lm train (on by "
                          "default)" + lm)
            ->group(kLmOptionGroup);
    }
}

void run_bench_lm(const CLI::App& cmd) {
    for (const CLI::Option* o : cmd.get_options()) {
        if (o->count() > 0 && kBenchLmOptions.count(o->get_name()) == 0) {
            throw UsageError(str(o->get_name(), ": does not apply to bench --model lm"));
        }
    }
    // The peers' recipe (apps/peers/torch_lm.py): AdamW lr 1e-3, weight decay 0.01, constant, no clipping.
    LmConfig base;
    base.lr = 1e-3;
    base.weight_decay = 0.01;
    base.schedule = "constant";
    base.warmup = 0;
    base.clip = 0;
    std::vector<std::string> norms;
    std::vector<int64_t> batches;
    int64_t steps = 0, warmup_steps = 0;
    int repeats = 0;
    as_usage_error([&] {
        NORMNET_CHECK(cmd.count("--data") == 0 || cmd.count("--text") == 0, "--data and --text: give the corpus in one of them");
        base.text = given_option<std::string>(cmd, "--text", given_option<std::string>(cmd, "--data", kDefaultCorpus));
        base.model.context = given_option<int64_t>(cmd, "--context", base.model.context);
        base.model.d_model = given_option<int64_t>(cmd, "--d-model", base.model.d_model);
        base.model.n_layers = given_option<int64_t>(cmd, "--layers", base.model.n_layers);
        base.model.n_heads = given_option<int64_t>(cmd, "--heads", base.model.n_heads);
        const std::string placement = given_option<std::string>(cmd, "--norm-placement", "pre");
        NORMNET_CHECK(placement == "pre" || placement == "post", "--norm-placement: expected pre or post, got '", placement, "'");
        base.model.norm_first = placement == "pre";
        base.threads = given_option<int>(cmd, "--threads", 0);
        base.recompute = cmd.count("--recompute") > 0;
        if (cmd.count("--recompute-ffn") > 0) base.recompute_ffn = cmd.get_option("--recompute-ffn")->as<bool>();
        steps = given_option<int64_t>(cmd, "--steps", kBenchSteps);
        warmup_steps = given_option<int64_t>(cmd, "--warmup-steps", kBenchWarmupSteps);
        repeats = given_option<int>(cmd, "--epochs", kBenchRepeats);
        NORMNET_CHECK(steps > 0 && steps <= kMaxLmSize, "--steps: must be in [1, ", kMaxLmSize, "], got ", steps);
        NORMNET_CHECK(warmup_steps >= 0 && warmup_steps <= kMaxLmSize, "--warmup-steps: must be in [0, ", kMaxLmSize, "], got ",
                      warmup_steps);
        NORMNET_CHECK(repeats > 0 && repeats <= 1000, "--epochs: timed repeats must be in [1, 1000], got ", repeats);
        norms = parse_norm_list(given_option<std::string>(cmd, "--norms", "layer"), NormSite::features, "lm");
        batches = parse_size_list(given_option<std::string>(cmd, "--batch-sizes", "32"), "--batch-sizes");
        // One step beyond the timed ones, never taken, so that the run's validation never comes.
        base.steps = warmup_steps + repeats * steps + 1;
        base.eval_every = base.steps;
        for (const auto& n : norms) {
            for (int64_t b : batches) {
                LmConfig c = base;
                c.model.norm = n;
                c.batch_size = b;
                c.validate();
            }
        }
    });
    const bool json = cmd.count("--json") > 0;
    base.threads = base.resolved_threads();
    set_num_threads(base.threads);
    const TextCorpus corpus = load_text_corpus(base.text, {.val_fraction = base.val_fraction});
    LmSpec spec = base.model;
    spec.vocab_size = corpus.vocab_size();
    if (!json) {
        std::printf("normnet bench --model lm: %s%s, AdamW lr %g, %s, %s, %lld warm-up + %d x %s per row\n", spec.str().c_str(),
                    base.recompute       ? ", blocks recomputed in backward"
                    : base.recompute_ffn ? ", feed-forward hidden activations recomputed in backward"
                                         : "",
                    base.lr, base.text.c_str(), plural(base.threads, "thread").c_str(), static_cast<long long>(warmup_steps),
                    repeats, plural(steps, "timed step").c_str());
        std::printf("%-8s %6s %12s %12s %12s %8s %10s\n", "norm", "batch", ("s/" + std::to_string(steps) + " steps").c_str(),
                    "tokens/s", "GEMM floor", "ratio", "peak RSS");
        std::fflush(stdout);
    }
    for (int64_t batch : batches) {
        bench::StepFloor floor(lm_gemm_products(spec, batch));
        floor.release();  // its operands come back between training intervals (untimed)
        for (const auto& norm : norms) {
            LmConfig c = base;
            c.model.norm = norm;
            c.batch_size = batch;
            TrainingPeakRss peak;
            LmTrainer trainer(c, corpus, build_char_transformer);
            double last_loss = 0;
            const auto until = [&](int64_t target) {
                const auto m = trainer.run_interval([&](int64_t, int64_t, double running) { last_loss = running; },
                                                    [&] { return trainer.step() >= target; });
                NORMNET_CHECK(!m, "bench --model lm: validated before the timed steps ended");  // cannot happen: eval_every
            };
            if (warmup_steps > 0) until(warmup_steps);
            std::vector<double> seconds, floors, ratios;
            for (int r = 0; r < repeats; ++r) {
                // Training and floor alternate so both see the same machine state (as bench's epochs).
                auto start = std::chrono::steady_clock::now();
                until(warmup_steps + (r + 1) * steps);
                seconds.push_back(seconds_since(start));
                peak.pause();
                floor.acquire();
                start = std::chrono::steady_clock::now();
                for (int64_t s = 0; s < steps; ++s) floor.run();
                floors.push_back(seconds_since(start));
                floor.release();
                peak.resume();
                ratios.push_back(seconds.back() / floors.back());
            }
            const double rss = peak.mb();
            const double secs = median(seconds), floor_secs = median(floors), ratio = median(ratios);
            const double tokens_per_second = static_cast<double>(steps * batch * spec.context) / secs;
            if (json) {
                nlohmann::ordered_json j{{"impl", "normnet"},
                                         {"model", "lm"},
                                         {"norm", norm},
                                         {"placement", spec.norm_first ? "pre" : "post"},
                                         {"batch", batch},
                                         {"threads", base.threads},
                                         {"recompute", base.recompute},
                                         {"recompute_ffn", base.recompute_ffn && !base.recompute},
                                         {"context", spec.context},
                                         {"vocab", spec.vocab_size},
                                         {"steps", steps},
                                         {"repeats_seconds", seconds},
                                         {"seconds", secs},
                                         {"median_step_seconds", secs / static_cast<double>(steps)},
                                         {"tokens_per_second", tokens_per_second},
                                         {"gemm_floor_seconds", floor_secs},
                                         {"gemm_floor_repeats_seconds", floors},
                                         {"ratio_to_floor", ratio},
                                         {"peak_rss_mb", rss},
                                         {"mean_train_loss", last_loss}};
                std::printf("%s\n", j.dump().c_str());
            } else {
                std::printf("%-8s %6lld %10.3f s %12.0f %10.3f s %7.2fx %7.0f MB\n", norm.c_str(), static_cast<long long>(batch),
                            secs, tokens_per_second, floor_secs, ratio, rss);
            }
            std::fflush(stdout);
        }
    }
}

}  // namespace normnet::cli
