// libtorch peer of `normnet bench --model vit` (issue 13): the PyTorch C++ frontend training the
// small Vision Transformer on MNIST -- 7x7 patches embedded by conv_proj (Conv2d 1->64, kernel
// and stride 7), a class token in front, a learned positional embedding, 4 pre-LN encoder layers
// (d_model 64, 4 heads, GELU, no dropout) with a final LayerNorm, a linear head on the class
// token -- with cross-entropy and Adam(lr 1e-3), as torch_vit.py. Module names and
// initialisation are those of normnet's VisionTransformer (README.md). Only the training loop is
// timed; then the test loss and accuracy are measured.
//
//   libtorch_vit --batch-size 128 --threads 1 --json
#include "peer_images.hpp"
#include "peer_transformer.hpp"

namespace {

struct Options {
    peers::CommonOptions common = peers::common_defaults(peers::kMnist, 128);
    int64_t dim_feedforward = 128;  // normnet's VisionTransformerOptions default
    std::string placement = "pre";
    double lr = 1e-3;
    peers::ImageOptions images;
};

const std::string kUsage =
    std::string("usage: libtorch_vit [--dim-feedforward F] [--norm-placement pre|post] [--lr LR]\n") +
    peers::kImageUsage;

Options parse(int argc, char** argv) {
    Options o;
    peers::ArgParser a(argc, argv, kUsage);
    a.parse(o.common, [&](const std::string& name) {
        if (name == "--dim-feedforward") o.dim_feedforward = a.integer();
        else if (name == "--norm-placement") o.placement = a.value();
        else if (name == "--lr") o.lr = a.number();
        else return o.images.parse(a, name);
        return true;
    });
    if (o.placement != "pre" && o.placement != "post")
        throw std::invalid_argument("--norm-placement must be pre or post, not " + o.placement);
    o.images.check();
    if (o.dim_feedforward < 1) throw std::invalid_argument("--dim-feedforward must be >= 1");
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

void run(const Options& o) {
    const auto& c = o.common;
    peers::setup_threads(c);
    torch::manual_seed(c.seed);
    auto [x_train, y_train] = peers::load_images(c.data, "train", o.images.limit);
    auto [x_test, y_test] = peers::load_images(c.data, "t10k", o.images.limit);
    VisionTransformer model(o);
    peers::load_init(*model, c.init);
    torch::optim::Adam adam(peers::defined_parameters(*model), torch::optim::AdamOptions(o.lr));
    const int64_t n = x_train.size(0);
    peers::EpochOrder order(c.order, n, c.seed);
    const auto seconds = peers::timed_epochs(c, o.images, n, [&](int64_t max_batches) {
        peers::train_epoch(model, adam, order.next(), x_train, y_train, c.batch_size, max_batches);
    });
    const double rss = peers::peak_rss_mb();  // the training loop's peak, before evaluation
    peers::image_result(c, "vit", "layer", n, seconds, peers::evaluate_images(model, x_test, y_test), rss);
}

}  // namespace

int main(int argc, char** argv) {
    return peers::run_main("libtorch_vit", kUsage, [&] { run(parse(argc, argv)); });
}
