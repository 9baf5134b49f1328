// `normnet bench`: seconds per training epoch of a model (the seed MLP, or --model cnn; Adam,
// training loop only) for several batch sizes and normalisations, next to the GEMM floor
// measured in the same process: the time the step's matrix products alone take through the
// same sgemm (the products the model's registry row lists: for the MLP 3 forward, 3
// weight-gradient and 2 input-gradient sgemm per step; for the CNN the convolutions' lowered
// products per image as well), the same shapes and thread count.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "bench_lm.hpp"
#include "bench_timing.hpp"
#include "commands.hpp"
#include "models.hpp"
#include "progress.hpp"
#include "trainer.hpp"
#include "normnet/normnet.hpp"

namespace normnet::cli {
namespace {

struct BenchArgs {
    RunConfig base;
    std::string batch_sizes;  // empty: the model's (kDefaultBatches)
    std::string norms;        // empty: every normalisation of the model
    ModelArgs model;
    int warmup = 1;
    int repeats = 3;
    bool json = false;
    bool profile = false;
};

// Milliseconds per step of each phase between two snapshots of a trainer's StepTimes.
nlohmann::ordered_json phases_ms(const StepTimes& before, const StepTimes& after) {
    const double steps = static_cast<double>(std::max<int64_t>(after.steps - before.steps, 1));
    const auto ms = [&](double StepTimes::*phase) { return 1e3 * (after.*phase - before.*phase) / steps; };
    return {{"data", ms(&StepTimes::data)},           {"forward", ms(&StepTimes::forward)},
            {"backward", ms(&StepTimes::backward)},   {"allreduce", ms(&StepTimes::allreduce)},
            {"optimizer", ms(&StepTimes::optimizer)}, {"other", ms(&StepTimes::other)}};
}

// The matrix products of one epoch alone (the model's registry row lists a step's products,
// gemm_floor.hpp runs them as conv2d and linear do): full batches, then the partial last one.
class EpochFloor {
public:
    EpochFloor(const ModelSpec& spec, int64_t batch, int64_t samples)
        : full_(spec.kind().gemm_products(spec, batch)), steps_(samples / batch) {
        if (samples % batch != 0) last_.emplace(spec.kind().gemm_products(spec, samples % batch));
        release();
    }
    /// One epoch's products, timed, between mapping the operands and unmapping them again
    /// (untimed), with `peak` paused meanwhile.
    double seconds(TrainingPeakRss& peak) {
        peak.pause();
        full_.acquire();
        if (last_) last_->acquire();
        const auto start = std::chrono::steady_clock::now();
        for (int64_t i = 0; i < steps_; ++i) full_.run();
        if (last_) last_->run();
        const double s = seconds_since(start);
        release();
        peak.resume();
        return s;
    }

private:
    void release() {
        full_.release();
        if (last_) last_->release();
    }
    bench::StepFloor full_;
    std::optional<bench::StepFloor> last_;
    int64_t steps_;
};

struct BenchResult {
    std::string norm;
    int64_t batch = 0;
    std::vector<double> epochs;
    double median_seconds = 0, floor_seconds = 0, ratio = 0, samples_per_second = 0, peak_rss = 0, final_loss = 0;
};

// Bench's fixed recipe over the model's (its dataset): Adam at 1e-3, constant.
RunConfig bench_config(const std::string& type) {
    RunConfig c = recipe_config(type);
    c.optimizer = "adam";
    c.lr = 1e-3;
    c.weight_decay = 0.0;
    c.schedule = "constant";
    c.warmup = 0;
    return c;
}

void run_bench(BenchArgs& a, const CLI::App& cmd) {
    std::vector<std::string> norms;
    std::vector<int64_t> batches;
    as_usage_error([&] {
        RunConfig base = bench_config(a.model.type);
        take_given_options(base, a.base, cmd);
        base.model = model_from_options(a.model, cmd, base.model);
        a.base = base;
        const ModelKind& kind = a.base.model.kind();
        if (a.batch_sizes.empty()) a.batch_sizes = kind.bench_batch_sizes;
        if (a.norms.empty()) a.norms = kind.bench_norms;
        batches = parse_size_list(a.batch_sizes, "--batch-sizes");
        norms = parse_norm_list(a.norms, kind.site, kind.name);
        NORMNET_CHECK(a.repeats > 0, "--epochs: must be positive, got ", a.repeats);
        NORMNET_CHECK(a.warmup >= 0, "--warmup-epochs: must be >= 0, got ", a.warmup);
        a.base.validate();
        for (const auto& norm : norms) {
            RunConfig c = a.base;
            c.model.norm = norm;
            c.model.validate("--norms");  // e.g. GroupNorm's groups against the channels
        }
    });
    // Under mpirun every rank trains its slice of each batch; rank 0 reports.
    const Replicas& replicas = Replicas::current();
    a.base.threads = threads_per_rank(a.base.threads, replicas);
    set_num_threads(a.base.threads);
    const TaskData data = load_task_data(a.base, false);  // bench only trains: no test split to read
    // A table or an image folder sizes the model's inputs and outputs; the floor below needs them.
    make_task(a.base, data, replicas)->complete(a.base.model);
    const int64_t samples = data.table ? data.table->train.inputs.size(0) : data.train->size();
    const bool report = replicas.leader();
    if (!a.json && report) {
        // The normalisation varies by row: the header names the architecture and the norms.
        std::printf("normnet bench: %s, norms %s, Adam lr %g, %lld training %s, %s, %d warm-up + %s per row\n",
                    a.base.model.architecture().c_str(), a.norms.c_str(), a.base.lr, static_cast<long long>(samples),
                    data.table ? "rows" : "images", plural(a.base.threads, "thread").c_str(), a.warmup,
                    plural(a.repeats, "timed epoch").c_str());
        if (replicas.parallel()) {
            std::printf("data parallel: %d processes x %s; samples/s of the whole job; GEMM floor of one rank's "
                        "slice; allreduce: ms per step in the gradient all-reduce\n",
                        replicas.world, plural(a.base.threads, "thread").c_str());
        }
        std::printf("%-8s %6s %12s %12s %12s %8s %10s%s\n", "norm", "batch", "s/epoch", "samples/s", "GEMM floor", "ratio",
                    "peak RSS", replicas.parallel() ? "  allreduce" : "");
        std::fflush(stdout);
    }
    for (int64_t batch : batches) {
        // The products do not depend on the normalisation; under mpirun, those of one rank's slices.
        EpochFloor floor(a.base.model, batch / replicas.world, samples / replicas.world);
        for (const auto& norm : norms) {
            RunConfig c = a.base;
            c.model.norm = norm;
            c.batch_size = batch;
            c.epochs = a.warmup + a.repeats;
            TrainingPeakRss peak;
            Trainer trainer(c, make_task(c, data, replicas), replicas);
            BenchResult r;
            r.norm = norm;
            r.batch = batch;
            for (int i = 0; i < a.warmup; ++i) trainer.train_epoch();
            const double allreduce_before = trainer.seconds_in_allreduce();
            const StepTimes times_before = trainer.step_times();
            std::vector<double> floors, ratios;
            for (int i = 0; i < a.repeats; ++i) {
                // Alternate training and floor epochs so both see the same machine state; the
                // ratio is the median of each pair's ratio, so a slow spell of a shared machine
                // that covers a pair cancels out.
                const auto start = std::chrono::steady_clock::now();
                r.final_loss = trainer.train_epoch().mean_loss();
                r.epochs.push_back(seconds_since(start));
                floors.push_back(floor.seconds(peak));
                ratios.push_back(r.epochs.back() / floors.back());
            }
            r.median_seconds = median(r.epochs);
            r.floor_seconds = median(floors);
            r.ratio = median(ratios);
            r.samples_per_second = static_cast<double>(samples) / r.median_seconds;
            r.peak_rss = peak.mb();
            const double allreduce_ms = 1e3 * (trainer.seconds_in_allreduce() - allreduce_before) /
                                        static_cast<double>(a.repeats * trainer.batches_per_epoch());
            const nlohmann::ordered_json phases = phases_ms(times_before, trainer.step_times());
            if (!report) continue;
            if (a.json) {
                nlohmann::ordered_json j{{"impl", "normnet"},
                                         {"norm", norm},
                                         {"batch", batch},
                                         {"threads", c.threads},
                                         {"world", replicas.world},
                                         {"allreduce_ms_per_step", allreduce_ms},
                                         {"phases_ms_per_step", phases},
                                         {"epochs_seconds", r.epochs},
                                         {"median_seconds", r.median_seconds},
                                         {"samples_per_second", r.samples_per_second},
                                         {"gemm_floor_seconds", r.floor_seconds},
                                         {"gemm_floor_epochs_seconds", floors},
                                         {"ratio_to_floor", r.ratio},
                                         {"peak_rss_mb", r.peak_rss},
                                         {"train_loss", r.final_loss}};
                std::printf("%s\n", j.dump().c_str());
            } else {
                std::printf("%-8s %6lld %10.3f s %12.0f %10.3f s %7.2fx %7.0f MB%s\n", norm.c_str(),
                            static_cast<long long>(batch), r.median_seconds, r.samples_per_second, r.floor_seconds,
                            r.ratio, r.peak_rss,
                            replicas.parallel() ? ("  " + std::to_string(allreduce_ms).substr(0, 6) + " ms").c_str() : "");
            }
            if (a.profile && !a.json) {
                std::printf("  ms per step (rank 0):");
                for (const auto& [phase, ms] : phases.items()) std::printf(" %s %.3f", phase.c_str(), ms.get<double>());
                std::printf("\n");
            }
            std::fflush(stdout);
        }
    }
}

}  // namespace

void add_bench_command(CLI::App& app) {
    auto a = std::make_shared<BenchArgs>();
    RunConfig& c = a->base;
    c = bench_config("mlp");
    CLI::App* cmd = app.add_subcommand("bench", "Time training epochs of a model (the seed MLP, or --model cnn|vit|lstm) against the GEMM floor");
    add_model_options(*cmd, a->model);
    std::string batches, norms;
    for (const ModelKind* k : model_kinds()) {
        batches += (batches.empty() ? "" : ", ") + k->name + " " + k->bench_batch_sizes;
        norms += (norms.empty() ? "" : ", ") + k->name + " " + k->bench_norms;
    }
    cmd->add_option("--batch-sizes", a->batch_sizes, "Batch sizes, comma-separated (default: " + batches + ")");
    cmd->add_option("--norms", a->norms, "Normalisations (default: " + norms + "; " + norms_per_model() + ")");
    cmd->add_option("--warmup-epochs", a->warmup, "Untimed epochs before timing")->capture_default_str();
    cmd->add_option("--epochs,--repeats", a->repeats, "Timed epochs (the median is reported)")->capture_default_str();
    add_data_options(*cmd, c);
    add_own_data_options(*cmd, c);
    cmd->add_flag("--json", a->json, "One JSON object per line instead of the table");
    cmd->add_flag("--profile", a->profile,
                  "Also print rank 0's milliseconds per step in data, forward, backward, allreduce, optimizer and "
                  "other (always in --json)");
    add_bench_lm_options(*cmd);  // --model lm: bench_lm.hpp
    cmd->callback([a, cmd] {
        if (a->model.type == "lm") return run_bench_lm(*cmd);
        refuse_lm_options(*cmd, a->model.type);
        run_bench(*a, *cmd);
    });
}

}  // namespace normnet::cli
