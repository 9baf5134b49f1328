// LSTM, GRU and LayerNormLSTM: PyTorch's per-layer weights and layout, each LSTM/GRU layer one
// fused op over the whole sequence; LayerNormLSTM composed of differentiable ops step by step.
#include "normnet/nn/rnn.hpp"

#include <cmath>

#include "normnet/ops.hpp"
#include "repr.hpp"

namespace normnet {
namespace {

RNNOptions common_options(const LayerNormLSTMOptions& o) {
    return RNNOptions{o.input_size, o.hidden_size, o.num_layers, o.bias, o.batch_first, o.dropout};
}

}  // namespace

RNNBase::RNNBase(const RNNOptions& options, int64_t gates, const char* layer, bool biases)
    : options_(options), layer_(layer) {
    const auto& o = options;
    NORMNET_CHECK(o.input_size > 0 && o.hidden_size > 0 && o.num_layers > 0, layer, ": input_size (", o.input_size,
                  "), hidden_size (", o.hidden_size, ") and num_layers (", o.num_layers, ") must be positive");
    NORMNET_CHECK(o.dropout >= 0.0 && o.dropout <= 1.0, layer,
                  ": dropout should be a number in range [0, 1] representing the probability of an element being zeroed, got ",
                  o.dropout);
    const int64_t G = gates * o.hidden_size;
    for (int64_t k = 0; k < o.num_layers; ++k) {
        const std::string s = std::to_string(k);
        const int64_t in = k == 0 ? o.input_size : o.hidden_size;
        weight_ih.push_back(register_parameter("weight_ih_l" + s, empty({G, in})));
        weight_hh.push_back(register_parameter("weight_hh_l" + s, empty({G, o.hidden_size})));
        const bool b = biases && o.bias;
        bias_ih.push_back(b ? register_parameter("bias_ih_l" + s, empty({G})) : Tensor{});
        bias_hh.push_back(b ? register_parameter("bias_hh_l" + s, empty({G})) : Tensor{});
    }
    reset_parameters();
}

void RNNBase::reset_parameters() {
    const auto bound = static_cast<float>(1.0 / std::sqrt(static_cast<double>(options_.hidden_size)));
    for (const auto& p : parameters(false)) p.detach().uniform_(-bound, bound);
}

std::string RNNBase::extra_repr() const {
    const auto& o = options_;
    std::string s = std::to_string(o.input_size) + ", " + std::to_string(o.hidden_size);
    if (o.num_layers != 1) s += ", num_layers=" + std::to_string(o.num_layers);
    if (!o.bias) s += ", bias=False";
    if (o.batch_first) s += ", batch_first=True";
    if (o.dropout != 0.0) s += ", dropout=" + detail::python_float_repr(o.dropout);
    return s;
}

Tensor RNNBase::to_batch_first(const Tensor& input) const {
    NORMNET_CHECK(input.dim() == 3 && input.size(2) == options_.input_size, layer_, ": expected input ",
                  options_.batch_first ? "[N, T, " : "[T, N, ", options_.input_size, "], got ", input.shape());
    return options_.batch_first ? input : input.transpose(0, 1);
}

Tensor RNNBase::from_batch_first(const Tensor& output) const {
    return options_.batch_first ? output : output.transpose(0, 1);
}

Tensor RNNBase::initial(const Tensor& hx, int64_t k, int64_t N, const char* what) const {
    if (!hx.defined()) return {};
    const Shape want{options_.num_layers, N, options_.hidden_size};
    NORMNET_CHECK(hx.shape() == want, layer_, ": expected ", what, " of shape ", want, ", got ", hx.shape());
    return hx.select(0, k);
}

Tensor RNNBase::between_layers(const Tensor& x, int64_t k) const {
    return k + 1 < options_.num_layers ? dropout(x, options_.dropout, is_training()) : x;
}

// ---------------------------------------------------------------- LSTM, GRU

std::tuple<Tensor, std::tuple<Tensor, Tensor>> LSTM::forward(const Tensor& input, const std::tuple<Tensor, Tensor>& hx,
                                                             const Tensor& lengths) {
    Tensor x = to_batch_first(input);
    const int64_t N = x.size(0);
    std::vector<Tensor> h_n, c_n;
    for (int64_t k = 0; k < options_.num_layers; ++k) {
        Tensor c;
        x = lstm_layer(x, initial(std::get<0>(hx), k, N, "h0"), initial(std::get<1>(hx), k, N, "c0"), weight_ih[k],
                       weight_hh[k], bias_ih[k], bias_hh[k], lengths, &c);
        h_n.push_back(last_step(x, lengths));
        c_n.push_back(c);
        x = between_layers(x, k);
    }
    return {from_batch_first(x), {stack(h_n), stack(c_n)}};
}

std::shared_ptr<Module> LSTM::clone() const { return clone_of(*this, options_); }

std::tuple<Tensor, Tensor> GRU::forward(const Tensor& input, const Tensor& h0, const Tensor& lengths) {
    Tensor x = to_batch_first(input);
    const int64_t N = x.size(0);
    std::vector<Tensor> h_n;
    for (int64_t k = 0; k < options_.num_layers; ++k) {
        x = gru_layer(x, initial(h0, k, N, "h0"), weight_ih[k], weight_hh[k], bias_ih[k], bias_hh[k], lengths);
        h_n.push_back(last_step(x, lengths));
        x = between_layers(x, k);
    }
    return {from_batch_first(x), stack(h_n)};
}

std::shared_ptr<Module> GRU::clone() const { return clone_of(*this, options_); }

// ---------------------------------------------------------------- LayerNormLSTM

LayerNormLSTM::LayerNormLSTM(const LayerNormLSTMOptions& options)
    : RNNBase(common_options(options), 4, "LayerNormLSTM", /*biases=*/false), ln_options_(options) {
    const int64_t H = options.hidden_size;
    for (int64_t k = 0; k < options.num_layers; ++k) {
        const std::string s = std::to_string(k);
        const double eps = options.layer_norm_eps;
        ln_ih.push_back(register_module("ln_ih_l" + s, std::make_shared<LayerNorm>(LayerNormOptions{{4 * H}, eps, true, options.bias})));
        ln_hh.push_back(register_module("ln_hh_l" + s, std::make_shared<LayerNorm>(LayerNormOptions{{4 * H}, eps, true, false})));
        ln_c.push_back(register_module("ln_c_l" + s, std::make_shared<LayerNorm>(LayerNormOptions{{H}, eps, true, options.bias})));
    }
}

std::shared_ptr<Module> LayerNormLSTM::clone() const { return clone_of(*this, ln_options_); }

std::tuple<Tensor, std::tuple<Tensor, Tensor>> LayerNormLSTM::forward(const Tensor& input,
                                                                      const std::tuple<Tensor, Tensor>& hx,
                                                                      const Tensor& lengths) {
    Tensor x = to_batch_first(input);
    const int64_t N = x.size(0), T = x.size(1), H = options_.hidden_size;
    // keep[t]: [N, 1], 1 where step t is within the sample's length (masks only with lengths).
    std::vector<Tensor> keep;
    if (lengths.defined()) {
        NORMNET_CHECK((lengths.dtype() == kInt64 && lengths.shape() == Shape{N}), "LayerNormLSTM: lengths must be int64 [",
                      N, "], got ", lengths.dtype(), " ", lengths.shape());
        const Tensor l = lengths.contiguous();
        for (int64_t n = 0; n < N; ++n) {
            const int64_t v = l.data_ptr<int64_t>()[n];
            NORMNET_CHECK(v >= 1 && v <= T, "LayerNormLSTM: length ", v, " of sample ", n, " is not in [1, ", T, "]");
        }
        for (int64_t t = 0; t < T; ++t) {
            Tensor m = empty({N, 1});
            for (int64_t n = 0; n < N; ++n) m.data()[n] = l.data_ptr<int64_t>()[n] > t ? 1.0f : 0.0f;
            keep.push_back(m);
        }
    }
    std::vector<Tensor> h_n, c_n;
    for (int64_t k = 0; k < options_.num_layers; ++k) {
        Tensor h = initial(std::get<0>(hx), k, N, "h0"), c = initial(std::get<1>(hx), k, N, "c0");
        if (!h.defined()) h = zeros({N, H});
        if (!c.defined()) c = zeros({N, H});
        const Tensor gx = ln_ih[k]->forward(linear(x, weight_ih[k]));  // [N, T, 4H], every step at once
        std::vector<Tensor> outs;
        for (int64_t t = 0; t < T; ++t) {
            const Tensor g = gx.select(1, t) + ln_hh[k]->forward(linear(h, weight_hh[k]));
            const Tensor i = sigmoid(g.narrow(1, 0, H)), f = sigmoid(g.narrow(1, H, H));
            const Tensor gg = tanh(g.narrow(1, 2 * H, H)), o = sigmoid(g.narrow(1, 3 * H, H));
            const Tensor c_new = f * c + i * gg;
            const Tensor h_new = o * tanh(ln_c[k]->forward(c_new));
            if (keep.empty()) {
                h = h_new, c = c_new;
                outs.push_back(h_new);
            } else {  // past its length a sample keeps its state and outputs zeros
                const Tensor& m = keep[t];
                h = h + m * (h_new - h), c = c + m * (c_new - c);
                outs.push_back(h_new * m);
            }
        }
        h_n.push_back(h);
        c_n.push_back(c);
        x = between_layers(stack(outs, 1), k);
    }
    return {from_batch_first(x), {stack(h_n), stack(c_n)}};
}

}  // namespace normnet
