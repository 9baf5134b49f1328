#!/usr/bin/python3
"""PyTorch peer of `normnet bench --model lm`: the character-level GPT-style decoder of issue 13.

Token embedding plus a learned positional embedding, 4 pre-LN TransformerEncoderLayers (d_model
128, 4 heads, feed-forward 512, GELU, no dropout) under a causal mask, a final LayerNorm and a
linear head without bias; cross-entropy on next-character prediction, AdamW. The corpus (Debian's
fortunes by default) is read, split and encoded as normnet's load_text_corpus does; batches are
random windows of --context + 1 characters. Times --steps optimizer steps (after --warmup-steps
untimed ones), reports tokens/s, then the validation loss over the held-out stream's
non-overlapping windows. Run it with Debian's python3-torch:

    /usr/bin/python3 apps/peers/torch_lm.py --batch-size 32 --steps 50 --threads 1 --json
"""
import argparse
import math
import sys
import time

import peer_common as pc


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    pc.add_common_args(p, pc.FORTUNES, 32)
    p.add_argument("--context", type=int, default=128)
    p.add_argument("--norm-placement", choices=["pre", "post"], default="pre")
    p.add_argument("--steps", type=int, default=50, help="timed optimizer steps")
    p.add_argument("--warmup-steps", type=int, default=5, help="untimed optimizer steps before them")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--weight-decay", type=float, default=0.01, help="AdamW's decoupled weight decay (torch's default)")
    p.add_argument("--val-fraction", type=float, default=0.05, help="share of the records held out")
    p.add_argument("--eval-windows", type=int, default=0,
                   help="validation windows of --context characters (0: the whole held-out stream)")
    args = p.parse_args()
    pc.check_positive(p, args, "batch_size", "steps", "threads", "blas_threads", "context")
    if args.warmup_steps < 0 or args.eval_windows < 0 or not 0 <= args.val_fraction < 1:
        p.error("--warmup-steps and --eval-windows must be >= 0, --val-fraction in [0, 1)")
    return args


args = parse_args()
blas_threads = pc.setup_threads(args)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from peer_transformer import make_encoder  # noqa: E402

torch.set_num_threads(args.threads)


class CharTransformer(nn.Module):
    """normnet::models::CharTransformer in torch.nn: tok_emb, pos_emb, encoder, head."""

    def __init__(self, vocab, context, d_model=128, layers=4, heads=4):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, d_model)
        nn.init.normal_(self.tok_emb.weight, 0.0, 0.02)  # GPT-2's rule, as normnet
        self.pos_emb = nn.Parameter(torch.empty(context, d_model).normal_(0.0, 0.02))
        self.encoder = make_encoder(d_model, heads, 4 * d_model, layers, args.norm_placement == "pre")
        self.head = nn.Linear(d_model, vocab, bias=False)
        self.register_buffer("causal", torch.triu(torch.full((context, context), float("-inf")), 1), persistent=False)

    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.tok_emb(tokens) + self.pos_emb[:t]
        return self.head(self.encoder(x, mask=self.causal[:t, :t]))


class Windows:
    """Batches of random windows [o, o + T] of a token stream, as normnet's TextBatches: offsets
    o in [0, n - T) from normnet's generator seeded with --seed (--order normnet) or torch.randint."""

    def __init__(self, tokens):
        self.tokens = tokens
        self.starts = tokens.numel() - args.context
        if self.starts < 1:
            pc.fail("torch_lm", f"the text ({tokens.numel()} characters) is not longer than the context ({args.context})")
        self.gen = pc.NormnetGenerator(args.seed) if args.order == "normnet" else None
        self.span = torch.arange(args.context + 1)

    def next(self):
        if self.gen:
            o = torch.tensor([self.gen.below(self.starts) for _ in range(args.batch_size)])
        else:
            o = torch.randint(0, self.starts, (args.batch_size,))
        w = self.tokens[o[:, None] + self.span]
        return w[:, :-1], w[:, 1:]


def step(model, opt, batches, vocab):
    x, y = batches.next()
    loss = F.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


def evaluate(model, val, vocab):
    """Mean cross-entropy (nats) over the held-out stream's consecutive windows w: inputs
    [wT, wT + T), targets shifted by one (TextBatches::window), in chunks of 64 windows."""
    t = args.context
    windows = (val.numel() - 1) // t
    if args.eval_windows:
        windows = min(windows, args.eval_windows)
    model.eval()
    total = 0.0
    with torch.no_grad():
        for w0 in range(0, windows, 64):
            w1 = min(windows, w0 + 64)
            x = val[w0 * t:w1 * t].view(-1, t)
            y = val[w0 * t + 1:w1 * t + 1].view(-1, t)
            total += F.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1), reduction="sum").item()
    return total / max(1, windows * t)


def main():
    torch.manual_seed(args.seed)
    vocab, train, val = pc.load_corpus(args.data, args.val_fraction, "torch_lm")
    train, val = torch.tensor(train, dtype=torch.int64), torch.tensor(val, dtype=torch.int64)
    model = CharTransformer(len(vocab), args.context)
    pc.init_weights(model, args, "torch_lm")
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    batches = Windows(train)
    model.train()
    for _ in range(args.warmup_steps):
        step(model, opt, batches, len(vocab))
    t0 = time.perf_counter()
    seconds = []
    for s in range(args.steps):
        t1 = time.perf_counter()
        loss = step(model, opt, batches, len(vocab))
        seconds.append(time.perf_counter() - t1)
        if (s + 1) % 10 == 0 or s + 1 == args.steps:
            pc.progress(args, f"step {s + 1}: loss {loss:.4f}, {seconds[-1]:.3f} s")
    total = time.perf_counter() - t0
    rss = pc.peak_rss_mb()  # the training loop's peak, before evaluation
    val_loss = evaluate(model, val, len(vocab))

    tokens = args.steps * args.batch_size * args.context
    result = {
        "impl": "pytorch", "model": "lm", "norm": "layer", "batch": args.batch_size,
        "threads": args.threads, "blas_threads": blas_threads, "context": args.context, "vocab": len(vocab),
        "train_tokens": train.numel(), "val_tokens": val.numel(),
        "steps": args.steps, "seconds": round(total, 4), "median_step_seconds": round(pc.median(seconds), 5),
        "tokens_per_second": round(tokens / total, 1), "peak_rss_mb": rss, "train_loss": round(loss, 6),
        "val_loss": round(val_loss, 6), "version": torch.__version__,
    }
    pc.emit(args, result,
            f"pytorch {torch.__version__}, lm, batch {args.batch_size}, threads {args.threads} (BLAS {blas_threads}): "
            f"{args.steps} steps in {total:.3f} s, {tokens / total:.0f} tokens/s, peak RSS {rss:.0f} MB\n"
            f"val loss {val_loss:.4f} nats ({val_loss / math.log(2):.3f} bits/char)")


if __name__ == "__main__":
    sys.exit(main())
