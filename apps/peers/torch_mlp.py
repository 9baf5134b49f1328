#!/usr/bin/python3
"""PyTorch peer for normnet's speed benchmark.

Trains the seed MLP 784-300-100-10 (Linear, ReLU, Norm, Linear, ReLU, Norm, Linear) on MNIST
with cross-entropy and Adam(lr 1e-3), exactly the workload `normnet bench` times, and reports
the seconds per epoch of the training loop only. Run it with Debian's python3-torch:

    /usr/bin/python3 apps/peers/torch_mlp.py --batch-size 128 --norm layer --threads 2 --json

The data is read from the raw IDX files and turned into float tensors before any timing; the
timed loop does what a user's loop does: randperm, index a batch, forward, backward, step.
"""
import argparse
import json
import os
import pathlib
import resource
import statistics
import sys
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(REPO_ROOT / "data" / "mnist"),
                   help="directory holding the four raw MNIST IDX files")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--norm", choices=["layer", "batch", "none"], default="layer")
    p.add_argument("--epochs", type=int, default=3, help="timed epochs")
    p.add_argument("--warmup", type=float, default=0.1,
                   help="untimed warm-up, in epochs (a fraction is fine: 0.1 = first 10%% of an epoch)")
    p.add_argument("--threads", type=int, default=1,
                   help="intra-op threads (torch.set_num_threads) and OpenBLAS threads")
    p.add_argument("--blas-threads", type=int, default=None,
                   help="OpenBLAS threads, if they should differ from --threads")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print one line of JSON on stdout")
    args = p.parse_args()
    if args.batch_size < 1 or args.epochs < 1 or args.threads < 1 or args.warmup < 0:
        p.error("--batch-size, --epochs and --threads must be >= 1, --warmup >= 0")
    return args


args = parse_args()
# Debian's torch does its matrix products in OpenBLAS (pthread build), whose thread pool
# torch.set_num_threads does not control and which reads its size once, when the library
# loads. So the environment must be set before `import torch`.
blas_threads = args.blas_threads or args.threads
os.environ["OPENBLAS_NUM_THREADS"] = str(blas_threads)
os.environ["OMP_NUM_THREADS"] = str(args.threads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(args.threads)


def read_idx(path, expected_magic):
    """Returns the payload of an IDX file as a uint8 array shaped by its header."""
    try:
        raw = pathlib.Path(path).read_bytes()
    except OSError as e:
        sys.exit(f"torch_mlp: error: {e.strerror}: {path} (fetch MNIST with data/fetch_mnist.sh, or pass --data)")
    magic = int.from_bytes(raw[0:4], "big")
    if magic != expected_magic:
        sys.exit(f"torch_mlp: error: {path}: magic {magic:#x}, expected {expected_magic:#x}")
    ndim = magic & 0xFF
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        sys.exit(f"torch_mlp: error: {path}: {data.size} bytes of data, header says {dims}")
    return data.reshape(dims)


def load_split(prefix):
    """Images as float32 [N, 784] in [0, 1], labels as int64 [N]."""
    d = pathlib.Path(args.data)
    images = read_idx(d / f"{prefix}-images-idx3-ubyte", 0x803)
    labels = read_idx(d / f"{prefix}-labels-idx1-ubyte", 0x801)
    x = torch.from_numpy(images.reshape(len(images), -1).astype(np.float32) / 255.0)
    y = torch.from_numpy(labels.astype(np.int64))
    return x, y


def make_norm(features):
    if args.norm == "layer":
        return nn.LayerNorm(features)
    if args.norm == "batch":
        return nn.BatchNorm1d(features)
    return nn.Identity()


def train_epoch(model, opt, x, y, max_batches=None):
    model.train()
    n = x.shape[0]
    perm = torch.randperm(n)
    for b, start in enumerate(range(0, n, args.batch_size)):
        if max_batches is not None and b >= max_batches:
            break
        idx = perm[start:start + args.batch_size]  # the last partial batch is kept
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()


def main():
    torch.manual_seed(args.seed)
    x_train, y_train = load_split("train")
    x_test, y_test = load_split("t10k")

    model = nn.Sequential(
        nn.Linear(784, 300), nn.ReLU(), make_norm(300),
        nn.Linear(300, 100), nn.ReLU(), make_norm(100),
        nn.Linear(100, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    # Warm-up: first-touch of allocator pools and thread pools, not measured.
    batches_per_epoch = -(-x_train.shape[0] // args.batch_size)
    whole, frac = int(args.warmup), args.warmup - int(args.warmup)
    for _ in range(whole):
        train_epoch(model, opt, x_train, y_train)
    if frac > 0:
        train_epoch(model, opt, x_train, y_train, max_batches=max(1, round(frac * batches_per_epoch)))

    seconds = []
    for e in range(args.epochs):
        t0 = time.perf_counter()
        train_epoch(model, opt, x_train, y_train)
        seconds.append(time.perf_counter() - t0)
        # With --json, stdout carries only the JSON line; progress goes to stderr.
        print(f"epoch {e + 1}: {seconds[-1]:.3f} s", file=sys.stderr if args.json else sys.stdout,
              flush=True)

    model.eval()
    with torch.no_grad():
        test_acc = (model(x_test).argmax(1) == y_test).float().mean().item()

    median = statistics.median(seconds)
    result = {
        "impl": "pytorch",
        "norm": args.norm,
        "batch": args.batch_size,
        "threads": args.threads,
        "blas_threads": blas_threads,
        "epochs_seconds": [round(s, 4) for s in seconds],
        "median_seconds": round(median, 4),
        "samples_per_second": round(x_train.shape[0] / median, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "test_acc": round(test_acc, 4),
        "version": torch.__version__,
    }
    if args.json:
        print(json.dumps(result), flush=True)
    else:
        print(f"pytorch {torch.__version__}, norm {args.norm}, batch {args.batch_size}, "
              f"threads {args.threads} (BLAS {blas_threads}): median {median:.3f} s/epoch, "
              f"{result['samples_per_second']:.0f} samples/s, test acc {test_acc:.4f}, "
              f"peak RSS {result['peak_rss_mb']:.0f} MB")


if __name__ == "__main__":
    main()
