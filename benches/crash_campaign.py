"""The crash campaign: the crash harness of tests/test_crash.py (writer, compactor and expirer
processes aborted at seeded random storage operations, before or right after the operation
reaches storage; after each crash every snapshot must read exactly what it committed, no
committed row may be lost, and the next write plus orphan cleaning must leave a tidy table)
run for many more crash points than CI runs, with several seeds.

    .venv/bin/python benches/crash_campaign.py                       # 1,000 crash points, 2 seeds
    .venv/bin/python benches/crash_campaign.py --crashes 200 --seeds 1

Prints one Markdown row per seed (crash points, operations that completed, crashed operations
that had committed, orphan files cleaned, minutes, load average) for benches/README.md.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
SUMMARY = re.compile(r"local: (\d+) crash points \(seed (\d+)\), (\d+) operations ran to completion, "
                     r"(\d+) crashed-or-not operations committed, (\d+) orphan files cleaned")


def run(crashes: int, seed: int) -> str:
    env = {**os.environ, "TIDELAKE_CRASHES": str(crashes), "TIDELAKE_CRASH_SEED": str(seed)}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
                           "tests/test_crash.py::test_crash_points[local]"], cwd=REPO, env=env,
                          capture_output=True, text=True)
    minutes = (time.monotonic() - started) / 60
    found = SUMMARY.search(done.stdout)
    if done.returncode != 0 or found is None:
        sys.stderr.write(done.stdout[-5000:] + done.stderr[-5000:])
        raise SystemExit(f"seed {seed}: the campaign found a problem (pytest exit {done.returncode})")
    points, _, completed, committed, orphans = found.groups()
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"| {seed} | {points} | {completed} | {committed} | {orphans} | {minutes:.1f} | {load} |"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--crashes", type=int, default=500, help="crash points per seed (default 500)")
    p.add_argument("--seeds", type=int, default=2, help="how many seeds (default 2: 1,000 crash points)")
    p.add_argument("--first-seed", type=int, default=20261206)
    args = p.parse_args()
    print("| seed | crash points | completed | crashed-or-not committed | orphans cleaned | minutes | load |")
    print("|---|---|---|---|---|---|---|")
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        print(run(args.crashes, seed), flush=True)


if __name__ == "__main__":
    main()
