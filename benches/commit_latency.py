"""Commit latency as history grows (issues #15 scenario 9 and #17 item 5): N one-row upsert
commits on a primary-key table, with each system's automatic maintenance running after every
commit as configured by default (tidelake: snapshot expiration and the rest of `maintain`).

    .venv/bin/python benches/commit_latency.py                     # 10,000 commits, tidelake only
    .venv/bin/python benches/commit_latency.py --commits 2000 --systems tidelake,pypaimon_native,deltalake

Each system runs in a process of its own, one after the other (same machine, same run). Reports
the median latency of a window of 50 commits around commit 50 and around commit N, and their
ratio (target: <= 1.3). Latency is the wall time of one upsert of one row (write + commit +
maintenance) on local storage under `--workdir` (default: a temporary directory). Peers use the
writers of `benches/worker.py`: pypaimon 2.1 with its native write and commit path (one fixed
bucket), deltalake `merge` (update all / insert all); `java_paimon` is Paimon 1.3.1's Java API
(one fixed bucket, a `BatchTableWrite` and commit per row: `benches/java_peer.py`'s commits step). The load average is printed before and
after.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import workload as wl  # noqa: E402

WINDOW = 50
SYSTEMS = ("tidelake", "pypaimon_native", "deltalake", "java_paimon")


def window(latencies: list[float], center: int) -> list[float]:
    """The `WINDOW` latencies around 1-based commit `center`, kept inside the run."""
    start = min(max(center - WINDOW // 2, 0), len(latencies) - WINDOW)
    return latencies[start:start + WINDOW]


def measure(system: str, commits: int, target: pathlib.Path) -> dict[str, object]:
    """Run `commits` one-row upserts with `system` in this process; its latencies."""
    if system == "java_paimon":  # Paimon's Java API (java_peer.py's commits step), one fixed bucket
        import java_peer

        data = wl.save(wl.Workload(rows=1000, commits=0, buckets=1), target / "data")
        res = java_peer.run_process(
            java_peer.command(system, "commits", ["buckets=1", f"n={commits}"], 1, data, target / "java",
                              java_peer.java_classpath()), target / "java.log", timeout=24 * 3600)
        return {"system": system, "latencies": [ms / 1000 for ms in res["commits"]["runs"][0]["commit_ms"]]}
    rng = np.random.default_rng(7)
    rows = [wl._rows(np.array([i % 1000]), i, rng) for i in range(commits)]
    if system == "tidelake":  # default options: dynamic bucket, inline compaction, maintain
        import tidelake

        t = tidelake.create_table(target, wl.SCHEMA, primary_keys=[wl.KEY])

        def upsert(row: object, i: int) -> None:
            t.upsert(row)
    else:
        import worker

        writer = worker.WRITERS[system]()
        writer.create(target, wl.Workload(buckets=1))

        def upsert(row: object, i: int) -> None:
            if i == 0 and system == "deltalake":
                writer.bulk(row)  # the table's first commit creates it
            else:
                writer.upsert(row, i)
    latencies = []
    for i, row in enumerate(rows):
        start = time.perf_counter()
        upsert(row, i)
        latencies.append(time.perf_counter() - start)
        if (i + 1) % 1000 == 0:
            print(f"  {system}: {i + 1} commits, last {latencies[-1] * 1000:.1f} ms", file=sys.stderr, flush=True)
    return {"system": system, "latencies": latencies}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--systems", default="tidelake",
                        help=f"comma-separated, of {', '.join(SYSTEMS)} (default: tidelake)")
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--worker", metavar="SYSTEM", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.commits < 2 * WINDOW:
        parser.error(f"--commits must be at least {2 * WINDOW}")
    workdir = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="tidelake-commit-latency-"))
    if args.worker:
        print("RESULT " + json.dumps(measure(args.worker, args.commits, workdir / args.worker)))
        return

    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        parser.error(f"unknown systems {unknown}; choose from {', '.join(SYSTEMS)}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"| system | commits | median of {WINDOW} around commit {WINDOW} | around commit {args.commits} | ratio |")
    print("|---|---|---|---|---|")
    for system in systems:
        out = subprocess.run([sys.executable, __file__, "--worker", system, "--commits", str(args.commits),
                              "--workdir", str(workdir)], check=True, capture_output=True, text=True)
        result = json.loads(next(ln for ln in out.stdout.splitlines() if ln.startswith("RESULT "))[7:])
        latencies = result["latencies"]
        early = statistics.median(window(latencies, WINDOW))
        late = statistics.median(window(latencies, args.commits))
        print(f"| {system} | {args.commits} | {early * 1000:.1f} ms | {late * 1000:.1f} ms | {late / early:.2f} |",
              flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
