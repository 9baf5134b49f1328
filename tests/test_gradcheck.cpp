// Central-difference gradient checks of every op and module, with .grad pre-filled with
// garbage so an op that overwrites instead of accumulating, or forgets an input, fails.
#include "ops/op.hpp"
#include "test_helpers.hpp"

using namespace normnet;

namespace {

void require_gradcheck(const GradcheckResult& r) {
    INFO(r.message);
    REQUIRE(r.ok);
    REQUIRE(r.checked > 0);
}

Tensor input(const Shape& shape, uint64_t seed, float scale = 1.0f) {
    Generator gen(seed);
    return mul(randn(shape, gen), scale).detach().requires_grad_();
}

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

}  // namespace

TEST_CASE("gradcheck: the checker itself catches overwriting and forgotten gradients", "[gradcheck]") {
    // An op whose backward always overwrites, even a buffer that already holds gradient.
    class Overwrite final : public detail::OpNode {
    public:
        const char* name() const override { return "OverwriteBackward"; }
        void backward(const Tensor& dout) override {
            if (const detail::GradOut dx = grad_out(0)) std::copy_n(dout.data(), dout.numel(), dx.data);
        }
    };
    // An op that forgets its second input's gradient.
    class Forget final : public detail::OpNode {
    public:
        const char* name() const override { return "ForgetBackward"; }
        void backward(const Tensor& dout) override {
            if (const detail::GradOut dx = grad_out(0)) dx.store(dout.data(), dout.numel());
        }
    };
    // An op that adds into its gradient buffer even when the buffer is new (uninitialised).
    class AddIntoFresh final : public detail::OpNode {
    public:
        const char* name() const override { return "AddIntoFreshBackward"; }
        void backward(const Tensor& dout) override {
            if (const detail::GradOut dx = grad_out(0)) {
                for (int64_t i = 0; i < dout.numel(); ++i) dx.data[i] += dout.data()[i];
            }
        }
    };
    const Fn add_into_fresh = [](const std::vector<Tensor>& in) {
        Tensor out = in[0].detach().clone();
        detail::record<AddIntoFresh>(out, {in[0]});
        return out;
    };
    const GradcheckResult caught = gradcheck(add_into_fresh, {input({3}, 1)});
    CHECK_FALSE(caught.ok);
    CHECK_THAT(caught.message, Catch::Contains("fresh .grad"));
    const Fn overwrite = [](const std::vector<Tensor>& in) {
        Tensor out = in[0].detach().clone();
        detail::record<Overwrite>(out, {in[0]});
        return out;
    };
    const Fn forget = [](const std::vector<Tensor>& in) {
        Tensor out = add(in[0].detach(), in[1].detach());
        detail::record<Forget>(out, {in[0], in[1]});
        return out;
    };
    CHECK_FALSE(gradcheck(overwrite, {input({3}, 1)}).ok);
    CHECK_FALSE(gradcheck(forget, {input({3}, 1), input({3}, 2)}).ok);
}

TEST_CASE("gradcheck: matmul and linear", "[gradcheck]") {
    require_gradcheck(gradcheck([](auto& in) { return matmul(in[0], in[1]); }, {input({3, 4}, 1), input({4, 5}, 2)}));
    require_gradcheck(gradcheck([](auto& in) { return linear(in[0], in[1], in[2]); },
                                {input({3, 4}, 1), input({5, 4}, 2), input({5}, 3)}));
    require_gradcheck(gradcheck([](auto& in) { return linear(in[0], in[1]); }, {input({2, 3, 4}, 1), input({5, 4}, 2)}));
}

TEST_CASE("gradcheck: elementwise ops with broadcasting", "[gradcheck]") {
    const auto a = input({3, 4}, 1), b = input({3, 4}, 2), row = input({4}, 3), one = input({1}, 4);
    for (auto op : {+[](const Tensor& x, const Tensor& y) { return add(x, y); },
                    +[](const Tensor& x, const Tensor& y) { return sub(x, y); },
                    +[](const Tensor& x, const Tensor& y) { return mul(x, y); }}) {
        require_gradcheck(gradcheck([op](auto& in) { return op(in[0], in[1]); }, {a, b}));
        require_gradcheck(gradcheck([op](auto& in) { return op(in[0], in[1]); }, {a, row}));
        require_gradcheck(gradcheck([op](auto& in) { return op(in[0], in[1]); }, {row, a}));
        require_gradcheck(gradcheck([op](auto& in) { return op(in[0], in[1]); }, {a, one}));
    }
    require_gradcheck(gradcheck([](auto& in) { return add(in[0], 3.0f); }, {a}));
    require_gradcheck(gradcheck([](auto& in) { return mul(in[0], -2.5f); }, {a}));
    require_gradcheck(gradcheck([](auto& in) { return relu(in[0]); }, {input({5, 6}, 5)}));
    require_gradcheck(gradcheck([](auto& in) { return sum(in[0]); }, {a}));
    require_gradcheck(gradcheck([](auto& in) { return mean(in[0]); }, {a}));
}

TEST_CASE("gradcheck: views", "[gradcheck]") {
    const auto a = input({3, 4}, 1);
    require_gradcheck(gradcheck([](auto& in) { return in[0].t().contiguous(); }, {a}));
    require_gradcheck(gradcheck([](auto& in) { return in[0].reshape({2, 6}); }, {a}));
    require_gradcheck(gradcheck([](auto& in) { return in[0].narrow(1, 1, 2).contiguous(); }, {a}));
    require_gradcheck(gradcheck([](auto& in) { return in[0].select(0, 2).clone(); }, {a}));
}

TEST_CASE("gradcheck: losses", "[gradcheck]") {
    const Tensor targets = test::labels_of({1, 0, 4});
    require_gradcheck(gradcheck([](auto& in) { return log_softmax(in[0]); }, {input({3, 5}, 1, 2.0f)}));
    require_gradcheck(gradcheck([&](auto& in) { return cross_entropy(in[0], targets); }, {input({3, 5}, 2, 2.0f)}));
    require_gradcheck(
        gradcheck([&](auto& in) { return cross_entropy(in[0], targets, 0.1f); }, {input({3, 5}, 3, 2.0f)}));
    require_gradcheck(gradcheck([](auto& in) { return mse_loss(in[0], in[1]); }, {input({3, 4}, 4), input({3, 4}, 5)}));
}

TEST_CASE("gradcheck: layer_norm, rms_norm, batch_norm", "[gradcheck]") {
    const auto x = input({4, 2, 3}, 1);
    require_gradcheck(gradcheck([](auto& in) { return layer_norm(in[0], {3}, in[1], in[2]); },
                                {x, input({3}, 2), input({3}, 3)}));
    require_gradcheck(gradcheck([](auto& in) { return layer_norm(in[0], {2, 3}, in[1], in[2]); },
                                {x, input({2, 3}, 2), input({2, 3}, 3)}));
    require_gradcheck(gradcheck([](auto& in) { return layer_norm(in[0], {3}); }, {x}));
    require_gradcheck(gradcheck([](auto& in) { return rms_norm(in[0], {3}, in[1], 1e-5); }, {x, input({3}, 4)}));
    require_gradcheck(gradcheck([](auto& in) { return rms_norm(in[0], {2, 3}); }, {x}));
    // batch statistics (training) and fixed running statistics (eval)
    const auto xb = input({6, 3}, 5);
    require_gradcheck(gradcheck(
        [](auto& in) { return batch_norm(in[0], {}, {}, in[1], in[2], true); }, {xb, input({3}, 6), input({3}, 7)}));
    require_gradcheck(gradcheck([](auto& in) { return batch_norm(in[0], {}, {}, {}, {}, true); }, {input({4, 3, 5}, 8)}));
    const Tensor rm = tensor({0.1f, -0.2f, 0.3f}), rv = tensor({1.5f, 0.5f, 2.0f});
    require_gradcheck(gradcheck([&](auto& in) { return batch_norm(in[0], rm, rv, in[1], in[2], false); },
                                {xb, input({3}, 6), input({3}, 7)}));
}

TEST_CASE("gradcheck: every module", "[gradcheck]") {
    manual_seed(1);
    Linear lin(4, 3);
    require_gradcheck(gradcheck(lin, input({2, 4}, 1)));
    ReLU relu_module;
    require_gradcheck(gradcheck(relu_module, input({2, 4}, 2)));
    Identity identity;
    require_gradcheck(gradcheck(identity, input({2, 4}, 3)));
    LayerNorm ln({4});
    ln.weight.detach().copy_(tensor({1.5f, 0.5f, -1.0f, 2.0f}));
    require_gradcheck(gradcheck(ln, input({3, 4}, 4)));
    LayerNorm ln_plain(LayerNormOptions{.normalized_shape = {4}, .elementwise_affine = false});
    require_gradcheck(gradcheck(ln_plain, input({3, 4}, 5)));
    LayerNorm ln_nobias(LayerNormOptions{.normalized_shape = {4}, .bias = false});
    require_gradcheck(gradcheck(ln_nobias, input({3, 4}, 5)));
    BatchNorm1d bn(4);
    require_gradcheck(gradcheck(bn, input({5, 4}, 6)));
    bn.eval();
    require_gradcheck(gradcheck(bn, input({5, 4}, 7)));
    RMSNorm rms({4});
    require_gradcheck(gradcheck(rms, input({3, 4}, 8)));
    Sequential seq{Linear(6, 5), ReLU(), LayerNorm({5}), Linear(5, 3)};
    require_gradcheck(gradcheck(seq, input({4, 6}, 9)));
}
