"""Goldens of bfloat16 autocast: torch.autocast("cpu", dtype=torch.bfloat16) on a small seed-style
MLP (Linear -> ReLU -> LayerNorm, twice, then Linear; cross-entropy): autocast.safetensors. Read
by tests/test_autocast.cpp, which runs the same network under normnet's AutocastGuard.

Stores the input `x`, the labels `y`, every weight, and under autocast the logits (as float32),
the loss and the gradients of the three Linear weights; the same without autocast (`f32_*`), so
the test can also check that bf16 moved the results by about what it moved torch's.
"""

import torch
import torch.nn.functional as F

from golden_io import Case


def make_autocast():
    tensors, metadata = {}, {}
    torch.manual_seed(30)
    c = Case(tensors, metadata, "mlp")
    sizes = [(48, 32), (32, 24), (24, 10)]
    x = torch.randn(64, 48)
    y = torch.randint(0, 10, (64,))
    weights = []
    for i, (n_in, n_out) in enumerate(sizes):
        w = (torch.randn(n_out, n_in) / n_in**0.5).requires_grad_(True)
        b = (0.1 * torch.randn(n_out)).requires_grad_(True)
        weights.append((w, b))
        c.put(f"w{i}", w)
        c.put(f"b{i}", b)
    norms = []
    for i, (_, n_out) in enumerate(sizes[:-1]):
        g = (1 + 0.1 * torch.randn(n_out)).requires_grad_(True)
        beta = (0.1 * torch.randn(n_out)).requires_grad_(True)
        norms.append((g, beta))
        c.put(f"g{i}", g)
        c.put(f"beta{i}", beta)
    c.put("x", x)
    c.put("y", y, "I64")

    def forward():
        h = x
        for i, (w, b) in enumerate(weights):
            h = F.linear(h, w, b)
            if i < len(norms):
                # Normalisation in float32, as autocast keeps it (torch 1.13's CPU autocast leaves
                # layer_norm out of its lists, so the cast is written here).
                h = F.layer_norm(F.relu(h).float(), (h.shape[-1],), norms[i][0], norms[i][1])
        return h

    for prefix, autocast in [("", True), ("f32_", False)]:
        for w, b in weights:
            w.grad = None
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            logits = forward()
            loss = F.cross_entropy(logits.float(), y)
        loss.backward()
        c.put(prefix + "logits", logits.float())
        c.put(prefix + "loss", loss.float().reshape(1))
        for i, (w, _) in enumerate(weights):
            c.put(f"{prefix}dw{i}", w.grad.float())
    return tensors, metadata


FILES = [("autocast.safetensors", make_autocast)]
