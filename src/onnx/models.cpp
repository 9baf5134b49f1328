// ONNX forms of the model zoo (normnet::models): the MLP's and CNN's layers in order, the ViT's patches, class token and positional
// embedding around its encoder, RowLSTM's rows through its LSTM, and the character Transformer's
// embeddings and causal encoder. Each has a fixed sequence length; the batch stays dynamic.
#include "emit.hpp"
#include "normnet/models/char_transformer.hpp"
#include "normnet/models/cnn.hpp"
#include "normnet/models/mlp.hpp"
#include "normnet/models/row_lstm.hpp"
#include "normnet/models/vision_transformer.hpp"

namespace normnet::models {

using onnx::GraphBuilder;
using onnx::Ints;
using onnx::kBatch;
using onnx::Value;

// The MLP and the CNN are their children in order (the CNN's fused norm -> max-pool -> ReLU
// computes what its norm, MaxPool2d and ReLU children do one after the other).
Value MLP::to_onnx(GraphBuilder& g, const Value& x) const {
    Value y = x;
    for (const auto& [name, m] : named_children()) y = g.call(*m, y);
    return y;
}

Value CNN::to_onnx(GraphBuilder& g, const Value& x) const {
    Value y = x;
    for (const auto& [name, m] : named_children()) y = g.call(*m, y);
    return y;
}

Value VisionTransformer::to_onnx(GraphBuilder& graph, const Value& x_in) const {
    GraphBuilder& g = graph;
    const auto& o = options_;
    const int64_t side = o.image_size / o.patch_size, D = o.d_model;
    const Value x = x_in.dim() == 2 ? g.reshape(x_in, {x_in.size(0), o.in_channels, o.image_size, o.image_size}) : x_in;
    if (x.dim() != 4) g.fail("expected images [N, C, H, W] or [N, C * H * W]");
    // [N, D, side, side] -> [N, patches, D]
    const Value patches =
        g.transpose(g.reshape(g.call(*conv_proj, x), {x.size(0), D, side * side}), {0, 2, 1});
    // The class token in front: the patches padded by a row of zeros, plus the class token in
    // that row (zeros below it), plus the positional embedding. x + 0
    // is x, so this is cat({class_token, patches}) + pos_embedding exactly, with no shape
    // arithmetic on the batch size (which OpenCV fixes when it loads a model).
    const Value padded = g.node("Pad", {patches, g.ints({0, 1, 0, 0, 0, 0})}, {}, Ints{x.size(0), side * side + 1, D});
    // (Both stored as [tokens, D]: OpenCV 4.6 adds a [1, tokens, D] tensor to a batch of one only.)
    Tensor class_row = zeros({side * side + 1, D});
    class_row.narrow(0, 0, 1).copy_(class_token.detach().reshape({1, D}));
    Value h = g.add(g.add(padded, g.tensor(class_row, "class_token")),
                    g.tensor(pos_embedding.reshape({side * side + 1, D}), "pos_embedding"));
    h = g.call(*encoder, h);
    return g.call(*head, g.select(h, 1, 0));
}

Value RowLSTM::to_onnx(GraphBuilder& graph, const Value& x) const {
    const auto& o = options_;
    const Value rows = graph.reshape(x, {x.size(0), o.rows, o.row_size});
    return graph.call(*head, graph.select(graph.call(*rnn, rows), 1, o.rows - 1));
}

Value CharTransformer::to_onnx(GraphBuilder& graph, const Value& tokens) const {
    GraphBuilder& g = graph;
    const auto& o = options_;
    if (tokens.dtype != kInt64 || tokens.dim() != 2) g.fail("expected int64 tokens [N, T]");
    const int64_t T = tokens.size(1);
    if (T == kBatch || T > o.context) g.fail("a sequence length up to the context (" + std::to_string(o.context) + ")");
    Value pos = g.tensor(pos_emb, "pos_emb");
    if (T < o.context) {
        pos = g.node("Slice", {pos, g.ints({0}), g.ints({T}), g.ints({0})}, {}, Ints{T, o.d_model});
    }
    const Value x = g.add(g.call(*tok_emb, tokens), pos);
    return g.call(*head, onnx::emit::transformer_encoder(g, *encoder, x, /*causal=*/true));
}

}  // namespace normnet::models
