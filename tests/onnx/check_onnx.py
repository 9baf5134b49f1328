#!/usr/bin/env python3
"""Checks ONNX files the way the ONNX project defines validity: onnx.checker's full check (every
node against its operator schema, then strict shape inference) and shape inference with type
checks, whose inferred input and output shapes must be the ones the file declares. One line per
file; exit status 1 when any fails, 77 (a skip for ctest) when python3-onnx is not installed.

    check_onnx.py model.onnx [more.onnx ...]
"""
import sys

try:
    import onnx
    from onnx import shape_inference
except ImportError:
    print("NORMNET_SKIP: python3-onnx is not installed (apt-get install python3-onnx)")
    sys.exit(77)


def dims(value_info):
    shape = value_info.type.tensor_type.shape
    return [d.dim_param if d.HasField("dim_param") else d.dim_value for d in shape.dim]


def check(path):
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    inferred = shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    declared = {v.name: dims(v) for v in list(model.graph.output) + list(model.graph.value_info)}
    for v in list(inferred.graph.output) + list(inferred.graph.value_info):
        if v.name in declared and dims(v) != declared[v.name]:
            raise ValueError(f"{v.name}: declared {declared[v.name]}, inferred {dims(v)}")
    opset = model.opset_import[0].version
    out = model.graph.output[0]
    return f"opset {opset}, {len(model.graph.node)} nodes, output {out.name} {dims(out)}"


def main():
    failed = 0
    for path in sys.argv[1:]:
        try:
            print(f"ok {path}: {check(path)}")
        except Exception as e:  # the checker raises several types; each is a failure to report
            failed += 1
            print(f"FAILED {path}: {type(e).__name__}: {e}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
