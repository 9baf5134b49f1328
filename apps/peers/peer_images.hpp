// The training loop the libtorch image peers (libtorch_cnn, libtorch_vit) share: their options
// (--epochs, --warmup, --limit), an epoch over a permutation, the untimed warm-up and timed
// epochs, the evaluation and the result. torch_cnn.py and torch_vit.py use the same functions of
// peer_common.py.
#pragma once

#include "peer_common.hpp"

namespace peers {

struct ImageOptions {
    int epochs = 1;
    double warmup = 0.05;  // untimed, in epochs; a fraction runs the first part of one epoch
    int64_t limit = 0;     // the first N images of each split (0: all)

    // Takes --epochs, --warmup and --limit; false for any other option.
    bool parse(ArgParser& a, const std::string& name) {
        if (name == "--epochs") epochs = int(a.integer());
        else if (name == "--warmup") warmup = a.number();
        else if (name == "--limit") limit = a.integer();
        else return false;
        return true;
    }
    void check() const {
        if (epochs < 1 || warmup < 0 || limit < 0)
            throw std::invalid_argument("--epochs must be >= 1, --warmup and --limit >= 0");
    }
};
inline const char* kImageUsage = "  [--epochs E] [--warmup W] [--limit N]\n";

// One pass over `perm` in batches (the last partial one kept, unless BatchNorm would see a single
// sample: normnet drops it too), as a user's loop does it; max_batches < 0 means all.
template <class Model>
void train_epoch(Model& model, torch::optim::Optimizer& opt, const torch::Tensor& perm, const torch::Tensor& x,
                 const torch::Tensor& y, int64_t batch_size, int64_t max_batches, bool batch_norm = false) {
    model->train();
    const int64_t n = x.size(0);
    int64_t b = 0;
    for (int64_t start = 0; start < n && b != max_batches; start += batch_size, ++b) {
        const int64_t end = std::min(start + batch_size, n);
        if (batch_norm && end - start == 1) break;
        const auto idx = perm.slice(0, start, end);
        auto loss = torch::nn::functional::cross_entropy(model->forward(x.index({idx})), y.index({idx}));
        opt.zero_grad();
        loss.backward();
        opt.step();
    }
}

// Runs epoch(max_batches) for the warm-up (untimed: first touch of allocator and thread pools)
// and the timed epochs; returns the timed epochs' seconds.
inline std::vector<double> timed_epochs(const CommonOptions& c, const ImageOptions& o, int64_t n,
                                        const std::function<void(int64_t)>& epoch) {
    const int whole = int(o.warmup);
    for (int e = 0; e < whole; ++e) epoch(-1);
    if (o.warmup > whole) {
        const int64_t batches = (n + c.batch_size - 1) / c.batch_size;
        epoch(std::max<int64_t>(1, std::llround((o.warmup - whole) * double(batches))));
    }
    std::vector<double> seconds;
    for (int e = 0; e < o.epochs; ++e) {
        const auto t0 = std::chrono::steady_clock::now();
        epoch(-1);
        seconds.push_back(seconds_since(t0));
        progress(c, "epoch " + std::to_string(e + 1) + ": " + std::to_string(seconds.back()) + " s");
    }
    return seconds;
}

// Mean cross-entropy and accuracy in eval mode, in chunks of 500 (one 10,000-image forward of the
// CNN would take 1 GB).
template <class Model>
std::pair<double, double> evaluate_images(Model& model, const torch::Tensor& x, const torch::Tensor& y) {
    model->eval();
    torch::NoGradGuard no_grad;
    namespace F = torch::nn::functional;
    double loss = 0;
    int64_t correct = 0;
    for (int64_t s = 0; s < x.size(0); s += 500) {
        const int64_t e = std::min(s + 500, x.size(0));
        const torch::Tensor logits = model->forward(x.slice(0, s, e));  // a Tensor, not a dependent type
        const torch::Tensor target = y.slice(0, s, e);
        loss += F::cross_entropy(logits, target, F::CrossEntropyFuncOptions().reduction(torch::kSum)).item<double>();
        correct += logits.argmax(1).eq(target).sum().item<int64_t>();
    }
    const double n = double(std::max<int64_t>(1, x.size(0)));
    return {loss / n, double(correct) / n};
}

// The JSON result and one-line summary of an image model's run.
inline void image_result(const CommonOptions& c, const std::string& model, const std::string& norm, int64_t n,
                         const std::vector<double>& seconds, std::pair<double, double> test, double rss) {
    const double med = median(seconds);
    auto r = result_header(c, model, norm);
    r["samples"] = n;
    r["epochs_seconds"] = seconds;
    r["median_seconds"] = med;
    r["samples_per_second"] = double(n) / med;
    r["peak_rss_mb"] = rss;
    r["test_loss"] = test.first;
    r["test_acc"] = test.second;
    char line[320];
    std::snprintf(line, sizeof line,
                  "%s, norm %s, batch %lld, threads %d (BLAS %d): median %.3f s/epoch of %lld, %.0f samples/s, "
                  "test loss %.4f, test acc %.4f, peak RSS %.0f MB",
                  model.c_str(), norm.c_str(), static_cast<long long>(c.batch_size), c.threads, c.blas_threads, med,
                  static_cast<long long>(n), double(n) / med, test.first, test.second, rss);
    emit(c, r, line);
}

}  // namespace peers
