// RowLSTM: an image classifier that reads a 28x28 image row by row (28 steps of 28 pixels) with
// an LSTM, plain or LayerNorm (Ba et al. 2016), and classifies from the last step.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "normnet/arg.hpp"
#include "normnet/export.hpp"
#include "normnet/module.hpp"
#include "normnet/nn/linear.hpp"
#include "normnet/nn/norm_choice.hpp"
#include "normnet/nn/rnn.hpp"

namespace normnet::models {

/// Options of RowLSTM; the defaults are issue 13's MNIST model.
struct RowLSTMOptions {
    using Self = RowLSTMOptions;
    NORMNET_ARG(int64_t, rows) = 28;           // steps
    NORMNET_ARG(int64_t, row_size) = 28;       // pixels per step (input_size)
    NORMNET_ARG(int64_t, hidden_size) = 128;
    NORMNET_ARG(int64_t, num_layers) = 1;
    NORMNET_ARG(int64_t, num_classes) = 10;
    NORMNET_ARG(double, dropout) = 0.0;        // between LSTM layers
    NORMNET_ARG(Norm, norm) = NormKind::layer;  // layer: LayerNormLSTM; none: LSTM
};

/// "rnn" (a batch-first LayerNormLSTM or LSTM) over the rows and a linear "head" on the last
/// step's hidden state.
class NORMNET_API RowLSTM : public Cloneable<RowLSTM> {
public:
    explicit RowLSTM(const RowLSTMOptions& options = {});
    /// x: [N, 1, rows, row_size], [N, rows, row_size] or [N, rows * row_size] -> logits [N, num_classes].
    Tensor forward(const Tensor& x) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "RowLSTM"; }
    const RowLSTMOptions& options() const { return options_; }

    std::shared_ptr<RNNBase> rnn;  // LayerNormLSTM or LSTM
    std::shared_ptr<Linear> head;

private:
    RowLSTMOptions options_;
};

}  // namespace normnet::models
