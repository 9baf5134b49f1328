#!/usr/bin/env python3
"""Runs normnet and its benchmark peers (libtorch C++, PyTorch) on the same workload and prints
a Markdown table of seconds per epoch (tokens per second for the LM), speed-ups and peak RSS.

    python3 apps/peers/run_peers.py --build build --batch-sizes 32,128 --norm layer --rounds 3
    python3 apps/peers/run_peers.py --model cnn --norm batch --epochs 1

The workloads (--model): the seed MLP on MNIST (mlp, the default), the issue-12 CNN on
Fashion-MNIST (cnn), the issue-13 Vision Transformer on MNIST (vit) and character-level LM on
Debian's fortunes (lm); MODELS below says which programs, data and options each one uses.

The programs run alternately (normnet, libtorch, PyTorch, normnet, ...) so that a slow spell of
the machine hits all of them alike; each figure is the median over rounds of each run's median
epoch. Each peer first runs once per thread setting (--peer-threads) and then keeps its fastest
one; normnet always uses --normnet-threads. Standard library only: any python3 can run this
script, while the PyTorch peer itself runs under --python (Debian's python3-torch).
"""
import argparse
import json
import os
import pathlib
import platform
import shlex
import statistics
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
IMPLS = ["normnet", "libtorch", "pytorch"]
TITLES = {"normnet": "normnet", "libtorch": "libtorch", "pytorch": "PyTorch"}

# One row per workload: its peers (BUILD/apps/peers/<libtorch>, apps/peers/<pytorch>), default
# data, normalisations, timed unit and the table's caption. Image models time epochs and report
# s/epoch; the LM times --steps optimizer steps and reports tokens/s.
MODELS = {
    "mlp": dict(libtorch="libtorch_mlp", pytorch="torch_mlp.py", data=str(REPO_ROOT / "data" / "mnist"),
                norms=["layer", "batch", "none"], norm="layer", epochs=3, unit="epoch",
                caption="MLP 784-300-100-10, norm {norm}, MNIST train (60,000), Adam 1e-3"),
    "cnn": dict(libtorch="libtorch_cnn", pytorch="torch_cnn.py", data="/usr/share/datasets/fashion-mnist",
                norms=["batch", "group", "layer", "instance", "none"], norm="batch", epochs=1, unit="epoch",
                caption="CNN conv 1->32, conv 32->64, fc 3136->128->10, norm {norm}, Fashion-MNIST train "
                        "({samples}), Adam 1e-3"),
    "vit": dict(libtorch="libtorch_vit", pytorch="torch_vit.py", data=str(REPO_ROOT / "data" / "mnist"),
                norms=["layer"], norm="layer", epochs=1, unit="epoch",
                caption="ViT 7x7 patches, d_model 64, 4 pre-LN blocks, 4 heads, MNIST train ({samples}), Adam 1e-3"),
    "lm": dict(libtorch="libtorch_lm", pytorch="torch_lm.py", data="/usr/share/games/fortunes",
               norms=["layer"], norm="layer", epochs=1, unit="steps",
               caption="char LM, context 128, d_model 128, 4 pre-LN blocks, 4 heads, fortunes, AdamW 1e-3"),
}
ALL_NORMS = sorted({n for m in MODELS.values() for n in m["norms"]})


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="mlp", choices=list(MODELS), help="the workload (default mlp)")
    p.add_argument("--build", default=str(REPO_ROOT / "build"), help="CMake build directory")
    p.add_argument("--data", help="dataset (default: data/mnist; Fashion-MNIST for cnn; fortunes for lm)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batch-sizes", default="32,128", help="comma-separated")
    p.add_argument("--norm", choices=ALL_NORMS, help="default: layer (mlp, vit, lm), batch (cnn)")
    p.add_argument("--epochs", type=int, help="timed epochs per run (default 3 for mlp, 1 for cnn and vit)")
    p.add_argument("--limit", type=int, default=0, help="cnn, vit: only the first N images (0: all)")
    p.add_argument("--steps", type=int, default=50, help="lm: timed optimizer steps per run")
    p.add_argument("--eval-windows", type=int, default=64,
                   help="lm: the peers' validation loss over this many windows after timing (0: all)")
    p.add_argument("--normnet-threads", type=int, default=2)
    p.add_argument("--normnet-args", default="",
                   help="more options for normnet bench, space-separated (e.g. --normnet-args=--recompute)")
    p.add_argument("--peer-threads", default="1,1:2,2:1,2",
                   help="thread settings each peer is tried with: T (torch and OpenBLAS threads) "
                        "or T:B (T torch threads, B OpenBLAS threads); one setting skips the trial")
    p.add_argument("--python", default="/usr/bin/python3", help="a python with torch, for the PyTorch peer")
    p.add_argument("--raw", help="also append every JSON line to this file")
    p.add_argument("--wait-idle", type=float, default=0, metavar="SECONDS",
                   help="on a shared machine: before each run, wait up to SECONDS for the CPUs to be idle")
    args = p.parse_args()
    m = MODELS[args.model]
    args.data = args.data or m["data"]
    args.norm = args.norm or m["norm"]
    args.epochs = args.epochs or m["epochs"]
    if args.norm not in m["norms"]:
        p.error(f"--norm {args.norm}: --model {args.model} takes {', '.join(m['norms'])}")
    if args.limit and args.model == "mlp":
        p.error("--limit: only for --model cnn, vit or lm")
    args.batch_sizes = [int(b) for b in args.batch_sizes.replace(" ", ",").split(",") if b]
    args.peer_threads = [s for s in args.peer_threads.replace(" ", ",").split(",") if s]
    return args


def seconds_of(rec):
    """A run's timed seconds: the median epoch of the image models, the timed steps of the LM."""
    return rec["median_seconds"] if "median_seconds" in rec else rec["seconds"]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def cpu_idle_fraction(interval=2.0):
    """Share of CPU time spent idle over `interval` seconds, from /proc/stat (Linux)."""
    def sample():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return v[3] + v[4], sum(v[:8])  # idle + iowait, all but guest time
    i0, t0 = sample()
    time.sleep(interval)
    i1, t1 = sample()
    return (i1 - i0) / max(1, t1 - t0)


def wait_idle(limit):
    """Waits until two samples in a row are >= 95% idle, or `limit` seconds have passed."""
    deadline, quiet = time.monotonic() + limit, 0
    while time.monotonic() < deadline:
        quiet = quiet + 1 if cpu_idle_fraction() >= 0.95 else 0
        if quiet == 2:
            return
    log(f"  machine still busy after {limit:.0f} s; running anyway")


def run_json(cmd, want, timeout=3600):
    """Runs cmd; returns the JSON lines on its stdout matching `want` (dict of key: value).
    Raises subprocess.TimeoutExpired (the child is killed), or RuntimeError with the reason."""
    log("  $ " + shlex.join(cmd) + f"   (load {os.getloadavg()[0]:.2f})")
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    except OSError as e:
        raise RuntimeError(str(e)) from None
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or ["(no message)"]
        raise RuntimeError(f"exit status {proc.returncode}: {tail[0]}")
    found = []
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            rec = json.loads(line)
            if all(rec.get(k) == v for k, v in want.items()):
                found.append(rec)
    if not found:
        raise RuntimeError(f"no JSON line with {want} in its output")
    return found


class Runner:
    def __init__(self, args):
        self.args = args
        build = pathlib.Path(args.build)
        self.normnet = build / "apps" / "normnet" / "normnet"
        self.model = MODELS[args.model]
        self.libtorch = build / "apps" / "peers" / self.model["libtorch"]
        self.skipped = {}  # impl -> why it is left out of the table
        if not self.normnet.is_file():
            self.skipped["normnet"] = f"{self.normnet} not built"
        if not self.libtorch.is_file():
            self.skipped["libtorch"] = f"{self.libtorch} not built (needs libtorch-dev)"
        try:
            has_torch = subprocess.run([args.python, "-c", "import torch"], capture_output=True).returncode == 0
        except OSError:
            has_torch = False
        if not has_torch:
            self.skipped["pytorch"] = f"{args.python} cannot import torch"

    def command(self, impl, batch, threads, epochs):
        """epochs: timed epochs; for the LM, timed steps are --steps times `epochs`."""
        a = self.args
        length = ["--steps", str(a.steps * epochs)] if self.model["unit"] == "steps" else ["--epochs", str(epochs)]
        limit = ["--limit", str(a.limit)] if a.limit else []
        if impl == "normnet":
            model = ["--model", a.model] if a.model != "mlp" else []  # the MLP bench predates --model
            return ([str(self.normnet), "bench"] + model + ["--data", a.data, "--batch-sizes", str(batch),
                    "--norms", a.norm] + length + limit + ["--threads", str(threads), "--json"] +
                    a.normnet_args.split())
        t, _, b = threads.partition(":")
        common = (["--data", a.data, "--batch-size", str(batch)] + length + limit +
                  ["--threads", t, "--blas-threads", b or t, "--json"])
        if len(self.model["norms"]) > 1:
            common += ["--norm", a.norm]
        if self.model["unit"] == "steps":
            common += ["--eval-windows", str(a.eval_windows)]
        if impl == "libtorch":
            return [str(self.libtorch)] + common
        return [a.python, str(HERE / self.model["pytorch"])] + common

    def run(self, impl, batch, threads, epochs, timeout=3600):
        """One run's JSON record, or None after marking the impl skipped.
        A timeout is passed on to the caller as subprocess.TimeoutExpired."""
        if impl in self.skipped:
            return None
        if self.args.wait_idle > 0:
            wait_idle(self.args.wait_idle)
        try:
            rec = run_json(self.command(impl, batch, threads, epochs),
                           {"impl": impl, "batch": batch, "norm": self.args.norm}, timeout)[0]
        except subprocess.TimeoutExpired as e:
            if timeout >= 3600:
                self.skipped[impl] = f"failed: {e}"
            raise
        except (RuntimeError, json.JSONDecodeError) as e:
            self.skipped[impl] = f"failed: {e}"
            log(f"  {impl} skipped from now on: {e}")
            return None
        rec["setting"] = threads
        if self.args.raw:
            with open(self.args.raw, "a") as f:
                f.write(json.dumps(rec) + "\n")
        unit = "s" if MODELS[self.args.model]["unit"] == "steps" else "s/epoch"
        log(f"  -> {impl} batch {batch} threads {threads}: {seconds_of(rec):.3f} {unit}")
        return rec

    def pick_threads(self, impl, batch):
        """Tries each thread setting for one epoch and returns the fastest."""
        settings = self.args.peer_threads
        if len(settings) == 1 or impl in self.skipped:
            return settings[0]
        timed = {}
        for s in settings:
            # Two OpenMP threads can make an epoch 50x slower on a busy machine; stop a trial
            # once it is clearly losing (start-up and warm-up included in the allowance).
            limit = 30 + 3 * min(timed.values()) if timed else 3600
            try:
                rec = self.run(impl, batch, s, 1, timeout=limit)
            except subprocess.TimeoutExpired:
                log(f"  -> {impl} batch {batch} threads {s}: stopped after {limit:.0f} s")
                timed[s] = float("inf")
                continue
            if rec is None:
                return settings[0]
            timed[s] = seconds_of(rec)
        best = min(timed, key=timed.get)
        log(f"  {impl} batch {batch}: " + ", ".join(f"{s} -> {v:.3f} s" for s, v in timed.items())
            + f"; using {best}")
        return best


def machine():
    model = platform.processor() or "unknown CPU"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return f"{model}, nproc {os.cpu_count()}"


def has_data(args):
    """The image models need the training IDX file (raw or gzipped); the LM its text."""
    if MODELS[args.model]["unit"] == "steps":
        return os.path.exists(args.data)
    return any(os.path.exists(os.path.join(args.data, "train-images-idx3-ubyte" + ext)) for ext in ("", ".gz"))


def fmt(x, spec):
    return "—" if x is None else format(x, spec)


def main():
    args = parse_args()
    if not has_data(args):
        # As the other tests that need data: skipped (ctest's SKIP_RETURN_CODE), not failed.
        log(f"run_peers: no data for --model {args.model} in {args.data}; nothing to time")
        sys.exit(77)
    r = Runner(args)
    load_before = os.getloadavg()[0]

    settings = {("normnet", b): str(args.normnet_threads) for b in args.batch_sizes}
    log("trying thread settings " + ", ".join(args.peer_threads))
    for b in args.batch_sizes:
        for impl in ("libtorch", "pytorch"):
            settings[(impl, b)] = r.pick_threads(impl, b)

    runs = {}  # (impl, batch) -> list of records, one per round
    for rnd in range(args.rounds):
        log(f"round {rnd + 1}/{args.rounds}")
        for b in args.batch_sizes:
            for impl in IMPLS:
                try:
                    rec = r.run(impl, b, settings[(impl, b)], args.epochs)
                except subprocess.TimeoutExpired:
                    rec = None
                if rec is not None:
                    runs.setdefault((impl, b), []).append(rec)

    def recs_of(impl, b):
        return runs.get((impl, b)) if impl not in r.skipped else None

    def secs(impl, b):
        recs = recs_of(impl, b)
        return statistics.median(seconds_of(x) for x in recs) if recs else None

    def rate(impl, b, key):
        recs = recs_of(impl, b)
        return statistics.median(x[key] for x in recs) if recs and all(key in x for x in recs) else None

    def rss(impl, b):
        recs = recs_of(impl, b)
        return max(x["peak_rss_mb"] for x in recs) if recs else None

    def times(x):
        return f"{fmt(x, '.2f')}{'×' if x else ''}"

    model = MODELS[args.model]
    samples = next((x.get("samples") for v in runs.values() for x in v if x.get("samples")), None)
    caption = model["caption"].format(norm=args.norm, samples=f"{samples:,}" if samples else "?")
    if model["unit"] == "steps":
        print(f"{caption}, training loop only; median over {args.rounds} rounds of tokens/s over "
              f"{args.steps * args.epochs} timed steps.\n")
        print("| batch | normnet tokens/s | libtorch tokens/s | PyTorch tokens/s | speed-up vs libtorch "
              "| speed-up vs PyTorch | peak RSS MB normnet / libtorch / PyTorch |")
        print("|---|---|---|---|---|---|---|")
        for b in args.batch_sizes:
            t = {i: rate(i, b, "tokens_per_second") for i in IMPLS}
            up = {i: t["normnet"] / t[i] if t[i] and t["normnet"] else None for i in ("libtorch", "pytorch")}
            print(f"| {b} | {fmt(t['normnet'], ',.0f')} | {fmt(t['libtorch'], ',.0f')} | {fmt(t['pytorch'], ',.0f')} "
                  f"| {times(up['libtorch'])} | {times(up['pytorch'])} "
                  f"| {' / '.join(fmt(rss(i, b), '.0f') for i in IMPLS)} |")
    else:
        print(f"{caption}, training loop only; median over {args.rounds} rounds of the median of "
              f"{args.epochs} epochs.\n")
        with_rate = args.model != "mlp"  # the MLP table keeps its published columns
        print("| batch | normnet s/epoch | libtorch s/epoch | PyTorch s/epoch | "
              + ("samples/s normnet / libtorch / PyTorch | " if with_rate else "")
              + "speed-up vs libtorch | speed-up vs PyTorch | peak RSS MB normnet / libtorch / PyTorch |")
        print("|---|---|---|---|---|---|---|" + ("---|" if with_rate else ""))
        for b in args.batch_sizes:
            s = {i: secs(i, b) for i in IMPLS}
            up = {i: s[i] / s["normnet"] if s[i] and s["normnet"] else None for i in ("libtorch", "pytorch")}
            rates = " / ".join(fmt(rate(i, b, "samples_per_second"), ".0f") for i in IMPLS) + " | "
            print(f"| {b} | {fmt(s['normnet'], '.3f')} | {fmt(s['libtorch'], '.3f')} | {fmt(s['pytorch'], '.3f')} "
                  f"| {rates if with_rate else ''}{times(up['libtorch'])} | {times(up['pytorch'])} "
                  f"| {' / '.join(fmt(rss(i, b), '.0f') for i in IMPLS)} |")
    print()
    for impl in IMPLS:
        if impl in r.skipped:
            print(f"- {TITLES[impl]}: not measured ({r.skipped[impl]})")
            continue
        per_batch = []
        for b in args.batch_sizes:
            recs = runs.get((impl, b), [])
            rounds = ", ".join(f"{seconds_of(x):.3f}" for x in recs)
            extra = f", test acc {recs[-1]['test_acc']:.4f}" if recs and "test_acc" in recs[-1] else ""
            for key in ("test_loss", "val_loss"):
                extra += f", {key.replace('_', ' ')} {recs[-1][key]:.4f}" if recs and key in recs[-1] else ""
            per_batch.append(f"batch {b}: threads {settings[(impl, b)]}, rounds [{rounds}]{extra}")
        version = next((x.get("version") for x in runs.get((impl, args.batch_sizes[0]), [])), None)
        print(f"- {TITLES[impl]}{' ' + version if version else ''}: " + "; ".join(per_batch))
    print(f"\nMachine: {machine()}. "
          f"Load average (1 min) before/after: {load_before:.2f} / {os.getloadavg()[0]:.2f}. "
          "Thread setting T:B = T torch threads, B OpenBLAS threads.")


if __name__ == "__main__":
    main()
