"""Goldens of the sequence modules (seq_modules.safetensors): nn.Embedding, nn.MultiheadAttention,
nn.TransformerEncoderLayer (post- and pre-LN, relu/gelu, with the norm inside swapped for an
RMSNorm, a BatchNorm over batch x time or none), nn.TransformerEncoder, and CharTransformer /
VisionTransformer written here in torch modules with normnet's names.

Every case stores its module's state_dict under "<case>.sd.<key>" (the C++ test loads it with
strict=True, so the names, order and shapes are PyTorch's), its inputs and a random output gradient
"dout", the outputs, and the gradients "<case>.grad.<param>" and of the inputs. Modules run in
training mode with dropout 0 (torch 1.13's eval-mode fast path would hand padded positions zeros)."""

import torch
import torch.nn as nn

from golden_io import Case


def _perturb(module, scale=0.3):
    """Random values on every parameter, so layers cloned by torch differ and norm affines matter."""
    with torch.no_grad():
        for p in module.parameters():
            p.add_(scale * torch.randn_like(p))


def _put_module(c, module):
    keys = []
    for k, t in module.state_dict().items():
        c.put("sd." + k, t, "I64" if t.dtype == torch.int64 else "F32")
        keys.append(k)
    c.meta("keys", ",".join(keys))


def _put_grads(c, module):
    for k, p in module.named_parameters():
        c.put("grad." + k, p.grad if p.grad is not None else torch.zeros_like(p))


def _put_buffers_after(c, module):
    for k, t in module.named_buffers():
        c.put("after." + k, t, "I64" if t.dtype == torch.int64 else "F32")


class RMSNorm(nn.Module):
    """torch 2's nn.RMSNorm (1.13 has none), in torch ops."""

    def __init__(self, d, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class SequenceBatchNorm(nn.BatchNorm1d):
    """BatchNorm over batch x time: BatchNorm1d on the [N * T, C] rows."""

    def forward(self, x):
        return super().forward(x.reshape(-1, x.shape[-1])).reshape(x.shape)


def seq_norm(kind, d, eps):
    return {"layer": lambda: nn.LayerNorm(d, eps=eps), "rms": lambda: RMSNorm(d, eps),
            "batch": lambda: SequenceBatchNorm(d, eps=eps), "none": nn.Identity}[kind]()


def causal_mask(L):
    return torch.ones(L, L, dtype=torch.bool).triu(1)


def make_embedding(tensors, metadata):
    for name, V, D, pad, shape in [("emb_pad", 10, 4, 2, (3, 5)), ("emb_plain", 7, 3, None, (6,)),
                                   ("emb_negpad", 6, 2, -1, (2, 4))]:
        torch.manual_seed(len(name))
        c = Case(tensors, metadata, name)
        emb = nn.Embedding(V, D, padding_idx=pad)
        _put_module(c, emb)
        idx = torch.randint(0, V, shape)
        idx.view(-1)[0] = pad % V if pad is not None else 0  # the padding row is used at least once
        out = emb(idx)
        dout = torch.randn(out.shape)
        out.backward(dout)
        c.meta("num_embeddings", V)
        c.meta("embedding_dim", D)
        c.meta("padding_idx", "none" if pad is None else pad)
        c.put("idx", idx, "I64")
        c.put("out", out)
        c.put("dout", dout)
        _put_grads(c, emb)


# name, E, H, bias, batch_first, self-attention, (L, N, S), masks, need_weights, average, causal
MHA_CASES = [
    ("mha_self_kpm", 8, 2, True, False, True, (5, 3, 5), ("kpm_bool",), True, True, False),
    ("mha_cross_bf_float", 8, 2, True, True, False, (4, 2, 6), ("attn_float",), False, True, False),
    ("mha_attn3d_kpm", 6, 3, True, False, False, (3, 2, 4), ("attn3d_bool", "kpm_bool"), True, False, False),
    # A float key_padding_mask alone (torch 1.13 treats a float one next to a bool attn_mask as bool and
    # refuses it next to a float one; torch 2 and normnet add it).
    ("mha_kpm_float", 6, 3, True, True, False, (3, 2, 4), ("kpm_float",), True, True, False),
    ("mha_causal_kpm_bf", 8, 4, True, True, True, (5, 2, 5), ("kpm_bool",), False, True, True),
    ("mha_causal_weights", 4, 1, True, False, True, (4, 2, 4), (), True, True, True),
    ("mha_no_bias", 6, 2, False, True, True, (3, 2, 3), (), False, True, False),
    ("mha_size1", 4, 2, True, True, True, (1, 1, 1), (), True, True, False),
    ("mha_unbatched", 4, 2, True, False, False, (3, 0, 5), ("attn_bool",), True, True, False),
]


def make_mha(tensors, metadata):
    for i, (name, E, H, bias, bf, selfattn, (L, N, S), masks, need, avg, causal) in enumerate(MHA_CASES):
        torch.manual_seed(1300 + i)
        c = Case(tensors, metadata, name)
        mha = nn.MultiheadAttention(E, H, bias=bias, batch_first=bf)
        _perturb(mha)
        _put_module(c, mha)  # the state before forward updates any running statistics

        def shaped(n, length):
            if N == 0:
                return (length, E)
            return (N, length, E) if bf else (length, N, E)

        q = torch.randn(shaped(N, L), requires_grad=True)
        if selfattn:
            k = v = q
        else:
            k = torch.randn(shaped(N, S), requires_grad=True)
            v = torch.randn(shaped(N, S), requires_grad=True)
        attn_mask = kpm = None
        for m in masks:
            if m == "kpm_bool":
                kpm = torch.rand(N, S) > 0.6
                kpm[:, 0] = False  # every query keeps a key
            elif m == "kpm_float":
                kpm = torch.randn(N, S)
            elif m == "attn_float":
                attn_mask = torch.randn(L, S)
            elif m == "attn_bool":
                attn_mask = torch.rand(L, S) > 0.6
                attn_mask[:, 0] = False
            elif m == "attn3d_bool":
                attn_mask = torch.rand(N * H, L, S) > 0.6
                attn_mask[..., 0] = False
        torch_mask = attn_mask
        if causal:  # torch 1.13 has no is_causal: the same as a boolean triu mask
            torch_mask = causal_mask(L) if attn_mask is None else attn_mask | causal_mask(L)
        out, w = mha(q, k, v, key_padding_mask=kpm, need_weights=need, attn_mask=torch_mask,
                     average_attn_weights=avg)
        dout = torch.randn(out.shape)
        out.backward(dout)
        for key, val in [("embed_dim", E), ("num_heads", H), ("bias", bias), ("batch_first", bf),
                         ("self", selfattn), ("need_weights", need), ("average", avg), ("causal", causal)]:
            c.meta(key, val)
        c.put("q", q)
        if not selfattn:
            c.put("k", k)
            c.put("v", v)
            c.put("dk", k.grad)
            c.put("dv", v.grad)
        if attn_mask is not None:
            c.put("attn_mask", attn_mask, "BOOL" if attn_mask.dtype == torch.bool else "F32")
        if kpm is not None:
            c.put("kpm", kpm, "BOOL" if kpm.dtype == torch.bool else "F32")
        c.put("out", out)
        if need:
            c.put("weights", w)
        c.put("dout", dout)
        c.put("dq", q.grad)
        _put_grads(c, mha)


# name, d_model, nhead, ff, activation, norm_first, batch_first, norm, (S, N), mask kinds
TEL_CASES = [
    ("tel_post_relu_kpm", 8, 2, 16, "relu", False, False, "layer", (5, 3), ("kpm",)),
    ("tel_pre_gelu_bf_causal", 8, 2, 12, "gelu", True, True, "layer", (6, 2), ("causal",)),
    ("tel_pre_float_mask", 8, 4, 8, "relu", True, False, "layer", (4, 2), ("float",)),
    ("tel_rms_pre", 8, 2, 16, "gelu", True, True, "rms", (5, 2), ("causal",)),
    ("tel_rms_post", 8, 2, 16, "relu", False, False, "rms", (4, 3), ()),
    ("tel_batch_pre", 8, 2, 16, "gelu", True, True, "batch", (5, 3), ("causal",)),
    ("tel_batch_post", 8, 2, 16, "relu", False, False, "batch", (4, 3), ()),
    ("tel_none_pre", 8, 2, 16, "gelu", True, True, "none", (5, 2), ()),
    ("tel_size1", 4, 2, 8, "relu", False, True, "layer", (1, 1), ()),
]


def _encoder_layer(d, h, ff, act, norm_first, bf, norm, eps=1e-5):
    layer = nn.TransformerEncoderLayer(d, h, ff, dropout=0.0, activation=act, layer_norm_eps=eps,
                                       batch_first=bf, norm_first=norm_first)
    if norm != "layer":
        layer.norm1, layer.norm2 = seq_norm(norm, d, eps), seq_norm(norm, d, eps)
    return layer


def _masks(kinds, S, N):
    mask = kpm = None
    for m in kinds:
        if m == "kpm":
            kpm = torch.rand(N, S) > 0.6
            kpm[:, 0] = False
        elif m == "causal":
            mask = causal_mask(S)
        elif m == "float":
            mask = torch.randn(S, S)
    return mask, kpm


def make_transformer(tensors, metadata):
    for i, (name, d, h, ff, act, nf, bf, norm, (S, N), kinds) in enumerate(TEL_CASES):
        torch.manual_seed(1400 + i)
        c = Case(tensors, metadata, name)
        layer = _encoder_layer(d, h, ff, act, nf, bf, norm)
        _perturb(layer)
        _put_module(c, layer)  # the state before forward updates any running statistics
        x = torch.randn((N, S, d) if bf else (S, N, d), requires_grad=True)
        mask, kpm = _masks(kinds, S, N)
        out = layer(x, src_mask=mask, src_key_padding_mask=kpm)
        dout = torch.randn(out.shape)
        out.backward(dout)
        for key, val in [("d_model", d), ("nhead", h), ("dim_feedforward", ff), ("activation", act),
                         ("norm_first", nf), ("batch_first", bf), ("norm", norm), ("masks", ",".join(kinds))]:
            c.meta(key, val)
        c.put("x", x)
        if mask is not None and mask.dtype != torch.bool:
            c.put("mask", mask)
        if kpm is not None:
            c.put("kpm", kpm, "BOOL")
        c.put("out", out)
        c.put("dout", dout)
        c.put("dx", x.grad)
        _put_grads(c, layer)
        _put_buffers_after(c, layer)

    # A stack of two pre-LN layers with the final norm, causal, sequence-first.
    torch.manual_seed(1450)
    c = Case(tensors, metadata, "encoder_pre_final")
    enc = nn.TransformerEncoder(_encoder_layer(8, 2, 16, "gelu", True, False, "layer"), 2, norm=nn.LayerNorm(8),
                                enable_nested_tensor=False)
    _perturb(enc)
    _put_module(c, enc)  # the state before forward updates any running statistics
    x = torch.randn(5, 2, 8, requires_grad=True)
    out = enc(x, mask=causal_mask(5))
    dout = torch.randn(out.shape)
    out.backward(dout)
    for key, t in (("x", x), ("out", out), ("dout", dout), ("dx", x.grad)):
        c.put(key, t)
    _put_grads(c, enc)


def make_seq_modules():
    tensors, metadata = {}, {}
    make_embedding(tensors, metadata)
    make_mha(tensors, metadata)
    make_transformer(tensors, metadata)
    return tensors, metadata


FILES = [("seq_modules.safetensors", make_seq_modules)]
