"""What the PyTorch peers of the CNN, the ViT and the character LM share (torch_cnn.py,
torch_vit.py, torch_lm.py): options, thread setup, the datasets read exactly as normnet reads
them, normnet's random generator and data orders re-implemented bit for bit, initial weights from
a safetensors file, and the one-line JSON result.

Import it before torch and call setup_threads() first: Debian's torch sizes its OpenBLAS pool
from the environment when the library loads (see README.md, "Threads").
"""
import gzip
import json
import os
import pathlib
import resource
import statistics
import struct
import sys

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
MNIST = str(REPO_ROOT / "data" / "mnist")
FASHION_MNIST = "/usr/share/datasets/fashion-mnist"
FORTUNES = "/usr/share/games/fortunes"
MASK64 = (1 << 64) - 1


def add_common_args(p, data, batch_size):
    """The options every peer has, with the same names as libtorch_mlp / torch_mlp.py."""
    p.add_argument("--data", default=data, help=f"dataset location (default {data})")
    p.add_argument("--batch-size", type=int, default=batch_size)
    p.add_argument("--threads", type=int, default=1,
                   help="intra-op threads (torch.set_num_threads) and OpenBLAS threads")
    p.add_argument("--blas-threads", type=int, default=None,
                   help="OpenBLAS threads, if they should differ from --threads")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--order", choices=["torch", "normnet"], default="torch",
                   help="data order: torch's randperm / randint, or normnet's generator (bit for bit)")
    p.add_argument("--init", metavar="FILE.safetensors",
                   help="start from these weights (a state_dict, e.g. written by normnet) instead of torch's init")
    p.add_argument("--save-init", metavar="FILE.safetensors",
                   help="write the initial weights (the state_dict before training) to this file")
    p.add_argument("--json", action="store_true", help="print one line of JSON on stdout")


def check_positive(p, args, *names):
    for name in names:
        if getattr(args, name) is not None and getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")


def setup_threads(args):
    """Sizes OpenMP and OpenBLAS before `import torch`; returns the OpenBLAS thread count."""
    blas = args.blas_threads or args.threads
    os.environ["OPENBLAS_NUM_THREADS"] = str(blas)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    return blas


def fail(prog, msg):
    sys.exit(f"{prog}: error: {msg}")


# --- data ------------------------------------------------------------------------------------

def read_idx(path, expected_magic, prog):
    """The payload of an IDX file (raw, or gzipped: told apart by gzip's magic bytes, as normnet
    does) as a numpy uint8 array shaped by its header. `path` may name the file without .gz."""
    import numpy as np
    path = pathlib.Path(path)
    if not path.exists() and pathlib.Path(str(path) + ".gz").exists():
        path = pathlib.Path(str(path) + ".gz")
    try:
        raw = path.read_bytes()
    except OSError as e:
        fail(prog, f"{e.strerror}: {path} (pass the dataset folder with --data)")
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    magic = int.from_bytes(raw[0:4], "big")
    if magic != expected_magic:
        fail(prog, f"{path}: magic {magic:#x}, expected {expected_magic:#x}")
    ndim = magic & 0xFF
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        fail(prog, f"{path}: {data.size} bytes of data, header says {dims}")
    return data.reshape(dims)


def load_images(folder, split, limit, prog):
    """Images as float32 [N, 1, 28, 28] = pixel / 255 (normnet's loader without standardising),
    labels as int64 [N]; the first `limit` of the split when limit > 0, as `normnet --limit`."""
    import torch
    images = read_idx(pathlib.Path(folder) / f"{split}-images-idx3-ubyte", 0x803, prog)
    labels = read_idx(pathlib.Path(folder) / f"{split}-labels-idx1-ubyte", 0x801, prog)
    if limit:
        images, labels = images[:limit], labels[:limit]
    x = torch.from_numpy(images.copy()).unsqueeze(1).float().div_(255.0)
    y = torch.from_numpy(labels.astype("int64"))
    return x, y


def split_records(text):
    """A fortune file's records: the pieces between lines holding a single %, each ending with
    its own newline (normnet's split_records in src/data/text.cpp)."""
    records, current = [], []
    lines = text.split("\n")
    for i, line in enumerate(lines):
        last = i == len(lines) - 1
        if line == "%":
            if current:
                records.append("".join(current))
            current = []
        else:
            current.append(line + ("" if last else "\n"))
    if "".join(current):
        records.append("".join(current))
    return records


def load_corpus(path, val_fraction, prog):
    """normnet's load_text_corpus (src/data/text.cpp): a file, or a folder's regular files in
    name order (no symbolic links, no *.dat); strict UTF-8; records split at % lines; every k-th
    record held out (k where floor((k + 1) f) > floor(k f)), each followed by "%\\n"; the vocabulary
    is the sorted code points of both streams. Returns (vocab, train ids, val ids) as lists."""
    p = pathlib.Path(path)
    if p.is_dir():
        files = sorted(f for f in p.iterdir() if f.is_file() and not f.is_symlink() and f.suffix != ".dat")
    elif p.exists():
        files = [p]
    else:
        fail(prog, f"no such file or folder: {path} (install Debian's fortunes, or pass --data)")
    records, fortune_format = [], False
    for f in files:
        try:
            r = split_records(f.read_bytes().decode("utf-8", errors="strict"))
        except UnicodeDecodeError as e:
            fail(prog, f"{f}: invalid UTF-8 at byte {e.start}")
        fortune_format = fortune_format or len(r) > 1
        records += r
    if not records:
        fail(prog, f"{path}: no text")
    if len(records) > 1:
        train, val = [], []
        for k, rec in enumerate(records):
            held_out = int((k + 1) * val_fraction) > int(k * val_fraction)
            (val if held_out else train).append(rec + ("%\n" if fortune_format else ""))
        train, val = "".join(train), "".join(val)
    else:
        cut = int(len(records[0]) * (1.0 - val_fraction))
        train, val = records[0][:cut], records[0][cut:]
    vocab = sorted(set(train) | set(val))
    index = {c: i for i, c in enumerate(vocab)}
    return vocab, [index[c] for c in train], [index[c] for c in val]


# --- normnet's generator and data orders -----------------------------------------------------

class NormnetGenerator:
    """normnet::Generator (src/tensor.cpp): xoshiro256** seeded by four splitmix64 draws."""

    def __init__(self, seed):
        x = seed & MASK64
        self.s = []
        for _ in range(4):
            x = (x + 0x9E3779B97F4A7C15) & MASK64
            z = x
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
            self.s.append(z ^ (z >> 31))

    def next_u64(self):
        s0, s1, s2, s3 = self.s
        r = (s1 * 5) & MASK64
        result = ((((r << 7) | (r >> 57)) & MASK64) * 9) & MASK64
        t = (s1 << 17) & MASK64
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = ((s3 << 45) | (s3 >> 19)) & MASK64
        self.s = [s0, s1, s2, s3]
        return result

    def below(self, n):
        """Uniform in [0, n), rejection against modulo bias (Generator::below)."""
        threshold = (-n) % n
        while True:
            r = self.next_u64()
            if r >= threshold:
                return r % n


def normnet_epoch_order(n, seed, epoch):
    """The sample order of normnet's DataLoader (shuffle on) in epoch `epoch` (0-based)."""
    gen = NormnetGenerator((seed * 0x9E3779B97F4A7C15 + epoch * 0xBF58476D1CE4E5B9 + 1) & MASK64)
    order = list(range(n))
    for i in range(n - 1, 0, -1):
        j = gen.below(i + 1)
        order[i], order[j] = order[j], order[i]
    return order


class EpochOrder:
    """Per-epoch sample orders: torch.randperm (after torch.manual_seed(seed)) or normnet's."""

    def __init__(self, kind, n, seed):
        self.kind, self.n, self.seed, self.epoch = kind, n, seed, 0

    def next(self):
        import torch
        if self.kind == "normnet":
            perm = torch.tensor(normnet_epoch_order(self.n, self.seed, self.epoch), dtype=torch.int64)
        else:
            perm = torch.randperm(self.n)
        self.epoch += 1
        return perm


# --- the image models' loop -------------------------------------------------------------------

def train_epoch(model, opt, perm, x, y, batch_size, max_batches=None, batch_norm=False):
    """One pass over `perm` in batches (the last partial one kept, unless BatchNorm would see a
    single sample: normnet drops it too), as a user's loop does it: index, forward, backward, step."""
    import torch.nn.functional as F
    model.train()
    for b, start in enumerate(range(0, x.shape[0], batch_size)):
        if max_batches is not None and b >= max_batches:
            break
        idx = perm[start:start + batch_size]
        if batch_norm and len(idx) == 1:
            break
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()


def timed_epochs(args, n, epoch):
    """Runs `epoch(max_batches)` for --warmup epochs untimed (a fraction runs the first part of
    one: first touch of allocator and thread pools) and --epochs timed; returns their seconds."""
    import time
    whole, frac = int(args.warmup), args.warmup - int(args.warmup)
    for _ in range(whole):
        epoch(None)
    if frac > 0:
        epoch(max(1, round(frac * -(-n // args.batch_size))))
    seconds = []
    for e in range(args.epochs):
        t0 = time.perf_counter()
        epoch(None)
        seconds.append(time.perf_counter() - t0)
        progress(args, f"epoch {e + 1}: {seconds[-1]:.3f} s")
    return seconds


def evaluate_images(model, x, y):
    """Mean cross-entropy and accuracy in eval mode, in chunks of 500 (one 10,000-image forward
    of the CNN would take 1 GB)."""
    import torch
    import torch.nn.functional as F
    model.eval()
    loss, correct = 0.0, 0
    with torch.no_grad():
        for s in range(0, x.shape[0], 500):
            logits = model(x[s:s + 500])
            loss += F.cross_entropy(logits, y[s:s + 500], reduction="sum").item()
            correct += (logits.argmax(1) == y[s:s + 500]).sum().item()
    n = max(1, x.shape[0])
    return loss / n, correct / n


def image_result(args, model_name, norm, n, seconds, blas_threads, test_loss, test_acc, rss):
    """The JSON result and the one-line summary of an image model's run."""
    import torch
    median = statistics.median(seconds)
    result = {
        "impl": "pytorch", "model": model_name, "norm": norm, "batch": args.batch_size,
        "threads": args.threads, "blas_threads": blas_threads, "samples": n,
        "epochs_seconds": [round(s, 4) for s in seconds], "median_seconds": round(median, 4),
        "samples_per_second": round(n / median, 1), "peak_rss_mb": rss,
        "test_loss": round(test_loss, 6), "test_acc": round(test_acc, 4), "version": torch.__version__,
    }
    emit(args, result,
         f"pytorch {torch.__version__}, {model_name}, norm {norm}, batch {args.batch_size}, threads {args.threads} "
         f"(BLAS {blas_threads}): median {median:.3f} s/epoch of {n}, {n / median:.0f} samples/s, "
         f"test loss {test_loss:.4f}, test acc {test_acc:.4f}, peak RSS {rss:.0f} MB")


def add_image_args(p):
    """The image models' own options."""
    p.add_argument("--epochs", type=int, default=1, help="timed epochs")
    p.add_argument("--warmup", type=float, default=0.05,
                   help="untimed warm-up, in epochs (a fraction is fine: 0.05 = first 5%% of an epoch)")
    p.add_argument("--limit", type=int, default=0, help="use only the first N images of each split (0: all)")


# --- weights ---------------------------------------------------------------------------------

def read_safetensors(path, prog):
    """{name: torch tensor} from a safetensors file (8-byte little-endian header length, JSON
    header, raw little-endian data), without the safetensors package."""
    import numpy as np
    import torch
    dtypes = {"F32": "<f4", "F64": "<f8", "I64": "<i8"}
    try:
        data = pathlib.Path(path).read_bytes()
    except OSError as e:
        fail(prog, f"--init: {e.strerror}: {path}")
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, e in header.items():
        begin, end = e["data_offsets"]
        arr = np.frombuffer(data[8 + n + begin:8 + n + end], dtype=dtypes[e["dtype"]]).reshape(e["shape"])
        out[name] = torch.from_numpy(arr.copy())
    return out


def write_safetensors(path, state):
    """A state_dict as safetensors (the header padded to 8 bytes with spaces, as the format asks)."""
    import torch
    codes = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64"}
    header, blobs, offset = {}, [], 0
    for name, t in state.items():
        data = t.detach().contiguous().numpy().tobytes()
        header[name] = {"dtype": codes[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    pathlib.Path(path).write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def init_weights(model, args, prog):
    """--init: loads a state_dict strictly (a missing or extra name is an error, not a silent
    default); --save-init: writes the starting weights, for another peer's or normnet's --init."""
    if args.init:
        try:
            model.load_state_dict(read_safetensors(args.init, prog), strict=True)
        except RuntimeError as e:
            fail(prog, f"--init {args.init}: {' '.join(str(e).split())[:400]}")
    if args.save_init:
        write_safetensors(args.save_init, model.state_dict())


# --- result ----------------------------------------------------------------------------------

def peak_rss_mb():
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def median(xs):
    return statistics.median(xs)


def progress(args, msg):
    """With --json, stdout carries only the JSON line; progress goes to stderr."""
    print(msg, file=sys.stderr if args.json else sys.stdout, flush=True)


def emit(args, result, summary):
    if args.json:
        print(json.dumps(result), flush=True)
    else:
        print(summary, flush=True)
