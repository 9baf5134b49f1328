"""Goldens of the recurrent modules (seq_rnn.safetensors): multi-layer torch.nn.LSTM and nn.GRU,
batch_first both ways, with initial states, without biases, and with variable lengths through
pack_padded_sequence; and LayerNormLSTM (Ba et al. 2016; torch has none), whose reference below is
written in torch ops and run in float64, each sequence of a variable-length batch alone.

Each case stores the module's state_dict ("<case>.sd.*", as gen_seq_modules.py), the input x,
optional h0/c0/lengths, the outputs out, h_n (and c_n), the gradients of sum(out * dout) +
sum(h_n * dh) (+ sum(c_n * dc) for the LSTMs) for the input ("dx", "dh0", "dc0") and every
parameter ("grad.*")."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from golden_io import Case
from gen_seq_modules import _perturb, _put_grads, _put_module


class LN(nn.Module):
    """LayerNorm with an optional bias (torch 1.13's nn.LayerNorm always has one)."""

    def __init__(self, d, eps, bias=True):
        super().__init__()
        self.d, self.eps = d, eps
        self.weight = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, (self.d,), self.weight, self.bias, self.eps)


class LayerNormLSTM(nn.Module):
    """normnet::LayerNormLSTM: gates = ln_ih(W_ih x) + ln_hh(W_hh h); c = f c + i g;
    h = o tanh(ln_c(c)); gates i, f, g, o. Variable lengths: each sequence runs alone."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, eps=1e-5):
        super().__init__()
        self.H, self.L, self.batch_first = hidden_size, num_layers, batch_first
        for k in range(num_layers):
            i = input_size if k == 0 else hidden_size
            b = 1.0 / hidden_size ** 0.5
            setattr(self, f"weight_ih_l{k}", nn.Parameter(torch.empty(4 * hidden_size, i).uniform_(-b, b)))
            setattr(self, f"weight_hh_l{k}", nn.Parameter(torch.empty(4 * hidden_size, hidden_size).uniform_(-b, b)))
        for k in range(num_layers):
            setattr(self, f"ln_ih_l{k}", LN(4 * hidden_size, eps, bias))
            setattr(self, f"ln_hh_l{k}", LN(4 * hidden_size, eps, False))
            setattr(self, f"ln_c_l{k}", LN(hidden_size, eps, bias))

    def _one(self, x, h, c):
        """x [T, I], h, c [L, H] -> out [T, H], h_n, c_n [L, H]."""
        H, hs, cs = self.H, [], []
        for k in range(self.L):
            hk, ck, outs = h[k], c[k], []
            for t in range(x.shape[0]):
                g = (getattr(self, f"ln_ih_l{k}")(x[t] @ getattr(self, f"weight_ih_l{k}").t())
                     + getattr(self, f"ln_hh_l{k}")(hk @ getattr(self, f"weight_hh_l{k}").t()))
                i, f, gg, o = g[:H].sigmoid(), g[H:2 * H].sigmoid(), g[2 * H:3 * H].tanh(), g[3 * H:].sigmoid()
                ck = f * ck + i * gg
                hk = o * torch.tanh(getattr(self, f"ln_c_l{k}")(ck))
                outs.append(hk)
            x = torch.stack(outs)
            hs.append(hk)
            cs.append(ck)
        return x, torch.stack(hs), torch.stack(cs)

    def forward(self, x, hx=None, lengths=None):
        if not self.batch_first:
            x = x.transpose(0, 1)
        N, T = x.shape[0], x.shape[1]
        h0, c0 = hx if hx is not None else (x.new_zeros(self.L, N, self.H), x.new_zeros(self.L, N, self.H))
        outs, hs, cs = [], [], []
        for n in range(N):
            length = T if lengths is None else int(lengths[n])
            o, h, c = self._one(x[n, :length], h0[:, n], c0[:, n])
            outs.append(torch.cat([o, o.new_zeros(T - length, self.H)]))
            hs.append(h)
            cs.append(c)
        out = torch.stack(outs)
        if not self.batch_first:
            out = out.transpose(0, 1)
        return out, (torch.stack(hs, 1), torch.stack(cs, 1))


# name, kind, I, H, layers, bias, batch_first, N, T, initial states, lengths
CASES = [
    ("lstm2_seq_first", "lstm", 3, 4, 2, True, False, 3, 5, True, None),
    ("lstm2_bf_lengths", "lstm", 3, 4, 2, True, True, 4, 6, True, [6, 2, 4, 1]),
    ("lstm_seq_lengths_nobias", "lstm", 2, 3, 1, False, False, 3, 4, False, [2, 4, 3]),
    ("lstm_size1", "lstm", 2, 3, 1, True, True, 1, 1, False, None),
    ("gru2_bf", "gru", 3, 4, 2, True, True, 3, 5, True, None),
    ("gru2_seq_lengths", "gru", 3, 4, 2, True, False, 4, 5, False, [5, 1, 3, 2]),
    ("lnlstm2_seq_first", "lnlstm", 3, 4, 2, True, False, 2, 4, True, None),
    ("lnlstm2_bf_lengths", "lnlstm", 3, 4, 2, True, True, 3, 5, True, [5, 2, 3]),
    ("lnlstm_nobias_size1", "lnlstm", 2, 3, 1, False, True, 1, 1, False, None),
]


def make_seq_rnn():
    tensors, metadata = {}, {}
    for i, (name, kind, I, H, L, bias, bf, N, T, states, lengths) in enumerate(CASES):
        torch.manual_seed(1700 + i)
        c = Case(tensors, metadata, name)
        if kind == "lnlstm":
            m = LayerNormLSTM(I, H, L, bias=bias, batch_first=bf)
        else:
            m = (nn.LSTM if kind == "lstm" else nn.GRU)(I, H, L, bias=bias, batch_first=bf)
        _perturb(m)
        _put_module(c, m)  # float32 state, before the float64 reference runs
        dtype = torch.float64 if kind == "lnlstm" else torch.float32
        m = m.to(dtype)
        x = torch.randn((N, T, I) if bf else (T, N, I), dtype=dtype, requires_grad=True)
        h0 = torch.randn(L, N, H, dtype=dtype, requires_grad=True) if states else None
        c0 = torch.randn(L, N, H, dtype=dtype, requires_grad=True) if states and kind != "gru" else None
        hx = h0 if kind == "gru" else ((h0, c0) if states else None)
        if kind == "lnlstm":
            out, (h_n, c_n) = m(x, hx, lengths)
        else:
            inp = x if lengths is None else pack_padded_sequence(x, torch.tensor(lengths), batch_first=bf,
                                                                 enforce_sorted=False)
            out, state = m(inp, hx)
            if lengths is not None:
                out, _ = pad_packed_sequence(out, batch_first=bf, total_length=T)
            h_n, c_n = state if kind == "lstm" else (state, None)
        dout, dh = torch.randn(out.shape, dtype=dtype), torch.randn(h_n.shape, dtype=dtype)
        loss = (out * dout).sum() + (h_n * dh).sum()
        if kind != "gru":  # an LSTM's c_n is differentiable
            dc = torch.randn(c_n.shape, dtype=dtype)
            loss = loss + (c_n * dc).sum()
            c.put("dc", dc)
        loss.backward()
        for key, val in [("kind", kind), ("input_size", I), ("hidden_size", H), ("num_layers", L), ("bias", bias),
                         ("batch_first", bf)]:
            c.meta(key, val)
        for key, t in (("x", x), ("h0", h0), ("c0", c0), ("out", out), ("h_n", h_n), ("c_n", c_n),
                       ("dout", dout), ("dh", dh), ("dx", x.grad)):
            if t is not None:
                c.put(key, t)
        if h0 is not None:
            c.put("dh0", h0.grad)
        if c0 is not None:
            c.put("dc0", c0.grad)
        if lengths is not None:
            c.put("lengths", torch.tensor(lengths), "I64")
        _put_grads(c, m)
    return tensors, metadata


FILES = [("seq_rnn.safetensors", make_seq_rnn)]
