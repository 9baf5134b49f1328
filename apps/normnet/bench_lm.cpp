// `normnet bench --model lm`: timed LM steps next to their GEMM floor.
#include "bench_lm.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "bench_timing.hpp"
#include "commands.hpp"
#include "trainer.hpp"
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

// "pre" or "post".
std::string placement_of(const ModelSpec& spec) { return spec.scalar("norm_placement") == 1 ? "pre" : "post"; }

}  // namespace

void add_bench_lm_options(CLI::App& cmd) {
    const std::string lm = " (--model lm)";
    add_lm_option(cmd, "--steps", "Timed optimizer steps per repeat" + lm + " [" + std::to_string(kBenchSteps) + "]");
    add_lm_option(cmd, "--warmup-steps", "Untimed steps first" + lm + " [" + std::to_string(kBenchWarmupSteps) + "]");
    add_lm_option(cmd, "--text", "The corpus, as --data" + lm + " [" + std::string(kDefaultCorpus) + "]");
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
    RunConfig base = recipe_config("lm");
    lm_model().bench_recipe(base);
    std::vector<std::string> norms;
    std::vector<int64_t> batches;
    int64_t steps = 0, warmup_steps = 0;
    int repeats = 0;
    as_usage_error([&] {
        NORMNET_CHECK(cmd.count("--data") == 0 || cmd.count("--text") == 0, "--data and --text: give the corpus in one of them");
        base.text = given_option<std::string>(cmd, "--text", given_option<std::string>(cmd, "--data", kDefaultCorpus));
        for (const auto& [flag, key] : {std::pair{"--context", "context"}, {"--d-model", "d_model"}, {"--layers", "layers"},
                                        {"--heads", "heads"}}) {
            base.model.sizes[key] = {given_option<int64_t>(cmd, flag, base.model.scalar(key))};
        }
        const std::string placement = given_option<std::string>(cmd, "--norm-placement", "pre");
        NORMNET_CHECK(placement == "pre" || placement == "post", "--norm-placement: expected pre or post, got '", placement, "'");
        base.model.sizes["norm_placement"] = {placement == "pre" ? 1 : 2};
        base.threads = given_option<int>(cmd, "--threads", 0);
        base.recompute = cmd.count("--recompute") > 0;
        if (cmd.count("--recompute-ffn") > 0) base.recompute_ffn = cmd.get_option("--recompute-ffn")->as<bool>();
        steps = given_option<int64_t>(cmd, "--steps", kBenchSteps);
        warmup_steps = given_option<int64_t>(cmd, "--warmup-steps", kBenchWarmupSteps);
        repeats = given_option<int>(cmd, "--epochs", kBenchRepeats);
        NORMNET_CHECK(steps > 0 && steps <= kMaxSteps, "--steps: must be in [1, ", kMaxSteps, "], got ", steps);
        NORMNET_CHECK(warmup_steps >= 0 && warmup_steps <= kMaxSteps, "--warmup-steps: must be in [0, ", kMaxSteps, "], got ",
                      warmup_steps);
        NORMNET_CHECK(repeats > 0 && repeats <= 1000, "--epochs: timed repeats must be in [1, 1000], got ", repeats);
        norms = parse_norm_list(given_option<std::string>(cmd, "--norms", "layer"), NormSite::features, "lm");
        batches = parse_size_list(given_option<std::string>(cmd, "--batch-sizes", "32"), "--batch-sizes");
        // One step beyond the timed ones, never taken, so that the run's validation never comes.
        base.steps = warmup_steps + repeats * steps + 1;
        base.eval_every = base.steps;
        for (const auto& n : norms) {
            for (int64_t b : batches) {
                RunConfig c = base;
                c.model.norm = n;
                c.batch_size = b;
                c.validate();
            }
        }
    });
    const bool json = cmd.count("--json") > 0;
    base.threads = base.resolved_threads();
    set_num_threads(base.threads);
    const TaskData data = load_task_data(base);
    ModelSpec spec = base.model;
    spec.inputs = spec.classes = data.corpus->vocab_size();
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
        bench::StepFloor floor(spec.kind().gemm_products(spec, batch));
        floor.release();  // its operands come back between training intervals (untimed)
        for (const auto& norm : norms) {
            RunConfig c = base;
            c.model.norm = norm;
            c.batch_size = batch;
            TrainingPeakRss peak;
            Trainer trainer(c, make_task(c, data, {}));
            double last_loss = 0;
            const auto until = [&](int64_t target) {
                const EpochProgress p = trainer.train_epoch([&](int64_t, int64_t, double running) { last_loss = running; },
                                                            [&] { return trainer.step() >= target; });
                NORMNET_CHECK(!p.complete, "bench --model lm: validated before the timed steps ended");  // cannot happen: eval_every
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
            const double tokens_per_second = static_cast<double>(steps * batch * spec.scalar("context")) / secs;
            if (json) {
                nlohmann::ordered_json j{{"impl", "normnet"},
                                         {"model", "lm"},
                                         {"norm", norm},
                                         {"placement", placement_of(spec)},
                                         {"batch", batch},
                                         {"threads", base.threads},
                                         {"recompute", base.recompute},
                                         {"recompute_ffn", base.recompute_ffn && !base.recompute},
                                         {"context", spec.scalar("context")},
                                         {"vocab", spec.inputs},
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
