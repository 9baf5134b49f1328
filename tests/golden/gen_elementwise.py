"""Goldens of the elementwise families: binary ops with broadcasting, their scalar forms and the
in-place updates (elementwise.safetensors), unary math, activations and softmax
(activation.safetensors), comparisons and selection (compare.safetensors).

Every case is one call of one op, described by metadata the C++ test reads
(tests/test_ops_elementwise.cpp, test_ops_activation.cpp look the op up by name):

    <case>.op      the op's name, as normnet spells the function (add, gelu, masked_fill, ...)
    <case>.args    JSON object of its non-tensor arguments (alpha, dim, approximate, ...)
    <case>.inputs  JSON list of input names, in call order
    <case>.view.<input>  JSON list of view steps applied to the stored base tensor before the
                   call: ["t"], ["transpose", d0, d1], ["narrow", dim, start, length]
    <case>.grad    "1" when gradients were taken

and tensors <case>.<input> (the bases), <case>.y (the output) and, with grad, <case>.dy (the
output's gradient) and <case>.d<input> (the gradient of each float base). Inputs are leaves;
a view's gradient lands on its base. Shapes cover broadcasting, size-1, size-0 and 0-d tensors.
Cases named *.special hold inf, NaN, -0.0, denormals and huge values (forward only), with
<case>.y64, the op in float64 on the same inputs.
"""

import json
import math

import torch
import torch.nn.functional as F

from golden_io import Case

INF, NAN = float("inf"), float("nan")
SPECIAL = [0.0, -0.0, 1e-30, -1e-30, 1e-40, -1e-40, 0.5, -0.5, 1.0, -1.0, 3.0, -3.0, 15.0, -15.0, 30.0, -30.0,
           88.0, -88.0, 100.0, -100.0, 1e10, -1e10, 3e38, -3e38, INF, -INF, NAN]


def apply_view(t, steps):
    for step in steps:
        if step[0] == "t":
            t = t.t()
        elif step[0] == "transpose":
            t = t.transpose(step[1], step[2])
        elif step[0] == "narrow":
            t = t.narrow(step[1], step[2], step[3])
        else:
            raise ValueError(step)
    return t


class Cases:
    """Collects cases into one file's tensors and metadata."""

    def __init__(self):
        self.tensors, self.metadata, self.count = {}, {}, 0

    def add(self, name, op, fn, inputs, args=None, grad=True):
        """inputs: list of (input name, base tensor, view steps). fn(*views, **args) -> output."""
        c = Case(self.tensors, self.metadata, name)
        args = args or {}
        c.meta("op", op)
        # JSON has no infinities: they are written as the strings "inf" and "-inf".
        c.meta("args", json.dumps({k: (str(v) if isinstance(v, float) and math.isinf(v) else v)
                                   for k, v in args.items()}, sort_keys=True))
        c.meta("inputs", json.dumps([n for n, _, _ in inputs]))
        bases = []
        for n, base, steps in inputs:
            base = base.detach().clone()
            if grad and base.is_floating_point():
                base.requires_grad_()
            bases.append(base)
            if steps:
                c.meta(f"view.{n}", json.dumps(steps))
        views = [apply_view(b, s) for b, (_, _, s) in zip(bases, inputs)]
        y = fn(*views, **args)
        for (n, _, _), base in zip(inputs, bases):
            c.put(n, base, kind_of(base))
        c.put("y", y, kind_of(y))
        if name.endswith(".special") and y.dtype == torch.float32:
            # float32 torch is itself inaccurate at some of these (sigmoid and SiLU flush to 0
            # early, GELU's tails cancel): the reference is the same op in float64.
            c.put("y64", fn(*[v.double() if v.is_floating_point() else v for v in views], **args), "F64")
        if grad:
            c.meta("grad", 1)
            dy = torch.randn(y.shape)
            y.backward(dy)
            c.put("dy", dy)
            for (n, _, _), base in zip(inputs, bases):
                if base.requires_grad:
                    c.put(f"d{n}", base.grad if base.grad is not None else torch.zeros_like(base))
        self.count += 1


def kind_of(t):
    return {torch.float32: "F32", torch.int64: "I64", torch.bool: "BOOL"}[t.dtype]


def randn(*shape, scale=1.0, offset=0.0):
    return torch.randn(shape) * scale + offset


def positive(*shape):
    return torch.rand(shape) * 2 + 0.2


# Shapes of binary cases: (a's base shape, a's view, b's base shape, b's view); the views make
# the operands non-contiguous.
BINARY_SHAPES = [
    ((3, 4), [], (3, 4), []),
    ((2, 3, 4), [], (4,), []),
    ((2, 1, 4), [], (3, 1), []),
    ((1,), [], (5, 2), []),
    ((), [], (3, 2), []),
    ((3, 2), [], (), []),
    ((0, 3), [], (3,), []),
    ((2, 0, 1), [], (1, 4), []),
    ((4, 3), [["t"]], (4,), []),
    ((3, 6), [["narrow", 1, 1, 4]], (3, 1), []),
    ((5, 3), [["t"]], (4, 5), [["narrow", 0, 1, 3]]),
]


# ---------------------------------------------------------------------------
# elementwise.safetensors


def make_elementwise():
    cs = Cases()
    binary = {
        "add": (lambda a, b: torch.add(a, b), randn, randn),
        "sub": (lambda a, b: torch.sub(a, b), randn, randn),
        "mul": (lambda a, b: torch.mul(a, b), randn, randn),
        "div": (lambda a, b: torch.div(a, b), randn, positive),
        "pow": (lambda a, b: torch.pow(a, b), positive, randn),
        "maximum": (torch.maximum, randn, randn),
        "minimum": (torch.minimum, randn, randn),
    }
    seed = 100
    for op, (fn, make_a, make_b) in binary.items():
        for k, (sa, va, sb, vb) in enumerate(BINARY_SHAPES):
            torch.manual_seed(seed)
            seed += 1
            cs.add(f"{op}{k}", op, fn, [("a", make_a(*sa), va), ("b", make_b(*sb), vb)])
    # alpha forms
    for k, (sa, va, sb, vb) in enumerate(BINARY_SHAPES[:4]):
        torch.manual_seed(200 + k)
        cs.add(f"add_alpha{k}", "add", lambda a, b, alpha: torch.add(a, b, alpha=alpha),
               [("a", randn(*sa), va), ("b", randn(*sb), vb)], {"alpha": -2.5})
        cs.add(f"sub_alpha{k}", "sub", lambda a, b, alpha: torch.sub(a, b, alpha=alpha),
               [("a", randn(*sa), va), ("b", randn(*sb), vb)], {"alpha": 0.75})
    # ties and NaN in maximum/minimum: the gradient splits evenly on ties
    torch.manual_seed(210)
    a = torch.tensor([1.0, 2.0, 3.0, -1.0, 0.5])
    b = torch.tensor([1.0, 1.0, 4.0, -1.0, 0.5])
    cs.add("maximum_ties", "maximum", torch.maximum, [("a", a, []), ("b", b, [])])
    cs.add("minimum_ties", "minimum", torch.minimum, [("a", a, []), ("b", b, [])])
    cs.add("maximum.special", "maximum", torch.maximum,
           [("a", torch.tensor([NAN, 1.0, NAN, -INF, INF]), []), ("b", torch.tensor([1.0, NAN, NAN, 0.0, 0.0]), [])],
           grad=False)

    # scalar forms; the C++ side calls add(x, s), sub(x, s), rsub(x, s) = s - x, ...
    scalar = {
        "add_scalar": (lambda x, s, alpha: torch.add(x, s, alpha=alpha), randn, {"s": 1.5, "alpha": 2.0}),
        "sub_scalar": (lambda x, s, alpha: torch.sub(x, s, alpha=alpha), randn, {"s": 1.5, "alpha": 1.0}),
        "rsub_scalar": (lambda x, s: s - x, randn, {"s": 2.0}),
        "mul_scalar": (lambda x, s: x * s, randn, {"s": -3.0}),
        "div_scalar": (lambda x, s: x / s, randn, {"s": 3.0}),
        "rdiv_scalar": (lambda x, s: torch.full_like(x, s).div_(x), positive, {"s": 2.0}),
        "pow_base": (lambda x, s: torch.pow(s, x), randn, {"s": 2.5}),
    }
    for k, (op, (fn, make, args)) in enumerate(scalar.items()):
        torch.manual_seed(300 + k)
        cs.add(op, op, fn, [("x", make(3, 4), [])], args)
        cs.add(f"{op}_t", op, fn, [("x", make(4, 3), [["t"]])], args)
    torch.manual_seed(320)
    cs.add("pow_base_zero", "pow_base", lambda x, s: torch.pow(s, x), [("x", torch.tensor([-1.0, 0.0, 2.0]), [])],
           {"s": 0.0})

    # in-place updates on a non-leaf h = a * 1 (a the leaf): h.op_(b), gradients to a and b
    inplace = {
        "add_": (lambda h, b: h.add_(b), randn),
        "add_alpha_": (lambda h, b: h.add_(b, alpha=-0.5), randn),
        "sub_": (lambda h, b: h.sub_(b), randn),
        "mul_": (lambda h, b: h.mul_(b), randn),
        "div_": (lambda h, b: h.div_(b), positive),
    }
    shapes = [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((2, 3), (2, 1)), ((3,), ())]
    for op, (fn, make_b) in inplace.items():
        for k, (sa, sb) in enumerate(shapes):
            torch.manual_seed(400 + 10 * list(inplace).index(op) + k)
            cs.add(f"{op}{k}", op, lambda a, b: fn(a * 1, b), [("a", randn(*sa), []), ("b", make_b(*sb), [])])
    scalar_inplace = {
        "add_s_": lambda h: h.add_(2.0, alpha=1.5),
        "sub_s_": lambda h: h.sub_(2.0),
        "mul_s_": lambda h: h.mul_(-1.5),
        "div_s_": lambda h: h.div_(4.0),
    }
    for k, (op, fn) in enumerate(scalar_inplace.items()):
        torch.manual_seed(450 + k)
        cs.add(op, op, lambda a: fn(a * 1), [("a", randn(3, 4), [])])
    return cs.tensors, {**cs.metadata, "cases": str(cs.count)}


# ---------------------------------------------------------------------------
# activation.safetensors


UNARY_SHAPES = [((5, 7), []), ((2, 0, 3), []), ((), []), ((6, 4), [["t"]]), ((3, 8), [["narrow", 1, 2, 5]])]

# name -> (torch function, input maker, args)
UNARY = {
    "neg": (torch.neg, randn, {}),
    "exp": (torch.exp, lambda *s: randn(*s, scale=3.0), {}),
    "expm1": (torch.expm1, lambda *s: randn(*s, scale=2.0), {}),
    "log": (torch.log, positive, {}),
    "log1p": (torch.log1p, lambda *s: torch.rand(s) * 3 - 0.9, {}),
    "sqrt": (torch.sqrt, positive, {}),
    "rsqrt": (torch.rsqrt, positive, {}),
    "reciprocal": (torch.reciprocal, positive, {}),
    "abs": (torch.abs, randn, {}),
    "square": (torch.square, randn, {}),
    "sign": (torch.sign, randn, {}),
    "erf": (torch.erf, lambda *s: randn(*s, scale=2.0), {}),
    "clamp": (lambda x, min, max: torch.clamp(x, min, max), randn, {"min": -0.5, "max": 0.7}),
    "clamp_min": (lambda x, min: torch.clamp(x, min=min), randn, {"min": -0.2}),
    "clamp_max": (lambda x, max: torch.clamp(x, max=max), randn, {"max": 0.3}),
    "pow2": (lambda x: torch.pow(x, 2.0), randn, {}),
    "pow3": (lambda x: torch.pow(x, 3.0), randn, {}),
    "pow0.5": (lambda x: torch.pow(x, 0.5), positive, {}),
    "pow-0.5": (lambda x: torch.pow(x, -0.5), positive, {}),
    "pow-1": (lambda x: torch.pow(x, -1.0), positive, {}),
    "pow-2": (lambda x: torch.pow(x, -2.0), positive, {}),
    "pow1.7": (lambda x: torch.pow(x, 1.7), positive, {}),
    "pow0": (lambda x: torch.pow(x, 0.0), randn, {}),
    "relu": (torch.relu, randn, {}),
    "leaky_relu": (lambda x, negative_slope: F.leaky_relu(x, negative_slope), randn, {"negative_slope": 0.2}),
    "elu": (lambda x, alpha: F.elu(x, alpha), lambda *s: randn(*s, scale=2.0), {"alpha": 1.5}),
    "gelu": (lambda x: F.gelu(x), lambda *s: randn(*s, scale=3.0), {}),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), lambda *s: randn(*s, scale=3.0), {}),
    "silu": (F.silu, lambda *s: randn(*s, scale=3.0), {}),
    "tanh": (torch.tanh, lambda *s: randn(*s, scale=2.0), {}),
    "sigmoid": (torch.sigmoid, lambda *s: randn(*s, scale=3.0), {}),
    "softplus": (lambda x: F.softplus(x), lambda *s: randn(*s, scale=5.0), {}),
    "softplus_beta": (lambda x, beta, threshold: F.softplus(x, beta, threshold), lambda *s: randn(*s, scale=5.0),
                      {"beta": 2.0, "threshold": 4.0}),
}


def make_activation():
    cs = Cases()
    seed = 500
    for op, (fn, make, args) in UNARY.items():
        for k, (shape, view) in enumerate(UNARY_SHAPES):
            torch.manual_seed(seed)
            seed += 1
            cs.add(f"{op}{k}", op, fn, [("x", make(*shape), view)], args)
        # Special values, forward only (the C++ side requires NaN where torch gives NaN and equal
        # infinities; finite values to the usual tolerance).
        if op not in ("pow1.7",):
            cs.add(f"{op}.special", op, fn, [("x", torch.tensor(SPECIAL), [])], args, grad=False)

    # softmax and log_softmax over every dim, with views and empty dims
    softmax_cases = [((4, 10), [], -1), ((4, 10), [], 0), ((2, 3, 5), [], 1), ((2, 3, 5), [], 0),
                     ((2, 3, 5), [], -1), ((6, 4), [["t"]], 1), ((6, 4), [["t"]], 0), ((), [], 0),
                     ((3, 0), [], 1), ((0, 3), [], 1), ((2, 300, 3), [], 1), ((3, 1), [], 1)]
    for k, (shape, view, dim) in enumerate(softmax_cases):
        for op, fn in (("softmax", F.softmax), ("log_softmax", F.log_softmax)):
            torch.manual_seed(700 + k)
            cs.add(f"{op}{k}", op, lambda x, dim: fn(x, dim), [("x", randn(*shape, scale=3.0), view)], {"dim": dim})
    # Logits of order 1e4: exp overflows unless the maximum is subtracted first.
    for op, fn in (("softmax", F.softmax), ("log_softmax", F.log_softmax)):
        torch.manual_seed(750)
        cs.add(f"{op}_large", op, lambda x, dim: fn(x, dim), [("x", randn(4, 10, scale=1e4), [])], {"dim": 1})
        torch.manual_seed(751)
        cs.add(f"{op}_large_cols", op, lambda x, dim: fn(x, dim), [("x", randn(10, 4, scale=1e4), [])], {"dim": 0})
    return cs.tensors, {**cs.metadata, "cases": str(cs.count)}


# ---------------------------------------------------------------------------
# compare.safetensors


def make_compare():
    cs = Cases()
    ops = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge}
    for k, (op, fn) in enumerate(ops.items()):
        torch.manual_seed(800 + k)
        # Small integers as floats, so equality happens often.
        ints = lambda *s: torch.randint(-2, 3, s).float()
        cs.add(f"{op}0", op, fn, [("a", ints(3, 4), []), ("b", ints(3, 4), [])], grad=False)
        cs.add(f"{op}1", op, fn, [("a", ints(2, 1, 4), []), ("b", ints(3, 1), [])], grad=False)
        cs.add(f"{op}2", op, fn, [("a", ints(4, 3), [["t"]]), ("b", ints(4), [])], grad=False)
        cs.add(f"{op}_int", op, fn, [("a", torch.randint(-2, 3, (3, 4)), []), ("b", torch.randint(-2, 3, (4,)), [])],
               grad=False)
        cs.add(f"{op}_mixed", op, fn, [("a", torch.randint(-2, 3, (3, 4)), []), ("b", ints(3, 4), [])], grad=False)
        cs.add(f"{op}_scalar", f"{op}_scalar", lambda a, s: fn(a, s), [("a", ints(3, 4), [])], {"s": 1.0},
               grad=False)
        cs.add(f"{op}_scalar_int", f"{op}_scalar", lambda a, s: fn(a, s), [("a", torch.randint(-2, 3, (5,)), [])],
               {"s": 0.5}, grad=False)
        cs.add(f"{op}.special", op, fn, [("a", torch.tensor([NAN, NAN, 1.0, INF, -INF, -0.0]), []),
                                         ("b", torch.tensor([NAN, 1.0, NAN, INF, INF, 0.0]), [])], grad=False)
    x = torch.tensor([0.0, -1.0, INF, -INF, NAN, 1e-40, 3e38])
    cs.add("isnan", "isnan", torch.isnan, [("x", x, [])], grad=False)
    cs.add("isinf", "isinf", torch.isinf, [("x", x, [])], grad=False)
    cs.add("isfinite", "isfinite", torch.isfinite, [("x", x, [])], grad=False)
    cs.add("isnan_int", "isnan", torch.isnan, [("x", torch.tensor([1, 2, 3]), [])], grad=False)
    cs.add("isfinite_int", "isfinite", torch.isfinite, [("x", torch.tensor([1, 2, 3]), [])], grad=False)
    torch.manual_seed(820)
    masks = lambda *s: torch.rand(s) < 0.5
    for op, fn in (("logical_and", torch.logical_and), ("logical_or", torch.logical_or),
                   ("logical_xor", torch.logical_xor)):
        cs.add(op, op, fn, [("a", masks(3, 4), []), ("b", masks(4), [])], grad=False)
        cs.add(f"{op}_float", op, fn, [("a", torch.randint(-1, 2, (3, 4)).float(), []),
                                       ("b", torch.randint(-1, 2, (3, 1)), [])], grad=False)
    cs.add("logical_not", "logical_not", torch.logical_not, [("x", torch.tensor([0.0, -1.0, NAN, 2.0]), [])],
           grad=False)

    # where and masked_fill: differentiable in the values, with broadcasting
    where_shapes = [((3, 4), (3, 4), (3, 4), [], []), ((3, 1), (1, 4), (3, 4), [], []),
                    ((2, 3, 4), (4,), (), [], []), ((4, 3), (3, 4), (3, 1), [["t"]], []),
                    ((0, 2), (2,), (1, 2), [], []), ((3, 4), (4, 3), (3, 4), [], [["t"]])]
    for k, (sc, sa, sb, vc, va) in enumerate(where_shapes):
        torch.manual_seed(830 + k)
        cs.add(f"where{k}", "where", torch.where,
               [("cond", masks(*sc), vc), ("a", randn(*sa), va), ("b", randn(*sb), [])])
    torch.manual_seed(840)
    cs.add("where_scalar", "where_scalar", lambda c, a, s: torch.where(c, a, s),
           [("cond", masks(3, 4), []), ("a", randn(3, 4), [])], {"s": -1.5})
    cs.add("where_int", "where", torch.where, [("cond", masks(3, 4), []), ("a", torch.randint(0, 9, (3, 4)), []),
                                                ("b", torch.randint(0, 9, (4,)), [])], grad=False)
    for k, (sx, sm, vx) in enumerate([((3, 4), (3, 4), []), ((2, 3, 4), (3, 1), []), ((4, 3), (3, 4), [["t"]]),
                                      ((3, 0), (1, 0), [])]):
        torch.manual_seed(850 + k)
        cs.add(f"masked_fill{k}", "masked_fill", lambda x, mask, value: x.masked_fill(mask, value),
               [("x", randn(*sx), vx), ("mask", masks(*sm), [])], {"value": -1e9})
        torch.manual_seed(860 + k)
        cs.add(f"masked_fill_{k}", "masked_fill_", lambda x, mask, value: (x * 1).masked_fill_(mask, value),
               [("x", randn(*sx), vx), ("mask", masks(*sm), [])], {"value": 2.5})
    cs.add("masked_fill_inf", "masked_fill", lambda x, mask, value: x.masked_fill(mask, value),
           [("x", randn(2, 3), []), ("mask", torch.tensor([[True, False, True], [False, False, True]]), [])],
           {"value": -INF})
    return cs.tensors, {**cs.metadata, "cases": str(cs.count)}


FILES = [
    ("elementwise.safetensors", make_elementwise),
    ("activation.safetensors", make_activation),
    ("compare.safetensors", make_compare),
]
