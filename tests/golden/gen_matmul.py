"""Goldens of matmul (src/ops/linear.cpp) by PyTorch's rules for 1-D, 2-D and batched,
broadcast operands: matmul.safetensors. Read by tests/test_ops_matmul.cpp.

Each case stores `a`, `b` (contiguous; metadata `<case>.view` names the views the test takes,
e.g. `a=t` for a.t(), `b=T01` for b.transpose(0, 1), `a=narrow` for a.narrow(-1, 1, n - 1)),
a random upstream gradient `dy`, `y = torch.matmul(a, b)` and the gradients `da`, `db` of
y.backward(dy).
"""

import torch

from golden_io import Case


def make_matmul():
    tensors, metadata = {}, {}
    views = {"t": lambda v: v.t(), "T01": lambda v: v.transpose(0, 1), "narrow": lambda v: v.narrow(-1, 1, v.shape[-1] - 1)}

    def case(name, seed, a_shape, b_shape, view=""):
        torch.manual_seed(seed)
        c = Case(tensors, metadata, name)
        a = torch.randn(a_shape, requires_grad=True)
        b = torch.randn(b_shape, requires_grad=True)
        va, vb = a, b
        for item in filter(None, view.split(",")):
            k, how = item.split("=")
            if k == "a":
                va = views[how](a)
            else:
                vb = views[how](b)
        y = torch.matmul(va, vb)
        dy = torch.randn(y.shape)
        y.backward(dy)
        c.meta("view", view)
        for k, t in [("a", a), ("b", b), ("dy", dy), ("y", y), ("da", a.grad), ("db", b.grad)]:
            c.put(k, t)

    case("dot", 1, (5,), (5,))
    case("mv", 2, (3, 4), (4,))
    case("vm", 3, (4,), (4, 3))
    case("mm", 4, (3, 4), (4, 5))
    case("mm_tt", 5, (4, 3), (5, 4), view="a=t,b=t")
    case("mm_narrow", 6, (3, 5), (4, 6), view="a=narrow,b=narrow")
    case("mv_t", 7, (4, 3), (4,), view="a=t")
    case("bmm", 8, (2, 3, 4), (2, 4, 5))
    case("bmm_t", 9, (3, 2, 4), (2, 4, 5), view="a=T01")
    case("batched_mat", 10, (2, 3, 4), (4, 5))
    case("batched_mat_t", 11, (3, 2, 4), (5, 4), view="a=T01,b=t")
    case("mat_batched", 12, (3, 4), (2, 4, 5))
    case("vec_batched", 13, (4,), (2, 4, 5))
    case("batched_vec", 14, (2, 3, 4), (4,))
    case("broadcast", 15, (2, 1, 3, 4), (5, 4, 6))
    case("broadcast_both", 16, (3, 1, 2, 4), (1, 2, 4, 3))
    case("empty_rows", 17, (0, 4), (4, 3))
    case("empty_k", 18, (3, 0), (0, 2))
    case("empty_batch", 19, (0, 2, 3), (3, 4))
    case("empty_broadcast", 20, (1, 2, 3), (0, 3, 4))
    case("bigger", 21, (3, 17, 33), (33, 9))
    return tensors, metadata


FILES = [("matmul.safetensors", make_matmul)]
