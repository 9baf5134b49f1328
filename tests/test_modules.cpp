// Modules: registration, PyTorch's state_dict keys and repr, train/eval, zero_grad, options
// structs, and the seed model overfitting a fixed batch with a hand-written SGD loop.
#include <sstream>

#include "nn/repr.hpp"
#include "test_helpers.hpp"

using namespace normnet;

namespace {
Sequential seed_model() {
    return Sequential{Linear(784, 300), ReLU(), LayerNorm({300}), Linear(300, 100), ReLU(), LayerNorm({100}),
                      Linear(100, 10)};
}

std::vector<std::string> keys(const NamedTensors& named) {
    std::vector<std::string> out;
    for (const auto& [k, v] : named) out.push_back(k);
    return out;
}
}  // namespace

TEST_CASE("modules: the seed model has PyTorch's state_dict keys and repr", "[modules]") {
    Sequential model = seed_model();
    CHECK(keys(model.state_dict()) == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias", "3.weight",
                                                               "3.bias", "5.weight", "5.bias", "6.weight", "6.bias"});
    CHECK(model.parameters().size() == 10);
    CHECK(model.to_string() ==
          "Sequential(\n"
          "  (0): Linear(in_features=784, out_features=300, bias=True)\n"
          "  (1): ReLU()\n"
          "  (2): LayerNorm((300,), eps=1e-05, elementwise_affine=True)\n"
          "  (3): Linear(in_features=300, out_features=100, bias=True)\n"
          "  (4): ReLU()\n"
          "  (5): LayerNorm((100,), eps=1e-05, elementwise_affine=True)\n"
          "  (6): Linear(in_features=100, out_features=10, bias=True)\n"
          ")");
    std::ostringstream printed;
    printed << model;
    CHECK(printed.str() == model.to_string());
    CHECK(model.at<Linear>(0)->weight.shape() == Shape{300, 784});
    CHECK_THROWS_WITH(model.at<Linear>(1), Catch::Contains("is a ReLU"));
}

TEST_CASE("modules: options structs with PyTorch's defaults", "[modules]") {
    LayerNorm a(LayerNormOptions{.normalized_shape = {300}, .eps = 1e-5});
    LayerNorm b({2, 3});
    CHECK(a.options().elementwise_affine);
    CHECK(b.weight.shape() == Shape{2, 3});
    CHECK(LayerNorm(LayerNormOptions{.normalized_shape = {4}, .eps = 1e-3}).extra_repr() == "(4,), eps=0.001, elementwise_affine=True");
    Linear nobias(LinearOptions{.in_features = 3, .out_features = 2, .bias = false});
    CHECK_FALSE(nobias.bias.defined());
    CHECK(keys(nobias.state_dict()) == std::vector<std::string>{"weight"});
    BatchNorm1d bn(300);
    CHECK(bn.to_string() == "BatchNorm1d(300, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
    CHECK(keys(bn.state_dict()) ==
          std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"});
    CHECK(BatchNorm1d(BatchNorm1dOptions{.num_features = 3, .momentum = std::nullopt}).extra_repr().find("momentum=None") != std::string::npos);
    CHECK(RMSNorm({300}).to_string() == "RMSNorm((300,), eps=None, elementwise_affine=True)");
    CHECK(detail::python_float_repr(1e-5) == "1e-05");
    CHECK(detail::python_float_repr(0.1) == "0.1");
    CHECK(detail::python_float_repr(1.0) == "1.0");
    CHECK(detail::python_float_repr(1e16) == "1e+16");
    CHECK(detail::python_float_repr(123.25) == "123.25");
}

TEST_CASE("modules: Linear and LayerNorm initialise as PyTorch does", "[modules]") {
    manual_seed(42);
    Linear lin(784, 300);
    const float bound = 1.0f / std::sqrt(784.0f);
    double sum = 0.0;
    for (float v : lin.weight.to_vector()) {
        REQUIRE(std::abs(v) <= bound);
        sum += v;
    }
    CHECK(std::abs(sum / lin.weight.numel()) < 0.01 * bound);
    for (float v : lin.bias.to_vector()) REQUIRE(std::abs(v) <= bound);
    LayerNorm ln({300});
    CHECK(ln.weight.to_vector() == std::vector<float>(300, 1.0f));
    CHECK(ln.bias.to_vector() == std::vector<float>(300, 0.0f));
    // The same seed gives the same weights.
    manual_seed(42);
    Linear again(784, 300);
    CHECK(again.weight.to_vector() == lin.weight.to_vector());
}

TEST_CASE("modules: train/eval recurse, zero_grad, custom modules and load_state_dict errors", "[modules]") {
    struct Block : Module {
        std::shared_ptr<Linear> fc;
        Tensor scale;
        Block() {
            fc = register_module("fc", Linear(3, 3));
            scale = register_parameter("scale", ones({3}));
            register_buffer("steps", zeros({1}));
        }
        Tensor forward(const Tensor& x) override { return add(x, mul(fc->forward(x), scale)); }
    };
    Sequential model;
    model.push_back(Block());
    model.push_back(std::make_shared<ReLU>());
    CHECK(keys(model.state_dict()) == std::vector<std::string>{"0.scale", "0.steps", "0.fc.weight", "0.fc.bias"});
    CHECK(keys(model.named_parameters()) == std::vector<std::string>{"0.scale", "0.fc.weight", "0.fc.bias"});
    CHECK(model.to_string() ==
          "Sequential(\n  (0): Block(\n    (fc): Linear(in_features=3, out_features=3, bias=True)\n  )\n  (1): ReLU()\n)");
    model.eval();
    CHECK_FALSE(model.is_training());
    CHECK_FALSE(model[0]->is_training());
    CHECK_FALSE(model.at<Block>(0)->fc->is_training());
    model.train();
    CHECK(model.at<Block>(0)->fc->is_training());

    sum(model(ones({2, 3}))).backward();
    CHECK(model.at<Block>(0)->scale.grad().defined());
    model.zero_grad(false);
    CHECK(model.at<Block>(0)->scale.grad().to_vector() == std::vector<float>{0, 0, 0});
    model.zero_grad();
    CHECK_FALSE(model.at<Block>(0)->scale.grad().defined());

    CHECK_THROWS_WITH(model.load_state_dict({{"0.scale", ones({4})}}, false),
                      Catch::Contains("size mismatch for 0.scale"));
    CHECK_THROWS_WITH(model.load_state_dict({{"0.scale", ones({3})}}), Catch::Contains("missing key"));
    CHECK_THROWS_WITH(model.load_state_dict({{"bogus", ones({3})}}), Catch::Contains("unexpected key \"bogus\""));
    Module plain;
    plain.register_parameter("w", ones({1}));
    CHECK_THROWS_WITH(plain.register_parameter("w", ones({1})), Catch::Contains("already registered"));
}

TEST_CASE("modules: the seed model overfits a fixed batch of 64 random images with plain SGD", "[modules][slow]") {
    manual_seed(0);
    Sequential model = seed_model();
    Generator gen(1);
    const Tensor x = rand({64, 784}, gen);
    std::vector<int64_t> classes(64);
    for (auto& label : classes) label = static_cast<int64_t>(gen.below(10));
    const Tensor y = test::labels_of(classes);
    const float lr = 0.01f;
    int64_t correct = 0;
    float loss_value = 0.0f;
    for (int step = 0; step < 300; ++step) {
        model.zero_grad();
        Tensor logits = model(x);
        Tensor loss = cross_entropy(logits, y);
        correct = count_correct(logits, y);
        loss_value = loss.item();
        if (correct == 64) break;
        loss.backward();
        NoGradGuard no_grad;
        for (auto& p : model.parameters()) p.add_(p.grad(), -lr);
    }
    {
        NoGradGuard no_grad;
        correct = count_correct(model(x), y);
    }
    INFO("last loss " << loss_value);
    CHECK(correct == 64);
}
