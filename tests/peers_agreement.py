#!/usr/bin/python3
"""The libtorch and PyTorch peers of the CNN, ViT and LM (apps/peers/) train the same thing: the
PyTorch peer writes its initial weights (--save-init), the libtorch peer starts from them
(--init), both draw normnet's data order (--order normnet), and after the same few steps their
test / validation losses must agree to 1e-3 relative (both run torch 1.13's kernels; the slack is
summation order). This checks at once the C++ re-implementations in peer_common.hpp and
peer_transformer.hpp (IDX and corpus reading, normnet's generator, the pre-LN encoder layer)
against the Python ones built from torch.nn.

    /usr/bin/python3 tests/peers_agreement.py --build build

Exit status: 0 pass, 1 fail, 77 skipped (torch, a peer binary or every dataset absent).
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

SKIP = 77
REPO = pathlib.Path(__file__).resolve().parents[1]
PEERS = REPO / "apps" / "peers"
TOLERANCE = 1e-3

# (model, data it needs, extra options, the keys that must agree)
CASES = [
    ("cnn", "/usr/share/datasets/fashion-mnist", ["--limit", "64", "--batch-size", "32", "--epochs", "1",
                                                  "--warmup", "0", "--norm", norm], ["test_loss", "test_acc"])
    for norm in ("batch", "group", "layer", "instance", "none")
] + [
    ("vit", str(REPO / "data" / "mnist"), ["--limit", "256", "--batch-size", "64", "--epochs", "1", "--warmup", "0"],
     ["test_loss", "test_acc"]),
    ("lm", "/usr/share/games/fortunes", ["--batch-size", "8", "--steps", "3", "--warmup-steps", "0",
                                         "--eval-windows", "8"],
     ["vocab", "train_tokens", "val_tokens", "train_loss", "val_loss"]),
]


def run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {proc.returncode}: {proc.stderr.strip()[-500:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def close(a, b):
    return abs(a - b) <= TOLERANCE * max(abs(a), abs(b), 1e-12)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=str(REPO / "build"))
    args = p.parse_args()
    try:
        import torch  # noqa: F401
    except ImportError:
        print(f"skipped: {sys.executable} cannot import torch (run with Debian's /usr/bin/python3)")
        return SKIP
    failures, ran = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, (model, data, extra, keys) in enumerate(CASES):
            binary = pathlib.Path(args.build) / "apps" / "peers" / f"libtorch_{model}"
            if not binary.is_file() or not os.path.exists(data):
                print(f"skipped {model}: {binary if not binary.is_file() else data} is missing")
                continue
            init = os.path.join(tmp, f"init{i}.safetensors")
            common = ["--data", data, "--order", "normnet", "--seed", "3", "--threads", "1", "--json"] + extra
            py = run([sys.executable, str(PEERS / f"torch_{model}.py"), "--save-init", init] + common)
            cpp = run([str(binary), "--init", init] + common)
            ran += 1
            label = f"{model} {' '.join(extra)}"
            for k in keys:
                same = py[k] == cpp[k] if isinstance(py[k], int) else close(py[k], cpp[k])
                print(f"{'ok  ' if same else 'FAIL'} {label}: {k} PyTorch {py[k]} libtorch {cpp[k]}")
                if not same:
                    failures.append(f"{label}: {k}")
    if not ran:
        return SKIP
    if failures:
        print("disagreements: " + "; ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
