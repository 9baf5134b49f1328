// Autograd: accumulation, backward(grad), long chains, NoGradGuard, graph release and errors.
#include "memory.hpp"
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
    // A chain that is never backwarded must also be destroyed without deep recursion, and be
    // destroyed: its first node goes with its last handle.
    Tensor z = mul(x, 1.0f);
    const std::weak_ptr<Node> first = z.grad_fn();
    for (int i = 1; i < 100000; ++i) z = mul(z, 1.0f);
    CHECK_FALSE(first.expired());  // kept alive by the chain
    z = Tensor();
    CHECK(first.expired());
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

TEST_CASE("autograd: saved tensors are released after backward, while the graph's root is still held", "[autograd]") {
    manual_seed(0);
    Sequential model{Linear(32, 64), ReLU(), LayerNorm({64}), Linear(64, 10)};
    Tensor x = rand({16, 32});
    std::vector<int64_t> y(16, 3);
    // Who holds the storage of the input and of every parameter: the forward's nodes save them
    // (Linear saves its input and weight, LayerNorm its weight), backward must let them go.
    std::vector<Tensor> watched = model.parameters();
    watched.push_back(x);
    const auto holders = [&] {
        std::vector<long> counts;
        for (const Tensor& t : watched) counts.push_back(t.impl().storage.use_count());
        return counts;
    };
    const std::vector<long> before = holders();
    const auto step = [&] {
        model.zero_grad();
        Tensor loss = cross_entropy(model(x), y);
        CHECK(holders() != before);  // saved by the graph
        loss.backward();
        // The root keeps its nodes alive, but their saved tensors must be gone.
        CHECK(holders() == before);
    };
    for (int i = 0; i < 3; ++i) step();
    // Every intermediate tensor returned to the caching allocator: the same steps again
    // draw the same blocks, so nothing new is taken from the heap (checked by the
    // allocation-counting test); here we check the gradients are sane and finite.
    for (const auto& p : model.parameters()) {
        for (float v : p.grad().to_vector()) REQUIRE(std::isfinite(v));
    }
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
