#!/usr/bin/env python3
"""Data-parallel scaling of `normnet train`'s loop on this machine (a benchmark, not a test).

Times the seed MLP (784-300-100-10, LayerNorm, Adam) at global batch 128 with `normnet bench`:
one process with 2 threads against `mpirun -np 2` with 1 thread each (with the sharded optimizer
step, normnet's default for ranks on one node, and with the allreduce it replaces), alternating
the configurations `--rounds` times so all see the same machine state, and prints samples/s, the
milliseconds per step spent in the gradient exchange (which include waiting for the slower rank),
rank 0's phases of a step (`normnet bench --profile`) and the scaling efficiency (N = 2 x 1
samples/s over N = 1 x 2 samples/s). Then measures
the all-reduce cost alpha + beta * P with allreduce_bench over shared memory (vader) and over
TCP on loopback.

  /usr/bin/python3 apps/dist/scaling_bench.py --build build --data data/mnist [--mpirun-args '--bind-to none']
"""
import argparse
import json
import os
import re
import statistics
import subprocess

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]


def bench(args, world, threads, shard=True):
    cmd = [os.path.join(args.build, "apps/normnet/normnet"), "bench", "--norms", "layer", "--batch-sizes",
           str(args.batch), "--threads", str(threads), "--data", args.data, "--epochs", str(args.epochs),
           "--warmup-epochs", "1", "--json"]
    if args.limit:
        cmd += ["--limit", str(args.limit)]
    if world > 1:
        cmd = MPIRUN + ["-np", str(world), "--mca", "btl", "self,vader", "-x", "NORMNET_DIST_SHARD"] + \
            args.mpirun_args.split() + cmd
    env = dict(os.environ, NORMNET_DIST_SHARD="1" if shard else "0")
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def allreduce_fit(args, transport):
    cmd = MPIRUN + ["-np", "2", "--mca", "btl", "self," + transport, "--mca", "btl_tcp_if_include", "lo",
                    os.path.join(args.build, "apps/dist/allreduce_bench")]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    m = re.search(r"alpha = ([0-9.]+) us, beta = ([0-9.]+) ns per float", out)
    return float(m.group(1)), float(m.group(2)), out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default="build")
    p.add_argument("--data", default="data/mnist")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--epochs", type=int, default=3, help="timed epochs per configuration (median)")
    p.add_argument("--rounds", type=int, default=2, help="alternations of the two configurations")
    p.add_argument("--limit", type=int, default=0, help="training images (0: all 60000)")
    p.add_argument("--mpirun-args", default="",
                   help="more options for the N = 2 runs' mpirun, e.g. '--bind-to core' (Open MPI binds 2 ranks "
                        "to cores by default) or '--bind-to none'")
    args = p.parse_args()

    # 2 x 1 twice: with the sharded optimizer step (the default on one node) and with the
    # allreduce it replaces (NORMNET_DIST_SHARD=0).
    configs = {"1 x 2": (1, 2, True), "2 x 1 sharded": (2, 1, True), "2 x 1 allreduce": (2, 1, False)}
    rows = {name: [] for name in configs}
    for _ in range(args.rounds):
        for name, (world, threads, shard) in configs.items():
            rows[name].append(bench(args, world, threads, shard))
    print(f"seed MLP, LayerNorm, Adam, global batch {args.batch}, median of {args.epochs} epochs per run, "
          f"{args.rounds} alternating rounds (shared machine)")
    print("| processes x threads | round | samples/s | s/epoch | allreduce ms/step | rank 0's ms/step: data, forward, "
          "backward, allreduce, optimizer |")
    print("|---|---:|---:|---:|---:|---|")
    for name, runs in rows.items():
        for i, r in enumerate(runs):
            phases = r.get("phases_ms_per_step", {})
            breakdown = ", ".join(f"{phases.get(k, 0.0):.3f}" for k in ("data", "forward", "backward", "allreduce",
                                                                         "optimizer"))
            print(f"| {name} | {i + 1} | {r['samples_per_second']:.0f} | {r['median_seconds']:.3f} | "
                  f"{r.get('allreduce_ms_per_step', 0.0):.3f} | {breakdown} |")
    one = statistics.median(r["samples_per_second"] for r in rows["1 x 2"])
    for name in ("2 x 1 sharded", "2 x 1 allreduce"):
        two = statistics.median(r["samples_per_second"] for r in rows[name])
        print(f"efficiency ({name} over 1 x 2, medians): {two / one:.1%} (target >= 90%)")
    for transport in ("vader", "tcp"):
        alpha, beta, _ = allreduce_fit(args, transport)
        print(f"allreduce over {transport}, 2 ranks: alpha = {alpha:.2f} us, beta = {beta:.3f} ns per float "
              f"({4 / beta:.2f} GB/s)")


if __name__ == "__main__":
    main()
