// LSTM, GRU and LayerNormLSTM: PyTorch's per-layer weights and layout, each layer one fused op
// over the whole sequence (lstm_layer, gru_layer, layer_norm_lstm_layer).
#include "normnet/nn/rnn.hpp"

#include <cmath>
#include <span>
#include <vector>

#include "../pool.hpp"
#include "normnet/ops.hpp"
#include "repr.hpp"

namespace normnet {
namespace {

// The layers' final states before they are stacked, on the small-object pool: a training step
// allocates nothing from the heap once warmed up (tests/alloc).
using LayerStates = std::vector<Tensor, detail::PoolAllocator<Tensor>>;
Tensor stack_states(const LayerStates& states) { return stack(std::span<const Tensor>(states.data(), states.size())); }

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
        const int64_t in = k == 0 ? o.input_size() : o.hidden_size();
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
                  options_.batch_first ? "[N, T, " : "[T, N, ", options_.input_size, "] or unbatched [T, ",
                  options_.input_size, "], got ", input.shape());
    return options_.batch_first ? input : input.transpose(0, 1);
}

Tensor RNNBase::from_batch_first(const Tensor& output) const {
    return options_.batch_first ? output : output.transpose(0, 1);
}

Tensor RNNBase::batch_of_one(const Tensor& input, const Tensor& lengths) const {
    NORMNET_CHECK(input.size(1) == options_.input_size, layer_, ": expected unbatched input [T, ", options_.input_size,
                  "], got ", input.shape());
    NORMNET_CHECK(!lengths.defined(), layer_, ": lengths are for batched input; got unbatched input ", input.shape());
    return input.unsqueeze(options_.batch_first ? 0 : 1);
}

Tensor RNNBase::state_of_one(const Tensor& hx, const char* what) const {
    if (!hx.defined()) return hx;
    NORMNET_CHECK(hx.dim() == 2, layer_, ": for unbatched 2-D input, ", what, " should also be 2-D [num_layers, ",
                  options_.hidden_size, "], got ", hx.shape());
    return hx.unsqueeze(1);
}

Tensor RNNBase::output_of_one(const Tensor& output) const { return output.squeeze(options_.batch_first ? 0 : 1); }

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
    if (input.dim() == 2) {
        const auto [y, state] = forward(batch_of_one(input, lengths),
                                        {state_of_one(std::get<0>(hx), "h0"), state_of_one(std::get<1>(hx), "c0")});
        return {output_of_one(y), {std::get<0>(state).squeeze(1), std::get<1>(state).squeeze(1)}};
    }
    Tensor x = to_batch_first(input);
    const int64_t N = x.size(0);
    LayerStates h_n, c_n;
    for (int64_t k = 0; k < options_.num_layers; ++k) {
        Tensor c;
        x = lstm_layer(x, initial(std::get<0>(hx), k, N, "h0"), initial(std::get<1>(hx), k, N, "c0"), weight_ih[k],
                       weight_hh[k], bias_ih[k], bias_hh[k], lengths, &c);
        h_n.push_back(last_step(x, lengths));
        c_n.push_back(c);
        x = between_layers(x, k);
    }
    return {from_batch_first(x), {stack_states(h_n), stack_states(c_n)}};
}

std::shared_ptr<Module> LSTM::clone() const { return clone_of(*this, options_); }

std::tuple<Tensor, Tensor> GRU::forward(const Tensor& input, const Tensor& h0, const Tensor& lengths) {
    if (input.dim() == 2) {
        const auto [y, h_n] = forward(batch_of_one(input, lengths), state_of_one(h0, "h0"));
        return {output_of_one(y), h_n.squeeze(1)};
    }
    Tensor x = to_batch_first(input);
    const int64_t N = x.size(0);
    LayerStates h_n;
    for (int64_t k = 0; k < options_.num_layers; ++k) {
        x = gru_layer(x, initial(h0, k, N, "h0"), weight_ih[k], weight_hh[k], bias_ih[k], bias_hh[k], lengths);
        h_n.push_back(last_step(x, lengths));
        x = between_layers(x, k);
    }
    return {from_batch_first(x), stack_states(h_n)};
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
    if (input.dim() == 2) {
        const auto [y, state] = forward(batch_of_one(input, lengths),
                                        {state_of_one(std::get<0>(hx), "h0"), state_of_one(std::get<1>(hx), "c0")});
        return {output_of_one(y), {std::get<0>(state).squeeze(1), std::get<1>(state).squeeze(1)}};
    }
    Tensor x = to_batch_first(input);
    const int64_t N = x.size(0);
    LayerStates h_n, c_n;
    for (int64_t k = 0; k < options_.num_layers; ++k) {
        Tensor c;
        x = layer_norm_lstm_layer(x, initial(std::get<0>(hx), k, N, "h0"), initial(std::get<1>(hx), k, N, "c0"),
                                  weight_ih[k], weight_hh[k], ln_ih[k]->weight, ln_ih[k]->bias, ln_hh[k]->weight,
                                  ln_c[k]->weight, ln_c[k]->bias, ln_options_.layer_norm_eps, lengths, &c);
        h_n.push_back(last_step(x, lengths));
        c_n.push_back(c);
        x = between_layers(x, k);
    }
    return {from_batch_first(x), {stack_states(h_n), stack_states(c_n)}};
}

}  // namespace normnet
