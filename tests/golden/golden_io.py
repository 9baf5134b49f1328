"""Shared pieces of the golden generators: the safetensors writer and its independent reader,
tensor conversions, and Case, which collects one case's tensors and metadata.

make_goldens.py and every gen_<family>.py next to it import this module.
"""

import json
import math
import os
import struct

import numpy as np
import torch

GOLDEN_DIR = os.path.dirname(os.path.abspath(__file__))
MAX_FILE_BYTES = 1_500_000
MAX_TOTAL_BYTES = 8_000_000  # 3.8 MB of per-family goldens, 2.5 MB of the op table

# safetensors dtype names <-> numpy little-endian dtypes.
DTYPES = {"F32": np.dtype("<f4"), "F64": np.dtype("<f8"), "I64": np.dtype("<i8"), "BOOL": np.dtype("bool")}


# ---------------------------------------------------------------------------
# safetensors writer / reader


def _safetensors_dtype(arr):
    for name, dt in DTYPES.items():
        if arr.dtype == dt:
            return name
    raise TypeError(f"unsupported dtype {arr.dtype}")


def write_safetensors(path, tensors, metadata):
    """tensors: dict name -> numpy array (written in dict order); metadata: dict str -> str."""
    header = {"__metadata__": {str(k): str(v) for k, v in metadata.items()}}
    blobs = []
    offset = 0
    for name, arr in tensors.items():
        arr = np.array(arr, order="C")  # not ascontiguousarray: it turns scalars into shape [1]
        kind = _safetensors_dtype(arr)
        data = arr.astype(DTYPES[kind], copy=False).tobytes()
        header[name] = {"dtype": kind, "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    # Pad with spaces so the data section starts 8-byte aligned (allowed by the format).
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in blobs:
            f.write(data)


def read_safetensors(path):
    """Independent numpy reader; checks the layout while parsing. Returns (tensors, metadata)."""
    with open(path, "rb") as f:
        raw = f.read()
    assert len(raw) >= 8, path
    (n,) = struct.unpack("<Q", raw[:8])
    assert n % 8 == 0, f"{path}: header length {n} not a multiple of 8"
    assert 8 + n <= len(raw), f"{path}: header runs past end of file"
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = raw[8 + n:]
    metadata = header.pop("__metadata__", {})
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    tensors = {}
    expected_begin = 0
    # json.loads keeps key order, which is the write order; offsets must tile the data section.
    for name, info in header.items():
        assert set(info) == {"dtype", "shape", "data_offsets"}, (path, name, info)
        dt = DTYPES[info["dtype"]]
        shape = tuple(info["shape"])
        begin, end = info["data_offsets"]
        assert begin == expected_begin, f"{path}:{name}: gap or overlap at {begin}"
        assert end - begin == dt.itemsize * math.prod(shape), f"{path}:{name}: size mismatch"
        tensors[name] = np.frombuffer(data[begin:end], dtype=dt).reshape(shape)
        expected_begin = end
    assert expected_begin == len(data), f"{path}: {len(data) - expected_begin} trailing bytes"
    return tensors, metadata


# ---------------------------------------------------------------------------
# helpers


def np32(t):
    return t.detach().cpu().to(torch.float32).numpy().copy()


def np64(t):
    return t.detach().cpu().to(torch.float64).numpy().copy()


def npi64(t):
    return t.detach().cpu().to(torch.int64).numpy().copy()


def npbool(t):
    return t.detach().cpu().to(torch.bool).numpy().copy()


class Case:
    """Collects one case's tensors under '<prefix>.<name>' and its metadata."""

    def __init__(self, tensors, metadata, prefix):
        self.tensors, self.metadata, self.prefix = tensors, metadata, prefix

    def put(self, name, t, kind="F32"):
        key = f"{self.prefix}.{name}"
        assert key not in self.tensors, key
        self.tensors[key] = {"F32": np32, "F64": np64, "I64": npi64, "BOOL": npbool}[kind](t)

    def meta(self, name, value):
        self.metadata[f"{self.prefix}.{name}"] = str(value)


def error_message(fn):
    """Runs fn, which must raise; returns (exception type name, message verbatim)."""
    try:
        fn()
    except Exception as e:  # torch raises RuntimeError or ValueError depending on the check
        return type(e).__name__, str(e)
    raise AssertionError("expected an exception")
