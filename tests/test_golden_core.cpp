// Parity with PyTorch (goldens from tests/golden/make_goldens.py): LayerNorm as in the seed
// documents, Linear, the losses, and the whole seed model; plus LayerNorm's numerical stability.
#include "test_helpers.hpp"

using namespace normnet;
using test::leaf;
using test::require_close;

namespace {

// Runs layer_norm on a golden case and compares output and gradients.
void check_layer_norm_case(const SafetensorsData& g, const std::string& c, const Shape& normalized_shape,
                           bool has_weight, bool has_bias, double eps) {
    INFO("case " << c);
    Tensor x = leaf(g.at(c + ".x"));
    Tensor w = has_weight ? leaf(g.at(c + ".weight")) : Tensor();
    Tensor b = has_bias ? leaf(g.at(c + ".bias")) : Tensor();
    Tensor y = layer_norm(x, normalized_shape, w, b, eps);
    require_close(y, g.at(c + ".y"), 1e-5, c + ".y");
    y.backward(g.at(c + ".dy"));
    require_close(x.grad(), g.at(c + ".dx"), 1e-5, c + ".dx");
    if (has_weight) require_close(w.grad(), g.at(c + ".dweight"), 1e-5, c + ".dweight");
    if (has_bias) require_close(b.grad(), g.at(c + ".dbias"), 1e-5, c + ".dbias");
}

}  // namespace

TEST_CASE("golden: layer_norm on the seed document's [4, 2, 3] example", "[golden][layer_norm]") {
    const auto g = test::golden("layer_norm.safetensors");
    check_layer_norm_case(g, "ln3", {3}, true, true, 1e-5);
    check_layer_norm_case(g, "ln23", {2, 3}, true, true, 1e-5);
    check_layer_norm_case(g, "ln_noaffine", {3}, false, false, 1e-5);
    check_layer_norm_case(g, "ln_nobias", {3}, true, false, 1e-5);
    check_layer_norm_case(g, "ln_eps", {3}, true, true, 1e-3);
    LayerNorm ln({3});
    require_close(ln(g.at("ln_default.x")), g.at("ln_default.y"), 1e-5, "ln_default");
}

TEST_CASE("golden: layer_norm shape error has the seed document's message, verbatim", "[golden][layer_norm]") {
    const auto g = test::golden("layer_norm.safetensors");
    const std::string expected = "Given normalized_shape=[2], expected input with shape [*, 2], but got input of size[4, 2, 3]";
    CHECK(g.metadata.at("ln_error.message") == expected);
    CHECK_THROWS_WITH(layer_norm(rand({4, 2, 3}), {2}), expected);
    LayerNorm ln({2});
    CHECK_THROWS_WITH(ln(rand({4, 2, 3})), expected);
    CHECK_THROWS_WITH(layer_norm(rand({4, 2, 3}), {4, 2}),
                      "Given normalized_shape=[4, 2], expected input with shape [*, 4, 2], but got input of size[4, 2, 3]");
    CHECK_THROWS_AS(layer_norm(rand({4, 2, 3}), {3}, ones({2})), Error);
}

TEST_CASE("golden: layer_norm is stable for 1e4 + noise (float64 reference to 1e-4)", "[golden][layer_norm]") {
    const auto g = test::golden("layer_norm.safetensors");
    const Tensor y = layer_norm(g.at("ln_offset.x"), {300});
    const auto out = y.to_vector();
    const auto ref = g.at("ln_offset.y64").to_vector();
    double worst = 0.0;
    for (size_t i = 0; i < out.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(out[i]) - ref[i]));
    INFO("max |y - y64| = " << worst);
    CHECK(worst < 1e-4);
    // An independent offset check: the same noise with and without 1e4 added normalises alike.
    Generator gen(5);
    Tensor noise = rand({4, 300}, gen);
    require_close(layer_norm(add(noise, 1e4f), {300}), layer_norm(noise, {300}), 2e-2, "offset invariance");
}

TEST_CASE("golden: linear", "[golden][linear]") {
    const auto g = test::golden("linear.safetensors");
    for (const std::string c : {"linear", "linear_nobias", "linear3d"}) {
        INFO("case " << c);
        const bool has_bias = c != "linear_nobias";
        Tensor x = leaf(g.at(c + ".x")), w = leaf(g.at(c + ".weight"));
        Tensor b = has_bias ? leaf(g.at(c + ".bias")) : Tensor();
        Tensor y = linear(x, w, b);
        require_close(y, g.at(c + ".y"), 1e-5, c + ".y");
        y.backward(g.at(c + ".dy"));
        require_close(x.grad(), g.at(c + ".dx"), 1e-5, c + ".dx");
        require_close(w.grad(), g.at(c + ".dweight"), 1e-5, c + ".dweight");
        if (has_bias) require_close(b.grad(), g.at(c + ".dbias"), 1e-5, c + ".dbias");
    }
}

TEST_CASE("golden: cross_entropy, log_softmax, mse_loss", "[golden][loss]") {
    const auto g = test::golden("loss.safetensors");
    for (const std::string c : {"ce", "ce_large"}) {
        INFO("case " << c);
        Tensor logits = leaf(g.at(c + ".logits"));
        Tensor loss = cross_entropy(logits, test::to_indices(g.at(c + ".target")));
        require_close(loss, g.at(c + ".loss"), 1e-5, c + ".loss");
        loss.backward();
        require_close(logits.grad(), g.at(c + ".dlogits"), 1e-5, c + ".dlogits");
    }
    Tensor x = leaf(g.at("log_softmax.x"));
    Tensor y = log_softmax(x);
    require_close(y, g.at("log_softmax.y"), 1e-5, "log_softmax.y");
    y.backward(g.at("log_softmax.dy"));
    require_close(x.grad(), g.at("log_softmax.dx"), 1e-5, "log_softmax.dx");
    Tensor in = leaf(g.at("mse.input"));
    Tensor l = mse_loss(in, g.at("mse.target"));
    require_close(l, g.at("mse.loss"), 1e-5, "mse.loss");
    l.backward();
    require_close(in.grad(), g.at("mse.dinput"), 1e-5, "mse.dinput");
    CHECK_THROWS_WITH(cross_entropy(zeros({2, 3}), test::labels_of({0, 3})),
                      Catch::Contains("target 3 at index 1 is out of bounds for 3 classes"));
    CHECK_THROWS_WITH(cross_entropy(zeros({2, 3}), test::labels_of({0})),
                      Catch::Contains("target of shape [1] does not match logits of shape [2, 3]"));
    CHECK_THROWS_WITH(cross_entropy(zeros({2, 3}), zeros({2})),
                      Catch::Contains("cross_entropy") && Catch::Contains("int64") && Catch::Contains("float32"));
}

TEST_CASE("golden: the seed model's logits, loss and every gradient match PyTorch", "[golden][seed]") {
    const auto in = test::golden("seed_model_inputs.safetensors");
    const auto out = test::golden("seed_model_outputs.safetensors");
    Sequential model{Linear(784, 300), ReLU(), LayerNorm({300}), Linear(300, 100), ReLU(), LayerNorm({100}),
                     Linear(100, 10)};
    NamedTensors state;
    for (const auto& [name, t] : model.state_dict()) state.emplace_back(name, in.at(name));
    model.load_state_dict(state);
    Tensor logits = model(in.at("x"));
    require_close(logits, out.at("logits"), 1e-5, "logits");
    Tensor loss = cross_entropy(logits, test::to_indices(in.at("target")));
    require_close(loss, out.at("loss"), 1e-5, "loss");
    loss.backward();
    for (const auto& [name, p] : model.named_parameters()) require_close(p.grad(), out.at("grad." + name), 1e-5, name);
}
