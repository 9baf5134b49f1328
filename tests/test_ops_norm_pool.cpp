// The fused norm -> max_pool2d(2) -> relu ops (batch_norm_max_pool2d_relu,
// group_norm_max_pool2d_relu) against their reference, the three ops run in turn: outputs,
// gradients of input, weight and bias (written fresh and added into a gradient that holds
// values), the running statistics, ties and NaN; gradcheck; and the CNN's forward, which runs
// them, against the plain Sequential of the same modules.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "op_test_helpers.hpp"
#include "test_helpers.hpp"

using namespace normnet;
using test::input;
using test::require_close;

namespace {

using Fn = std::function<Tensor(const Tensor& x, const Tensor& w, const Tensor& b)>;

// fused(x, w, b) against reference(x, w, b): the output, then the gradients of sum(y * dy) for
// x, w and b, once into fresh gradients and once added into them.
void check_against_reference(const Shape& shape, uint64_t seed, const Fn& fused, const Fn& reference,
                             float offset = 0.0f) {
    INFO("shape " << shape.str() << ", seed " << seed);
    const int64_t C = shape[1];
    const Tensor x0 = input(shape, seed, 2.0f, offset).detach(), w0 = input({C}, seed + 1).detach(),
                 b0 = input({C}, seed + 2).detach();
    Tensor xf = x0.clone().requires_grad_(), wf = w0.clone().requires_grad_(), bf = b0.clone().requires_grad_();
    Tensor xr = x0.clone().requires_grad_(), wr = w0.clone().requires_grad_(), br = b0.clone().requires_grad_();
    Generator gen(seed + 3);
    for (int pass = 0; pass < 2; ++pass) {
        INFO((pass == 0 ? "fresh gradients" : "added into held gradients"));
        const Tensor yf = fused(xf, wf, bf), yr = reference(xr, wr, br);
        require_close(yf, yr, 1e-6, "output");
        const Tensor dy = randn(yr.shape(), gen);
        yf.backward(dy);
        yr.backward(dy);
        require_close(xf.grad(), xr.grad(), 1e-5, "dx");
        require_close(wf.grad(), wr.grad(), 1e-5, "dweight");
        require_close(bf.grad(), br.grad(), 1e-5, "dbias");
    }
}

// Shapes whose rows are 4 (vectors of 4), 5 and 7 (the last vector of 4 overlapping), 8 and 14
// (vectors of 8, overlapping) outputs wide.
const std::vector<Shape> kShapes{{2, 3, 8, 8}, {3, 2, 6, 10}, {2, 4, 4, 14}, {2, 2, 6, 16}, {2, 4, 6, 28}};

}  // namespace

TEST_CASE("batch_norm_max_pool2d_relu matches batch_norm, max_pool2d and relu in turn", "[ops][norm][pooling]") {
    uint64_t seed = 1;
    for (const Shape& shape : kShapes) {
        const int64_t C = shape[1];
        Tensor rm_f = zeros({C}), rv_f = ones({C}), rm_r = zeros({C}), rv_r = ones({C});
        check_against_reference(
            shape, seed,
            [&](const Tensor& x, const Tensor& w, const Tensor& b) {
                return batch_norm_max_pool2d_relu(x, rm_f, rv_f, w, b, true, 0.1, 1e-5);
            },
            [&](const Tensor& x, const Tensor& w, const Tensor& b) {
                return relu(max_pool2d(batch_norm(x, rm_r, rv_r, w, b, true, 0.1, 1e-5), 2));
            });
        CHECK(test::bit_equal(rm_f, rm_r));
        CHECK(test::bit_equal(rv_f, rv_r));
        seed += 10;
    }
    // A large common offset (the mean kept as hi + lo), and evaluation (the three ops).
    const Tensor rm = tensor({0.5f, -1.0f}), rv = tensor({2.0f, 0.5f});
    check_against_reference(
        {2, 2, 8, 8}, 99,
        [](const Tensor& x, const Tensor& w, const Tensor& b) { return batch_norm_max_pool2d_relu(x, {}, {}, w, b, true); },
        [](const Tensor& x, const Tensor& w, const Tensor& b) { return relu(max_pool2d(batch_norm(x, {}, {}, w, b, true), 2)); },
        1000.0f);
    check_against_reference(
        {2, 2, 8, 8}, 98,
        [&](const Tensor& x, const Tensor& w, const Tensor& b) { return batch_norm_max_pool2d_relu(x, rm, rv, w, b, false); },
        [&](const Tensor& x, const Tensor& w, const Tensor& b) { return relu(max_pool2d(batch_norm(x, rm, rv, w, b, false), 2)); });
}

TEST_CASE("group_norm_max_pool2d_relu matches group_norm, max_pool2d and relu in turn", "[ops][norm][pooling]") {
    uint64_t seed = 2;
    for (const Shape& shape : kShapes) {
        const int64_t C = shape[1];
        for (int64_t G : {int64_t{1}, C}) {  // LayerNorm (one group) and InstanceNorm (a group per channel)
            INFO("groups " << G);
            check_against_reference(
                shape, seed,
                [&](const Tensor& x, const Tensor& w, const Tensor& b) { return group_norm_max_pool2d_relu(x, G, w, b); },
                [&](const Tensor& x, const Tensor& w, const Tensor& b) {
                    return relu(max_pool2d(group_norm(x, G, w, b), 2));
                });
            seed += 10;
        }
    }
    check_against_reference(
        {2, 4, 6, 16}, 77,
        [](const Tensor& x, const Tensor& w, const Tensor& b) { return group_norm_max_pool2d_relu(x, 2, w, b); },
        [](const Tensor& x, const Tensor& w, const Tensor& b) { return relu(max_pool2d(group_norm(x, 2, w, b), 2)); },
        1000.0f);
}

TEST_CASE("the fused norm -> max-pool -> relu: ties, zeros and NaN as the three ops", "[ops][norm][pooling]") {
    // Values from a small set (windows tie often; weight 0 on one channel makes its whole plane
    // equal to the bias) and a NaN in one sample, which makes its groups' values NaN.
    const float nan = std::numeric_limits<float>::quiet_NaN();
    Generator gen(5);
    const Shape shape{2, 4, 6, 20};
    std::vector<float> v(static_cast<size_t>(shape.numel()));
    for (auto& e : v) e = static_cast<float>(gen.below(4));
    v[7] = nan;
    const Tensor x = from_vector(v, shape), w = tensor({1.0f, 0.0f, -2.0f, 0.5f}), b = tensor({0.0f, 0.25f, 0.5f, -0.5f});
    for (int64_t G : {int64_t{1}, int64_t{2}, int64_t{4}}) {
        INFO("groups " << G);
        Tensor xf = x.clone().requires_grad_(), xr = x.clone().requires_grad_();
        const Tensor yf = group_norm_max_pool2d_relu(xf, G, w, b), yr = relu(max_pool2d(group_norm(xr, G, w, b), 2));
        const auto a = yf.to_vector(), e = yr.to_vector();
        REQUIRE(a.size() == e.size());
        for (size_t i = 0; i < a.size(); ++i) {
            INFO("output " << i);
            // group_norm normalises in double, the fused op in float as batch_norm: within rounding.
            CHECK((std::abs(a[i] - e[i]) <= 1e-6f * (1.0f + std::abs(e[i])) || (std::isnan(a[i]) && std::isnan(e[i]))));
        }
        const Tensor dy = randn(yr.shape(), gen);
        yf.backward(dy);
        yr.backward(dy);
        // The second sample's groups hold no NaN: their gradients agree.
        require_close(xf.grad().narrow(0, 1, 1), xr.grad().narrow(0, 1, 1), 1e-5, "dx of the sample without NaN");
    }
    // BatchNorm on the tied values (no NaN: it would reach every channel's statistics).
    v[7] = 1.0f;
    const Tensor xt = from_vector(v, shape);
    Tensor xf = xt.clone().requires_grad_(), xr = xt.clone().requires_grad_();
    const Tensor yf = batch_norm_max_pool2d_relu(xf, {}, {}, w, b, true),
                 yr = relu(max_pool2d(batch_norm(xr, {}, {}, w, b, true), 2));
    CHECK(test::bit_equal(yf, yr));
    const Tensor dy = randn(yr.shape(), gen);
    yf.backward(dy);
    yr.backward(dy);
    require_close(xf.grad(), xr.grad(), 1e-5, "dx");
}

TEST_CASE("gradcheck: batch_norm_max_pool2d_relu, group_norm_max_pool2d_relu", "[ops][norm][gradcheck]") {
    const auto x = input({2, 2, 4, 8}, 3);
    test::require_gradcheck([](auto& in) { return batch_norm_max_pool2d_relu(in[0], {}, {}, in[1], in[2], true); },
                            {x, input({2}, 4), input({2}, 5)});
    test::require_gradcheck([](auto& in) { return group_norm_max_pool2d_relu(in[0], 1, in[1], in[2]); },
                            {x, input({2}, 6), input({2}, 7)});
    test::require_gradcheck([](auto& in) { return group_norm_max_pool2d_relu(in[0], 2, in[1], in[2]); },
                            {input({2, 2, 4, 10}, 8), input({2}, 9), input({2}, 10)});
}

TEST_CASE("the norm layers' forward_max_pool2d_relu equals forward, MaxPool2d(2) and ReLU", "[nn][norm]") {
    const Tensor x0 = input({3, 4, 8, 12}, 11).detach();
    const auto same = [&](auto& fused, auto& plain) {
        Tensor xf = x0.clone().requires_grad_(), xr = x0.clone().requires_grad_();
        const Tensor yf = fused.forward_max_pool2d_relu(xf), yr = relu(max_pool2d(plain.forward(xr), 2));
        require_close(yf, yr, 1e-6, fused.type_name());
        yf.sum().backward();
        yr.sum().backward();
        require_close(xf.grad(), xr.grad(), 1e-5, fused.type_name() + " dx");
    };
    BatchNorm2d bn_f(4), bn_r(4);
    same(bn_f, bn_r);
    CHECK(test::bit_equal(bn_f.running_mean, bn_r.running_mean));
    CHECK(test::bit_equal(bn_f.running_var, bn_r.running_var));
    CHECK(bn_f.num_batches_tracked.item<int64_t>() == 1);
    bn_f.eval(), bn_r.eval();
    same(bn_f, bn_r);
    GroupNorm gn_f(2, 4), gn_r(2, 4);
    same(gn_f, gn_r);
    InstanceNorm2d in_f(InstanceNorm2dOptions{.num_features = 4, .affine = true});
    InstanceNorm2d in_r(InstanceNorm2dOptions{.num_features = 4, .affine = true});
    same(in_f, in_r);
}
