"""Goldens of the shape and indexing family (src/ops/shape.cpp, src/ops/index.cpp, factories):
shape.safetensors. Read by tests/test_ops_shape.cpp.

Each case stores its inputs (contiguous; `<case>.view` in the metadata says which view of an
input the test takes, e.g. `a=t` for a.t()), a random upstream gradient `dy`, the output `y` and
the input gradients `d<name>` of y.backward(dy). Index tensors are I64.
"""

import torch
import torch.nn.functional as F

from golden_io import Case


def make_shape():
    tensors, metadata = {}, {}

    def case(name, seed, inputs, fn, view="", int_inputs=()):
        """inputs: dict name -> tensor (float inputs get gradients); fn(**views) -> output."""
        torch.manual_seed(seed)
        c = Case(tensors, metadata, name)
        leaves = {}
        for k, t in inputs.items():
            if k in int_inputs:
                c.put(k, t, "I64")
                leaves[k] = t
            else:
                c.put(k, t)
                leaves[k] = t.clone().requires_grad_()
        views = dict(leaves)
        for item in filter(None, view.split(",")):
            k, how = item.split("=")
            views[k] = {"t": lambda v: v.t(), "T01": lambda v: v.transpose(0, 1),
                        "narrow": lambda v: v.narrow(-1, 1, v.shape[-1] - 1)}[how](leaves[k])
        y = fn(**views)
        c.meta("view", view)
        if y.dtype != torch.float32:
            c.put("y", y, "I64")
            return
        dy = torch.randn(y.shape)
        y.backward(dy)
        c.put("dy", dy)
        c.put("y", y)
        for k, t in leaves.items():
            if k not in int_inputs:
                g = t.grad if t.grad is not None else torch.zeros_like(t)
                c.put("d" + k, g)

    r = torch.randn
    g = torch.Generator().manual_seed(100)
    # Inputs are drawn before case() seeds, from the state the previous case left: seed here so
    # the first case does not depend on which file was generated before this one.
    torch.manual_seed(0)

    def idx(high, *shape):
        return torch.randint(0, high, shape, generator=g)

    # cat / stack: a transposed operand, an empty one, torch's legacy 1-D empty tensor.
    case("cat1", 1, {"a": r(3, 2), "b": r(2, 0), "c": r(2, 4)}, lambda a, b, c: torch.cat([a, b, c], 1), view="a=t")
    case("cat0", 2, {"a": r(0, 3), "b": r(2, 3), "c": r(1, 3)}, lambda a, b, c: torch.cat([a, b, c], 0))
    case("cat_legacy", 3, {"a": r(0), "b": r(2, 3)}, lambda a, b: torch.cat([a, b], -1))
    case("cat3d", 4, {"a": r(2, 3, 4), "b": r(2, 1, 4)}, lambda a, b: torch.cat([a, b], -2))
    case("stack1", 5, {"a": r(2, 3), "b": r(3, 2), "c": r(2, 3)}, lambda a, b, c: torch.stack([a, b, c], 1),
         view="b=t")
    case("stack_last", 6, {"a": r(4), "b": r(4)}, lambda a, b: torch.stack([a, b], -1))
    # split / chunk: the pieces rejoined with one left out (its gradient is 0).
    case("split", 7, {"x": r(7, 3)}, lambda x: torch.cat([p for i, p in enumerate(torch.split(x, 3)) if i != 1]))
    case("split_sizes", 8, {"x": r(2, 6)},
         lambda x: torch.cat(torch.split(x, [1, 0, 3, 2], 1)[2:], 1))
    case("chunk", 9, {"x": r(2, 5)}, lambda x: torch.stack(torch.chunk(x, 3, 1)[:2]))
    case("unbind", 10, {"x": r(3, 4)}, lambda x: torch.cat(torch.unbind(x, 1)[::2]))
    # Views.
    case("permute", 11, {"x": r(2, 3, 4)}, lambda x: x.permute(2, 0, 1))
    case("permute_t", 12, {"x": r(4, 3)}, lambda x: x.unsqueeze(0).permute(2, 0, 1), view="x=t")
    case("unsqueeze", 13, {"x": r(2, 3)}, lambda x: x.unsqueeze(-1).unsqueeze(0))
    case("squeeze", 14, {"x": r(1, 3, 1, 2)}, lambda x: x.squeeze())
    case("squeeze_dim", 15, {"x": r(1, 3, 1, 2)}, lambda x: x.squeeze(2).squeeze(1))
    case("expand", 16, {"x": r(3, 1)}, lambda x: x.expand(2, 3, 4))
    case("expand_keep", 17, {"x": r(1, 4)}, lambda x: x.expand(3, -1))
    case("flatten", 18, {"x": r(2, 3, 4)}, lambda x: x.flatten(1))
    case("flatten_t", 19, {"x": r(3, 4)}, lambda x: x.flatten(), view="x=t")
    case("unflatten", 20, {"x": r(2, 12)}, lambda x: x.unflatten(1, (3, -1)))
    case("unflatten_t", 21, {"x": r(6, 2)}, lambda x: x.unflatten(1, (2, 3)), view="x=t")
    case("slice_step", 22, {"x": r(5, 7)}, lambda x: x[:, 1:6:2])
    case("slice_neg", 23, {"x": r(6, 3)}, lambda x: x[-4:-1])
    case("repeat", 24, {"x": r(2, 3)}, lambda x: x.repeat(2, 1, 3))
    case("repeat_1d", 25, {"x": r(3)}, lambda x: x.repeat(2, 2))
    case("repeat_t", 26, {"x": r(3, 2)}, lambda x: x.repeat(2, 2), view="x=t")
    # Indexing.
    case("index_select", 27, {"x": r(4, 5), "index": torch.tensor([0, 2, 2, 4])},
         lambda x, index: torch.index_select(x, 1, index), int_inputs=("index",))
    case("index_select0", 28, {"x": r(5, 2, 3), "index": torch.tensor([4, 0, 4])},
         lambda x, index: x.index_select(0, index), int_inputs=("index",))
    case("index_select_empty", 29, {"x": r(3, 4), "index": torch.zeros(0, dtype=torch.int64)},
         lambda x, index: x.index_select(0, index), int_inputs=("index",))
    case("gather1", 30, {"x": r(3, 4), "index": idx(4, 3, 6)}, lambda x, index: torch.gather(x, 1, index),
         int_inputs=("index",))
    case("gather0", 31, {"x": r(4, 5), "index": idx(4, 2, 3)}, lambda x, index: x.gather(0, index),
         int_inputs=("index",))
    case("gather_t", 32, {"x": r(5, 3), "index": idx(5, 3, 4)}, lambda x, index: x.gather(1, index),
         view="x=t", int_inputs=("index",))
    case("scatter_add", 33, {"x": r(3, 5), "index": idx(3, 2, 5), "src": r(2, 5)},
         lambda x, index, src: torch.scatter_add(x, 0, index, src), int_inputs=("index",))
    case("scatter_add1", 34, {"x": r(2, 4), "index": idx(4, 2, 6), "src": r(2, 6)},
         lambda x, index, src: x.scatter_add(1, index, src), int_inputs=("index",))
    case("embedding", 35, {"weight": r(10, 4), "indices": torch.tensor([[1, 2, 2], [9, 0, 1]])},
         lambda weight, indices: F.embedding(indices, weight), int_inputs=("indices",))
    case("embedding_pad", 36, {"weight": r(6, 3), "indices": torch.tensor([2, 5, 2, 0, 1])},
         lambda weight, indices: F.embedding(indices, weight, padding_idx=2), int_inputs=("indices",))
    case("embedding_padneg", 37, {"weight": r(6, 3), "indices": torch.tensor([[5], [2], [5]])},
         lambda weight, indices: F.embedding(indices, weight, padding_idx=-1), int_inputs=("indices",))
    case("one_hot", 38, {"indices": torch.tensor([[0, 3], [2, 1]])}, lambda indices: F.one_hot(indices, 5),
         int_inputs=("indices",))
    case("one_hot_infer", 39, {"indices": torch.tensor([4, 0, 2])}, lambda indices: F.one_hot(indices),
         int_inputs=("indices",))

    # Factories (no randomness: torch's generator is not normnet's).
    for name, args in [("linspace5", (0.0, 1.0, 5)), ("linspace7", (-2.0, 3.0, 7)), ("linspace1", (3.0, 9.0, 1)),
                       ("linspace_desc", (1.0, -1.0, 4))]:
        c = Case(tensors, metadata, name)
        c.meta("args", list(args))
        c.put("y", torch.linspace(*args))
    return tensors, metadata


FILES = [("shape.safetensors", make_shape)]
