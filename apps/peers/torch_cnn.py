#!/usr/bin/python3
"""PyTorch peer of `normnet bench --model cnn`: the small CNN of issue 12 on Fashion-MNIST.

conv 3x3 1->32 (padding 1), norm, ReLU, max-pool 2, conv 3x3 32->64 (padding 1), norm, ReLU,
max-pool 2, flatten, linear 3136->128, ReLU, linear 128->10; cross-entropy, Adam(lr 1e-3).
Reports the seconds per epoch of the training loop only (the IDX files are read and turned into
float tensors first). Run it with Debian's python3-torch:

    /usr/bin/python3 apps/peers/torch_cnn.py --batch-size 128 --norm batch --threads 1 --json
"""
import argparse
import sys
import time

import peer_common as pc

NORMS = ["batch", "group", "layer", "instance", "none"]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    pc.add_common_args(p, pc.FASHION_MNIST, 128)
    p.add_argument("--norm", choices=NORMS, default="batch")
    p.add_argument("--groups", type=int, default=8, help="GroupNorm's num_groups (--norm group)")
    p.add_argument("--epochs", type=int, default=1, help="timed epochs")
    p.add_argument("--warmup", type=float, default=0.05,
                   help="untimed warm-up, in epochs (a fraction is fine: 0.05 = first 5%% of an epoch)")
    p.add_argument("--limit", type=int, default=0, help="use only the first N images of each split (0: all)")
    args = p.parse_args()
    pc.check_positive(p, args, "batch_size", "epochs", "threads", "blas_threads", "groups")
    if args.warmup < 0 or args.limit < 0:
        p.error("--warmup and --limit must be >= 0")
    if 32 % args.groups or 64 % args.groups:
        p.error(f"--groups {args.groups} must divide both channel counts (32 and 64)")
    return args


args = parse_args()
blas_threads = pc.setup_threads(args)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(args.threads)


def make_norm(channels):
    """The normalisation after a convolution with `channels` maps: the rows of normnet's norm
    table for a CNN (apps/normnet/norms.cpp)."""
    if args.norm == "batch":
        return nn.BatchNorm2d(channels)
    if args.norm == "group":
        return nn.GroupNorm(args.groups, channels)
    if args.norm == "layer":
        return nn.GroupNorm(1, channels)  # Wu and He's LayerNorm, as normnet's CNN: per-channel affine
    if args.norm == "instance":
        return nn.InstanceNorm2d(channels, affine=True)
    return None  # none: no module at all, so the state_dict's indices are those of normnet's CNN


def make_model():
    layers = [nn.Conv2d(1, 32, 3, padding=1), make_norm(32), nn.ReLU(), nn.MaxPool2d(2),
              nn.Conv2d(32, 64, 3, padding=1), make_norm(64), nn.ReLU(), nn.MaxPool2d(2),
              nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10)]
    return nn.Sequential(*[m for m in layers if m is not None])


def train_epoch(model, opt, order, x, y, max_batches=None):
    model.train()
    perm = order.next()
    n = x.shape[0]
    for b, start in enumerate(range(0, n, args.batch_size)):
        if max_batches is not None and b >= max_batches:
            break
        idx = perm[start:start + args.batch_size]  # the last partial batch is kept ...
        if len(idx) == 1 and args.norm == "batch":
            break  # ... unless BatchNorm would see a single sample (normnet drops it too)
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()


def evaluate(model, x, y):
    """Mean test cross-entropy and accuracy in eval mode, in chunks (one 10,000-image forward
    would take 1 GB)."""
    model.eval()
    loss, correct = 0.0, 0
    with torch.no_grad():
        for s in range(0, x.shape[0], 500):
            logits = model(x[s:s + 500])
            loss += F.cross_entropy(logits, y[s:s + 500], reduction="sum").item()
            correct += (logits.argmax(1) == y[s:s + 500]).sum().item()
    n = max(1, x.shape[0])
    return loss / n, correct / n


def main():
    torch.manual_seed(args.seed)
    x_train, y_train = pc.load_images(args.data, "train", args.limit, "torch_cnn")
    x_test, y_test = pc.load_images(args.data, "t10k", args.limit, "torch_cnn")
    model = make_model()
    pc.init_weights(model, args, "torch_cnn")
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    n = x_train.shape[0]
    order = pc.EpochOrder(args.order, n, args.seed)

    # Warm-up: first touch of allocator and thread pools, not measured.
    batches_per_epoch = -(-n // args.batch_size)
    whole, frac = int(args.warmup), args.warmup - int(args.warmup)
    for _ in range(whole):
        train_epoch(model, opt, order, x_train, y_train)
    if frac > 0:
        train_epoch(model, opt, order, x_train, y_train, max_batches=max(1, round(frac * batches_per_epoch)))

    seconds = []
    for e in range(args.epochs):
        t0 = time.perf_counter()
        train_epoch(model, opt, order, x_train, y_train)
        seconds.append(time.perf_counter() - t0)
        pc.progress(args, f"epoch {e + 1}: {seconds[-1]:.3f} s")
    rss = pc.peak_rss_mb()  # the training loop's peak, before the evaluation's larger batches
    test_loss, test_acc = evaluate(model, x_test, y_test)

    median = pc.median(seconds)
    result = {
        "impl": "pytorch", "model": "cnn", "norm": args.norm, "batch": args.batch_size,
        "threads": args.threads, "blas_threads": blas_threads, "samples": n,
        "epochs_seconds": [round(s, 4) for s in seconds], "median_seconds": round(median, 4),
        "samples_per_second": round(n / median, 1), "peak_rss_mb": rss,
        "test_loss": round(test_loss, 6), "test_acc": round(test_acc, 4), "version": torch.__version__,
    }
    pc.emit(args, result,
            f"pytorch {torch.__version__}, cnn, norm {args.norm}, batch {args.batch_size}, threads {args.threads} "
            f"(BLAS {blas_threads}): median {median:.3f} s/epoch of {n}, {result['samples_per_second']:.0f} "
            f"samples/s, test loss {test_loss:.4f}, test acc {test_acc:.4f}, peak RSS {rss:.0f} MB")


if __name__ == "__main__":
    sys.exit(main())
