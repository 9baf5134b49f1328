"""The Transformer pieces the PyTorch ViT and LM peers share, built from torch.nn so that their
state_dicts carry the names of normnet's VisionTransformer and CharTransformer
(include/normnet/models/): encoder.layers.<i>.{self_attn.in_proj_weight, self_attn.in_proj_bias,
self_attn.out_proj.*, linear1.*, linear2.*, norm1.*, norm2.*} and encoder.norm.*.
"""
import torch.nn as nn


def make_encoder(d_model, nhead, dim_feedforward, num_layers, norm_first=True):
    """nn.TransformerEncoder of pre-LN (or post-LN) GELU layers, batch_first, no dropout, with
    the final LayerNorm a pre-LN stack needs. Each layer is initialised on its own, as normnet's
    TransformerEncoder does: torch deep-copies one layer, so its layers would start equal."""
    layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout=0.0, activation="gelu",
                                       batch_first=True, norm_first=norm_first)
    encoder = nn.TransformerEncoder(layer, num_layers, norm=nn.LayerNorm(d_model) if norm_first else None,
                                    enable_nested_tensor=False)
    for block in encoder.layers:
        block.self_attn._reset_parameters()  # xavier_uniform_ in_proj_weight, zero biases
        block.linear1.reset_parameters()
        block.linear2.reset_parameters()
    return encoder
