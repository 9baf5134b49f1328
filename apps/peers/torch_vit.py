#!/usr/bin/python3
"""PyTorch peer of `normnet bench --model vit`: the small Vision Transformer of issue 13 on MNIST.

7x7 patches of a 28x28 image (16 tokens) embedded by conv_proj (Conv2d 1->64, kernel and stride
7), a class token in front, a learned positional embedding, 4 pre-LN TransformerEncoderLayers
(d_model 64, 4 heads, GELU, no dropout) with a final LayerNorm, and a linear head on the class
token; cross-entropy, Adam(lr 1e-3). The module names and initialisation are those of normnet's
VisionTransformer (see README.md). Reports the seconds per epoch of the training loop only, then
the test loss and accuracy. Run it with Debian's python3-torch:

    /usr/bin/python3 apps/peers/torch_vit.py --batch-size 128 --threads 1 --json
"""
import argparse
import sys
import time

import peer_common as pc


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    pc.add_common_args(p, pc.MNIST, 128)
    p.add_argument("--dim-feedforward", type=int, default=128, help="the blocks' MLP width (normnet's default)")
    p.add_argument("--norm-placement", choices=["pre", "post"], default="pre")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--epochs", type=int, default=1, help="timed epochs")
    p.add_argument("--warmup", type=float, default=0.05,
                   help="untimed warm-up, in epochs (a fraction is fine: 0.05 = first 5%% of an epoch)")
    p.add_argument("--limit", type=int, default=0, help="use only the first N images of each split (0: all)")
    args = p.parse_args()
    pc.check_positive(p, args, "batch_size", "epochs", "threads", "blas_threads", "dim_feedforward")
    if args.warmup < 0 or args.limit < 0:
        p.error("--warmup and --limit must be >= 0")
    return args


args = parse_args()
blas_threads = pc.setup_threads(args)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from peer_transformer import make_encoder  # noqa: E402

torch.set_num_threads(args.threads)


class VisionTransformer(nn.Module):
    """normnet::models::VisionTransformer in torch.nn (torchvision's names)."""

    def __init__(self, d_model=64, patch=7, image=28, layers=4, heads=4, classes=10):
        super().__init__()
        tokens = 1 + (image // patch) ** 2
        self.conv_proj = nn.Conv2d(1, d_model, patch, stride=patch)
        self.class_token = nn.Parameter(torch.zeros(1, 1, d_model))
        self.pos_embedding = nn.Parameter(torch.empty(1, tokens, d_model).normal_(0.0, 0.02))
        self.encoder = make_encoder(d_model, heads, args.dim_feedforward, layers, args.norm_placement == "pre")
        self.head = nn.Linear(d_model, classes)

    def forward(self, x):
        n = x.shape[0]
        patches = self.conv_proj(x).flatten(2).transpose(1, 2)  # [N, D, 4, 4] -> [N, 16, D]
        h = torch.cat([self.class_token.expand(n, -1, -1), patches], 1) + self.pos_embedding
        return self.head(self.encoder(h)[:, 0])


def train_epoch(model, opt, order, x, y, max_batches=None):
    model.train()
    perm = order.next()
    for b, start in enumerate(range(0, x.shape[0], args.batch_size)):
        if max_batches is not None and b >= max_batches:
            break
        idx = perm[start:start + args.batch_size]  # the last partial batch is kept
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()


def evaluate(model, x, y):
    """Mean test cross-entropy and accuracy in eval mode, in chunks of 500."""
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
    x_train, y_train = pc.load_images(args.data, "train", args.limit, "torch_vit")
    x_test, y_test = pc.load_images(args.data, "t10k", args.limit, "torch_vit")
    model = VisionTransformer()
    pc.init_weights(model, args, "torch_vit")
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    n = x_train.shape[0]
    order = pc.EpochOrder(args.order, n, args.seed)

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
    rss = pc.peak_rss_mb()  # the training loop's peak, before evaluation
    test_loss, test_acc = evaluate(model, x_test, y_test)

    median = pc.median(seconds)
    result = {
        "impl": "pytorch", "model": "vit", "norm": "layer", "batch": args.batch_size,
        "threads": args.threads, "blas_threads": blas_threads, "samples": n,
        "epochs_seconds": [round(s, 4) for s in seconds], "median_seconds": round(median, 4),
        "samples_per_second": round(n / median, 1), "peak_rss_mb": rss,
        "test_loss": round(test_loss, 6), "test_acc": round(test_acc, 4), "version": torch.__version__,
    }
    pc.emit(args, result,
            f"pytorch {torch.__version__}, vit, batch {args.batch_size}, threads {args.threads} (BLAS {blas_threads}): "
            f"median {median:.3f} s/epoch of {n}, {result['samples_per_second']:.0f} samples/s, "
            f"test loss {test_loss:.4f}, test acc {test_acc:.4f}, peak RSS {rss:.0f} MB")


if __name__ == "__main__":
    sys.exit(main())
