// libtorch peer for normnet's speed benchmark: the PyTorch C++ frontend (Debian's libtorch 1.13)
// training the seed MLP 784-300-100-10 (Linear, ReLU, Norm, Linear, ReLU, Norm, Linear) on MNIST
// with cross-entropy and Adam(lr 1e-3) -- the workload `normnet bench` and torch_mlp.py time.
// Only the training loop is timed; the IDX files are read and turned into float tensors first.
//
//   libtorch_mlp --data data/mnist --batch-size 128 --norm layer --threads 2 --json
//
// Same options and JSON keys as torch_mlp.py, with "impl": "libtorch".
#include <torch/torch.h>

#include "peer_common.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef PEERS_DEFAULT_DATA
#define PEERS_DEFAULT_DATA "data/mnist"
#endif

namespace {

struct Options {
  std::string data = PEERS_DEFAULT_DATA;
  int64_t batch_size = 128;
  std::string norm = "layer";
  int epochs = 3;
  double warmup = 0.1;  // untimed, in epochs; a fraction runs the first part of one epoch
  int threads = 1;
  int blas_threads = 0;  // 0: same as threads
  uint64_t seed = 0;
  bool json = false;
};

const char* kUsage =
    "usage: libtorch_mlp [--data DIR] [--batch-size N] [--norm layer|batch|none] [--epochs E]\n"
    "                    [--warmup W] [--threads T] [--blas-threads B] [--seed S] [--json]\n";

Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    auto number = [&]() {  // the whole text must be a number: "12x" is an error, not 12
      const std::string v = value();
      size_t used = 0;
      double d = 0;
      try { d = std::stod(v, &used); } catch (const std::exception&) {}
      if (v.empty() || used != v.size()) throw std::invalid_argument(a + ": not a number: '" + v + "'");
      return d;
    };
    if (a == "--data") o.data = value();
    else if (a == "--batch-size") o.batch_size = int64_t(number());
    else if (a == "--norm") o.norm = value();
    else if (a == "--epochs") o.epochs = int(number());
    else if (a == "--warmup") o.warmup = number();
    else if (a == "--threads") o.threads = int(number());
    else if (a == "--blas-threads") o.blas_threads = int(number());
    else if (a == "--seed") o.seed = uint64_t(number());
    else if (a == "--json") o.json = true;
    else if (a == "-h" || a == "--help") { std::cout << kUsage; std::exit(0); }
    else throw std::invalid_argument("unknown option " + a);
  }
  if (o.norm != "layer" && o.norm != "batch" && o.norm != "none")
    throw std::invalid_argument("--norm must be layer, batch or none, not " + o.norm);
  if (o.batch_size < 1 || o.epochs < 1 || o.threads < 1 || o.warmup < 0 || o.blas_threads < 0)
    throw std::invalid_argument("--batch-size, --epochs and --threads must be >= 1, --warmup >= 0");
  if (o.blas_threads == 0) o.blas_threads = o.threads;
  return o;
}

using peers::read_idx;  // raw or gzipped IDX (peer_common.hpp)

// Images as float32 [N, 784] scaled to [0, 1], labels as int64 [N].
std::pair<torch::Tensor, torch::Tensor> load_split(const std::string& dir, const std::string& prefix) {
  std::vector<int64_t> idims, ldims;
  auto images = read_idx(dir + "/" + prefix + "-images-idx3-ubyte", 0x803, idims);
  auto labels = read_idx(dir + "/" + prefix + "-labels-idx1-ubyte", 0x801, ldims);
  const int64_t n = idims.at(0);
  if (ldims.at(0) != n) throw std::runtime_error(prefix + ": image and label counts differ");
  // from_blob borrows the vector; the conversions below copy, so nothing dangles.
  auto x = torch::from_blob(images.data(), {n, idims.at(1) * idims.at(2)}, torch::kUInt8)
               .to(torch::kFloat32)
               .div_(255.0f);
  auto y = torch::from_blob(labels.data(), {n}, torch::kUInt8).to(torch::kInt64);
  return {x, y};
}

torch::nn::AnyModule make_norm(const std::string& norm, int64_t features) {
  if (norm == "layer") return torch::nn::AnyModule(torch::nn::LayerNorm(torch::nn::LayerNormOptions({features})));
  if (norm == "batch") return torch::nn::AnyModule(torch::nn::BatchNorm1d(features));
  return torch::nn::AnyModule(torch::nn::Identity());
}

// One pass over a fresh permutation, as a user's loop would do it; max_batches < 0 means all.
void train_epoch(torch::nn::Sequential& model, torch::optim::Optimizer& opt, const torch::Tensor& x,
                 const torch::Tensor& y, int64_t batch_size, int64_t max_batches = -1) {
  model->train();
  const int64_t n = x.size(0);
  auto perm = torch::randperm(n, torch::kInt64);
  int64_t b = 0;
  for (int64_t start = 0; start < n && b != max_batches; start += batch_size, ++b) {
    auto idx = perm.slice(0, start, std::min(start + batch_size, n));  // last partial batch kept
    auto loss = torch::nn::functional::cross_entropy(model->forward(x.index({idx})), y.index({idx}));
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
}

}  // namespace

int main(int argc, char** argv) try {
  const Options opt = parse_args(argc, argv);
  torch::set_num_threads(opt.threads);
  peers::set_blas_threads(opt.blas_threads);
  torch::manual_seed(opt.seed);

  auto [x_train, y_train] = load_split(opt.data, "train");
  auto [x_test, y_test] = load_split(opt.data, "t10k");

  torch::nn::Sequential model;
  model->push_back(torch::nn::Linear(784, 300));
  model->push_back(torch::nn::ReLU());
  model->push_back(make_norm(opt.norm, 300));
  model->push_back(torch::nn::Linear(300, 100));
  model->push_back(torch::nn::ReLU());
  model->push_back(make_norm(opt.norm, 100));
  model->push_back(torch::nn::Linear(100, 10));
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));

  // Warm-up: first touch of allocator and thread pools, not measured.
  const int64_t n = x_train.size(0), batches_per_epoch = (n + opt.batch_size - 1) / opt.batch_size;
  const int whole = int(opt.warmup);
  for (int e = 0; e < whole; ++e) train_epoch(model, adam, x_train, y_train, opt.batch_size);
  if (opt.warmup > whole) {
    const auto part = std::max<int64_t>(1, std::llround((opt.warmup - whole) * double(batches_per_epoch)));
    train_epoch(model, adam, x_train, y_train, opt.batch_size, part);
  }

  std::vector<double> seconds;
  for (int e = 0; e < opt.epochs; ++e) {
    const auto t0 = std::chrono::steady_clock::now();
    train_epoch(model, adam, x_train, y_train, opt.batch_size);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    // With --json, stdout carries only the JSON line; progress goes to stderr.
    std::fprintf(opt.json ? stderr : stdout, "epoch %d: %.3f s\n", e + 1, seconds.back());
    std::fflush(opt.json ? stderr : stdout);
  }

  double test_acc = 0;
  {
    model->eval();
    torch::NoGradGuard no_grad;
    test_acc = model->forward(x_test).argmax(1).eq(y_test).to(torch::kFloat64).mean().item<double>();
  }

  auto sorted = seconds;
  std::sort(sorted.begin(), sorted.end());
  const size_t m = sorted.size();
  const double median = m % 2 ? sorted[m / 2] : (sorted[m / 2 - 1] + sorted[m / 2]) / 2;
  const double sps = double(n) / median, rss = peers::peak_rss_mb();

  if (opt.json) {
    std::string list;
    char buf[32];
    for (double s : seconds) {
      std::snprintf(buf, sizeof buf, "%s%.4f", list.empty() ? "" : ", ", s);
      list += buf;
    }
    std::printf(
        "{\"impl\": \"libtorch\", \"norm\": \"%s\", \"batch\": %lld, \"threads\": %d, "
        "\"blas_threads\": %d, \"epochs_seconds\": [%s], \"median_seconds\": %.4f, "
        "\"samples_per_second\": %.1f, \"peak_rss_mb\": %.1f, \"test_acc\": %.4f, "
        "\"version\": \"%s\"}\n",
        opt.norm.c_str(), static_cast<long long>(opt.batch_size), opt.threads, opt.blas_threads,
        list.c_str(), median, sps, rss, test_acc, TORCH_VERSION);
  } else {
    std::printf("libtorch %s, norm %s, batch %lld, threads %d (BLAS %d): median %.3f s/epoch, "
                "%.0f samples/s, test acc %.4f, peak RSS %.0f MB\n",
                TORCH_VERSION, opt.norm.c_str(), static_cast<long long>(opt.batch_size), opt.threads,
                opt.blas_threads, median, sps, test_acc, rss);
  }
  return 0;
} catch (const std::invalid_argument& e) {  // bad options
  std::fprintf(stderr, "libtorch_mlp: error: %s\n%s", e.what(), kUsage);
  return 2;
} catch (const std::exception& e) {
  std::fprintf(stderr, "libtorch_mlp: error: %s\n", e.what());
  return 1;
}
