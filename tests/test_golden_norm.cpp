// Parity with PyTorch for the other normalisations (goldens from tests/golden/make_goldens.py):
// BatchNorm1d over several training steps (outputs, gradients and the evolving running
// statistics, then eval mode) and RMSNorm, each through the module and through the functional op;
// the batch-of-one error; hand checks of the running-statistics updates; and the train/eval facts
// the `normnet compare` command relies on (LayerNorm ignores the mode, BatchNorm's eval output of a
// sample does not depend on the rest of its batch).
#include <optional>
#include <string>
#include <vector>

#include "nn/repr.hpp"
#include "test_helpers.hpp"

using namespace normnet;
using test::leaf;
using test::require_close;

namespace {

// One BatchNorm golden case: the options it was made with and its number of training steps.
struct BnCase {
    std::string name;
    int steps;
    BatchNorm1dOptions options;
};

std::vector<BnCase> bn_cases() {
    return {
        {"bn_train", 3, {.num_features = 4}},
        {"bn_cma", 3, {.num_features = 4, .momentum = std::nullopt}},
        {"bn_3d", 2, {.num_features = 4}},
        {"bn_noaffine", 2, {.num_features = 4, .affine = false}},
        {"bn_nostats", 1, {.num_features = 4, .track_running_stats = false}},
    };
}

// Checks the golden metadata agrees with the options the test builds (guards against a renamed case).
void check_bn_metadata(const SafetensorsData& g, const BnCase& bc) {
    const auto& o = bc.options;
    CHECK(g.metadata.at(bc.name + ".num_features") == std::to_string(o.num_features));
    CHECK(g.metadata.at(bc.name + ".eps") == detail::python_float_repr(o.eps));
    CHECK(g.metadata.at(bc.name + ".momentum") == (o.momentum ? detail::python_float_repr(*o.momentum) : "None"));
    CHECK(g.metadata.at(bc.name + ".affine") == (o.affine ? "True" : "False"));
    CHECK(g.metadata.at(bc.name + ".track_running_stats") == (o.track_running_stats ? "True" : "False"));
    CHECK(g.metadata.at(bc.name + ".steps") == std::to_string(bc.steps));
}

// Every step of a golden case through BatchNorm1d, then eval().
void check_bn_module(const SafetensorsData& g, const BnCase& bc) {
    const std::string& c = bc.name;
    INFO("module, case " << c);
    BatchNorm1d bn(bc.options);
    if (bc.options.affine) {
        bn.weight.detach().copy_(g.at(c + ".weight"));
        bn.bias.detach().copy_(g.at(c + ".bias"));
    }
    REQUIRE(bn.is_training());
    for (int k = 0; k < bc.steps; ++k) {
        const std::string s = std::to_string(k);
        INFO("step " << k);
        bn.zero_grad();
        Tensor x = leaf(g.at(c + ".x" + s));
        Tensor y = bn(x);
        require_close(y, g.at(c + ".y" + s), 1e-5, c + ".y" + s);
        y.backward(g.at(c + ".dy" + s));
        require_close(x.grad(), g.at(c + ".dx" + s), 1e-5, c + ".dx" + s);
        if (bc.options.affine) {
            require_close(bn.weight.grad(), g.at(c + ".dweight" + s), 1e-5, c + ".dweight" + s);
            require_close(bn.bias.grad(), g.at(c + ".dbias" + s), 1e-5, c + ".dbias" + s);
        }
        if (bc.options.track_running_stats) {
            require_close(bn.running_mean, g.at(c + ".running_mean" + s), 1e-5, c + ".running_mean" + s);
            require_close(bn.running_var, g.at(c + ".running_var" + s), 1e-5, c + ".running_var" + s);
            require_close(bn.num_batches_tracked, g.at(c + ".num_batches_tracked" + s), 0.0,
                          c + ".num_batches_tracked" + s);
        } else {
            CHECK_FALSE(bn.running_mean.defined());
            CHECK(bn.named_buffers().empty());
        }
    }
    // The affine parameters are not updated (no optimizer): still the stored initial values.
    if (bc.options.affine) {
        require_close(bn.weight, g.at(c + ".weight"), 0.0, c + ".weight unchanged");
        require_close(bn.bias, g.at(c + ".bias"), 0.0, c + ".bias unchanged");
    }
    bn.eval();
    NoGradGuard no_grad;
    require_close(bn(g.at(c + ".x_eval")), g.at(c + ".y_eval"), 1e-5, c + ".y_eval");
}

// The same steps through the functional batch_norm, with the caller owning the running
// statistics and counting num_batches_tracked (as the module does).
void check_bn_functional(const SafetensorsData& g, const BnCase& bc) {
    const std::string& c = bc.name;
    INFO("functional, case " << c);
    const auto& o = bc.options;
    Tensor w = o.affine ? leaf(g.at(c + ".weight")) : Tensor();
    Tensor b = o.affine ? leaf(g.at(c + ".bias")) : Tensor();
    Tensor rm = o.track_running_stats ? zeros({o.num_features}) : Tensor();
    Tensor rv = o.track_running_stats ? ones({o.num_features}) : Tensor();
    int64_t tracked = 0;
    for (int k = 0; k < bc.steps; ++k) {
        const std::string s = std::to_string(k);
        INFO("step " << k);
        if (w.defined()) w.set_grad(Tensor());
        if (b.defined()) b.set_grad(Tensor());
        if (o.track_running_stats) ++tracked;
        Tensor x = leaf(g.at(c + ".x" + s));
        Tensor y = batch_norm(x, rm, rv, w, b, /*training=*/true, o.momentum, o.eps, tracked);
        require_close(y, g.at(c + ".y" + s), 1e-5, c + ".y" + s);
        y.backward(g.at(c + ".dy" + s));
        require_close(x.grad(), g.at(c + ".dx" + s), 1e-5, c + ".dx" + s);
        if (o.affine) {
            require_close(w.grad(), g.at(c + ".dweight" + s), 1e-5, c + ".dweight" + s);
            require_close(b.grad(), g.at(c + ".dbias" + s), 1e-5, c + ".dbias" + s);
        }
        if (o.track_running_stats) {
            require_close(rm, g.at(c + ".running_mean" + s), 1e-5, c + ".running_mean" + s);
            require_close(rv, g.at(c + ".running_var" + s), 1e-5, c + ".running_var" + s);
            CHECK(static_cast<float>(tracked) == g.at(c + ".num_batches_tracked" + s).item());
        }
    }
    // Eval: running statistics when there are some; as F.batch_norm, none is an error (the module
    // passes training=true then: the golden's y_eval is the batch's own statistics).
    NoGradGuard no_grad;
    const bool batch_stats = !o.track_running_stats;
    require_close(batch_norm(g.at(c + ".x_eval"), rm, rv, w, b, /*training=*/batch_stats, o.momentum, o.eps),
                  g.at(c + ".y_eval"), 1e-5, c + ".y_eval");
    if (!o.track_running_stats) {
        CHECK_THROWS_WITH(batch_norm(g.at(c + ".x_eval"), rm, rv, w, b, /*training=*/false),
                          "running_mean must be defined in evaluation mode");
    }
}

// One RMSNorm golden case through RMSNorm and rms_norm.
void check_rms_case(const SafetensorsData& g, const std::string& c, const std::vector<int64_t>& normalized_shape,
                    bool affine, std::optional<double> eps) {
    INFO("case " << c);
    CHECK(g.metadata.at(c + ".normalized_shape") == Shape(normalized_shape).str());
    CHECK(g.metadata.at(c + ".affine") == (affine ? "True" : "False"));
    {
        INFO("functional");
        Tensor x = leaf(g.at(c + ".x"));
        Tensor w = affine ? leaf(g.at(c + ".weight")) : Tensor();
        Tensor y = rms_norm(x, normalized_shape, w, eps);
        require_close(y, g.at(c + ".y"), 1e-5, c + ".y");
        y.backward(g.at(c + ".dy"));
        require_close(x.grad(), g.at(c + ".dx"), 1e-5, c + ".dx");
        if (affine) require_close(w.grad(), g.at(c + ".dweight"), 1e-5, c + ".dweight");
    }
    {
        INFO("module");
        RMSNorm rms({.normalized_shape = normalized_shape, .eps = eps, .elementwise_affine = affine});
        CHECK(rms.weight.defined() == affine);
        CHECK(rms.parameters().size() == (affine ? 1u : 0u));
        if (affine) rms.weight.detach().copy_(g.at(c + ".weight"));
        Tensor x = leaf(g.at(c + ".x"));
        Tensor y = rms(x);
        require_close(y, g.at(c + ".y"), 1e-5, c + ".y");
        y.backward(g.at(c + ".dy"));
        require_close(x.grad(), g.at(c + ".dx"), 1e-5, c + ".dx");
        if (affine) require_close(rms.weight.grad(), g.at(c + ".dweight"), 1e-5, c + ".dweight");
    }
}

// Per-channel mean and unbiased variance of x [N, C], in double.
void channel_mean_var(const Tensor& x, std::vector<double>& mean, std::vector<double>& unbiased_var) {
    const int64_t N = x.size(0), C = x.size(1);
    const auto v = x.to_vector();
    mean.assign(static_cast<size_t>(C), 0.0);
    unbiased_var.assign(static_cast<size_t>(C), 0.0);
    for (int64_t c = 0; c < C; ++c) {
        double s = 0.0;
        for (int64_t n = 0; n < N; ++n) s += v[static_cast<size_t>(n * C + c)];
        const double m = s / static_cast<double>(N);
        double sq = 0.0;
        for (int64_t n = 0; n < N; ++n) {
            const double d = v[static_cast<size_t>(n * C + c)] - m;
            sq += d * d;
        }
        mean[static_cast<size_t>(c)] = m;
        unbiased_var[static_cast<size_t>(c)] = sq / static_cast<double>(N - 1);
    }
}

Tensor to_tensor(const std::vector<double>& v) {
    return from_vector(std::vector<float>(v.begin(), v.end()), {static_cast<int64_t>(v.size())});
}

// True when a and b differ by more than the golden tolerance somewhere (the check can fail).
bool worst_violation_exceeds(const Tensor& a, const Tensor& b) { return test::worst_violation(a, b, 1e-5) > 0.0; }

bool bitwise_equal(const Tensor& a, const Tensor& b) { return a.shape() == b.shape() && a.to_vector() == b.to_vector(); }

}  // namespace

TEST_CASE("golden: BatchNorm1d, every case through the module", "[golden][batch_norm]") {
    const auto g = test::golden("batch_norm.safetensors");
    for (const auto& bc : bn_cases()) {
        check_bn_metadata(g, bc);
        check_bn_module(g, bc);
    }
}

TEST_CASE("golden: batch_norm, every case through the functional op", "[golden][batch_norm]") {
    const auto g = test::golden("batch_norm.safetensors");
    for (const auto& bc : bn_cases()) check_bn_functional(g, bc);
}

TEST_CASE("golden: BatchNorm1d rejects a batch of one in training and loses nothing", "[golden][batch_norm]") {
    const auto g = test::golden("batch_norm.safetensors");
    const std::string expected = "Expected more than 1 value per channel when training, got input size [1, 300]";
    // PyTorch's own text differs only in how it prints the size.
    CHECK(g.metadata.at("bn_error.message") ==
          "Expected more than 1 value per channel when training, got input size torch.Size([1, 300])");

    BatchNorm1d bn(300);
    {
        // Non-trivial statistics first, so "unchanged" is not just "still the defaults".
        Generator gen(11);
        bn.weight.detach().normal_(1.0f, 0.3f, gen);
        bn.bias.detach().normal_(0.0f, 0.3f, gen);
        bn(add(mul(randn({16, 300}, gen), 2.0f), 1.0f));
    }
    const Tensor mean_before = bn.running_mean.clone(), var_before = bn.running_var.clone();
    const Tensor weight_before = bn.weight.detach().clone(), bias_before = bn.bias.detach().clone();
    REQUIRE(bn.num_batches_tracked.item() == 1.0f);

    REQUIRE(bn.is_training());
    CHECK_THROWS_AS(bn(zeros({1, 300})), Error);
    CHECK_THROWS_WITH(bn(zeros({1, 300})), expected);
    // [N, C, L] counts N * L values per channel: [1, 300, 1] is a batch of one too.
    CHECK_THROWS_WITH(bn(zeros({1, 300, 1})),
                      "Expected more than 1 value per channel when training, got input size [1, 300, 1]");
    {
        BatchNorm1d other(300);  // two values per channel are enough (as PyTorch)
        CHECK_NOTHROW(other(randn({1, 300, 2})));
    }
    CHECK_THROWS_WITH(bn(zeros({1, 300})), expected);
    CHECK(bitwise_equal(bn.running_mean, mean_before));
    CHECK(bitwise_equal(bn.running_var, var_before));
    // As torch.nn.BatchNorm1d: the module counts a batch before batch_norm rejects it (four
    // rejected batches above), so with momentum=None later averages weigh as PyTorch's do.
    CHECK(bn.num_batches_tracked.item<int64_t>() == 5);
    CHECK(bitwise_equal(bn.weight.detach(), weight_before));
    CHECK(bitwise_equal(bn.bias.detach(), bias_before));
    CHECK(bn.is_training());

    // The functional op says the same and leaves the caller's statistics alone.
    Tensor rm = bn.running_mean.clone(), rv = bn.running_var.clone();
    CHECK_THROWS_WITH(batch_norm(zeros({1, 300}), rm, rv, bn.weight, bn.bias, true, 0.1, 1e-5, 2), expected);
    CHECK_THROWS_WITH(batch_norm(zeros({1, 300}), Tensor(), Tensor(), Tensor(), Tensor(), true), expected);
    CHECK(bitwise_equal(rm, mean_before));
    CHECK(bitwise_equal(rv, var_before));

    // Without running statistics, eval mode still normalises with the batch's own: one is too few.
    BatchNorm1d nostats({.num_features = 300, .track_running_stats = false});
    nostats.eval();
    CHECK_THROWS_WITH(nostats(zeros({1, 300})), expected);

    // In eval mode a batch of one uses the running statistics and works.
    bn.eval();
    Generator gen(12);
    const Tensor x = randn({1, 300}, gen);
    Tensor y;
    REQUIRE_NOTHROW(y = bn(x));
    const auto xv = x.to_vector(), m = mean_before.to_vector(), v = var_before.to_vector();
    const auto w = weight_before.to_vector(), b = bias_before.to_vector();
    std::vector<float> want(300);
    for (size_t c = 0; c < 300; ++c) {
        const double xhat = (xv[c] - static_cast<double>(m[c])) / std::sqrt(static_cast<double>(v[c]) + 1e-5);
        want[c] = static_cast<float>(xhat * w[c] + b[c]);
    }
    const Tensor expected_y = from_vector(want, {1, 300});
    require_close(y, expected_y, 1e-5, "eval batch of one");
    CHECK(bitwise_equal(bn.running_mean, mean_before));
    CHECK(bitwise_equal(bn.running_var, var_before));
    CHECK(bn.num_batches_tracked.item<int64_t>() == 5);
}

TEST_CASE("batch_norm is stable for 1e4 + noise (float64 reference to 1e-4)", "[golden][batch_norm]") {
    // As layer_norm's ln_offset golden: a large common offset with a spread of about 0.29, where
    // rounding the mean to float32 before subtracting it costs ~1e-3. Reference in double on
    // exactly the float32 inputs.
    Generator gen(41);
    const int64_t N = 64, C = 8;
    const Tensor x = add(rand({N, C}, gen), 1e4f);
    const auto xv = x.to_vector();
    std::vector<double> mean, var;
    channel_mean_var(x, mean, var);
    auto reference = [&](const std::vector<double>& m, const std::vector<double>& biased_var) {
        std::vector<float> y(xv.size());
        for (int64_t n = 0; n < N; ++n) {
            for (size_t c = 0; c < static_cast<size_t>(C); ++c) {
                const size_t i = static_cast<size_t>(n * C) + c;
                y[i] = static_cast<float>((xv[i] - m[c]) / std::sqrt(biased_var[c] + 1e-5));
            }
        }
        return from_vector(y, {N, C});
    };
    std::vector<double> biased(var);
    for (double& v : biased) v *= static_cast<double>(N - 1) / static_cast<double>(N);
    const Tensor want = reference(mean, biased);
    auto worst = [](const Tensor& a, const Tensor& b) { return test::worst_violation(a, b, 0.0); };
    {
        INFO("training, functional: max |y - y64| = " << worst(batch_norm(x, {}, {}, {}, {}, true), want));
        CHECK(worst(batch_norm(x, {}, {}, {}, {}, true), want) < 1e-4);
    }
    BatchNorm1d bn(C);
    const Tensor y_train = bn(x);
    {
        INFO("training, module: max |y - y64| = " << worst(y_train, want));
        CHECK(worst(y_train, want) < 1e-4);
    }
    // Eval with running statistics of the same size: the offset is in running_mean.
    std::vector<double> rm(mean), rv(static_cast<size_t>(C), 1.0 / 12.0);
    for (double& m : rm) m = static_cast<float>(m + 0.01);  // what a float buffer can hold
    bn.running_mean.copy_(to_tensor(rm));
    bn.running_var.copy_(to_tensor(rv));
    bn.eval();
    const Tensor y_eval = bn(x);
    std::vector<double> rv_f;
    for (float v : bn.running_var.to_vector()) rv_f.push_back(v);
    const Tensor want_eval = reference(rm, rv_f);
    INFO("eval: max |y - y64| = " << worst(y_eval, want_eval));
    CHECK(worst(y_eval, want_eval) < 1e-4);
}

TEST_CASE("batch_norm running statistics: momentum 0.1 and the cumulative average, by hand", "[golden][batch_norm]") {
    Generator gen(21);
    std::vector<double> mean, var;
    SECTION("momentum 0.1, one step") {
        BatchNorm1d bn(5);
        const Tensor x = add(mul(randn({7, 5}, gen), 3.0f), 2.0f);
        bn(x);
        channel_mean_var(x, mean, var);
        std::vector<double> want_mean, want_var;
        for (size_t c = 0; c < mean.size(); ++c) {
            want_mean.push_back(0.1 * mean[c]);
            want_var.push_back(0.9 + 0.1 * var[c]);
        }
        require_close(bn.running_mean, to_tensor(want_mean), 1e-6, "running_mean");
        require_close(bn.running_var, to_tensor(want_var), 1e-6, "running_var");
        CHECK(bn.num_batches_tracked.item() == 1.0f);

        // The functional op, given the same batch, does the same update.
        Tensor rm = zeros({5}), rv = ones({5});
        batch_norm(x, rm, rv, Tensor(), Tensor(), true, 0.1);
        require_close(rm, bn.running_mean, 0.0, "functional running_mean");
        require_close(rv, bn.running_var, 0.0, "functional running_var");
    }
    SECTION("momentum empty: the plain average of the batches seen") {
        BatchNorm1d bn({.num_features = 5, .momentum = std::nullopt});
        Tensor rm = zeros({5}), rv = ones({5});
        std::vector<double> sum_mean(5, 0.0), sum_var(5, 0.0);
        for (int k = 1; k <= 3; ++k) {
            // Different spreads and offsets per batch, so a wrong weighting shows.
            const Tensor x = add(mul(randn({6, 5}, gen), static_cast<float>(k)), static_cast<float>(3 * k));
            bn(x);
            batch_norm(x, rm, rv, Tensor(), Tensor(), true, std::nullopt, 1e-5, k);
            channel_mean_var(x, mean, var);
            for (size_t c = 0; c < 5; ++c) sum_mean[c] += mean[c], sum_var[c] += var[c];
        }
        std::vector<double> avg_mean, avg_var;
        for (size_t c = 0; c < 5; ++c) avg_mean.push_back(sum_mean[c] / 3.0), avg_var.push_back(sum_var[c] / 3.0);
        require_close(bn.running_mean, to_tensor(avg_mean), 1e-6, "running_mean = mean of batch means");
        // The initial running_var of 1 is weighted by (1 - 1/1) = 0: gone after the first batch.
        require_close(bn.running_var, to_tensor(avg_var), 1e-6, "running_var = mean of unbiased variances");
        CHECK(bn.num_batches_tracked.item() == 3.0f);
        require_close(rm, bn.running_mean, 0.0, "functional running_mean");
        require_close(rv, bn.running_var, 0.0, "functional running_var");
    }
}

TEST_CASE("golden: RMSNorm and rms_norm", "[golden][rms_norm]") {
    const auto g = test::golden("rms_norm.safetensors");
    CHECK(g.metadata.at("rms6.eps") == "1e-05");
    CHECK(g.metadata.at("rms_noaffine.eps") == "1.1920928955078125e-07");
    check_rms_case(g, "rms6", {6}, true, 1e-5);
    check_rms_case(g, "rms23", {2, 3}, true, 1e-5);
    // eps empty: float32's machine epsilon, the value the golden was made with.
    check_rms_case(g, "rms_noaffine", {6}, false, std::nullopt);
    check_rms_case(g, "rms_noaffine", {6}, false, 1.1920928955078125e-07);
}

TEST_CASE("rms_norm: the default eps is float32's machine epsilon", "[golden][rms_norm]") {
    // On the goldens' unit-scale inputs eps barely matters; on tiny inputs it dominates, so a
    // wrong default (e.g. 1e-5, or 1e-6) shows. Reference in double.
    const Tensor x = mul(tensor({1.0f, -2.0f, 3.0f, 0.5f}).view({1, 4}), 1e-4f);
    const auto xv = x.to_vector();
    double ms = 0.0;
    for (float v : xv) ms += static_cast<double>(v) * v;
    ms /= 4.0;
    const double eps = 1.1920928955078125e-07;
    std::vector<float> want;
    for (float v : xv) want.push_back(static_cast<float>(v / std::sqrt(ms + eps)));
    const Tensor expected = from_vector(want, {1, 4});
    require_close(rms_norm(x, {4}), expected, 1e-5, "rms_norm default eps");
    require_close(RMSNorm({4})(x), expected, 1e-5, "RMSNorm default eps");
    CHECK(worst_violation_exceeds(rms_norm(x, {4}, Tensor(), 1e-5), expected));
}

TEST_CASE("golden: LayerNorm modules without bias or affine", "[golden][layer_norm]") {
    const auto g = test::golden("layer_norm.safetensors");
    {
        INFO("ln_nobias through LayerNorm(bias=false)");
        LayerNorm ln(LayerNormOptions{.normalized_shape = {3}, .bias = false});
        REQUIRE(ln.weight.defined());
        CHECK_FALSE(ln.bias.defined());
        CHECK(ln.parameters().size() == 1u);
        ln.weight.detach().copy_(g.at("ln_nobias.weight"));
        Tensor x = leaf(g.at("ln_nobias.x"));
        Tensor y = ln(x);
        require_close(y, g.at("ln_nobias.y"), 1e-5, "ln_nobias.y");
        y.backward(g.at("ln_nobias.dy"));
        require_close(x.grad(), g.at("ln_nobias.dx"), 1e-5, "ln_nobias.dx");
        require_close(ln.weight.grad(), g.at("ln_nobias.dweight"), 1e-5, "ln_nobias.dweight");
    }
    {
        INFO("ln_noaffine through LayerNorm(elementwise_affine=false)");
        LayerNorm ln(LayerNormOptions{.normalized_shape = {3}, .elementwise_affine = false});
        CHECK(ln.parameters().empty());
        Tensor x = leaf(g.at("ln_noaffine.x"));
        Tensor y = ln(x);
        require_close(y, g.at("ln_noaffine.y"), 1e-5, "ln_noaffine.y");
        y.backward(g.at("ln_noaffine.dy"));
        require_close(x.grad(), g.at("ln_noaffine.dx"), 1e-5, "ln_noaffine.dx");
    }
}

TEST_CASE("train/eval: LayerNorm gives identical outputs in both modes", "[golden][batch_norm]") {
    Generator gen(31);
    const Tensor x = randn({6, 10}, gen);
    for (const LayerNormOptions& o :
         {LayerNormOptions{.normalized_shape = {10}}, LayerNormOptions{.normalized_shape = {10}, .bias = false},
          LayerNormOptions{.normalized_shape = {10}, .elementwise_affine = false}}) {
        LayerNorm ln(o);
        if (ln.weight.defined()) ln.weight.detach().normal_(1.0f, 0.3f, gen);
        if (ln.bias.defined()) ln.bias.detach().normal_(0.0f, 0.3f, gen);
        REQUIRE(ln.is_training());
        const Tensor y_train = ln(x);
        const auto state_before = ln.state_dict();
        ln.eval();
        const Tensor y_eval = ln(x);
        CHECK(bitwise_equal(y_train, y_eval));
        CHECK(state_before.size() == ln.state_dict().size());
        // And the mode has no lasting effect: back in training, the same again.
        ln.train();
        CHECK(bitwise_equal(ln(x), y_eval));
    }
}

TEST_CASE("train/eval: BatchNorm1d in eval mode treats every sample alone", "[golden][batch_norm]") {
    const auto g = test::golden("batch_norm.safetensors");
    for (const std::string c : {"bn_train", "bn_3d"}) {
        INFO("case " << c);
        BatchNorm1d bn(4);
        bn.weight.detach().copy_(g.at(c + ".weight"));
        bn.bias.detach().copy_(g.at(c + ".bias"));
        for (int k = 0; k < (c == "bn_3d" ? 2 : 3); ++k) bn(g.at(c + ".x" + std::to_string(k)));
        bn.eval();
        NoGradGuard no_grad;
        const Tensor x = g.at(c + ".x_eval");
        const Tensor y = bn(x);
        require_close(y, g.at(c + ".y_eval"), 1e-5, c + ".y_eval");
        const Tensor mean_before = bn.running_mean.clone(), var_before = bn.running_var.clone();
        const float tracked_before = bn.num_batches_tracked.item();
        for (int64_t i = 0; i < x.size(0); ++i) {
            INFO("sample " << i);
            CHECK(bitwise_equal(bn(x.narrow(0, i, 1)), y.narrow(0, i, 1)));
        }
        // Nor does eval mode touch the running statistics.
        CHECK(bitwise_equal(bn.running_mean, mean_before));
        CHECK(bitwise_equal(bn.running_var, var_before));
        CHECK(bn.num_batches_tracked.item() == tracked_before);
        // In training mode, by contrast, a sample's output depends on its batch.
        bn.train();
        const Tensor y_train = bn(x);
        CHECK_FALSE(bitwise_equal(y_train, y));
    }
}
