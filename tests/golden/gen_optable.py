"""The op table's samples and PyTorch's answers: optable_<group>.safetensors.

The op table (tests/op_table.hpp) has one row per public op of normnet. A row lives in two
places that share this file's output: here, its PyTorch call and its sample generator (the
shapes, views, values and arguments it is run on, error cases included: a sample on which torch
raises); in tests/op_table_rows.cpp, its normnet call, its golden and gradcheck settings and
its known bugs. This script runs every sample through torch and writes the samples (the inputs
as stored tensors, the view steps and the arguments) with torch's outputs, input gradients or
error message; the C++ tests (tests/test_op_table.cpp) read the samples from the file, run
normnet on them and require torch's result, or a normnet::Error where torch raised.

Samples are generated, not listed: every subset of dims (non-adjacent ones too) both with and
without keepdim, shapes with size-0 and size-1 dims, broadcasting pairs, non-contiguous views
(transposed, permuted, narrowed, strided, expanded), NaN/inf/-0.0, huge and tiny values, large
offsets and ties. Each row draws from its own generator, seeded from the run's seed and its
name, so adding a row changes no other row's samples. The committed files use seed 0;

    /usr/bin/python3 tests/golden/gen_optable.py --seed 7 --out /tmp/optable7

writes the same table with other random shapes, values and dims (tests/op_table_seeds.py runs
many seeds through the C++ tests: the longer optional run).

Float64 as the arbiter: every float sample is also run in float64 on the same float32 values.
Where torch's float32 answer differs from that beyond the tests' tolerance (1e-5, absolute +
relative), the float64 answer (rounded to float32) is stored too, and normnet passes where it
is as close to it as torch's float32 answer is, or within the tolerance.

File layout (safetensors, written by golden_io.py): three flat tensors, `f32`, `i64` and `bool`,
hold every stored value back to back; metadata `cases` is a JSON list with one object per
sample:

    op      the row's name (normnet's spelling, or an overload's: add_scalar, norm_fro, ...)
    args    the non-tensor arguments (JSON; infinities as the strings "inf" and "-inf")
    kind    normal (smooth values: gradcheck runs), distinct (no two values within 1/16 of each
            other or of 0: for ops with kinks), kinked (smooth inputs, but a kink of the op may lie
            near an intermediate value: no gradcheck), special (NaN, inf, huge or tiny values in
            the inputs or the results), offset (large offsets) or ties
    in      per input [dtype, shape, offset, view steps, takes gradient (0/1)]; view steps:
            ["t"], ["transpose", d0, d1], ["permute", dims], ["narrow", dim, start, length],
            ["slice", dim, start, end, step], ["expand", sizes]
    out     per output [dtype, shape, offset, float64 reference offset or -1, dy offset or -1]
    d       per input [gradient offset, float64 reference offset or -1], or null (no gradient)
    err     torch's error message, when torch raised (then no out)
    bwd_err torch's error message when its backward raised (then no d)

and `ops`, a JSON object from each row's name to its PyTorch spelling.
"""

import argparse
import json
import math
import os
import sys
import zlib

import numpy as np
import torch
import torch.nn.functional as F

from golden_io import GOLDEN_DIR, write_safetensors

TOL = 1e-5
INF, NAN = math.inf, math.nan
# Values that break naive kernels: signed zeros, denormals, overflow and underflow edges, NaN.
SPECIAL = [0.0, -0.0, 1e-40, -1e-40, 1e-30, 0.5, -0.5, 1.0, -1.0, 3.0, -3.0, 15.0, -15.0, 30.0, -30.0, 88.0,
           -88.0, 100.0, -100.0, 1e10, -1e10, 3e38, -3e38, INF, -INF, NAN]
SPECIAL_FEW = [0.0, -0.0, 1e-40, 0.5, -2.5, 1.0, -1.0, 3e38, -3e38, INF, -INF, NAN]
# For sums: without the huge finite values, whose sums with small ones depend on the order of
# the additions (float32's rounding, not a bug), and without underflowing products.
SPECIAL_SUMMABLE = [0.0, -0.0, 1e-40, -1e-40, 0.5, -0.5, 1.0, -1.0, 3.0, -3.0, 15.0, -30.0, 88.0, INF, -INF, NAN]

# ---------------------------------------------------------------------------------------------
# Inputs and samples


class In:
    """One input: the stored base tensor, the view steps the op sees, whether it takes gradient."""

    def __init__(self, base, view=(), grad=None):
        self.base = base
        self.view = [list(s) for s in view]
        self.grad = base.is_floating_point() if grad is None else grad


class Sample:
    def __init__(self, inputs, args=None, kind="normal"):
        self.inputs = [i if isinstance(i, In) else In(i) for i in inputs]
        self.args = args or {}
        self.kind = kind


def apply_view(t, steps):
    for s in steps:
        if s[0] == "t":
            t = t.t()
        elif s[0] == "transpose":
            t = t.transpose(s[1], s[2])
        elif s[0] == "permute":
            t = t.permute(*s[1])
        elif s[0] == "narrow":
            t = t.narrow(s[1], s[2], s[3])
        elif s[0] == "slice":
            t = t[(slice(None),) * (s[1] % t.dim()) + (slice(s[2], s[3], s[4]),)]
        elif s[0] == "expand":
            t = t.expand(*s[1])
        else:
            raise ValueError(s)
    return t


class Gen:
    """A row's random source (its own torch.Generator) and the value makers samples use."""

    def __init__(self, seed):
        self.g = torch.Generator().manual_seed(seed)

    def randn(self, shape, scale=1.0, shift=0.0):
        return torch.randn(tuple(shape), generator=self.g) * scale + shift

    def uniform(self, shape, lo, hi):
        return torch.rand(tuple(shape), generator=self.g) * (hi - lo) + lo

    def ints(self, shape, lo, hi, dtype=torch.int64):
        return torch.randint(lo, hi, tuple(shape), generator=self.g).to(dtype)

    def ties(self, shape):
        return self.ints(shape, -2, 3, torch.float32)

    def offset(self, shape):
        return (1e4 + torch.randn(tuple(shape), generator=self.g, dtype=torch.float64)).float()

    def special(self, shape, values=SPECIAL):
        idx = torch.randint(0, len(values), tuple(shape), generator=self.g)
        return torch.tensor(values, dtype=torch.float32)[idx]

    def distinct(self, *shapes):
        """Tensors of the given shapes whose values are all different, at least 1/16 apart and
        at least 0.03 from 0: finite differences never cross a kink or a tie."""
        n = sum(math.prod(s) for s in shapes)
        half = max(40, n)
        grid = (torch.arange(-half, half, dtype=torch.float32) / 16 + 0.03)
        pick = grid[torch.randperm(2 * half, generator=self.g)[:n]]
        out, at = [], 0
        for s in shapes:
            k = math.prod(s)
            out.append(pick[at:at + k].reshape(tuple(s)).clone())
            at += k
        return out

    def below(self, n):
        return int(torch.randint(0, n, (1,), generator=self.g))

    def coin(self):
        return self.below(2) == 1

    def perm(self, n):
        return torch.randperm(n, generator=self.g).tolist()


def viewed(g, shape, how, make):
    """An input whose view has `shape`, made non-contiguous by `how`; None where it cannot be."""
    shape = list(shape)
    n = len(shape)
    if how == "contiguous":
        return In(make(shape))
    if how == "T" and n >= 2:
        base = shape[:-2] + [shape[-1], shape[-2]]
        return In(make(base), [["transpose", -2, -1]])
    if how == "permute" and n >= 3:
        p = [n - 1] + list(range(n - 1))  # base dims rotated; the view undoes it
        base = [shape[i] for i in p]
        inv = [p.index(i) for i in range(n)]
        return In(make(base), [["permute", inv]])
    if how == "narrow" and n >= 1:
        base = shape[:-1] + [shape[-1] + 3]
        return In(make(base), [["narrow", -1, 1, shape[-1]]])
    if how == "step" and n >= 1:
        base = [2 * shape[0]] + shape[1:]
        return In(make(base), [["slice", 0, 0, 2 * shape[0], 2]])
    if how == "expand" and any(s > 1 for s in shape):
        base = [1 if s > 1 and i % 2 == (0 if shape[0] > 1 else 1) else s for i, s in enumerate(shape)]
        if base == shape:
            base = [1 if s > 1 else s for s in shape]
        return In(make(base), [["expand", shape]])
    return None


VIEWS = ["T", "permute", "narrow", "step", "expand"]

# ---------------------------------------------------------------------------------------------
# Sample generators shared by the rows


UNARY_SHAPES = [[], [0], [1], [6], [2, 3], [3, 1], [1, 4], [2, 0, 3], [2, 3, 4], [2, 1, 3, 1]]
VIEW_SHAPES = [[2, 3], [3, 4], [2, 3, 4], [2, 1, 4]]


def unary_samples(values="randn", args_list=({},), special=True, offset=True, scale=1.0):
    """One tensor input over UNARY_SHAPES and views, with special values and a large offset."""

    def gen(g):
        make = value_maker(g, values, scale)
        out = []
        for args in args_list:
            kind = "distinct" if values == "distinct" else "normal"
            for shape in UNARY_SHAPES:
                out.append(Sample([In(make(shape))], args, kind))
            for k, how in enumerate(VIEWS):
                i = viewed(g, VIEW_SHAPES[k % len(VIEW_SHAPES)], how, make)
                if i is not None:
                    out.append(Sample([i], args, kind))
            if special:
                out.append(Sample([torch.tensor(SPECIAL)], args, "special"))
                out.append(Sample([viewed(g, [4, 5], "T", lambda s: g.special(s))], args, "special"))
            if offset:
                out.append(Sample([g.offset([3, 4])], args, "offset"))
        return out

    return gen


def value_maker(g, values, scale=1.0, phase=0.0):
    if values == "randn":
        return lambda s: g.randn(s, scale)
    if values == "positive":
        return lambda s: g.uniform(s, 0.2, 2.2) * scale
    if values == "distinct":
        return lambda s: (g.distinct(s)[0] + phase) * scale
    if values == "ties":
        return g.ties
    if callable(values):
        return lambda s: values(g, s)
    raise ValueError(values)


BROADCAST_PAIRS = [([2, 3], [2, 3]), ([2, 3], [3]), ([3], [2, 3]), ([2, 1], [1, 3]), ([], [2, 3]), ([2, 3], []),
                   ([], []), ([2, 1, 3], [4, 1]), ([1], [5]), ([3, 1, 1], [1, 2, 2]), ([0, 3], [3]), ([2, 0], [1]),
                   ([1, 0], [0, 3, 2, 0]), ([2, 1, 3, 1], [1, 4, 1, 2])]
BROADCAST_ERRORS = [([2, 3], [4]), ([2, 3], [3, 2]), ([2], [3, 3]), ([0], [2])]


def binary_samples(a_values="randn", b_values="randn", args_list=({},), special=True, offset=True, errors=True):
    """Two broadcasting tensor inputs: pairs of shapes (size 0 and 1, 0-d), views on either side,
    the special values against each other ([12, 1] against [1, 12]), a large offset, errors."""

    def gen(g):
        distinct = "distinct" in (a_values, b_values)
        kind = "distinct" if distinct else "normal"
        make_a = value_maker(g, a_values)
        # b's distinct values sit halfway between a's: no value of b within 1/32 of one of a.
        make_b = value_maker(g, b_values, phase=1 / 32 if distinct else 0.0)
        out = []
        for args in args_list:
            for sa, sb in BROADCAST_PAIRS:
                out.append(Sample([make_a(sa), make_b(sb)], args, kind))
            # Views on one side or both: transposed against a row, permuted against a column, ...
            for k, (how_a, sa, how_b, sb) in enumerate([("T", [3, 4], "contiguous", [4]),
                                                        ("permute", [2, 3, 4], "narrow", [3, 1]),
                                                        ("narrow", [3, 4], "T", [3, 4]),
                                                        ("step", [2, 3], "expand", [2, 3]),
                                                        ("expand", [3, 4], "step", [1, 4])]):
                out.append(Sample([viewed(g, sa, how_a, make_a), viewed(g, sb, how_b, make_b)], args, kind))
            if special:
                a = torch.tensor(SPECIAL_FEW).reshape(-1, 1)
                out.append(Sample([a, a.reshape(1, -1)], args, "special"))
            if offset:
                out.append(Sample([g.offset([3, 4]), make_b([4])], args, "offset"))
            if errors:
                for sa, sb in BROADCAST_ERRORS:
                    out.append(Sample([g.randn(sa), g.randn(sb)], args))
        return out

    return gen


def all_subsets(n):
    return [[d for d in range(n) if mask >> d & 1] for mask in range(1 << n)]


REDUCE_SHAPES = [[2, 3, 4, 1], [2, 1, 5, 4], [3, 0, 2], [4, 0], [1], [5], [], [2, 3]]


def reduce_samples(values="randn", args_list=({},), keepdim=True, special=SPECIAL, offset=True, ties=False,
                   dims_key="dims", empty_dims=True, scale=1.0):
    """One tensor reduced over every subset of its dims (empty: all dims), keepdim both ways,
    some dims written negative; views, special values, a large offset, ties; bad dims."""

    def gen(g):
        kind = "distinct" if values == "distinct" else "normal"
        make = value_maker(g, values, scale)
        out = []

        def dims_of(subset, n):
            return [d - n if g.coin() else d for d in subset]

        def add(x, subset, n, kind, keep_values=(False, True) if keepdim else (None,)):
            for args in args_list:
                for k in keep_values:
                    a = dict(args)
                    a[dims_key] = dims_of(subset, n)
                    if k is not None:
                        a["keepdim"] = k
                    out.append(Sample([x], a, kind))

        for shape in REDUCE_SHAPES:
            n = len(shape)
            for subset in all_subsets(n) + ([[0]] if n == 0 else []):
                if not subset and not empty_dims:
                    continue
                add(In(make(shape)), subset, n, kind)
        # Views: a transposed, a permuted, a strided and an expanded input over a few subsets.
        for how, shape in (("T", [3, 4]), ("permute", [2, 3, 4]), ("step", [2, 3, 2]), ("expand", [3, 1, 4]),
                           ("narrow", [2, 5])):
            n = len(shape)
            subsets = all_subsets(n)[1:]
            for subset in [subsets[g.below(len(subsets))], subsets[-1]]:
                add(viewed(g, shape, how, make), subset, n, kind, (g.coin(),) if keepdim else (None,))
        if special:
            for subset in ([1], [0, 1]):
                add(In(g.special([4, 6], special)), subset, 2, "special", (False,) if keepdim else (None,))
                x = g.randn([3, 5])
                x[1, 2] = NAN
                x[2, 0] = INF
                add(In(x), subset, 2, "special", (False,) if keepdim else (None,))
        if offset:
            add(In(g.offset([3, 40])), [1], 2, "offset", (False,) if keepdim else (None,))
            add(In(g.offset([2, 3, 5])), [0, 2], 3, "offset", (True,) if keepdim else (None,))
        if ties:
            for subset in ([1], [0, 2], [0, 1, 2]):
                add(In(g.ties([3, 4, 2])), subset, 3, "ties", (False,) if keepdim else (None,))
        # Bad dims: out of range, repeated.
        for args in args_list:
            for bad in ([2], [-3], [0, 0], [1, -1]):
                a = {**args, dims_key: bad, **({"keepdim": False} if keepdim else {})}
                out.append(Sample([g.randn([2, 3])], a))
        return out

    return gen


DIM_SHAPES = [[2, 3, 4], [3, 1, 5], [4, 0], [0, 3], [1], [6], [], [2, 1, 3, 2]]


def dim_samples(values="randn", args_list=({},), special=SPECIAL, offset=True, ties=False, dim_key="dim",
                extra=lambda x, d: [{}], bad_dims=True, scale=1.0, shapes=None):
    """One tensor and one dim: every dim of every shape, negative too; views, specials, errors.
    `extra(x_shape, dim)` lists argument sets to add per (shape, dim)."""

    def gen(g):
        kind = "distinct" if values == "distinct" else "normal"
        make = value_maker(g, values, scale)
        out = []

        def add(i, d, kind, shape):
            for args in args_list:
                for e in extra(shape, d):
                    out.append(Sample([i], {**args, dim_key: d, **e}, kind))

        for shape in shapes or DIM_SHAPES:
            n = len(shape)
            for d in range(max(n, 1)):
                add(In(make(shape)), d - max(n, 1) if g.coin() else d, kind, shape)
        for how, shape, d in (("T", [3, 4], 1), ("T", [3, 4], 0), ("permute", [2, 3, 4], 1), ("step", [2, 5], 0),
                              ("expand", [3, 1, 4], 1), ("narrow", [3, 5], 1)):
            add(viewed(g, shape, how, make), d, kind, shape)
        if special:
            add(In(g.special([4, 6], special)), 1, "special", [4, 6])
            add(In(g.special([4, 6], special)), 0, "special", [4, 6])
        if offset:
            add(In(g.offset([3, 40])), 1, "offset", [3, 40])
        if ties:
            add(In(g.ties([3, 7])), 1, "ties", [3, 7])
            add(In(g.ties([5, 2])), 0, "ties", [5, 2])
        if bad_dims:
            for args in args_list:
                out.append(Sample([g.randn([2, 3])], {**args, dim_key: 2, **extra([2, 3], 1)[0]}))
                out.append(Sample([g.randn([2, 3])], {**args, dim_key: -3, **extra([2, 3], 1)[0]}))
        return out

    return gen


# ---------------------------------------------------------------------------------------------
# The rows: (group, name, PyTorch spelling, torch call, sample generator)

ROWS = []


def row(group, name, torch_name, fn, samples):
    ROWS.append((group, name, torch_name, fn, samples))


def dims_or_all(x, dims):
    """normnet's empty dims mean every dim; torch's () does not always (logsumexp)."""
    return tuple(dims) if dims else tuple(range(max(x.dim(), 1)))


# ---- pointwise: elementwise.cpp, unary.cpp, activation.cpp, compare.cpp -----------------------

BINARY = [("add", "torch.add", lambda a, b: torch.add(a, b), "randn", "randn"),
          ("sub", "torch.sub", lambda a, b: torch.sub(a, b), "randn", "randn"),
          ("mul", "torch.mul", lambda a, b: torch.mul(a, b), "randn", "randn"),
          ("div", "torch.div", lambda a, b: torch.div(a, b), "randn", "positive"),
          ("pow", "torch.pow", lambda a, b: torch.pow(a, b), "positive", "randn"),
          ("maximum", "torch.maximum", torch.maximum, "distinct", "distinct"),
          ("minimum", "torch.minimum", torch.minimum, "distinct", "distinct"),
          ("remainder", "torch.remainder", torch.remainder, "randn", "positive"),
          ("fmod", "torch.fmod", torch.fmod, "randn", "positive")]
for _name, _torch, _fn, _va, _vb in BINARY:
    row("pointwise", _name, _torch, _fn, binary_samples(_va, _vb))
row("pointwise", "add_alpha", "torch.add(alpha=)", lambda a, b, alpha: torch.add(a, b, alpha=alpha),
    binary_samples(args_list=({"alpha": -2.5}, {"alpha": 0.0}), special=False, errors=False))
row("pointwise", "sub_alpha", "torch.sub(alpha=)", lambda a, b, alpha: torch.sub(a, b, alpha=alpha),
    binary_samples(args_list=({"alpha": 0.75},), special=False, errors=False))

# Scalar forms: the number is a float32 on both sides.
SCALARS = ({"s": 1.5}, {"s": -0.0}, {"s": 1e30}, {"s": INF}, {"s": NAN})
row("pointwise", "add_scalar", "torch.add(Tensor, Scalar, alpha=)",
    lambda x, s, alpha: torch.add(x, s, alpha=alpha),
    unary_samples(args_list=({"s": 1.5, "alpha": 2.0}, {"s": -3.0, "alpha": 1.0}, {"s": INF, "alpha": 1.0})))
row("pointwise", "sub_scalar", "torch.sub(Tensor, Scalar, alpha=)",
    lambda x, s, alpha: torch.sub(x, s, alpha=alpha),
    unary_samples(args_list=({"s": 1.5, "alpha": 1.0}, {"s": 2.0, "alpha": -0.5})))
row("pointwise", "rsub_scalar", "torch.rsub", lambda x, s: torch.rsub(x, s), unary_samples(args_list=SCALARS[:3]))
row("pointwise", "mul_scalar", "torch.mul(Tensor, Scalar)", lambda x, s: torch.mul(x, s),
    unary_samples(args_list=({"s": -3.0}, {"s": 0.0}, {"s": INF})))
row("pointwise", "div_scalar", "torch.div(Tensor, Scalar)", lambda x, s: torch.div(x, s),
    unary_samples(args_list=({"s": 3.0}, {"s": 0.0}, {"s": -0.0})))
row("pointwise", "rdiv_scalar", "torch.div(Scalar, Tensor)",
    lambda x, s: torch.div(torch.tensor(s, dtype=x.dtype), x), unary_samples("positive", ({"s": 2.0}, {"s": -0.5})))
row("pointwise", "pow_base", "torch.pow(Scalar, Tensor)", lambda x, s: torch.pow(s, x),
    unary_samples(args_list=({"s": 2.5}, {"s": 0.5})))
row("pointwise", "pow_base_zero", "torch.pow(0, Tensor)", lambda x, s: torch.pow(s, x),
    unary_samples("positive", ({"s": 0.0},), offset=False))
row("pointwise", "pow_scalar", "torch.pow(Tensor, Scalar)", lambda x, e: torch.pow(x, e),
    unary_samples("positive", [{"e": e} for e in (2.0, 3.0, 0.5, -0.5, -1.0, -2.0, 1.7, 1.0, -3.0)]))
row("pointwise", "pow_scalar_signed", "torch.pow(Tensor, Scalar)", lambda x, e: torch.pow(x, e),
    unary_samples("distinct", [{"e": e} for e in (2.0, 3.0, 0.0, -1.0, -2.0)], offset=False))

UNARY = [("neg", "torch.neg", torch.neg, "randn", 1.0),
         ("exp", "torch.exp", torch.exp, "randn", 3.0),
         ("expm1", "torch.expm1", torch.expm1, "randn", 2.0),
         ("log", "torch.log", torch.log, "positive", 1.0),
         ("log1p", "torch.log1p", torch.log1p, lambda g, s: g.uniform(s, -0.9, 3.0), 1.0),
         ("sqrt", "torch.sqrt", torch.sqrt, "positive", 1.0),
         ("rsqrt", "torch.rsqrt", torch.rsqrt, "positive", 1.0),
         ("reciprocal", "torch.reciprocal", torch.reciprocal, "positive", 1.0),
         ("abs", "torch.abs", torch.abs, "distinct", 1.0),
         ("square", "torch.square", torch.square, "randn", 1.0),
         ("sign", "torch.sign", torch.sign, "distinct", 1.0),
         ("erf", "torch.erf", torch.erf, "randn", 2.0),
         ("relu", "torch.relu", torch.relu, "distinct", 1.0),
         ("silu", "F.silu", F.silu, "randn", 3.0),
         ("tanh", "torch.tanh", torch.tanh, "randn", 2.0),
         ("sigmoid", "torch.sigmoid", torch.sigmoid, "randn", 3.0)]
for _name, _torch, _fn, _values, _scale in UNARY:
    row("pointwise", _name, _torch, _fn, unary_samples(_values, scale=_scale))
# The inputs of log, sqrt, ... in their domain; out of it (NaN) in the special samples.
row("pointwise", "clamp", "torch.clamp", lambda x, min, max: torch.clamp(x, min, max),
    unary_samples("distinct", ({"min": -0.5, "max": 0.7}, {"min": 0.7, "max": -0.5}, {"min": -INF, "max": 0.0},
                               {"min": NAN, "max": 1.0})))
row("pointwise", "clamp_min", "torch.clamp_min", lambda x, min: torch.clamp_min(x, min),
    unary_samples("distinct", ({"min": -0.2},)))
row("pointwise", "clamp_max", "torch.clamp_max", lambda x, max: torch.clamp_max(x, max),
    unary_samples("distinct", ({"max": 0.3},)))
row("pointwise", "leaky_relu", "F.leaky_relu", lambda x, slope: F.leaky_relu(x, slope),
    unary_samples("distinct", ({"slope": 0.2}, {"slope": -1.5})))
row("pointwise", "elu", "F.elu", lambda x, alpha: F.elu(x, alpha),
    unary_samples("distinct", ({"alpha": 1.5}, {"alpha": 1.0}), scale=2.0))
row("pointwise", "gelu", "F.gelu", lambda x, approximate: F.gelu(x, approximate=approximate),
    unary_samples("randn", ({"approximate": "none"}, {"approximate": "tanh"}), scale=3.0))
row("pointwise", "softplus", "F.softplus", lambda x, beta, threshold: F.softplus(x, beta, threshold),
    unary_samples("randn", ({"beta": 1.0, "threshold": 20.0}, {"beta": 2.0, "threshold": 4.0},
                            {"beta": -1.0, "threshold": 20.0}), scale=5.0))
row("pointwise", "softmax", "F.softmax", lambda x, dim: F.softmax(x, dim), dim_samples(scale=3.0, special=SPECIAL_SUMMABLE))
row("pointwise", "log_softmax", "F.log_softmax", lambda x, dim: F.log_softmax(x, dim),
    dim_samples(scale=3.0, special=SPECIAL_SUMMABLE))
row("pointwise", "hardtanh", "F.hardtanh", lambda x, min_val, max_val: F.hardtanh(x, min_val, max_val),
    unary_samples("distinct", ({"min_val": -1.0, "max_val": 1.0}, {"min_val": -0.5, "max_val": 2.0},
                               {"min_val": 1.0, "max_val": -1.0})))
row("pointwise", "relu6", "F.relu6", F.relu6, unary_samples("distinct", scale=3.0))
row("pointwise", "selu", "F.selu", F.selu, unary_samples("distinct", scale=2.0))
row("pointwise", "mish", "F.mish", F.mish, unary_samples("randn", scale=3.0))
row("pointwise", "hardswish", "F.hardswish", F.hardswish, unary_samples("distinct", scale=2.0))


def prelu_samples(g):
    out = []
    for xs, ws in (([2, 3], [3]), ([2, 3], [1]), ([2, 3, 4], [3]), ([3], [1]), ([], [1]), ([2, 3], []), ([2, 0], [0]),
                   ([0, 3], [3]), ([1, 1, 2], [1]), ([3], [3]), ([2, 3], [2]), ([2, 3], [1, 3])):
        x, w = g.distinct(xs, ws)
        out.append(Sample([x, w], {}, "distinct"))
    out.append(Sample([viewed(g, [3, 4], "T", lambda s: g.distinct(s)[0]), g.randn([4])], {}, "distinct"))
    out.append(Sample([g.special([2, 13]), g.randn([13])], {}, "special"))
    return out


row("pointwise", "prelu", "F.prelu", F.prelu, prelu_samples)


def compare_samples(scalar=False):
    def gen(g):
        out = []
        if scalar:
            for s in (1.0, 0.5, -0.0, INF, NAN):
                for shape in ([3, 4], [0, 2], [], [7]):
                    out.append(Sample([In(g.ties(shape), grad=False)], {"s": s}, "ties"))
                out.append(Sample([In(g.ints([5], -2, 3), grad=False)], {"s": s}, "ties"))
                out.append(Sample([In(g.ints([5], 0, 2, torch.bool), grad=False)], {"s": s}, "ties"))
                out.append(Sample([In(g.special([9]), grad=False)], {"s": s}, "special"))
            return out
        for sa, sb in BROADCAST_PAIRS + BROADCAST_ERRORS:
            out.append(Sample([In(g.ties(sa), grad=False), In(g.ties(sb), grad=False)], {}, "ties"))
        for da, db in ((torch.int64, torch.int64), (torch.int64, torch.float32), (torch.bool, torch.bool),
                       (torch.bool, torch.int64), (torch.float32, torch.bool)):
            a = g.ints([3, 4], -2, 3, da) if da != torch.float32 else g.ties([3, 4])
            b = g.ints([4], -2, 3, db) if db != torch.float32 else g.ties([4])
            out.append(Sample([In(a, grad=False), In(b, grad=False)], {}, "ties"))
        a = viewed(g, [3, 4], "T", g.ties)
        a.grad = False
        out.append(Sample([a, In(g.ties([4]), grad=False)], {}, "ties"))
        s = torch.tensor(SPECIAL_FEW)
        out.append(Sample([In(s.reshape(-1, 1), grad=False), In(s.reshape(1, -1), grad=False)], {}, "special"))
        return out

    return gen


for _op in ("eq", "ne", "lt", "le", "gt", "ge"):
    row("pointwise", _op, f"torch.{_op}", getattr(torch, _op), compare_samples())
    row("pointwise", f"{_op}_scalar", f"torch.{_op}(Tensor, Scalar)",
        lambda x, s, f=getattr(torch, _op): f(x, s), compare_samples(scalar=True))


def mask_samples(g, unary):
    out = []
    for dtype in (torch.float32, torch.int64, torch.bool):
        for sa, sb in (BROADCAST_PAIRS[:8] + BROADCAST_ERRORS[:1]) if not unary else [([3, 4], None), ([0], None),
                                                                                     ([], None)]:
            def make(s):
                return g.ints(s, -1, 2, dtype) if dtype != torch.float32 else g.ties(s)
            ins = [In(make(sa), grad=False)] + ([] if unary else [In(make(sb), grad=False)])
            out.append(Sample(ins, {}, "ties"))
    out.append(Sample([In(g.special([9]), grad=False)] + ([] if unary else [In(g.special([9]), grad=False)]), {},
                      "special"))
    return out


for _op in ("isnan", "isinf", "isfinite"):
    row("pointwise", _op, f"torch.{_op}", getattr(torch, _op),
        lambda g: [Sample([In(g.special(s), grad=False)], {}, "special") for s in ([26], [3, 0], [], [4, 5])]
        + [Sample([In(g.ints([4], -3, 3), grad=False)], {}, "ties"),
           Sample([In(g.ints([4], 0, 2, torch.bool), grad=False)], {}, "ties")])
row("pointwise", "logical_not", "torch.logical_not", torch.logical_not, lambda g: mask_samples(g, True))
for _op in ("logical_and", "logical_or", "logical_xor"):
    row("pointwise", _op, f"torch.{_op}", getattr(torch, _op), lambda g: mask_samples(g, False))


def bitwise_samples(g):
    out = []
    for sa, sb in BROADCAST_PAIRS[:8] + BROADCAST_ERRORS[:1]:
        out.append(Sample([In(g.ints(sa, 0, 2, torch.bool), grad=False), In(g.ints(sb, 0, 2, torch.bool), grad=False)]))
    return out


row("pointwise", "bitwise_not", "torch.Tensor.__invert__ (bool)", lambda a: ~a,
    lambda g: [Sample([In(g.ints(s, 0, 2, torch.bool), grad=False)]) for s in ([3, 4], [0], [])])
row("pointwise", "bitwise_and", "torch.Tensor.__and__ (bool)", lambda a, b: a & b, bitwise_samples)
row("pointwise", "bitwise_or", "torch.Tensor.__or__ (bool)", lambda a, b: a | b, bitwise_samples)
row("pointwise", "bitwise_xor", "torch.Tensor.__xor__ (bool)", lambda a, b: a ^ b, bitwise_samples)

WHERE_SHAPES = [([3, 4], [3, 4], [3, 4]), ([3, 1], [1, 4], [3, 4]), ([2, 3, 4], [4], []), ([0, 2], [2], [1, 2]),
                ([], [2, 3], [3]), ([2, 1], [1, 0], [1]), ([3, 4], [3, 5], [3, 4])]


def where_samples(scalar_side=None):
    def gen(g):
        out = []
        for sc, sa, sb in WHERE_SHAPES:
            c = In(g.ints(sc, 0, 2, torch.bool), grad=False)
            ins = [c] + [In(g.randn(s)) for s, side in ((sa, "a"), (sb, "b")) if side != scalar_side]
            out.append(Sample(ins, {"s": -1.5} if scalar_side else {}))
        c = viewed(g, [3, 4], "T", lambda s: g.ints(s, 0, 2, torch.bool))
        c.grad = False
        ins = [c] + [viewed(g, [3, 4], how, g.randn) for how, side in (("narrow", "a"), ("expand", "b"))
                     if side != scalar_side]
        out.append(Sample(ins, {"s": 2.0} if scalar_side else {}))
        ins = [In(g.ints([6], 0, 2, torch.bool), grad=False)] + [In(g.special([6])) for side in "ab"
                                                                   if side != scalar_side]
        out.append(Sample(ins, {"s": NAN} if scalar_side else {}, "special"))
        if scalar_side is None:
            # int64 values; a float condition (torch: error).
            out.append(Sample([In(g.ints([3, 4], 0, 2, torch.bool), grad=False), In(g.ints([3, 4], 0, 9), grad=False),
                               In(g.ints([4], 0, 9), grad=False)]))
            out.append(Sample([In(g.ties([3, 4]), grad=False), g.randn([3, 4]), g.randn([3, 4])]))
        return out

    return gen


row("pointwise", "where", "torch.where", torch.where, where_samples())
row("pointwise", "where_scalar_b", "torch.where(cond, Tensor, Scalar)", lambda c, a, s: torch.where(c, a, s),
    where_samples("b"))
row("pointwise", "where_scalar_a", "torch.where(cond, Scalar, Tensor)", lambda c, b, s: torch.where(c, s, b),
    where_samples("a"))


def masked_fill_samples(g):
    out = []
    for sx, sm in (([3, 4], [3, 4]), ([2, 3, 4], [3, 1]), ([3, 0], [1, 0]), ([], []), ([3, 4], [2, 3, 4]),
                   ([3, 4], [5])):
        for value in (-1e9, -INF, 2.5):
            out.append(Sample([g.randn(sx), In(g.ints(sm, 0, 2, torch.bool), grad=False)], {"value": value}))
    for how in ("T", "expand", "step"):
        out.append(Sample([viewed(g, [3, 4], how, g.randn), In(g.ints([4], 0, 2, torch.bool), grad=False)],
                          {"value": NAN}))
    # (No float mask: torch 1.13 silently ignores one, torch 2 raises, normnet raises.)
    return out


row("pointwise", "masked_fill", "torch.Tensor.masked_fill", lambda x, m, value: x.masked_fill(m, value),
    masked_fill_samples)


# In-place updates, on a copy of the input (a leaf cannot be updated in grad mode): torch records
# them; the result has the copy's shape, so broadcasting may only grow the other operand.
row("pointwise", "add_", "torch.Tensor.add_", lambda a, b, alpha: a.clone().add_(b, alpha=alpha),
    binary_samples(args_list=({"alpha": 1.0}, {"alpha": -0.5}), special=False))
row("pointwise", "sub_", "torch.Tensor.sub_", lambda a, b, alpha: a.clone().sub_(b, alpha=alpha),
    binary_samples(args_list=({"alpha": 1.0}, {"alpha": 2.0}), special=False))
row("pointwise", "mul_", "torch.Tensor.mul_", lambda a, b: a.clone().mul_(b), binary_samples())
row("pointwise", "div_", "torch.Tensor.div_", lambda a, b: a.clone().div_(b), binary_samples("randn", "positive"))
row("pointwise", "add_scalar_", "torch.Tensor.add_(Scalar, alpha=)",
    lambda x, s, alpha: x.clone().add_(s, alpha=alpha), unary_samples(args_list=({"s": 2.0, "alpha": 1.5},)))
row("pointwise", "sub_scalar_", "torch.Tensor.sub_(Scalar, alpha=)",
    lambda x, s, alpha: x.clone().sub_(s, alpha=alpha), unary_samples(args_list=({"s": 2.0, "alpha": 1.0},)))
row("pointwise", "mul_scalar_", "torch.Tensor.mul_(Scalar)", lambda x, s: x.clone().mul_(s),
    unary_samples(args_list=({"s": -1.5}, {"s": 0.0})))
row("pointwise", "div_scalar_", "torch.Tensor.div_(Scalar)", lambda x, s: x.clone().div_(s),
    unary_samples(args_list=({"s": 4.0}, {"s": 0.0})))
row("pointwise", "masked_fill_", "torch.Tensor.masked_fill_", lambda x, m, value: x.clone().masked_fill_(m, value),
    masked_fill_samples)
row("pointwise", "fill_", "torch.Tensor.fill_", lambda x, value: x.clone().fill_(value),
    unary_samples(args_list=({"value": 2.5}, {"value": NAN}), special=False, offset=False))
row("pointwise", "zero_", "torch.Tensor.zero_", lambda x: x.clone().zero_(),
    unary_samples(special=False, offset=False))


def copy_samples(g):
    out = []
    for sx, ss in (([2, 3], [2, 3]), ([2, 3], [3]), ([2, 3], []), ([2, 3], [6]), ([2, 3], [3, 2]), ([0, 2], [2]),
                   ([2, 3], [1, 3])):
        out.append(Sample([g.randn(sx), g.randn(ss)]))
    out.append(Sample([viewed(g, [3, 4], "T", g.randn), viewed(g, [3, 4], "narrow", g.randn)]))
    out.append(Sample([g.randn([3, 4]), In(g.ints([3, 4], -5, 5), grad=False)]))
    out.append(Sample([g.randn([3, 4]), In(g.ints([4], 0, 2, torch.bool), grad=False)]))
    return out


row("pointwise", "copy_", "torch.Tensor.copy_", lambda x, src: x.clone().copy_(src), copy_samples)


# ---- reduce: reduce.cpp, minmax.cpp, sort.cpp --------------------------------------------------

row("reduce", "sum_all", "torch.sum", torch.sum,
    lambda g: [Sample([g.randn(s)]) for s in REDUCE_SHAPES]
    + [Sample([In(g.ints([4, 5], -50, 50), grad=False)], {}, "ties"),
       Sample([In(g.ints([6, 7], 0, 2, torch.bool), grad=False)], {}, "ties"),
       Sample([viewed(g, [3, 4], "T", g.randn)]), Sample([viewed(g, [3, 4], "expand", g.randn)]),
       Sample([g.special([30], SPECIAL_SUMMABLE)], {}, "special"), Sample([g.offset([3, 300])], {}, "offset")])
row("reduce", "mean_all", "torch.mean", torch.mean,
    lambda g: [Sample([g.randn(s)]) for s in REDUCE_SHAPES]
    + [Sample([viewed(g, [3, 4], "T", g.randn)]), Sample([viewed(g, [3, 4], "step", g.randn)]),
       Sample([g.special([30], SPECIAL_SUMMABLE)], {}, "special"), Sample([g.offset([3, 300])], {}, "offset")])
row("reduce", "sum", "torch.sum(dim, keepdim)", lambda x, dims, keepdim: torch.sum(x, dims_or_all(x, dims), keepdim),
    reduce_samples(special=SPECIAL_SUMMABLE))
row("reduce", "sum_int", "torch.sum(dim, keepdim) of int64 and bool",
    lambda x, dims, keepdim: torch.sum(x, dims_or_all(x, dims), keepdim),
    lambda g: [Sample([In(g.ints(s, -9, 9, dt), grad=False)], {"dims": d, "keepdim": k}, "ties")
               for dt in (torch.int64, torch.bool) for s, d in (([3, 4, 2], [0, 2]), ([4, 0], [1]), ([3], []))
               for k in (False, True)])
row("reduce", "mean", "torch.mean(dim, keepdim)",
    lambda x, dims, keepdim: torch.mean(x, dims_or_all(x, dims), keepdim), reduce_samples(special=SPECIAL_SUMMABLE))
row("reduce", "var", "torch.var(dim, correction=, keepdim)",
    lambda x, dims, correction, keepdim: torch.var(x, dims_or_all(x, dims), correction=int(correction), keepdim=keepdim),
    reduce_samples(args_list=({"correction": 1.0}, {"correction": 0.0}, {"correction": 2.0}), scale=2.0,
                   special=SPECIAL_SUMMABLE))
row("reduce", "std", "torch.std(dim, correction=, keepdim)",
    lambda x, dims, correction, keepdim: torch.std(x, dims_or_all(x, dims), correction=int(correction), keepdim=keepdim),
    reduce_samples(args_list=({"correction": 1.0}, {"correction": 0.0}), scale=2.0, special=SPECIAL_SUMMABLE))
row("reduce", "logsumexp", "torch.logsumexp",
    lambda x, dims, keepdim: torch.logsumexp(x, dims_or_all(x, dims), keepdim),
    reduce_samples(scale=3.0, special=SPECIAL_SUMMABLE))
def torch_norm(x, p, dims, keepdim):
    """torch.norm, but linalg.vector_norm (what torch.norm is in torch 2) for a negative p over an
    empty dim: it raises, where torch 1.13's norm gives 0 (a minimum over nothing); normnet raises."""
    dims = dims_or_all(x, dims)
    if p < 0 and any(x.shape[d] == 0 for d in dims if x.dim() > 0):
        return torch.linalg.vector_norm(x, p, dims, keepdim)
    return torch.norm(x, p, dims, keepdim)


row("reduce", "norm", "torch.norm(p, dim, keepdim)", torch_norm,
    reduce_samples("distinct", [{"p": p} for p in (2.0, 1.0, INF, -INF, 3.0, 0.5)], special=SPECIAL_SUMMABLE))
row("reduce", "norm_zero", "torch.norm(p=0, dim, keepdim)",
    lambda x, p, dims, keepdim: torch.norm(x, p, dims_or_all(x, dims), keepdim),
    reduce_samples(lambda g, s: g.ints(s, -1, 2, torch.float32), ({"p": 0.0},), special=False, offset=False))
row("reduce", "norm_fro", "torch.norm('fro', dim, keepdim)",
    lambda x, dims, keepdim: torch.norm(x, "fro", dims if dims else None, keepdim),
    lambda g: [Sample([g.randn(s)], {"dims": d, "keepdim": k}) for s, d in
               (([3, 4], []), ([2, 3, 4], [0, 2]), ([2, 3, 4], [-1]), ([3, 0], [1]), ([2, 3, 4], [0, 1, 2]))
               for k in (False, True)])
def integer_samples(args):
    """int64 and bool inputs of the max/min family, `args(dims)` the arguments over those dims."""
    def gen(g):
        out = []
        for shape, dims in (([3, 4, 2], [0, 2]), ([5], [0]), ([2, 3], [1]), ([4, 0], [0])):
            out.append(Sample([In(g.ints(shape, -9, 9), grad=False)], args(dims), "ties"))
            out.append(Sample([In(g.ints(shape, 0, 2, torch.bool), grad=False)], args(dims), "ties"))
        return out
    return gen


def plus(*generators):
    return lambda g: [s for gen in generators for s in gen(g)]


row("reduce", "amax", "torch.amax", lambda x, dims, keepdim: torch.amax(x, dims_or_all(x, dims), keepdim),
    plus(reduce_samples("distinct", ties=True), integer_samples(lambda d: {"dims": d, "keepdim": False})))
row("reduce", "amin", "torch.amin", lambda x, dims, keepdim: torch.amin(x, dims_or_all(x, dims), keepdim),
    plus(reduce_samples("distinct", ties=True), integer_samples(lambda d: {"dims": d, "keepdim": True})))


def whole_samples(g):
    out = [Sample([g.distinct(s)[0]], {}, "distinct") for s in ([2, 3, 4, 1], [5], [1], [], [0], [3, 0])]
    out += [Sample([viewed(g, [3, 4], how, lambda s: g.distinct(s)[0])], {}, "distinct") for how in ("T", "step")]
    out += [Sample([g.ties([4, 6])], {}, "ties"), Sample([g.special([20])], {}, "special"),
            Sample([In(g.ints([3, 4], -9, 9), grad=False)], {}, "ties"),
            Sample([In(g.ints([3, 4], 0, 2, torch.bool), grad=False)], {}, "ties"),
            Sample([In(g.ints([0], -9, 9), grad=False)], {}, "ties")]
    return out


row("reduce", "max_all", "torch.max(Tensor)", torch.max, whole_samples)
row("reduce", "min_all", "torch.min(Tensor)", torch.min, whole_samples)
row("reduce", "max_dim", "torch.max(dim, keepdim)", lambda x, dim, keepdim: torch.max(x, dim, keepdim),
    plus(dim_samples("distinct", ties=True, extra=lambda s, d: [{"keepdim": False}, {"keepdim": True}]),
         integer_samples(lambda d: {"dim": d[-1], "keepdim": False})))
row("reduce", "min_dim", "torch.min(dim, keepdim)", lambda x, dim, keepdim: torch.min(x, dim, keepdim),
    plus(dim_samples("distinct", ties=True, extra=lambda s, d: [{"keepdim": False}, {"keepdim": True}]),
         integer_samples(lambda d: {"dim": d[0], "keepdim": True})))


def arg_samples(g):
    out = dim_samples("distinct", ties=True, extra=lambda s, d: [{"keepdim": False}, {"keepdim": True}])(g)
    for s in ([2, 3, 4], [5], [], [0], [1, 1]):
        for k in (False, True):
            out.append(Sample([g.ties(s)], {"dim": None, "keepdim": k}, "ties"))
    out.append(Sample([In(g.ints([3, 4], -9, 9), grad=False)], {"dim": 1, "keepdim": False}, "ties"))
    out += integer_samples(lambda d: {"dim": d[-1], "keepdim": True})(g)
    out += [Sample([In(g.ints([3, 4], -9, 9), grad=False)], {"dim": None, "keepdim": k}, "ties") for k in (False, True)]
    return out


row("reduce", "argmax", "torch.argmax", lambda x, dim, keepdim: torch.argmax(x, dim, keepdim), arg_samples)
row("reduce", "argmin", "torch.argmin", lambda x, dim, keepdim: torch.argmin(x, dim, keepdim), arg_samples)
row("reduce", "topk", "torch.topk", lambda x, k, dim, largest, sorted: torch.topk(x, k, dim, largest, sorted),
    dim_samples("distinct", ties=True,
                extra=lambda s, d: [{"k": k, "largest": lg, "sorted": True}
                                    for k in sorted({0, 1, s[d] if s else 1}) for lg in (True, False)]
                + [{"k": (s[d] if s else 1) + 1, "largest": True, "sorted": True}]))
row("reduce", "cumsum", "torch.cumsum", lambda x, dim: torch.cumsum(x, dim), dim_samples(special=SPECIAL_SUMMABLE))
row("reduce", "cumsum_int", "torch.cumsum of int64 and bool", lambda x, dim: torch.cumsum(x, dim),
    lambda g: [Sample([In(g.ints(s, -5, 5, dt), grad=False)], {"dim": d}, "ties")
               for dt in (torch.int64, torch.bool) for s, d in (([3, 4], 1), ([3, 4], 0), ([0, 2], 0))])


def prod_values(g, s):
    """Values around 1 in size (products of a few dozen stay in range), a zero now and then."""
    x = g.uniform(s, 0.5, 1.5) * torch.where(g.ints(s, 0, 2, torch.bool), 1.0, -1.0)
    return torch.where(g.ints(s, 0, 9) == 0, torch.zeros(()), x)


def zeros_samples(g, extra):
    """One and two zeros in a slice: the exclusive products of the gradient."""
    out = []
    for zeros in ((1,), (0, 3)):
        x = g.uniform([2, 5], 0.5, 1.5)
        for z in zeros:
            x[0, z] = 0.0
        for e in extra:
            out.append(Sample([x], e, "normal"))
    return out


row("reduce", "prod_all", "torch.prod(Tensor)", torch.prod,
    lambda g: [Sample([prod_values(g, s)], {}) for s in ([2, 3, 4, 1], [5], [1], [], [0], [3, 0])]
    + [Sample([viewed(g, [3, 4], how, lambda s: prod_values(g, s))], {}) for how in ("T", "step")]
    + zeros_samples(g, [{}]) + [Sample([g.special([6])], {}, "special"), Sample([g.special([3])], {}, "special"),
                                Sample([In(g.ints([3, 4], -3, 3), grad=False)], {}, "ties"),
                                Sample([In(g.ints([5], 0, 2, torch.bool), grad=False)], {}, "ties")])
row("reduce", "prod", "torch.prod(dim, keepdim)", lambda x, dim, keepdim: torch.prod(x, dim, keepdim),
    dim_samples(prod_values, special=SPECIAL_FEW, offset=False,
                extra=lambda s, d: [{"keepdim": False}, {"keepdim": True}]))
row("reduce", "prod_zeros", "torch.prod(dim) with zeros", lambda x, dim, keepdim: torch.prod(x, dim, keepdim),
    lambda g: zeros_samples(g, [{"dim": 1, "keepdim": False}, {"dim": 0, "keepdim": True}]))
row("reduce", "prod_int", "torch.prod(dim) of int64 and bool", lambda x, dim: torch.prod(x, dim),
    lambda g: [Sample([In(g.ints(s, -3, 4, dt), grad=False)], {"dim": d}, "ties")
               for dt in (torch.int64, torch.bool) for s, d in (([3, 4], 1), ([3, 4], 0), ([0, 2], 0))])
row("reduce", "cumprod", "torch.cumprod", lambda x, dim: torch.cumprod(x, dim),
    dim_samples(prod_values, special=SPECIAL_FEW, offset=False))
row("reduce", "cumprod_zeros", "torch.cumprod with zeros", lambda x, dim: torch.cumprod(x, dim),
    lambda g: zeros_samples(g, [{"dim": 1}, {"dim": 0}]))
row("reduce", "cumprod_int", "torch.cumprod of int64 and bool", lambda x, dim: torch.cumprod(x, dim),
    lambda g: [Sample([In(g.ints(s, -3, 4, dt), grad=False)], {"dim": d}, "ties")
               for dt in (torch.int64, torch.bool) for s, d in (([3, 4], 1), ([3, 4], 0), ([0, 2], 0))])
row("reduce", "sort", "torch.sort", lambda x, dim, descending: torch.sort(x, dim, descending),
    dim_samples("distinct", ties=True, extra=lambda s, d: [{"descending": False}, {"descending": True}]))
row("reduce", "argsort", "torch.argsort", lambda x, dim, descending: torch.argsort(x, dim, descending),
    dim_samples("distinct", ties=True, extra=lambda s, d: [{"descending": False}, {"descending": True}]))


def logical_samples(dims):
    def gen(g):
        out = []
        for dtype in (torch.float32, torch.int64, torch.bool):
            for s in ([3, 4], [2, 3, 2], [0, 3], [4], []):
                x = g.ints(s, 0, 2, dtype) if dtype != torch.float32 else g.ties(s)
                if dtype != torch.float32 and s == [3, 4]:
                    x = torch.ones(s, dtype=dtype)
                for d in (range(-1, max(len(s), 1)) if dims else [None]):
                    for k in ((False, True) if dims else (False,)):
                        out.append(Sample([In(x, grad=False)], {"dim": d, "keepdim": k} if dims else {}, "ties"))
        out.append(Sample([In(g.special([4, 6]), grad=False)], {"dim": 1, "keepdim": False} if dims else {},
                          "special"))
        if dims:
            out.append(Sample([In(g.ties([2, 3]), grad=False)], {"dim": 2, "keepdim": False}))
        return out

    return gen


row("reduce", "all_all", "torch.all(Tensor)", torch.all, logical_samples(False))
row("reduce", "all", "torch.all(dim, keepdim)", lambda x, dim, keepdim: torch.all(x, dim, keepdim),
    logical_samples(True))
row("reduce", "any_all", "torch.any(Tensor)", torch.any, logical_samples(False))
row("reduce", "any", "torch.any(dim, keepdim)", lambda x, dim, keepdim: torch.any(x, dim, keepdim),
    logical_samples(True))

# ---- shape: shape.cpp, index.cpp and the Tensor methods that view or copy ----------------------

SHAPE_INPUTS = [[2, 3, 4], [3, 1, 2], [2, 0, 3], [5], [1], []]


def each_input(g, shapes=SHAPE_INPUTS, views=("T", "narrow", "expand")):
    """Inputs of the given shapes (random values) and a few non-contiguous views of [2, 3, 4]."""
    out = [In(g.randn(s)) for s in shapes]
    out += [viewed(g, [2, 3, 4], how, g.randn) for how in views]
    return out


def shaped_samples(args_of, shapes=SHAPE_INPUTS, views=("T", "narrow", "expand"), errors=()):
    """One tensor input per shape (and views); args_of(shape) lists the argument sets to try;
    errors: (shape, args) pairs on which torch raises."""

    def gen(g):
        out = []
        for i in each_input(g, shapes, views):
            shape = list(apply_view(i.base, i.view).shape)
            for args in args_of(shape):
                out.append(Sample([i], args))
        for shape, args in errors:
            out.append(Sample([g.randn(shape)], args))
        out.append(Sample([g.special([3, 4])], args_of([3, 4])[0], "special"))
        return out

    return gen


def reshapes(s):
    n = math.prod(s)
    out = [{"shape": [n]}, {"shape": [-1]}, {"shape": [1] + list(s) + [1]}]
    if n and len(s) >= 2:
        out += [{"shape": [s[0], -1]}, {"shape": [-1, s[-1]]}]
    return out


row("shape", "reshape", "torch.reshape", lambda x, shape: torch.reshape(x, shape),
    shaped_samples(reshapes, errors=[([2, 3], {"shape": [4, 2]}), ([2, 3], {"shape": [-1, -1]}),
                                     ([0, 3], {"shape": [-1, 0]}), ([2, 3], {"shape": [-2, 3]})]))
row("shape", "view", "torch.Tensor.view", lambda x, shape: x.view(shape),
    shaped_samples(reshapes, views=("T", "narrow", "expand", "step"), errors=[([2, 3], {"shape": [5]})]))
row("shape", "flatten", "torch.flatten", lambda x, start, end: torch.flatten(x, start, end),
    shaped_samples(lambda s: [{"start": a, "end": b} for a, b in ((0, -1), (1, -1), (0, 0), (-2, -1), (1, 2))
                              if len(s) > max(a if a >= 0 else -a - 1, b if b >= 0 else -b - 1)]
                   + [{"start": 0, "end": -1}],
                   errors=[([2, 3], {"start": 1, "end": 0}), ([2, 3], {"start": 0, "end": 2})]))
row("shape", "unflatten", "torch.unflatten", lambda x, dim, sizes: torch.unflatten(x, dim, sizes),
    shaped_samples(lambda s: [{"dim": d, "sizes": [1, s[d], 1]} for d in range(len(s))]
                   + ([{"dim": -1, "sizes": [-1, 2]}] if s and s[-1] % 2 == 0 and s[-1] else [])
                   + ([{"dim": 0, "sizes": [s[0], 1]}] if s else []),
                   shapes=[[2, 12], [3, 0], [6], [2, 3, 4]],
                   errors=[([2, 12], {"dim": 1, "sizes": [5, 2]}), ([2, 12], {"dim": 2, "sizes": [2, 6]}),
                           ([2, 12], {"dim": 1, "sizes": [-1, -1]})]))
row("shape", "transpose", "torch.transpose", lambda x, dim0, dim1: torch.transpose(x, dim0, dim1),
    shaped_samples(lambda s: [{"dim0": a, "dim1": b} for a in range(-len(s), max(len(s), 1))
                              for b in range(max(len(s), 1)) if len(s) or (a == 0 and b == 0)] or [{"dim0": 0, "dim1": 0}],
                   errors=[([2, 3], {"dim0": 0, "dim1": 2}), ([2, 3], {"dim0": -3, "dim1": 0})]))
row("shape", "t", "torch.t", lambda x: torch.t(x),
    shaped_samples(lambda s: [{}], shapes=[[2, 3], [3, 0], [5], [], [1, 1]], errors=[([2, 3, 4], {})]))
row("shape", "permute", "torch.permute", lambda x, dims: torch.permute(x, dims),
    shaped_samples(lambda s: [{"dims": p} for p in ([[2, 0, 1], [1, 0, 2], [0, 2, -2], [2, 1, 0]]
                                                   if len(s) == 3 else [list(range(len(s)))[::-1]])],
                   errors=[([2, 3, 4], {"dims": [0, 0, 1]}), ([2, 3, 4], {"dims": [0, 1]}),
                           ([2, 3, 4], {"dims": [0, 1, 3]})]))
row("shape", "unsqueeze", "torch.unsqueeze", lambda x, dim: torch.unsqueeze(x, dim),
    shaped_samples(lambda s: [{"dim": d} for d in range(-len(s) - 1, len(s) + 1)],
                   errors=[([2, 3], {"dim": 3}), ([2, 3], {"dim": -4})]))
row("shape", "squeeze_all", "torch.squeeze", lambda x: torch.squeeze(x),
    shaped_samples(lambda s: [{}], shapes=SHAPE_INPUTS + [[1, 2, 1, 1], [1, 0, 1]]))
row("shape", "squeeze", "torch.squeeze(dim)", lambda x, dim: torch.squeeze(x, dim),
    shaped_samples(lambda s: [{"dim": d} for d in range(-len(s), max(len(s), 1))],
                   shapes=SHAPE_INPUTS + [[1, 2, 1, 1]], errors=[([2, 3], {"dim": 2})]))
row("shape", "narrow", "torch.narrow", lambda x, dim, start, length: torch.narrow(x, dim, start, length),
    shaped_samples(lambda s: [{"dim": d, "start": a, "length": n} for d in range(len(s))
                              for a, n in ((0, s[d]), (1, s[d] - 1), (-1, 1), (0, 0)) if n >= 0 and abs(a) <= s[d]
                              and (a >= 0 and a + n <= s[d] or a < 0 and -a >= n)] or [{"dim": 0, "start": 0, "length": 0}],
                   shapes=[[2, 3, 4], [3, 1, 2], [2, 0, 3], [5]],
                   errors=[([2, 3], {"dim": 1, "start": 2, "length": 2}), ([2, 3], {"dim": 2, "start": 0, "length": 1}),
                           ([2, 3], {"dim": 1, "start": 0, "length": -1}), ([2, 3], {"dim": 1, "start": 4, "length": 0})]))
row("shape", "select", "torch.select", lambda x, dim, index: torch.select(x, dim, index),
    shaped_samples(lambda s: [{"dim": d, "index": i} for d in range(-len(s), len(s)) for i in (0, -1, s[d] - 1)
                              if s[d] > 0],
                   shapes=[[2, 3, 4], [3, 1, 2], [2, 0, 3], [5]],
                   errors=[([2, 3], {"dim": 1, "index": 3}), ([2, 3], {"dim": 1, "index": -4}),
                           ([2, 3], {"dim": 2, "index": 0}), ([2, 0], {"dim": 1, "index": 0}), ([], {"dim": 0, "index": 0})]))


def python_slice(x, dim, start, end, step):
    return x[(slice(None),) * (dim % x.dim()) + (slice(start, end, step),)]


row("shape", "slice", "Python's x[..., start:end:step]", python_slice,
    shaped_samples(lambda s: [{"dim": d, "start": a, "end": b, "step": st} for d in range(len(s))
                              for a, b, st in ((None, None, 1), (1, None, 2), (None, -1, 1), (-2, None, 3), (0, 100, 2),
                                               (5, 1, 1), (-100, 2, 1))],
                   shapes=[[2, 3, 4], [3, 1, 2], [2, 0, 3], [5]],
                   errors=[([2, 3], {"dim": 1, "start": 0, "end": 2, "step": 0}),
                           ([2, 3], {"dim": 1, "start": 0, "end": 2, "step": -1})]))
row("shape", "expand", "torch.Tensor.expand", lambda x, sizes: x.expand(sizes),
    shaped_samples(lambda s: [{"sizes": [3 if k == 1 else -1 for k in s]}, {"sizes": [2] + list(s)},
                              {"sizes": [0] + list(s)}],
                   shapes=[[3, 1, 2], [1], [], [2, 0, 1], [1, 4]],
                   errors=[([2, 3], {"sizes": [3, 3]}), ([2, 3], {"sizes": [3]}), ([2, 1], {"sizes": [-1, -2]})]))
row("shape", "expand_as", "torch.Tensor.expand_as", lambda x, other: x.expand_as(other),
    lambda g: [Sample([g.randn(a), In(g.randn(b), grad=False)]) for a, b in
               (([3, 1], [3, 4]), ([1], [2, 2]), ([], [2]), ([4], [2, 3, 4]), ([1, 0], [5, 0]), ([2], [3]))])


def split_samples(g):
    out = []
    for s in ([5, 4], [0, 3], [6], [2, 3, 4]):
        for d in range(len(s)):
            for size in (1, 2, 4, 10):
                out.append(Sample([g.randn(s)], {"size": size, "dim": d}))
    out.append(Sample([viewed(g, [2, 3, 4], "T", g.randn)], {"size": 2, "dim": -1}))
    out += [Sample([g.randn([4])], {"size": 0, "dim": 0}), Sample([g.randn([4])], {"size": 2, "dim": 1}),
            Sample([g.randn([0])], {"size": 0, "dim": 0})]
    return out


row("shape", "split", "torch.split", lambda x, size, dim: torch.split(x, size, dim), split_samples)
row("shape", "split_with_sizes", "torch.split(list of sizes)", lambda x, sizes, dim: torch.split(x, sizes, dim),
    lambda g: [Sample([g.randn(s)], {"sizes": z, "dim": d}) for s, z, d in
               (([5, 2], [2, 3], 0), ([5, 2], [0, 5], 0), ([5, 2], [1, 1], 1), ([0, 2], [0], 0), ([5, 2], [2, 2], 0),
                ([5, 2], [6, -1], 0), ([5, 2], [5], 2), ([2, 3, 4], [1, 1, 2], -1))])


def chunk_samples(g):
    out = []
    for s in ([5, 4], [0, 3], [6], [2, 3, 4], [1]):
        for d in range(len(s)):
            for chunks in (1, 2, 3, 7):
                out.append(Sample([g.randn(s)], {"chunks": chunks, "dim": d}))
    out += [Sample([g.randn([4])], {"chunks": 0, "dim": 0}), Sample([g.randn([4])], {"chunks": 2, "dim": 1})]
    return out


row("shape", "chunk", "torch.chunk", lambda x, chunks, dim: torch.chunk(x, chunks, dim), chunk_samples)
row("shape", "unbind", "torch.unbind", lambda x, dim: torch.unbind(x, dim),
    shaped_samples(lambda s: [{"dim": d} for d in range(-len(s), len(s))], shapes=[[2, 3, 4], [3, 1, 2], [2, 0, 3], [5]],
                   errors=[([2, 3], {"dim": 2}), ([], {"dim": 0})]))
row("shape", "repeat", "torch.Tensor.repeat", lambda x, repeats: x.repeat(repeats),
    shaped_samples(lambda s: [{"repeats": [2] * len(s)}, {"repeats": [2, 1] + [3] * len(s)},
                              {"repeats": [0] + [1] * len(s)}, {"repeats": [1] * len(s)}],
                   shapes=[[2, 3], [3, 1, 2], [2, 0], [5], []], errors=[([2, 3], {"repeats": [2]}),
                                                                     ([2, 3], {"repeats": [2, -1]})]))


def list_samples(g):
    """Lists of tensors for cat and stack (the row's inputs are the list)."""
    out = []
    for shapes, dim in (([[2, 3], [4, 3]], 0), ([[2, 3], [2, 1], [2, 0]], 1), ([[2, 3]], 0), ([[2, 3], [2, 3]], -1),
                        ([[0, 3], [2, 3]], 0), ([[2, 3], [0]], 0), ([[3], [3], [3]], 0), ([[], []], 0),
                        ([[2, 3], [3, 3]], 1), ([[2, 3], [2, 3, 1]], 0), ([[2, 3], [2, 3]], 2), ([[2, 3], [2, 3]], -3)):
        out.append(Sample([g.randn(s) for s in shapes], {"dim": dim}))
    out.append(Sample([viewed(g, [2, 3], "T", g.randn), viewed(g, [2, 3], "narrow", g.randn)], {"dim": 0}))
    out.append(Sample([viewed(g, [2, 3], "expand", g.randn), g.randn([2, 3])], {"dim": 1}))
    out.append(Sample([In(g.ints([2, 3], 0, 5), grad=False), In(g.ints([1, 3], 0, 5), grad=False)], {"dim": 0}))
    out.append(Sample([g.randn([2, 3]), In(g.ints([2, 3], 0, 5), grad=False)], {"dim": 0}))
    return out


row("shape", "cat", "torch.cat", lambda *xs, dim: torch.cat(xs, dim), list_samples)
row("shape", "stack", "torch.stack", lambda *xs, dim: torch.stack(xs, dim), list_samples)
row("shape", "contiguous", "torch.Tensor.contiguous", lambda x: x.contiguous(), shaped_samples(lambda s: [{}]))
row("shape", "clone", "torch.clone", lambda x: torch.clone(x), shaped_samples(lambda s: [{}]))
row("shape", "detach", "torch.Tensor.detach", lambda x: x.detach(), shaped_samples(lambda s: [{}]))


def to_samples(g):
    out = []
    for dtype in ("float32", "int64", "bool"):
        for src in (g.randn([3, 4]) * 3, g.ints([3, 4], -3, 3), g.ints([3, 4], 0, 2, torch.bool), g.randn([0, 2])):
            out.append(Sample([In(src, grad=src.is_floating_point() and dtype == "float32")], {"dtype": dtype}))
        out.append(Sample([In(viewed(g, [3, 4], "T", g.randn).base, [["transpose", -2, -1]], grad=False)],
                          {"dtype": dtype}))
    out.append(Sample([In(torch.tensor([0.5, -0.5, 1.99, -1.99, -0.0, 1e-40, 1e10]), grad=False)], {"dtype": "int64"}))
    out.append(Sample([In(torch.tensor([NAN, INF, -INF, 3e38]), grad=False)], {"dtype": "int64"}, "special"))
    out.append(Sample([In(g.special([26]), grad=False)], {"dtype": "bool"}, "special"))
    return out


row("shape", "to", "torch.Tensor.to(dtype)", lambda x, dtype: x.to(getattr(torch, dtype)), to_samples)


def index_samples(g, kind):
    """index_select, gather, scatter_add: valid and out-of-range indices, views, size 0."""
    out = []
    for shape, dim in (([4, 3], 0), ([4, 3], 1), ([2, 3, 4], -1), ([2, 3, 4], 1), ([4, 0], 0), ([5], 0)):
        n = shape[dim]
        for m in (3, 0, 1):
            if kind == "index_select":
                idx = g.ints([m], 0, max(n, 1)) if n else g.ints([0], 0, 1)
                out.append(Sample([g.randn(shape), In(idx, grad=False)], {"dim": dim}))
            else:
                ishape = list(shape)
                ishape[dim] = m
                ishape = [min(k, 2) if i != dim % len(shape) else k for i, k in enumerate(ishape)]
                idx = g.ints(ishape, 0, max(n, 1)) if n else g.ints([0] * len(ishape), 0, 1)
                ins = [g.randn(shape), In(idx, grad=False)]
                if kind == "scatter_add":  # src as large as index (torch 1.13's backward fails on a larger one)
                    ins.append(g.randn(ishape))
                out.append(Sample(ins, {"dim": dim}))
    out.append(Sample([viewed(g, [4, 3], "T", g.randn), In(g.ints([2] if kind == "index_select" else [2, 2], 0, 3),
                                                          grad=False)] + ([g.randn([2, 2])] if kind == "scatter_add" else []),
                      {"dim": 0}))
    bad = [In(g.ints([2] if kind == "index_select" else [2, 3], 4, 6), grad=False)]
    out.append(Sample([g.randn([4, 3])] + bad + ([g.randn([2, 3])] if kind == "scatter_add" else []), {"dim": 0}))
    neg = [In(-g.ints([2] if kind == "index_select" else [2, 3], 1, 3), grad=False)]
    out.append(Sample([g.randn([4, 3])] + neg + ([g.randn([2, 3])] if kind == "scatter_add" else []), {"dim": 0}))
    out.append(Sample([g.randn([4, 3]), In(g.ints([2] if kind == "index_select" else [2, 3], 0, 3), grad=False)]
                      + ([g.randn([2, 3])] if kind == "scatter_add" else []), {"dim": 2}))
    if kind == "scatter_add":  # src larger than index: torch's forward works, its backward raises
        out.append(Sample([g.randn([4, 3]), In(g.ints([2, 2], 0, 4), grad=False), g.randn([3, 3])], {"dim": 0}))
    if kind != "index_select":  # index larger than the input beyond dim
        out.append(Sample([g.randn([4, 3]), In(g.ints([2, 5], 0, 3), grad=False)]
                          + ([g.randn([2, 5])] if kind == "scatter_add" else []), {"dim": 0}))
    return out


row("shape", "index_select", "torch.index_select", lambda x, i, dim: torch.index_select(x, dim, i),
    lambda g: index_samples(g, "index_select"))
row("shape", "gather", "torch.gather", lambda x, i, dim: torch.gather(x, dim, i), lambda g: index_samples(g, "gather"))
row("shape", "scatter_add", "torch.scatter_add", lambda x, i, src, dim: torch.scatter_add(x, dim, i, src),
    lambda g: index_samples(g, "scatter_add"))


def embedding_samples(g):
    out = []
    for ishape in ([5], [2, 3], [], [0], [2, 0]):
        for pad in (None, 1, -1):
            out.append(Sample([In(g.ints(ishape, 0, 4), grad=False), g.randn([4, 3])], {"padding_idx": pad}))
    out.append(Sample([In(g.ints([3], 0, 4), grad=False), viewed(g, [4, 3], "T", g.randn)], {"padding_idx": None}))
    out.append(Sample([In(g.ints([3], 4, 6), grad=False), g.randn([4, 3])], {"padding_idx": None}))
    out.append(Sample([In(-g.ints([3], 1, 3), grad=False), g.randn([4, 3])], {"padding_idx": None}))
    out.append(Sample([In(g.ints([3], 0, 4), grad=False), g.randn([4, 3])], {"padding_idx": 4}))
    out.append(Sample([In(g.ints([3], 0, 4), grad=False), g.randn([4])], {"padding_idx": None}))
    return out


row("shape", "embedding", "F.embedding", lambda i, w, padding_idx: F.embedding(i, w, padding_idx), embedding_samples)
row("shape", "one_hot", "F.one_hot", lambda i, num_classes: F.one_hot(i, num_classes),
    lambda g: [Sample([In(g.ints(s, 0, 4), grad=False)], {"num_classes": n}) for s in ([5], [2, 3], [], [0])
               for n in (-1, 4, 6)]
    + [Sample([In(g.ints([3], 0, 4), grad=False)], {"num_classes": 2}),
       Sample([In(-g.ints([3], 1, 3), grad=False)], {"num_classes": 4}),
       Sample([In(g.ints([0], 0, 4), grad=False)], {"num_classes": -1})])

row("shape", "flip", "torch.flip", lambda x, dims: torch.flip(x, dims),
    shaped_samples(lambda s: [{"dims": d} for d in ([0], [-1], list(range(len(s))), [0, 2], []) if
                              all(-max(len(s), 1) <= k < max(len(s), 1) for k in d)],
                   errors=[([2, 3], {"dims": [2]}), ([2, 3], {"dims": [0, 0]}), ([2, 3], {"dims": [1, -1]})]))


def triangle_samples(g):
    out = []
    for s in ([3, 4], [4, 3], [2, 3, 4], [0, 3], [3, 0], [1, 1], [2, 1, 5, 2]):
        for k in (0, -1, 2, -5, 5):
            out.append(Sample([g.randn(s)], {"diagonal": k}))
    out.append(Sample([viewed(g, [3, 4], "T", g.randn)], {"diagonal": 1}))
    out.append(Sample([viewed(g, [2, 3, 4], "expand", g.randn)], {"diagonal": 0}))
    out.append(Sample([g.special([4, 5])], {"diagonal": 0}, "special"))
    out.append(Sample([In(g.ints([3, 4], -5, 5), grad=False)], {"diagonal": 0}))
    out.append(Sample([In(g.ints([3, 4], 0, 2, torch.bool), grad=False)], {"diagonal": -1}))
    out += [Sample([g.randn([4])], {"diagonal": 0}), Sample([g.randn([])], {"diagonal": 0})]
    return out


row("shape", "tril", "torch.tril", lambda x, diagonal: torch.tril(x, diagonal), triangle_samples)
row("shape", "triu", "torch.triu", lambda x, diagonal: torch.triu(x, diagonal), triangle_samples)

PAD_CASES = [  # input shape, pad, modes that take it (the others: torch raises)
    ([2, 3, 5], [1, 2], "crp"), ([3, 5], [2, 0], "crp"), ([1, 2, 4, 5], [1, 2, 3, 0], "crp"),
    ([2, 4, 5], [1, 1, 2, 2], "crp"), ([1, 1, 3, 3, 4], [1, 0, 2, 1, 1, 2], "crp"), ([2, 3, 4, 3], [1, 1, 1, 1, 0, 2], "cp"),
    ([2, 3, 5], [-1, 2], "crp"), ([2, 3, 5], [3, -2], "crp"), ([2, 3, 5], [4, 4], "cp"), ([2, 3, 5], [5, 0], "cp"),
    ([2, 3, 5], [-5, 0], "c"), ([2, 3, 5], [-3, -3], ""), ([2, 3, 1], [1, 1], "cp"), ([0, 3, 5], [1, 1], "crp"),
    ([2, 0, 5], [1, 1], "c"), ([0, 5], [1, 2], "cr"), ([2, 3, 5], [1, 2, 3], ""), ([5], [1, 2], "c"),
    ([2, 3, 4, 5], [1, 2], "c"), ([], [], "c"), ([2, 3], [], "c"), ([2, 3, 5], [0, 0, 0, 0, 1, 1, 1, 1], ""),
    ([2, 2, 2, 2, 2, 2], [1, 1], "c")]


def pad_samples(g):
    out = []
    for shape, pad, _ in PAD_CASES:
        for mode in ("constant", "reflect", "replicate"):
            out.append(Sample([g.randn(shape)], {"pad": pad, "mode": mode, "value": -1.5 if mode == "constant" else 0.0}))
    for mode in ("constant", "reflect", "replicate"):
        out.append(Sample([viewed(g, [2, 4, 5], "T", g.randn)], {"pad": [2, 1, 1, 3], "mode": mode, "value": 0.0}))
        out.append(Sample([g.special([2, 4, 6])], {"pad": [3, 2], "mode": mode, "value": NAN}, "special"))
    return out


row("shape", "pad", "F.pad", lambda x, pad, mode, value: F.pad(x, pad, mode, value), pad_samples)


# ---- linear: linear.cpp, feed_forward.cpp ------------------------------------------------------

MATMUL_PAIRS = [([3], [3]), ([2, 3], [3]), ([3], [3, 4]), ([2, 3], [3, 4]), ([2, 2, 3], [3, 4]), ([3], [2, 3, 4]),
                ([2, 1, 2, 3], [4, 3, 2]), ([5, 2, 3], [5, 3, 1]), ([2, 0], [0, 3]), ([0, 3], [3, 2]), ([0], [0]),
                ([1, 1], [1, 1]), ([4, 2, 3], [3])]
MATMUL_ERRORS = [([2, 3], [4, 2]), ([3], [4]), ([], [3]), ([2, 2, 3], [3, 3, 2])]


def matmul_samples(pairs=MATMUL_PAIRS, errors=MATMUL_ERRORS, views=True):
    def gen(g):
        out = [Sample([g.randn(a), g.randn(b)]) for a, b in pairs]
        if views:
            out.append(Sample([viewed(g, [4, 3], "T", g.randn), viewed(g, [3, 5], "T", g.randn)]))
            out.append(Sample([viewed(g, [2, 4, 3], "narrow", g.randn), viewed(g, [3, 2], "step", g.randn)]))
            out.append(Sample([viewed(g, [2, 4, 3], "expand", g.randn), viewed(g, [2, 3, 2], "permute", g.randn)]))
        out.append(Sample([g.offset([3, 5]), g.randn([5, 2])], {}, "offset"))
        out.append(Sample([g.special([4, 6]), g.randn([6, 3])], {}, "special"))
        out += [Sample([g.randn(a), g.randn(b)]) for a, b in errors]
        return out

    return gen


row("linear", "matmul", "torch.matmul", torch.matmul, matmul_samples())
row("linear", "mm", "torch.mm", torch.mm,
    matmul_samples([([2, 3], [3, 4]), ([2, 0], [0, 3]), ([0, 3], [3, 2]), ([1, 1], [1, 1]), ([5, 7], [7, 1])],
                   MATMUL_ERRORS + [([3], [3, 4]), ([2, 2, 3], [3, 4])], views=True))
row("linear", "bmm", "torch.bmm", torch.bmm,
    lambda g: [Sample([g.randn(a), g.randn(b)]) for a, b in
               (([2, 3, 4], [2, 4, 5]), ([0, 3, 4], [0, 4, 2]), ([2, 3, 0], [2, 0, 2]), ([1, 1, 1], [1, 1, 1]),
                ([2, 3, 4], [3, 4, 5]), ([2, 3, 4], [2, 5, 5]), ([3, 4], [4, 5]))]
    + [Sample([viewed(g, [2, 3, 4], "permute", g.randn), viewed(g, [2, 4, 5], "T", g.randn)]),
       Sample([viewed(g, [2, 3, 4], "expand", g.randn), g.randn([2, 4, 2])])])


def linear_samples(g):
    out = []
    for xs, out_f, in_f, bias in (([5, 7], 3, 7, True), ([5, 7], 3, 7, False), ([2, 5, 7], 3, 7, True),
                                  ([7], 3, 7, True), ([5, 0], 3, 0, True), ([0, 7], 3, 7, True), ([5, 7], 0, 7, True),
                                  ([2, 1, 4], 1, 4, True)):
        ins = [g.randn(xs), g.randn([out_f, in_f])] + ([g.randn([out_f])] if bias else [])
        out.append(Sample(ins, {"bias": bias}))
    out.append(Sample([viewed(g, [5, 7], "T", g.randn), viewed(g, [3, 7], "narrow", g.randn), g.randn([3])],
                      {"bias": True}))
    out.append(Sample([g.randn([5, 7]), g.randn([3, 6]), g.randn([3])], {"bias": True}))
    out.append(Sample([g.randn([5, 7]), g.randn([3, 7]), g.randn([4])], {"bias": True}))
    out.append(Sample([g.offset([2, 7]), g.randn([3, 7]), g.randn([3])], {"bias": True}, "offset"))
    return out


row("linear", "linear", "F.linear", lambda x, w, b=None, bias=True: F.linear(x, w, b), linear_samples)


def feed_forward_torch(x, w1, b1, w2, b2, activation, recompute_hidden):
    h = F.linear(x, w1, b1)
    h = F.relu(h) if activation == "relu" else F.gelu(h)
    return F.linear(h, w2, b2)


def feed_forward_samples(g):
    out = []
    for xs, d, f in (([4, 6], 6, 10), ([2, 3, 6], 6, 5), ([0, 6], 6, 4), ([1, 6], 6, 1)):
        for act in ("relu", "gelu"):
            for rec in (False, True):
                # relu's kink may lie within gradcheck's step of a hidden value: only gelu is gradchecked.
                out.append(Sample([g.randn(xs), g.randn([f, d]) * 0.5, g.randn([f]), g.randn([d, f]) * 0.5,
                                   g.randn([d])], {"activation": act, "recompute_hidden": rec},
                                  "kinked" if act == "relu" else "normal"))
    out.append(Sample([g.randn([4, 6]), g.randn([10, 5]), g.randn([10]), g.randn([6, 10]), g.randn([6])],
                      {"activation": "relu", "recompute_hidden": False}))
    return out


row("linear", "feed_forward", "F.linear(act(F.linear(x)))", feed_forward_torch, feed_forward_samples)


EINSUM_CASES = [  # equation, operand shapes
    ("ij,jk->ik", [[2, 3], [3, 4]]), ("ij,jk", [[2, 3], [3, 4]]), ("bij,bjk->bik", [[2, 3, 4], [2, 4, 5]]),
    ("bhqd,bhkd->bhqk", [[2, 2, 3, 4], [2, 2, 5, 4]]), ("bhqk,bhkd->bhqd", [[1, 2, 3, 5], [1, 2, 5, 4]]),
    ("i,i->", [[5], [5]]), ("i,i", [[4], [1]]), ("i,j->ij", [[3], [4]]), ("ij->ji", [[2, 3]]), ("ij->j", [[2, 3]]),
    ("ij->", [[2, 3]]), ("ij", [[2, 3]]), ("ji", [[2, 3]]), ("...ij->...ji", [[2, 3, 4]]), ("...ij->ij", [[2, 3, 4]]),
    ("...ij", [[5, 3, 4]]), ("ij,j", [[3, 4], [4]]), ("ij,j->i", [[3, 4], [4]]), ("bn,anm,bm->ba", [[2, 3], [4, 3, 5], [2, 5]]),
    ("ij,jk,kl->il", [[2, 3], [3, 4], [4, 5]]), ("bij,bjk->bik", [[1, 2, 3], [4, 3, 5]]), ("Ab,ba", [[2, 3], [3, 2]]),
    ("i j , j k -> i k", [[2, 3], [3, 4]]), ("ij...,jk...->ik...", [[2, 3, 5], [3, 4, 1]]), ("...i,...i->...", [[2, 3], [3]]),
    ("ij,jk->ik", [[2, 0], [0, 3]]), ("ij,jk->ik", [[0, 3], [3, 2]]), ("->", [[]]), ("i,->i", [[3], []]),
    ("abc,cd->abd", [[2, 3, 4], [4, 2]]), ("ijk,ikl->jl", [[2, 3, 4], [2, 4, 5]]),
    # torch raises:
    ("ij->jj", [[2, 3]]), ("ij->k", [[2, 3]]), ("i,i", [[3], [2]]), ("ij", [[2, 3, 4]]), ("ij,jk", [[2, 3]]),
    ("i1", [[2, 3]])]


def einsum_samples(g):
    out = [Sample([g.randn(s) for s in shapes], {"equation": eq}) for eq, shapes in EINSUM_CASES]
    out.append(Sample([viewed(g, [3, 4], "T", g.randn), viewed(g, [4, 5], "narrow", g.randn)], {"equation": "ij,jk->ik"}))
    out.append(Sample([g.offset([3, 4]), g.randn([4, 2])], {"equation": "ij,jk->ik"}, "offset"))
    return out


row("linear", "einsum", "torch.einsum", lambda *ops, equation: torch.einsum(equation, *ops), einsum_samples)


# ---- nn: norm.cpp, conv.cpp, pooling.cpp, loss.cpp, attention.cpp, rnn.cpp, dropout.cpp --------
# Optional tensor arguments are inputs whose presence the args say ("weight": true, ...), in a
# fixed order after the required ones.


def optional_inputs(g, flags, makers):
    """The inputs of the flags that are set, in order."""
    return [make() for flag, make in zip(flags, makers) if flag]


def layer_norm_torch(x, *wb, normalized_shape, weight, bias, eps):
    wb = list(wb)
    w = wb.pop(0) if weight else None
    b = wb.pop(0) if bias else None
    return F.layer_norm(x, normalized_shape, w, b, eps)


def layer_norm_samples(g):
    out = []
    for xs, ns in (([4, 5], [5]), ([2, 3, 4], [3, 4]), ([3, 1], [1]), ([0, 5], [5]), ([5], [5]), ([2, 3, 4], [2, 3, 4])):
        for weight, bias in ((True, True), (False, False), (True, False)):
            ins = [g.randn(xs, 2.0, 1.0)] + optional_inputs(g, (weight, bias), (lambda: g.randn(ns), lambda: g.randn(ns)))
            out.append(Sample(ins, {"normalized_shape": ns, "weight": weight, "bias": bias, "eps": 1e-5}))
    out.append(Sample([viewed(g, [4, 6], "T", g.randn), g.randn([6]), g.randn([6])],
                      {"normalized_shape": [6], "weight": True, "bias": True, "eps": 1e-3}))
    out.append(Sample([g.offset([3, 40])], {"normalized_shape": [40], "weight": False, "bias": False, "eps": 1e-5},
                      "offset"))
    out.append(Sample([g.special([3, 6])], {"normalized_shape": [6], "weight": False, "bias": False, "eps": 1e-5},
                      "special"))
    for xs, ns, ws in (([4, 5], [4], [4]), ([4, 5], [5], [4]), ([4, 5], [2, 5], [2, 5])):
        out.append(Sample([g.randn(xs), g.randn(ws)], {"normalized_shape": ns, "weight": True, "bias": False,
                                                       "eps": 1e-5}))
    return out


row("nn", "layer_norm", "F.layer_norm", layer_norm_torch, layer_norm_samples)


def rms_norm_torch(x, *w, normalized_shape, weight, eps):
    # torch 1.13 has no rms_norm: torch 2's formula, eps None = float32's epsilon (also in float64).
    dims = tuple(range(-len(normalized_shape), 0))
    e = torch.finfo(torch.float32).eps if eps is None else eps
    y = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + e)
    return y * w[0] if weight else y


row("nn", "rms_norm", "x * rsqrt(mean(x^2) + eps) * weight (torch 2's F.rms_norm)", rms_norm_torch,
    lambda g: [Sample([g.randn(xs)] + ([g.randn(ns)] if w else []), {"normalized_shape": ns, "weight": w, "eps": e})
               for xs, ns in (([4, 5], [5]), ([2, 3, 4], [3, 4]), ([3, 1], [1]), ([0, 5], [5]))
               for w in (True, False) for e in (None, 1e-5)]
    + [Sample([viewed(g, [4, 6], "T", g.randn)], {"normalized_shape": [6], "weight": False, "eps": None}),
       Sample([g.special([3, 6])], {"normalized_shape": [6], "weight": False, "eps": None}, "special"),
       Sample([g.randn([4, 5]), g.randn([4])], {"normalized_shape": [4], "weight": True, "eps": None})])


def batch_norm_torch(x, *rest, running, weight, bias, training, momentum, eps, num_batches_tracked,
                     fused_pool=False):
    rest = list(rest)
    rm = rest.pop(0).clone() if running else None
    rv = rest.pop(0).clone() if running else None
    w = rest.pop(0) if weight else None
    b = rest.pop(0) if bias else None
    factor = momentum if momentum is not None else 1.0 / num_batches_tracked
    y = F.batch_norm(x, rm, rv, w, b, training, factor, eps)
    if fused_pool:
        y = F.relu(F.max_pool2d(y, 2))
    return (y, rm, rv) if running else y


def batch_norm_samples(fused):
    def gen(g):
        out = []
        shapes = ([[4, 3, 8, 8], [2, 2, 4, 10], [3, 2, 3, 5], [1, 2, 4, 8]] if fused else
                  [[4, 3], [5, 2, 3], [2, 3, 2, 2], [1, 3, 4], [0, 3]])
        for xs in shapes:
            C = xs[1]
            for training, running, weight, momentum in ((True, True, True, 0.1), (True, False, False, 0.1),
                                                        (False, True, True, 0.1), (True, True, False, None)):
                ins = [g.randn(xs, 2.0, 1.0)]
                if running:
                    ins += [In(g.randn([C]) * 0.1, grad=False), In(g.uniform([C], 0.5, 1.5), grad=False)]
                if weight:
                    ins += [g.randn([C]), g.randn([C])]
                # The fused op's max-pool and relu have kinks the normalised values may lie near.
                out.append(Sample(ins, {"running": running, "weight": weight, "bias": weight, "training": training,
                                        "momentum": momentum, "eps": 1e-5, "num_batches_tracked": 3},
                                  "kinked" if fused else "normal"))
        # Errors: one value per channel in training; evaluation without running statistics.
        tail = [2, 2] if fused else []
        plain = {"running": False, "weight": False, "bias": False, "training": True, "momentum": 0.1, "eps": 1e-5,
                 "num_batches_tracked": 0}
        out.append(Sample([g.randn([1, 3, 1, 1] if fused else [1, 3])], plain))
        out.append(Sample([g.randn([4, 3] + tail)], {**plain, "training": False}))
        out.append(Sample([g.randn([4, 3] + tail), g.randn([2]), g.randn([2])], {**plain, "weight": True, "bias": True}))
        out.append(Sample([g.offset([10, 3] + (tail or [4]))], plain, "offset"))
        return out

    return gen


row("nn", "batch_norm", "F.batch_norm (and the running statistics after)", batch_norm_torch, batch_norm_samples(False))
row("nn", "batch_norm_max_pool2d_relu", "F.relu(F.max_pool2d(F.batch_norm(x), 2))",
    lambda *a, **k: batch_norm_torch(*a, **k, fused_pool=True), batch_norm_samples(True))


def group_norm_torch(x, *wb, num_groups, affine, eps, fused_pool=False):
    y = F.group_norm(x, num_groups, wb[0] if affine else None, wb[1] if affine else None, eps)
    return F.relu(F.max_pool2d(y, 2)) if fused_pool else y


def group_norm_samples(fused):
    def gen(g):
        out = []
        shapes = [[2, 4, 4, 8], [1, 6, 2, 10], [2, 2, 3, 3]] if fused else [[2, 4], [3, 6, 5], [2, 4, 2, 3], [0, 4, 3],
                                                                          [1, 2, 1]]
        for xs in shapes:
            C = xs[1]
            for G in sorted({1, 2, C}):
                for affine in (True, False):
                    ins = [g.randn(xs, 2.0, 1.0)] + ([g.randn([C]), g.randn([C])] if affine else [])
                    out.append(Sample(ins, {"num_groups": G, "affine": affine, "eps": 1e-5},
                                      "kinked" if fused else "normal"))
        out.append(Sample([g.randn([2, 6, 3])], {"num_groups": 4, "affine": False, "eps": 1e-5}))
        out.append(Sample([g.randn([2, 4, 3]), g.randn([3]), g.randn([3])], {"num_groups": 2, "affine": True,
                                                                            "eps": 1e-5}))
        out.append(Sample([g.offset([2, 4, 10])], {"num_groups": 2, "affine": False, "eps": 1e-5}, "offset"))
        return out

    return gen


row("nn", "group_norm", "F.group_norm", group_norm_torch, group_norm_samples(False))
row("nn", "group_norm_max_pool2d_relu", "F.relu(F.max_pool2d(F.group_norm(x), 2))",
    lambda *a, **k: group_norm_torch(*a, **k, fused_pool=True), group_norm_samples(True))


def instance_norm_torch(x, *rest, running, affine, use_input_stats, momentum, eps):
    rest = list(rest)
    rm = rest.pop(0).clone() if running else None
    rv = rest.pop(0).clone() if running else None
    w = rest.pop(0) if affine else None
    b = rest.pop(0) if affine else None
    y = F.instance_norm(x, rm, rv, w, b, use_input_stats, momentum, eps)
    return (y, rm, rv) if running else y


def instance_norm_samples(g):
    out = []
    for xs in ([2, 3, 4], [2, 2, 3, 3], [1, 2, 5], [0, 3, 4], [2, 3, 1]):
        C = xs[1]
        for running, affine, use in ((True, True, True), (False, False, True), (True, False, False)):
            ins = [g.randn(xs, 2.0, 1.0)]
            if running:
                ins += [In(g.randn([C]) * 0.1, grad=False), In(g.uniform([C], 0.5, 1.5), grad=False)]
            if affine:
                ins += [g.randn([C]), g.randn([C])]
            out.append(Sample(ins, {"running": running, "affine": affine, "use_input_stats": use, "momentum": 0.1,
                                    "eps": 1e-5}))
    out.append(Sample([g.randn([2, 3, 4])], {"running": False, "affine": False, "use_input_stats": False,
                                             "momentum": 0.1, "eps": 1e-5}))
    return out


row("nn", "instance_norm", "F.instance_norm (and the running statistics after)", instance_norm_torch,
    instance_norm_samples)


def pair(v):
    return list(v) if isinstance(v, (list, tuple)) else v


def conv2d_torch(x, w, *b, stride, padding, dilation, groups, bias):
    return F.conv2d(x, w, b[0] if bias else None, stride, padding, dilation, groups)


CONV_CASES = [  # x shape, (OC, C/groups, KH, KW), stride, padding, dilation, groups, bias
    ([2, 3, 6, 7], [4, 3, 3, 3], 1, 0, 1, 1, True), ([1, 2, 5, 5], [3, 2, 3, 2], [2, 1], 1, 1, 1, False),
    ([2, 4, 6, 6], [4, 2, 3, 3], 2, [1, 2], 1, 2, True), ([1, 3, 7, 7], [3, 1, 3, 3], 1, 2, 2, 3, True),
    ([2, 2, 5, 6], [3, 2, 2, 4], 1, "same", [2, 1], 1, True), ([1, 2, 5, 5], [2, 2, 3, 3], 1, "valid", 1, 1, False),
    ([2, 3, 1, 1], [2, 3, 1, 1], 1, 0, 1, 1, True), ([3, 4, 4], [2, 4, 3, 3], 1, 1, 1, 1, True),
    ([0, 2, 4, 4], [3, 2, 3, 3], 1, 0, 1, 1, True), ([1, 2, 3, 3], [3, 2, 3, 3], 1, 0, 1, 1, True),
    ([1, 2, 4, 4], [0, 2, 3, 3], 1, 0, 1, 1, False)]
CONV_ERRORS = [([1, 3, 5, 5], [2, 2, 3, 3], 1, 0, 1, 1, True), ([1, 2, 2, 2], [2, 2, 3, 3], 1, 0, 1, 1, True),
               ([1, 2, 5, 5], [2, 2, 3, 3], 2, "same", 1, 1, True), ([1, 3, 5, 5], [2, 1, 3, 3], 1, 0, 1, 2, True),
               ([2, 5, 5], [2, 2, 3, 3], 1, 0, 1, 1, False), ([1, 2, 5, 5], [2, 2, 3, 3], 0, 0, 1, 1, False)]


def conv2d_samples(g):
    out = []
    for xs, ws, stride, padding, dilation, groups, bias in CONV_CASES + CONV_ERRORS:
        ins = [g.randn(xs), g.randn(ws) * 0.5] + ([g.randn([ws[0]])] if bias else [])
        out.append(Sample(ins, {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups,
                                "bias": bias}))
    out.append(Sample([viewed(g, [2, 3, 5, 6], "permute", g.randn), viewed(g, [4, 3, 3, 3], "narrow", g.randn)],
                      {"stride": 1, "padding": 1, "dilation": 1, "groups": 1, "bias": False}))
    out.append(Sample([g.special([1, 1, 4, 4]), g.randn([1, 1, 2, 2])],
                      {"stride": 1, "padding": 0, "dilation": 1, "groups": 1, "bias": False}, "special"))
    return out


row("nn", "conv2d", "F.conv2d", conv2d_torch, conv2d_samples)

POOL_CASES = [([2, 3, 6, 6], 2, None, 0, 1, False), ([1, 2, 7, 5], [3, 2], [2, 1], [1, 0], 1, False),
              ([1, 2, 7, 7], 3, 2, 1, 1, True), ([2, 6, 6], 2, 2, 0, 1, True), ([1, 1, 8, 8], 3, 2, 1, 2, False),
              ([1, 2, 5, 5], 5, None, 0, 1, False), ([0, 2, 4, 4], 2, None, 0, 1, False), ([1, 1, 5, 4], 2, 3, 1, 1, True)]
POOL_ERRORS = [([1, 1, 4, 4], 3, None, 2, 1, False), ([1, 1, 2, 2], 3, None, 0, 1, False),
               ([1, 4, 4], 0, None, 0, 1, False), ([4, 4], 2, None, 0, 1, False)]


def max_pool_samples(g):
    out = []
    for xs, k, stride, padding, dilation, ceil in POOL_CASES + POOL_ERRORS:
        out.append(Sample([g.distinct(xs)[0]], {"kernel_size": k, "stride": stride, "padding": padding,
                                                "dilation": dilation, "ceil_mode": ceil}, "distinct"))
    out.append(Sample([viewed(g, [1, 2, 6, 6], "T", lambda s: g.distinct(s)[0])],
                      {"kernel_size": 2, "stride": None, "padding": 0, "dilation": 1, "ceil_mode": False}, "distinct"))
    out.append(Sample([g.special([1, 2, 4, 6])], {"kernel_size": 2, "stride": None, "padding": 0, "dilation": 1,
                                                  "ceil_mode": False}, "special"))
    out.append(Sample([g.ties([1, 2, 4, 6])], {"kernel_size": 2, "stride": None, "padding": 0, "dilation": 1,
                                               "ceil_mode": False}, "ties"))
    return out


def max_pool_torch(x, kernel_size, stride, padding, dilation, ceil_mode, indices=False):
    return F.max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices=indices)


row("nn", "max_pool2d", "F.max_pool2d", max_pool_torch, max_pool_samples)
row("nn", "max_pool2d_with_indices", "F.max_pool2d(return_indices=True)",
    lambda *a, **k: max_pool_torch(*a, **k, indices=True), max_pool_samples)


def avg_pool_samples(g):
    out = []
    for xs, k, stride, padding, dilation, ceil in POOL_CASES + POOL_ERRORS[:2]:
        if dilation != 1:
            continue
        for cip, div in ((True, None), (False, None), (True, 3)):
            out.append(Sample([g.randn(xs)], {"kernel_size": k, "stride": stride, "padding": padding, "ceil_mode": ceil,
                                              "count_include_pad": cip, "divisor_override": div}))
    out.append(Sample([viewed(g, [1, 2, 6, 6], "T", g.randn)], {"kernel_size": 2, "stride": None, "padding": 0,
                                                               "ceil_mode": False, "count_include_pad": True,
                                                               "divisor_override": None}))
    return out


row("nn", "avg_pool2d", "F.avg_pool2d",
    lambda x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override:
    F.avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override), avg_pool_samples)
row("nn", "adaptive_avg_pool2d", "F.adaptive_avg_pool2d", lambda x, output_size: F.adaptive_avg_pool2d(x, output_size),
    lambda g: [Sample([g.randn(xs)], {"output_size": o}) for xs, o in
               (([2, 3, 6, 6], 2), ([1, 2, 7, 5], [3, 2]), ([2, 5, 4], 1), ([1, 1, 3, 3], 5), ([1, 2, 4, 4], [4, 4]),
                ([0, 2, 4, 4], 2), ([1, 2, 4, 4], 0))]
    + [Sample([viewed(g, [1, 2, 6, 6], "T", g.randn)], {"output_size": 3})])


def conv1d_torch(x, w, *b, stride, padding, dilation, groups, bias):
    return F.conv1d(x, w, b[0] if bias else None, stride, padding, dilation, groups)


CONV1D_CASES = [  # x shape, (OC, C/groups, K), stride, padding, dilation, groups, bias
    ([2, 3, 9], [4, 3, 3], 1, 0, 1, 1, True), ([1, 2, 8], [3, 2, 2], 2, 1, 1, 1, False), ([2, 4, 7], [4, 2, 3], 2, 2, 1, 2, True),
    ([1, 3, 9], [3, 1, 3], 1, 2, 2, 3, True), ([2, 2, 6], [3, 2, 4], 1, "same", 2, 1, True), ([1, 2, 5], [2, 2, 3], 1, "valid", 1, 1, False),
    ([3, 5], [2, 3, 3], 1, 1, 1, 1, True), ([0, 2, 4], [3, 2, 3], 1, 0, 1, 1, True), ([2, 3, 1], [2, 3, 1], 1, 0, 1, 1, True),
    # torch raises:
    ([1, 3, 5], [2, 2, 3], 1, 0, 1, 1, True), ([1, 2, 2], [2, 2, 3], 1, 0, 1, 1, True), ([1, 2, 5], [2, 2, 3], 2, "same", 1, 1, True),
    ([1, 2, 5, 5], [2, 2, 3], 1, 0, 1, 1, False), ([1, 2, 5], [2, 2, 3, 3], 1, 0, 1, 1, False)]


def conv1d_samples(g):
    out = []
    for xs, ws, stride, padding, dilation, groups, bias in CONV1D_CASES:
        ins = [g.randn(xs), g.randn(ws) * 0.5] + ([g.randn([ws[0]])] if bias else [])
        out.append(Sample(ins, {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups, "bias": bias}))
    out.append(Sample([viewed(g, [2, 3, 6], "permute", g.randn), viewed(g, [4, 3, 3], "narrow", g.randn)],
                      {"stride": 1, "padding": 1, "dilation": 1, "groups": 1, "bias": False}))
    out.append(Sample([g.special([1, 1, 8]), g.randn([1, 1, 2])],
                      {"stride": 1, "padding": 0, "dilation": 1, "groups": 1, "bias": False}, "special"))
    return out


row("nn", "conv1d", "F.conv1d", conv1d_torch, conv1d_samples)


def conv_transpose2d_torch(x, w, *b, stride, padding, output_padding, groups, dilation, bias):
    return F.conv_transpose2d(x, w, b[0] if bias else None, stride, padding, output_padding, groups, dilation)


CONVT_CASES = [  # x shape, (C, OC/groups, KH, KW), stride, padding, output_padding, groups, dilation, bias
    ([2, 3, 4, 5], [3, 4, 3, 3], 1, 0, 0, 1, 1, True), ([1, 2, 3, 3], [2, 3, 2, 2], 2, 0, 0, 1, 1, False),
    ([2, 4, 3, 4], [4, 2, 3, 3], 2, 1, 1, 2, 1, True), ([1, 2, 4, 4], [2, 2, 3, 2], [2, 1], [1, 0], [1, 0], 1, 1, True),
    ([1, 3, 3, 3], [3, 1, 3, 3], 1, 1, 0, 3, 2, True), ([2, 2, 3, 3], [2, 3, 3, 3], 1, 2, 1, 1, 2, True),
    ([3, 2, 2], [3, 2, 2, 2], 2, 0, 0, 1, 1, True), ([0, 2, 3, 3], [2, 3, 3, 3], 1, 0, 0, 1, 1, True),
    ([2, 3, 1, 1], [3, 2, 1, 1], 1, 0, 0, 1, 1, True), ([1, 2, 6, 6], [2, 3, 1, 1], 1, 0, 0, 1, 1, True),
    ([1, 2, 6, 6], [2, 3, 1, 1], 2, 0, 1, 1, 1, False),
    # torch raises:
    ([1, 3, 3, 3], [2, 2, 3, 3], 1, 0, 0, 1, 1, True), ([1, 2, 3, 3], [2, 2, 3, 3], 1, 0, 1, 1, 1, True),
    ([1, 2, 2, 2], [2, 2, 3, 3], 1, 3, 0, 1, 1, True), ([1, 3, 3, 3], [3, 2, 3, 3], 1, 0, 0, 2, 1, True),
    ([2, 2], [2, 2, 3, 3], 1, 0, 0, 1, 1, True)]


def conv_transpose2d_samples(g):
    out = []
    for xs, ws, stride, padding, op, groups, dilation, bias in CONVT_CASES:
        oc = ws[1] * groups
        ins = [g.randn(xs), g.randn(ws) * 0.5] + ([g.randn([oc])] if bias else [])
        out.append(Sample(ins, {"stride": stride, "padding": padding, "output_padding": op, "groups": groups,
                                "dilation": dilation, "bias": bias}))
    out.append(Sample([viewed(g, [2, 3, 4, 5], "permute", g.randn), viewed(g, [3, 2, 3, 3], "narrow", g.randn)],
                      {"stride": 2, "padding": 1, "output_padding": 1, "groups": 1, "dilation": 1, "bias": False}))
    out.append(Sample([g.special([1, 1, 4, 4]), g.randn([1, 1, 2, 2])],
                      {"stride": 2, "padding": 0, "output_padding": 0, "groups": 1, "dilation": 1, "bias": False}, "special"))
    return out


row("nn", "conv_transpose2d", "F.conv_transpose2d", conv_transpose2d_torch, conv_transpose2d_samples)

POOL1D_CASES = [([2, 3, 8], 2, None, 0, 1, False), ([1, 2, 9], 3, 2, 1, 1, True), ([3, 7], 2, 2, 0, 1, True),
                ([1, 1, 10], 3, 2, 1, 2, False), ([1, 2, 5], 5, None, 0, 1, False), ([0, 2, 4], 2, None, 0, 1, False),
                ([1, 1, 5], 2, 3, 1, 1, True)]
POOL1D_ERRORS = [([1, 1, 4], 3, None, 2, 1, False), ([1, 1, 2], 3, None, 0, 1, False), ([1, 4], 0, None, 0, 1, False),
                 ([4], 2, None, 0, 1, False), ([1, 2, 3, 4], 2, None, 0, 1, False)]


def max_pool1d_samples(g):
    out = []
    for xs, k, stride, padding, dilation, ceil in POOL1D_CASES + POOL1D_ERRORS:
        out.append(Sample([g.distinct(xs)[0]], {"kernel_size": k, "stride": stride, "padding": padding,
                                                "dilation": dilation, "ceil_mode": ceil}, "distinct"))
    out.append(Sample([viewed(g, [2, 3, 6], "T", lambda s: g.distinct(s)[0])],
                      {"kernel_size": 2, "stride": None, "padding": 0, "dilation": 1, "ceil_mode": False}, "distinct"))
    out.append(Sample([g.special([1, 2, 12])], {"kernel_size": 3, "stride": None, "padding": 0, "dilation": 1,
                                                "ceil_mode": False}, "special"))
    out.append(Sample([g.ties([1, 2, 12])], {"kernel_size": 2, "stride": None, "padding": 0, "dilation": 1,
                                             "ceil_mode": False}, "ties"))
    return out


row("nn", "max_pool1d", "F.max_pool1d",
    lambda x, kernel_size, stride, padding, dilation, ceil_mode: F.max_pool1d(x, kernel_size, stride, padding, dilation,
                                                                              ceil_mode), max_pool1d_samples)
row("nn", "max_pool1d_with_indices", "F.max_pool1d(return_indices=True)",
    lambda x, kernel_size, stride, padding, dilation, ceil_mode:
    F.max_pool1d(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True), max_pool1d_samples)


def avg_pool1d_samples(g):
    out = []
    for xs, k, stride, padding, dilation, ceil in POOL1D_CASES + POOL1D_ERRORS:
        if dilation != 1:
            continue
        for cip in (True, False):
            out.append(Sample([g.randn(xs)], {"kernel_size": k, "stride": stride, "padding": padding, "ceil_mode": ceil,
                                              "count_include_pad": cip}))
    out.append(Sample([viewed(g, [2, 3, 6], "T", g.randn)], {"kernel_size": 2, "stride": None, "padding": 0,
                                                            "ceil_mode": False, "count_include_pad": True}))
    return out


row("nn", "avg_pool1d", "F.avg_pool1d",
    lambda x, kernel_size, stride, padding, ceil_mode, count_include_pad:
    F.avg_pool1d(x, kernel_size, stride, padding, ceil_mode, count_include_pad), avg_pool1d_samples)


def adaptive_samples(two_d, distinct):
    def gen(g):
        make = (lambda s: g.distinct(s)[0]) if distinct else g.randn
        kind = "distinct" if distinct else "normal"
        cases = ((([2, 3, 6, 6], 2), ([1, 2, 7, 5], [3, 2]), ([2, 5, 4], 1), ([1, 1, 3, 3], 5), ([1, 2, 4, 4], [4, 4]),
                  ([0, 2, 4, 4], 2), ([1, 2, 4, 4], 0), ([1, 0, 4, 4], 2), ([4, 4], 2)) if two_d else
                 (([2, 3, 6], 2), ([1, 2, 7], 3), ([5, 4], 1), ([1, 1, 3], 5), ([1, 2, 4], 4), ([0, 2, 4], 2),
                  ([1, 2, 4], 0), ([1, 0, 4], 2), ([4], 2), ([1, 2, 3, 4], 2)))
        out = [Sample([make(xs)], {"output_size": o}, kind) for xs, o in cases]
        out.append(Sample([viewed(g, [1, 2, 6, 6] if two_d else [2, 3, 6], "T", make)], {"output_size": 3}, kind))
        if distinct:
            out.append(Sample([g.special([1, 2, 4, 6] if two_d else [1, 2, 12])], {"output_size": 2}, "special"))
            out.append(Sample([g.ties([1, 2, 4, 6] if two_d else [1, 2, 12])], {"output_size": 3}, "ties"))
        return out

    return gen


row("nn", "adaptive_avg_pool1d", "F.adaptive_avg_pool1d", lambda x, output_size: F.adaptive_avg_pool1d(x, output_size),
    adaptive_samples(False, False))
row("nn", "adaptive_max_pool1d", "F.adaptive_max_pool1d", lambda x, output_size: F.adaptive_max_pool1d(x, output_size),
    adaptive_samples(False, True))
row("nn", "adaptive_max_pool2d", "F.adaptive_max_pool2d", lambda x, output_size: F.adaptive_max_pool2d(x, output_size),
    adaptive_samples(True, True))
row("nn", "adaptive_max_pool2d_with_indices", "F.adaptive_max_pool2d(return_indices=True)",
    lambda x, output_size: F.adaptive_max_pool2d(x, output_size, return_indices=True), adaptive_samples(True, True))


def interpolate_torch(x, size, scale_factor, mode, align_corners, recompute_scale_factor):
    return F.interpolate(x, size, scale_factor, mode, align_corners, recompute_scale_factor)


INTERP_CASES = [  # shape, size, scale_factor, mode, align_corners, recompute
    ([2, 3, 5], [7], None, "nearest", None, None), ([1, 2, 5], None, [1.5], "nearest", None, None),
    ([1, 2, 5, 4], [3, 7], None, "nearest", None, None), ([1, 2, 5, 4], None, [2.0, 0.5], "nearest", None, None),
    ([1, 2, 5, 4], [10, 8], None, "nearest", None, None), ([1, 1, 3, 3], None, [1.7], "nearest", None, True),
    ([1, 2, 2, 3, 4], [3, 5, 2], None, "nearest", None, None), ([2, 2, 6], [6], None, "nearest", None, None),
    ([2, 3, 5], [8], None, "linear", False, None), ([2, 3, 5], [8], None, "linear", True, None),
    ([1, 2, 6], None, [0.5], "linear", False, None), ([1, 2, 6], [1], None, "linear", True, None),
    ([1, 2, 5, 4], [7, 9], None, "bilinear", False, None), ([1, 2, 5, 4], [7, 9], None, "bilinear", True, None),
    ([2, 1, 4, 4], None, [2.0], "bilinear", False, None), ([2, 1, 6, 5], None, [0.6, 1.3], "bilinear", False, None),
    ([1, 1, 6, 5], None, [1.7], "bilinear", False, True), ([1, 2, 3, 3], [3, 3], None, "bilinear", False, None),
    ([0, 2, 3, 3], [5], None, "bilinear", False, None), ([1, 2, 5, 4], [1], None, "bilinear", True, None),
    ([1, 1, 1, 1], [3, 2], None, "bilinear", False, None),
    # torch raises:
    ([1, 2, 5, 4], [3], None, "nearest", True, None), ([1, 2, 5], [3], None, "bilinear", False, None),
    ([1, 2, 5, 4], [3], None, "linear", False, None), ([1, 2, 5, 4], [3], [2.0], "nearest", None, None),
    ([1, 2, 5, 4], None, None, "nearest", None, None), ([1, 2, 5, 4], [0], None, "nearest", None, None),
    ([1, 2, 5, 4], [3, 3, 3], None, "nearest", None, None), ([1, 0, 3, 3], [5], None, "bilinear", False, None),
    ([1, 2, 0, 3], [5], None, "bilinear", False, None), ([2, 3], [4], None, "nearest", None, None),
    ([1, 2, 5, 4], None, [0.1], "bilinear", False, None)]


def interpolate_samples(g):
    out = []
    for shape, size, sf, mode, ac, rsf in INTERP_CASES:
        # One value for several spatial dims as a number (torch takes no shorter list).
        if len(shape) > 3 and size is not None and len(size) == 1:
            size = size[0]
        if len(shape) > 3 and sf is not None and len(sf) == 1:
            sf = sf[0]
        out.append(Sample([g.randn(shape)], {"size": size, "scale_factor": sf, "mode": mode, "align_corners": ac,
                                             "recompute_scale_factor": rsf}))
    args = {"size": [5, 7], "scale_factor": None, "mode": "bilinear", "align_corners": False, "recompute_scale_factor": None}
    out.append(Sample([viewed(g, [1, 2, 4, 6], "T", g.randn)], args))
    out.append(Sample([g.special([1, 2, 4, 6])], args, "special"))
    out.append(Sample([g.special([1, 2, 4, 6])], {**args, "mode": "nearest", "align_corners": None}, "special"))
    return out


row("nn", "interpolate", "F.interpolate", interpolate_torch, interpolate_samples)


def kl_div_samples(g):
    out = []
    for si, st in (([4, 5], [4, 5]), ([3, 2, 2], [3, 2, 2]), ([], []), ([0, 3], [0, 3]), ([4, 5], [5]), ([5], [4, 5]),
                   ([4, 5], [3, 5])):
        for reduction in ("mean", "sum", "none", "batchmean"):
            for log_target in (False, True):
                inp = F.log_softmax(g.randn(si), -1).detach() if si else g.randn(si)
                t = g.uniform(st, 0.05, 1.0)
                out.append(Sample([inp, t.log() if log_target else t], {"reduction": reduction, "log_target": log_target}))
    t = g.uniform([3, 4], 0.05, 1.0)
    t[0, 1] = 0.0
    out.append(Sample([g.randn([3, 4]), t], {"reduction": "sum", "log_target": False}, "special"))
    out.append(Sample([viewed(g, [3, 4], "T", g.randn), viewed(g, [3, 4], "expand", lambda s: g.uniform(s, 0.1, 1.0))],
                      {"reduction": "batchmean", "log_target": False}))
    return out


row("nn", "kl_div", "F.kl_div", lambda i, t, reduction, log_target: F.kl_div(i, t, reduction=reduction,
                                                                              log_target=log_target), kl_div_samples)

# Losses: input, target, then the optional weight and pos_weight.
REDUCTIONS = ("mean", "sum", "none")


def loss_torch(fn):
    def f(inp, target, *rest, weight=False, pos_weight=False, **args):
        rest = list(rest)
        kw = dict(args)
        if weight:
            kw["weight"] = rest.pop(0)
        if pos_weight:
            kw["pos_weight"] = rest.pop(0)
        return fn(inp, target, **kw)

    return f


def class_loss_samples(log_probs):
    def gen(g):
        out = []

        def inp(s):
            x = g.randn(s, 2.0)
            return F.log_softmax(x, 1 if len(s) > 1 else 0).detach() if log_probs else x

        for xs, ts in (([6, 5], [6]), ([3, 4, 2, 2], [3, 2, 2]), ([5], []), ([4, 1], [4]), ([0, 3], [0])):
            C = xs[1] if len(xs) > 1 else xs[0]
            for reduction in REDUCTIONS:
                for weight, ignore in ((False, -100), (True, -100), (True, 1)):
                    t = g.ints(ts, 0, C)
                    if ts and t.numel() > 2:
                        t.view(-1)[::3] = ignore
                    ins = [inp(xs), In(t, grad=False)] + ([In(g.uniform([C], 0.5, 1.5), grad=False)] if weight else [])
                    args = {"reduction": reduction, "weight": weight, "ignore_index": ignore}
                    if not log_probs:
                        args["label_smoothing"] = 0.0 if weight else 0.2
                    out.append(Sample(ins, args))
        # Every target ignored (the mean is nan in torch); a target out of range; a bad weight.
        base = {"reduction": "mean", "weight": False, "ignore_index": -100}
        if not log_probs:
            base["label_smoothing"] = 0.0
        out.append(Sample([inp([3, 4]), In(torch.full((3,), -100), grad=False)], base))
        out.append(Sample([inp([3, 4]), In(torch.tensor([0, 4, 1]), grad=False)], base))
        out.append(Sample([inp([3, 4]), In(torch.tensor([0, 1, 1]), grad=False), In(torch.ones(3), grad=False)],
                          {**base, "weight": True}))
        out.append(Sample([inp([3, 4]), In(torch.tensor([0, 1]), grad=False)], base))
        if not log_probs:  # probability targets, large logits
            for xs in ([5, 4], [3, 4, 2], [4]):
                t = F.softmax(g.randn(xs), 1 if len(xs) > 1 else 0)
                for reduction in REDUCTIONS:
                    out.append(Sample([g.randn(xs, 2.0), t], {**base, "reduction": reduction, "label_smoothing": 0.1}))
            out.append(Sample([g.randn([4, 6], 1e4), In(g.ints([4], 0, 6), grad=False)], base, "offset"))
        return out

    return gen


row("nn", "nll_loss", "F.nll_loss", loss_torch(F.nll_loss), class_loss_samples(True))
row("nn", "cross_entropy", "F.cross_entropy", loss_torch(F.cross_entropy), class_loss_samples(False))


def elementwise_loss_samples(make_input, make_target, extra=({},), pos_weight=False, weight=False):
    def gen(g):
        out = []
        for s in ([4, 5], [3, 2, 2], [], [0, 3]):
            for reduction in REDUCTIONS:
                for e in extra:
                    ins = [make_input(g, s), make_target(g, s)]
                    flags = {}
                    if weight:
                        ins.append(In(g.uniform(s[-1:] if s else [], 0.5, 1.5), grad=False))
                        flags["weight"] = True
                    if pos_weight:
                        ins.append(In(g.uniform(s[-1:] if s else [], 0.5, 2.0), grad=False))
                        flags["pos_weight"] = True
                    out.append(Sample(ins, {"reduction": reduction, **flags, **e}))
        out.append(Sample([make_input(g, [4, 5]), make_target(g, [5])], {"reduction": "mean", **extra[0]}))
        out.append(Sample([make_input(g, [4, 5]), make_target(g, [3, 5])], {"reduction": "mean", **extra[0]}))
        return out

    return gen


def prob(g, s):
    return g.uniform(s, 0.01, 0.99)


row("nn", "binary_cross_entropy", "F.binary_cross_entropy", loss_torch(F.binary_cross_entropy),
    elementwise_loss_samples(prob, prob, weight=True))
row("nn", "binary_cross_entropy_with_logits", "F.binary_cross_entropy_with_logits",
    loss_torch(F.binary_cross_entropy_with_logits),
    elementwise_loss_samples(lambda g, s: g.randn(s, 3.0), prob, weight=True, pos_weight=True))
row("nn", "l1_loss", "F.l1_loss", loss_torch(F.l1_loss),
    elementwise_loss_samples(lambda g, s: g.distinct(s)[0], lambda g, s: g.distinct(s)[0] + 1 / 32))
row("nn", "mse_loss", "F.mse_loss", loss_torch(F.mse_loss),
    elementwise_loss_samples(lambda g, s: g.randn(s, 2.0), lambda g, s: g.randn(s, 2.0)))
row("nn", "smooth_l1_loss", "F.smooth_l1_loss", loss_torch(F.smooth_l1_loss),
    elementwise_loss_samples(lambda g, s: g.distinct(s)[0], lambda g, s: g.distinct(s)[0] + 1 / 32,
                             ({"beta": 0.5}, {"beta": 1.0}, {"beta": 0.0})))
row("nn", "huber_loss", "F.huber_loss", loss_torch(F.huber_loss),
    elementwise_loss_samples(lambda g, s: g.distinct(s)[0], lambda g, s: g.distinct(s)[0] + 1 / 32,
                             ({"delta": 1.5}, {"delta": 1.0})))
row("nn", "count_correct", "(logits.argmax(1) == targets).sum()", lambda x, t: (x.argmax(1) == t).sum(),
    lambda g: [Sample([In(g.ties(s), grad=False), In(g.ints(s[:1], 0, s[1]), grad=False)], {}, "ties")
               for s in ([6, 4], [0, 3], [5, 1])])


def attention_torch(q, k, v, *m, mask, dropout_p, is_causal, scale):
    # torch 1.13 has no F.scaled_dot_product_attention: torch 2's definition in torch ops.
    s = q @ k.transpose(-2, -1) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if is_causal:
        L, S = q.shape[-2], k.shape[-2]
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool).tril().logical_not(), -math.inf)
    if mask:
        s = s.masked_fill(m[0].logical_not(), -math.inf) if m[0].dtype == torch.bool else s + m[0]
    return torch.softmax(s, -1) @ v


def attention_samples(g):
    out = []
    base = {"mask": False, "dropout_p": 0.0, "is_causal": False, "scale": None}
    for qs, ks, vs in (([2, 3, 4], [2, 5, 4], [2, 5, 6]), ([2, 2, 3, 4], [2, 2, 3, 4], [2, 2, 3, 4]),
                       ([3, 4], [3, 4], [3, 2]), ([2, 1, 4], [2, 1, 4], [2, 1, 4]), ([0, 3, 4], [0, 3, 4], [0, 3, 4])):
        out.append(Sample([g.randn(qs), g.randn(ks), g.randn(vs)], base))
        out.append(Sample([g.randn(qs), g.randn(ks), g.randn(vs)], {**base, "scale": 0.3}))
        if qs[-2] == ks[-2]:
            out.append(Sample([g.randn(qs), g.randn(ks), g.randn(vs)], {**base, "is_causal": True}))
    L, S = 3, 5
    for mshape in ([L, S], [2, L, S], [1, S]):
        out.append(Sample([g.randn([2, L, 4]), g.randn([2, S, 4]), g.randn([2, S, 3]), g.randn(mshape)],
                          {**base, "mask": True}))
        m = g.ints(mshape, 0, 2, torch.bool)
        m[..., 0] = True  # every row may attend somewhere
        out.append(Sample([g.randn([2, L, 4]), g.randn([2, S, 4]), g.randn([2, S, 3]), In(m, grad=False)],
                          {**base, "mask": True}))
    out.append(Sample([viewed(g, [2, 3, 4], "T", g.randn), viewed(g, [2, 5, 4], "narrow", g.randn),
                       viewed(g, [2, 5, 3], "expand", g.randn)], base))
    out.append(Sample([g.randn([2, 3, 4]), g.randn([2, 5, 3]), g.randn([2, 5, 3])], base))
    out.append(Sample([g.randn([2, 3, 4]), g.randn([2, 5, 4]), g.randn([2, 4, 3])], base))
    out.append(Sample([g.randn([2, 3, 4]), g.randn([2, 5, 4]), g.randn([2, 5, 3]), In(g.ints([3, 4], 0, 2, torch.bool),
                                                                                        grad=False)],
                      {**base, "mask": True}))
    return out


row("nn", "scaled_dot_product_attention", "softmax(q k^T * scale + mask) v (torch 2's F.scaled_dot_product_attention)",
    attention_torch, attention_samples)


def lstm_torch(x, h0, c0, w_ih, w_hh, *rest, bias, lengths_given):
    """One LSTM layer in torch ops (gates i, f, g, o): outputs [N, T, H] and the final cell states."""
    rest = list(rest)
    b_ih = rest.pop(0) if bias else 0
    b_hh = rest.pop(0) if bias else 0
    lengths = rest.pop(0) if lengths_given else None
    N, T, _ = x.shape
    h, c, outs = h0, c0, []
    for t in range(T):
        gates = x[:, t] @ w_ih.t() + b_ih + h @ w_hh.t() + b_hh
        i, f, gg, o = gates.chunk(4, 1)
        c_new = f.sigmoid() * c + i.sigmoid() * gg.tanh()
        h_new = o.sigmoid() * c_new.tanh()
        live = (lengths > t).unsqueeze(1) if lengths is not None else None
        outs.append(h_new if live is None else torch.where(live, h_new, torch.zeros_like(h_new)))
        h = h_new if live is None else torch.where(live, h_new, h)
        c = c_new if live is None else torch.where(live, c_new, c)
    return torch.stack(outs, 1) if T else x.new_zeros(N, 0, h0.shape[1]), c


def gru_torch(x, h0, w_ih, w_hh, *rest, bias, lengths_given):
    rest = list(rest)
    b_ih = rest.pop(0) if bias else torch.zeros(w_ih.shape[0], dtype=x.dtype)
    b_hh = rest.pop(0) if bias else torch.zeros(w_ih.shape[0], dtype=x.dtype)
    lengths = rest.pop(0) if lengths_given else None
    N, T, _ = x.shape
    h, outs = h0, []
    for t in range(T):
        gi = x[:, t] @ w_ih.t() + b_ih
        gh = h @ w_hh.t() + b_hh
        ir, iz, inn = gi.chunk(3, 1)
        hr, hz, hn = gh.chunk(3, 1)
        r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
        n = (inn + r * hn).tanh()
        h_new = (1 - z) * n + z * h
        live = (lengths > t).unsqueeze(1) if lengths is not None else None
        outs.append(h_new if live is None else torch.where(live, h_new, torch.zeros_like(h_new)))
        h = h_new if live is None else torch.where(live, h_new, h)
    return torch.stack(outs, 1) if T else x.new_zeros(N, 0, h0.shape[1])


def ln_lstm_torch(x, h0, c0, w_ih, w_hh, ln_ih_w, *rest, ln_bias, lengths_given, eps):
    rest = list(rest)
    ln_ih_b = rest.pop(0) if ln_bias else None
    ln_hh_w = rest.pop(0)
    ln_c_w = rest.pop(0)
    ln_c_b = rest.pop(0) if ln_bias else None
    lengths = rest.pop(0) if lengths_given else None
    N, T, _ = x.shape
    H = h0.shape[1]
    h, c, outs = h0, c0, []
    for t in range(T):
        gates = (F.layer_norm(x[:, t] @ w_ih.t(), [4 * H], ln_ih_w, ln_ih_b, eps)
                 + F.layer_norm(h @ w_hh.t(), [4 * H], ln_hh_w, None, eps))
        i, f, gg, o = gates.chunk(4, 1)
        c_new = f.sigmoid() * c + i.sigmoid() * gg.tanh()
        h_new = o.sigmoid() * F.layer_norm(c_new, [H], ln_c_w, ln_c_b, eps).tanh()
        live = (lengths > t).unsqueeze(1) if lengths is not None else None
        outs.append(h_new if live is None else torch.where(live, h_new, torch.zeros_like(h_new)))
        h = h_new if live is None else torch.where(live, h_new, h)
        c = c_new if live is None else torch.where(live, c_new, c)
    return torch.stack(outs, 1) if T else x.new_zeros(N, 0, H), c


def rnn_samples(kind):
    gates = {"lstm": 4, "gru": 3, "ln_lstm": 4}[kind]

    def gen(g):
        out = []
        for N, T, I, H in ((2, 3, 4, 3), (1, 1, 2, 2), (3, 4, 1, 2)):
            for bias, lengths in ((True, False), (False, False), (True, True)):
                ins = [g.randn([N, T, I]), g.randn([N, H]) * 0.5]
                if kind != "gru":
                    ins.append(g.randn([N, H]) * 0.5)
                ins += [g.randn([gates * H, I]) * 0.5, g.randn([gates * H, H]) * 0.5]
                if kind == "ln_lstm":
                    ins.append(g.randn([4 * H]) * 0.5 + 1)
                    if bias:
                        ins.append(g.randn([4 * H]) * 0.5)
                    ins += [g.randn([4 * H]) * 0.5 + 1, g.randn([H]) * 0.5 + 1]
                    if bias:
                        ins.append(g.randn([H]) * 0.5)
                elif bias:
                    ins += [g.randn([gates * H]) * 0.5, g.randn([gates * H]) * 0.5]
                if lengths:
                    ins.append(In(torch.tensor([T] + [max(1, T - 1 - k) for k in range(N - 1)]), grad=False))
                args = {"lengths_given": lengths}
                if kind == "ln_lstm":
                    args.update(ln_bias=bias, eps=1e-5)
                else:
                    args["bias"] = bias
                out.append(Sample(ins, args))
        return out

    return gen


row("nn", "lstm_layer", "one torch.nn.LSTM layer, batch first (in torch ops)", lstm_torch, rnn_samples("lstm"))
row("nn", "gru_layer", "one torch.nn.GRU layer, batch first (in torch ops)", gru_torch, rnn_samples("gru"))
row("nn", "layer_norm_lstm_layer", "normnet's LayerNorm LSTM layer (in torch ops)", ln_lstm_torch,
    rnn_samples("ln_lstm"))
row("nn", "last_step", "output[n, lengths[n] - 1]",
    lambda o, *l, lengths_given: o[torch.arange(o.shape[0]), (l[0] - 1) if lengths_given else o.shape[1] - 1],
    lambda g: [Sample([g.randn([3, 4, 2]), In(torch.tensor([4, 1, 2]), grad=False)], {"lengths_given": True}),
               Sample([g.randn([3, 4, 2])], {"lengths_given": False}),
               Sample([g.randn([1, 1, 3])], {"lengths_given": False}),
               Sample([g.randn([2, 3, 2]), In(torch.tensor([4, 1]), grad=False)], {"lengths_given": True})])


def feature_dropout_samples(shapes):
    def gen(g):
        out = [Sample([g.randn(s)], {"p": p, "training": t}) for s in shapes
               for p, t in ((0.0, True), (0.5, False), (1.0, True))]
        out.append(Sample([g.special([2, 13, 1])], {"p": 1.0, "training": True}, "special"))
        out.append(Sample([g.randn(shapes[0])], {"p": 1.5, "training": True}))
        out.append(Sample([g.randn(shapes[0])], {"p": -0.1, "training": False}))
        return out

    return gen


# The channel dropouts where they are deterministic, with torch's rules for the input's rank.
row("nn", "feature_dropout", "torch.feature_dropout (p 0 or 1, or not training)",
    lambda x, p, training: torch.feature_dropout(x, p, training),
    feature_dropout_samples([[2, 3, 4], [2, 3], [0, 3, 2], [4], []]))
row("nn", "dropout1d", "F.dropout1d (p 0 or 1, or not training)", lambda x, p, training: F.dropout1d(x, p, training),
    feature_dropout_samples([[2, 3, 4], [3, 4], [0, 3, 2], [2, 3, 4, 5], [4]]))
row("nn", "dropout2d", "F.dropout2d (p 0 or 1, or not training)", lambda x, p, training: F.dropout2d(x, p, training),
    feature_dropout_samples([[2, 3, 4, 5], [2, 3, 4], [0, 3, 2, 2], [2, 3], [4]]))
row("nn", "dropout3d", "F.dropout3d (p 0 or 1, or not training)", lambda x, p, training: F.dropout3d(x, p, training),
    feature_dropout_samples([[2, 3, 2, 2, 2], [3, 2, 2, 2], [4], [], [2, 3]]))
# dropout: only where it is deterministic (p 0 or 1, or not training); random masks are not torch's.
row("nn", "dropout", "F.dropout (p 0 or 1, or not training)", lambda x, p, training: F.dropout(x, p, training),
    lambda g: [Sample([g.randn(s)], {"p": p, "training": t}) for s in ([3, 4], [0], [])
               for p, t in ((0.0, True), (0.5, False), (1.0, True))]
    + [Sample([g.randn([3])], {"p": 1.5, "training": True}), Sample([g.randn([3])], {"p": -0.1, "training": True})])


# ---------------------------------------------------------------------------------------------
# Running torch and writing the file


def kind_of(t):
    return {torch.float32: "f32", torch.float64: "f32", torch.int64: "i64", torch.bool: "bool"}[t.dtype]


class Blobs:
    """The flat f32, i64 and bool arrays every stored value goes into."""

    def __init__(self):
        self.parts = {"f32": [], "i64": [], "bool": []}
        self.size = {"f32": 0, "i64": 0, "bool": 0}
        self.inputs = {}  # id of an input's base -> its offset: samples that share an input store it once

    def put_input(self, t):
        if id(t) not in self.inputs:
            self.inputs[id(t)] = (t, self.put(t))  # (t kept alive, so its id stays unique)
        return self.inputs[id(t)][1]

    def put(self, t):
        k = kind_of(t)
        arr = t.detach().reshape(-1).numpy().astype({"f32": np.float32, "i64": np.int64, "bool": np.bool_}[k])
        at = self.size[k]
        self.parts[k].append(arr)
        self.size[k] += arr.size
        return at

    def arrays(self):
        dt = {"f32": np.float32, "i64": np.int64, "bool": np.bool_}
        return {k: np.concatenate(v) if v else np.zeros(0, dt[k]) for k, v in self.parts.items()}


def violates(y32, y64):
    """True where float32 y32 and the float64 answer (rounded to float32) differ beyond TOL."""
    a, r = y32.double(), y64.float().double()
    both_nan = a.isnan() & r.isnan()
    same_inf = a.isinf() & (a == r)
    close = (a - r).abs() <= TOL * (1 + r.abs())
    return bool((~(both_nan | same_inf | close)).any())


def as_list(y):
    return list(y) if isinstance(y, (tuple, list)) else [y]


def run(fn, sample, double):
    """Leaves (float64 copies when double), views, the call; returns (leaves, outputs)."""
    leaves = []
    for i in sample.inputs:
        b = i.base.detach().clone()
        if double and b.is_floating_point():
            b = b.double()
        if i.grad:
            b.requires_grad_()
        leaves.append(b)
    views = [apply_view(b, i.view) for b, i in zip(leaves, sample.inputs)]
    return leaves, as_list(fn(*views, **sample.args))


def backward(leaves, outs, dys):
    pairs = [(y, dy) for y, dy in zip(outs, dys) if dy is not None and y.requires_grad]
    if not pairs:
        return None
    torch.autograd.backward([y for y, _ in pairs], [dy.to(y.dtype) for y, dy in pairs])
    return [(b.grad if b.grad is not None else torch.zeros_like(b)) if b.requires_grad else None for b in leaves]


def smooth(y):
    """False where a float output holds NaN, inf or values beyond 1e8 (finite differences fail)."""
    return not y.is_floating_point() or bool((y.detach().abs() <= 1e8).all())


def json_number(v):
    if isinstance(v, float) and (math.isinf(v) or math.isnan(v)):
        return str(v)
    if isinstance(v, (list, tuple)):
        return [json_number(x) for x in v]
    return v


def record(blobs, name, fn, sample, dy_gen):
    case = {"op": name, "args": {k: json_number(v) for k, v in sample.args.items()}, "kind": sample.kind}
    case["in"] = [[kind_of(i.base), list(i.base.shape), blobs.put_input(i.base), i.view, int(i.grad)]
                  for i in sample.inputs]
    try:
        leaves, outs = run(fn, sample, False)
    except Exception as e:  # torch raises RuntimeError, ValueError, IndexError, TypeError by the check
        case["err"] = f"{type(e).__name__}: {e}".split("\n")[0]
        return case
    dys = [dy_gen.randn(y.shape) if y.is_floating_point() and y.requires_grad else None for y in outs]
    try:
        _, outs64 = run(fn, sample, True)
    except Exception:
        outs64 = None
    if sample.kind in ("normal", "distinct") and not all(smooth(y) for y in outs):
        case["kind"] = "special"  # not smooth after all (an argument made NaN, inf or huge values)
    case["out"] = []
    for k, y in enumerate(outs):
        ref = -1
        if outs64 is not None and y.is_floating_point() and violates(y, outs64[k]):
            ref = blobs.put(outs64[k].float())
        case["out"].append([kind_of(y), list(y.shape), blobs.put(y), ref,
                            blobs.put(dys[k]) if dys[k] is not None else -1])
    try:
        grads = backward(leaves, outs, dys)
    except Exception as e:
        case["bwd_err"] = f"{type(e).__name__}: {e}".split("\n")[0]
        return case
    if grads is None:
        return case
    grads64 = None
    try:
        leaves64, outs64 = run(fn, sample, True)
        grads64 = backward(leaves64, outs64, dys)
    except Exception:
        pass
    if case["kind"] in ("normal", "distinct") and not all(gr is None or smooth(gr) for gr in grads):
        case["kind"] = "special"
    case["d"] = []
    for k, gr in enumerate(grads):
        if gr is None:
            case["d"].append(None)
            continue
        ref = -1
        if grads64 is not None and violates(gr, grads64[k]):
            ref = blobs.put(grads64[k].float())
        case["d"].append([blobs.put(gr.float()), ref])
    return case


GROUPS = ["pointwise", "reduce", "shape", "linear", "nn"]


def make_group(group, seed):
    blobs = Blobs()
    cases, ops = [], {}
    for g_name, name, torch_name, fn, samples in ROWS:
        if g_name != group:
            continue
        ops[name] = torch_name
        row_seed = seed * 1_000_003 + zlib.crc32(name.encode())
        dy_gen = Gen(row_seed + 1)
        for sample in samples(Gen(row_seed)):
            cases.append(record(blobs, name, fn, sample, dy_gen))
    tensors = blobs.arrays()
    metadata = {"generator": "tests/golden/gen_optable.py", "cases": json.dumps(cases, separators=(",", ":")), "ops": json.dumps(ops, separators=(",", ":")),
                "seed": str(seed)}
    return tensors, metadata


def file_name(group):
    return f"optable_{group}.safetensors"


FILES = [(file_name(_g), lambda _g=_g: make_group(_g, 0)) for _g in GROUPS]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="the samples' seed (the committed files use 0)")
    parser.add_argument("--out", default=GOLDEN_DIR, help="folder to write optable_<group>.safetensors to")
    parser.add_argument("--only", action="append", metavar="GROUP", help="write only this group (repeatable)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    for group in GROUPS:
        if args.only and group not in args.only:
            continue
        tensors, metadata = make_group(group, args.seed)
        metadata = {"torch_version": torch.__version__, **metadata}
        path = os.path.join(args.out, file_name(group))
        write_safetensors(path, tensors, metadata)
        print(f"wrote {path} ({os.path.getsize(path)} bytes, {len(json.loads(metadata['cases']))} cases)")


if __name__ == "__main__":
    sys.exit(main())
