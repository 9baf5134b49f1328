// The fused recurrent layers against torch.nn.LSTM and nn.GRU (goldens, incl. variable lengths
// through pack_padded_sequence), gradcheck, and the padding promise: a padded batch gives each
// sample exactly what running it alone gives, outputs and gradients.
#include "test_helpers.hpp"

using namespace normnet;
using Catch::Contains;
using test::require_close;

TEST_CASE("rnn: lstm_layer and gru_layer match torch.nn.LSTM and nn.GRU", "[ops][rnn][golden]") {
    const auto g = test::golden("rnn.safetensors");
    for (const std::string c : {"lstm", "lstm_zero_state", "lstm_no_bias", "lstm_lengths", "lstm_one_step", "gru",
                                "gru_zero_state", "gru_lengths"}) {
        INFO("case " << c);
        const bool lstm = c.rfind("lstm", 0) == 0;
        const auto opt = [&](const std::string& key) {
            const Tensor t = find_tensor(g.tensors, c + "." + key);
            return t.defined() ? test::leaf(t) : Tensor();
        };
        Tensor x = opt("x"), h0 = opt("h0"), c0 = opt("c0"), wi = opt("weight_ih_l0"), wh = opt("weight_hh_l0"),
               bi = opt("bias_ih_l0"), bh = opt("bias_hh_l0");
        const Tensor lengths = find_tensor(g.tensors, c + ".lengths");
        Tensor c_n;
        const Tensor out = lstm ? lstm_layer(x, h0, c0, wi, wh, bi, bh, lengths, &c_n) : gru_layer(x, h0, wi, wh, bi, bh, lengths);
        require_close(out, g.at(c + ".out"), 1e-5, c + ".out");
        const Tensor h_n = last_step(out, lengths);
        require_close(h_n, g.at(c + ".h_n"), 1e-5, c + ".h_n");
        if (lstm) require_close(c_n, g.at(c + ".c_n"), 1e-5, c + ".c_n");
        add(sum(mul(out, g.at(c + ".dout"))), sum(mul(h_n, g.at(c + ".dh_n")))).backward();
        require_close(x.grad(), g.at(c + ".dx"), 1e-5, c + ".dx");
        for (const auto& [key, t] : std::vector<std::pair<std::string, Tensor>>{
                 {"weight_ih_l0", wi}, {"weight_hh_l0", wh}, {"bias_ih_l0", bi}, {"bias_hh_l0", bh}, {"h0", h0}, {"c0", c0}}) {
            if (t.defined()) require_close(t.grad(), g.at(c + ".d" + key), 1e-5, c + ".d" + key);
        }
    }
}

TEST_CASE("rnn: gradcheck of lstm_layer and gru_layer, with lengths", "[ops][rnn][gradcheck]") {
    Generator gen(9);
    const auto leaf = [&](const Shape& s) { return mul(randn(s, gen), 0.5f).detach().requires_grad_(); };
    const Tensor lengths = from_vector(std::vector<int64_t>{3, 1, 2}, {3});
    const auto check = [](const GradcheckResult& r) {
        INFO(r.message);
        CHECK(r.ok);
    };
    check(gradcheck(
        [&](const std::vector<Tensor>& in) {
            return last_step(lstm_layer(in[0], in[1], in[2], in[3], in[4], in[5], in[6], lengths), lengths);
        },
        {leaf({3, 3, 2}), leaf({3, 4}), leaf({3, 4}), leaf({16, 2}), leaf({16, 4}), leaf({16}), leaf({16})}));
    // The final cell states too, with the outputs: c_n is differentiable (as torch's).
    check(gradcheck(
        [&](const std::vector<Tensor>& in) {
            Tensor c_n;
            const Tensor out = lstm_layer(in[0], in[1], in[2], in[3], in[4], in[5], in[6], lengths, &c_n);
            return cat({out.reshape({-1}), c_n.reshape({-1})});
        },
        {leaf({3, 3, 2}), leaf({3, 4}), leaf({3, 4}), leaf({16, 2}), leaf({16, 4}), leaf({16}), leaf({16})}));
    check(gradcheck([&](const std::vector<Tensor>& in) { return gru_layer(in[0], in[1], in[2], in[3], in[4], in[5], lengths); },
                    {leaf({3, 3, 2}), leaf({3, 4}), leaf({12, 2}), leaf({12, 4}), leaf({12}), leaf({12})}));
}

TEST_CASE("rnn: padded steps change neither outputs nor gradients (a padded batch = each sample alone)", "[ops][rnn]") {
    Generator gen(4);
    const int64_t N = 3, T = 5, I = 3, H = 4;
    const std::vector<int64_t> lens{5, 2, 3};
    const Tensor lengths = from_vector(lens, {N});
    for (const bool lstm : {true, false}) {
        INFO((lstm ? "lstm" : "gru"));
        const int64_t G = (lstm ? 4 : 3) * H;
        const Tensor x0 = randn({N, T, I}, gen), wi = randn({G, I}, gen), wh = randn({G, H}, gen), b = randn({G}, gen);
        const auto run = [&](const Tensor& x, const Tensor& w_ih, const Tensor& w_hh, const Tensor& len) {
            return lstm ? lstm_layer(x, {}, {}, w_ih, w_hh, b, b, len) : gru_layer(x, {}, w_ih, w_hh, b, b, len);
        };
        // The batch, padded with garbage past each length.
        Tensor xb = test::leaf(x0), wib = test::leaf(wi), whb = test::leaf(wh);
        const Tensor result = run(xb, wib, whb, lengths);
        sum(last_step(result, lengths)).backward();
        const Tensor out = result.detach();
        Tensor dw_sum = zeros({G, I});
        for (int64_t n = 0; n < N; ++n) {
            Tensor xs = test::leaf(x0.narrow(0, n, 1).narrow(1, 0, lens[static_cast<size_t>(n)]).contiguous());
            Tensor wis = test::leaf(wi), whs = test::leaf(wh);
            const Tensor alone = run(xs, wis, whs, {});
            require_close(out.narrow(0, n, 1).narrow(1, 0, lens[static_cast<size_t>(n)]), alone, 1e-6, "output");
            CHECK(sum(mul(out.narrow(0, n, 1).narrow(1, lens[static_cast<size_t>(n)], T - lens[static_cast<size_t>(n)]),
                          out.narrow(0, n, 1).narrow(1, lens[static_cast<size_t>(n)], T - lens[static_cast<size_t>(n)])))
                      .item() == 0.0f);
            sum(last_step(alone)).backward();
            require_close(xb.grad().narrow(0, n, 1).narrow(1, 0, lens[static_cast<size_t>(n)]), xs.grad(), 1e-5, "dx");
            // No gradient reaches the padded inputs.
            CHECK(sum(mul(xb.grad().narrow(0, n, 1).narrow(1, lens[static_cast<size_t>(n)], T - lens[static_cast<size_t>(n)]),
                          xb.grad().narrow(0, n, 1).narrow(1, lens[static_cast<size_t>(n)], T - lens[static_cast<size_t>(n)])))
                      .item() == 0.0f);
            dw_sum = add(dw_sum, wis.grad());
        }
        require_close(wib.grad(), dw_sum, 1e-5, "dweight_ih: the sum over the samples alone");
    }
}

TEST_CASE("rnn: bad arguments are errors naming the op", "[ops][rnn]") {
    const Tensor x = randn({2, 3, 4});
    CHECK_THROWS_WITH(lstm_layer(x, {}, {}, randn({12, 3}), randn({12, 3})), Contains("lstm_layer") && Contains("[12, 3]"));
    CHECK_THROWS_WITH(lstm_layer(randn({3, 4}), {}, {}, randn({16, 4}), randn({16, 4})), Contains("[N, T, I]"));
    CHECK_THROWS_WITH(gru_layer(x, {}, randn({12, 4}), randn({12, 4}), {}, {}, from_vector(std::vector<int64_t>{3, 4}, {2})),
                      Contains("length 4 of sample 1"));
    CHECK_THROWS_WITH(gru_layer(x, zeros({3, 4}), randn({12, 4}), randn({12, 4})), Contains("initial state"));
    const Tensor g = ones({16}), gc = ones({4});
    CHECK_THROWS_WITH(layer_norm_lstm_layer(x, {}, {}, randn({16, 4}), randn({16, 4}), g, {}, g, ones({3}), {}),
                      Contains("layer_norm_lstm_layer: ln_c weight must be float32 [4], got [3]"));
    CHECK_THROWS_WITH(layer_norm_lstm_layer(x, {}, {}, randn({16, 4}), randn({16, 4}), g, ones({4}), g, gc, {}),
                      Contains("ln_ih bias must be float32 [16], got [4]"));
    CHECK_THROWS_WITH(layer_norm_lstm_layer(x, {}, {}, randn({16, 4}), randn({16, 4}), g, {}, {}, gc, {}),
                      Contains("ln_hh weight must be float32 [16], got undefined"));
    CHECK_THROWS_WITH(layer_norm_lstm_layer(x, {}, {}, randn({16, 3}), randn({16, 4}), g, {}, g, gc, {}),
                      Contains("layer_norm_lstm_layer: weights [16, 3]"));
}
