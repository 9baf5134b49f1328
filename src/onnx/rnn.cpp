// ONNX forms of the recurrent layers: LSTM and GRU as ONNX's LSTM and GRU operators (one per
// layer, the gates reordered from PyTorch's to ONNX's), and the LayerNorm LSTM, which ONNX has no
// operator for, unrolled over its (fixed) steps into the MatMul, LayerNormalization, Sigmoid,
// Tanh, Mul and Add of Ba et al.'s cell.
#include "emit.hpp"
#include "normnet/nn/rnn.hpp"
#include "normnet/ops.hpp"

namespace normnet {

using onnx::GraphBuilder;
using onnx::Ints;
using onnx::Value;
namespace emit = onnx::emit;

namespace {

// The gates' blocks of hidden_size rows of w (a weight, or a bias) in the order `order` gives,
// with a leading dimension of 1 (ONNX's num_directions): PyTorch stores them i, f, g, o (LSTM)
// or r, z, n (GRU); ONNX wants i, o, f, c and z, r, h.
Tensor gates_in_order(const Tensor& w, int64_t hidden_size, const std::vector<int64_t>& order) {
    std::vector<Tensor> blocks;
    for (int64_t gate : order) blocks.push_back(w.narrow(0, gate * hidden_size, hidden_size));
    return cat(blocks, 0).unsqueeze(0).contiguous();
}

// x must be a batch of sequences of the RNN's input size.
void check_sequences(GraphBuilder& g, const RNNOptions& o, const Value& x) {
    if (x.dim() != 3 || x.size(2) != o.input_size) {
        g.fail("expected a batch of sequences of " + std::to_string(o.input_size) + " features");
    }
}

// LSTM or GRU: ONNX's operator per layer on time-major [T, N, I], its output Y [T, 1, N, H]
// reshaped to the next layer's input.
Value onnx_rnn(GraphBuilder& g, const RNNBase& m, const Value& x, const char* op, const std::vector<int64_t>& order,
               const std::vector<onnx::Attribute>& extra) {
    const RNNOptions& o = m.options();
    check_sequences(g, o, x);
    const int64_t H = o.hidden_size;
    Value seq = o.batch_first ? g.transpose(x, {1, 0, 2}) : x;
    for (size_t k = 0; k < m.weight_ih.size(); ++k) {
        const std::string s = std::to_string(k);
        std::vector<Value> inputs{seq, g.tensor(gates_in_order(m.weight_ih[k], H, order), "W_l" + s),
                                  g.tensor(gates_in_order(m.weight_hh[k], H, order), "R_l" + s)};
        if (m.bias_ih[k].defined()) {
            const Tensor b = cat({gates_in_order(m.bias_ih[k], H, order), gates_in_order(m.bias_hh[k], H, order)}, 1);
            inputs.push_back(g.tensor(b, "B_l" + s));
        }
        std::vector<onnx::Attribute> attributes{{"hidden_size", H}};
        attributes.insert(attributes.end(), extra.begin(), extra.end());
        // Y [T, 1, N, H] -> [T, N, H] by Reshape, which OpenCV 4.6 takes after its LSTM (not Squeeze).
        seq = g.reshape(g.node(op, inputs, attributes, Ints{seq.size(0), 1, seq.size(1), H}), {seq.size(0), seq.size(1), H});
    }
    return o.batch_first ? g.transpose(seq, {1, 0, 2}) : seq;
}

}  // namespace

Value LSTM::to_onnx(GraphBuilder& graph, const Value& x) const { return onnx_rnn(graph, *this, x, "LSTM", {0, 3, 1, 2}, {}); }

// linear_before_reset: the reset gate multiplies (W_hn h + b_hn), as PyTorch's GRU computes it.
Value GRU::to_onnx(GraphBuilder& graph, const Value& x) const {
    return onnx_rnn(graph, *this, x, "GRU", {1, 0, 2}, {{"linear_before_reset", 1}});
}

// Per layer: the input products of all steps at once, ln_ih over their 4H gates; then per step
// t the hidden product (none at t = 0, where h is 0 and ln_hh of 0 is 0), ln_hh, the gates
// i, f, g, o, c = f c + i g (c = i g at t = 0), h = o tanh(ln_c(c)); the steps' h joined as the
// next layer's input.
Value LayerNormLSTM::to_onnx(GraphBuilder& graph, const Value& x) const {
    GraphBuilder& g = graph;
    const RNNOptions& o = options();
    check_sequences(g, o, x);
    Value seq = o.batch_first ? x : g.transpose(x, {1, 0, 2});
    const int64_t T = seq.size(1);
    if (T == onnx::kBatch) g.fail("its steps are unrolled, so their number must be fixed, but it is the graph's free dimension");
    for (size_t ku = 0; ku < weight_ih.size(); ++ku) {
        const std::string s = std::to_string(ku);
        const Value input_gates = g.call(*ln_ih[ku], emit::linear(g, seq, weight_ih[ku], Tensor{}, "weight_ih_l" + s));
        const Value w_hh = g.tensor(weight_hh[ku].t().contiguous(), "weight_hh_l" + s + ".T");
        Value h, c;
        std::vector<Value> steps;
        for (int64_t t = 0; t < T; ++t) {
            Value gates = g.select(input_gates, 1, t);
            if (t > 0) gates = g.add(gates, g.call(*ln_hh[ku], g.matmul(h, w_hh)));
            const std::vector<Value> ifgo = emit::split(g, gates, 1, 4);
            const Value input_cell = g.mul(g.unary("Sigmoid", ifgo[0]), g.unary("Tanh", ifgo[2]));
            c = t == 0 ? input_cell : g.add(g.mul(g.unary("Sigmoid", ifgo[1]), c), input_cell);
            h = g.mul(g.unary("Sigmoid", ifgo[3]), g.unary("Tanh", g.call(*ln_c[ku], c)));
            steps.push_back(emit::unsqueeze(g, h, 1));
        }
        seq = T == 1 ? steps.front() : g.concat(steps, 1);
    }
    return o.batch_first ? seq : g.transpose(seq, {1, 0, 2});
}

}  // namespace normnet
