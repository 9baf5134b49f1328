// Autograd: accumulation, backward(grad), long chains, NoGradGuard, graph release and errors.
#include <optional>
#include <tuple>

#include "memory.hpp"
#include "ops/op.hpp"
#include "test_helpers.hpp"

using namespace normnet;

TEST_CASE("autograd: gradients accumulate until zeroed", "[autograd]") {
    Tensor x = tensor({1, 2, 3}).requires_grad_();
    sum(mul(x, x)).backward();
    CHECK(x.grad().to_vector() == std::vector<float>{2, 4, 6});
    sum(mul(x, x)).backward();
    CHECK(x.grad().to_vector() == std::vector<float>{4, 8, 12});
    x.grad().zero_();
    sum(x).backward();
    CHECK(x.grad().to_vector() == std::vector<float>{1, 1, 1});
}

TEST_CASE("autograd: a tensor used twice gets both contributions", "[autograd]") {
    Tensor x = tensor({3}).requires_grad_();
    Tensor y = add(mul(x, x), mul(x, 2.0f));  // x^2 + 2x
    y.backward(tensor({1}));
    CHECK(x.grad().item() == 8.0f);  // 2x + 2
}

TEST_CASE("autograd: backward with an explicit gradient on a non-scalar", "[autograd]") {
    Tensor x = tensor({1, 2}).requires_grad_();
    Tensor y = mul(x, 3.0f);
    y.backward(tensor({1, 10}));
    CHECK(x.grad().to_vector() == std::vector<float>{3, 30});
    Tensor z = mul(x, 3.0f);
    CHECK_THROWS_WITH(z.backward(), Catch::Contains("only for scalar outputs"));
    CHECK_THROWS_WITH(mul(x, 3.0f).backward(tensor({1})), Catch::Contains("does not match"));
}

TEST_CASE("autograd: a chain of 100,000 ops runs backward and frees without recursion", "[autograd]") {
    Tensor x = tensor({1}).requires_grad_();
    Tensor y = x;
    for (int i = 0; i < 100000; ++i) y = add(y, 1.0f);
    y.backward();
    CHECK(x.grad().item() == 1.0f);
    CHECK(y.item() == 100001.0f);
    // A chain that is never backwarded must also be destroyed without deep recursion.
    // Each link saves its input, so the chain holds 100,000 buffers of 4 bytes until it dies.
    const Tensor one = tensor({1});
    Tensor z = x;
    for (int i = 0; i < 100000; ++i) z = mul(z, one);
    const int64_t live = detail::buffer_bytes_in_use();
    z = Tensor();
    CHECK(live - detail::buffer_bytes_in_use() == 100000 * 4);  // every link of the chain freed
}

TEST_CASE("autograd: NoGradGuard records nothing", "[autograd]") {
    Tensor x = ones({2}).requires_grad_();
    {
        NoGradGuard guard;
        CHECK_FALSE(grad_mode_enabled());
        Tensor y = mul(x, 2.0f);
        CHECK_FALSE(y.requires_grad());
        CHECK(y.grad_fn() == nullptr);
    }
    CHECK(grad_mode_enabled());
    CHECK(mul(x, 2.0f).requires_grad());
}

TEST_CASE("autograd: clear errors for tensors without grad and for a freed graph", "[autograd]") {
    Tensor plain = ones({1});
    CHECK_THROWS_WITH(plain.backward(), Catch::Contains("does not require grad"));
    Tensor x = ones({1}).requires_grad_();
    Tensor y = mul(x, 2.0f);
    y.backward();
    CHECK_THROWS_WITH(y.backward(), Catch::Contains("backward through the graph a second time"));
    Tensor h = relu(mul(x, 2.0f));
    Tensor loss = sum(h);
    loss.backward();
    CHECK_THROWS_WITH(sum(h).backward(), Catch::Contains("already freed"));
}

TEST_CASE("autograd: saved tensors are released after backward, while the graph's root lives on", "[autograd]") {
    manual_seed(0);
    Sequential model{Linear(32, 64), ReLU(), LayerNorm({64}), Linear(64, 10)};
    const Tensor x = rand({16, 32});
    const Tensor y = test::labels_of(std::vector<int64_t>(16, 3));
    model.zero_grad();
    {
        Tensor warm = cross_entropy(model(x), y);  // creates the gradients' buffers
        warm.backward();
    }
    const int64_t before = detail::buffer_bytes_in_use();
    Tensor loss = cross_entropy(model(x), y);
    // Forward keeps the activations the nodes saved: ReLU's output [16, 64] (LayerNorm's input),
    // LayerNorm's statistics, the logits, ... (not LayerNorm's output, the second Linear's input:
    // that is recomputed in backward).
    const int64_t during = detail::buffer_bytes_in_use();
    CHECK(during - before > 16 * 64 * 4);
    loss.backward();
    // The root and its graph of nodes are still alive, but every saved tensor has been freed:
    // only the loss's own one-element buffer remains.
    CHECK(detail::buffer_bytes_in_use() - before == 4);
    CHECK(loss.grad_fn() != nullptr);
    CHECK_THROWS_WITH(loss.backward(), Catch::Contains("second time"));
}

TEST_CASE("autograd: views and copies pass gradients through", "[autograd]") {
    Tensor x = arange(6).view({2, 3}).clone().requires_grad_();
    Tensor y = sum(mul(x.t().contiguous(), from_vector({1, 2, 3, 4, 5, 6}, {3, 2})));
    y.backward();
    CHECK(x.grad().to_vector() == std::vector<float>{1, 3, 5, 2, 4, 6});
    x.set_grad(Tensor());
    sum(x.select(0, 1)).backward();
    CHECK(x.grad().to_vector() == std::vector<float>{0, 0, 0, 1, 1, 1});
    x.set_grad(Tensor());
    sum(x.narrow(1, 1, 2).reshape({4})).backward();
    CHECK(x.grad().to_vector() == std::vector<float>{0, 1, 1, 0, 1, 1});
}

TEST_CASE("autograd: a node with more inputs than fit inline (as cat's) gets every gradient", "[autograd]") {
    // out = sum over k of (k + 1) * x_k, recorded as one node with six inputs.
    class WeightedSum final : public detail::OpNode {
    public:
        const char* name() const override { return "WeightedSumBackward"; }
        void backward(const Tensor& dy) override {
            for (int k = 0; k < 6; ++k) {
                if (const detail::GradOut dx = grad_out(k)) {
                    const float w = static_cast<float>(k + 1);
                    std::vector<float> g(static_cast<size_t>(dy.numel()));
                    for (size_t i = 0; i < g.size(); ++i) g[i] = w * dy.data()[i];
                    dx.store(g.data(), dy.numel());
                }
            }
        }
    };
    std::vector<Tensor> xs;
    for (int k = 0; k < 6; ++k) xs.push_back(k == 2 ? ones({3}) : ones({3}).requires_grad_());
    Tensor out = zeros({3});
    detail::record<WeightedSum>(out, std::span<const Tensor>(xs));
    REQUIRE(out.requires_grad());
    sum(out).backward();
    for (int k = 0; k < 6; ++k) {
        INFO("input " << k);
        if (k == 2) {
            CHECK_FALSE(xs[2].grad().defined());
        } else {
            CHECK(xs[static_cast<size_t>(k)].grad().to_vector() == std::vector<float>(3, static_cast<float>(k + 1)));
        }
    }
}

TEST_CASE("autograd: backwards that write dx over dout (ReLU, BatchNorm on images, GroupNorm) match the out-of-place gradient",
          "[autograd]") {
    // Through a non-leaf h, the engine lets these nodes write h's gradient over their own dout
    // (grad_over_dout); through a leaf they write a fresh buffer. Both must give the same values,
    // also when h feeds a second op (then h's gradient may already hold that op's part), and the
    // caller's dy must stay untouched.
    Generator gen(5);
    const Tensor x = randn({3, 4, 5, 6}, gen).requires_grad_();
    const Tensor rm = zeros({4}), rv = ones({4}), w = randn({4}, gen), b = randn({4}, gen);
    const std::vector<std::pair<const char*, std::function<Tensor(const Tensor&)>>> ops = {
        {"relu", [](const Tensor& h) { return relu(h); }},
        {"batch_norm train", [&](const Tensor& h) { return batch_norm(h, {}, {}, w, b, true); }},
        {"group_norm", [&](const Tensor& h) { return group_norm(h, 2, w, b); }},
        {"batch_norm eval", [&](const Tensor& h) { return batch_norm(h, rm, rv, w, b, false); }},
    };
    for (const auto& [name, f] : ops) {
        for (const bool twice : {false, true}) {
            INFO(name << (twice ? ", h used twice" : ""));
            const Tensor dy = randn(x.shape(), gen), dy_before = dy.clone();
            x.set_grad(Tensor());
            const Tensor h = mul(x, 2.0f);
            Tensor y = f(h);
            if (twice) y = add(y, mul(h, 3.0f));
            y.backward(dy);
            const Tensor leaf = mul(x, 2.0f).detach().requires_grad_();
            Tensor y_leaf = f(leaf);
            if (twice) y_leaf = add(y_leaf, mul(leaf, 3.0f));
            y_leaf.backward(dy);
            CHECK(x.grad().to_vector() == mul(leaf.grad(), 2.0f).to_vector());
            CHECK(dy.to_vector() == dy_before.to_vector());
        }
    }
}

TEST_CASE("autograd: a saved output of GELU or LayerNorm is recomputed in backward, not kept, with the same gradients",
          "[autograd]") {
    // Linear saves its input for dW = dy^T x; when that input is the output of a node that can
    // recompute it (GELU from its input, LayerNorm from its input and statistics), the engine keeps
    // a recipe instead of the buffer. The gradients must be the kept buffer's bit for bit.
    Generator gen(7);
    const Tensor w = randn({5, 16}, gen).requires_grad_(), b = randn({5}, gen).requires_grad_();
    const Tensor lw = randn({16}, gen).requires_grad_(), lb = randn({16}, gen).requires_grad_();
    struct Case {
        const char* name;
        std::function<Tensor(const Tensor&)> f;
        int64_t not_held;  // [3, 4, 16] buffers the recipes spare
    };
    const std::vector<Case> ops = {
        {"gelu", [](const Tensor& h) { return gelu(h); }, 1},
        {"gelu tanh", [](const Tensor& h) { return gelu(h, "tanh"); }, 1},
        {"silu", [](const Tensor& h) { return silu(h); }, 1},
        {"layer_norm", [&](const Tensor& h) { return layer_norm(h, {16}, lw, lb); }, 1},
        {"layer_norm without affine", [](const Tensor& h) { return layer_norm(h, {16}); }, 1},
        {"gelu of gelu", [](const Tensor& h) { return gelu(gelu(h)); }, 2},  // a recipe reading a recipe
        {"relu (saves its output: nothing to spare)", [](const Tensor& h) { return relu(h); }, 0},
    };
    const Tensor x0 = mul(randn({3, 4, 16}, gen), 3.0f), dy = randn({3, 4, 5}, gen);
    for (const auto& [name, f_binding, not_held] : ops) {
        INFO(name);
        const auto& f = f_binding;  // a lambda may not capture a structured binding before clang 16
        // One pass: the gradients, and what the forward left allocated.
        const auto run = [&](bool keep) {
            std::optional<detail::KeepSavedOutputs> guard;
            if (keep) guard.emplace();
            const Tensor x = x0.clone().requires_grad_();
            for (const Tensor* p : {&w, &b, &lw, &lb}) const_cast<Tensor*>(p)->set_grad(Tensor());
            const int64_t before = detail::buffer_bytes_in_use();
            Tensor y = linear(f(mul(x, 1.0f)), w, b);
            const int64_t held = detail::buffer_bytes_in_use() - before;
            y.backward(dy);
            std::vector<std::vector<float>> grads{x.grad().to_vector(), w.grad().to_vector(), b.grad().to_vector()};
            if (lw.grad().defined()) grads.push_back(lw.grad().to_vector());
            if (lb.grad().defined()) grads.push_back(lb.grad().to_vector());
            return std::pair{grads, held};
        };
        const auto [recomputed, held_recomputed] = run(false);
        const auto [kept, held_kept] = run(true);
        CHECK(recomputed == kept);
        CHECK(held_kept - held_recomputed == not_held * 3 * 4 * 16 * 4);
    }

    // Still held elsewhere and changed in place after it was saved: torch's error, as before.
    {
        const Tensor x = x0.clone().requires_grad_();
        Tensor t = gelu(mul(x, 1.0f));
        Tensor y = linear(t, w, b);
        t.mul_(2.0f);
        CHECK_THROWS_WITH(y.backward(dy), Catch::Contains("modified by an inplace operation") &&
                                              Catch::Contains("AddmmBackward0"));
    }
    // Changed under NoGradGuard before it was saved (its grad_fn is still GELU's): saved itself,
    // so dW is computed from the values Linear multiplied.
    {
        const Tensor x = x0.clone().requires_grad_();
        w.set_grad(Tensor());
        Tensor t = gelu(mul(x, 1.0f));
        {
            NoGradGuard no_grad;
            t.mul_(2.0f);
        }
        linear(t, w, b).backward(dy);
        const std::vector<float> dw = w.grad().to_vector();
        w.set_grad(Tensor());
        linear(t.detach(), w, b).backward(dy);
        CHECK(dw == w.grad().to_vector());
    }
    // The producer's own saved tensors are checked before it recomputes.
    {
        const Tensor x = x0.clone().requires_grad_();
        Tensor h = mul(x, 1.0f);
        Tensor y = linear(gelu(h), w, b);
        h.add_(1.0f);
        CHECK_THROWS_WITH(y.backward(dy), Catch::Contains("modified by an inplace operation") &&
                                              Catch::Contains("GeluBackward0"));
    }
}

TEST_CASE("autograd: checkpoint gives fn's gradients, keeping only its input, and redraws the same dropout",
          "[autograd][checkpoint][gradcheck]") {
    Generator gen(11);
    const Tensor w1 = mul(randn({24, 8}, gen), 0.3f).requires_grad_(), b1 = randn({24}, gen).requires_grad_();
    const Tensor w2 = mul(randn({8, 24}, gen), 0.3f).requires_grad_();
    // A residual feed-forward block with dropout: what a Transformer block checkpoints.
    const auto block = [&](const Tensor& x) { return add(x, linear(dropout(gelu(linear(x, w1, b1)), 0.25), w2)); };
    const Tensor x0 = randn({6, 8}, gen), dy = randn({6, 8}, gen);
    const auto run = [&](bool checkpointed) {
        manual_seed(3);
        for (const Tensor* p : {&w1, &b1, &w2}) const_cast<Tensor*>(p)->set_grad(Tensor());
        const Tensor x = x0.clone().requires_grad_();
        const Tensor h = mul(x, 1.0f);
        const int64_t before = detail::buffer_bytes_in_use();
        const Tensor y = checkpointed ? checkpoint(block, h) : block(h);
        const int64_t held = detail::buffer_bytes_in_use() - before;
        const std::vector<float> out = y.to_vector();
        y.backward(dy);
        return std::tuple{out, held, std::vector<std::vector<float>>{x.grad().to_vector(), w1.grad().to_vector(),
                                                                    b1.grad().to_vector(), w2.grad().to_vector()}};
    };
    const auto [out, held, grads] = run(false);
    const auto [out_c, held_c, grads_c] = run(true);
    CHECK(out_c == out);
    CHECK(grads_c == grads);
    CHECK(held_c == 6 * 8 * 4);  // the output only: nothing of the block's activations
    CHECK(held > held_c + 6 * 24 * 4);

    // With grad mode off, or an input that needs no gradient, fn just runs.
    {
        NoGradGuard no_grad;
        CHECK(checkpoint(block, x0).grad_fn() == nullptr);
    }
    CHECK(checkpoint([](const Tensor& x) { return mul(x, 2.0f); }, x0).grad_fn() == nullptr);
    // fn returning its input: the output has its own history.
    const Tensor leaf = x0.clone().requires_grad_();
    const Tensor same = checkpoint([](const Tensor& x) { return x; }, leaf);
    CHECK(std::string(same.grad_fn()->name()) == "CheckpointFunctionBackward");
    CHECK(leaf.is_leaf());
    same.backward(dy);
    CHECK(leaf.grad().to_vector() == dy.to_vector());

    // The gradient checker, through checkpoint, for the input (the parameters' gradients are the
    // plain block's above; gradcheck would pass them as non-leaf copies, whose graph the first
    // re-run frees, as torch's reentrant checkpoint does: fn reads parameters as leaves).
    const GradcheckResult r = gradcheck(
        [&](const std::vector<Tensor>& in) {
            return checkpoint([&](const Tensor& x) { return linear(gelu(linear(x, w1, b1)), w2); }, in[0]);
        },
        {x0.clone().requires_grad_()});
    INFO(r.message);
    CHECK(r.ok);
}
