// Differences from PyTorch 1.13 found by a randomized comparison, each fixed: every case here
// failed before its fix. References are PyTorch's values or, where float32 PyTorch is itself
// inaccurate (large common offsets), float64 computed here.
#include <cmath>
#include <limits>

#include "test_helpers.hpp"

using namespace normnet;
using Catch::Contains;

TEST_CASE("parity: linear with zero input features returns the bias broadcast, as torch", "[parity]") {
    const Tensor bias = tensor({1, 2, 3});
    const Tensor y = linear(zeros({2, 0}), zeros({3, 0}), bias);
    REQUIRE(y.shape() == Shape{2, 3});
    CHECK(y.to_vector() == std::vector<float>{1, 2, 3, 1, 2, 3});
    CHECK(linear(zeros({2, 0}), zeros({3, 0})).to_vector() == std::vector<float>(6, 0.0f));
    // Its gradients: the weight's is [3, 0], the bias's the column sums of dy.
    Tensor w = zeros({3, 0}).requires_grad_(), b = zeros({3}).requires_grad_();
    sum(linear(zeros({2, 0}), w, b)).backward();
    CHECK(w.grad().shape() == Shape{3, 0});
    CHECK(b.grad().to_vector() == std::vector<float>{2, 2, 2});
}

TEST_CASE("parity: log_softmax and cross_entropy stay accurate at logits of 1e4", "[parity]") {
    // float64: log_softmax([1e4, 9999, 9998])[0] = -log(1 + e^-1 + e^-2) = -0.40760596...
    const double want0 = -std::log(1.0 + std::exp(-1.0) + std::exp(-2.0));
    const Tensor logits = tensor({1e4f, 9999.0f, 9998.0f}).view({1, 3});
    const std::vector<float> y = log_softmax(logits).to_vector();
    CHECK(std::abs(y[0] - want0) <= 1e-6);
    CHECK(std::abs(y[1] - (want0 - 1.0)) <= 1e-6);
    CHECK(std::abs(y[2] - (want0 - 2.0)) <= 1e-6);
    Tensor x = logits.clone().requires_grad_();
    const Tensor loss = cross_entropy(x, test::labels_of({1}));
    CHECK(std::abs(loss.item() - (1.0 - want0)) <= 1e-6);
    loss.backward();
    // d/dx = softmax - one_hot(1)
    const double z = 1.0 + std::exp(-1.0) + std::exp(-2.0);
    const std::vector<double> want_grad{1.0 / z, std::exp(-1.0) / z - 1.0, std::exp(-2.0) / z};
    const std::vector<float> g = x.grad().to_vector();
    for (size_t i = 0; i < 3; ++i) CHECK(std::abs(g[i] - want_grad[i]) <= 1e-6);
}

TEST_CASE("parity: relu passes NaN and -0.0 through, and NaN's gradient, as torch", "[parity]") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    Tensor x = tensor({-0.0f, nan, -1.0f, 2.0f, 0.0f}).requires_grad_();
    const Tensor y = relu(x);
    const std::vector<float> v = y.to_vector();
    CHECK(v[0] == 0.0f);
    CHECK(std::signbit(v[0]));  // -0.0 stays -0.0
    CHECK(std::isnan(v[1]));
    CHECK(v[2] == 0.0f);
    CHECK(v[3] == 2.0f);
    y.backward(ones({5}));
    // torch 1.13: tensor([0., 1., 0., 1., 0.]): the gradient passes where the output is > 0 or NaN.
    CHECK(x.grad().to_vector() == std::vector<float>{0, 1, 0, 1, 0});
}

TEST_CASE("parity: layer_norm's backward is accurate for rows near 1e4, and exact for one-element groups",
          "[parity]") {
    Generator gen(3);
    const int64_t N = 8, H = 32;
    Tensor x = add(mul(randn({N, H}, gen), 1e-2f), 1e4f).detach().requires_grad_();
    Tensor w = add(mul(randn({H}, gen), 0.1f), 1.0f).detach().requires_grad_();
    Tensor b = zeros({H}).requires_grad_();
    const Tensor dy = randn({N, H}, gen);
    layer_norm(x, {H}, w, b).backward(dy);
    // float64 reference of dweight = sum over rows of dy * xhat.
    const std::vector<float> xv = x.to_vector(), dyv = dy.to_vector(), dw = w.grad().to_vector();
    std::vector<double> want(H, 0.0);
    for (int64_t n = 0; n < N; ++n) {
        double m = 0.0, v = 0.0;
        for (int64_t i = 0; i < H; ++i) m += xv[static_cast<size_t>(n * H + i)];
        m /= H;
        for (int64_t i = 0; i < H; ++i) v += std::pow(xv[static_cast<size_t>(n * H + i)] - m, 2);
        const double rstd = 1.0 / std::sqrt(v / H + 1e-5);
        for (int64_t i = 0; i < H; ++i) {
            want[static_cast<size_t>(i)] += dyv[static_cast<size_t>(n * H + i)] * (xv[static_cast<size_t>(n * H + i)] - m) * rstd;
        }
    }
    for (int64_t i = 0; i < H; ++i) {
        INFO("dweight[" << i << "]: " << dw[static_cast<size_t>(i)] << " vs float64 " << want[static_cast<size_t>(i)]);
        CHECK(std::abs(dw[static_cast<size_t>(i)] - want[static_cast<size_t>(i)]) <= 1e-4 * (1.0 + std::abs(want[static_cast<size_t>(i)])));
    }
    // A group of one element normalises to 0 whatever x is: its input gradient is exactly 0.
    Tensor one = mul(randn({5, 1}, gen), 100.0f).detach().requires_grad_();
    Tensor w1 = tensor({1.7f}).requires_grad_();
    layer_norm(one, {1}, w1, Tensor()).backward(randn({5, 1}, gen));
    CHECK(one.grad().to_vector() == std::vector<float>(5, 0.0f));
}

TEST_CASE("parity: empty inputs give what torch gives (nan means, zero sums)", "[parity]") {
    CHECK(std::isnan(mse_loss(zeros({0, 3}), zeros({0, 3})).item()));
    CHECK(std::isnan(mean(zeros({0})).item()));
    CHECK(sum(zeros({0, 4})).item() == 0.0f);
    CHECK(sum(zeros({0, 4}), {0}).to_vector() == std::vector<float>(4, 0.0f));
    CHECK(std::isnan(cross_entropy(zeros({0, 3}), zeros({0}, kInt64)).item()));
    // Gradients of empty inputs are empty, not errors.
    Tensor e = zeros({0, 3}).requires_grad_();
    sum(mul(e, 2.0f)).backward();
    CHECK(e.grad().shape() == Shape{0, 3});
}

TEST_CASE("parity: BatchNorm1d counts a rejected batch, and batch_norm in eval needs running stats", "[parity]") {
    // torch: num_batches_tracked.add_(1) runs before F.batch_norm raises.
    BatchNorm1d bn(BatchNorm1dOptions{.num_features = 2, .momentum = std::nullopt});
    bn(randn({4, 2}));
    CHECK_THROWS_WITH(bn(zeros({1, 2})), Contains("Expected more than 1 value per channel when training"));
    CHECK(bn.num_batches_tracked.item<int64_t>() == 2);
    CHECK_THROWS_WITH(batch_norm(randn({4, 2}), Tensor(), Tensor(), Tensor(), Tensor(), /*training=*/false),
                      "running_mean must be defined in evaluation mode");
}

TEST_CASE("parity: backward through a tensor modified in place since it was saved is an error", "[parity]") {
    // torch: RuntimeError: one of the variables needed for gradient computation has been modified
    // by an inplace operation. Before the version counter, a.grad silently came out as 10.
    Tensor a = tensor({1, 2, 3}).requires_grad_();
    Tensor w = tensor({1, 1, 1});
    Tensor z = sum(mul(a, w));
    w.mul_(10);
    CHECK(w.version() == 1);
    CHECK_THROWS_WITH(z.backward(), Contains("one of the variables needed for gradient computation has been "
                                             "modified by an inplace operation") &&
                                        Contains("MulBackward0") && Contains("is at version 1; expected version 0"));
    // Views share the counter, so an update through a view counts too.
    Tensor p = tensor({1, 2, 3, 4}).requires_grad_();
    Tensor q = tensor({1, 1, 1, 1});
    Tensor r = sum(mul(p, q));
    q.narrow(0, 1, 2).fill_(5);
    CHECK_THROWS_WITH(r.backward(), Contains("modified by an inplace operation"));
    // Unmodified, the same graph runs.
    Tensor s = sum(mul(p, q));
    s.backward();
    CHECK(p.grad().to_vector() == std::vector<float>{1, 5, 5, 1});
}

TEST_CASE("parity: in-place updates of a leaf that requires grad are refused in grad mode", "[parity]") {
    Tensor w = ones({3}).requires_grad_();
    CHECK_THROWS_WITH(w.mul_(2), Contains("a leaf Variable that requires grad is being used in an in-place operation"));
    CHECK_THROWS_WITH(w.fill_(0), Contains("in-place"));
    {
        NoGradGuard no_grad;
        w.mul_(2);  // as torch.no_grad(): allowed
    }
    w.detach().add_(ones({3}));  // and through detach(), sharing the data
    CHECK(w.to_vector() == std::vector<float>{3, 3, 3});
    // A non-leaf may be updated in place: the update is recorded, as torch records it.
    Tensor h = mul(w, 2.0f);
    h.add_(ones({3}));
    CHECK(std::string(h.grad_fn()->name()) == "AddBackward0");
    sum(h).backward();
    CHECK(w.grad().to_vector() == std::vector<float>{2, 2, 2});
    // fill_ and copy_ are not recorded, so they still refuse it.
    CHECK_THROWS_WITH(mul(w, 1.0f).fill_(0), Contains("not recorded by autograd"));
}
