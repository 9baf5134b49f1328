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

import peer_common as pc

NORMS = ["batch", "group", "layer", "instance", "none"]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    pc.add_common_args(p, pc.FASHION_MNIST, 128)
    p.add_argument("--norm", choices=NORMS, default="batch")
    p.add_argument("--groups", type=int, default=8, help="GroupNorm's num_groups (--norm group)")
    pc.add_image_args(p)
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


def main():
    torch.manual_seed(args.seed)
    x_train, y_train = pc.load_images(args.data, "train", args.limit, "torch_cnn")
    x_test, y_test = pc.load_images(args.data, "t10k", args.limit, "torch_cnn")
    model = make_model()
    pc.init_weights(model, args, "torch_cnn")
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    n = x_train.shape[0]
    order = pc.EpochOrder(args.order, n, args.seed)
    seconds = pc.timed_epochs(args, n, lambda max_batches: pc.train_epoch(
        model, opt, order.next(), x_train, y_train, args.batch_size, max_batches, args.norm == "batch"))
    rss = pc.peak_rss_mb()  # the training loop's peak, before the evaluation's larger batches
    test_loss, test_acc = pc.evaluate_images(model, x_test, y_test)
    pc.image_result(args, "cnn", args.norm, n, seconds, blas_threads, test_loss, test_acc, rss)


if __name__ == "__main__":
    sys.exit(main())
