// scaled_dot_product_attention against PyTorch goldens (masks, causal, scale, size-1 sequences,
// batched and unbatched), gradcheck with and without dropout, and its errors.
#include "test_helpers.hpp"

using namespace normnet;
using Catch::Contains;
using test::require_close;

TEST_CASE("attention: scaled_dot_product_attention matches PyTorch with every mask kind", "[ops][attention][golden]") {
    const auto g = test::golden("attention.safetensors");
    for (const std::string c : {"plain", "bool_mask", "float_mask", "key_padding", "causal", "scale", "one_query",
                                "one_key", "unbatched"}) {
        INFO("case " << c);
        Tensor q = test::leaf(g.at(c + ".q")), k = test::leaf(g.at(c + ".k")), v = test::leaf(g.at(c + ".v"));
        const Tensor mask = find_tensor(g.tensors, c + ".mask");
        const std::string sc = g.metadata.at(c + ".scale");
        const std::optional<double> scale = sc == "none" ? std::nullopt : std::optional<double>(std::stod(sc));
        const Tensor out = scaled_dot_product_attention(q, k, v, mask, 0.0, g.metadata.at(c + ".causal") == "True", scale);
        require_close(out, g.at(c + ".out"), 1e-5, c + ".out");
        out.backward(g.at(c + ".dout"));
        require_close(q.grad(), g.at(c + ".dq"), 1e-5, c + ".dq");
        require_close(k.grad(), g.at(c + ".dk"), 1e-5, c + ".dk");
        require_close(v.grad(), g.at(c + ".dv"), 1e-5, c + ".dv");
    }
}

TEST_CASE("attention: gradcheck, with a mask and with dropout", "[ops][attention][gradcheck]") {
    Generator gen(5);
    const auto leaf = [&](const Shape& s) { return randn(s, gen).requires_grad_(); };
    const Tensor q = leaf({2, 3, 4}), k = leaf({2, 5, 4}), v = leaf({2, 5, 3});
    const auto check = [](const GradcheckResult& r) {
        INFO(r.message);
        CHECK(r.ok);
    };
    check(gradcheck([](const std::vector<Tensor>& in) { return scaled_dot_product_attention(in[0], in[1], in[2]); }, {q, k, v}));
    Tensor mask = ones({3, 5}, kBool);
    for (int64_t i = 0; i < 3; ++i) mask.data_ptr<bool>()[i * 5 + 1 + i] = false;
    check(gradcheck([&](const std::vector<Tensor>& in) { return scaled_dot_product_attention(in[0], in[1], in[2], mask); },
                    {q, k, v}));
    // Dropout: the same generator state for every call, so the function is deterministic.
    check(gradcheck(
        [](const std::vector<Tensor>& in) {
            Generator dropout_gen(11);
            return scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.3, false, std::nullopt, &dropout_gen);
        },
        {q, k, v}));
    check(gradcheck([](const std::vector<Tensor>& in) { return scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.0, true); },
                    {leaf({2, 4, 3}), leaf({2, 4, 3}), leaf({2, 4, 2})}));
}

TEST_CASE("attention: dropout keeps 1 - p of the weights, scaled, and a seeded generator repeats it", "[ops][attention]") {
    // Equal scores give weights 1/64; with v the identity, the output is the weights after dropout.
    const int64_t S = 64;
    const Tensor q = zeros({1, S, 8}), k = zeros({1, S, 8});
    Tensor v = zeros({1, S, S});
    for (int64_t i = 0; i < S; ++i) v.data()[i * S + i] = 1.0f;
    Generator a(3), b(3);
    const double p = 0.25;
    const std::vector<float> out = scaled_dot_product_attention(q, k, v, {}, p, false, std::nullopt, &a).to_vector();
    CHECK(out == scaled_dot_product_attention(q, k, v, {}, p, false, std::nullopt, &b).to_vector());
    int64_t dropped = 0;
    for (float x : out) {
        if (x == 0.0f) {
            ++dropped;
        } else {
            CHECK(x == Approx(1.0 / S / (1.0 - p)).epsilon(1e-6));
        }
    }
    CHECK(std::abs(static_cast<double>(dropped) / static_cast<double>(out.size()) - p) < 0.03);
}

TEST_CASE("attention: bad shapes and options are errors naming the op", "[ops][attention]") {
    const Tensor q = randn({2, 3, 4});
    CHECK_THROWS_WITH(scaled_dot_product_attention(q, randn({2, 5, 3}), randn({2, 5, 4})),
                      Contains("scaled_dot_product_attention") && Contains("[2, 5, 3]"));
    CHECK_THROWS_WITH(scaled_dot_product_attention(q, randn({3, 5, 4}), randn({3, 5, 4})),
                      Contains("leading dimensions"));
    CHECK_THROWS_WITH(scaled_dot_product_attention(q, q, q, zeros({4, 4}, kBool)), Contains("attn_mask") && Contains("[4, 4]"));
    CHECK_THROWS_WITH(scaled_dot_product_attention(q, q, q, {}, 1.0), Contains("dropout_p"));
    CHECK_THROWS_WITH(scaled_dot_product_attention(q, q, q, ones({3, 3}, kBool), 0.0, true), Contains("not both"));
    CHECK_THROWS_WITH(scaled_dot_product_attention(q, q, q, zeros({3, 3}, kInt64)), Contains("bool or float32"));
}
