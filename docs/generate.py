#!/usr/bin/env python3
"""Regenerates the figures of the documentation by running the programs that measure them.

Every table, chart and pasted output in README.md and docs/ sits in a generated block,

    <!-- generated: BLOCK -->
    ... written by this script: the command, what it printed, then one line saying on which
        machine, when, at which commit and how long it took ...
    <!-- end: BLOCK -->

and is rewritten here, never by hand. A job runs its commands and fills one or more blocks
(wherever a block's markers appear, in any Markdown file); the `normnet compare` jobs also write
their report, CSV files and charts into docs/experiments/<folder>/.

    python3 docs/generate.py --list                 # the jobs, their blocks and commands
    python3 docs/generate.py bench-cnn peers-cnn    # regenerate those (minutes each)
    python3 docs/generate.py --all                  # everything: about 2 hours on a quiet 2-core machine
    python3 docs/generate.py --quick bench-cnn      # the same job on tiny settings, printed only:
                                                    # a check that the job works, nothing is written

The figures are only as good as the machine is quiet: run it with nothing else running.
`normnet` in a command is BUILD/apps/normnet/normnet (--build, default build); the peers jobs need
the libtorch peers built (`cmake --build build --target libtorch_mlp libtorch_cnn libtorch_vit
libtorch_lm`, with libtorch-dev installed) and Debian's python3-torch.
Standard library only.
"""
import argparse
import collections
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXPERIMENTS = ROOT / "docs" / "experiments"


class Job:
    """A job: `about` for --list; `blocks` it fills; `run(ctx)` returns {block: Markdown}."""

    def __init__(self, name, blocks, about, run):
        self.name, self.blocks, self.about, self.run = name, blocks, about, run


JOBS = {}


def job(name, blocks, about):
    def register(fn):
        JOBS[name] = Job(name, blocks, about, fn)
        return fn
    return register


# ------------------------------------------------------------------------------------- running

class Context:
    def __init__(self, build, quick, scratch, threads=None, render_only=False):
        self.build, self.quick, self.scratch, self.threads = build, quick, scratch, threads
        self.render_only = render_only  # compare jobs: re-render the blocks from the reports, run nothing
        self.normnet = build / "apps" / "normnet" / "normnet"

    def training(self, command):
        """A training command (train, lm train, compare) with --threads N appended when asked: the
        thread count changes only the order of some sums, and one thread keeps its speed on a
        machine shared with other jobs."""
        return command + (f" --threads {self.threads}" if self.threads else "")

    def argv(self, command):
        """The command as run: `normnet` is the build's program, run_peers gets --build."""
        words = shlex.split(command)
        if words[0] in ("normnet", "build/apps/normnet/normnet"):
            words[0] = str(self.normnet)
        if any(w.endswith(("run_peers.py", "scaling_bench.py")) for w in words):
            words += ["--build", str(self.build)]
        return words

    def run(self, command):
        """Runs a command from the repository's root; returns (stdout, seconds, peak RSS in MB)."""
        log(f"$ {command}")
        start = time.monotonic()
        proc = subprocess.Popen(self.argv(command), cwd=ROOT, stdout=subprocess.PIPE, text=True)
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - start
        if proc.returncode != 0:
            raise SystemExit(f"generate: `{command}` failed with exit status {proc.returncode}")
        return out.rstrip("\n"), seconds, usage.ru_maxrss / 1024


def log(message):
    print(message, file=sys.stderr, flush=True)


def duration(seconds):
    return f"{seconds:.1f} s" if seconds < 60 else f"{int(seconds // 60)} min {int(seconds % 60):02d} s"


CODE = ["src", "include", "apps", "CMakeLists.txt"]


def head_commit():
    """The last commit that changed the code (not the docs, whose commits a rebase rewrites), with
    -dirty when the code has uncommitted changes."""
    git = ["git", "-C", str(ROOT)]
    code = subprocess.run(git + ["log", "-1", "--format=%h", "--"] + CODE, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(git + ["status", "--porcelain", "--"] + CODE, capture_output=True, text=True).stdout.strip()
    return (code or "?") + ("-dirty" if dirty else "")


COMMIT = None  # the code the programs were built from, when the run started (main checks the build)


def stale_build(build):
    """The first source file newer than the normnet program, or None: figures must come from the
    code of the commit they name."""
    built = (build / "apps" / "normnet" / "normnet").stat().st_mtime
    for folder in ("src", "include", "apps/normnet"):
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and path.stat().st_mtime > built:
                return path
    return None


def provenance(what):
    """The one line of a generated block that says where it was measured; when is the commit's (git log)."""
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    commit = COMMIT or head_commit()
    return (f"*Generated by `python3 docs/generate.py {what}`: {cpu}, {os.cpu_count()} cores, "
            f"load average {os.getloadavg()[0]:.1f} at the end; commit {commit}.*")


# The folder a run names after its start ("runs/2026-12-03_12-10-09"): shown as runs/<started>, so
# that a block carries no date (the commit in its provenance dates it).
STARTED = re.compile(r"(runs/(?:\w+_)?)\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d")


def text_block(command, out):
    return STARTED.sub(r"\1<started>", f"```text\n$ {command}\n{out}\n```")


def run_folder(out):
    m = re.search(r"^run folder: (\S+)", out, re.M)
    return m.group(1) if m else None


def remove_run(folder):
    if folder and (ROOT / folder).resolve().is_relative_to(ROOT / "runs"):
        shutil.rmtree(ROOT / folder, ignore_errors=True)


# ------------------------------------------------------------------------------- the Quick start

@job("quickstart", ["quickstart", "tour-eval"],
     "the Quick start's `normnet train` (README) and `normnet eval` of its checkpoint (README's tour)")
def quickstart(ctx):
    train = "build/apps/normnet/normnet train" + (" --epochs 1 --limit 2000" if ctx.quick else "")
    out, seconds, rss = ctx.run(train)
    folder = run_folder(out)
    evaluate = f"build/apps/normnet/normnet eval --checkpoint {folder}"
    eval_out, _, _ = ctx.run(evaluate)
    remove_run(folder)
    return {"quickstart": f"{text_block(train, out)}\n\n{duration(seconds)} wall time, {rss:.0f} MB peak RSS. "
                          + provenance("quickstart"),
            "tour-eval": f"{text_block(evaluate, eval_out)}\n\n{provenance('quickstart')}"}


def readme_line(marker):
    """The command line after `<!-- MARKER -->` and its ```sh fence in README.md (as .ci/run reads it)."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    return lines[lines.index(f"<!-- {marker} -->") + 2]


@job("quickstart-times", ["quickstart-times"],
     "both Quick start lines, timed in a fresh clone of HEAD (the second builds and tests everything)")
def quickstart_times(ctx):
    times = {}
    for marker in ("quickstart-main", "quickstart-test"):
        clone = ctx.scratch / marker  # each line in its own fresh clone
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        line = readme_line(marker)
        if ctx.quick:  # the same line, stopped after the packages and the data
            line = line.split(" && cmake ")[0]
        log(f"$ {line}   (in {clone})")
        start = time.monotonic()
        res = subprocess.run(["bash", "-c", f"set -euo pipefail; {line}"], cwd=clone, capture_output=True, text=True)
        if res.returncode != 0:
            raise SystemExit(f"generate: the {marker} line failed ({res.returncode}) in {clone}:\n{res.stderr[-2000:]}")
        times[marker] = time.monotonic() - start
    return {"quickstart-times": f"Each in its own fresh clone, with the packages already installed, the first line "
                                f"took **{duration(times['quickstart-main'])}** and the second "
                                f"**{duration(times['quickstart-test'])}**. {provenance('quickstart-times')}"}


# ------------------------------------------------------------------------------ default recipes

RECIPES = {  # block -> (what the model is, the default command, a quick command)
    "mlp": ("seed MLP 784-300-100-10, LayerNorm, MNIST", "normnet train", "normnet train --epochs 1 --limit 1000"),
    "cnn": ("CNN, BatchNorm, Fashion-MNIST", "normnet train --model cnn", "normnet train --model cnn --epochs 1 --limit 500"),
    "vit": ("ViT, LayerNorm pre-LN, MNIST", "normnet train --model vit", "normnet train --model vit --epochs 1 --limit 500"),
    "lstm": ("row LSTM, LayerNorm, MNIST", "normnet train --model lstm", "normnet train --model lstm --epochs 1 --limit 500"),
    "lm": ("character LM, LayerNorm pre-LN, fortunes", "normnet lm train",
           "normnet lm train --steps 4 --eval-every 2 --warmup 0 --context 32"),
}
SAMPLE = "normnet lm sample --checkpoint {folder} --prompt \"The \" --tokens 200 --temperature 0.8 --seed 1"


def recipe_job(model):
    what, command, quick = RECIPES[model]
    blocks = [f"recipe-{model}", "headline"] + (["tour-lm-sample"] if model == "lm" else [])

    @job(f"recipe-{model}", blocks, f"the default recipe of the {what}: its whole output; then the README's headline table")
    def run(ctx):
        cmd = ctx.training(quick if ctx.quick else command)
        out, seconds, rss = ctx.run(cmd)
        folder = run_folder(out)
        blocks = {f"recipe-{model}": f"{text_block(cmd, out)}\n\n{duration(seconds)} wall time, {rss:.0f} MB peak RSS. "
                                     + provenance(f"recipe-{model}")}
        if model == "lm":
            sample = SAMPLE.format(folder=folder)
            sample_out, _, _ = ctx.run(sample)
            blocks["tour-lm-sample"] = f"{text_block(sample, sample_out)}\n\n{provenance('recipe-lm')}"
        remove_run(folder)
        return blocks
    return run


for _model in RECIPES:
    recipe_job(_model)


# --------------------------------------------------------------------------------- benchmarks

BENCH = {  # block -> (command, quick command)
    "mlp": ("normnet bench", "normnet bench --limit 2000 --epochs 1 --warmup-epochs 0 --batch-sizes 128"),
    "cnn": ("normnet bench --model cnn --data /usr/share/datasets/fashion-mnist --limit 20000",
            "normnet bench --model cnn --data /usr/share/datasets/fashion-mnist --limit 256 --epochs 1 --warmup-epochs 0 --batch-sizes 32 --norms batch"),
    "vit": ("normnet bench --model vit --limit 10000",
            "normnet bench --model vit --limit 256 --epochs 1 --warmup-epochs 0 --batch-sizes 32 --norms layer"),
    "lstm": ("normnet bench --model lstm --limit 10000",
             "normnet bench --model lstm --limit 256 --epochs 1 --warmup-epochs 0 --batch-sizes 32 --norms layer"),
    "lm": ("normnet bench --model lm --batch-sizes 32 --steps 20 --epochs 3 --warmup-steps 2",
           "normnet bench --model lm --batch-sizes 8 --steps 2 --epochs 1 --warmup-steps 0 --context 32"),
}


def bench_job(model):
    command, quick = BENCH[model]

    @job(f"bench-{model}", [f"bench-{model}"], f"`{command}`: seconds per epoch against the GEMM floor, peak RSS")
    def run(ctx):
        cmd = quick if ctx.quick else command
        out, _, _ = ctx.run(cmd)
        return {f"bench-{model}": f"{text_block(cmd, out)}\n\n{provenance(f'bench-{model}')}"}
    return run


for _model in BENCH:
    bench_job(_model)


# ------------------------------------------------------------------------------ the peers

PEERS = {  # block -> (command, quick command)
    "mlp": ("python3 apps/peers/run_peers.py --batch-sizes 32,128 --rounds 3 --epochs 3",
            "python3 apps/peers/run_peers.py --batch-sizes 512 --rounds 1 --epochs 1 --peer-threads 1"),
    "cnn": ("python3 apps/peers/run_peers.py --model cnn --batch-sizes 32,128 --epochs 1 --rounds 2 --limit 10000 --peer-threads 1:2,2:1",
            "python3 apps/peers/run_peers.py --model cnn --batch-sizes 16 --epochs 1 --rounds 1 --limit 256 --peer-threads 1"),
    "vit": ("python3 apps/peers/run_peers.py --model vit --batch-sizes 32,128 --epochs 1 --rounds 2 --limit 10000 --peer-threads 1:2,2:1",
            "python3 apps/peers/run_peers.py --model vit --batch-sizes 16 --epochs 1 --rounds 1 --limit 256 --peer-threads 1"),
    "lm": ("python3 apps/peers/run_peers.py --model lm --batch-sizes 32 --steps 20 --rounds 2 --peer-threads 1:2,2:1",
           "python3 apps/peers/run_peers.py --model lm --batch-sizes 16 --steps 2 --eval-windows 8 --rounds 1 --peer-threads 1"),
}


def peers_job(model):
    command, quick = PEERS[model]

    @job(f"peers-{model}", [f"peers-{model}", "headline"],
         f"`{command}`: normnet, libtorch and PyTorch side by side; then the README's headline table")
    def run(ctx):
        for peer in ("libtorch_mlp", "libtorch_cnn", "libtorch_vit", "libtorch_lm"):
            if not (ctx.build / "apps" / "peers" / peer).exists():
                raise SystemExit(f"generate: {ctx.build}/apps/peers/{peer} is missing: install libtorch-dev, "
                                 f"then cmake --build {ctx.build} --target {peer}")
        cmd = quick if ctx.quick else command
        out, _, _ = ctx.run(cmd)
        return {f"peers-{model}": f"```sh\n{cmd}\n```\n\n{out}\n\n{provenance(f'peers-{model}')}"}
    return run


for _model in PEERS:
    peers_job(_model)


# ------------------------------------------------------------------- the README's headline table

def block_text(name, files):
    """The current text of a generated block (the first file that has it), or None."""
    for md in files:
        m = re.search(rf"<!-- generated: {name} -->\n(.*?)<!-- end: {name} -->", md.read_text(encoding="utf-8"), re.S)
        if m and "not generated yet" not in m.group(1).lower():
            return m.group(1)
    return None


def table_rows(markdown):
    """The rows of the first Markdown table in a text, as dicts by header."""
    lines = [line for line in markdown.splitlines() if line.startswith("|")]
    if len(lines) < 3:
        return []
    cells = lambda line: [c.strip() for c in line.strip().strip("|").split("|")]
    head = cells(lines[0])
    return [dict(zip(head, cells(line))) for line in lines[2:]]


def headline(files):
    """One row per model: its default recipe's result (the recipe-* blocks) and its speed and memory
    against libtorch (the peers-* blocks), each with the command that measured it."""
    rows = ["| model | default recipe | result | speed vs libtorch | peak RSS normnet / libtorch | measured by |",
            "|---|---|---|---|---|---|"]
    dates = []
    for model, (what, command, _) in RECIPES.items():
        recipe, peers = block_text(f"recipe-{model}", files), block_text(f"peers-{model}", files)
        result = "not generated yet"
        if recipe:
            ran = re.search(r"^\$ (normnet .*)$", recipe, re.M)
            command = ran.group(1) if ran else command
            m = re.search(r"^final (test accuracy [\d.]+%|val loss [\d.]+ nats \([\d.]+ bits/char\))", recipe, re.M)
            result = m.group(1) if m else "?"
            dates += re.findall(r"; commit (\S+?)\.\*", recipe)
        speed = rss = "not generated yet" if model in PEERS else "no peer"
        if peers:
            per_batch = table_rows(peers)
            speed = ", ".join(f"{r['speed-up vs libtorch']} (batch {r['batch']})" for r in per_batch)
            rss = ", ".join(" / ".join(r["peak RSS MB normnet / libtorch / PyTorch"].split(" / ")[:2]) + " MB"
                            for r in per_batch)
            dates += re.findall(r"; commit (\S+?)\.\*", peers)
        measured = f"`{PEERS[model][0]}`" if model in PEERS else "—"
        rows.append(f"| {what} | `{command}` | {result} | {speed} | {rss} | {measured} |")
    span = "measured at the commits those blocks name" if dates else "not measured yet"
    return ("\n".join(rows) + "\n\n*Assembled by `python3 docs/generate.py` from the recipe-* blocks of "
            "[docs/experiments/recipes.md](docs/experiments/recipes.md) and the peers-* blocks of "
            f"[docs/performance.md](docs/performance.md) ({span}); each of those blocks names its machine.*")


# ---------------------------------------------------------------------- normnet compare reports

def sections_of(report, wanted, folder, doc):
    """The report's sections whose headings start with one of `wanted`, headings demoted to ####,
    image links rewritten relative to the document `doc`."""
    out, keep, keep_level = [], False, 0
    for line in report.splitlines():
        m = re.match(r"^(#+) (.*)", line)
        if m:
            level = len(m.group(1))
            if keep and level <= keep_level:
                keep = False
            if not keep and any(m.group(2).startswith(w) for w in wanted):
                keep, keep_level = True, level
            if keep:
                line = "#### " + m.group(2)
        if keep:
            out.append(line)
    rel = os.path.relpath(folder, doc.parent)
    return re.sub(r"\]\(([\w.-]+\.svg)\)", lambda m: f"]({rel}/{m.group(1)})", "\n".join(out).strip())


COMPARE = {  # job -> (document, folder under docs/experiments, command, quick command, sections)
    "compare-mlp": ("normalisation-and-batch-size.md", "mlp-batch-size", "normnet compare",
                    "normnet compare --limit 1000 --epochs 1 --batch-sizes 16,64",
                    ["Final test accuracy", "Train/eval discrepancy", "Charts"]),
    "compare-cnn": ("wu-he-batch-size.md", "wu-he-batch-size",
                    "normnet compare --model cnn --norms batch,group,layer,instance,none --batch-sizes 2,4,8,16,32 "
                    "--lr-scaling linear --limit 10000 --epochs 3",
                    "normnet compare --model cnn --norms batch,group --batch-sizes 2,8 --lr-scaling linear --limit 300 --epochs 1",
                    ["Test error against batch size", "What this run shows", "BatchNorm evaluated three ways"]),
    "compare-lstm": ("sequence-models.md", "sequence-lstm",
                     "normnet compare --model lstm --norms layer,none --batch-sizes 32,128 --epochs 2 --limit 2000",
                     "normnet compare --model lstm --norms layer,none --batch-sizes 32 --epochs 1 --limit 200",
                     ["Final test accuracy", "What this run shows against"]),
    "compare-vit": ("sequence-models.md", "sequence-vit",
                    "normnet compare --model vit --norms layer,rms,batch,none --norm-placement pre,post --batch-sizes 64 "
                    "--epochs 2 --limit 2000",
                    "normnet compare --model vit --norms layer,batch --norm-placement pre,post --batch-sizes 64 --epochs 1 --limit 200",
                    ["Final test accuracy", "What this run shows against"]),
    "compare-lm": ("sequence-models.md", "sequence-lm",
                   "normnet compare --model lm --norms layer,rms,batch,none --norm-placement pre,post --batch-sizes 8,32 "
                   "--steps 300 --eval-every 100 --context 64 --d-model 64 --layers 2 --heads 2 --warmup 0 --lr 1e-3",
                   "normnet compare --model lm --norms layer,batch --norm-placement pre,post --batch-sizes 8 --steps 4 "
                   "--eval-every 2 --context 16 --d-model 16 --layers 1 --heads 2 --warmup 0",
                   ["Final validation loss, bits", "What this run shows", "Validation loss (bits/char) at each"]),
}


def render_compare(name, out_dir):
    """The block of a compare job, from its report.md (whose last line is the generator's stamp)."""
    doc, folder, _, _, wanted = COMPARE[name]
    report = (out_dir / "report.md").read_text(encoding="utf-8")
    stamp = report.rstrip().splitlines()[-1]
    shown = re.search(r"## Command and config\n\n```\n(.*?)\n```", report, re.S).group(1)
    body = sections_of(report, wanted, out_dir, EXPERIMENTS / doc)
    return (f"```sh\n{shown}\n```\n\n{body}\n\nThe whole report, with its CSV files: "
            f"[{folder}/report.md]({os.path.relpath(out_dir / 'report.md', EXPERIMENTS)}). {stamp}")


def compare_job(name):
    doc, folder, command, quick, wanted = COMPARE[name]

    @job(name, [name], f"`{command}`: report.md, CSV files and charts in docs/experiments/{folder}/, "
                       f"sections pasted into docs/experiments/{doc}")
    def run(ctx):
        out_dir = (ctx.scratch / folder) if ctx.quick else (EXPERIMENTS / folder)
        if not ctx.render_only:
            cmd = ctx.training(quick if ctx.quick else command)
            _, seconds, rss = ctx.run(cmd + f" --out {os.path.relpath(out_dir, ROOT)} --overwrite")
            report = out_dir / "report.md"
            report.write_text(report.read_text(encoding="utf-8").rstrip("\n") +
                              f"\n\n{duration(seconds)} wall time, {rss:.0f} MB peak RSS. {provenance(name)}\n",
                              encoding="utf-8")
        return {name: render_compare(name, out_dir)}
    return run


for _name in COMPARE:
    compare_job(_name)


# ------------------------------------------------------------------------------ several processes

SCALING = ("python3 apps/dist/scaling_bench.py --rounds 3",
           "python3 apps/dist/scaling_bench.py --rounds 1 --epochs 1 --limit 2000")


@job("dist-scaling", ["dist-scaling"], f"`{SCALING[0]}`: 1 process x 2 threads against 2 x 1, and the all-reduce's cost")
def dist_scaling(ctx):
    cmd = SCALING[1] if ctx.quick else SCALING[0]
    out, seconds, _ = ctx.run(cmd)
    return {"dist-scaling": f"{text_block(cmd, out)}\n\n{duration(seconds)} wall time. {provenance('dist-scaling')}"}


# ------------------------------------------------------------------------------------ ONNX export

ONNX_GUIDE = ("normnet train --model cnn --out runs/onnx-cnn", "normnet train --model cnn --epochs 1 --limit 500 --out runs/onnx-cnn")
ONNX_RUN = ("normnet export --checkpoint runs/onnx-cnn",
            "normnet eval --checkpoint runs/onnx-cnn",
            "node apps/examples/onnx/classify_onnxruntime.js runs/onnx-cnn/model.onnx /usr/share/datasets/fashion-mnist",
            "{build}/apps/examples/classify_opencv runs/onnx-cnn/model.onnx /usr/share/datasets/fashion-mnist")


ONNX_MODELS = ("normnet_tests [onnx][cli][runtime]",
               "normnet_tests 'normnet export: the MLP under every normalisation runs in ONNX Runtime as in normnet'")


@job("onnx-models", ["onnx-models"],
     "docs/onnx.md's table: every CLI model and norm trained briefly, exported, checked, run in ONNX Runtime and OpenCV")
def onnx_models(ctx):
    # tests/test_onnx_cli.cpp prints one Markdown table per model; here they become one.
    command = ONNX_MODELS[1] if ctx.quick else ONNX_MODELS[0]
    out, seconds, _ = ctx.run(command.replace("normnet_tests", str(ctx.build / "tests" / "normnet_tests"), 1))
    lines = [line for line in out.splitlines() if line.startswith("| ")]
    header = [line for line in out.splitlines() if line.startswith("|---")][:1]
    rows = [line for line in lines if not line.startswith("| Model, norm |")]
    table = "\n".join(lines[:1] + header + rows)
    return {"onnx-models": f"`build/tests/{command}`:\n\n{table}\n\n{duration(seconds)} wall time. {provenance('onnx-models')}"}


@job("onnx-guide", ["onnx-guide"],
     "docs/onnx.md's example: the CNN trained, exported, evaluated by normnet, ONNX Runtime (JavaScript) and OpenCV (C++)")
def onnx_guide(ctx):
    train = ctx.training(ONNX_GUIDE[1] if ctx.quick else ONNX_GUIDE[0])
    out, seconds, _ = ctx.run(train)
    parts = [text_block(train, out), f"{duration(seconds)} wall time."]
    for command in ONNX_RUN:
        shown = command.replace("{build}", os.path.relpath(ctx.build, ROOT))
        run_out, _, _ = ctx.run(command.replace("{build}", str(ctx.build)))
        parts.append(text_block(shown, run_out))
    remove_run("runs/onnx-cnn")
    return {"onnx-guide": "\n\n".join(parts) + "\n\n" + provenance("onnx-guide")}


# ------------------------------------------------------------------------------- the test suite

SUITE_PARTS = {  # test-name prefix -> what that part of the suite is
    "cpp_api": "the library from outside: headers, install, consumers, the docs' C++ blocks",
    "dist": "several processes under mpirun",
    "peers": "the libtorch and PyTorch peers",
    "example": "the example programs",
    "interop": "PyTorch loads normnet checkpoints",
    "alloc": "no allocation after the first step",
    "microbench": "the micro-benchmarks, one short run",
    "docs": "the documentation checks",
}
TEST_LINE = re.compile(r"Test +#\d+: (.+?) \.+\s*(?:\*+)?(\w[\w ]*?)\s+([\d.]+) sec")


@job("suite", ["suite"], "`ctest --test-dir build -j2`: the whole suite, its tests and seconds per part")
def suite(ctx):
    cmd = f"ctest --test-dir {ctx.build} -j2" + (" -L docs" if ctx.quick else "")
    log(f"$ {cmd}")
    start = time.monotonic()
    res = subprocess.run(shlex.split(cmd), cwd=ROOT, capture_output=True, text=True)
    seconds = time.monotonic() - start
    parts = {}  # part -> [tests, passed, skipped, seconds]
    for name, status, secs in TEST_LINE.findall(res.stdout):
        prefix = re.split(r"[:.]", name, 1)[0]
        part = prefix if prefix in SUITE_PARTS else "unit"
        p = parts.setdefault(part, [0, 0, 0, 0.0])
        p[0] += 1
        p[1] += status == "Passed"
        p[2] += "Skipped" in status or "Not Run" in status
        p[3] += float(secs)
    rows = ["| part | tests | passed | skipped | seconds (sum over its tests) |", "|---|---:|---:|---:|---:|"]
    for part, (n, passed, skipped, secs) in sorted(parts.items(), key=lambda kv: -kv[1][3]):
        what = SUITE_PARTS.get(part, "the Catch2 cases: ops, modules, optimizers, data, the command line, crashes")
        rows.append(f"| {what} | {n} | {passed} | {skipped} | {secs:.0f} |")
    summary = next((line for line in res.stdout.splitlines() if "tests passed" in line), "?")
    shown = cmd.replace(str(ctx.build), os.path.relpath(ctx.build, ROOT))
    return {"suite": f"```sh\n{shown}\n```\n\n" + "\n".join(rows) +
                     f"\n\n{summary}; {duration(seconds)} wall time on 2 parallel jobs. {provenance('suite')}"}


@job("ci", ["ci"], "`.ci/run` in a fresh clone of HEAD: the time of each stage (about an hour)")
def ci(ctx):
    clone = ctx.scratch / "fresh"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    cmd = ".ci/run" + (" # --quick: NORMNET_FUZZ_SECONDS=1" if ctx.quick else "")
    env = dict(os.environ, NORMNET_FUZZ_SECONDS="1" if ctx.quick else os.environ.get("NORMNET_FUZZ_SECONDS", "20"))
    log(f"$ {cmd}   (in {clone})")
    start = last = time.monotonic()
    stages, stage = [], "start"
    tail = collections.deque(maxlen=80)  # shown if it fails: the clone is removed with the scratch folder
    proc = subprocess.Popen([str(clone / ".ci" / "run")], cwd=clone, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    for line in proc.stdout:
        tail.append(line)
        if line.startswith("== "):
            now = time.monotonic()
            stages.append((stage, now - last))
            stage, last = line[3:].strip(), now
    stages.append((stage, time.monotonic() - last))
    if proc.wait() != 0:
        sys.stderr.write("".join(tail))
        raise SystemExit(f"generate: .ci/run failed with exit status {proc.returncode} (its last lines above)")
    rows = ["| stage | time |", "|---|---:|"] + [f"| {name} | {duration(t)} |" for name, t in stages if name != "start"]
    return {"ci": f"```sh\n{cmd}\n```\n\n" + "\n".join(rows) +
                  f"\n\n{duration(time.monotonic() - start)} in all. {provenance('ci')}"}


BLOCKS = {block: name for name, j in JOBS.items() for block in j.blocks}
FRESH_CLONE_JOBS = ("ci", "quickstart-times")
# Every command the jobs run, full and quick (tests/docs/check_docs.py checks their options).
COMMANDS = ([c for _, full, quick in RECIPES.values() for c in (full, quick)] + [SAMPLE]
            + [c for pair in list(BENCH.values()) + list(PEERS.values()) for c in pair]
            + [c for _, _, full, quick, _ in COMPARE.values() for c in (full, quick)] + list(SCALING)
            + list(ONNX_GUIDE) + list(ONNX_RUN[:2]))


# ------------------------------------------------------------------------------------ writing

def markdown_files():
    return [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))


def replace_block(text, name, content):
    pattern = re.compile(rf"(<!-- generated: {name} -->\n).*?(<!-- end: {name} -->)", re.S)
    return pattern.sub(lambda m: m.group(1) + content.strip("\n") + "\n" + m.group(2), text)


def write_blocks(blocks):
    files = markdown_files()
    for md in files:
        text = original = md.read_text(encoding="utf-8")
        for name, content in blocks.items():
            text = replace_block(text, name, content)
        if text != original:
            md.write_text(text, encoding="utf-8")
            log(f"wrote {md.relative_to(ROOT)}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog="Jobs: " + ", ".join(JOBS))
    p.add_argument("jobs", nargs="*", help="jobs to run (see --list)")
    p.add_argument("--all", action="store_true", help="run every job")
    p.add_argument("--list", action="store_true", help="list the jobs, their blocks and commands")
    p.add_argument("--quick", action="store_true", help="tiny settings, print the blocks, write nothing")
    p.add_argument("--render-only", action="store_true",
                   help="compare jobs: rewrite their blocks from the reports already in docs/experiments/, run nothing")
    p.add_argument("--build", type=pathlib.Path, default=ROOT / "build")
    p.add_argument("--threads", type=int, help="append --threads N to the training commands (recipes, compare): "
                   "on a shared machine one thread keeps its pace; their results then differ from the "
                   "default thread count's in the last bits")
    a = p.parse_args()
    if a.list:
        for j in JOBS.values():
            print(f"{j.name:14} -> {', '.join(j.blocks)}\n{'':17}{j.about}")
        return 0
    names = list(JOBS) if a.all else a.jobs
    unknown = [n for n in names if n not in JOBS]
    if unknown or not names:
        p.error(f"unknown job(s): {', '.join(unknown)}" if unknown else "name a job, or --all, or --list")
    build = a.build.resolve()
    # The jobs that build their own fresh clone need no build here.
    needs_build = any(n not in FRESH_CLONE_JOBS for n in names)
    if needs_build and not (build / "apps" / "normnet" / "normnet").exists():
        p.error(f"{build}/apps/normnet/normnet not found: cmake --build {a.build} --target normnet_app")
    newer = None if a.render_only or not needs_build else stale_build(build)
    if newer:
        p.error(f"{newer.relative_to(ROOT)} is newer than {a.build}/apps/normnet/normnet: "
                f"cmake --build {a.build} --target normnet_app first")
    global COMMIT
    COMMIT = head_commit()
    with tempfile.TemporaryDirectory(prefix="normnet-docs-") as scratch:
        ctx = Context(build, a.quick, pathlib.Path(scratch), a.threads, a.render_only)
        for name in names:
            blocks = JOBS[name].run(ctx)
            if a.quick:
                for block, content in blocks.items():
                    print(f"<!-- generated: {block} (--quick: not written) -->\n{content}\n<!-- end: {block} -->\n")
                continue
            write_blocks(blocks)
            if "headline" in JOBS[name].blocks:
                write_blocks({"headline": headline(markdown_files())})
    return 0


if __name__ == "__main__":
    sys.exit(main())
