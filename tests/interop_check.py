#!/usr/bin/python3
"""PyTorch interop check: a checkpoint written by `normnet train` loads unchanged into the
equivalent torch.nn.Sequential and gives the same predictions and test accuracy.

For each normalisation of the MLP (layer, batch, none, rms) and of the CNN (batch, group, layer,
instance, none), the ViT with LayerNorm pre- and post-LN (torch has no RMSNorm in 1.13, and
normnet's BatchNorm over batch x tokens is no torch module) and the row LSTM with and without
LayerNorm it trains a small run with normnet, evaluates it
with `normnet eval --predictions`, reads model.safetensors with the minimal numpy parser below
(no safetensors package), rebuilds the model from the architecture in the file's __metadata__,
loads the tensors exactly as stored with load_state_dict(strict=True) -- BatchNorm's running
statistics and int64 num_batches_tracked included -- and compares predictions on the MNIST test
images in eval mode.

Needs only Debian's python3-torch and numpy (run it with /usr/bin/python3). Exit status: 0 pass,
1 fail, 77 skipped (torch or MNIST absent), as CTest's SKIP_RETURN_CODE expects.
"""

import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

SKIP = 77

try:
    import numpy as np
    import torch
    from torch import nn
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps", "peers"))
    from peer_transformer import make_encoder
except ImportError as error:
    print(f"skipped: {error}; this check needs Debian's python3-torch and python3-numpy "
          f"(apt-get install python3-torch), run by /usr/bin/python3 (this is {sys.executable})")
    sys.exit(SKIP)

# At most this many images may be predicted differently, and only where torch's two largest
# logits are this close (summation order differs between the two libraries' matrix products).
MAX_MISMATCHES = 5
NEAR_TIE = 1e-4

DTYPES = {"F32": np.dtype("<f4"), "F64": np.dtype("<f8"), "I64": np.dtype("<i8")}


class Failure(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise Failure(message)


def read_safetensors(path):
    """Returns ({name: torch tensor}, {name: dtype}, metadata), checking the file's layout:
    8-byte little-endian header length, JSON header, data offsets contiguous and in order."""
    with open(path, "rb") as f:
        data = f.read()
    expect(len(data) >= 8, f"{path}: shorter than 8 bytes")
    (header_length,) = struct.unpack("<Q", data[:8])
    expect(8 + header_length <= len(data), f"{path}: header length {header_length} beyond the file")
    header = json.loads(data[8:8 + header_length].decode("utf-8"))  # keeps the file's order
    metadata = header.pop("__metadata__", {})
    expect(all(isinstance(v, str) for v in metadata.values()), f"{path}: metadata values must be strings")
    start, offset = 8 + header_length, 0
    tensors, dtypes = {}, {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        expect(begin == offset, f"{path}: tensor {name} starts at {begin}, expected {offset} (offsets in order)")
        dtype = DTYPES[entry["dtype"]]
        shape = tuple(entry["shape"])
        count = int(np.prod(shape, dtype=np.int64))
        expect(end - begin == count * dtype.itemsize, f"{path}: tensor {name}: {end - begin} bytes for shape {shape}")
        array = np.frombuffer(data, dtype=dtype, count=count, offset=start + begin).reshape(shape)
        tensors[name] = torch.from_numpy(array.copy())
        dtypes[name] = entry["dtype"]
        offset = end
    expect(start + offset == len(data), f"{path}: {len(data) - start - offset} bytes after the last tensor")
    return tensors, dtypes, metadata


def read_idx(path):
    """An IDX file (raw) as a numpy uint8 array of its declared shape."""
    with open(path, "rb") as f:
        data = f.read()
    zero, kind, ndim = struct.unpack(">HBB", data[:4])
    expect(zero == 0 and kind == 0x08, f"{path}: not an unsigned-byte IDX file")
    shape = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


class RMSNorm(nn.Module):
    """torch.nn.RMSNorm (PyTorch >= 2.4) for torch 1.13: x / sqrt(mean(x^2) + eps) * weight,
    eps defaulting to float32's machine epsilon; its state_dict is {"weight"} as in PyTorch."""

    def __init__(self, normalized_shape, eps=None):
        super().__init__()
        self.eps = torch.finfo(torch.float32).eps if eps is None else eps
        self.weight = nn.Parameter(torch.ones(normalized_shape))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def build_mlp(architecture):
    """The torch.nn.Sequential equivalent of normnet's MLP (apps/normnet/model_mlp.cpp): Linear ->
    ReLU -> Norm per hidden size, then the output Linear (no Norm module at all with norm "none")."""
    norms = {"layer": nn.LayerNorm, "batch": nn.BatchNorm1d, "rms": RMSNorm, "none": None}
    expect(architecture.get("norm") in norms, f"unknown norm in {architecture}")
    layers, width = [], architecture["inputs"]
    for size in architecture["hidden"]:
        layers += [nn.Linear(width, size), nn.ReLU()]
        if norms[architecture["norm"]] is not None:
            layers.append(norms[architecture["norm"]](size))
        width = size
    layers.append(nn.Linear(width, architecture["classes"]))
    return nn.Sequential(*layers)


def build_cnn(architecture):
    """The torch.nn.Sequential equivalent of normnet's CNN (apps/normnet/model_cnn.cpp): the
    [N, 784] rows unflattened into images, conv 3x3 (padding 1) -> Norm -> ReLU -> max-pool 2 per
    channel count, flatten, Linear -> ReLU per fc size, the output Linear. LayerNorm is GroupNorm
    with one group (Wu and He's definition); InstanceNorm has affine weights."""
    groups = architecture["groups"]
    norms = {"batch": lambda c: nn.BatchNorm2d(c), "group": lambda c: nn.GroupNorm(groups, c),
             "layer": lambda c: nn.GroupNorm(1, c), "instance": lambda c: nn.InstanceNorm2d(c, affine=True),
             "none": None}
    expect(architecture.get("norm") in norms, f"unknown norm in {architecture}")
    channels, height, width = architecture["image"]
    layers = [nn.Unflatten(1, (channels, height, width))]
    for c in architecture["channels"]:
        layers.append(nn.Conv2d(channels, c, 3, padding=1))
        if norms[architecture["norm"]] is not None:
            layers.append(norms[architecture["norm"]](c))
        layers += [nn.ReLU(), nn.MaxPool2d(2)]
        channels, height, width = c, height // 2, width // 2
    layers.append(nn.Flatten())
    features = channels * height * width
    for size in architecture["fc"]:
        layers += [nn.Linear(features, size), nn.ReLU()]
        features = size
    layers.append(nn.Linear(features, architecture["classes"]))
    return nn.Sequential(*layers)


class VisionTransformer(nn.Module):
    """normnet's ViT (apps/normnet/model_vit.cpp, include/normnet/models/vision_transformer.hpp) with
    LayerNorm, pre- or post-LN, on [N, 784] rows: the encoder of apps/peers/peer_transformer.py."""

    def __init__(self, architecture):
        super().__init__()
        expect(architecture.get("norm") == "layer", f"torch has the ViT with LayerNorm only, not {architecture}")
        channels, height, width = architecture["image"]
        d, patch = architecture["d_model"], architecture["patch"]
        self.image = (channels, height, width)
        self.class_token = nn.Parameter(torch.zeros(1, 1, d))
        self.pos_embedding = nn.Parameter(torch.zeros(1, 1 + (height // patch) * (width // patch), d))
        self.conv_proj = nn.Conv2d(channels, d, patch, stride=patch)
        self.encoder = make_encoder(d, architecture["heads"], architecture["dim_feedforward"], architecture["layers"],
                                    architecture["norm_placement"] == "pre")
        self.head = nn.Linear(d, architecture["classes"])

    def forward(self, x):
        x = x.reshape(-1, *self.image)
        patches = self.conv_proj(x).flatten(2).transpose(1, 2)
        h = torch.cat([self.class_token.expand(x.shape[0], -1, -1), patches], 1) + self.pos_embedding
        return self.head(self.encoder(h)[:, 0])


class ScaleOnlyLayerNorm(nn.Module):
    """LayerNorm with a weight and no bias (torch 1.13's nn.LayerNorm has both or neither)."""

    def __init__(self, features, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(features))

    def forward(self, x):
        return nn.functional.layer_norm(x, self.weight.shape, self.weight, None, self.eps)


class LayerNormLSTM(nn.Module):
    """Ba et al.'s LayerNorm LSTM as normnet's LayerNormLSTM computes it (src/nn/rnn.cpp): gates =
    ln_ih(x W_ih^T) + ln_hh(h W_hh^T) (ln_hh without bias, no other bias), c = f c + i g,
    h = o tanh(ln_c(c)); gate order i, f, g, o as torch.nn.LSTM; batch_first."""

    def __init__(self, input_size, hidden, layers):
        super().__init__()
        self.hidden, self.layers = hidden, layers
        for k in range(layers):
            setattr(self, f"weight_ih_l{k}", nn.Parameter(torch.zeros(4 * hidden, input_size if k == 0 else hidden)))
            setattr(self, f"weight_hh_l{k}", nn.Parameter(torch.zeros(4 * hidden, hidden)))
        for k in range(layers):
            setattr(self, f"ln_ih_l{k}", nn.LayerNorm(4 * hidden))
            setattr(self, f"ln_hh_l{k}", ScaleOnlyLayerNorm(4 * hidden))
            setattr(self, f"ln_c_l{k}", nn.LayerNorm(hidden))

    def forward(self, x):
        for k in range(self.layers):
            gx = getattr(self, f"ln_ih_l{k}")(x @ getattr(self, f"weight_ih_l{k}").t())
            h = x.new_zeros(x.shape[0], self.hidden)
            c = x.new_zeros(x.shape[0], self.hidden)
            outs = []
            for t in range(x.shape[1]):
                g = gx[:, t] + getattr(self, f"ln_hh_l{k}")(h @ getattr(self, f"weight_hh_l{k}").t())
                i, f, gg, o = g.chunk(4, 1)
                c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(gg)
                h = torch.sigmoid(o) * torch.tanh(getattr(self, f"ln_c_l{k}")(c))
                outs.append(h)
            x = torch.stack(outs, 1)
        return x, None


class RowLSTM(nn.Module):
    """normnet's row-by-row LSTM (apps/normnet/model_lstm.cpp): the image's rows as steps through
    torch.nn.LSTM (norm none) or the LayerNorm LSTM above (norm layer), the head on the last step."""

    def __init__(self, architecture):
        super().__init__()
        _, self.rows, self.width = architecture["image"]
        hidden, layers = architecture["hidden"], architecture["layers"]
        norm = architecture.get("norm")
        expect(norm in ("layer", "none"), f"unknown norm in {architecture}")
        self.rnn = (LayerNormLSTM(self.width, hidden, layers) if norm == "layer"
                    else nn.LSTM(self.width, hidden, layers, batch_first=True))
        self.head = nn.Linear(hidden, architecture["classes"])

    def forward(self, x):
        return self.head(self.rnn(x.reshape(-1, self.rows, self.width))[0][:, -1])


def build_model(architecture):
    """The torch model of a normnet checkpoint's architecture metadata."""
    builders = {"mlp": build_mlp, "cnn": build_cnn, "vit": VisionTransformer, "lstm": RowLSTM}
    kind = architecture.get("type", "mlp")
    expect(kind in builders, f"unknown model type in {architecture}")
    return builders[kind](architecture)


def run(command):
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        raise Failure(f"{' '.join(command)} exited with {result.returncode}:\n{result.stderr}")
    return result.stdout


def check_norm(kind, norm, limit, epochs, args, workdir, test_images, test_labels):
    case, out = norm, os.path.join(workdir, f"{kind}_{norm.replace(':', '_')}")
    norm, _, placement = norm.partition(":")  # "layer:post": the ViT's --norm-placement
    test_images, test_labels = test_images[:limit], test_labels[:limit]
    common = ["--data", args.data, "--threads", str(args.threads)]
    run([args.normnet, "train", "--model", kind, "--dataset", "mnist", "--norm", norm, "--limit", str(limit),
         "--epochs", str(epochs), "--quiet", "--out", out] + (["--norm-placement", placement] if placement else []) + common)
    checkpoint = os.path.join(out, "model.safetensors")
    predictions_csv = os.path.join(out, "pred.csv")
    eval_out = run([args.normnet, "eval", "--checkpoint", checkpoint, "--limit", str(limit),
                    "--predictions", predictions_csv] + common)

    # The checkpoint: PyTorch's names, F32 everywhere except int64 num_batches_tracked.
    tensors, dtypes, metadata = read_safetensors(checkpoint)
    architecture = json.loads(metadata["normnet.architecture"])
    config = json.loads(metadata["normnet.config"])
    expect(metadata.get("format") == "pt", f"{checkpoint}: metadata format is {metadata.get('format')}, not pt")
    model = build_model(architecture)
    expected_keys = list(model.state_dict().keys())
    expect(list(tensors.keys()) == expected_keys,
           f"{checkpoint}: keys {list(tensors.keys())} differ from torch's {expected_keys}")
    for name, reference in model.state_dict().items():
        expect(tensors[name].dtype == reference.dtype,
               f"{name}: stored as {dtypes[name]} ({tensors[name].dtype}), torch uses {reference.dtype}")
        expect(tensors[name].shape == reference.shape, f"{name}: shape {tuple(tensors[name].shape)} vs {tuple(reference.shape)}")
        expect(dtypes[name] == ("I64" if name.endswith("num_batches_tracked") else "F32"), f"{name}: dtype {dtypes[name]}")

    model.load_state_dict(tensors, strict=True)
    for name, value in model.state_dict().items():  # nothing was converted on the way in
        expect(torch.equal(value, tensors[name]), f"{name}: differs after load_state_dict")
    if norm == "batch":
        size = config["limit"] if 0 < config["limit"] < args.train_count else args.train_count
        batch = config["batch_size"]
        batches = -(-size // batch) - (1 if size % batch == 1 else 0)  # a lone last sample is dropped for BatchNorm
        for name, value in tensors.items():
            if name.endswith("num_batches_tracked"):
                expect(int(value) == batches * config["epochs"],
                       f"{name} = {int(value)}, expected {batches * config['epochs']} training batches")

    # Predictions on the test images normnet evaluated, in eval mode.
    model.eval()
    with torch.no_grad():
        x = torch.from_numpy(test_images.reshape(len(test_images), -1).astype(np.float32) / np.float32(255))
        logits = model(x)
        loss = nn.functional.cross_entropy(logits, torch.from_numpy(test_labels.astype(np.int64))).item()
    torch_pred = logits.argmax(dim=1).numpy()
    rows = np.loadtxt(predictions_csv, delimiter=",", skiprows=1, dtype=np.int64, ndmin=2)
    expect(len(rows) == len(test_labels), f"{predictions_csv}: {len(rows)} rows, expected {len(test_labels)}")
    expect(np.array_equal(rows[:, 0], np.arange(len(rows))), f"{predictions_csv}: indices out of order")
    expect(np.array_equal(rows[:, 1], test_labels), f"{predictions_csv}: labels differ from the IDX file's")
    normnet_pred = rows[:, 2]
    mismatches = np.nonzero(normnet_pred != torch_pred)[0]
    top2 = torch.topk(logits, 2, dim=1).values
    gaps = (top2[:, 0] - top2[:, 1]).numpy()
    for i in mismatches:
        expect(gaps[i] < NEAR_TIE, f"image {i}: normnet predicts {normnet_pred[i]}, torch {torch_pred[i]} "
                                   f"(top-2 logits {gaps[i]:.3g} apart, not a near tie)")
    expect(len(mismatches) <= MAX_MISMATCHES, f"{len(mismatches)} predictions differ (at most {MAX_MISMATCHES} near ties allowed)")

    match = re.search(r"loss ([0-9.]+)\s+accuracy ([0-9.]+)% \((\d+)/(\d+)\)", eval_out)
    expect(match is not None, f"no accuracy line in normnet eval's output:\n{eval_out}")
    normnet_loss, normnet_correct, normnet_count = float(match.group(1)), int(match.group(3)), int(match.group(4))
    torch_correct = int((torch_pred == test_labels).sum())
    expect(normnet_count == len(test_labels), f"normnet eval used {normnet_count} images, torch {len(test_labels)}")
    expect(abs(normnet_correct - torch_correct) <= len(mismatches),
           f"accuracy: normnet {normnet_correct}/{normnet_count}, torch {torch_correct}/{len(test_labels)}")
    if len(mismatches) == 0:
        expect(normnet_correct == torch_correct, f"accuracy: normnet {normnet_correct}, torch {torch_correct}")
    expect(abs(normnet_loss - loss) < 1e-3, f"test loss: normnet {normnet_loss:.4f}, torch {loss:.4f}")

    n = len(test_labels)
    print(f"  {kind} {case:8s}: {len(tensors)} tensors loaded strictly; normnet eval {100 * normnet_correct / n:.2f}% "
          f"({normnet_correct}/{n}), torch {100 * torch_correct / n:.2f}% ({torch_correct}/{n}); "
          f"predictions identical for {n - len(mismatches)}/{n}; test loss {normnet_loss:.4f} vs {loss:.4f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--normnet", required=True, help="path of the normnet program")
    parser.add_argument("--data", required=True, help="MNIST folder (raw IDX files)")
    parser.add_argument("--limit", type=int, default=5000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--norms", default="layer,batch,none,rms", help="the MLP's normalisations")
    parser.add_argument("--cnn-norms", default="batch,group,layer,instance,none", help="the CNN's normalisations")
    parser.add_argument("--cnn-limit", type=int, default=1000, help="training and test images of the CNN runs")
    parser.add_argument("--cnn-epochs", type=int, default=1)
    parser.add_argument("--seq-cases", default="vit:layer:pre,vit:layer:post,lstm:layer,lstm:none",
                        help="model:norm[:placement] of the sequence models, trained on --cnn-limit images (small sizes)")
    parser.add_argument("--keep", action="store_true", help="keep the run folders")
    args = parser.parse_args()

    images_path = os.path.join(args.data, "t10k-images-idx3-ubyte")
    labels_path = os.path.join(args.data, "t10k-labels-idx1-ubyte")
    if not all(os.path.exists(os.path.join(args.data, f"{split}-{kind}")) for split in ("train", "t10k")
               for kind in ("images-idx3-ubyte", "labels-idx1-ubyte")):
        print(f"skipped: MNIST not found in {args.data} (run data/fetch_mnist.sh)")
        return SKIP
    if not os.access(args.normnet, os.X_OK):
        print(f"FAIL: {args.normnet} is not an executable normnet program")
        return 1
    torch.set_num_threads(args.threads)
    args.train_count = len(read_idx(os.path.join(args.data, "train-labels-idx1-ubyte")))
    test_images = read_idx(images_path)[:max(args.limit, args.cnn_limit)]
    test_labels = read_idx(labels_path)[:max(args.limit, args.cnn_limit)].astype(np.int64)

    print(f"interop: normnet checkpoints in torch {torch.__version__} (numpy {np.__version__}), "
          f"MLP {args.limit} training and test images, {args.epochs} epochs; CNN {args.cnn_limit}, {args.cnn_epochs}")
    workdir = tempfile.mkdtemp(prefix="normnet_interop_")
    failures = 0
    cases = [("mlp", norm, args.limit, args.epochs) for norm in args.norms.split(",") if norm] + \
            [("cnn", norm, args.cnn_limit, args.cnn_epochs) for norm in args.cnn_norms.split(",") if norm] + \
            [tuple(case.split(":", 1)) + (args.cnn_limit, args.cnn_epochs) for case in args.seq_cases.split(",") if case]
    try:
        for kind, norm, limit, epochs in cases:
            try:
                check_norm(kind, norm, limit, epochs, args, workdir, test_images, test_labels)
            except (Failure, KeyError, ValueError, RuntimeError) as error:
                failures += 1
                print(f"  {kind} {norm:8s}: FAIL: {type(error).__name__}: {error}")
    finally:
        if args.keep:
            print(f"run folders kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print("interop: PASS" if failures == 0 else f"interop: FAIL ({failures} of {len(cases)} models and norms)")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
