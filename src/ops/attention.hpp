// Internal: the attention op MultiheadAttention runs for self-attention (see attention.cpp).
#pragma once

#include "normnet/ops.hpp"

namespace normnet::detail {

/// Self-attention straight from the packed in_proj output, with no copies in or out:
/// qkv [N, L, 3 E] (q, k and v side by side, E = heads x D) -> [N, L, E], each head's output in
/// its D columns, the layout out_proj reads. attn_mask broadcasts to [N, heads, L, L] (bool:
/// true = may attend, or additive), as scaled_dot_product_attention's; the scale is 1 / sqrt(D).
/// The same results, random draws and gradients as scaled_dot_product_attention over the heads.
Tensor packed_self_attention(const Tensor& qkv, int64_t heads, const Tensor& attn_mask, double dropout_p, bool is_causal,
                             Generator& generator = default_generator());

}  // namespace normnet::detail
