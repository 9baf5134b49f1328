// Embedding: construction (PyTorch's name, shape, N(0, 1) initialisation, padding row zeroed),
// forward through the functional embedding, repr.
#include "normnet/nn/embedding.hpp"

#include "normnet/ops.hpp"

namespace normnet {

Embedding::Embedding(const EmbeddingOptions& options) : options_(options) {
    NORMNET_CHECK(options.num_embeddings > 0 && options.embedding_dim > 0, "Embedding: num_embeddings (",
                  options.num_embeddings, ") and embedding_dim (", options.embedding_dim, ") must be positive");
    if (options.padding_idx) {
        const int64_t p = *options.padding_idx;
        NORMNET_CHECK(p >= -options.num_embeddings && p < options.num_embeddings,
                      "Embedding: padding_idx (", p, ") must be within num_embeddings (", options.num_embeddings, ")");
        options_.padding_idx = p < 0 ? p + options.num_embeddings : p;
    }
    weight = register_parameter("weight", empty({options.num_embeddings, options.embedding_dim}));
    reset_parameters();
}

void Embedding::reset_parameters() {
    weight.detach().normal_(0.0f, 1.0f);
    if (options_.padding_idx) weight.detach().select(0, *options_.padding_idx).zero_();
}

Tensor Embedding::forward(const Tensor& indices) { return embedding(indices, weight, options_.padding_idx); }

std::string Embedding::extra_repr() const {
    std::string s = std::to_string(options_.num_embeddings) + ", " + std::to_string(options_.embedding_dim);
    if (options_.padding_idx) s += ", padding_idx=" + std::to_string(*options_.padding_idx);
    return s;
}

}  // namespace normnet
