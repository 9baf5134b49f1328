"""Goldens of scaled_dot_product_attention (attention.safetensors): softmax(q k^T * scale + mask) v
written out in torch 1.13 (which has no F.scaled_dot_product_attention yet), with the gradients
of q, k and v for a random output gradient."""

import torch

from golden_io import Case


def _attention(q, k, v, mask=None, causal=False, scale=None):
    scale = scale if scale is not None else 1.0 / q.shape[-1] ** 0.5
    s = q @ k.transpose(-2, -1) * scale
    if causal:
        L, S = s.shape[-2], s.shape[-1]
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool).triu(1), float("-inf"))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask
    return torch.softmax(s, dim=-1) @ v


# name, q shape, k shape, v shape, mask kind and shape, causal, scale
CASES = [
    ("plain", (2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 7), None, False, None),
    ("bool_mask", (2, 5, 4), (2, 6, 4), (2, 6, 3), ("bool", (5, 6)), False, None),
    ("float_mask", (2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 4), ("float", (2, 1, 5, 6)), False, None),
    ("key_padding", (2, 2, 4, 8), (2, 2, 4, 8), (2, 2, 4, 8), ("bool", (2, 1, 1, 4)), False, None),
    ("causal", (3, 6, 8), (3, 6, 8), (3, 6, 8), None, True, None),
    ("scale", (4, 3, 2), (4, 5, 2), (4, 5, 6), None, False, 0.3),
    ("one_query", (2, 1, 4), (2, 7, 4), (2, 7, 4), None, False, None),
    ("one_key", (2, 3, 4), (2, 1, 4), (2, 1, 5), None, False, None),
    ("unbatched", (5, 4), (6, 4), (6, 3), None, False, None),
]


def make_attention():
    tensors, metadata = {}, {}
    for i, (name, qs, ks, vs, mask, causal, scale) in enumerate(CASES):
        torch.manual_seed(900 + i)
        c = Case(tensors, metadata, name)
        q = torch.randn(qs, requires_grad=True)
        k = torch.randn(ks, requires_grad=True)
        v = torch.randn(vs, requires_grad=True)
        m = None
        if mask is not None:
            kind, shape = mask
            if kind == "bool":
                m = torch.rand(shape) > 0.3
                m[..., 0] = True  # no row may be fully masked (torch gives nan there)
            else:
                m = torch.randn(shape)
            c.put("mask", m, "BOOL" if kind == "bool" else "F32")
        out = _attention(q, k, v, m, causal, scale)
        dout = torch.randn(out.shape)
        out.backward(dout)
        c.meta("causal", causal)
        c.meta("scale", "none" if scale is None else repr(scale))
        for key, t in (("q", q), ("k", k), ("v", v), ("out", out), ("dout", dout)):
            c.put(key, t)
        for key, t in (("dq", q.grad), ("dk", k.grad), ("dv", v.grad)):
            c.put(key, t)
    return tensors, metadata


FILES = [("attention.safetensors", make_attention)]
