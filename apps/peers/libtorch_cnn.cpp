// libtorch peer of `normnet bench --model cnn` (issue 12): the PyTorch C++ frontend training the
// small CNN on Fashion-MNIST -- conv 3x3 1->32 (padding 1), norm, ReLU, max-pool 2, conv 3x3
// 32->64, norm, ReLU, max-pool 2, flatten, linear 3136->128, ReLU, linear 128->10 --
// with cross-entropy and Adam(lr 1e-3), the workload torch_cnn.py times too. Only the training
// loop is timed; the IDX files are read and turned into float tensors first.
//
//   libtorch_cnn --batch-size 128 --norm batch --threads 1 --json
#include "peer_common.hpp"

namespace {

struct Options {
    peers::CommonOptions common = peers::common_defaults(peers::kFashionMnist, 128);
    std::string norm = "batch";
    int64_t groups = 8;
    int epochs = 1;
    double warmup = 0.05;  // untimed, in epochs; a fraction runs the first part of one epoch
    int64_t limit = 0;     // the first N images of each split (0: all)
};

const std::string kUsage =
    "usage: libtorch_cnn [--norm batch|group|layer|instance|none] [--groups G] [--epochs E]\n"
    "                    [--warmup W] [--limit N]\n";

Options parse(int argc, char** argv) {
    Options o;
    peers::ArgParser a(argc, argv, kUsage);
    a.parse(o.common, [&](const std::string& name) {
        if (name == "--norm") o.norm = a.value();
        else if (name == "--groups") o.groups = a.integer();
        else if (name == "--epochs") o.epochs = int(a.integer());
        else if (name == "--warmup") o.warmup = a.number();
        else if (name == "--limit") o.limit = a.integer();
        else return false;
        return true;
    });
    const std::vector<std::string> norms{"batch", "group", "layer", "instance", "none"};
    if (std::find(norms.begin(), norms.end(), o.norm) == norms.end())
        throw std::invalid_argument("--norm must be batch, group, layer, instance or none, not " + o.norm);
    if (o.epochs < 1 || o.warmup < 0 || o.limit < 0 || o.groups < 1)
        throw std::invalid_argument("--epochs and --groups must be >= 1, --warmup and --limit >= 0");
    if (32 % o.groups || 64 % o.groups)
        throw std::invalid_argument("--groups " + std::to_string(o.groups) + " must divide 32 and 64");
    return o;
}

// The normalisation after a convolution with `channels` maps, as normnet's norm table builds it
// for a CNN (layer is GroupNorm with one group, as Wu and He define LayerNorm); none adds no
// module, so the Sequential's indices (and state_dict names) are those of normnet's CNN.
void push_norm(torch::nn::Sequential& s, const Options& o, int64_t channels) {
    namespace nn = torch::nn;
    if (o.norm == "batch") s->push_back(nn::BatchNorm2d(channels));
    else if (o.norm == "group") s->push_back(nn::GroupNorm(o.groups, channels));
    else if (o.norm == "layer") s->push_back(nn::GroupNorm(1, channels));
    else if (o.norm == "instance") s->push_back(nn::InstanceNorm2d(nn::InstanceNorm2dOptions(channels).affine(true)));
}

torch::nn::Sequential make_model(const Options& o) {
    namespace nn = torch::nn;
    nn::Sequential s;
    s->push_back(nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)));
    push_norm(s, o, 32);
    s->push_back(nn::ReLU());
    s->push_back(nn::MaxPool2d(2));
    s->push_back(nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)));
    push_norm(s, o, 64);
    s->push_back(nn::ReLU());
    s->push_back(nn::MaxPool2d(2));
    s->push_back(nn::Flatten());
    s->push_back(nn::Linear(3136, 128));
    s->push_back(nn::ReLU());
    s->push_back(nn::Linear(128, 10));
    return s;
}

// One pass over the next order, as a user's loop would do it; max_batches < 0 means all.
void train_epoch(torch::nn::Sequential& model, torch::optim::Optimizer& opt, peers::EpochOrder& order,
                 const torch::Tensor& x, const torch::Tensor& y, const Options& o, int64_t max_batches = -1) {
    model->train();
    const int64_t n = x.size(0), bs = o.common.batch_size;
    const auto perm = order.next();
    int64_t b = 0;
    for (int64_t start = 0; start < n && b != max_batches; start += bs, ++b) {
        const int64_t end = std::min(start + bs, n);  // the last partial batch is kept ...
        if (end - start == 1 && o.norm == "batch") break;  // ... unless BatchNorm would see one sample
        const auto idx = perm.slice(0, start, end);
        auto loss = torch::nn::functional::cross_entropy(model->forward(x.index({idx})), y.index({idx}));
        opt.zero_grad();
        loss.backward();
        opt.step();
    }
}

// Mean test cross-entropy and accuracy in eval mode, in chunks (one 10,000-image forward would
// take 1 GB).
std::pair<double, double> evaluate(torch::nn::Sequential& model, const torch::Tensor& x, const torch::Tensor& y) {
    model->eval();
    torch::NoGradGuard no_grad;
    namespace F = torch::nn::functional;
    double loss = 0;
    int64_t correct = 0;
    for (int64_t s = 0; s < x.size(0); s += 500) {
        const int64_t e = std::min(s + 500, x.size(0));
        const auto logits = model->forward(x.slice(0, s, e));
        const auto target = y.slice(0, s, e);
        loss += F::cross_entropy(logits, target, F::CrossEntropyFuncOptions().reduction(torch::kSum)).item<double>();
        correct += logits.argmax(1).eq(target).sum().item<int64_t>();
    }
    const double n = double(std::max<int64_t>(1, x.size(0)));
    return {loss / n, double(correct) / n};
}

void run(const Options& o) {
    const auto& c = o.common;
    peers::setup_threads(c);
    torch::manual_seed(c.seed);
    auto [x_train, y_train] = peers::load_images(c.data, "train", o.limit);
    auto [x_test, y_test] = peers::load_images(c.data, "t10k", o.limit);
    auto model = make_model(o);
    peers::load_init(*model, c.init);
    torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
    const int64_t n = x_train.size(0);
    peers::EpochOrder order(c.order, n, c.seed);

    // Warm-up: first touch of allocator and thread pools, not measured.
    const int whole = int(o.warmup);
    for (int e = 0; e < whole; ++e) train_epoch(model, adam, order, x_train, y_train, o);
    if (o.warmup > whole) {
        const int64_t batches = (n + c.batch_size - 1) / c.batch_size;
        train_epoch(model, adam, order, x_train, y_train, o,
                    std::max<int64_t>(1, std::llround((o.warmup - whole) * double(batches))));
    }

    std::vector<double> seconds;
    for (int e = 0; e < o.epochs; ++e) {
        const auto t0 = std::chrono::steady_clock::now();
        train_epoch(model, adam, order, x_train, y_train, o);
        seconds.push_back(peers::seconds_since(t0));
        peers::progress(c, "epoch " + std::to_string(e + 1) + ": " + std::to_string(seconds.back()) + " s");
    }
    const double rss = peers::peak_rss_mb();  // the training loop's peak, before evaluation
    const auto [test_loss, acc] = evaluate(model, x_test, y_test);
    const double med = peers::median(seconds);

    auto r = peers::result_header(c, "cnn", o.norm);
    r["samples"] = n;
    r["epochs_seconds"] = seconds;
    r["median_seconds"] = med;
    r["samples_per_second"] = double(n) / med;
    r["peak_rss_mb"] = rss;
    r["test_loss"] = test_loss;
    r["test_acc"] = acc;
    char line[256];
    std::snprintf(line, sizeof line,
                  "cnn, norm %s, batch %lld, threads %d (BLAS %d): median %.3f s/epoch of %lld, %.0f samples/s, "
                  "test loss %.4f, test acc %.4f, peak RSS %.0f MB",
                  o.norm.c_str(), static_cast<long long>(c.batch_size), c.threads, c.blas_threads, med,
                  static_cast<long long>(n), double(n) / med, test_loss, acc, rss);
    peers::emit(c, r, line);
}

}  // namespace

int main(int argc, char** argv) {
    return peers::run_main("libtorch_cnn", kUsage, [&] { run(parse(argc, argv)); });
}
