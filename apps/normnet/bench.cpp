// `normnet bench`: seconds per training epoch of the seed MLP (Adam, training loop only) for
// several batch sizes and normalisations, next to the GEMM floor measured in the same process:
// the time the step's matrix products alone take through OpenBLAS (3 forward, 3 weight-gradient
// and 2 input-gradient sgemm per step, the same shapes and thread count).
#include <cblas.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "commands.hpp"
#include "progress.hpp"
#include "trainer.hpp"
#include "normnet/normnet.hpp"

namespace normnet::cli {
namespace {

struct BenchArgs {
    RunConfig base;
    std::string batch_sizes = "32,128,512";
    std::string norms = "layer,batch,none";
    std::string hidden = "300,100";
    int warmup = 1;
    int repeats = 3;
    bool json = false;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double peak_rss_mb() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// Matrix products of one epoch alone: for every batch, y_l = x_l W_l^T (forward), dW_l += dy_l^T x_l,
// and dx_l = dy_l W_l for every layer but the first, exactly as linear() and its backward call sgemm.
class GemmFloor {
public:
    GemmFloor(const ModelSpec& spec, int64_t batch) : batch_(batch) {
        widths_.push_back(spec.inputs);
        for (int64_t h : spec.hidden) widths_.push_back(h);
        widths_.push_back(spec.classes);
        Generator gen(1);
        for (size_t l = 0; l + 1 < widths_.size(); ++l) {
            weights_.push_back(randn({widths_[l + 1], widths_[l]}, gen));
            dweights_.push_back(zeros({widths_[l + 1], widths_[l]}));
        }
        for (int64_t w : widths_) {
            acts_.push_back(rand({batch, w}, gen));
            dacts_.push_back(randn({batch, w}, gen));
        }
    }

    // Seconds for the products of `samples` samples in batches of batch_ (last one partial),
    // with OpenBLAS running its own `threads` threads (normnet keeps it single-threaded and
    // splits products over its own pool; the floor is plain OpenBLAS at the same thread count).
    double epoch_seconds(int64_t samples, int threads) {
        openblas_set_num_threads(threads);
        const auto start = std::chrono::steady_clock::now();
        for (int64_t done = 0; done < samples; done += batch_) step(std::min(batch_, samples - done));
        const double seconds = seconds_since(start);
        openblas_set_num_threads(1);
        // OpenBLAS's idle workers spin for a while after their last call; let them settle
        // before normnet's threads run again.
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        return seconds;
    }

private:
    void step(int64_t n) {
        const auto L = static_cast<blasint>(weights_.size());
        const auto N = static_cast<blasint>(n);
        for (blasint l = 0; l < L; ++l) {
            const auto C = static_cast<blasint>(widths_[l]), OC = static_cast<blasint>(widths_[l + 1]);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, C, 1.0f, acts_[l].data(), C, weights_[l].data(), C,
                        1.0f, acts_[l + 1].data(), OC);
        }
        for (blasint l = L - 1; l >= 0; --l) {
            const auto C = static_cast<blasint>(widths_[l]), OC = static_cast<blasint>(widths_[l + 1]);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, C, N, 1.0f, dacts_[l + 1].data(), OC, acts_[l].data(),
                        C, 1.0f, dweights_[l].data(), C);
            if (l > 0) {
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, OC, 1.0f, dacts_[l + 1].data(), OC,
                            weights_[l].data(), C, 1.0f, dacts_[l].data(), C);
            }
        }
    }

    int64_t batch_;
    std::vector<int64_t> widths_;
    std::vector<Tensor> weights_, dweights_, acts_, dacts_;
};

struct BenchResult {
    std::string norm;
    int64_t batch = 0;
    std::vector<double> epochs;
    double median_seconds = 0, floor_seconds = 0, ratio = 0, samples_per_second = 0, peak_rss = 0, final_loss = 0;
};

void run_bench(BenchArgs& a) {
    std::vector<std::string> norms;
    std::vector<int64_t> batches;
    as_usage_error([&] {
        batches = parse_size_list(a.batch_sizes, "--batch-sizes");
        a.base.model.hidden = parse_size_list(a.hidden, "--hidden");
        norms = parse_norm_list(a.norms);
        NORMNET_CHECK(a.repeats > 0, "--epochs: must be positive, got ", a.repeats);
        NORMNET_CHECK(a.warmup >= 0, "--warmup-epochs: must be >= 0, got ", a.warmup);
        a.base.validate();
    });
    // Under mpirun every rank trains its slice of each batch; rank 0 reports.
    const Replicas& replicas = Replicas::current();
    a.base.threads = threads_per_rank(a.base.threads, replicas);
    set_num_threads(a.base.threads);
    const auto train = load_split(a.base, "train");  // bench only trains: no test split to read
    const bool report = replicas.leader();
    if (!a.json && report) {
        // The normalisation varies by row: the header names the architecture and the norms.
        const std::string spec = a.base.model.str();
        std::printf("normnet bench: %s MLP, norms %s, Adam lr %g, %lld training images, %s, %d warm-up + %s per row\n",
                    spec.substr(0, spec.rfind(' ')).c_str(), a.norms.c_str(), a.base.lr,
                    static_cast<long long>(train->size()), plural(a.base.threads, "thread").c_str(), a.warmup,
                    plural(a.repeats, "timed epoch").c_str());
        if (replicas.parallel()) {
            std::printf("data parallel: %d processes x %s; samples/s of the whole job; GEMM floor of one rank's "
                        "slice; allreduce: ms per step in the gradient all-reduce\n",
                        replicas.world, plural(a.base.threads, "thread").c_str());
        }
        std::printf("%-6s %6s %12s %12s %12s %8s %10s%s\n", "norm", "batch", "s/epoch", "samples/s", "GEMM floor", "ratio",
                    "peak RSS", replicas.parallel() ? "  allreduce" : "");
        std::fflush(stdout);
    }
    for (int64_t batch : batches) {
        GemmFloor floor(a.base.model, batch / replicas.world);  // the products do not depend on the normalisation
        for (const auto& norm : norms) {
            RunConfig c = a.base;
            c.model.norm = norm;
            c.batch_size = batch;
            c.epochs = a.warmup + a.repeats;
            Trainer trainer(c, train, train, replicas);
            BenchResult r;
            r.norm = norm;
            r.batch = batch;
            for (int i = 0; i < a.warmup; ++i) trainer.train_epoch();
            const double allreduce_before = trainer.seconds_in_allreduce();
            std::vector<double> floors, ratios;
            for (int i = 0; i < a.repeats; ++i) {
                // Alternate training and floor epochs so both see the same machine state; the
                // ratio is the median of each pair's ratio, so a slow spell of a shared machine
                // that covers a pair cancels out.
                const auto start = std::chrono::steady_clock::now();
                r.final_loss = trainer.train_epoch().mean_loss();
                r.epochs.push_back(seconds_since(start));
                floors.push_back(floor.epoch_seconds(train->size() / replicas.world, c.threads));
                ratios.push_back(r.epochs.back() / floors.back());
            }
            r.median_seconds = median(r.epochs);
            r.floor_seconds = median(floors);
            r.ratio = median(ratios);
            r.samples_per_second = static_cast<double>(train->size()) / r.median_seconds;
            r.peak_rss = peak_rss_mb();
            const double allreduce_ms = 1e3 * (trainer.seconds_in_allreduce() - allreduce_before) /
                                        static_cast<double>(a.repeats * trainer.batches_per_epoch());
            if (!report) continue;
            if (a.json) {
                nlohmann::ordered_json j{{"impl", "normnet"},
                                         {"norm", norm},
                                         {"batch", batch},
                                         {"threads", c.threads},
                                         {"world", replicas.world},
                                         {"allreduce_ms_per_step", allreduce_ms},
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
                std::printf("%-6s %6lld %10.3f s %12.0f %10.3f s %7.2fx %7.0f MB%s\n", norm.c_str(),
                            static_cast<long long>(batch), r.median_seconds, r.samples_per_second, r.floor_seconds,
                            r.ratio, r.peak_rss,
                            replicas.parallel() ? ("  " + std::to_string(allreduce_ms).substr(0, 6) + " ms").c_str() : "");
            }
            std::fflush(stdout);
        }
    }
}

}  // namespace

void add_bench_command(CLI::App& app) {
    auto a = std::make_shared<BenchArgs>();
    RunConfig& c = a->base;
    c.optimizer = "adam";
    c.lr = 1e-3;
    c.weight_decay = 0.0;
    c.schedule = "constant";
    CLI::App* cmd = app.add_subcommand("bench", "Time training epochs of the seed MLP against the GEMM floor");
    cmd->add_option("--batch-sizes", a->batch_sizes, "Batch sizes, comma-separated")->capture_default_str();
    cmd->add_option("--norms", a->norms, "Normalisations: any of layer,batch,rms,none")->capture_default_str();
    cmd->add_option("--hidden", a->hidden, "Hidden layer sizes")->capture_default_str();
    cmd->add_option("--warmup-epochs", a->warmup, "Untimed epochs before timing")->capture_default_str();
    cmd->add_option("--epochs,--repeats", a->repeats, "Timed epochs (the median is reported)")->capture_default_str();
    add_data_options(*cmd, c);
    cmd->add_flag("--json", a->json, "One JSON object per line instead of the table");
    cmd->callback([a] { run_bench(*a); });
}

}  // namespace normnet::cli
