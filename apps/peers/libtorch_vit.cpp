// libtorch peer of `normnet bench --model vit` (issue 13): the PyTorch C++ frontend training the
// small Vision Transformer on MNIST -- 7x7 patches embedded by conv_proj (Conv2d 1->64, kernel
// and stride 7), a class token in front, a learned positional embedding, 4 pre-LN encoder layers
// (d_model 64, 4 heads, GELU, no dropout) with a final LayerNorm, a linear head on the class
// token -- with cross-entropy and Adam(lr 1e-3), as torch_vit.py. Module names and
// initialisation are those of normnet's VisionTransformer (README.md). Only the training loop is
// timed; then the test loss and accuracy are measured.
//
//   libtorch_vit --batch-size 128 --threads 1 --json
#include "peer_common.hpp"
#include "peer_transformer.hpp"

namespace {

struct Options {
    peers::CommonOptions common = peers::common_defaults(peers::kMnist, 128);
    int64_t dim_feedforward = 128;  // normnet's VisionTransformerOptions default
    std::string placement = "pre";
    double lr = 1e-3;
    int epochs = 1;
    double warmup = 0.05;  // untimed, in epochs; a fraction runs the first part of one epoch
    int64_t limit = 0;     // the first N images of each split (0: all)
};

const std::string kUsage =
    "usage: libtorch_vit [--dim-feedforward F] [--norm-placement pre|post] [--lr LR] [--epochs E]\n"
    "                    [--warmup W] [--limit N]\n";

Options parse(int argc, char** argv) {
    Options o;
    peers::ArgParser a(argc, argv, kUsage);
    a.parse(o.common, [&](const std::string& name) {
        if (name == "--dim-feedforward") o.dim_feedforward = a.integer();
        else if (name == "--norm-placement") o.placement = a.value();
        else if (name == "--lr") o.lr = a.number();
        else if (name == "--epochs") o.epochs = int(a.integer());
        else if (name == "--warmup") o.warmup = a.number();
        else if (name == "--limit") o.limit = a.integer();
        else return false;
        return true;
    });
    if (o.placement != "pre" && o.placement != "post")
        throw std::invalid_argument("--norm-placement must be pre or post, not " + o.placement);
    if (o.epochs < 1 || o.warmup < 0 || o.limit < 0 || o.dim_feedforward < 1)
        throw std::invalid_argument("--epochs and --dim-feedforward must be >= 1, --warmup and --limit >= 0");
    return o;
}

// normnet::models::VisionTransformer in libtorch (torchvision's names).
struct VisionTransformerImpl : torch::nn::Module {
    static constexpr int64_t kModel = 64, kPatch = 7, kTokens = 1 + (28 / kPatch) * (28 / kPatch);

    explicit VisionTransformerImpl(const Options& o)
        : conv_proj(register_module("conv_proj",
                                    torch::nn::Conv2d(torch::nn::Conv2dOptions(1, kModel, kPatch).stride(kPatch)))),
          class_token(register_parameter("class_token", torch::zeros({1, 1, kModel}))),
          pos_embedding(register_parameter("pos_embedding", torch::empty({1, kTokens, kModel}).normal_(0.0, 0.02))),
          encoder(register_module("encoder", peers::Encoder(kModel, 4, o.dim_feedforward, 4, o.placement == "pre"))),
          head(register_module("head", torch::nn::Linear(kModel, 10))) {}

    torch::Tensor forward(const torch::Tensor& x) {
        const auto patches = conv_proj(x).flatten(2).transpose(1, 2);  // [N, D, 4, 4] -> [N, 16, D]
        const auto h = torch::cat({class_token.expand({x.size(0), 1, kModel}), patches}, 1) + pos_embedding;
        return head(encoder(h).select(1, 0));
    }

    torch::nn::Conv2d conv_proj;
    torch::Tensor class_token, pos_embedding;
    peers::Encoder encoder;
    torch::nn::Linear head;
};
TORCH_MODULE(VisionTransformer);

// One pass over the next order, as a user's loop would do it; max_batches < 0 means all.
void train_epoch(VisionTransformer& model, torch::optim::Optimizer& opt, peers::EpochOrder& order,
                 const torch::Tensor& x, const torch::Tensor& y, int64_t bs, int64_t max_batches = -1) {
    model->train();
    const int64_t n = x.size(0);
    const auto perm = order.next();
    int64_t b = 0;
    for (int64_t start = 0; start < n && b != max_batches; start += bs, ++b) {
        const auto idx = perm.slice(0, start, std::min(start + bs, n));  // the last partial batch is kept
        auto loss = torch::nn::functional::cross_entropy(model->forward(x.index({idx})), y.index({idx}));
        opt.zero_grad();
        loss.backward();
        opt.step();
    }
}

// Mean test cross-entropy and accuracy in eval mode, in chunks of 500.
std::pair<double, double> evaluate(VisionTransformer& model, const torch::Tensor& x, const torch::Tensor& y) {
    model->eval();
    torch::NoGradGuard no_grad;
    double loss = 0;
    int64_t correct = 0;
    namespace F = torch::nn::functional;
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
    VisionTransformer model(o);
    peers::load_init(*model, c.init);
    torch::optim::Adam adam(peers::defined_parameters(*model), torch::optim::AdamOptions(o.lr));
    const int64_t n = x_train.size(0);
    peers::EpochOrder order(c.order, n, c.seed);

    const int whole = int(o.warmup);
    for (int e = 0; e < whole; ++e) train_epoch(model, adam, order, x_train, y_train, c.batch_size);
    if (o.warmup > whole) {
        const int64_t batches = (n + c.batch_size - 1) / c.batch_size;
        train_epoch(model, adam, order, x_train, y_train, c.batch_size,
                    std::max<int64_t>(1, std::llround((o.warmup - whole) * double(batches))));
    }

    std::vector<double> seconds;
    for (int e = 0; e < o.epochs; ++e) {
        const auto t0 = std::chrono::steady_clock::now();
        train_epoch(model, adam, order, x_train, y_train, c.batch_size);
        seconds.push_back(peers::seconds_since(t0));
        peers::progress(c, "epoch " + std::to_string(e + 1) + ": " + std::to_string(seconds.back()) + " s");
    }
    const double rss = peers::peak_rss_mb();  // the training loop's peak, before evaluation
    const auto [test_loss, test_acc] = evaluate(model, x_test, y_test);
    const double med = peers::median(seconds);

    auto r = peers::result_header(c, "vit", "layer");
    r["samples"] = n;
    r["epochs_seconds"] = seconds;
    r["median_seconds"] = med;
    r["samples_per_second"] = double(n) / med;
    r["peak_rss_mb"] = rss;
    r["test_loss"] = test_loss;
    r["test_acc"] = test_acc;
    char line[256];
    std::snprintf(line, sizeof line,
                  "vit, batch %lld, threads %d (BLAS %d): median %.3f s/epoch of %lld, %.0f samples/s, "
                  "test loss %.4f, test acc %.4f, peak RSS %.0f MB",
                  static_cast<long long>(c.batch_size), c.threads, c.blas_threads, med, static_cast<long long>(n),
                  double(n) / med, test_loss, test_acc, rss);
    peers::emit(c, r, line);
}

}  // namespace

int main(int argc, char** argv) {
    return peers::run_main("libtorch_vit", kUsage, [&] { run(parse(argc, argv)); });
}
