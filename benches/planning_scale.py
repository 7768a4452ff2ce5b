"""Planning at warehouse scale (issue #35 item 2, first bullet): how the cost of planning a read
grows with a table's data files, partitions and history (not run in CI).

    .venv/bin/python benches/planning_scale.py                          # 10k / 100k / 300k files
    .venv/bin/python benches/planning_scale.py --sizes 10000:1000,1000000:10000 --snapshots 10000

Each size ``FILES:PARTITIONS`` is one primary-key table (``id BIGINT`` key, ``p INT`` partition,
one fixed bucket, ``write-only`` so no compaction merges its files, snapshot retention above the
run's commit count) built through tidelake's own write and commit path: ``--snapshots`` commits,
each writing one tiny data file (a few rows) into each of ``FILES / snapshots`` partitions taken
round-robin, so the table ends with FILES live data files spread evenly over PARTITIONS and
``--snapshots`` snapshots. Building is not timed; it is cached under ``--workdir`` by size.

Then, each in a fresh process (cold: nothing cached, as a query engine's planner starts), the
median of ``--repeat`` runs of:

* full plan: ``Table.scan().splits()`` of the latest snapshot;
* one-partition plan: ``scan(filter=[("p", "=", k)])``;
* one-key plan: ``scan(filter=[("id", "=", key)])`` (key statistics prune the files);

reporting wall seconds, CPU seconds and peak RSS (MB) of the planning process (opening the
table included), and the splits and rows planned. The Markdown table gives each plan's growth
from the smallest size (the issue's targets: a one-partition plan of the largest table within
10x of the smallest's; a full plan of 1M files under 2 s and 1 GB). The load average is printed
before and after: record it with the numbers.
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

ROWS_PER_FILE = 4


def build(path: pathlib.Path, files: int, partitions: int, snapshots: int) -> None:
    """The table of one size (see the module doc); a marker file makes it reusable."""
    import numpy as np
    import pyarrow as pa

    import tidelake

    marker = path / "_built.json"
    if marker.exists():
        return
    per_commit = max(1, files // snapshots)
    commits = files // per_commit
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.int32(), nullable=False),
                        ("v", pa.string())])
    t = tidelake.create_table(path, schema, primary_keys=["id", "p"], partition_keys=["p"], options={
        "bucket": "1", "write-only": "true", "snapshot.num-retained.max": str(commits + 10),
        "snapshot.num-retained.min": str(commits + 10), "snapshot.time-retained": "3650 d"})
    began = time.monotonic()
    for c in range(commits):
        parts = (np.arange(per_commit) + c * per_commit) % partitions
        p = np.repeat(parts, ROWS_PER_FILE).astype(np.int32)
        ids = np.arange(len(p), dtype=np.int64) + c * per_commit * ROWS_PER_FILE
        t.write(pa.table({"id": ids, "p": p, "v": pa.array([f"c{c}"] * len(p))}, schema=schema))
        if c % 500 == 0:
            print(f"  {path.name}: commit {c}/{commits} ({time.monotonic() - began:.0f} s)", file=sys.stderr)
    marker.write_text(json.dumps({"files": commits * per_commit, "partitions": partitions, "snapshots": commits,
                                  "build_seconds": time.monotonic() - began}))


PLAN = r"""
import json, sys, time
import tidelake
path, kind, arg = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, sys.argv[4])
from memstat import lifetime_peak_mb
cpu0, t0 = time.process_time(), time.perf_counter()
t = tidelake.open_table(path)
flt = None if kind == "full" else [("p", "=", int(arg))] if kind == "partition" else [("id", "=", int(arg))]
splits = t.scan(filter=flt).splits()
rows = sum(s.row_count for s in splits)
print(json.dumps({"seconds": time.perf_counter() - t0, "cpu": time.process_time() - cpu0,
                  "rss_mb": lifetime_peak_mb(),
                  "splits": len(splits), "rows": rows}))
"""


def plan(path: pathlib.Path, kind: str, arg: int, repeat: int) -> dict[str, float]:
    """The median of ``repeat`` cold plans (one process each)."""
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", PLAN, str(path), kind, str(arg),
                              str(pathlib.Path(__file__).resolve().parent)], check=True,
                             capture_output=True, text=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    best = sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]
    return {**best, "seconds": statistics.median(r["seconds"] for r in runs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000:1000,100000:10000,300000:10000",
                    help="FILES:PARTITIONS,... (default %(default)s)")
    ap.add_argument("--snapshots", type=int, default=10000, help="commits per table (default %(default)s)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", default=os.environ.get("TIDELAKE_BENCH_DIR", tempfile.gettempdir() +
                                                        "/tidelake-bench"))
    args = ap.parse_args()
    print("load before:", os.getloadavg())
    work = pathlib.Path(args.workdir) / "planning"
    work.mkdir(parents=True, exist_ok=True)
    results = []
    for size in args.sizes.split(","):
        files, partitions = (int(x) for x in size.split(":"))
        path = work / f"t_{files}_{partitions}_{args.snapshots}"
        build(path, files, partitions, args.snapshots)
        meta = json.loads((path / "_built.json").read_text())
        row = {"size": meta}
        row["full"] = plan(path, "full", 0, args.repeat)
        row["partition"] = plan(path, "partition", partitions // 2, args.repeat)
        row["key"] = plan(path, "key", ROWS_PER_FILE * (meta["files"] // 2), args.repeat)
        results.append(row)
        print(json.dumps(row), file=sys.stderr)
    print("load after:", os.getloadavg())
    (work / "results.json").write_text(json.dumps(results, indent=1))
    print("\n| files | partitions | snapshots | plan | seconds | x smallest | CPU s | peak RSS MB | splits | rows "
          "planned |\n|---|---|---|---|---|---|---|---|---|---|")
    for row in results:
        for kind in ("full", "partition", "key"):
            r, first = row[kind], results[0][kind]
            print(f"| {row['size']['files']:,} | {row['size']['partitions']:,} | {row['size']['snapshots']:,} | "
                  f"{kind} | {r['seconds']:.3f} | {r['seconds'] / first['seconds']:.1f}x | {r['cpu']:.2f} | "
                  f"{r['rss_mb']:.0f} | {r['splits']:,} | {r['rows']:,} |")


if __name__ == "__main__":
    main()
