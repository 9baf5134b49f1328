// LSTM, GRU and LayerNormLSTM modules against PyTorch goldens (tests/golden/gen_seq_rnn.py:
// torch.nn.LSTM/GRU with pack_padded_sequence; LayerNormLSTM against a float64 reference in torch
// ops), padded steps against each sequence run alone, gradcheck, errors.
#include "module_golden.hpp"

#include "normnet/nn/rnn.hpp"

using namespace normnet;
using Catch::Contains;
using test::check_gradcheck;
using test::meta_flag;
using test::meta_int;
using test::require_close;

namespace {

std::shared_ptr<RNNBase> make_rnn(const std::string& kind, const RNNOptions& o) {
    if (kind == "lstm") return std::make_shared<LSTM>(o);
    if (kind == "gru") return std::make_shared<GRU>(o);
    return std::make_shared<LayerNormLSTM>(LayerNormLSTMOptions{o.input_size, o.hidden_size, o.num_layers, o.bias,
                                                                o.batch_first, o.dropout});
}

// (output, h_n, c_n) of any of the three.
std::tuple<Tensor, Tensor, Tensor> run(RNNBase& m, const Tensor& x, const Tensor& h0, const Tensor& c0,
                                       const Tensor& lengths) {
    if (auto* gru = dynamic_cast<GRU*>(&m)) {
        auto [out, h] = gru->forward(x, h0, lengths);
        return {out, h, Tensor{}};
    }
    if (auto* lstm = dynamic_cast<LSTM*>(&m)) {
        auto [out, s] = lstm->forward(x, {h0, c0}, lengths);
        return {out, std::get<0>(s), std::get<1>(s)};
    }
    auto [out, s] = dynamic_cast<LayerNormLSTM&>(m).forward(x, {h0, c0}, lengths);
    return {out, std::get<0>(s), std::get<1>(s)};
}

// LayerNormLSTM as it was first written, composed of differentiable ops step by step: the naive
// reference of the fused layer_norm_lstm_layer. x batch-first [N, T, I]; h0, c0 [L, N, H].
std::tuple<Tensor, Tensor, Tensor> composed_layer_norm_lstm(LayerNormLSTM& m, Tensor x, const Tensor& h0,
                                                            const Tensor& c0, const std::vector<int64_t>& lengths) {
    const int64_t N = x.size(0), T = x.size(1), H = m.options().hidden_size;
    std::vector<Tensor> keep;  // [N, 1] per step: 1 within the sample's length
    for (int64_t t = 0; t < static_cast<int64_t>(lengths.empty() ? 0 : T); ++t) {
        std::vector<float> v;
        for (const int64_t l : lengths) v.push_back(l > t ? 1.0f : 0.0f);
        keep.push_back(from_vector(v, {N, 1}));
    }
    std::vector<Tensor> h_n, c_n;
    for (int64_t k = 0; k < m.options().num_layers; ++k) {
        Tensor h = h0.select(0, k), c = c0.select(0, k);
        const Tensor gx = m.ln_ih[k]->forward(linear(x, m.weight_ih[k]));
        std::vector<Tensor> outs;
        for (int64_t t = 0; t < T; ++t) {
            const Tensor g = gx.select(1, t) + m.ln_hh[k]->forward(linear(h, m.weight_hh[k]));
            const Tensor i = sigmoid(g.narrow(1, 0, H)), f = sigmoid(g.narrow(1, H, H));
            const Tensor gg = tanh(g.narrow(1, 2 * H, H)), o = sigmoid(g.narrow(1, 3 * H, H));
            const Tensor c_new = f * c + i * gg;
            const Tensor h_new = o * tanh(m.ln_c[k]->forward(c_new));
            if (keep.empty()) {
                h = h_new, c = c_new;
                outs.push_back(h_new);
            } else {
                const Tensor& w = keep[static_cast<size_t>(t)];
                h = h + w * (h_new - h), c = c + w * (c_new - c);
                outs.push_back(h_new * w);
            }
        }
        h_n.push_back(h);
        c_n.push_back(c);
        x = stack(outs, 1);
    }
    return {x, stack(h_n), stack(c_n)};
}

}  // namespace

TEST_CASE("nn rnn: the fused LayerNormLSTM equals its composition of ops", "[nn][rnn]") {
    const int64_t T = 7, I = 6, L = 2;
    // Small, and 2 threads over 80 rows of 128 gates (the backward's per-thread parameter sums).
    // The loss is a mean over the batch, as in training (a sum over 80 samples makes gradients
    // near 100, which float rounding in either order puts 1e-4 apart).
    for (const auto& [N, H, threads] : {std::tuple<int64_t, int64_t, int>{5, 16, 1}, {80, 32, 2}}) {
        std::vector<int64_t> len;
        for (int64_t n = 0; n < N; ++n) len.push_back(1 + (n * 5 + 3) % T);
        const test::ThreadsGuard threads_guard;
        set_num_threads(threads);
        for (const bool bias : {true, false}) {
            for (const bool with_lengths : {false, true}) {
                INFO("N " << N << ", bias " << bias << ", lengths " << with_lengths);
                manual_seed(21);
                LayerNormLSTM m(LayerNormLSTMOptions{.input_size = I, .hidden_size = H, .num_layers = L, .bias = bias,
                                                     .batch_first = true});
                for (const auto& p : m.parameters()) p.detach().add_(mul(randn(p.shape()), 0.3f));  // not 1 and 0
                const Tensor x = randn({N, T, I}), h0 = randn({L, N, H}), c0 = randn({L, N, H});
                const float mean = 1.0f / static_cast<float>(N);
                const Tensor dout = mul(randn({N, T, H}), mean), dh = mul(randn({L, N, H}), mean);
                const Tensor dc = mul(randn({L, N, H}), mean);
                const std::vector<int64_t> lengths = with_lengths ? len : std::vector<int64_t>{};
                std::vector<std::vector<Tensor>> grads;
                std::vector<Tensor> results;
                for (const bool fused : {true, false}) {
                    m.zero_grad();
                    Tensor xl = test::leaf(x), hl = test::leaf(h0), cl = test::leaf(c0);
                    const auto [out, h_n, c_n] = fused ? run(m, xl, hl, cl, with_lengths ? test::labels_of(len) : Tensor{})
                                                       : composed_layer_norm_lstm(m, xl, hl, cl, lengths);
                    (sum(out * dout) + sum(h_n * dh) + sum(c_n * dc)).backward();
                    results.insert(results.end(), {out.detach(), h_n.detach(), c_n.detach()});
                    std::vector<Tensor> g{xl.grad(), hl.grad(), cl.grad()};
                    for (const auto& p : m.parameters()) g.push_back(p.grad().clone());
                    grads.push_back(g);
                }
                for (size_t i = 0; i < 3; ++i) require_close(results[i], results[i + 3], 1e-5, "output " + std::to_string(i));
                for (size_t i = 0; i < grads[0].size(); ++i) {
                    require_close(grads[0][i], grads[1][i], 1e-5, "gradient " + std::to_string(i));
                }
            }
        }
    }
}

TEST_CASE("nn rnn: LSTM, GRU and LayerNormLSTM match PyTorch (lengths, both layouts, states)", "[nn][rnn][golden]") {
    const auto g = test::golden("seq_rnn.safetensors");
    for (const std::string c : {"lstm2_seq_first", "lstm2_bf_lengths", "lstm_seq_lengths_nobias", "lstm_size1", "gru2_bf",
                                "gru2_seq_lengths", "lnlstm2_seq_first", "lnlstm2_bf_lengths", "lnlstm_nobias_size1"}) {
        INFO("case " << c);
        const std::string kind = g.metadata.at(c + ".kind");
        auto m = make_rnn(kind, RNNOptions{.input_size = meta_int(g, c + ".input_size"),
                                           .hidden_size = meta_int(g, c + ".hidden_size"),
                                           .num_layers = meta_int(g, c + ".num_layers"),
                                           .bias = meta_flag(g, c + ".bias"),
                                           .batch_first = meta_flag(g, c + ".batch_first")});
        test::load_torch_state(*m, g, c);
        Tensor x = test::leaf(g.at(c + ".x"));
        Tensor h0 = find_tensor(g.tensors, c + ".h0"), c0 = find_tensor(g.tensors, c + ".c0");
        if (h0.defined()) h0 = test::leaf(h0);
        if (c0.defined()) c0 = test::leaf(c0);
        const auto [out, h_n, c_n] = run(*m, x, h0, c0, find_tensor(g.tensors, c + ".lengths"));
        require_close(out, g.at(c + ".out"), 1e-5, c + ".out");
        require_close(h_n, g.at(c + ".h_n"), 1e-5, c + ".h_n");
        if (kind != "gru") require_close(c_n, g.at(c + ".c_n"), 1e-5, c + ".c_n");
        Tensor loss = sum(out * g.at(c + ".dout")) + sum(h_n * g.at(c + ".dh"));
        if (kind != "gru") loss = loss + sum(c_n * g.at(c + ".dc"));
        loss.backward();
        require_close(x.grad(), g.at(c + ".dx"), 1e-5, c + ".dx");
        if (h0.defined()) require_close(h0.grad(), g.at(c + ".dh0"), 1e-5, c + ".dh0");
        if (c0.defined()) require_close(c0.grad(), g.at(c + ".dc0"), 1e-5, c + ".dc0");
        test::require_torch_grads(*m, g, c);
    }
}

TEST_CASE("nn rnn: padded steps change neither outputs nor gradients (each sequence run alone)", "[nn][rnn]") {
    const int64_t N = 3, T = 5, I = 3, H = 4;
    const std::vector<int64_t> len{5, 2, 3};
    for (const std::string kind : {"lstm", "gru", "lnlstm"}) {
        INFO(kind);
        manual_seed(11);
        auto m = make_rnn(kind, RNNOptions{.input_size = I, .hidden_size = H, .num_layers = 2, .batch_first = true});
        Tensor x = randn({N, T, I}).requires_grad_();
        const Tensor w = randn({N, T, H}), wh = randn({2, N, H});
        const auto [out_g, h_n_g, c_n_g] = run(*m, x, {}, {}, test::labels_of(len));
        (sum(out_g * w) + sum(h_n_g * wh)).backward();
        const Tensor out = out_g.detach(), h_n = h_n_g.detach();
        std::vector<Tensor> batch_grads;
        for (const auto& p : m->parameters()) batch_grads.push_back(p.grad().clone());
        m->zero_grad();
        std::vector<Tensor> alone_grads;
        for (int64_t n = 0; n < N; ++n) {
            const int64_t L = len[static_cast<size_t>(n)];
            Tensor xn = x.detach().narrow(0, n, 1).narrow(1, 0, L).clone().requires_grad_();
            const auto [o, h, c] = run(*m, xn, {}, {}, {});
            require_close(out.narrow(0, n, 1).narrow(1, 0, L), o, 1e-6, "output of sample " + std::to_string(n));
            if (L < T) CHECK(out.narrow(0, n, 1).narrow(1, L, T - L).abs().sum().item<float>() == 0.0f);
            require_close(h_n.narrow(1, n, 1), h, 1e-6, "h_n of sample " + std::to_string(n));
            (sum(o * w.narrow(0, n, 1).narrow(1, 0, L)) + sum(h * wh.narrow(1, n, 1))).backward();
            require_close(x.grad().narrow(0, n, 1).narrow(1, 0, L), xn.grad(), 1e-5, "dx of sample " + std::to_string(n));
            if (L < T) CHECK(x.grad().narrow(0, n, 1).narrow(1, L, T - L).abs().sum().item<float>() == 0.0f);
        }
        size_t i = 0;
        for (const auto& p : m->parameters()) require_close(batch_grads[i++], p.grad(), 1e-5, "parameter gradient");
    }
}

TEST_CASE("nn rnn: gradcheck of LSTM, GRU and LayerNormLSTM", "[nn][rnn][gradcheck]") {
    for (const std::string kind : {"lstm", "gru", "lnlstm"}) {
        INFO(kind);
        manual_seed(5);
        auto m = make_rnn(kind, RNNOptions{.input_size = 2, .hidden_size = 3, .num_layers = 2});
        check_gradcheck(gradcheck(*m, randn({3, 2, 2}).requires_grad_()));
        std::vector<Tensor> inputs{randn({2, 4, 2}).requires_grad_()};
        for (const auto& p : m->parameters()) inputs.push_back(p);
        const Tensor lengths = test::labels_of({4, 2});
        m->train();
        check_gradcheck(gradcheck(
            [&](const std::vector<Tensor>& in) {
                return std::get<1>(run(*m, in[0].transpose(0, 1), {}, {}, lengths));
            },
            inputs));
        if (kind == "gru") continue;
        // (output, h_n, c_n) together, batch-first, with lengths: c_n is differentiable too.
        auto bf = make_rnn(kind, RNNOptions{.input_size = 2, .hidden_size = 3, .num_layers = 2, .batch_first = true});
        inputs.resize(1);
        for (const auto& p : bf->parameters()) inputs.push_back(p);
        check_gradcheck(gradcheck(
            [&](const std::vector<Tensor>& in) {
                const auto [out, h_n, c_n] = run(*bf, in[0], {}, {}, lengths);
                return cat({out.reshape({-1}), h_n.reshape({-1}), c_n.reshape({-1})});
            },
            inputs));
    }
}

TEST_CASE("nn rnn: names, repr, clone and errors", "[nn][rnn]") {
    LSTM lstm(LSTMOptions{.input_size = 3, .hidden_size = 4, .num_layers = 2, .batch_first = true});
    std::vector<std::string> names;
    for (const auto& [name, t] : lstm.named_parameters()) names.push_back(name);
    CHECK(names == std::vector<std::string>{"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_ih_l1",
                                            "weight_hh_l1", "bias_ih_l1", "bias_hh_l1"});
    CHECK(lstm.weight_ih[1].shape() == Shape{16, 4});
    CHECK(lstm.to_string() == "LSTM(3, 4, num_layers=2, batch_first=True)");
    const auto copy = lstm.clone();
    CHECK(test::bit_equal(find_tensor(copy->named_parameters(), "weight_hh_l1"), lstm.weight_hh[1]));
    GRU gru(2, 5);
    CHECK(gru.weight_ih[0].shape() == Shape{15, 2});
    LayerNormLSTM ln(2, 3);
    CHECK(find_tensor(ln.named_parameters(), "ln_ih_l0.bias").defined());
    CHECK_FALSE(find_tensor(ln.named_parameters(), "ln_hh_l0.bias").defined());
    CHECK(ln.clone()->state_dict().size() == ln.state_dict().size());
    CHECK_THROWS_WITH(lstm.forward(randn({2, 5, 2})), Contains("LSTM: expected input [N, T, 3]") && Contains("[2, 5, 2]"));
    CHECK_THROWS_WITH(lstm.forward(randn({2, 5, 3}), {randn({1, 2, 4}), Tensor{}}),
                      Contains("h0 of shape [2, 2, 4]"));
    CHECK_THROWS_WITH(ln.forward(randn({4, 2, 2}), {}, test::labels_of({5, 1})), Contains("length 5"));
    CHECK_THROWS_WITH(LSTM(LSTMOptions{.input_size = 3, .hidden_size = 0}), Contains("hidden_size"));
}

TEST_CASE("nn rnn: unbatched [T, I] input runs as a batch of one, as torch", "[nn][rnn]") {
    // torch.nn.LSTM/GRU take [T, I] with states [num_layers, H] and return them without the batch
    // dimension; the values are those of the batch of one (the batched path is torch's, above).
    manual_seed(4);
    const int64_t T = 5, I = 3, H = 4, layers = 2;
    for (const std::string kind : {"lstm", "gru", "lnlstm"}) {
        for (const bool batch_first : {false, true}) {
            INFO(kind << ", batch_first " << batch_first);
            const auto rnn = make_rnn(kind, RNNOptions{I, H, layers, true, batch_first});
            const Tensor x = randn({T, I}), h0 = randn({layers, H}), c0 = randn({layers, H}), dout = randn({T, H});
            const Tensor x1 = x.unsqueeze(batch_first ? 0 : 1);
            const auto forward = [&](const Tensor& input, const Tensor& h, const Tensor& c) {
                const auto [y, h_n, c_n] = run(*rnn, input, h, kind == "gru" ? Tensor{} : c, Tensor{});
                return c_n.defined() ? std::vector<Tensor>{y, h_n, c_n} : std::vector<Tensor>{y, h_n};
            };
            Tensor xu = test::leaf(x), xb = test::leaf(x1);
            const std::vector<Tensor> alone = forward(xu, h0, c0), batched = forward(xb, h0.unsqueeze(1), c0.unsqueeze(1));
            REQUIRE(alone[0].shape() == Shape{T, H});
            require_close(alone[0], batched[0].squeeze(batch_first ? 0 : 1), 0.0, "output");
            for (size_t i = 1; i < alone.size(); ++i) {
                REQUIRE(alone[i].shape() == Shape{layers, H});
                require_close(alone[i], batched[i].squeeze(1), 0.0, "final state");
            }
            alone[0].backward(dout);
            batched[0].backward(dout.unsqueeze(batch_first ? 0 : 1));
            require_close(xu.grad(), xb.grad().squeeze(batch_first ? 0 : 1), 0.0, "input gradient");
            CHECK(forward(x, {}, {})[0].shape() == Shape{T, H});  // zero initial states
            CHECK_THROWS_WITH(forward(x, h0.unsqueeze(1), {}), Contains("for unbatched 2-D input, h0 should also be 2-D"));
            CHECK_THROWS_WITH(forward(randn({T, I + 1}), {}, {}), Contains("expected unbatched input [T, 3], got [5, 4]"));
        }
    }
    LSTM lstm(3, 4);
    CHECK_THROWS_WITH(lstm.forward(randn({5, 3}), {}, test::labels_of({5})), Contains("lengths are for batched input"));
}

TEST_CASE("nn rnn: dropout acts between layers in training only", "[nn][rnn]") {
    for (const std::string kind : {"lstm", "gru", "lnlstm"}) {
        INFO(kind);
        manual_seed(12);
        auto m = make_rnn(kind, RNNOptions{.input_size = 3, .hidden_size = 8, .num_layers = 2, .dropout = 0.5});
        auto one = make_rnn(kind, RNNOptions{.input_size = 3, .hidden_size = 8, .num_layers = 1, .dropout = 0.5});
        const Tensor x = randn({4, 2, 3});
        const Tensor train_out = m->forward(x);
        CHECK((train_out - m->forward(x)).abs().sum().item<float>() > 0.0f);  // fresh masks each call
        m->eval();
        test::require_close(m->forward(x), m->forward(x), 0.0, "eval is deterministic");
        // No dropout after the last layer: a one-layer module is deterministic in training too.
        test::require_close(one->forward(x), one->forward(x), 0.0, "one layer");
    }
}
