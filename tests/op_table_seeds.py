#!/usr/bin/python3
"""The op table's longer run: the same rows over other seeds' samples (other shapes, dims, views
and values), each seed's table written by tests/golden/gen_optable.py into a scratch folder and
run by the Catch2 tests with NORMNET_OPTABLE_DIR. CI runs the committed seed 0 only.

    /usr/bin/python3 tests/op_table_seeds.py --build build --seeds 1-20

Exits 1 if any seed fails (its output is printed), 77 where python3-torch is missing.
"""

import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def seed_list(text):
    seeds = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        seeds += range(int(lo), int(hi or lo) + 1)
    return seeds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", required=True, help="the build folder (holds tests/normnet_tests)")
    parser.add_argument("--seeds", default="1-10", help="seeds to run, e.g. 1-20 or 3,5,9 (default 1-10)")
    args = parser.parse_args()
    try:
        import torch  # noqa: F401 (the generator needs it)
    except ImportError:
        print("NORMNET_SKIP: python3-torch is not installed")
        return 77
    tests = os.path.join(args.build, "tests", "normnet_tests")
    failed = []
    for seed in seed_list(args.seeds):
        with tempfile.TemporaryDirectory(prefix=f"optable{seed}-") as out:
            subprocess.run([sys.executable, os.path.join(HERE, "golden", "gen_optable.py"), "--seed", str(seed),
                            "--out", out], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            run = subprocess.run([tests, "[optable]"], env={**os.environ, "NORMNET_OPTABLE_DIR": out},
                                 capture_output=True, text=True)
        print(f"seed {seed}: {'ok' if run.returncode == 0 else 'FAILED'}", flush=True)
        if run.returncode != 0:
            print(run.stdout[-20000:])
            failed.append(seed)
    if failed:
        print(f"failed seeds: {', '.join(map(str, failed))}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
