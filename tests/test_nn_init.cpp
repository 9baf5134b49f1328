// nn::init: gains and fans against PyTorch's formulas; the statistics of each initialiser over
// large tensors (mean, standard deviation, bounds); orthogonality of orthogonal_; seeding;
// parameters that require grad, strided views and zero-element tensors.
#include <cmath>
#include <numbers>

#include "test_helpers.hpp"

using namespace normnet;
namespace init = normnet::nn::init;

namespace {

struct Stats {
    double mean = 0, std = 0, min = INFINITY, max = -INFINITY;
};

Stats stats_of(const Tensor& t) {
    const auto v = t.to_vector<double>();
    Stats s;
    for (double x : v) s.mean += x, s.min = std::min(s.min, x), s.max = std::max(s.max, x);
    s.mean /= static_cast<double>(v.size());
    for (double x : v) s.std += (x - s.mean) * (x - s.mean);
    s.std = std::sqrt(s.std / static_cast<double>(v.size()));
    return s;
}

// Mean and standard deviation of about 1M draws within five standard errors of the target.
void require_moments(const Tensor& t, double mean, double std) {
    const Stats s = stats_of(t);
    const double n = static_cast<double>(t.numel());
    INFO("mean " << s.mean << " (want " << mean << "), std " << s.std << " (want " << std << ")");
    REQUIRE(std::abs(s.mean - mean) <= 5.0 * std / std::sqrt(n));
    REQUIRE(std::abs(s.std - std) <= 5.0 * std / std::sqrt(2.0 * n));
}

// The largest |(Q Q^T - I)_ij| of the rows of a [rows, cols] matrix (rows <= cols), in double.
double row_orthogonality_error(const Tensor& q) {
    const int64_t rows = q.size(0), cols = q.size(1);
    const auto v = q.contiguous().to_vector<double>();
    double worst = 0.0;
    for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < rows; ++j) {
            double dot = 0.0;
            for (int64_t k = 0; k < cols; ++k) dot += v[i * cols + k] * v[j * cols + k];
            worst = std::max(worst, std::abs(dot - (i == j ? 1.0 : 0.0)));
        }
    }
    return worst;
}

}  // namespace

TEST_CASE("init: calculate_gain and the fans are PyTorch's", "[nn][init]") {
    CHECK(init::calculate_gain(kLinear) == 1.0);
    CHECK(init::calculate_gain(kConv2D) == 1.0);
    CHECK(init::calculate_gain(kSigmoid) == 1.0);
    CHECK(init::calculate_gain(kTanh) == 5.0 / 3.0);
    CHECK(init::calculate_gain(kReLU) == std::sqrt(2.0));
    CHECK(init::calculate_gain(kSELU) == 0.75);
    CHECK(init::calculate_gain(kLeakyReLU) == std::sqrt(2.0 / (1.0 + 0.01 * 0.01)));
    CHECK(init::calculate_gain(kLeakyReLU, 0.2) == std::sqrt(2.0 / 1.04));
    CHECK(init::_calculate_fan_in_and_fan_out(empty({300, 784})) == std::tuple<int64_t, int64_t>{784, 300});
    // A convolution's weight [out, in, kh, kw]: the receptive field multiplies both fans.
    CHECK(init::_calculate_fan_in_and_fan_out(empty({64, 32, 3, 5})) == std::tuple<int64_t, int64_t>{32 * 15, 64 * 15});
    CHECK(init::_calculate_correct_fan(empty({64, 32, 3, 5}), kFanOut) == 64 * 15);
    CHECK_THROWS_WITH(init::_calculate_fan_in_and_fan_out(empty({5})),
                      Catch::Contains("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"));
    CHECK_THROWS_WITH(init::xavier_uniform_(empty({5})), Catch::Contains("fewer than 2 dimensions (got [5])"));
}

TEST_CASE("init: uniform_, normal_ and trunc_normal_ have the requested distribution", "[nn][init]") {
    Generator gen(1);
    Tensor t = empty({1000, 1000});
    init::uniform_(t, -2.0, 3.0, gen);
    Stats s = stats_of(t);
    CHECK(s.min >= -2.0);
    CHECK(s.max < 3.0);
    require_moments(t, 0.5, 5.0 / std::sqrt(12.0));
    init::normal_(t, 1.5, 0.25, gen);
    require_moments(t, 1.5, 0.25);
    // Truncated to [a, b] = [mean - 1 std, mean + 1.5 std]: moments of the truncated normal.
    const double mean = 1.0, std = 2.0, a = -1.0, b = 4.0;
    init::trunc_normal_(t, mean, std, a, b, gen);
    s = stats_of(t);
    CHECK(s.min >= a);
    CHECK(s.max <= b);
    const auto pdf = [](double x) { return std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi); };
    const auto cdf = [](double x) { return 0.5 * (1.0 + std::erf(x / std::numbers::sqrt2)); };
    const double al = (a - mean) / std, be = (b - mean) / std, z = cdf(be) - cdf(al);
    const double tmean = mean + std * (pdf(al) - pdf(be)) / z;
    const double tvar = std * std * (1.0 + (al * pdf(al) - be * pdf(be)) / z - std::pow((pdf(al) - pdf(be)) / z, 2));
    require_moments(t, tmean, std::sqrt(tvar));
    // The default [-2, 2] around N(0, 1).
    init::trunc_normal_(t, 0.0, 1.0, -2.0, 2.0, gen);
    s = stats_of(t);
    CHECK(s.min >= -2.0);
    CHECK(s.max <= 2.0);
    CHECK(s.max > 1.99);
}

TEST_CASE("init: xavier and kaiming scale by PyTorch's fans and gains", "[nn][init]") {
    Generator gen(2);
    const int64_t out = 500, in = 2000;  // 1M elements
    Tensor w = empty({out, in});
    const double glorot = std::sqrt(2.0 / (in + out));
    init::xavier_uniform_(w, 2.0, gen);
    Stats s = stats_of(w);
    CHECK(s.max <= 2.0 * std::sqrt(3.0) * glorot);
    CHECK(s.max > 0.99 * 2.0 * std::sqrt(3.0) * glorot);
    require_moments(w, 0.0, 2.0 * glorot);
    init::xavier_normal_(w, 1.0, gen);
    require_moments(w, 0.0, glorot);
    // kaiming_uniform_ with a = sqrt(5) (Linear's default) is U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
    init::kaiming_uniform_(w, std::sqrt(5.0), kFanIn, kLeakyReLU, gen);
    s = stats_of(w);
    CHECK(s.max <= 1.0 / std::sqrt(in) * (1 + 1e-6));
    CHECK(s.min >= -1.0 / std::sqrt(in) * (1 + 1e-6));
    require_moments(w, 0.0, 1.0 / std::sqrt(3.0 * in));
    init::kaiming_uniform_(w, 0.0, kFanOut, kReLU, gen);
    require_moments(w, 0.0, std::sqrt(2.0) / std::sqrt(out));
    init::kaiming_normal_(w, 0.0, kFanIn, kReLU, gen);
    require_moments(w, 0.0, std::sqrt(2.0 / in));
    // The default nonlinearity is leaky_relu with a = 0, i.e. relu's gain; a conv weight's fan
    // includes its receptive field.
    Tensor conv = empty({64, 64, 16, 16});
    init::kaiming_normal_(conv, 0.0, kFanOut, kLeakyReLU, gen);
    require_moments(conv, 0.0, std::sqrt(2.0 / (64 * 256)));
}

TEST_CASE("init: orthogonal_ gives orthonormal rows or columns, times the gain", "[nn][init]") {
    Generator gen(3);
    Tensor wide = empty({30, 200});
    init::orthogonal_(wide, 1.0, gen);
    CHECK(row_orthogonality_error(wide) <= 1e-5);
    Tensor tall = empty({200, 30});
    init::orthogonal_(tall, 1.0, gen);
    CHECK(row_orthogonality_error(tall.t()) <= 1e-5);
    Tensor square = empty({64, 64});
    init::orthogonal_(square, 2.0, gen);
    CHECK(row_orthogonality_error(mul(square, 0.5f)) <= 1e-5);
    CHECK(row_orthogonality_error(mul(square, 0.5f).t()) <= 1e-5);
    // A 4-D weight is orthogonalised as [size(0), numel / size(0)].
    Tensor conv = empty({8, 4, 3, 3});
    init::orthogonal_(conv, 1.0, gen);
    CHECK(row_orthogonality_error(conv.reshape({8, 36})) <= 1e-5);
    // Haar-distributed: the entries of a large orthogonal matrix have mean 0 and variance 1 / n.
    Tensor big = empty({400, 400});
    init::orthogonal_(big, 1.0, gen);
    const Stats s = stats_of(big);
    CHECK(std::abs(s.mean) < 5e-4);
    CHECK(std::abs(s.std - 1.0 / 20.0) < 5e-4);
    CHECK_THROWS_WITH(init::orthogonal_(empty({4})), Catch::Contains("orthogonal_: only tensors with 2 or more dimensions"));
}

TEST_CASE("init: constant_, zeros_, ones_ and eye_", "[nn][init]") {
    Tensor t = empty({2, 3});
    CHECK(init::constant_(t, 0.25).to_vector() == std::vector<float>(6, 0.25f));
    CHECK(init::zeros_(t).to_vector() == std::vector<float>(6, 0.0f));
    CHECK(init::ones_(t).to_vector() == std::vector<float>(6, 1.0f));
    CHECK(init::eye_(t).to_vector() == std::vector<float>{1, 0, 0, 0, 1, 0});
    Tensor counts = empty({2, 2}, kInt64);
    CHECK(init::eye_(counts).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 0, 1});
    CHECK_THROWS_WITH(init::eye_(empty({2, 2, 2})), Catch::Contains("eye_: only 2-D tensors"));
    CHECK_THROWS_WITH(init::normal_(empty({2}, kInt64)), Catch::Contains("normal_: expected a float32 tensor, got int64"));
}

TEST_CASE("init: parameters, strided views, zero-element tensors and seeding", "[nn][init]") {
    // Parameters that require grad are filled in place (under no-grad), without a graph.
    Linear lin(20, 10);
    const Tensor before = lin.weight;
    const uint32_t version = lin.weight.version();
    init::kaiming_normal_(lin.weight, 0.0, kFanIn, kReLU);
    init::zeros_(lin.bias);
    CHECK(lin.weight.requires_grad());
    CHECK(lin.weight.is_leaf());
    CHECK(lin.weight.shares_storage(before));
    CHECK(lin.weight.version() > version);
    CHECK(lin.bias.to_vector() == std::vector<float>(10, 0.0f));
    // Through module.apply, by module type, as PyTorch's model.apply(init_weights).
    Sequential model{Linear(4, 3), ReLU(), Linear(3, 2)};
    model.apply([](Module& m) {
        if (auto* l = dynamic_cast<Linear*>(&m)) {
            init::xavier_uniform_(l->weight);
            init::constant_(l->bias, 0.1);
        }
    });
    CHECK(model.at<Linear>(2)->bias.to_vector() == std::vector<float>{0.1f, 0.1f});
    // A strided view: only its elements change.
    Tensor base = zeros({4, 6});
    init::ones_(base.narrow(1, 1, 2));
    CHECK(sum(base).item() == 8.0f);
    init::orthogonal_(base.narrow(1, 0, 4).t());
    CHECK(row_orthogonality_error(base.narrow(1, 0, 4)) <= 1e-5);
    CHECK(base.narrow(1, 4, 2).to_vector() == std::vector<float>(8, 0.0f));
    // Zero-element tensors are a no-op, as PyTorch.
    CHECK(init::kaiming_uniform_(empty({0, 5})).numel() == 0);
    CHECK(init::orthogonal_(empty({0, 5})).numel() == 0);
    // Reproducible from a seed: the default generator by default, or the one given.
    manual_seed(7);
    const auto a = init::trunc_normal_(empty({50})).to_vector();
    manual_seed(7);
    CHECK(init::trunc_normal_(empty({50})).to_vector() == a);
    Generator g1(9), g2(9);
    CHECK(init::orthogonal_(empty({5, 7}), 1.0, g1).to_vector() == init::orthogonal_(empty({5, 7}), 1.0, g2).to_vector());
    CHECK(init::xavier_normal_(empty({5, 7}), 1.0, g1).to_vector() != init::xavier_normal_(empty({5, 7}), 1.0, g1).to_vector());
}
