"""Goldens of the reduction family (src/ops/reduce.cpp, minmax.cpp, sort.cpp): reduce.safetensors.
Read by tests/test_ops_reduce.cpp.

Each case stores its input `x` (contiguous; metadata `<case>.view` names the view the test
takes: x=t is x.t(), x=T01 x.transpose(0, 1), x=narrow x.narrow(-1, 1, n - 1)), the op's
arguments in metadata, a random upstream gradient `dy`, the output `y` and `dx` from
y.backward(dy). Ops returning (values, indices) also store `idx` (I64). Inputs with ties are
small integers (`x = randint(0, 3)`), so that how tied elements share a gradient shows.
"""

import math

import torch

from golden_io import Case


def make_reduce():
    tensors, metadata = {}, {}

    def case(name, seed, x, fn, view="", meta=None, grad=True):
        torch.manual_seed(seed)
        c = Case(tensors, metadata, name)
        int_input = x.dtype in (torch.int64, torch.bool)
        c.put("x", x, {torch.int64: "I64", torch.bool: "BOOL"}.get(x.dtype, "F32"))
        leaf = x.clone() if int_input else x.clone().requires_grad_()
        v = {"": lambda t: t, "t": lambda t: t.t(), "T01": lambda t: t.transpose(0, 1),
             "narrow": lambda t: t.narrow(-1, 1, t.shape[-1] - 1)}[view](leaf)
        out = fn(v)
        c.meta("view", f"x={view}" if view else "")
        for k, val in (meta or {}).items():
            c.meta(k, val)
        y, idx = (out if isinstance(out, tuple) else (out, None))
        if idx is not None:
            c.put("idx", idx, "I64")
        if y.dtype != torch.float32:
            c.put("y", y, "I64")
            return
        c.put("y", y)
        if grad and not int_input:
            dy = torch.randn(y.shape)
            y.backward(dy)
            c.put("dy", dy)
            c.put("dx", leaf.grad)

    r = torch.randn
    # Inputs are drawn before case() seeds, from the state the previous case left: seed here so
    # the first case does not depend on which file was generated before this one.
    torch.manual_seed(0)

    def ties(*shape):
        return torch.randint(0, 3, shape, generator=torch.Generator().manual_seed(sum(shape))).float()

    # sum and mean: dims sets, keepdim, views, size-0 dims, int64 and bool inputs.
    for i, (dims, keep) in enumerate([((1,), False), ((0, 2), True), ((-1,), False), ((0, 1, 2), False),
                                      ((2, 0), False), ((1, 2), True)]):
        case(f"sum{i}", 10 + i, r(3, 4, 5), lambda x, d=dims, k=keep: x.sum(d, keepdim=k),
             meta={"dims": list(dims), "keepdim": keep})
        case(f"mean{i}", 20 + i, r(3, 4, 5), lambda x, d=dims, k=keep: x.mean(d, keepdim=k),
             meta={"dims": list(dims), "keepdim": keep})
    case("sum_t", 30, r(5, 3), lambda x: x.sum(1), view="t", meta={"dims": [1], "keepdim": False})
    case("mean_narrow", 31, r(2, 3, 6), lambda x: x.mean((0, 2)), view="narrow", meta={"dims": [0, 2], "keepdim": False})
    case("sum_empty", 32, r(3, 0, 2), lambda x: x.sum(1), meta={"dims": [1], "keepdim": False})
    case("sum_rows_long", 33, r(2, 3000), lambda x: x.sum(1), meta={"dims": [1], "keepdim": False})
    case("sum_cols_long", 34, r(2000, 3), lambda x: x.sum(0), meta={"dims": [0], "keepdim": False})
    case("sum_int", 35, torch.randint(-50, 50, (4, 5)), lambda x: x.sum(1), meta={"dims": [1]})
    case("sum_bool", 36, torch.randn(4, 5) > 0, lambda x: x.sum((0,)), meta={"dims": [0]})
    case("sum_bool_all", 37, torch.randn(6, 7) > 0.3, lambda x: x.sum(), meta={"dims": []})
    # mean of a mask: torch needs a float; normnet takes the mask itself (tested against this).
    case("mean_bool", 38, torch.randn(4, 5) > 0, lambda x: x.float().mean(1), meta={"dims": [1]})
    case("mean_int", 39, torch.randint(0, 10, (3, 4)), lambda x: x.double().mean(0).float(), meta={"dims": [0]})

    # var and std: correction 0, 1, 2 and unbiased.
    for i, (dims, corr, keep) in enumerate([((1,), 1, False), ((0, 2), 0, True), ((), 1, False), ((-1,), 2, False)]):
        # dims () as None: torch 1.13's backward of var(x, (), ...) divides by 0 (its forward reduces all).
        d = dims or None
        case(f"var{i}", 40 + i, r(3, 4, 5) * 2 + 1, lambda x, d=d, c=corr, k=keep: torch.var(x, d, correction=c, keepdim=k),
             meta={"dims": list(dims), "correction": corr, "keepdim": keep})
        case(f"std{i}", 50 + i, r(3, 4, 5) * 2 + 1, lambda x, d=d, c=corr, k=keep: torch.std(x, d, correction=c, keepdim=k),
             meta={"dims": list(dims), "correction": corr, "keepdim": keep})
    case("var_unbiased_false", 60, r(4, 6), lambda x: x.var(1, unbiased=False), view="", meta={"dims": [1]})
    case("std_t", 61, r(6, 4), lambda x: x.std(0), view="t", meta={"dims": [0]})
    case("var_offset", 62, r(2, 1000).double().add(1e4).float(), lambda x: x.var(1), meta={"dims": [1]})

    # amax / amin (ties share the gradient), full max / min, max(dim) / min(dim), argmax / argmin.
    case("amax1", 70, ties(3, 4, 5), lambda x: x.amax(1), meta={"dims": [1], "keepdim": False})
    case("amax02", 71, ties(3, 4, 5), lambda x: x.amax((0, 2), keepdim=True), meta={"dims": [0, 2], "keepdim": True})
    case("amin_all", 72, ties(4, 5), lambda x: x.amin(), meta={"dims": [], "keepdim": False})
    case("amax_rand", 73, r(3, 70), lambda x: x.amax(-1), view="T01", meta={"dims": [-1], "keepdim": False})
    case("max_all", 74, ties(4, 6), lambda x: x.max())
    case("min_all", 75, ties(4, 6), lambda x: x.min())
    case("max_dim1", 76, ties(4, 6), lambda x: torch.max(x, 1), meta={"dim": 1, "keepdim": False})
    case("max_dim0", 77, ties(5, 3, 2), lambda x: x.max(0, keepdim=True), meta={"dim": 0, "keepdim": True})
    case("min_dim", 78, ties(4, 70), lambda x: torch.min(x, -1), meta={"dim": -1, "keepdim": False})
    case("min_dim_t", 79, r(3, 5), lambda x: torch.min(x, 0), view="t", meta={"dim": 0, "keepdim": False})
    case("argmax_all", 80, ties(5, 7), lambda x: x.argmax())
    case("argmax1", 81, ties(5, 7), lambda x: x.argmax(1), meta={"dim": 1, "keepdim": False})
    case("argmin0", 82, ties(5, 7, 2), lambda x: torch.argmin(x, 0, keepdim=True), meta={"dim": 0, "keepdim": True})
    case("argmin_all", 83, r(3, 4), lambda x: x.argmin())

    # logsumexp: stable at large values; a row of -inf gives -inf (gradient: nan in torch, not kept).
    case("logsumexp1", 90, r(3, 4, 5), lambda x: torch.logsumexp(x, 1), meta={"dims": [1], "keepdim": False})
    case("logsumexp02", 91, r(3, 4, 5), lambda x: torch.logsumexp(x, (0, 2), keepdim=True),
         meta={"dims": [0, 2], "keepdim": True})
    case("logsumexp_large", 92, r(4, 6) * 1e4, lambda x: torch.logsumexp(x, -1), meta={"dims": [-1], "keepdim": False})
    case("logsumexp_t", 93, r(5, 3), lambda x: torch.logsumexp(x, 1), view="t", meta={"dims": [1], "keepdim": False})

    # norm: p = 2, 1, inf, -inf, 0, 3, 0.5 and 'fro'; a zero row (p = 2's gradient is 0 there).
    zero_row = r(3, 5)
    zero_row[1] = 0
    for i, (p, dims) in enumerate([(2, (1,)), (1, (0,)), (math.inf, (1,)), (-math.inf, (1,)), (0, (1,)), (3, (0, 1)),
                                   (0.5, (1,)), (2, ())]):
        x = zero_row.clone() if p == 2 else r(3, 5)
        if p == 0:
            x[0, 1] = 0
        case(f"norm{i}", 100 + i, x, lambda x, p=p, d=dims: torch.norm(x, p, d), meta={"p": p, "dims": list(dims)},
             grad=p != 0)
    case("norm_inf_ties", 110, ties(3, 4) - 1, lambda x: torch.norm(x, math.inf, 1), meta={"p": math.inf, "dims": [1]})
    case("norm_fro", 111, r(2, 3, 4), lambda x: torch.norm(x, "fro", (1, 2), keepdim=True),
         meta={"p": "fro", "dims": [1, 2], "keepdim": True})
    case("norm_default", 112, r(4, 3), lambda x: x.norm(), view="t")

    # topk.
    case("topk", 120, r(4, 9), lambda x: torch.topk(x, 3), meta={"k": 3, "dim": -1, "largest": True})
    case("topk_small0", 121, r(6, 3, 2), lambda x: x.topk(2, 0, largest=False), meta={"k": 2, "dim": 0, "largest": False})
    case("topk_t", 122, r(5, 4), lambda x: x.topk(4, 1), view="t", meta={"k": 4, "dim": 1, "largest": True})

    # cumsum.
    case("cumsum1", 130, r(3, 4, 5), lambda x: torch.cumsum(x, 1), meta={"dim": 1})
    case("cumsum_last", 131, r(3, 70), lambda x: x.cumsum(-1), meta={"dim": -1})
    case("cumsum_t", 132, r(4, 3), lambda x: x.cumsum(0), view="t", meta={"dim": 0})
    case("cumsum_int", 133, torch.randint(-5, 5, (3, 4)), lambda x: x.cumsum(1), meta={"dim": 1})
    case("cumsum_bool", 134, torch.randn(3, 4) > 0, lambda x: x.cumsum(0), meta={"dim": 0})
    return tensors, metadata


def make_reduce_dims():
    """reduce_dims.safetensors: every reduction over dims sets that are not neighbours once the
    size-1 dims are set aside (the layout group_dims permutes), and over empty outputs (whose
    backward must return an empty gradient, not divide by a zero count). Data-driven cases
    (gen_elementwise.Cases): <case>.op names the op, <case>.args its dims, keepdim, correction, p."""
    from gen_elementwise import Cases
    cs = Cases()
    torch.manual_seed(200)
    ops = {
        "sum": lambda x, dims, keepdim: x.sum(dims, keepdim=keepdim),
        "mean": lambda x, dims, keepdim: x.mean(dims, keepdim=keepdim),
        "amax": lambda x, dims, keepdim: x.amax(dims, keepdim=keepdim),
        "amin": lambda x, dims, keepdim: x.amin(dims, keepdim=keepdim),
        "var": lambda x, dims, keepdim, correction: torch.var(x, dims, correction=correction, keepdim=keepdim),
        "std": lambda x, dims, keepdim, correction: torch.std(x, dims, correction=correction, keepdim=keepdim),
        "logsumexp": lambda x, dims, keepdim: torch.logsumexp(x, dims, keepdim=keepdim),
        "norm": lambda x, dims, keepdim, p: torch.norm(x, p, dims, keepdim=keepdim),
    }
    extra = {"var": [{"correction": 1}], "std": [{"correction": 0}],
             "norm": [{"p": 2.0}, {"p": math.inf}, {"p": 3.0}]}
    # (shape, dims): reduced dims separated by kept ones, size-1 dims between or around them; then
    # empty outputs, and an empty reduced dim under a non-empty output (sums of nothing). keepdim
    # both ways for the first two and one empty case only (the header holds every case's metadata).
    layouts = [((2, 3, 4, 1), (0, 2)), ((2, 1, 5, 4), (0, 1, 3)), ((1, 3, 1, 4, 2), (0, 2, 4)),
               ((1, 3, 1, 4, 2), (1, 3)), ((3, 1, 4), (0, 2)), ((2, 3, 1, 4, 1), (0, 3)), ((3, 1, 4), (1,)),
               ((4, 0), (0,)), ((0, 3), (1,)), ((2, 0, 3), (0, 2)), ((0, 3, 5), (0, 2))]
    for i, (shape, dims) in enumerate(layouts):
        for op, fn in ops.items():
            for j, more in enumerate(extra.get(op, [{}])):
                for keepdim in (False, True) if i in (0, 1, 8) else (False,):
                    if (op in ("amax", "amin") and any(shape[d] == 0 for d in dims)):
                        continue  # torch refuses an empty reduced dim (tested in test_ops_reduce.cpp)
                    x = torch.randn(shape) * 2
                    cs.add(f"{op}{j}_{i}_{int(keepdim)}", op, fn, [("x", x, [])],
                           {"dims": list(dims), "keepdim": keepdim, **more})
    # max(dim) / min(dim) over a non-empty dim of an empty tensor; a broadcast add of empty shapes.
    cs.add("max_dim_empty", "max_dim", lambda x, dim, keepdim: torch.max(x, dim, keepdim)[0],
           [("x", torch.zeros(4, 0), [])], {"dim": 0, "keepdim": False})
    cs.add("min_dim_empty", "min_dim", lambda x, dim, keepdim: torch.min(x, dim, keepdim)[0],
           [("x", torch.zeros(0, 3), [])], {"dim": 1, "keepdim": True})
    cs.add("add_empty", "add", lambda a, b: a + b, [("a", torch.zeros(1, 0), []), ("b", torch.zeros(0, 16, 2, 0), [])])
    return cs.tensors, cs.metadata


FILES = [("reduce.safetensors", make_reduce), ("reduce_dims.safetensors", make_reduce_dims)]
