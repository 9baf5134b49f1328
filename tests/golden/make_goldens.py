#!/usr/bin/python3
"""PyTorch oracle for normnet's C++ tests.

Writes small safetensors files into tests/golden/ holding inputs, outputs and
gradients computed by PyTorch (Debian's python3-torch 1.13). The files are
committed, so the C++ tests run without torch. tests/golden/README.md documents
every tensor and hyper-parameter.

    /usr/bin/python3 tests/golden/make_goldens.py           # (re)write the files
    /usr/bin/python3 tests/golden/make_goldens.py --check   # reread and verify them

    /usr/bin/python3 tests/golden/make_goldens.py --only shape.safetensors   # rewrite one file

--check parses every file with a reader independent of the writer (numpy only),
verifies the header layout (offsets contiguous, sizes match dtype x shape, files
small), then recomputes every case. Integer tensors must be identical; float
tensors identical or within the tests' tolerance (1e-5 absolute + relative): torch's
products take the CPU's BLAS kernels, whose last bits differ between CPUs, while an
input drawn from the wrong random state differs by whole units and fails.
"""

import argparse
import glob
import importlib
import json
import math
import os
import sys

# One BLAS thread as one torch thread (main() below): set before numpy and torch load OpenBLAS.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402 (after the environment above)
import torch
import torch.nn as nn
import torch.nn.functional as F

from golden_io import (GOLDEN_DIR, MAX_FILE_BYTES, MAX_TOTAL_BYTES, Case, error_message, np32, np64, npi64,
                       read_safetensors, write_safetensors)

# ---------------------------------------------------------------------------
# 1. layer_norm.safetensors


def make_layer_norm():
    tensors, metadata = {}, {}

    def affine_case(prefix, normalized_shape, eps=1e-5, seed=0):
        torch.manual_seed(seed)
        c = Case(tensors, metadata, prefix)
        x = torch.rand(4, 2, 3, requires_grad=True)
        ln = nn.LayerNorm(normalized_shape, eps=eps)
        with torch.no_grad():  # random affine so a swapped or ignored weight/bias shows up
            ln.weight.copy_(torch.randn(normalized_shape))
            ln.bias.copy_(torch.randn(normalized_shape))
        dy = torch.randn(4, 2, 3)
        y = ln(x)
        y.backward(dy)
        c.meta("normalized_shape", list(normalized_shape))
        c.meta("eps", eps)
        for name, t in [("x", x), ("weight", ln.weight), ("bias", ln.bias), ("dy", dy),
                        ("y", y), ("dx", x.grad), ("dweight", ln.weight.grad),
                        ("dbias", ln.bias.grad)]:
            c.put(name, t)

    affine_case("ln3", [3], seed=1)
    affine_case("ln23", [2, 3], seed=2)

    torch.manual_seed(3)
    c = Case(tensors, metadata, "ln_default")
    x = torch.rand(4, 2, 3)
    y = nn.LayerNorm(3)(x)
    c.meta("normalized_shape", [3])
    c.meta("eps", 1e-5)
    c.put("x", x)
    c.put("y", y)

    torch.manual_seed(4)
    c = Case(tensors, metadata, "ln_noaffine")
    x = torch.rand(4, 2, 3, requires_grad=True)
    dy = torch.randn(4, 2, 3)
    y = nn.LayerNorm(3, elementwise_affine=False)(x)
    y.backward(dy)
    c.meta("normalized_shape", [3])
    c.meta("eps", 1e-5)
    for name, t in [("x", x), ("dy", dy), ("y", y), ("dx", x.grad)]:
        c.put(name, t)

    # torch 1.13's nn.LayerNorm has no bias=False; the functional form takes bias=None.
    torch.manual_seed(5)
    c = Case(tensors, metadata, "ln_nobias")
    x = torch.rand(4, 2, 3, requires_grad=True)
    weight = torch.randn(3, requires_grad=True)
    dy = torch.randn(4, 2, 3)
    y = F.layer_norm(x, [3], weight, None, 1e-5)
    y.backward(dy)
    c.meta("normalized_shape", [3])
    c.meta("eps", 1e-5)
    for name, t in [("x", x), ("weight", weight), ("dy", dy), ("y", y), ("dx", x.grad),
                    ("dweight", weight.grad)]:
        c.put(name, t)

    affine_case("ln_eps", [3], eps=1e-3, seed=6)

    # Large offset, small spread: a naive E[x^2]-E[x]^2 variance cancels catastrophically here.
    # The reference is float64 layer_norm of exactly the float32 values the C++ side will see.
    torch.manual_seed(7)
    c = Case(tensors, metadata, "ln_offset")
    x = (1e4 + torch.rand(8, 300, dtype=torch.float64)).to(torch.float32)
    y64 = F.layer_norm(x.to(torch.float64), [300], None, None, 1e-5)
    # torch's own float32 answer, kept to show how far a float32 kernel can drift here (~4e-3).
    y32 = F.layer_norm(x, [300], None, None, 1e-5)
    c.meta("normalized_shape", [300])
    c.meta("eps", 1e-5)
    c.put("x", x)
    c.put("y64", y64, "F64")
    c.put("y", y32)

    kind, msg = error_message(lambda: F.layer_norm(torch.rand(4, 2, 3), [2]))
    metadata["ln_error.message"] = msg
    metadata["ln_error.type"] = kind
    return tensors, metadata


# ---------------------------------------------------------------------------
# 2. linear.safetensors


def make_linear():
    tensors, metadata = {}, {}

    def case(prefix, x_shape, bias, seed):
        torch.manual_seed(seed)
        c = Case(tensors, metadata, prefix)
        lin = nn.Linear(7, 3, bias=bias)  # PyTorch's default (kaiming-uniform) init
        x = torch.randn(*x_shape, 7, requires_grad=True)
        dy = torch.randn(*x_shape, 3)
        y = lin(x)
        y.backward(dy)
        c.meta("in_features", 7)
        c.meta("out_features", 3)
        c.meta("bias", bias)
        c.put("x", x)
        c.put("weight", lin.weight)
        if bias:
            c.put("bias", lin.bias)
        c.put("dy", dy)
        c.put("y", y)
        c.put("dx", x.grad)
        c.put("dweight", lin.weight.grad)
        if bias:
            c.put("dbias", lin.bias.grad)

    case("linear", (5,), True, seed=10)
    case("linear_nobias", (5,), False, seed=11)
    case("linear3d", (2, 5), True, seed=12)
    return tensors, metadata


# ---------------------------------------------------------------------------
# 3. loss.safetensors


def make_loss():
    tensors, metadata = {}, {}

    def ce_case(prefix, scale, seed):
        torch.manual_seed(seed)
        c = Case(tensors, metadata, prefix)
        logits = (torch.randn(6, 10) * scale).requires_grad_()
        target = torch.randint(0, 10, (6,))
        loss = F.cross_entropy(logits, target)  # reduction="mean"
        loss.backward()
        c.meta("reduction", "mean")
        c.meta("logit_scale", scale)
        c.put("logits", logits)
        c.put("target", target, "I64")
        c.put("loss", loss)
        c.put("dlogits", logits.grad)

    ce_case("ce", 3.0, seed=20)
    # Logits of order 1e4: exp() overflows unless the max is subtracted first.
    ce_case("ce_large", 1e4, seed=21)

    torch.manual_seed(22)
    c = Case(tensors, metadata, "log_softmax")
    x = (torch.randn(4, 10) * 3).requires_grad_()
    dy = torch.randn(4, 10)
    y = F.log_softmax(x, dim=-1)
    y.backward(dy)
    c.meta("dim", -1)
    for name, t in [("x", x), ("dy", dy), ("y", y), ("dx", x.grad)]:
        c.put(name, t)

    torch.manual_seed(23)
    c = Case(tensors, metadata, "mse")
    inp = torch.randn(5, 3, requires_grad=True)
    target = torch.randn(5, 3)
    loss = F.mse_loss(inp, target)  # reduction="mean"
    loss.backward()
    c.meta("reduction", "mean")
    for name, t in [("input", inp), ("target", target), ("loss", loss), ("dinput", inp.grad)]:
        c.put(name, t)
    return tensors, metadata


# ---------------------------------------------------------------------------
# 4. seed_model_inputs.safetensors / seed_model_outputs.safetensors


SEED_ARCH = ("Sequential(0: Linear(784, 300), 1: ReLU, 2: LayerNorm(300), 3: Linear(300, 100), "
             "4: ReLU, 5: LayerNorm(100), 6: Linear(100, 10))")


def _seed_model_run():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 300), nn.ReLU(), nn.LayerNorm(300),
                          nn.Linear(300, 100), nn.ReLU(), nn.LayerNorm(100),
                          nn.Linear(100, 10))
    with torch.no_grad():  # non-trivial affine so LayerNorm weight/bias gradients matter
        for i in (2, 5):
            model[i].weight.copy_(1 + 0.1 * torch.randn_like(model[i].weight))
            model[i].bias.copy_(0.1 * torch.randn_like(model[i].bias))
    x = torch.rand(16, 784)
    target = torch.randint(0, 10, (16,))
    logits = model(x)
    loss = F.cross_entropy(logits, target)
    loss.backward()
    return model, x, target, logits, loss


def _seed_meta():
    return {"seed_model.architecture": SEED_ARCH, "seed_model.layernorm_eps": "1e-05",
            "seed_model.loss": "cross_entropy, reduction mean"}


def make_seed_model_inputs():
    model, x, target, _, _ = _seed_model_run()
    tensors = {name: np32(t) for name, t in model.state_dict().items()}
    tensors["x"] = np32(x)
    tensors["target"] = npi64(target)
    return tensors, _seed_meta()


def make_seed_model_outputs():
    model, _, _, logits, loss = _seed_model_run()
    tensors = {"logits": np32(logits), "loss": np32(loss)}
    for name, p in model.named_parameters():
        tensors[f"grad.{name}"] = np32(p.grad)
    return tensors, _seed_meta()


# ---------------------------------------------------------------------------
# 5. optim.safetensors


OPTIM_CASES = [
    ("sgd", torch.optim.SGD, dict(lr=0.1)),
    ("sgd_momentum", torch.optim.SGD, dict(lr=0.1, momentum=0.9)),
    ("sgd_dampening", torch.optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.5)),
    ("sgd_nesterov", torch.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True)),
    ("sgd_wd", torch.optim.SGD, dict(lr=0.1, momentum=0.9, weight_decay=0.01)),
    ("adam", torch.optim.Adam, dict(lr=0.01)),
    ("adam_wd", torch.optim.Adam, dict(lr=0.01, weight_decay=0.1)),
    ("adam_betas", torch.optim.Adam, dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6)),
    ("adamw", torch.optim.AdamW, dict(lr=0.01)),
    ("adamw_wd", torch.optim.AdamW, dict(lr=0.01, weight_decay=0.05)),
]
# Cases where p1 has a gradient only in some steps (its .grad is None in the others): torch counts
# each parameter's steps for Adam's bias corrections, so p1's first update uses step 1, not 2.
OPTIM_SPARSE_CASES = [
    ("adam_sparse", torch.optim.Adam, dict(lr=0.1)),
    ("adamw_sparse", torch.optim.AdamW, dict(lr=0.1, weight_decay=0.05)),
    ("sgd_momentum_sparse", torch.optim.SGD, dict(lr=0.1, momentum=0.9)),
]
OPTIM_SPARSE_P1_STEPS = (1, 2)
OPTIM_STEPS = 5
# The hyper-parameters that define the update; torch's implementation switches
# (foreach, capturable, differentiable, fused) are left out.
OPTIM_KEYS = ["lr", "momentum", "dampening", "nesterov", "weight_decay", "betas", "eps",
              "amsgrad", "maximize"]


def make_optim():
    tensors, metadata = {}, {}
    torch.manual_seed(30)
    A = torch.randn(4, 2)
    B = torch.randn(3, 2)
    cvec = torch.randn(5)
    p0_init = torch.randn(3, 4)
    p1_init = torch.randn(5)
    c = Case(tensors, metadata, "problem")
    c.put("A", A)
    c.put("B", B)
    c.put("c", cvec)
    c.meta("loss", "sum((p0 @ A - B)^2) + sum(sin(p1) * c)")

    for name, cls, kwargs in OPTIM_CASES + OPTIM_SPARSE_CASES:
        sparse = name.endswith("_sparse")
        torch.manual_seed(31)  # nothing random below; seeded anyway so a change stays reproducible
        c = Case(tensors, metadata, name)
        p0 = p0_init.clone().requires_grad_()
        p1 = p1_init.clone().requires_grad_()
        opt = cls([p0, p1], **kwargs)
        group = opt.param_groups[0]
        hp = {"optimizer": cls.__name__}
        hp.update({k: (list(group[k]) if k == "betas" else group[k])
                   for k in OPTIM_KEYS if k in group})
        c.meta("hparams", json.dumps(hp))
        c.put("init.p0", p0)
        c.put("init.p1", p1)
        for k in range(OPTIM_STEPS):
            opt.zero_grad(set_to_none=sparse)
            loss = ((p0 @ A - B) ** 2).sum()
            if not sparse or k in OPTIM_SPARSE_P1_STEPS:
                loss = loss + (torch.sin(p1) * cvec).sum()
            loss.backward()
            # Raw autograd gradients; torch applies weight decay inside step() without touching .grad.
            c.put(f"grad{k}.p0", p0.grad)
            if p1.grad is not None:
                c.put(f"grad{k}.p1", p1.grad)
            opt.step()
            c.put(f"after{k}.p0", p0)
            c.put(f"after{k}.p1", p1)
    return tensors, metadata


# ---------------------------------------------------------------------------
# 6. schedule.safetensors


SCHED_BASE_LR = 0.1
SCHED_T = 20
SCHED_WARMUP = 5


def _record_lrs(make_scheduler, steps=SCHED_T, base_lr=SCHED_BASE_LR):
    """lr seen by each of `steps` optimizer steps; the scheduler is stepped after every step."""
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=base_lr)
    sched = make_scheduler(opt)
    lrs = []
    for _ in range(steps):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()  # p has no grad, so nothing moves; it keeps torch's step-order check quiet
        sched.step()
    return torch.tensor(lrs, dtype=torch.float64)


def make_schedule():
    tensors, metadata = {}, {}
    T, w = SCHED_T, SCHED_WARMUP
    lr_sched = torch.optim.lr_scheduler

    def put(name, lrs, definition):
        c = Case(tensors, metadata, name)
        c.put("lr", lrs, "F64")
        c.meta("definition", definition)

    metadata["base_lr"] = str(SCHED_BASE_LR)
    metadata["T"] = str(T)
    metadata["warmup"] = str(w)

    put("constant", _record_lrs(lambda o: lr_sched.LambdaLR(o, lambda t: 1.0)), "lr(t) = base")
    put("step", _record_lrs(lambda o: lr_sched.StepLR(o, step_size=6, gamma=0.5)),
        "torch StepLR(step_size=6, gamma=0.5): lr(t) = base * 0.5^floor(t/6)")
    put("cosine", _record_lrs(lambda o: lr_sched.CosineAnnealingLR(o, T_max=T, eta_min=0.0)),
        "torch CosineAnnealingLR(T_max=20, eta_min=0)")
    put("cosine_min", _record_lrs(lambda o: lr_sched.CosineAnnealingLR(o, T_max=T, eta_min=0.01)),
        "torch CosineAnnealingLR(T_max=20, eta_min=0.01)")

    def warmup_cosine(t):
        if t < w:
            return (t + 1) / w
        return (1 + math.cos(math.pi * (t - w) / (T - w))) / 2

    def warmup_step(t):
        if t < w:
            return (t + 1) / w
        return 0.5 ** ((t - w) // 6)

    def warmup_constant(t):
        return (t + 1) / w if t < w else 1.0

    wc = _record_lrs(lambda o: lr_sched.LambdaLR(o, warmup_cosine))
    ws = _record_lrs(lambda o: lr_sched.LambdaLR(o, warmup_step))
    # The definitions must agree with torch's own schedulers after the warm-up.
    cos15 = _record_lrs(lambda o: lr_sched.CosineAnnealingLR(o, T_max=T - w), steps=T - w)
    assert (wc[w:] - cos15).abs().max().item() <= 1e-12, (wc[w:], cos15)
    step15 = _record_lrs(lambda o: lr_sched.StepLR(o, step_size=6, gamma=0.5), steps=T - w)
    assert (ws[w:] - step15).abs().max().item() <= 1e-12, (ws[w:], step15)

    put("warmup_cosine", wc,
        "t<5: base*(t+1)/5; else base*(1+cos(pi*(t-5)/15))/2 (LambdaLR)")
    put("warmup_step", ws, "t<5: base*(t+1)/5; else base*0.5^floor((t-5)/6) (LambdaLR)")
    put("warmup_constant", _record_lrs(lambda o: lr_sched.LambdaLR(o, warmup_constant)),
        "t<5: base*(t+1)/5; else base (LambdaLR)")
    return tensors, metadata


# ---------------------------------------------------------------------------
# 7. clip.safetensors


def make_clip():
    tensors, metadata = {}, {}
    for seed, (name, max_norm) in enumerate([("clip1", 1.0), ("clip100", 100.0)], start=40):
        torch.manual_seed(seed)
        c = Case(tensors, metadata, name)
        p0 = torch.zeros(3, 4, requires_grad=True)
        p1 = torch.zeros(5, requires_grad=True)
        p0.grad = torch.randn(3, 4) * 3
        p1.grad = torch.randn(5) * 3
        c.put("g0", p0.grad)
        c.put("g1", p1.grad)
        total_norm = torch.nn.utils.clip_grad_norm_([p0, p1], max_norm)
        c.meta("max_norm", max_norm)
        c.meta("norm_type", 2.0)
        c.put("total_norm", total_norm)
        c.put("clipped.g0", p0.grad)
        c.put("clipped.g1", p1.grad)
    return tensors, metadata


# ---------------------------------------------------------------------------
# 8. batch_norm.safetensors


def make_batch_norm():
    tensors, metadata = {}, {}

    def case(prefix, seed, steps, extra_dims=(), **options):
        torch.manual_seed(seed)
        c = Case(tensors, metadata, prefix)
        bn = nn.BatchNorm1d(4, **options)
        c.meta("num_features", 4)
        c.meta("eps", bn.eps)
        c.meta("momentum", bn.momentum)  # "None" means cumulative moving average
        c.meta("affine", bn.affine)
        c.meta("track_running_stats", bn.track_running_stats)
        c.meta("steps", steps)
        if bn.affine:
            with torch.no_grad():
                bn.weight.copy_(torch.randn(4))
                bn.bias.copy_(torch.randn(4))
            c.put("weight", bn.weight)
            c.put("bias", bn.bias)
        bn.train()
        for k in range(steps):
            bn.zero_grad()  # grads of this step alone
            x = (torch.randn(8, 4, *extra_dims) * 2 + 1).requires_grad_()
            dy = torch.randn(8, 4, *extra_dims)
            y = bn(x)
            y.backward(dy)
            c.put(f"x{k}", x)
            c.put(f"dy{k}", dy)
            c.put(f"y{k}", y)
            c.put(f"dx{k}", x.grad)
            if bn.affine:
                c.put(f"dweight{k}", bn.weight.grad)
                c.put(f"dbias{k}", bn.bias.grad)
            if bn.track_running_stats:
                c.put(f"running_mean{k}", bn.running_mean)
                c.put(f"running_var{k}", bn.running_var)
                c.put(f"num_batches_tracked{k}", bn.num_batches_tracked, "I64")
        bn.eval()
        with torch.no_grad():
            x_eval = torch.randn(5, 4, *extra_dims) * 2 + 1
            y_eval = bn(x_eval)
        c.put("x_eval", x_eval)
        c.put("y_eval", y_eval)

    case("bn_train", 50, 3)
    case("bn_cma", 51, 3, momentum=None)
    case("bn_3d", 52, 2, extra_dims=(5,))
    case("bn_noaffine", 53, 2, affine=False)
    case("bn_nostats", 54, 1, track_running_stats=False)

    bn = nn.BatchNorm1d(300).train()
    kind, msg = error_message(lambda: bn(torch.zeros(1, 300)))
    metadata["bn_error.message"] = msg
    metadata["bn_error.type"] = kind
    return tensors, metadata


# ---------------------------------------------------------------------------
# 9. rms_norm.safetensors


def rms_norm(x, normalized_shape, weight, eps):
    # torch 1.13 has no RMSNorm; this is the formula of torch's later nn.RMSNorm.
    dims = tuple(range(-len(normalized_shape), 0))
    y = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps)
    return y * weight if weight is not None else y


def make_rms_norm():
    tensors, metadata = {}, {}

    def case(prefix, seed, x_shape, normalized_shape, affine, eps):
        torch.manual_seed(seed)
        c = Case(tensors, metadata, prefix)
        x = torch.randn(*x_shape, requires_grad=True)
        weight = torch.randn(*normalized_shape, requires_grad=True) if affine else None
        dy = torch.randn(*x_shape)
        y = rms_norm(x, normalized_shape, weight, eps)
        y.backward(dy)
        c.meta("normalized_shape", list(normalized_shape))
        c.meta("eps", repr(eps))
        c.meta("affine", affine)
        c.put("x", x)
        if affine:
            c.put("weight", weight)
        c.put("dy", dy)
        c.put("y", y)
        c.put("dx", x.grad)
        if affine:
            c.put("dweight", weight.grad)

    case("rms6", 60, (4, 6), [6], True, 1e-5)
    case("rms23", 61, (4, 2, 3), [2, 3], True, 1e-5)
    # nn.RMSNorm(eps=None) uses torch.finfo(dtype).eps.
    case("rms_noaffine", 62, (4, 6), [6], False, torch.finfo(torch.float32).eps)
    return tensors, metadata


# ---------------------------------------------------------------------------


FILES = [
    ("layer_norm.safetensors", make_layer_norm),
    ("linear.safetensors", make_linear),
    ("loss.safetensors", make_loss),
    ("seed_model_inputs.safetensors", make_seed_model_inputs),
    ("seed_model_outputs.safetensors", make_seed_model_outputs),
    ("optim.safetensors", make_optim),
    ("schedule.safetensors", make_schedule),
    ("clip.safetensors", make_clip),
    ("batch_norm.safetensors", make_batch_norm),
    ("rms_norm.safetensors", make_rms_norm),
]
# Each gen_<family>.py here adds its own files (a module-level FILES list of (file name, maker)),
# so op families grow their goldens without editing this list.
sys.path.insert(0, GOLDEN_DIR)
for _path in sorted(glob.glob(os.path.join(GOLDEN_DIR, "gen_*.py"))):
    FILES += importlib.import_module(os.path.basename(_path)[:-3]).FILES


def common_metadata():
    return {"generator": "tests/golden/make_goldens.py", "torch_version": torch.__version__}


def generate(maker):
    tensors, metadata = maker()
    return tensors, {**common_metadata(), **metadata}


# What --check accepts between a committed float tensor and this machine's recomputation.
TOLERANCE = 1e-5


def check():
    total = 0
    for fname, maker in FILES:
        path = os.path.join(GOLDEN_DIR, fname)
        size = os.path.getsize(path)
        total += size
        assert size < MAX_FILE_BYTES, f"{fname}: {size} bytes"
        tensors, metadata = read_safetensors(path)
        want_tensors, want_metadata = generate(maker)
        assert metadata == want_metadata, f"{fname}: metadata differs"
        assert list(tensors) == list(want_tensors), f"{fname}: tensor names/order differ"
        rounded = 0
        for name, arr in tensors.items():
            want = want_tensors[name]
            assert arr.shape == want.shape, (fname, name, arr.shape, want.shape)
            assert arr.dtype == want.dtype, (fname, name, arr.dtype, want.dtype)
            if arr.tobytes() == want.tobytes():
                continue
            assert arr.dtype.kind == "f", f"{fname}:{name}: values differ"
            a, w = arr.astype(np.float64), want.astype(np.float64)
            worst = float(np.max(np.abs(a - w) - TOLERANCE * (1 + np.abs(w)))) if a.size else 0.0
            assert worst <= 0, f"{fname}:{name}: values differ beyond {TOLERANCE} (abs + rel)"
            rounded += 1
        note = f"  ({rounded} differ in rounding only)" if rounded else ""
        print(f"ok  {fname:32s} {size:9d} bytes  {len(tensors):4d} tensors{note}")
    assert total < MAX_TOTAL_BYTES, f"total {total} bytes"
    print(f"ok  total {total} bytes")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="reread the files and verify them instead of writing")
    parser.add_argument("--only", action="append", metavar="FILE",
                        help="write only this file (repeatable), e.g. after changing its generator")
    args = parser.parse_args()
    # One thread: the summation order of the larger products must not depend on the machine.
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float32)
    if args.check:
        check()
        return
    unknown = set(args.only or ()) - {f for f, _ in FILES}
    if unknown:
        parser.error(f"--only: no such golden file: {', '.join(sorted(unknown))}")
    for fname, maker in FILES:
        if args.only and fname not in args.only:
            continue
        tensors, metadata = generate(maker)
        path = os.path.join(GOLDEN_DIR, fname)
        write_safetensors(path, tensors, metadata)
        print(f"wrote {fname} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    sys.exit(main())
