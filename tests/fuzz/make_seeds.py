#!/usr/bin/env python3
"""Seed corpora for the libFuzzer targets of tests/fuzz, made from small real files.

  idx/          the first images and labels of MNIST (data/mnist) and Fashion-MNIST (Debian's
                dataset-fashion-mnist), each raw and gzipped, with their headers' counts rewritten
  safetensors/  a checkpoint pair written by `normnet train` on those images (LayerNorm and
                BatchNorm models), a file with F16, BF16, F64, I64 and empty tensors, and (with
                --fuzz-safetensors) the model, optimizer and scheduler states fuzz_safetensors loads
  resume/       the metadata of those checkpoints in fuzz_resume.cpp's layout (values joined by
                NUL bytes, in its kKeys order)
  config/       their normnet.config and normnet.architecture JSON
  metrics/      the metrics.csv of those runs, and one with a row damaged by hand
  text/         the first records of a few of Debian's fortune files (/usr/share/games/fortunes)
  lists/        values of --hidden, --batch-sizes and --norms as users write them

The seeds other than idx/ are committed in tests/fuzz/seeds/ (what .ci/run fuzzes from). idx/
holds slices of the datasets, which are never committed: .ci/run makes it before fuzzing with
  tests/fuzz/make_seeds.py --idx-only --out tests/fuzz/seeds
Run this after a change of the checkpoint format to remake the others:
  tests/fuzz/make_seeds.py --normnet build/apps/normnet/normnet \
      --fuzz-safetensors build-san/tests/fuzz/fuzz_safetensors --out tests/fuzz/seeds
Runs with Python's standard library alone; a dataset that is missing is left out.
"""
import argparse
import gzip
import json
import os
import struct
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATASETS = [os.path.join(REPO, "data", "mnist"), "/usr/share/datasets/fashion-mnist"]
FORTUNES = "/usr/share/games/fortunes"
IMAGES = 3  # per seed file: small, so that the fuzzer's mutations reach the header often


def read_idx(folder, base):
    for name, opener in ((base, open), (base + ".gz", gzip.open)):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            with opener(path, "rb") as f:
                return f.read()
    return None


def head_of(idx, count):
    """The IDX file cut to its first `count` items, with the count in its header changed to match."""
    ndim = idx[3]
    dims = list(struct.unpack(">" + "I" * ndim, idx[4:4 + 4 * ndim]))
    item = 1
    for d in dims[1:]:
        item *= d
    dims[0] = count
    return idx[:4] + struct.pack(">" + "I" * ndim, *dims) + idx[4 + 4 * ndim:4 + 4 * ndim + count * item]


def safetensors(tensors, metadata=None):
    """A safetensors file: tensors are (name, dtype, shape, raw bytes)."""
    header, offset = {}, 0
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(t[3] for t in tensors)


def metadata_of(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n)).get("__metadata__", {})


def resume_seed(model, state):
    """fuzz_resume.cpp's kKeys order: the model's then the state's metadata values."""
    keys = [("normnet.architecture", model), ("normnet.config", model), ("normnet.epoch", model),
            ("normnet.batch", model), ("normnet.epoch", state), ("normnet.optimizer", state),
            ("normnet.scheduler_position", state), ("normnet.rng_state", state), ("normnet.history", state),
            ("normnet.progress", state)]
    return b"\0".join(source.get(key, "").encode() for key, source in keys)


def write(folder, name, data):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--normnet", help="the normnet program, to write real checkpoints (required unless --idx-only)")
    p.add_argument("--idx-only", action="store_true", help="write idx/ alone (from the datasets installed here)")
    p.add_argument("--fuzz-safetensors", help="the fuzz_safetensors program, to write the states it loads")
    p.add_argument("--out", required=True, help="folder for idx/, safetensors/, resume/, config/, metrics/, text/, lists/")
    a = p.parse_args()
    if not a.idx_only and not a.normnet:
        p.error("--normnet is required unless --idx-only")
    made = 0
    with tempfile.TemporaryDirectory() as work:
        data_dir = None
        for folder in DATASETS:
            name = os.path.basename(folder)
            for split in ("train", "t10k"):
                for kind in ("images-idx3-ubyte", "labels-idx1-ubyte"):
                    idx = read_idx(folder, f"{split}-{kind}")
                    if idx is None:
                        continue
                    head = head_of(idx, IMAGES if split == "t10k" else 4 * IMAGES)
                    write(os.path.join(a.out, "idx"), f"{name}-{split}-{kind}", head)
                    write(os.path.join(a.out, "idx"), f"{name}-{split}-{kind}.gz", gzip.compress(head, mtime=0))
                    write(os.path.join(work, name), f"{split}-{kind}", head)
                    made += 2
            if data_dir is None and os.path.exists(os.path.join(work, name, "train-images-idx3-ubyte")):
                data_dir = os.path.join(work, name)
        if data_dir is None:
            sys.exit("make_seeds: no MNIST or Fashion-MNIST found (data/mnist, /usr/share/datasets/fashion-mnist)")
        if a.idx_only:
            print(f"make_seeds: {made} seed files in {os.path.join(a.out, 'idx')}")
            return

        for norm in ("layer", "batch"):
            run = os.path.join(work, "run-" + norm)
            # Relative paths from the work folder, so that the seeds' metadata is the same on every machine.
            subprocess.run([os.path.abspath(a.normnet), "train", "--data", os.path.relpath(data_dir, work), "--hidden", "2",
                            "--norm", norm, "--epochs", "2", "--batch-size", "16", "--threads", "1", "--quiet", "--out",
                            os.path.relpath(run, work)], check=True, stdout=subprocess.DEVNULL, cwd=work)
            for name in ("model.safetensors", "training_state.safetensors"):
                with open(os.path.join(run, name), "rb") as f:
                    write(os.path.join(a.out, "safetensors"), f"{norm}-{name}", f.read())
            model = metadata_of(os.path.join(run, "model.safetensors"))
            write(os.path.join(a.out, "resume"), norm,
                  resume_seed(model, metadata_of(os.path.join(run, "training_state.safetensors"))))
            write(os.path.join(a.out, "config"), norm + "-config", model["normnet.config"].encode())
            write(os.path.join(a.out, "config"), norm + "-architecture", model["normnet.architecture"].encode())
            with open(os.path.join(run, "metrics.csv"), "rb") as f:
                metrics = f.read()
            write(os.path.join(a.out, "metrics"), norm, metrics)
            made += 5
        write(os.path.join(a.out, "metrics"), "damaged", metrics.replace(b"\n2,", b"\n2,x", 1) + b"3,0.5,,\n")
        made += 1

    # Fortune files cut after a few records (one of them with non-ASCII text, where there is one).
    if os.path.isdir(FORTUNES):
        names = sorted(n for n in os.listdir(FORTUNES) if "." not in n and os.path.isfile(os.path.join(FORTUNES, n)))
        for name in names[:6]:
            with open(os.path.join(FORTUNES, name), "rb") as f:
                text = f.read(1 << 16)
            records = text.split(b"\n%\n")
            write(os.path.join(a.out, "text"), name, b"\n%\n".join(records[:4]) + b"\n%\n")
            made += 1
    write(os.path.join(a.out, "text"), "utf8", "naïve café, 漢字, emoji 🙂\n%\nline two\n".encode())
    made += 1

    for i, value in enumerate(["300,100", " 300, 100 ", "32,128,512", "layer,batch", "layer, batch ,rms,none"]):
        write(os.path.join(a.out, "lists"), f"list{i}", value.encode())
        made += 1

    if a.fuzz_safetensors:
        out = os.path.join(a.out, "safetensors")
        os.makedirs(out, exist_ok=True)
        subprocess.run([a.fuzz_safetensors], check=True,
                       env=dict(os.environ, NORMNET_FUZZ_WRITE_SEED=os.path.join(out, "states.safetensors")))
        made += 1

    # Every dtype the reader converts, an empty tensor, and a 0-dim one, under the fuzz model's names.
    write(os.path.join(a.out, "safetensors"), "dtypes.safetensors", safetensors([
        ("0.weight", "F16", [3, 4], struct.pack("<12H", *range(0x3c00, 0x3c0c))),
        ("0.bias", "BF16", [3], struct.pack("<3H", 0x3f80, 0xbf80, 0x0001)),
        ("2.weight", "F64", [3], struct.pack("<3d", 1.0, -0.0, 1e300)),
        ("2.num_batches_tracked", "I64", [1], struct.pack("<q", 7)),
        ("e", "F32", [2, 0], b""),
        ("s", "F32", [], struct.pack("<f", 2.5)),
    ], {"format": "pt"}))
    made += 1
    print(f"make_seeds: {made} seed files in {a.out}")


if __name__ == "__main__":
    main()
