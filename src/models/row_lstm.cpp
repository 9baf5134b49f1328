// RowLSTM: rows as steps through an LSTM (plain or LayerNorm), the head on the last step.
#include "normnet/models/row_lstm.hpp"

#include "normnet/ops.hpp"

namespace normnet::models {

RowLSTM::RowLSTM(const RowLSTMOptions& options) : options_(options) {
    const auto& o = options;
    check_norm_site(o.norm, NormSite::cell, "RowLSTM");
    if (o.norm == NormKind::layer) {
        rnn = std::make_shared<LayerNormLSTM>(LayerNormLSTMOptions{.input_size = o.row_size,
                                                                   .hidden_size = o.hidden_size,
                                                                   .num_layers = o.num_layers,
                                                                   .batch_first = true,
                                                                   .dropout = o.dropout});
    } else {
        rnn = std::make_shared<LSTM>(LSTMOptions{.input_size = o.row_size,
                                                 .hidden_size = o.hidden_size,
                                                 .num_layers = o.num_layers,
                                                 .batch_first = true,
                                                 .dropout = o.dropout});
    }
    add_child("rnn", rnn);
    head = register_module("head", std::make_shared<Linear>(o.hidden_size, o.num_classes));
}

Tensor RowLSTM::forward(const Tensor& x_in) {
    const auto& o = options_;
    const int64_t pixels = o.rows * o.row_size;
    NORMNET_CHECK(x_in.dim() >= 2 && x_in.numel() == x_in.size(0) * pixels &&
                      (x_in.dim() == 2 || x_in.size(-1) == o.row_size),
                  "RowLSTM: expected images [N, 1, ", o.rows, ", ", o.row_size, "] or [N, ", pixels, "], got ",
                  x_in.shape());
    const Tensor x = x_in.reshape({x_in.size(0), o.rows, o.row_size});
    return head->forward(rnn->forward(x).select(1, o.rows - 1));
}

}  // namespace normnet::models
