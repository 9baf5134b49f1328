// The convolutional layers as modules: Conv2d (parameters, PyTorch's initialisation, repr,
// options), the pooling layers, BatchNorm2d, InstanceNorm2d and GroupNorm over golden training
// steps, LayerNorm over [C, H, W], gradcheck of every layer, and the issue-12 CNN with each
// normalisation: PyTorch's repr and state_dict names and shapes, clone(), a few training steps.
#include <cmath>
#include <string>
#include <vector>

#include "test_helpers.hpp"

using namespace normnet;
using test::leaf;
using test::require_close;

namespace {

// "name:[shape];..." of a state_dict, as the golden stores torch's.
std::string describe(const NamedTensors& state) {
    std::string s;
    for (const auto& [name, t] : state) s += (s.empty() ? "" : ";") + name + ":" + t.shape().str();
    return s;
}

// The issue-12 CNN: conv 3x3 1->32, norm, ReLU, max-pool 2, conv 3x3 32->64, norm, ReLU,
// max-pool 2, flatten, linear 3136->128, ReLU, linear 128->10.
Sequential cnn(const std::string& norm) {
    const auto norm_layer = [&](int64_t c) -> AnyModule {
        if (norm == "batch") return BatchNorm2d(c);
        if (norm == "group") return GroupNorm(8, c);
        if (norm == "layer") return GroupNorm(1, c);
        if (norm == "instance") return InstanceNorm2d(InstanceNorm2dOptions{.num_features = c, .affine = true, .track_running_stats = true});
        return Identity();
    };
    return Sequential{Conv2d(Conv2dOptions{.in_channels = 1, .out_channels = 32, .kernel_size = 3, .padding = 1}),
                      norm_layer(32),
                      ReLU(),
                      MaxPool2d(2),
                      Conv2d(Conv2dOptions{.in_channels = 32, .out_channels = 64, .kernel_size = 3, .padding = 1}),
                      norm_layer(64),
                      ReLU(),
                      MaxPool2d(2),
                      Flatten(),
                      Linear(3136, 128),
                      ReLU(),
                      Linear(128, 10)};
}

void require_gradcheck(const GradcheckResult& r) {
    INFO(r.message);
    REQUIRE(r.ok);
    REQUIRE(r.checked > 0);
}

// One golden case of a BatchNorm2d / InstanceNorm2d over its training steps, then eval.
template <class Layer>
void check_steps(const SafetensorsData& g, const std::string& c, Layer& layer, bool affine, bool stats,
                 bool counts_batches) {
    INFO("case " << c);
    if (affine) {
        layer.weight.detach().copy_(g.at(c + ".weight"));
        layer.bias.detach().copy_(g.at(c + ".bias"));
    }
    const int steps = std::stoi(g.metadata.at(c + ".steps"));
    for (int k = 0; k < steps; ++k) {
        const std::string s = std::to_string(k);
        layer.zero_grad();
        Tensor x = leaf(g.at(c + ".x" + s));
        Tensor y = layer(x);
        require_close(y, g.at(c + ".y" + s), 1e-5, c + ".y" + s);
        y.backward(g.at(c + ".dy" + s));
        require_close(x.grad(), g.at(c + ".dx" + s), 1e-5, c + ".dx" + s);
        if (affine) {
            require_close(layer.weight.grad(), g.at(c + ".dweight" + s), 1e-5, c + ".dweight" + s);
            require_close(layer.bias.grad(), g.at(c + ".dbias" + s), 1e-5, c + ".dbias" + s);
        }
        if (stats) {
            require_close(layer.running_mean, g.at(c + ".running_mean" + s), 1e-5, c + ".running_mean" + s);
            require_close(layer.running_var, g.at(c + ".running_var" + s), 1e-5, c + ".running_var" + s);
            const int64_t tracked = g.at(c + ".num_batches_tracked" + s).template to_vector<int64_t>()[0];
            CHECK(layer.num_batches_tracked.template item<int64_t>() == tracked);
            CHECK(tracked == (counts_batches ? k + 1 : 0));
        } else {
            CHECK(layer.named_buffers().empty());
        }
    }
    layer.eval();
    NoGradGuard no_grad;
    require_close(layer(g.at(c + ".x_eval")), g.at(c + ".y_eval"), 1e-5, c + ".y_eval");
}

}  // namespace

TEST_CASE("Conv2d: PyTorch's parameter names, shapes, initialisation and repr", "[nn][conv]") {
    manual_seed(5);
    Conv2d conv(Conv2dOptions{.in_channels = 4, .out_channels = 6, .kernel_size = {3, 2}, .groups = 2});
    CHECK(conv.weight.shape() == Shape{6, 2, 3, 2});
    CHECK(conv.bias.shape() == Shape{6});
    CHECK(describe(conv.state_dict()) == "weight:[6, 2, 3, 2];bias:[6]");
    CHECK(conv.weight.requires_grad());
    // kaiming_uniform_(a = sqrt(5)): U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = 2 * 3 * 2; the bias too.
    const float bound = 1.0f / std::sqrt(12.0f);
    for (const Tensor& t : {conv.weight, conv.bias}) {
        const auto v = t.to_vector();
        CHECK(*std::max_element(v.begin(), v.end()) <= bound);
        CHECK(*std::min_element(v.begin(), v.end()) >= -bound);
        CHECK(*std::max_element(v.begin(), v.end()) > 0.5f * bound);  // spread over the range
    }
    CHECK(conv.to_string() == "Conv2d(4, 6, kernel_size=(3, 2), stride=(1, 1), groups=2)");
    // The strings torch prints for the same settings.
    CHECK(Conv2d(1, 32, 3).to_string() == "Conv2d(1, 32, kernel_size=(3, 3), stride=(1, 1))");
    CHECK(Conv2d(Conv2dOptions{.in_channels = 1, .out_channels = 32, .kernel_size = 3, .padding = 1}).to_string() ==
          "Conv2d(1, 32, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))");
    CHECK(Conv2d(Conv2dOptions{.in_channels = 4, .out_channels = 8, .kernel_size = {3, 2}, .stride = 2,
                               .padding = "valid", .dilation = 2, .groups = 2, .bias = false})
              .to_string() ==
          "Conv2d(4, 8, kernel_size=(3, 2), stride=(2, 2), padding=valid, dilation=(2, 2), groups=2, bias=False)");
    Conv2d same(Conv2dOptions{.in_channels = 4, .out_channels = 8, .kernel_size = 3, .padding = "same"});
    CHECK(same.to_string() == "Conv2d(4, 8, kernel_size=(3, 3), stride=(1, 1), padding=same)");
    CHECK(same(rand({2, 4, 5, 7})).shape() == Shape{2, 8, 5, 7});
    Conv2d nobias(Conv2dOptions{.in_channels = 2, .out_channels = 3, .kernel_size = 1, .bias = false});
    CHECK_FALSE(nobias.bias.defined());
    CHECK(describe(nobias.state_dict()) == "weight:[3, 2, 1, 1]");
    // forward is conv2d with the layer's parameters.
    const Tensor x = rand({2, 4, 6, 5});
    require_close(conv(x), conv2d(x, conv.weight, conv.bias, 1, 0, 1, 2), 0.0, "forward");
}

TEST_CASE("Conv2d: bad options fail naming the layer", "[nn][conv]") {
    CHECK_THROWS_WITH(Conv2d(Conv2dOptions{.in_channels = 3, .out_channels = 4, .kernel_size = 3, .groups = 2}),
                      "Conv2d: in_channels must be divisible by groups (got 3 and 2)");
    CHECK_THROWS_WITH(Conv2d(Conv2dOptions{.in_channels = 4, .out_channels = 3, .kernel_size = 3, .groups = 2}),
                      "Conv2d: out_channels must be divisible by groups (got 3 and 2)");
    CHECK_THROWS_WITH(Conv2d(Conv2dOptions{.in_channels = 4, .out_channels = 4, .kernel_size = 3, .stride = 2,
                                           .padding = "same"}),
                      "Conv2d: padding='same' is not supported for strided convolutions");
    CHECK_THROWS_WITH(Conv2d(Conv2dOptions{.in_channels = 1, .out_channels = 1, .kernel_size = 3,
                                           .padding_mode = "reflect"}),
                      "Conv2d: padding_mode='reflect' is not supported (only 'zeros' is)");
    CHECK_THROWS_WITH(Conv2d(Conv2dOptions{.in_channels = 1, .out_channels = 1, .kernel_size = 3, .padding_mode = "zero"}),
                      "Conv2d: padding_mode must be one of ['zeros', 'reflect', 'replicate', 'circular'], but got "
                      "padding_mode='zero'");
    CHECK_THROWS_WITH(Conv2d(1, 1, 0), "Conv2d: kernel_size must be positive, got (0, 0)");
    CHECK_THROWS_WITH(Conv2d(0, 1, 3), Catch::Contains("Conv2d: in_channels (0)"));
}

TEST_CASE("pooling layers: PyTorch's repr, defaults and forward", "[nn][pooling]") {
    CHECK(MaxPool2d(2).to_string() == "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)");
    CHECK(MaxPool2d(MaxPool2dOptions{.kernel_size = {2, 3}, .stride = 1, .padding = 1, .dilation = 2, .ceil_mode = true})
              .to_string() == "MaxPool2d(kernel_size=(2, 3), stride=1, padding=1, dilation=2, ceil_mode=True)");
    CHECK(AvgPool2d(2).to_string() == "AvgPool2d(kernel_size=2, stride=2, padding=0)");
    CHECK(AvgPool2d(AvgPool2dOptions{.kernel_size = 3, .stride = 2, .padding = 1, .ceil_mode = true,
                                     .count_include_pad = false, .divisor_override = 2})
              .to_string() == "AvgPool2d(kernel_size=3, stride=2, padding=1)");
    CHECK(AdaptiveAvgPool2d(1).to_string() == "AdaptiveAvgPool2d(output_size=1)");
    CHECK(AdaptiveAvgPool2d({2, 3}).to_string() == "AdaptiveAvgPool2d(output_size=(2, 3))");
    CHECK(MaxPool2d(2).parameters().empty());
    const Tensor x = rand({2, 3, 7, 6});
    MaxPool2d pool(MaxPool2dOptions{.kernel_size = 3, .stride = 2, .padding = 1, .ceil_mode = true});
    require_close(pool(x), max_pool2d(x, 3, 2, 1, 1, true), 0.0, "MaxPool2d");
    CHECK(std::get<1>(pool.forward_with_indices(x)).to_vector<int64_t>() ==
          std::get<1>(max_pool2d_with_indices(x, 3, 2, 1, 1, true)).to_vector<int64_t>());
    require_close(AvgPool2d(AvgPool2dOptions{.kernel_size = 3, .count_include_pad = false})(x),
                  avg_pool2d(x, 3, 3, 0, false, false), 0.0, "AvgPool2d");
    CHECK(AdaptiveAvgPool2d(1)(x).shape() == Shape{2, 3, 1, 1});
    require_close(AdaptiveAvgPool2d(1)(x).view({2, 3}), mean(x, {2, 3}), 1e-6, "global average pooling");
}

TEST_CASE("golden: BatchNorm2d over training steps with running statistics, then eval", "[nn][norm][golden]") {
    const auto g = test::golden("conv_norm.safetensors");
    struct Bn {
        std::string name;
        BatchNorm2dOptions options;
    };
    for (const Bn& bc : std::vector<Bn>{{"bn2d", {.num_features = 3}},
                                        {"bn2d_cma", {.num_features = 3, .momentum = std::nullopt}},
                                        {"bn2d_noaffine", {.num_features = 3, .affine = false}},
                                        {"bn2d_nostats", {.num_features = 3, .track_running_stats = false}},
                                        {"bn2d_batch1", {.num_features = 2}}}) {
        const auto& o = bc.options;
        CHECK(g.metadata.at(bc.name + ".momentum") == (o.momentum ? "0.1" : "None"));
        CHECK(g.metadata.at(bc.name + ".affine") == (o.affine ? "True" : "False"));
        BatchNorm2d bn(o);
        check_steps(g, bc.name, bn, o.affine, o.track_running_stats, true);
    }
    CHECK(BatchNorm2d(32).to_string() == "BatchNorm2d(32, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
    CHECK(describe(BatchNorm2d(4).state_dict()) ==
          "weight:[4];bias:[4];running_mean:[4];running_var:[4];num_batches_tracked:[]");
}

TEST_CASE("BatchNorm2d: one value per channel is refused in training, counted first, ranks checked", "[nn][norm]") {
    const auto g = test::golden("conv_norm.safetensors");
    BatchNorm2d bn(3);
    // A batch of one image with more than one pixel trains (N x H x W = 4).
    CHECK_NOTHROW(bn(randn({1, 3, 2, 2})));
    CHECK(bn.num_batches_tracked.item<int64_t>() == 1);
    const Tensor mean_before = bn.running_mean.clone();
    CHECK(g.metadata.at("error.bn2d_batch1") ==
          "Expected more than 1 value per channel when training, got input size torch.Size([1, 3, 1, 1])");
    CHECK_THROWS_WITH(bn(zeros({1, 3, 1, 1})),
                      "Expected more than 1 value per channel when training, got input size [1, 3, 1, 1]");
    CHECK(bn.num_batches_tracked.item<int64_t>() == 2);  // counted before the error, as PyTorch
    CHECK(test::bit_equal(bn.running_mean, mean_before));
    CHECK_NOTHROW(bn(zeros({2, 3, 1, 1})));  // two values per channel are enough
    bn.eval();
    CHECK(bn(randn({1, 3, 1, 1})).shape() == Shape{1, 3, 1, 1});  // eval: the running statistics
    CHECK_THROWS_WITH(bn(zeros({2, 3, 4})), "BatchNorm2d: expected 4D input (got 3D input of shape [2, 3, 4])");
    CHECK_THROWS_WITH(bn(zeros({2, 4, 2, 2})), Catch::Contains("BatchNorm2d: running_mean should contain 4 elements not 3"));
    CHECK_THROWS_WITH(BatchNorm1d(3)(zeros({2, 3, 2, 2})), Catch::Contains("BatchNorm1d: expected 2D or 3D input"));
}

TEST_CASE("golden: InstanceNorm2d with and without affine and running statistics", "[nn][norm][golden]") {
    const auto g = test::golden("conv_norm.safetensors");
    InstanceNorm2d plain(3);
    CHECK(plain.to_string() == "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, track_running_stats=False)");
    CHECK(plain.state_dict().empty());
    check_steps(g, "in2d", plain, false, false, false);
    InstanceNorm2d affine(InstanceNorm2dOptions{.num_features = 3, .affine = true});
    check_steps(g, "in2d_affine", affine, true, false, false);
    InstanceNorm2d stats(InstanceNorm2dOptions{.num_features = 3, .affine = true, .track_running_stats = true});
    CHECK(describe(stats.state_dict()) == "weight:[3];bias:[3];running_mean:[3];running_var:[3];num_batches_tracked:[]");
    check_steps(g, "in2d_stats", stats, true, true, false);
    InstanceNorm2d stats_only(InstanceNorm2dOptions{.num_features = 3, .momentum = 0.3, .track_running_stats = true});
    check_steps(g, "in2d_stats_noaffine", stats_only, false, true, false);
    // Unbatched [C, H, W] input is a batch of one.
    const Tensor x = randn({3, 4, 5});
    require_close(InstanceNorm2d(3)(x), InstanceNorm2d(3)(x.view({1, 3, 4, 5})).view({3, 4, 5}), 0.0, "unbatched");
    // torch's text, but for how it prints the size.
    CHECK(g.metadata.at("error.in2d_spatial") ==
          "Expected more than 1 spatial element when training, got input size torch.Size([2, 3, 1, 1])");
    CHECK_THROWS_WITH(InstanceNorm2d(3)(randn({2, 3, 1, 1})),
                      "Expected more than 1 spatial element when training, got input size [2, 3, 1, 1]");
    CHECK_THROWS_WITH(InstanceNorm2d(3)(randn({2, 3})), Catch::Contains("InstanceNorm2d: expected 3D or 4D input"));
    CHECK_THROWS_WITH(affine(randn({2, 4, 3, 3})), Catch::Contains("InstanceNorm2d: running_mean should contain 4"));
}

TEST_CASE("golden: GroupNorm, and LayerNorm over [C, H, W]", "[nn][norm][golden]") {
    const auto g = test::golden("conv_norm.safetensors");
    for (const std::string c : {"gn_g1", "gn_g2", "gn_gc", "gn_noaffine", "gn_3d", "gn_2d", "gn_batch1"}) {
        INFO("case " << c);
        const int64_t groups = std::stoll(g.metadata.at(c + ".num_groups"));
        const bool affine = g.metadata.at(c + ".affine") == "True";
        const Tensor x0 = g.at(c + ".x");
        GroupNorm gn(GroupNormOptions{.num_groups = groups, .num_channels = x0.size(1), .affine = affine});
        if (affine) {
            gn.weight.detach().copy_(g.at(c + ".weight"));
            gn.bias.detach().copy_(g.at(c + ".bias"));
        }
        Tensor x = leaf(x0);
        Tensor y = gn(x);
        require_close(y, g.at(c + ".y"), 1e-5, c + ".y");
        y.backward(g.at(c + ".dy"));
        require_close(x.grad(), g.at(c + ".dx"), 1e-5, c + ".dx");
        if (affine) {
            require_close(gn.weight.grad(), g.at(c + ".dweight"), 1e-5, c + ".dweight");
            require_close(gn.bias.grad(), g.at(c + ".dbias"), 1e-5, c + ".dbias");
        }
        gn.eval();  // the same in eval mode
        require_close(gn(x0), g.at(c + ".y"), 1e-5, c + ".y in eval");
    }
    CHECK(GroupNorm(2, 32).to_string() == "GroupNorm(2, 32, eps=1e-05, affine=True)");
    CHECK(describe(GroupNorm(2, 6).state_dict()) == "weight:[6];bias:[6]");
    CHECK(GroupNorm(GroupNormOptions{.num_groups = 2, .num_channels = 6, .affine = false}).parameters().empty());
    CHECK_THROWS_WITH(GroupNorm(4, 6), "GroupNorm: num_channels must be divisible by num_groups (got 6 and 4)");

    // LayerNorm over the last three dimensions of [N, C, H, W], per-element affine (as torch).
    const std::string c = "ln_chw";
    LayerNorm ln({3, 4, 5});
    CHECK(ln.weight.shape() == Shape{3, 4, 5});
    ln.weight.detach().copy_(g.at(c + ".weight"));
    ln.bias.detach().copy_(g.at(c + ".bias"));
    Tensor x = leaf(g.at(c + ".x"));
    Tensor y = ln(x);
    require_close(y, g.at(c + ".y"), 1e-5, c + ".y");
    y.backward(g.at(c + ".dy"));
    require_close(x.grad(), g.at(c + ".dx"), 1e-5, c + ".dx");
    require_close(ln.weight.grad(), g.at(c + ".dweight"), 1e-5, c + ".dweight");
    require_close(ln.bias.grad(), g.at(c + ".dbias"), 1e-5, c + ".dbias");
}

TEST_CASE("gradcheck: every convolutional layer", "[nn][conv][gradcheck]") {
    Generator gen(71);
    manual_seed(71);
    const Tensor x = randn({2, 4, 5, 6}, gen).requires_grad_();
    Conv2d conv(Conv2dOptions{.in_channels = 4, .out_channels = 4, .kernel_size = 3, .padding = "same", .groups = 2});
    require_gradcheck(gradcheck(conv, x));
    BatchNorm2d bn(4);
    bn.weight.detach().normal_(1.0f, 0.3f, gen);
    require_gradcheck(gradcheck(bn, x));
    GroupNorm gn(2, 4);
    gn.bias.detach().normal_(0.0f, 0.3f, gen);
    require_gradcheck(gradcheck(gn, x));
    InstanceNorm2d in(InstanceNorm2dOptions{.num_features = 4, .affine = true});
    require_gradcheck(gradcheck(in, x));
    MaxPool2d mp(MaxPool2dOptions{.kernel_size = 2, .ceil_mode = true});
    Tensor distinct = mul(arange(240).view({2, 4, 5, 6}), 0.01f).detach().requires_grad_();
    require_gradcheck(gradcheck(mp, distinct));
    AvgPool2d ap(AvgPool2dOptions{.kernel_size = 3, .stride = 2, .padding = 1});
    require_gradcheck(gradcheck(ap, x));
    AdaptiveAvgPool2d aap({2, 4});
    require_gradcheck(gradcheck(aap, x));
}

TEST_CASE("Conv1d and ConvTranspose2d: PyTorch's parameters, initialisation and repr", "[nn][conv]") {
    manual_seed(8);
    Conv1d conv1(2, 4, 3);
    CHECK(describe(conv1.state_dict()) == "weight:[4, 2, 3];bias:[4]");
    CHECK(conv1.to_string() == "Conv1d(2, 4, kernel_size=(3,), stride=(1,))");
    CHECK(Conv1d(Conv1dOptions{.in_channels = 2, .out_channels = 4, .kernel_size = 3, .stride = 2, .padding = 1,
                               .dilation = 2, .groups = 2, .bias = false})
              .to_string() == "Conv1d(2, 4, kernel_size=(3,), stride=(2,), padding=(1,), dilation=(2,), groups=2, bias=False)");
    CHECK(Conv1d(Conv1dOptions{.in_channels = 2, .out_channels = 4, .kernel_size = 3, .padding = "same"}).to_string() ==
          "Conv1d(2, 4, kernel_size=(3,), stride=(1,), padding=same)");
    const float bound1 = 1.0f / std::sqrt(6.0f);  // fan_in = 2 * 3
    for (const Tensor& t : {conv1.weight, conv1.bias}) {
        const auto v = t.to_vector();
        CHECK(*std::max_element(v.begin(), v.end()) <= bound1);
        CHECK(*std::min_element(v.begin(), v.end()) >= -bound1);
    }
    const Tensor x1 = rand({2, 2, 9});
    CHECK(test::bit_equal(conv1(x1), conv1d(x1, conv1.weight, conv1.bias)));
    CHECK_THROWS_WITH(Conv1d(3, 4, 0), Catch::Contains("Conv1d: kernel_size must be positive"));
    CHECK_THROWS_WITH(Conv1d(Conv1dOptions{.in_channels = 3, .out_channels = 4, .kernel_size = 3, .groups = 2}),
                      Catch::Contains("Conv1d: in_channels must be divisible by groups"));

    // The transposed weight is [in, out / groups, kH, kW]; fan_in comes from its dim 1 (torch's rule).
    ConvTranspose2d up(ConvTranspose2dOptions{.in_channels = 4, .out_channels = 6, .kernel_size = 3, .groups = 2});
    CHECK(describe(up.state_dict()) == "weight:[4, 3, 3, 3];bias:[6]");
    const float bound2 = 1.0f / std::sqrt(27.0f);
    const auto w = up.weight.to_vector();
    CHECK(*std::max_element(w.begin(), w.end()) <= bound2);
    CHECK(*std::max_element(w.begin(), w.end()) > 0.5f * bound2);
    CHECK(ConvTranspose2d(2, 4, 3).to_string() == "ConvTranspose2d(2, 4, kernel_size=(3, 3), stride=(1, 1))");
    CHECK(ConvTranspose2d(ConvTranspose2dOptions{.in_channels = 2, .out_channels = 4, .kernel_size = {3, 2}, .stride = 2,
                                                 .padding = 1, .output_padding = 1, .groups = 2, .bias = false,
                                                 .dilation = 2})
              .to_string() == "ConvTranspose2d(2, 4, kernel_size=(3, 2), stride=(2, 2), padding=(1, 1), dilation=(2, 2), "
                              "output_padding=(1, 1), groups=2, bias=False)");
    const Tensor x2 = rand({2, 4, 3, 5});
    CHECK(up(x2).shape() == Shape{2, 6, 5, 7});
    CHECK(test::bit_equal(up(x2), conv_transpose2d(x2, up.weight, up.bias, 1, 0, 0, 2)));
    // conv_transpose2d is conv2d's input gradient: <conv2d(y, W), x> = <y, conv_transpose2d(x, W)>.
    Generator gen(3);
    const Tensor y = randn({2, 6, 5, 7}, gen), xs = randn({2, 4, 3, 5}, gen);
    const Tensor weight = randn({4, 3, 3, 3}, gen);
    const double lhs = sum(mul(conv2d(y, weight, {}, 1, 0, 1, 2), xs)).item<double>();
    const double rhs = sum(mul(y, conv_transpose2d(xs, weight, {}, 1, 0, 0, 2))).item<double>();
    CHECK(std::abs(lhs - rhs) <= 1e-4 * (1.0 + std::abs(lhs)));
}

TEST_CASE("1-D pools, AdaptiveMaxPool2d, padding and Upsample: PyTorch's repr and forward", "[nn][pooling]") {
    CHECK(MaxPool1d(3).to_string() == "MaxPool1d(kernel_size=3, stride=3, padding=0, dilation=1, ceil_mode=False)");
    CHECK(MaxPool1d(MaxPool1dOptions{.kernel_size = 3, .stride = 2, .padding = 1, .dilation = 2}).to_string() ==
          "MaxPool1d(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=False)");
    CHECK(AvgPool1d(3).to_string() == "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))");
    CHECK(AvgPool1d(AvgPool1dOptions{.kernel_size = 3, .stride = 2, .padding = 1, .count_include_pad = false})
              .to_string() == "AvgPool1d(kernel_size=(3,), stride=(2,), padding=(1,))");
    CHECK(AdaptiveAvgPool1d(4).to_string() == "AdaptiveAvgPool1d(output_size=4)");
    CHECK(AdaptiveMaxPool1d(5).to_string() == "AdaptiveMaxPool1d(output_size=5)");
    CHECK(AdaptiveMaxPool2d(3).to_string() == "AdaptiveMaxPool2d(output_size=3)");
    CHECK(AdaptiveMaxPool2d({2, 3}).to_string() == "AdaptiveMaxPool2d(output_size=(2, 3))");
    CHECK(ZeroPad2d(2).to_string() == "ZeroPad2d((2, 2, 2, 2))");
    CHECK(ZeroPad2d({1, 2, 3, 4}).to_string() == "ZeroPad2d((1, 2, 3, 4))");
    CHECK(ConstantPad1d({2}, 3.5).to_string() == "ConstantPad1d(padding=(2, 2), value=3.5)");
    CHECK(ConstantPad2d(1).to_string() == "ConstantPad2d(padding=(1, 1, 1, 1), value=0.0)");
    CHECK(ReflectionPad1d(2).to_string() == "ReflectionPad1d((2, 2))");
    CHECK(ReflectionPad2d({1, 1, 2, 0}).to_string() == "ReflectionPad2d((1, 1, 2, 0))");
    CHECK(ReplicationPad1d({1, 2}).to_string() == "ReplicationPad1d((1, 2))");
    CHECK(ReplicationPad2d(1).to_string() == "ReplicationPad2d((1, 1, 1, 1))");
    CHECK_THROWS_WITH(ReflectionPad2d({1, 2, 3}), Catch::Contains("ReflectionPad2d: padding takes one size or 4"));
    CHECK(Upsample(UpsampleOptions{.scale_factor = std::vector<double>{2}}).to_string() ==
          "Upsample(scale_factor=2.0, mode=nearest)");
    CHECK(Upsample(UpsampleOptions{.size = std::vector<int64_t>{3, 4}, .mode = "bilinear", .align_corners = true})
              .to_string() == "Upsample(size=(3, 4), mode=bilinear)");
    CHECK(Upsample(UpsampleOptions{.scale_factor = std::vector<double>{2, 3}}).to_string() ==
          "Upsample(scale_factor=(2.0, 3.0), mode=nearest)");
    CHECK_THROWS_WITH(Upsample(), Catch::Contains("Upsample: give exactly one of size and scale_factor"));
    CHECK(KLDivLoss().options().reduction.reduction == kMean);

    const Tensor x = rand({2, 3, 7, 6});
    const Tensor s = rand({2, 3, 9});
    CHECK(test::bit_equal(MaxPool1d(MaxPool1dOptions{.kernel_size = 3, .stride = 2, .padding = 1})(s),
                          max_pool1d(s, 3, 2, 1)));
    CHECK(std::get<1>(MaxPool1d(2).forward_with_indices(s)).dtype() == kInt64);
    CHECK(test::bit_equal(AvgPool1d(3)(s), avg_pool1d(s, 3)));
    CHECK(test::bit_equal(AdaptiveAvgPool1d(4)(s), adaptive_avg_pool1d(s, 4)));
    CHECK(test::bit_equal(AdaptiveMaxPool1d(4)(s), adaptive_max_pool1d(s, 4)));
    CHECK(test::bit_equal(AdaptiveMaxPool2d({2, 3})(x), adaptive_max_pool2d(x, {2, 3})));
    CHECK(AdaptiveMaxPool2d(1)(x).shape() == Shape{2, 3, 1, 1});
    require_close(AdaptiveMaxPool2d(1)(x).view({2, 3}), amax(x, {2, 3}), 0.0, "global max pooling");
    CHECK(test::bit_equal(ReflectionPad2d({1, 2, 0, 3})(x), pad(x, {1, 2, 0, 3}, "reflect")));
    CHECK(test::bit_equal(ConstantPad1d({2}, -1.0)(s), pad(s, {2, 2}, "constant", -1.0)));
    CHECK(test::bit_equal(Upsample(UpsampleOptions{.scale_factor = std::vector<double>{2}, .mode = "bilinear"})(x),
                          interpolate(x, {.scale_factor = std::vector<double>{2}, .mode = "bilinear"})));
    // The layers' gradients.
    Generator gen(5);
    const Tensor xg = randn({2, 2, 5, 4}, gen).requires_grad_();
    Upsample bilinear(UpsampleOptions{.size = std::vector<int64_t>{7, 3}, .mode = "bilinear", .align_corners = true});
    require_gradcheck(gradcheck(bilinear, xg));
    ReplicationPad2d replicate({2, 1, 0, 3});
    require_gradcheck(gradcheck(replicate, xg));
    ConvTranspose2d up(ConvTranspose2dOptions{.in_channels = 2, .out_channels = 3, .kernel_size = 3, .stride = 2,
                                              .padding = 1, .output_padding = 1});
    require_gradcheck(gradcheck(up, xg));
    Conv1d conv(Conv1dOptions{.in_channels = 2, .out_channels = 3, .kernel_size = 3, .padding = "same"});
    require_gradcheck(gradcheck(conv, randn({2, 2, 6}, gen).requires_grad_()));
}

TEST_CASE("the issue-12 CNN: PyTorch's repr and state_dict with every normalisation, and it trains", "[nn][conv]") {
    const auto g = test::golden("conv_norm.safetensors");
    for (const std::string norm : {"batch", "group", "layer", "instance", "none"}) {
        INFO("norm " << norm);
        Sequential model = cnn(norm);
        CHECK(model.to_string() == g.metadata.at("cnn." + norm + ".repr"));
        CHECK(describe(model.state_dict()) == g.metadata.at("cnn." + norm + ".state_dict"));
    }
    // clone() copies every layer: the same repr and state, its own storage, the same outputs.
    for (const std::string norm : {"batch", "group", "instance"}) {
        INFO("clone, norm " << norm);
        Sequential model = cnn(norm);
        model(rand({2, 1, 28, 28}));  // running statistics move
        const std::shared_ptr<Module> copy = model.clone();
        CHECK(copy->to_string() == model.to_string());
        const NamedTensors a = model.state_dict(), b = copy->state_dict();
        REQUIRE(a.size() == b.size());
        for (size_t i = 0; i < a.size(); ++i) {
            INFO(a[i].first);
            CHECK(a[i].first == b[i].first);
            CHECK(test::bit_equal(a[i].second, b[i].second));
            CHECK_FALSE(a[i].second.shares_storage(b[i].second));
        }
        model.eval();
        copy->eval();
        const Tensor x = rand({2, 1, 28, 28});
        NoGradGuard no_grad;
        CHECK(test::bit_equal((*copy)(x), model(x)));
    }
    // A few SGD steps on a fixed batch of 8 random images bring the loss down.
    manual_seed(3);
    Sequential model = cnn("batch");
    Generator gen(4);
    const Tensor images = rand({8, 1, 28, 28}, gen);
    const Tensor labels = from_vector(std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}, {8});
    float first = 0.0f, last = 0.0f;
    for (int step = 0; step < 8; ++step) {
        model.zero_grad();
        Tensor loss = cross_entropy(model(images), labels);
        loss.backward();
        NoGradGuard no_grad;
        for (Tensor& p : model.parameters()) p.add_(p.grad(), -0.05f);
        (step == 0 ? first : last) = loss.item();
    }
    INFO("loss " << first << " -> " << last);
    CHECK(last < 0.5f * first);
}
