// Recurrent layers (torch.nn.LSTM, GRU) on the fused lstm_layer / gru_layer ops, with PyTorch's
// options, weight names (weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0), gate order and
// initialisation, plus a lengths tensor for variable-length batches; and LayerNormLSTM (Ba, Kiros
// and Hinton 2016), which PyTorch does not ship.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "normnet/arg.hpp"
#include "normnet/export.hpp"
#include "normnet/module.hpp"
#include "normnet/nn/norm.hpp"

namespace normnet {

/// Options of LSTM and GRU (torch.nn.LSTM, torch.nn.GRU); bidirectional and proj_size are not offered.
struct RNNOptions {
    using Self = RNNOptions;
    NORMNET_ARG(int64_t, input_size) = 0;
    NORMNET_ARG(int64_t, hidden_size) = 0;
    NORMNET_ARG(int64_t, num_layers) = 1;
    NORMNET_ARG(bool, bias) = true;
    NORMNET_ARG(bool, batch_first) = false;  // input [N, T, I] instead of PyTorch's default [T, N, I]
    NORMNET_ARG(double, dropout) = 0.0;      // on the outputs of every layer but the last, in training
};
using LSTMOptions = RNNOptions;
using GRUOptions = RNNOptions;

/// What LSTM, GRU and LayerNormLSTM share: the options, the per-layer weights weight_ih_l<k>
/// [G * H, I or H] and weight_hh_l<k> [G * H, H] (G gates) drawn from U(-1/sqrt(H), 1/sqrt(H)) as
/// PyTorch, and the layout handling. lengths (int64 [N], each in [1, T]): sample n runs
/// lengths[n] steps; its later outputs are zeros and take no gradient, its final states are those
/// after its last step (as torch with pack_padded_sequence).
class NORMNET_API RNNBase : public Module {
public:
    /// The output alone, for code that sees the layer as a Module (a Sequential, Module::forward
    /// through a base pointer). LSTM, GRU and LayerNormLSTM's own forward(x) returns the states
    /// too, as libtorch's.
    Tensor forward(const Tensor& input) override { return output_of(input); }
    const RNNOptions& options() const { return options_; }
    /// Draws every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) again.
    void reset_parameters();
    std::string extra_repr() const override;

    std::vector<Tensor> weight_ih, weight_hh, bias_ih, bias_hh;  // per layer; biases undefined without bias

protected:
    /// forward(input)'s output, from the subclass's full forward.
    virtual Tensor output_of(const Tensor& input) = 0;
    /// Registers the weights of `gates` gates per layer (and the biases when `biases` and options.bias).
    RNNBase(const RNNOptions& options, int64_t gates, const char* layer, bool biases = true);
    /// input [T, N, I] ([N, T, I] with batch_first) -> batch-first [N, T, I], checked.
    Tensor to_batch_first(const Tensor& input) const;
    /// Unbatched input [T, I] (as torch) runs as a batch of one: the input as [1, T, I] in the
    /// caller's layout (lengths refused: they are per sample of a batch), ...
    Tensor batch_of_one(const Tensor& input, const Tensor& lengths) const;
    /// ... each state [num_layers, H] as [num_layers, 1, H] (undefined stays undefined) ...
    Tensor state_of_one(const Tensor& hx, const char* what) const;
    /// ... and the output [1, T, H] in the caller's layout back as [T, H].
    Tensor output_of_one(const Tensor& output) const;
    /// Batch-first output [N, T, H] -> the caller's layout.
    Tensor from_batch_first(const Tensor& output) const;
    /// Layer k's initial state from hx [num_layers, N, H] (undefined stays undefined).
    Tensor initial(const Tensor& hx, int64_t k, int64_t N, const char* what) const;
    /// Dropout between layers (training only).
    Tensor between_layers(const Tensor& x, int64_t k) const;
    /// clone() of a module M derived from RNNBase: M(options) built without advancing the default
    /// generator (as Cloneable<M>), then the state copied.
    template <class M, class Options>
    static std::shared_ptr<Module> clone_of(const M& self, const Options& options) {
        const auto state = default_generator().state();
        auto copy = std::make_shared<M>(options);
        default_generator().set_state(state);
        copy->copy_state_from(self);
        return copy;
    }

    RNNOptions options_;
    const char* layer_;
};

// LSTM, GRU and LayerNormLSTM's forward(x) returns the states with the output, as libtorch's, so it
// hides Module's single-tensor forward (RNNBase still overrides that one, for containers).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverloaded-virtual"

/// A multi-layer LSTM (torch.nn.LSTM, gates i, f, g, o), every layer one fused lstm_layer.
class NORMNET_API LSTM : public RNNBase {
public:
    explicit LSTM(const LSTMOptions& options) : RNNBase(options, 4, "LSTM") {}
    LSTM(int64_t input_size, int64_t hidden_size) : LSTM(LSTMOptions{input_size, hidden_size}) {}
    /// input [T, N, I] ([N, T, I] with batch_first), hx = (h0, c0) each [num_layers, N, H] or
    /// undefined (zeros) -> (output [T, N, H] of the last layer, (h_n, c_n) [num_layers, N, H]).
    /// All three are differentiable (as torch's): `auto [output, state] = lstm.forward(x);`
    /// then `auto [h_n, c_n] = state;`. Unbatched input [T, I] takes and gives the same without
    /// the N dimension.
    std::tuple<Tensor, std::tuple<Tensor, Tensor>> forward(const Tensor& input, const std::tuple<Tensor, Tensor>& hx = {},
                                                           const Tensor& lengths = {});
    /// lstm(x): forward(x), as libtorch's.
    std::tuple<Tensor, std::tuple<Tensor, Tensor>> operator()(const Tensor& input,
                                                              const std::tuple<Tensor, Tensor>& hx = {},
                                                              const Tensor& lengths = {}) {
        return forward(input, hx, lengths);
    }
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "LSTM"; }
    std::shared_ptr<Module> clone() const override;

protected:
    Tensor output_of(const Tensor& input) override { return std::get<0>(forward(input)); }
};

/// A multi-layer GRU (torch.nn.GRU, gates r, z, n), every layer one fused gru_layer.
class NORMNET_API GRU : public RNNBase {
public:
    explicit GRU(const GRUOptions& options) : RNNBase(options, 3, "GRU") {}
    GRU(int64_t input_size, int64_t hidden_size) : GRU(GRUOptions{input_size, hidden_size}) {}
    /// input as LSTM's, h0 [num_layers, N, H] or undefined -> (output, h_n [num_layers, N, H]).
    std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& h0 = {}, const Tensor& lengths = {});
    /// gru(x): forward(x).
    std::tuple<Tensor, Tensor> operator()(const Tensor& input, const Tensor& h0 = {}, const Tensor& lengths = {}) {
        return forward(input, h0, lengths);
    }
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "GRU"; }
    std::shared_ptr<Module> clone() const override;

protected:
    Tensor output_of(const Tensor& input) override { return std::get<0>(forward(input)); }
};

/// Options of LayerNormLSTM: RNNOptions and the LayerNorms' eps.
struct LayerNormLSTMOptions {
    using Self = LayerNormLSTMOptions;
    NORMNET_ARG(int64_t, input_size) = 0;
    NORMNET_ARG(int64_t, hidden_size) = 0;
    NORMNET_ARG(int64_t, num_layers) = 1;
    NORMNET_ARG(bool, bias) = true;          // the shift of ln_ih (the gate bias) and of ln_c
    NORMNET_ARG(bool, batch_first) = false;
    NORMNET_ARG(double, dropout) = 0.0;
    NORMNET_ARG(double, layer_norm_eps) = 1e-5;
};

/// The LayerNorm LSTM of Ba, Kiros and Hinton (2016), eq. (20)-(22): per layer k and step,
///   gates = ln_ih_l<k>(W_ih x_t) + ln_hh_l<k>(W_hh h_{t-1})   (each LayerNorm over all 4H gates)
///   c_t = sigmoid(f) * c_{t-1} + sigmoid(i) * tanh(g),  h_t = sigmoid(o) * tanh(ln_c_l<k>(c_t))
/// with gates in PyTorch's order i, f, g, o. ln_ih carries the gate bias (ln_hh has none, its
/// shift would duplicate it). Every layer is one fused layer_norm_lstm_layer; the LayerNorm
/// children only hold the parameters (their state_dict names). Same interface and lengths rule
/// as LSTM.
class NORMNET_API LayerNormLSTM : public RNNBase {
public:
    explicit LayerNormLSTM(const LayerNormLSTMOptions& options);
    LayerNormLSTM(int64_t input_size, int64_t hidden_size)
        : LayerNormLSTM(LayerNormLSTMOptions{input_size, hidden_size}) {}
    std::tuple<Tensor, std::tuple<Tensor, Tensor>> forward(const Tensor& input, const std::tuple<Tensor, Tensor>& hx = {},
                                                           const Tensor& lengths = {});
    std::tuple<Tensor, std::tuple<Tensor, Tensor>> operator()(const Tensor& input,
                                                              const std::tuple<Tensor, Tensor>& hx = {},
                                                              const Tensor& lengths = {}) {
        return forward(input, hx, lengths);
    }
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "LayerNormLSTM"; }
    std::shared_ptr<Module> clone() const override;
    const LayerNormLSTMOptions& ln_options() const { return ln_options_; }

    std::vector<std::shared_ptr<LayerNorm>> ln_ih, ln_hh, ln_c;  // per layer

protected:
    Tensor output_of(const Tensor& input) override { return std::get<0>(forward(input)); }

private:
    LayerNormLSTMOptions ln_options_;
};

#pragma GCC diagnostic pop

}  // namespace normnet
