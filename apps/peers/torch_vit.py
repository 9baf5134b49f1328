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

import peer_common as pc


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    pc.add_common_args(p, pc.MNIST, 128)
    p.add_argument("--dim-feedforward", type=int, default=128, help="the blocks' MLP width (normnet's default)")
    p.add_argument("--norm-placement", choices=["pre", "post"], default="pre")
    p.add_argument("--lr", type=float, default=1e-3)
    pc.add_image_args(p)
    args = p.parse_args()
    pc.check_positive(p, args, "batch_size", "epochs", "threads", "blas_threads", "dim_feedforward")
    if args.warmup < 0 or args.limit < 0:
        p.error("--warmup and --limit must be >= 0")
    return args


args = parse_args()
blas_threads = pc.setup_threads(args)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

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


def main():
    torch.manual_seed(args.seed)
    x_train, y_train = pc.load_images(args.data, "train", args.limit, "torch_vit")
    x_test, y_test = pc.load_images(args.data, "t10k", args.limit, "torch_vit")
    model = VisionTransformer()
    pc.init_weights(model, args, "torch_vit")
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    n = x_train.shape[0]
    order = pc.EpochOrder(args.order, n, args.seed)
    seconds = pc.timed_epochs(args, n, lambda max_batches: pc.train_epoch(
        model, opt, order.next(), x_train, y_train, args.batch_size, max_batches))
    rss = pc.peak_rss_mb()  # the training loop's peak, before evaluation
    test_loss, test_acc = pc.evaluate_images(model, x_test, y_test)
    pc.image_result(args, "vit", "layer", n, seconds, blas_threads, test_loss, test_acc, rss)


if __name__ == "__main__":
    sys.exit(main())
