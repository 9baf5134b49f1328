"""Goldens of the convolutional family: conv2d, the pooling ops, group_norm / GroupNorm,
instance_norm / InstanceNorm2d, BatchNorm2d over several steps, LayerNorm over [C, H, W].

Found by make_goldens.py (FILES below). Sizes are small and odd on purpose; every case stores
its inputs, the output, the upstream gradient dy and the gradients torch computes. Settings are
kept as metadata strings: pairs as "h,w", padding also "same"/"valid", booleans as True/False.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

from golden_io import Case, error_message


def pair(v):
    h, w = (v, v) if isinstance(v, int) else v
    return f"{h},{w}"


# ---------------------------------------------------------------------------
# conv.safetensors: conv2d over a grid of settings, and its error messages

# (name, x shape, out channels, kernel, stride, padding, dilation, groups, bias)
CONV_CASES = [
    ("basic", (2, 3, 7, 6), 4, 3, 1, 1, 1, 1, True),
    ("stride2", (2, 3, 9, 8), 4, 3, 2, 0, 1, 1, True),
    ("same", (2, 2, 4, 5), 3, 3, 1, "same", 1, 1, True),
    ("same_even", (1, 2, 5, 6), 3, (4, 2), 1, "same", (1, 2), 1, True),
    ("valid", (2, 2, 6, 5), 3, (3, 2), 1, "valid", 1, 1, True),
    ("dilation2", (2, 2, 8, 7), 3, 3, 1, 2, 2, 1, True),
    ("groups2", (2, 4, 6, 5), 6, 3, 1, 1, 1, 2, True),
    ("depthwise", (2, 3, 5, 5), 6, 3, 2, 1, 1, 3, False),
    ("nobias", (3, 2, 5, 4), 2, 2, 1, 0, 1, 1, False),
    ("pointwise", (2, 5, 4, 3), 3, 1, 1, 0, 1, 1, True),
    ("pointwise_stride2", (2, 5, 5, 4), 3, 1, 2, 0, 1, 1, True),
    ("pixel", (3, 4, 1, 1), 2, 1, 1, 0, 1, 1, True),
    ("full_kernel", (5, 2, 5, 5), 3, 5, 1, 0, 1, 1, True),
    ("batch1", (1, 3, 6, 6), 2, 3, 1, 1, 1, 1, True),
    ("rect", (2, 3, 9, 7), 4, (3, 2), (2, 1), (1, 0), (1, 2), 1, True),
    ("wide", (3, 3, 16, 20), 4, 3, 1, 1, 1, 1, True),
    ("small_maps", (7, 4, 3, 3), 5, 3, 1, 1, 1, 1, True),
    ("pad_big", (2, 1, 3, 3), 2, 3, 2, 2, 1, 1, True),
]


def make_conv():
    tensors, metadata = {}, {}
    for seed, (name, shape, oc, k, stride, padding, dilation, groups, bias) in enumerate(CONV_CASES, start=100):
        torch.manual_seed(seed)
        c = Case(tensors, metadata, name)
        kh, kw = (k, k) if isinstance(k, int) else k
        x = torch.randn(*shape, requires_grad=True)
        w = torch.randn(oc, shape[1] // groups, kh, kw, requires_grad=True)
        b = torch.randn(oc, requires_grad=True) if bias else None
        y = F.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
        dy = torch.randn_like(y)
        y.backward(dy)
        c.meta("stride", pair(stride))
        c.meta("padding", padding if isinstance(padding, str) else pair(padding))
        c.meta("dilation", pair(dilation))
        c.meta("groups", groups)
        c.meta("bias", bias)
        for n, t in [("x", x), ("weight", w), ("bias", b), ("dy", dy), ("y", y), ("dx", x.grad),
                     ("dweight", w.grad), ("dbias", b.grad if bias else None)]:
            if t is not None:
                c.put(n, t)

    # Unbatched [C, H, W] input, as torch accepts.
    torch.manual_seed(130)
    c = Case(tensors, metadata, "unbatched")
    x = torch.randn(2, 5, 4, requires_grad=True)
    w = torch.randn(3, 2, 3, 3, requires_grad=True)
    y = F.conv2d(x, w, None, padding=1)
    dy = torch.randn_like(y)
    y.backward(dy)
    for n, t in [("x", x), ("weight", w), ("dy", dy), ("y", y), ("dx", x.grad), ("dweight", w.grad)]:
        c.put(n, t)

    errors = {
        "channels": lambda: F.conv2d(torch.rand(1, 3, 5, 5), torch.rand(4, 2, 3, 3)),
        "same_strided": lambda: F.conv2d(torch.rand(1, 3, 5, 5), torch.rand(4, 3, 3, 3), stride=2, padding="same"),
        "padding_string": lambda: F.conv2d(torch.rand(1, 3, 5, 5), torch.rand(4, 3, 3, 3), padding="foo"),
        "kernel_too_big": lambda: F.conv2d(torch.rand(1, 3, 2, 2), torch.rand(4, 3, 3, 3)),
        "input_rank": lambda: F.conv2d(torch.rand(2, 1, 3, 5, 5), torch.rand(4, 3, 3, 3)),
        "groups_weight": lambda: F.conv2d(torch.rand(1, 4, 5, 5), torch.rand(3, 2, 3, 3), groups=2),
        "bias": lambda: F.conv2d(torch.rand(1, 3, 5, 5), torch.rand(4, 3, 3, 3), bias=torch.rand(3)),
        "stride": lambda: F.conv2d(torch.rand(1, 3, 5, 5), torch.rand(4, 3, 3, 3), stride=0),
        "padding": lambda: F.conv2d(torch.rand(1, 3, 5, 5), torch.rand(4, 3, 3, 3), padding=-1),
    }
    for key, fn in errors.items():
        metadata[f"error.{key}"] = error_message(fn)[1]
    return tensors, metadata


# ---------------------------------------------------------------------------
# pooling.safetensors: max_pool2d (with indices), avg_pool2d, adaptive_avg_pool2d

# (name, x shape, kernel, stride, padding, dilation, ceil_mode)
MAX_CASES = [
    ("max_k2", (2, 3, 6, 7), 2, None, 0, 1, False),
    ("max_k3s2p1", (2, 2, 7, 8), 3, 2, 1, 1, False),
    ("max_ceil", (1, 2, 7, 6), 2, 2, 0, 1, True),
    ("max_ceil_pad", (2, 1, 8, 7), 3, 2, 1, 1, True),
    ("max_dilation", (1, 2, 9, 8), 3, 1, 1, 2, False),
    ("max_rect", (2, 2, 7, 9), (3, 2), (2, 1), (1, 0), 1, True),
    ("max_wide", (1, 2, 5, 150), 2, None, 0, 1, False),
    ("max_unbatched", (3, 5, 4), 2, 1, 1, 1, False),
]

# (name, x shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
AVG_CASES = [
    ("avg_k2", (2, 3, 6, 7), 2, None, 0, False, True, None),
    ("avg_pad_include", (2, 2, 7, 8), 3, 2, 1, False, True, None),
    ("avg_pad_exclude", (2, 2, 7, 8), 3, 2, 1, False, False, None),
    ("avg_ceil_include", (1, 2, 8, 7), 3, 2, 1, True, True, None),
    ("avg_ceil_exclude", (1, 2, 8, 7), 3, 2, 1, True, False, None),
    ("avg_divisor", (2, 1, 6, 5), (3, 2), (2, 1), (1, 0), True, True, 4),
    ("avg_unbatched", (3, 5, 4), 2, 1, 1, False, True, None),
]

# (name, x shape, output size)
ADAPTIVE_CASES = [
    ("adaptive_32", (2, 3, 7, 5), (3, 2)),
    ("adaptive_1", (2, 4, 6, 5), 1),
    ("adaptive_up", (1, 2, 3, 4), (4, 7)),
    ("adaptive_same", (2, 2, 5, 6), (5, 6)),
    ("adaptive_unbatched", (3, 9, 8), (4, 3)),
]


def make_pooling():
    tensors, metadata = {}, {}

    def run(c, x, fn):
        y = fn(x)
        dy = torch.randn_like(y)
        y.backward(dy)
        for n, t in [("x", x), ("dy", dy), ("y", y), ("dx", x.grad)]:
            c.put(n, t)
        return y

    for seed, (name, shape, k, stride, padding, dilation, ceil) in enumerate(MAX_CASES, start=200):
        torch.manual_seed(seed)
        c = Case(tensors, metadata, name)
        x = torch.randn(*shape, requires_grad=True)
        run(c, x, lambda t: F.max_pool2d(t, k, stride, padding, dilation, ceil))
        _, indices = F.max_pool2d(x.detach(), k, stride, padding, dilation, ceil, return_indices=True)
        c.put("indices", indices, "I64")
        c.meta("kernel_size", pair(k))
        c.meta("stride", pair(stride) if stride is not None else "")
        c.meta("padding", pair(padding))
        c.meta("dilation", pair(dilation))
        c.meta("ceil_mode", ceil)

    for seed, (name, shape, k, stride, padding, ceil, include, divisor) in enumerate(AVG_CASES, start=220):
        torch.manual_seed(seed)
        c = Case(tensors, metadata, name)
        x = torch.randn(*shape, requires_grad=True)
        run(c, x, lambda t: F.avg_pool2d(t, k, stride, padding, ceil, include, divisor))
        c.meta("kernel_size", pair(k))
        c.meta("stride", pair(stride) if stride is not None else "")
        c.meta("padding", pair(padding))
        c.meta("ceil_mode", ceil)
        c.meta("count_include_pad", include)
        c.meta("divisor_override", divisor if divisor is not None else "")

    for seed, (name, shape, size) in enumerate(ADAPTIVE_CASES, start=240):
        torch.manual_seed(seed)
        c = Case(tensors, metadata, name)
        x = torch.randn(*shape, requires_grad=True)
        run(c, x, lambda t: F.adaptive_avg_pool2d(t, size))
        c.meta("output_size", pair(size))

    errors = {
        "pad_half": lambda: F.max_pool2d(torch.rand(1, 3, 5, 5), 2, padding=2),
        "too_small": lambda: F.max_pool2d(torch.rand(1, 3, 1, 1), 2),
        "empty_plane": lambda: F.max_pool2d(torch.rand(1, 3, 0, 5), 2),
        "divisor": lambda: F.avg_pool2d(torch.rand(1, 3, 4, 5), 2, divisor_override=0),
    }
    for key, fn in errors.items():
        metadata[f"error.{key}"] = error_message(fn)[1]
    return tensors, metadata


# ---------------------------------------------------------------------------
# conv_norm.safetensors: group_norm / GroupNorm, instance_norm / InstanceNorm2d, BatchNorm2d,
# LayerNorm over [C, H, W]


def make_conv_norm():
    tensors, metadata = {}, {}

    # group_norm: (name, x shape, groups, affine)
    for seed, (name, shape, groups, affine) in enumerate([
            ("gn_g1", (3, 6, 4, 5), 1, True),
            ("gn_g2", (3, 6, 4, 5), 2, True),
            ("gn_gc", (3, 6, 4, 5), 6, True),
            ("gn_noaffine", (2, 4, 3, 3), 2, False),
            ("gn_3d", (2, 6, 7), 3, True),
            ("gn_2d", (4, 6), 2, True),
            ("gn_batch1", (1, 4, 5, 3), 2, True)], start=300):
        torch.manual_seed(seed)
        c = Case(tensors, metadata, name)
        x = (torch.randn(*shape) * 2 + 1).requires_grad_()
        gn = nn.GroupNorm(groups, shape[1], affine=affine)
        if affine:
            with torch.no_grad():
                gn.weight.copy_(torch.randn(shape[1]))
                gn.bias.copy_(torch.randn(shape[1]))
        y = gn(x)
        dy = torch.randn_like(y)
        y.backward(dy)
        c.meta("num_groups", groups)
        c.meta("affine", affine)
        for n, t in [("x", x), ("dy", dy), ("y", y), ("dx", x.grad)]:
            c.put(n, t)
        if affine:
            for n, t in [("weight", gn.weight), ("bias", gn.bias), ("dweight", gn.weight.grad),
                         ("dbias", gn.bias.grad)]:
                c.put(n, t)

    # BatchNorm2d and InstanceNorm2d over a few training steps, then eval.
    def steps_case(prefix, seed, layer, steps, shape):
        torch.manual_seed(seed)
        c = Case(tensors, metadata, prefix)
        c.meta("eps", layer.eps)
        c.meta("momentum", layer.momentum)
        c.meta("affine", layer.affine)
        c.meta("track_running_stats", layer.track_running_stats)
        c.meta("steps", steps)
        if layer.affine:
            with torch.no_grad():
                layer.weight.copy_(torch.randn(shape[1]))
                layer.bias.copy_(torch.randn(shape[1]))
            c.put("weight", layer.weight)
            c.put("bias", layer.bias)
        layer.train()
        for k in range(steps):
            layer.zero_grad()
            x = (torch.randn(*shape) * 2 + 1).requires_grad_()
            y = layer(x)
            dy = torch.randn_like(y)
            y.backward(dy)
            for n, t in [(f"x{k}", x), (f"dy{k}", dy), (f"y{k}", y), (f"dx{k}", x.grad)]:
                c.put(n, t)
            if layer.affine:
                c.put(f"dweight{k}", layer.weight.grad)
                c.put(f"dbias{k}", layer.bias.grad)
            if layer.track_running_stats:
                c.put(f"running_mean{k}", layer.running_mean)
                c.put(f"running_var{k}", layer.running_var)
                c.put(f"num_batches_tracked{k}", layer.num_batches_tracked, "I64")
        layer.eval()
        with torch.no_grad():
            x_eval = torch.randn(*shape) * 2 + 1
            c.put("x_eval", x_eval)
            c.put("y_eval", layer(x_eval))

    steps_case("bn2d", 320, nn.BatchNorm2d(3), 3, (4, 3, 5, 6))
    steps_case("bn2d_cma", 321, nn.BatchNorm2d(3, momentum=None), 3, (2, 3, 4, 3))
    steps_case("bn2d_noaffine", 322, nn.BatchNorm2d(3, affine=False), 2, (3, 3, 2, 5))
    steps_case("bn2d_nostats", 323, nn.BatchNorm2d(3, track_running_stats=False), 1, (2, 3, 3, 3))
    steps_case("bn2d_batch1", 324, nn.BatchNorm2d(2), 2, (1, 2, 3, 4))
    steps_case("in2d", 330, nn.InstanceNorm2d(3), 1, (2, 3, 4, 5))
    steps_case("in2d_affine", 331, nn.InstanceNorm2d(3, affine=True), 1, (2, 3, 4, 5))
    steps_case("in2d_stats", 332, nn.InstanceNorm2d(3, affine=True, track_running_stats=True), 3, (2, 3, 4, 5))
    steps_case("in2d_stats_noaffine", 333, nn.InstanceNorm2d(3, momentum=0.3, track_running_stats=True), 2,
               (3, 3, 3, 2))

    # LayerNorm over [C, H, W]: normalized_shape of three dimensions, per-element affine.
    torch.manual_seed(340)
    c = Case(tensors, metadata, "ln_chw")
    ln = nn.LayerNorm([3, 4, 5])
    with torch.no_grad():
        ln.weight.copy_(torch.randn(3, 4, 5))
        ln.bias.copy_(torch.randn(3, 4, 5))
    x = (torch.randn(2, 3, 4, 5) * 2 + 1).requires_grad_()
    y = ln(x)
    dy = torch.randn_like(y)
    y.backward(dy)
    for n, t in [("x", x), ("weight", ln.weight), ("bias", ln.bias), ("dy", dy), ("y", y), ("dx", x.grad),
                 ("dweight", ln.weight.grad), ("dbias", ln.bias.grad)]:
        c.put(n, t)

    # The issue-12 CNN with each normalisation: torch's repr and state_dict (names and shapes),
    # which normnet's equivalent Sequential must reproduce so a state_dict moves unchanged.
    def norm_layer(kind, channels):
        return {"batch": lambda: nn.BatchNorm2d(channels),
                "group": lambda: nn.GroupNorm(8, channels),
                "layer": lambda: nn.GroupNorm(1, channels),
                "instance": lambda: nn.InstanceNorm2d(channels, affine=True, track_running_stats=True),
                "none": lambda: nn.Identity()}[kind]()

    for kind in ["batch", "group", "layer", "instance", "none"]:
        model = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), norm_layer(kind, 32), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(32, 64, 3, padding=1), norm_layer(kind, 64), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
        metadata[f"cnn.{kind}.repr"] = str(model)
        metadata[f"cnn.{kind}.state_dict"] = ";".join(
            f"{k}:{list(v.shape)}" for k, v in model.state_dict().items())

    errors = {
        "gn_groups": lambda: F.group_norm(torch.rand(2, 6, 3), 4),
        "gn_weight": lambda: F.group_norm(torch.rand(2, 6, 3), 3, torch.rand(5)),
        "bn2d_batch1": lambda: nn.BatchNorm2d(3)(torch.rand(1, 3, 1, 1)),
        "in2d_spatial": lambda: nn.InstanceNorm2d(3)(torch.rand(2, 3, 1, 1)),
    }
    for key, fn in errors.items():
        metadata[f"error.{key}"] = error_message(fn)[1]
    return tensors, metadata


FILES = [
    ("conv.safetensors", make_conv),
    ("pooling.safetensors", make_pooling),
    ("conv_norm.safetensors", make_conv_norm),
]
