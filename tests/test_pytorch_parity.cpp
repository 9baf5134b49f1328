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
    // fill_ and copy_ are recorded too (the op table checks their gradients against torch's).
    Tensor f = mul(w, 1.0f);
    f.fill_(0);
    CHECK(std::string(f.grad_fn()->name()) == "FillBackward0");
}

// ---- issue 29's smaller differences (torch 1.13's values, printed by /usr/bin/python3) -----------

TEST_CASE("parity: argmax and argmin with no dim and keepdim give a shape of ones, as torch", "[parity]") {
    const Tensor x = tensor({3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8}).view({2, 3, 2});
    const Tensor imax = argmax(x, std::nullopt, true), imin = x.argmin(std::nullopt, true);
    CHECK(imax.shape() == Shape{1, 1, 1});  // torch: x.argmax(keepdim=True).shape == (1, 1, 1)
    CHECK(imax.item<int64_t>() == 5);
    CHECK(imin.shape() == Shape{1, 1, 1});
    CHECK(imin.item<int64_t>() == 1);
    CHECK(argmax(x).shape() == Shape{});
    CHECK(argmax(scalar_tensor(2.0f), std::nullopt, true).shape() == Shape{});  // no dims: no ones
}

TEST_CASE("parity: chunk of an empty dim gives as many empty chunks as asked, as torch", "[parity]") {
    for (const int64_t n : {int64_t{1}, int64_t{3}, int64_t{5}}) {
        const std::vector<Tensor> parts = zeros({0, 4}).chunk(n, 0);
        CHECK(static_cast<int64_t>(parts.size()) == n);
        for (const Tensor& p : parts) CHECK(p.shape() == Shape{0, 4});
    }
    CHECK(chunk(zeros({2, 0}), 3, 1).size() == 3);
    CHECK(zeros({5, 2}).chunk(3, 0).size() == 3);  // sizes 2, 2, 1
    CHECK(zeros({4, 2}).chunk(3, 0).size() == 2);  // sizes 2, 2: fewer than asked, as torch
}

TEST_CASE("parity: var and std gradients where the count is at most the correction are torch's", "[parity]") {
    // torch's backward divides by count - correction as it is (the forward by max(0, that)).
    const auto grad_of = [](const std::vector<float>& v, double correction, bool is_std) {
        Tensor x = from_vector(v, {static_cast<int64_t>(v.size())}).requires_grad_();
        const Tensor y = is_std ? normnet::std(x, {0}, correction) : var(x, {0}, correction);
        y.backward();
        return std::pair{y.item(), x.grad().to_vector()};
    };
    // var of one element, correction 2: nan, gradient -0.
    auto [y, g] = grad_of({2.0f}, 2.0, false);
    CHECK(std::isnan(y));
    CHECK((g[0] == 0.0f && std::signbit(g[0])));
    // correction 1: nan, nan (2 / 0 times 0).
    std::tie(y, g) = grad_of({2.0f}, 1.0, false);
    CHECK((std::isnan(y) && std::isnan(g[0])));
    // [2, 2.5], correction 3: var inf, gradient [0.5, -0.5]; std inf, gradient [0, -0].
    std::tie(y, g) = grad_of({2.0f, 2.5f}, 3.0, false);
    CHECK(y == INFINITY);
    CHECK(g == std::vector<float>{0.5f, -0.5f});
    std::tie(y, g) = grad_of({2.0f, 2.5f}, 3.0, true);
    CHECK(y == INFINITY);
    CHECK((g[0] == 0.0f && !std::signbit(g[0]) && g[1] == 0.0f && std::signbit(g[1])));
    // [2, 2], correction 3: var nan, gradient [-0, -0]; std nan, nan.
    std::tie(y, g) = grad_of({2.0f, 2.0f}, 3.0, false);
    CHECK((std::isnan(y) && g[0] == 0.0f && std::signbit(g[0]) && std::signbit(g[1])));
    std::tie(y, g) = grad_of({2.0f, 2.0f}, 3.0, true);
    CHECK((std::isnan(y) && std::isnan(g[0]) && std::isnan(g[1])));
    // [2, 2.5], correction 2: var and std inf; gradients [inf, -inf] and nan.
    std::tie(y, g) = grad_of({2.0f, 2.5f}, 2.0, false);
    CHECK((y == INFINITY && g == std::vector<float>{-INFINITY, INFINITY}));
    std::tie(y, g) = grad_of({2.0f, 2.5f}, 2.0, true);
    CHECK((y == INFINITY && std::isnan(g[0]) && std::isnan(g[1])));
}

TEST_CASE("parity: elu's gradient at NaN is dy, as torch's", "[parity]") {
    // torch: x <= 0 takes the exponential branch, so NaN takes the identity's (and 0 the exponential's).
    for (const float alpha : {1.0f, 0.5f}) {
        INFO("alpha " << alpha);
        Tensor x = tensor({NAN, 1.0f, -1.0f, 0.0f}).requires_grad_();
        const Tensor y = elu(x, alpha);
        y.backward(ones({4}));
        CHECK(std::isnan(y.to_vector()[0]));
        const std::vector<float> g = x.grad().to_vector();
        CHECK(g[0] == 1.0f);
        CHECK(g[1] == 1.0f);
        CHECK(std::abs(g[2] - alpha * std::exp(-1.0f)) <= 1e-7f);  // torch: 0.36787945, 0.18393973
        CHECK(g[3] == alpha);
    }
}

TEST_CASE("parity: BatchNorm trains on an empty batch as torch: an empty output, statistics kept", "[parity]") {
    // torch: the output is x * weight[0] + bias[0] (empty), the running statistics stay,
    // num_batches_tracked counts the batch, and the weight's and bias's gradients are zeros.
    for (const Shape& shape : {Shape{0, 3}, Shape{0, 3, 4}, Shape{2, 3, 0}}) {
        INFO("input " << shape);
        BatchNorm1d bn(BatchNorm1dOptions{.num_features = 3});
        Tensor x = zeros(shape).requires_grad_();
        const Tensor y = bn(x);
        CHECK(y.shape() == shape);
        y.backward(zeros(shape));
        CHECK(x.grad().shape() == shape);
        CHECK(bn.weight.grad().to_vector() == std::vector<float>(3, 0.0f));
        CHECK(bn.bias.grad().to_vector() == std::vector<float>(3, 0.0f));
        CHECK(bn.running_mean.to_vector() == std::vector<float>(3, 0.0f));
        CHECK(bn.running_var.to_vector() == std::vector<float>(3, 1.0f));
        CHECK(bn.num_batches_tracked.item<int64_t>() == 1);
    }
    BatchNorm2d bn2(3);
    CHECK(bn2(zeros({0, 3, 2, 2})).shape() == Shape{0, 3, 2, 2});
    CHECK(bn2.forward_max_pool2d_relu(zeros({0, 3, 4, 4})).shape() == Shape{0, 3, 2, 2});
    CHECK(bn2.running_var.to_vector() == std::vector<float>(3, 1.0f));
    BatchNorm1d cumulative(BatchNorm1dOptions{.num_features = 2, .momentum = std::nullopt});
    cumulative(zeros({0, 2}));
    CHECK(cumulative.running_var.to_vector() == std::vector<float>(2, 1.0f));
    CHECK_THROWS_WITH(cumulative(zeros({1, 2})), Contains("Expected more than 1 value per channel when training"));
}

TEST_CASE("parity: GroupNorm refuses one value per channel in a batch of one, as torch's F.group_norm", "[parity]") {
    // torch checks N * C / G * spatial != 1, in training and eval alike.
    const std::string msg = "group_norm: Expected more than 1 value per channel when training, got input size ";
    CHECK_THROWS_WITH(GroupNorm(4, 4)(randn({1, 4, 1, 1})), msg + "[1, 4, 1, 1]");
    CHECK_THROWS_WITH(group_norm(randn({1, 2}), 2), msg + "[1, 2]");
    GroupNorm eval_mode(2, 2);
    eval_mode.eval();
    CHECK_THROWS_WITH(eval_mode(randn({1, 2})), msg + "[1, 2]");
    CHECK_THROWS_WITH(group_norm_max_pool2d_relu(randn({1, 2, 1, 1}), 2), msg + "[1, 2, 1, 1]");
    // One value per group, but more than one in N * C / G * spatial: torch normalises (to 0).
    CHECK(GroupNorm(4, 4)(randn({2, 4})).to_vector() == std::vector<float>(8, 0.0f));
    CHECK_NOTHROW(group_norm(randn({1, 4}), 2));
    CHECK_NOTHROW(group_norm(randn({1, 4, 1}), 2));
    CHECK(group_norm(zeros({0, 4, 3}), 4).shape() == Shape{0, 4, 3});
}

TEST_CASE("parity: InstanceNorm2d on an empty batch runs where torch gives a result and is refused elsewhere",
          "[parity]") {
    // torch 1.13: without affine parameters the output is empty (and running statistics turn
    // NaN); with them it fails with an IndexError.
    CHECK(InstanceNorm2d(3)(zeros({0, 3, 4, 4})).shape() == Shape{0, 3, 4, 4});
    CHECK(instance_norm(zeros({0, 3, 4})).shape() == Shape{0, 3, 4});
    InstanceNorm2d affine(InstanceNorm2dOptions{.num_features = 3, .affine = true});
    CHECK_THROWS_WITH(affine(zeros({0, 3, 4, 4})), Contains("instance_norm: an empty batch (input of shape [0, 3, 4, 4]) "
                                                            "with a weight or bias is refused"));
    CHECK_THROWS_WITH(affine.forward_max_pool2d_relu(zeros({0, 3, 4, 4})), Contains("with a weight or bias is refused"));
    affine.eval();
    CHECK_THROWS_WITH(affine(zeros({0, 3, 4, 4})), Contains("with a weight or bias is refused"));
    // torch averages the batch's copies of the running statistics back into them, in eval too.
    InstanceNorm2d stats(InstanceNorm2dOptions{.num_features = 3, .track_running_stats = true});
    CHECK_THROWS_WITH(stats(zeros({0, 3, 4, 4})), Contains("with running statistics is refused"));
    stats.eval();
    CHECK_THROWS_WITH(stats(zeros({0, 3, 4, 4})), Contains("with running statistics is refused"));
    CHECK(stats.running_mean.to_vector() == std::vector<float>(3, 0.0f));
}

TEST_CASE("parity: Adagrad refuses a group's own initial_accumulator_value, which torch ignores", "[parity]") {
    // torch.optim.Adagrad fills every sum with the constructor's value (1.13 and 2.x).
    Tensor a = zeros({2}).requires_grad_(), b = zeros({2}).requires_grad_();
    CHECK_THROWS_WITH(Adagrad({{std::vector<Tensor>{a}}, {std::vector<Tensor>{b}, {.initial_accumulator_value = 0.5}}},
                              {.initial_accumulator_value = 0.1}),
                      Contains("Adagrad parameter group 1: initial_accumulator_value 0.5 differs from the optimizer's (0.1)"));
    Adagrad same({{std::vector<Tensor>{a}}, {std::vector<Tensor>{b}, {.initial_accumulator_value = 0.1}}},
                 {.initial_accumulator_value = 0.1});
    const NamedTensors s = same.state_dict();
    CHECK(find_tensor(s, "sum.0").to_vector() == std::vector<float>{0.1f, 0.1f});
    CHECK(find_tensor(s, "sum.1").to_vector() == std::vector<float>{0.1f, 0.1f});
}
