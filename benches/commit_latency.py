"""Commit latency as history grows (issue #15, scenario 9): N one-row commits on a primary-key
table with default options, so automatic maintenance (snapshot expiration and the rest of
`maintain`) runs after every commit exactly as configured by default.

    .venv/bin/python benches/commit_latency.py                  # 5,000 commits
    .venv/bin/python benches/commit_latency.py --commits 1000   # shorter run

Reports the median latency of a window of 50 commits around commit 50 and around commit N,
and their ratio (target: <= 1.3). Latency is wall time of `Table.write` (write + commit +
maintenance) for one row, on local storage under `--workdir` (default: a temporary directory).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import pyarrow as pa

import tidelake

WINDOW = 50


def window(latencies: list[float], center: int) -> list[float]:
    """The `WINDOW` latencies around 1-based commit `center`, kept inside the run."""
    start = min(max(center - WINDOW // 2, 0), len(latencies) - WINDOW)
    return latencies[start:start + WINDOW]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=5000)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    if args.commits < 2 * WINDOW:
        parser.error(f"--commits must be at least {2 * WINDOW}")

    workdir = args.workdir or tempfile.mkdtemp(prefix="tidelake-commit-latency-")
    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
    table = tidelake.create_table(os.path.join(workdir, "t"), schema, primary_keys=["k"])
    latencies = []
    for i in range(args.commits):
        row = pa.table({"k": [i % 1000], "v": [f"v{i}"]}, schema=schema)
        start = time.perf_counter()
        table.write(row)
        latencies.append(time.perf_counter() - start)
        if (i + 1) % 500 == 0:
            print(f"  {i + 1} commits, last {latencies[-1] * 1000:.1f} ms", flush=True)

    snapshots = table.snapshots()
    early = statistics.median(window(latencies, WINDOW))
    late = statistics.median(window(latencies, args.commits))
    print(f"table: {table.path}, {len(snapshots)} snapshots retained "
          f"({snapshots[0].id}..{snapshots[-1].id}), default options")
    print(f"| commits | median of {WINDOW} around commit {WINDOW} | around commit {args.commits} | ratio |")
    print("|---|---|---|---|")
    print(f"| {args.commits} | {early * 1000:.1f} ms | {late * 1000:.1f} ms | {late / early:.2f} |")


if __name__ == "__main__":
    main()
