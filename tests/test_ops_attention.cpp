// scaled_dot_product_attention against PyTorch goldens (masks, causal, scale, size-1 sequences,
// batched and unbatched), gradcheck with and without dropout, and its errors; strided operands
// read in place, and the packed self-attention MultiheadAttention runs, against both.
#include <functional>

#include "ops/attention.hpp"
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
    // Plain, with a boolean mask, with dropout (the same generator state for every call, so the
    // function is deterministic), causal: each on q [2, L, E], k [2, S, E], v [2, S, Ev].
    const auto check_all = [&](int64_t L, int64_t S, int64_t E, int64_t Ev) {
        INFO("L " << L << " S " << S << " E " << E << " Ev " << Ev);
        const Tensor q = leaf({2, L, E}), k = leaf({2, S, E}), v = leaf({2, S, Ev});
        Tensor mask = ones({L, S}, kBool);
        for (int64_t i = 0; i < L; ++i) mask.data_ptr<bool>()[i * S + (i + 1) % S] = false;
        using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
        for (const Fn& f : {Fn([](const std::vector<Tensor>& in) { return scaled_dot_product_attention(in[0], in[1], in[2]); }),
                            Fn([&](const std::vector<Tensor>& in) {
                                return scaled_dot_product_attention(in[0], in[1], in[2], mask);
                            }),
                            Fn([](const std::vector<Tensor>& in) {
                                Generator dropout_gen(11);
                                return scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.3, false, std::nullopt,
                                                                    dropout_gen);
                            })}) {
            const GradcheckResult r = gradcheck(f, {q, k, v});
            INFO(r.message);
            CHECK(r.ok);
        }
        if (L != S) return;
        const GradcheckResult r = gradcheck(
            [](const std::vector<Tensor>& in) { return scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.0, true); },
            {q, k, v});
        INFO(r.message);
        CHECK(r.ok);
    };
    // Rows short enough that the weights are saved (S <= 2 E + Ev), and rows of 9 keys against
    // heads of 2, which the backward recomputes.
    check_all(3, 5, 4, 3);
    check_all(4, 4, 3, 2);
    check_all(9, 9, 2, 2);
}

TEST_CASE("attention: dropout keeps 1 - p of the weights, scaled, and a seeded generator repeats it", "[ops][attention]") {
    // Equal scores give weights 1/64; with v the identity, the output is the weights after dropout.
    const int64_t S = 64;
    const Tensor q = zeros({1, S, 8}), k = zeros({1, S, 8});
    Tensor v = zeros({1, S, S});
    for (int64_t i = 0; i < S; ++i) v.data()[i * S + i] = 1.0f;
    Generator a(3), b(3);
    const double p = 0.25;
    const std::vector<float> out = scaled_dot_product_attention(q, k, v, {}, p, false, std::nullopt, a).to_vector();
    CHECK(out == scaled_dot_product_attention(q, k, v, {}, p, false, std::nullopt, b).to_vector());
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

namespace {

// Runs f on a fresh leaf copy of `input`, backpropagates `dout`; returns the output and the gradient.
template <class F>
std::pair<Tensor, Tensor> output_and_gradient(F f, const Tensor& input, const Tensor& dout) {
    Tensor x = test::leaf(input);
    const Tensor out = f(x);
    out.backward(dout);
    return {out.detach(), x.grad()};
}

}  // namespace

TEST_CASE("attention: strided views are read in place, with their copies' results", "[ops][attention]") {
    // The heads of a packed projection [N, L, 3, H, D]: strided views sgemm reads through its
    // leading dimension; a transposed last pair (column stride != 1) is copied first.
    Generator gen(3);
    const int64_t N = 2, L = 5, H = 3, D = 4;
    const Tensor packed = randn({N, L, 3 * H * D}, gen), dout = randn({N, H, L, D}, gen);
    Tensor mask = ones({L, L}, kBool);
    mask.data_ptr<bool>()[1] = false;
    const auto run = [&](bool copy) {
        return [&, copy](const Tensor& x) {
            const Tensor qkv = x.reshape({N, L, 3, H, D}).permute({2, 0, 3, 1, 4});
            const auto part = [&](int64_t i) { return copy ? qkv.select(0, i).contiguous() : qkv.select(0, i); };
            const Tensor kt = part(1).transpose(-2, -1).contiguous().transpose(-2, -1);  // column stride L
            return scaled_dot_product_attention(part(0), kt, part(2), mask);
        };
    };
    const auto [out, grad] = output_and_gradient(run(false), packed, dout);
    const auto [out_copied, grad_copied] = output_and_gradient(run(true), packed, dout);
    require_close(out, out_copied, 1e-6, "out");
    require_close(grad, grad_copied, 1e-6, "grad");
}

TEST_CASE("attention: packed self-attention is scaled_dot_product_attention over the heads", "[ops][attention]") {
    // The same outputs, dropout draws and gradients, with each kind of mask MultiheadAttention passes.
    Generator gen(4);
    const int64_t N = 2, L = 6, H = 2, D = 3, E = H * D;
    const Tensor packed = randn({N, L, 3 * E}, gen), dout = randn({N, L, E}, gen);
    Tensor padding = ones({N, 1, 1, L}, kBool);
    padding.data_ptr<bool>()[L - 1] = false;  // sequence 0 may not attend to its last key
    const Tensor additive = randn({L, L}, gen);
    struct Case {
        const char* name;
        Tensor mask;
        bool causal;
        double p;
    };
    for (const Case& c : {Case{"plain", {}, false, 0.0}, Case{"causal", {}, true, 0.0}, Case{"padding", padding, false, 0.0},
                          Case{"additive", additive, false, 0.0}, Case{"dropout", padding, false, 0.4}}) {
        INFO("case " << c.name);
        const auto packed_op = [&](const Tensor& x) {
            Generator g(9);
            return detail::packed_self_attention(x, H, c.mask, c.p, c.causal, g);
        };
        const auto over_heads = [&](const Tensor& x) {
            Generator g(9);
            const Tensor qkv = x.reshape({N, L, 3, H, D}).permute({2, 0, 3, 1, 4});
            const Tensor out = scaled_dot_product_attention(qkv.select(0, 0), qkv.select(0, 1), qkv.select(0, 2), c.mask,
                                                            c.p, c.causal, std::nullopt, g);
            return out.permute({0, 2, 1, 3}).reshape({N, L, E});
        };
        const auto [out, grad] = output_and_gradient(packed_op, packed, dout);
        const auto [expected, expected_grad] = output_and_gradient(over_heads, packed, dout);
        require_close(out, expected, 1e-6, "out");
        require_close(grad, expected_grad, 1e-6, "grad");
        const GradcheckResult r = gradcheck([&](const std::vector<Tensor>& in) { return packed_op(in[0]); },
                                            {test::leaf(packed)});
        INFO(r.message);
        CHECK(r.ok);
    }
}

namespace {

// The general path: softmax(q k^T / sqrt(E) + mask) v from the ops, the mask broadcast as torch's
// (bool: false = may not attend).
Tensor composite_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask) {
    Tensor s = matmul(q, k.transpose(-2, -1)) * static_cast<float>(1.0 / std::sqrt(static_cast<double>(q.size(-1))));
    if (mask.defined()) s = mask.dtype() == kBool ? masked_fill(s, logical_not(mask), -INFINITY) : s + mask;
    return matmul(softmax(s, -1), v);
}

}  // namespace

TEST_CASE("attention: the fused op equals the composite path for every mask shape, batch of one included", "[ops][attention]") {
    // q [N, H, L, E], k and v [N, H, S, E]; masks broadcast from [L, S], [H, L, S] and every
    // [N or 1, H or 1, L, S]; rows short enough that the weights are saved (S = 4) and long
    // enough to be recomputed (S = 9 > 2 E + Ev).
    Generator gen(21);
    const int64_t H = 3, L = 4, E = 2;
    for (const int64_t N : {int64_t{1}, int64_t{2}}) {
        for (const int64_t S : {int64_t{4}, int64_t{9}}) {
            const Tensor q = randn({N, H, L, E}, gen), k = randn({N, H, S, E}, gen), v = randn({N, H, S, E}, gen);
            const Tensor dout = randn({N, H, L, E}, gen);
            if (S == L) {  // causal: the softmaxes skip the masked columns instead of adding -inf
                Tensor lower = ones({L, S}, kBool);
                for (int64_t i = 0; i < L; ++i) {
                    for (int64_t j = i + 1; j < S; ++j) lower.data_ptr<bool>()[i * S + j] = false;
                }
                const Tensor fused = scaled_dot_product_attention(q, k, v, {}, 0.0, true);
                require_close(fused, composite_attention(q, k, v, lower), 1e-5, "causal");
            }
            std::vector<Shape> shapes{{L, S}, {H, L, S}};
            for (const int64_t n : {int64_t{1}, N}) {
                for (const int64_t h : {int64_t{1}, H}) shapes.push_back({n, h, L, S});
            }
            for (const Shape& shape : shapes) {
                for (const bool boolean : {false, true}) {
                    // Each query keeps at least one key: key (i + row) % S stays allowed.
                    Tensor mask = boolean ? (rand(shape, gen) > 0.4f) : randn(shape, gen);
                    if (boolean) {
                        bool* m = mask.data_ptr<bool>();
                        for (int64_t r = 0; r < mask.numel() / S; ++r) m[r * S + r % S] = true;
                    }
                    INFO("N " << N << " S " << S << " mask " << shape << (boolean ? " bool" : " float"));
                    std::vector<Tensor> fused_grads, general_grads;
                    for (const bool fused : {true, false}) {
                        Tensor ql = test::leaf(q), kl = test::leaf(k), vl = test::leaf(v);
                        const Tensor out = fused ? scaled_dot_product_attention(ql, kl, vl, mask)
                                                 : composite_attention(ql, kl, vl, mask);
                        out.backward(dout);
                        (fused ? fused_grads : general_grads) = {out.detach(), ql.grad(), kl.grad(), vl.grad()};
                    }
                    const char* const names[] = {"out", "dq", "dk", "dv"};
                    for (size_t i = 0; i < 4; ++i) require_close(fused_grads[i], general_grads[i], 1e-5, names[i]);
                }
            }
        }
    }
}
