"""Goldens of the losses with every option: loss_options.safetensors.

Each case calls one torch.nn.functional loss on random inputs with the options recorded in its
metadata (`<case>.fn`, `.reduction`, `.ignore_index`, `.label_smoothing`, `.beta`, `.delta`;
`.weight`/`.pos_weight` tensors when given), and stores the result and the gradients of input
and (float) target: from `loss.backward()` for a reduced loss, from `loss.backward(dy)` for
reduction "none". The metadata key `cases` lists the cases in order, so the C++ test runs them
all without naming them. Cases whose name ends in `_large` have logits of order 1e4; their
expected values are float64 torch on the same float32 inputs (metadata `<case>.reference` is
`float64`), after checking that float32 torch agrees with them.
"""

import torch
import torch.nn.functional as F

from golden_io import Case

FNS = {
    "nll_loss": F.nll_loss,
    "cross_entropy": F.cross_entropy,
    "binary_cross_entropy": F.binary_cross_entropy,
    "binary_cross_entropy_with_logits": F.binary_cross_entropy_with_logits,
    "l1_loss": F.l1_loss,
    "mse_loss": F.mse_loss,
    "smooth_l1_loss": F.smooth_l1_loss,
    "huber_loss": F.huber_loss,
}
# Options that are tensors (stored as <case>.<name>) and the rest (stored as metadata).
TENSOR_OPTIONS = ("weight", "pos_weight")


def _run(fn, inp, target, options, dtype):
    """Loss and gradients in `dtype`; dy (for reduction none) is drawn by the caller."""
    x = inp.detach().to(dtype).requires_grad_()
    float_target = target.is_floating_point()
    t = target.detach().to(dtype).requires_grad_() if float_target else target
    opts = {k: (v.to(dtype) if torch.is_tensor(v) else v) for k, v in options.items()}
    loss = FNS[fn](x, t, **opts)
    return x, t, loss, float_target


def make_case(tensors, metadata, cases, name, seed, fn, make_inputs, **options):
    torch.manual_seed(seed)
    c = Case(tensors, metadata, name)
    cases.append(name)
    inp, target = make_inputs()
    for k in TENSOR_OPTIONS:
        if k in options:
            options[k] = options[k]()  # drawn after the inputs, from the same seed
    large = name.endswith("_large")
    x, t, loss, float_target = _run(fn, inp, target, options, torch.float32)
    dy = torch.randn(loss.shape) if loss.dim() > 0 else None
    loss.backward(dy)
    if large:
        # float64 reference on exactly the float32 inputs; float32 torch must agree with it.
        x64, t64, loss64, _ = _run(fn, inp, target, options, torch.float64)
        loss64.backward(dy.double() if dy is not None else None)
        for a, b in [(loss, loss64), (x.grad, x64.grad)] + ([(t.grad, t64.grad)] if float_target else []):
            err = ((a.double() - b).abs() - 1e-5 * (1 + b.abs())).max().item()
            assert err <= 0, (name, err)
        x, t, loss = x64, t64, loss64
        c.meta("reference", "float64")
    kind = "F64" if large else "F32"
    c.meta("fn", fn)
    c.meta("reduction", options.get("reduction", "mean"))
    for k in ("ignore_index", "label_smoothing", "beta", "delta"):
        if k in options:
            c.meta(k, options[k])
    c.put("input", inp)
    c.put("target", target, "F32" if float_target else "I64")
    for k in TENSOR_OPTIONS:
        if k in options:
            c.put(k, options[k])
    if dy is not None:
        c.put("dy", dy)
    c.put("loss", loss, kind)
    c.put("dinput", x.grad, kind)
    if float_target:
        c.put("dtarget", t.grad, kind)


def classes(shape, C, ignore=None, ignore_every=0):
    """Class indices of `shape` in [0, C), every ignore_every-th one replaced by `ignore`."""
    def make():
        t = torch.randint(0, C, shape)
        if ignore is not None:
            flat = t.view(-1)
            flat[::ignore_every] = ignore
        return t
    return make


def make_loss_options():
    tensors, metadata, cases = {}, {}, []

    def case(name, seed, fn, make_inputs, **options):
        make_case(tensors, metadata, cases, name, seed, fn, make_inputs, **options)

    def logits(*shape, scale=3.0):
        return lambda: torch.randn(*shape) * scale

    def inputs(make_x, make_t):
        return lambda: (make_x(), make_t())

    def log_probs(*shape):
        return lambda: F.log_softmax(torch.randn(*shape) * 2, dim=1 if len(shape) > 1 else 0)

    def probs(*shape, dim=1):
        return lambda: torch.softmax(torch.randn(*shape), dim=dim)

    def positive(*shape):
        return lambda: torch.rand(*shape) + 0.5

    # nll_loss
    case("nll_mean", 100, "nll_loss", inputs(log_probs(6, 5), classes((6,), 5, -100, 3)))
    case("nll_weight_sum", 101, "nll_loss", inputs(log_probs(6, 5), classes((6,), 5)), reduction="sum",
         weight=positive(5))
    case("nll_weight_mean", 102, "nll_loss", inputs(log_probs(7, 4), classes((7,), 4, -100, 4)), weight=positive(4))
    case("nll_none_nd", 103, "nll_loss", inputs(log_probs(3, 4, 2, 2), classes((3, 2, 2), 4, -100, 5)),
         reduction="none", weight=positive(4))
    case("nll_ignore_index", 104, "nll_loss", inputs(log_probs(6, 3), classes((6,), 3)), ignore_index=1)
    case("nll_unbatched", 105, "nll_loss", inputs(log_probs(5), classes((), 5)))
    case("nll_one_class", 106, "nll_loss", inputs(log_probs(4, 1), classes((4,), 1)), reduction="sum")

    # cross_entropy with class indices
    case("ce_mean", 110, "cross_entropy", inputs(logits(6, 10), classes((6,), 10)))
    case("ce_weight", 111, "cross_entropy", inputs(logits(6, 5), classes((6,), 5)), weight=positive(5))
    case("ce_ignore", 112, "cross_entropy", inputs(logits(8, 5), classes((8,), 5, -100, 3)))
    case("ce_ignore_weight_smooth", 113, "cross_entropy", inputs(logits(8, 5), classes((8,), 5, -100, 3)),
         weight=positive(5), label_smoothing=0.2)
    case("ce_ignore_index_sum", 114, "cross_entropy", inputs(logits(6, 4), classes((6,), 4)), ignore_index=0,
         reduction="sum")
    case("ce_smooth_mean", 115, "cross_entropy", inputs(logits(5, 6), classes((5,), 6)), label_smoothing=0.1)
    case("ce_smooth_none", 116, "cross_entropy", inputs(logits(5, 6), classes((5,), 6)), label_smoothing=0.3,
         reduction="none")
    case("ce_nd_none", 117, "cross_entropy", inputs(logits(2, 4, 3, 2), classes((2, 3, 2), 4, -100, 4)),
         reduction="none", weight=positive(4), label_smoothing=0.1)
    case("ce_nd_mean", 118, "cross_entropy", inputs(logits(3, 5, 4), classes((3, 4), 5)), label_smoothing=0.05)
    case("ce_unbatched", 119, "cross_entropy", inputs(logits(7), classes((), 7)))
    case("ce_full_smoothing", 120, "cross_entropy", inputs(logits(4, 3), classes((4,), 3)), label_smoothing=1.0)
    case("ce_large", 121, "cross_entropy", inputs(logits(6, 10, scale=1e4), classes((6,), 10)))
    case("ce_smooth_weight_large", 122, "cross_entropy", inputs(logits(6, 10, scale=1e4), classes((6,), 10, -100, 4)),
         weight=positive(10), label_smoothing=0.1)
    # cross_entropy with class probabilities (differentiable target)
    case("ce_prob_mean", 130, "cross_entropy", inputs(logits(5, 4), probs(5, 4)))
    case("ce_prob_weight_smooth", 131, "cross_entropy", inputs(logits(5, 4), probs(5, 4)), weight=positive(4),
         label_smoothing=0.2)
    case("ce_prob_nd_none", 132, "cross_entropy", inputs(logits(3, 4, 2), probs(3, 4, 2)), reduction="none",
         weight=positive(4))
    case("ce_prob_sum", 133, "cross_entropy", inputs(logits(4, 6), probs(4, 6)), reduction="sum")
    case("ce_prob_unbatched", 134, "cross_entropy", inputs(logits(5), probs(5, dim=0)), label_smoothing=0.1)
    case("ce_prob_large", 135, "cross_entropy", inputs(logits(4, 8, scale=1e4), probs(4, 8)), label_smoothing=0.1)

    # binary_cross_entropy: inputs in [0, 1]; weight broadcast from [3]
    def unit(*shape):
        return lambda: torch.rand(*shape) * 0.98 + 0.01

    def edges():
        return torch.tensor([[0.0, 1.0, 0.0, 1.0, 0.5, 1e-30]])

    case("bce_mean", 140, "binary_cross_entropy", inputs(unit(4, 3), unit(4, 3)))
    case("bce_weight_sum", 141, "binary_cross_entropy", inputs(unit(4, 3), lambda: torch.randint(0, 2, (4, 3)).float()),
         weight=positive(3), reduction="sum")
    case("bce_none", 142, "binary_cross_entropy", inputs(unit(2, 3, 2), unit(2, 3, 2)), reduction="none",
         weight=positive(3, 1))
    case("bce_edges", 143, "binary_cross_entropy",
         inputs(edges, lambda: torch.tensor([[1.0, 0.0, 0.0, 1.0, 1.0, 0.5]])), reduction="none")

    # binary_cross_entropy_with_logits: pos_weight [C] broadcast over [N, C]
    case("bcel_mean", 150, "binary_cross_entropy_with_logits", inputs(logits(4, 3), unit(4, 3)))
    case("bcel_pos_weight_none", 151, "binary_cross_entropy_with_logits", inputs(logits(4, 3), unit(4, 3)),
         reduction="none", pos_weight=positive(3), weight=positive(4, 1))
    case("bcel_sum", 152, "binary_cross_entropy_with_logits",
         inputs(logits(5, 2), lambda: torch.randint(0, 2, (5, 2)).float()), reduction="sum", pos_weight=positive(2))
    case("bcel_large", 153, "binary_cross_entropy_with_logits",
         inputs(logits(4, 5, scale=1e4), lambda: torch.randint(0, 2, (4, 5)).float()), pos_weight=positive(5))
    case("bcel_none_large", 154, "binary_cross_entropy_with_logits", inputs(logits(3, 4, scale=1e4), unit(3, 4)),
         reduction="none")

    # the regression losses; differences spread over the quadratic and linear parts
    def spread(*shape):
        return lambda: torch.randn(*shape) * 2

    for base, fn, short, extra in [(160, "l1_loss", "l1", {}), (170, "mse_loss", "mse", {}),
                                   (180, "smooth_l1_loss", "smooth_l1", {"beta": 0.5}),
                                   (190, "huber_loss", "huber", {"delta": 1.5})]:
        case(f"{short}_mean", base, fn, inputs(spread(4, 5), spread(4, 5)), **extra)
        case(f"{short}_sum", base + 1, fn, inputs(spread(1, 6), spread(1, 6)), reduction="sum", **extra)
        case(f"{short}_none", base + 2, fn, inputs(spread(3, 2, 2), spread(3, 2, 2)), reduction="none", **extra)
    case("smooth_l1_beta0", 200, "smooth_l1_loss", inputs(spread(3, 4), spread(3, 4)), beta=0.0)
    case("smooth_l1_default", 201, "smooth_l1_loss", inputs(spread(3, 4), spread(3, 4)))
    case("huber_default", 202, "huber_loss", inputs(spread(3, 4), spread(3, 4)), reduction="sum")

    metadata["cases"] = ",".join(cases)
    return tensors, metadata


FILES = [("loss_options.safetensors", make_loss_options)]
