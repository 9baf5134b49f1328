// feed_forward, the fused linear -> relu/gelu -> linear: the same values and gradients as the
// three ops it replaces (each checked against PyTorch by its own goldens) on shapes across its
// row blocks, with and without biases, on 1 and 2 threads; gradcheck; its recomputing form bit
// for bit as the saving one; what it keeps for backward; the error messages.
#include "op_test_helpers.hpp"

#include "memory.hpp"

using namespace normnet;
using test::input;
using test::require_close;

namespace {

Tensor composed(const std::vector<Tensor>& in, const std::string& act) {
    const Tensor h = linear(in[0], in[1], in[2]);
    return linear(act == "gelu" ? gelu(h) : relu(h), in[3], in[4]);
}

// Forward values and the gradients of sum(y * w) for every input that requires grad.
std::vector<Tensor> values_and_grads(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                                     const std::vector<Tensor>& inputs) {
    std::vector<Tensor> leaves;
    for (const Tensor& t : inputs) leaves.push_back(t.defined() ? test::leaf(t) : Tensor());
    const Tensor y = fn(leaves);
    Generator gen(7);
    const Tensor w = randn(y.shape(), gen);
    mul(y, w).sum().backward();
    std::vector<Tensor> out{y.detach()};
    for (const Tensor& t : leaves) {
        if (t.defined()) out.push_back(t.grad());
    }
    return out;
}

}  // namespace

TEST_CASE("feed_forward equals linear -> activation -> linear, across row blocks and threads", "[ops][feed_forward]") {
    const test::ThreadsGuard threads;
    struct Case {
        Shape x;
        int64_t F;
        bool bias;
    };
    // Rows 0, 1, one block, a block and one row, several blocks per thread (F = 512: blocks of
    // at most 256 rows); 3-D inputs; no biases.
    for (const Case& c : {Case{{0, 6}, 5, true}, Case{{1, 6}, 5, true}, Case{{256, 8}, 512, true},
                          Case{{257, 8}, 512, true}, Case{{3, 200, 16}, 512, true}, Case{{3, 400, 16}, 24, true},
                          Case{{2, 5, 4}, 7, false}, Case{{5, 1}, 1, true}}) {
        for (int t : {1, 2}) {
            set_num_threads(t);
            for (const char* act : {"relu", "gelu"}) {
                for (bool recompute : {false, true}) {
                    INFO("x " << c.x.str() << " F " << c.F << " bias " << c.bias << " threads " << t << " " << act
                              << " recompute " << recompute);
                    const int64_t D = c.x[c.x.size() - 1];
                    // weight2 scaled down for wide F, so outputs stay near 1 (their tolerance is
                    // relative only beyond 1).
                    const float w2_scale = std::min(0.5f, 0.5f * std::sqrt(24.0f / static_cast<float>(c.F)));
                    const std::vector<Tensor> in{input(c.x, 1), input({c.F, D}, 2, 0.5f),
                                                 c.bias ? input({c.F}, 3) : Tensor(), input({D, c.F}, 4, w2_scale),
                                                 c.bias ? input({D}, 5) : Tensor()};
                    const auto fused = values_and_grads(
                        [&](const std::vector<Tensor>& v) { return feed_forward(v[0], v[1], v[2], v[3], v[4], act, recompute); }, in);
                    const auto plain = values_and_grads([&](const std::vector<Tensor>& v) { return composed(v, act); }, in);
                    REQUIRE(fused.size() == plain.size());
                    // The weight gradients are sums over all rows, here by blocks of rows: float
                    // rounding of sums of up to 1,200 terms, so 1e-4 for them.
                    for (size_t i = 0; i < fused.size(); ++i) {
                        require_close(fused[i], plain[i], i == 0 ? 1e-5 : 1e-4, "output or gradient " + std::to_string(i));
                    }
                }
            }
        }
    }
}

TEST_CASE("feed_forward recomputing its hidden rows gives the saving form's results bit for bit", "[ops][feed_forward]") {
    const std::vector<Tensor> in{input({3, 300, 16}, 1), input({40, 16}, 2, 0.5f), input({40}, 3),
                                 input({16, 40}, 4, 0.5f), input({16}, 5)};
    for (const char* act : {"relu", "gelu"}) {
        const auto run = [&](bool recompute) {
            return values_and_grads(
                [&](const std::vector<Tensor>& v) { return feed_forward(v[0], v[1], v[2], v[3], v[4], act, recompute); }, in);
        };
        const auto saved = run(false), recomputed = run(true);
        for (size_t i = 0; i < saved.size(); ++i) CHECK(test::bit_equal(saved[i], recomputed[i]));
    }
}

TEST_CASE("gradcheck: feed_forward", "[gradcheck][feed_forward]") {
    for (const char* act : {"relu", "gelu"}) {
        for (bool recompute : {false, true}) {
            INFO(act << " recompute " << recompute);
            test::require_gradcheck(
                [&](auto& in) { return feed_forward(in[0], in[1], in[2], in[3], in[4], act, recompute); },
                {input({2, 3, 4}, 1), input({5, 4}, 2), input({5}, 3), input({4, 5}, 4), input({4}, 5)});
        }
    }
}

TEST_CASE("feed_forward keeps h, or with recompute_hidden nothing of [*, F], for backward", "[ops][feed_forward]") {
    const int64_t N = 1024, D = 16, F = 256;
    const Tensor x = input({N, D}, 1), w1 = input({F, D}, 2), b1 = input({F}, 3), w2 = input({D, F}, 4), b2 = input({D}, 5);
    for (bool recompute : {false, true}) {
        INFO("recompute " << recompute);
        const int64_t before = detail::buffer_bytes_in_use();
        const Tensor y = feed_forward(x, w1, b1, w2, b2, "gelu", recompute);
        // y itself, plus h [N, F] when it is kept: act(h) is never a whole tensor.
        const int64_t held = detail::buffer_bytes_in_use() - before;
        CHECK(held == static_cast<int64_t>(sizeof(float)) * (N * D + (recompute ? 0 : N * F)));
    }
}

TEST_CASE("feed_forward's errors", "[ops][feed_forward]") {
    const Tensor x = zeros({2, 4}), w1 = zeros({8, 4}), w2 = zeros({4, 8});
    CHECK_THROWS_WITH(feed_forward(x, w1, {}, w2, {}, "tanh"), "feed_forward: activation should be relu or gelu, not tanh");
    CHECK_THROWS_WITH(feed_forward(zeros({2, 3}), w1, {}, w2, {}),
                      "feed_forward: input of shape [2, 3] does not match weight1 of shape [8, 4] (expected input [*, 4])");
    CHECK_THROWS_WITH(feed_forward(x, w1, {}, zeros({4, 7}), {}),
                      "feed_forward: weights of shapes [8, 4] and [4, 7] do not chain (expected [F, D] and [D, F])");
    CHECK_THROWS_WITH(feed_forward(x, w1, zeros({4}), w2, {}),
                      "feed_forward: bias1 of shape [4] does not match weight1 of shape [8, 4]");
    CHECK_THROWS_WITH(feed_forward(x, w1, {}, w2, zeros({8})),
                      "feed_forward: bias2 of shape [8] does not match weight2 of shape [4, 8]");
}
