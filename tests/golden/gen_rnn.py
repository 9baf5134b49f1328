"""Goldens of the fused recurrent layers (rnn.safetensors): one-layer torch.nn.LSTM and nn.GRU,
batch-first, with and without initial states and biases, and with variable lengths through
pack_padded_sequence (outputs past a length are zeros; the final states are at the last valid
step), with every gradient for random output gradients."""

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from golden_io import Case

# name, kind, N, T, I, H, initial states, bias, lengths
CASES = [
    ("lstm", "lstm", 3, 5, 4, 6, True, True, None),
    ("lstm_zero_state", "lstm", 2, 4, 3, 5, False, True, None),
    ("lstm_no_bias", "lstm", 2, 3, 4, 3, True, False, None),
    ("lstm_lengths", "lstm", 4, 6, 3, 4, True, True, [6, 2, 4, 1]),
    ("lstm_one_step", "lstm", 3, 1, 2, 3, True, True, None),
    ("gru", "gru", 3, 5, 4, 6, True, True, None),
    ("gru_zero_state", "gru", 2, 4, 3, 5, False, True, None),
    ("gru_lengths", "gru", 4, 6, 3, 4, True, True, [3, 6, 1, 5]),
]


def make_rnn():
    tensors, metadata = {}, {}
    for i, (name, kind, N, T, I, H, states, bias, lengths) in enumerate(CASES):
        torch.manual_seed(700 + i)
        c = Case(tensors, metadata, name)
        layer = (nn.LSTM if kind == "lstm" else nn.GRU)(I, H, batch_first=True, bias=bias)
        x = torch.randn(N, T, I, requires_grad=True)
        h0 = torch.randn(1, N, H, requires_grad=True) if states else None
        c0 = torch.randn(1, N, H, requires_grad=True) if states and kind == "lstm" else None
        init = None if not states else ((h0, c0) if kind == "lstm" else h0)
        if lengths is None:
            out, final = layer(x, init)
        else:
            packed = pack_padded_sequence(x, torch.tensor(lengths), batch_first=True, enforce_sorted=False)
            out, final = layer(packed, init)
            out, _ = pad_packed_sequence(out, batch_first=True, total_length=T)
            c.put("lengths", torch.tensor(lengths), "I64")
        h_n = final[0] if kind == "lstm" else final
        dout = torch.randn(out.shape)
        dh_n = torch.randn(h_n.shape)
        (out * dout).sum().backward(retain_graph=True)
        (h_n * dh_n).sum().backward()
        c.put("x", x)
        for key in ("weight_ih_l0", "weight_hh_l0") + (("bias_ih_l0", "bias_hh_l0") if bias else ()):
            p = getattr(layer, key)
            c.put(key, p)
            c.put("d" + key, p.grad)
        if states:
            c.put("h0", h0[0])
            c.put("dh0", h0.grad[0])
            if kind == "lstm":
                c.put("c0", c0[0])
                c.put("dc0", c0.grad[0])
        c.put("out", out)
        c.put("dout", dout)
        c.put("h_n", h_n[0])
        c.put("dh_n", dh_n[0])
        if kind == "lstm":
            c.put("c_n", final[1][0])
        c.put("dx", x.grad)
    return tensors, metadata


FILES = [("rnn.safetensors", make_rnn)]
