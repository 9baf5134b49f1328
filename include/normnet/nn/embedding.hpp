// Embedding layers (torch.nn.Embedding): a lookup table of learned vectors indexed by int64
// tokens, with PyTorch's options, parameter name, initialisation and padding_idx rule.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "normnet/arg.hpp"
#include "normnet/export.hpp"
#include "normnet/module.hpp"

namespace normnet {

/// Options of Embedding (torch.nn.Embedding); max_norm, scale_grad_by_freq and sparse are not offered.
struct EmbeddingOptions {
    using Self = EmbeddingOptions;
    NORMNET_ARG(int64_t, num_embeddings) = 0;
    NORMNET_ARG(int64_t, embedding_dim) = 0;
    NORMNET_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;  // negative counts from the end, as torch
};

/// weight [num_embeddings, embedding_dim] drawn from N(0, 1) as PyTorch, the padding_idx row zeroed;
/// forward(indices [*]) -> [*, embedding_dim]. The padding_idx row gets no gradient (as torch), so
/// it stays what it is.
class NORMNET_API Embedding : public Cloneable<Embedding> {
public:
    /// A layer from its options, e.g. Embedding(EmbeddingOptions{.num_embeddings = 96, .embedding_dim = 128}).
    explicit Embedding(const EmbeddingOptions& options);
    /// Embedding(96, 128), as torch::nn::Embedding(96, 128).
    Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx = std::nullopt)
        : Embedding(EmbeddingOptions{num_embeddings, embedding_dim, padding_idx}) {}
    /// indices: int64 of any shape, each in [0, num_embeddings).
    Tensor forward(const Tensor& indices) override;
    onnx::Value to_onnx(onnx::GraphBuilder& graph, const onnx::Value& x) const override;
    std::string type_name() const override { return "Embedding"; }
    std::string extra_repr() const override;
    /// Draws weight from N(0, 1) again and zeroes the padding_idx row.
    void reset_parameters();
    /// The options given at construction, padding_idx made non-negative.
    const EmbeddingOptions& options() const { return options_; }

    Tensor weight;

private:
    EmbeddingOptions options_;
};

}  // namespace normnet
