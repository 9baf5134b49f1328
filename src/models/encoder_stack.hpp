// Internal: the Transformer stack the models share (GELU blocks, batch_first, the final norm only
// with pre-LN, where the residual stream is otherwise never normalised).
#pragma once

#include <memory>
#include <string>

#include "normnet/nn/transformer.hpp"

namespace normnet::models::detail {

inline std::shared_ptr<TransformerEncoder> encoder_stack(int64_t d_model, int64_t heads, int64_t dim_feedforward,
                                                         int64_t layers, double dropout, Norm norm,
                                                         bool norm_first) {
    const TransformerEncoderLayerOptions layer{.d_model = d_model,
                                               .nhead = heads,
                                               .dim_feedforward = dim_feedforward,
                                               .dropout = dropout,
                                               .activation = "gelu",
                                               .batch_first = true,
                                               .norm_first = norm_first,
                                               .norm = norm};
    return std::make_shared<TransformerEncoder>(TransformerEncoderOptions{layer, layers, /*final_norm=*/norm_first});
}

}  // namespace normnet::models::detail
