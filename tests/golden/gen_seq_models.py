"""Goldens of the model classes of normnet::models (seq_models.safetensors): CharTransformer and
VisionTransformer (and RowLSTM) written here as torch modules with normnet's names, so a normnet
state_dict loads into them unchanged; one forward and backward of a tiny configuration each.
Stored as gen_seq_modules.py stores modules ("<case>.sd.*", "<case>.grad.*")."""

import torch
import torch.nn as nn

from golden_io import Case
from gen_seq_modules import _encoder_layer, _perturb, _put_grads, _put_module, causal_mask, seq_norm
from gen_seq_rnn import LayerNormLSTM


class CharTransformer(nn.Module):
    """normnet::models::CharTransformer: GPT-style decoder, untied head without bias."""

    def __init__(self, vocab_size, context, d_model, n_layers, n_heads, dim_feedforward, norm="layer",
                 norm_first=True):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Parameter(torch.randn(context, d_model) * 0.02)
        self.drop = nn.Dropout(0.0)
        layer = _encoder_layer(d_model, n_heads, dim_feedforward, "gelu", norm_first, True, norm)
        self.encoder = nn.TransformerEncoder(layer, n_layers, norm=seq_norm(norm, d_model, 1e-5) if norm_first else None,
                                             enable_nested_tensor=False)
        self.head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, tokens):
        T = tokens.shape[1]
        x = self.drop(self.tok_emb(tokens) + self.pos_emb[:T])
        return self.head(self.encoder(x, mask=causal_mask(T)))


class VisionTransformer(nn.Module):
    """normnet::models::VisionTransformer (torchvision's names, its layers in nn.TransformerEncoder)."""

    def __init__(self, image_size, patch_size, in_channels, num_classes, d_model, num_layers, num_heads,
                 dim_feedforward, norm="layer", norm_first=True):
        super().__init__()
        self.d_model = d_model
        self.conv_proj = nn.Conv2d(in_channels, d_model, patch_size, stride=patch_size)
        tokens = 1 + (image_size // patch_size) ** 2
        self.class_token = nn.Parameter(torch.zeros(1, 1, d_model))
        self.pos_embedding = nn.Parameter(torch.randn(1, tokens, d_model) * 0.02)
        layer = _encoder_layer(d_model, num_heads, dim_feedforward, "gelu", norm_first, True, norm)
        self.encoder = nn.TransformerEncoder(layer, num_layers,
                                             norm=seq_norm(norm, d_model, 1e-5) if norm_first else None,
                                             enable_nested_tensor=False)
        self.head = nn.Linear(d_model, num_classes)

    def forward(self, x):
        p = self.conv_proj(x).flatten(2).transpose(1, 2)
        h = torch.cat([self.class_token.expand(x.shape[0], 1, self.d_model), p], 1) + self.pos_embedding
        return self.head(self.encoder(h)[:, 0])


class RowLSTM(nn.Module):
    """normnet::models::RowLSTM: rows as steps, the head on the last step."""

    def __init__(self, rows, row_size, hidden_size, num_classes, norm):
        super().__init__()
        self.rows, self.row_size = rows, row_size
        self.rnn = (LayerNormLSTM(row_size, hidden_size, batch_first=True) if norm == "layer"
                    else nn.LSTM(row_size, hidden_size, batch_first=True))
        self.head = nn.Linear(hidden_size, num_classes)

    def forward(self, x):
        out, _ = self.rnn(x.reshape(x.shape[0], self.rows, self.row_size))
        return self.head(out[:, -1])


ROW_CASES = [  # name, rows, row_size, hidden, classes, norm, N
    ("row_layer", 4, 3, 5, 3, "layer", 2),
    ("row_none", 4, 3, 5, 3, "none", 3),
]

CHAR_CASES = [  # name, V, context, d, layers, heads, ff, norm, norm_first, (B, T)
    ("char_pre_layer", 11, 8, 8, 2, 2, 16, "layer", True, (2, 6)),
    ("char_post_layer", 7, 5, 8, 2, 2, 16, "layer", False, (2, 5)),
    ("char_pre_rms", 9, 6, 8, 1, 2, 12, "rms", True, (3, 4)),
    ("char_pre_batch", 9, 6, 8, 1, 2, 12, "batch", True, (2, 4)),
    ("char_size1", 5, 4, 4, 1, 1, 8, "layer", True, (1, 1)),
]

VIT_CASES = [  # name, image, patch, channels, classes, d, layers, heads, ff, norm, norm_first, N
    ("vit_pre_layer", 8, 4, 1, 3, 8, 2, 2, 16, "layer", True, 2),
    ("vit_post_batch", 8, 4, 1, 3, 8, 1, 2, 16, "batch", False, 3),
    ("vit_pre_none", 6, 3, 2, 4, 4, 1, 1, 8, "none", True, 1),
]


def make_char(tensors, metadata):
    for i, (name, V, ctx, d, L, H, ff, norm, nf, (B, T)) in enumerate(CHAR_CASES):
        torch.manual_seed(1500 + i)
        c = Case(tensors, metadata, name)
        m = CharTransformer(V, ctx, d, L, H, ff, norm, nf)
        _perturb(m)
        _put_module(c, m)  # the state before forward updates any running statistics
        tokens = torch.randint(0, V, (B, T))
        out = m(tokens)
        dout = torch.randn(out.shape)
        out.backward(dout)
        for key, val in [("vocab_size", V), ("context", ctx), ("d_model", d), ("n_layers", L), ("n_heads", H),
                         ("dim_feedforward", ff), ("norm", norm), ("norm_first", nf)]:
            c.meta(key, val)
        c.put("tokens", tokens, "I64")
        c.put("out", out)
        c.put("dout", dout)
        _put_grads(c, m)


def make_vit(tensors, metadata):
    for i, (name, img, patch, ch, classes, d, L, H, ff, norm, nf, N) in enumerate(VIT_CASES):
        torch.manual_seed(1600 + i)
        c = Case(tensors, metadata, name)
        m = VisionTransformer(img, patch, ch, classes, d, L, H, ff, norm, nf)
        _perturb(m)
        _put_module(c, m)  # the state before forward updates any running statistics
        x = torch.randn(N, ch, img, img, requires_grad=True)
        out = m(x)
        dout = torch.randn(out.shape)
        out.backward(dout)
        for key, val in [("image_size", img), ("patch_size", patch), ("in_channels", ch), ("num_classes", classes),
                         ("d_model", d), ("num_layers", L), ("num_heads", H), ("dim_feedforward", ff),
                         ("norm", norm), ("norm_first", nf)]:
            c.meta(key, val)
        for key, t in (("x", x), ("out", out), ("dout", dout), ("dx", x.grad)):
            c.put(key, t)
        _put_grads(c, m)


def make_row(tensors, metadata):
    for i, (name, rows, row_size, hidden, classes, norm, N) in enumerate(ROW_CASES):
        torch.manual_seed(1800 + i)
        c = Case(tensors, metadata, name)
        m = RowLSTM(rows, row_size, hidden, classes, norm)
        _perturb(m)
        _put_module(c, m)  # the state before forward updates any running statistics
        x = torch.randn(N, 1, rows, row_size, requires_grad=True)
        out = m(x)
        dout = torch.randn(out.shape)
        out.backward(dout)
        for key, val in [("rows", rows), ("row_size", row_size), ("hidden_size", hidden), ("num_classes", classes),
                         ("norm", norm)]:
            c.meta(key, val)
        for key, t in (("x", x), ("out", out), ("dout", dout), ("dx", x.grad)):
            c.put(key, t)
        _put_grads(c, m)


def make_seq_models():
    tensors, metadata = {}, {}
    make_char(tensors, metadata)
    make_vit(tensors, metadata)
    make_row(tensors, metadata)
    return tensors, metadata


FILES = [("seq_models.safetensors", make_seq_models)]
