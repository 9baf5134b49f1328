// libtorch peer of `normnet bench --model cnn` (issue 12): the PyTorch C++ frontend training the
// small CNN on Fashion-MNIST -- conv 3x3 1->32 (padding 1), norm, ReLU, max-pool 2, conv 3x3
// 32->64, norm, ReLU, max-pool 2, flatten, linear 3136->128, ReLU, linear 128->10 --
// with cross-entropy and Adam(lr 1e-3), the workload torch_cnn.py times too. Only the training
// loop is timed; the IDX files are read and turned into float tensors first.
//
//   libtorch_cnn --batch-size 128 --norm batch --threads 1 --json
#include "peer_images.hpp"

namespace {

struct Options {
    peers::CommonOptions common = peers::common_defaults(peers::kFashionMnist, 128);
    peers::ImageOptions images;
    std::string norm = "batch";
    int64_t groups = 8;  // normnet's --groups default
};

const std::string kUsage =
    std::string("usage: libtorch_cnn [--norm batch|group|layer|instance|none] [--groups G]\n") + peers::kImageUsage;

Options parse(int argc, char** argv) {
    Options o;
    peers::ArgParser a(argc, argv, kUsage);
    a.parse(o.common, [&](const std::string& name) {
        if (name == "--norm") o.norm = a.value();
        else if (name == "--groups") o.groups = a.integer();
        else return o.images.parse(a, name);
        return true;
    });
    const std::vector<std::string> norms{"batch", "group", "layer", "instance", "none"};
    if (std::find(norms.begin(), norms.end(), o.norm) == norms.end())
        throw std::invalid_argument("--norm must be batch, group, layer, instance or none, not " + o.norm);
    o.images.check();
    if (o.groups < 1 || 32 % o.groups || 64 % o.groups)
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

void run(const Options& o) {
    const auto& c = o.common;
    peers::setup_threads(c);
    torch::manual_seed(c.seed);
    auto [x_train, y_train] = peers::load_images(c.data, "train", o.images.limit);
    auto [x_test, y_test] = peers::load_images(c.data, "t10k", o.images.limit);
    auto model = make_model(o);
    peers::load_init(*model, c.init);
    torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
    const int64_t n = x_train.size(0);
    peers::EpochOrder order(c.order, n, c.seed);
    const auto seconds = peers::timed_epochs(c, o.images, n, [&](int64_t max_batches) {
        peers::train_epoch(model, adam, order.next(), x_train, y_train, c.batch_size, max_batches, o.norm == "batch");
    });
    const double rss = peers::peak_rss_mb();  // the training loop's peak, before evaluation
    peers::image_result(c, "cnn", o.norm, n, seconds, peers::evaluate_images(model, x_test, y_test), rss);
}

}  // namespace

int main(int argc, char** argv) {
    return peers::run_main("libtorch_cnn", kUsage, [&] { run(parse(argc, argv)); });
}
