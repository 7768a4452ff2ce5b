"""A small write into one partition as the table grows (issue #35 item 3: costs that grow faster
than the work). Not run in CI.

    .venv/bin/python benches/write_scale.py                                # 10k, 100k, 300k files
    .venv/bin/python benches/write_scale.py --engines before=/tmp/old,after=   # two builds, same tables

Tables: ``benches/planning_scale.py``'s metadata-only primary-key tables (FILES tiny data files over
PARTITIONS partitions, one bucket, ``write-only``; the files' metadata is committed, the files are
not written, and no write here reads a data file), built once under ``--workdir`` with snapshot
retention raised so that the measured writes expire nothing.

Each measurement is a fresh process that opens the table and writes 4 new rows into one partition
with a one-shot ``Table.write`` (what a service's upsert does: the writer restores its state, writes
one file, commits), reporting wall seconds, CPU seconds and peak RSS (median of ``--repeat``).
The work is the same at every size, so the time should be flat. ``--engines NAME=DIR,...`` runs
the writes with the ``tidelake`` package found in DIR (empty: the installed one), e.g. a copy of an
older build's ``python/`` directory, against the same tables. The load average is printed before
and after: record it with the numbers.
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
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import planning_scale  # noqa: E402

WRITE = r"""
import json, sys, time
path, partition, first_id = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
from memstat import lifetime_peak_mb
import pyarrow as pa
import tidelake
cpu0, t0 = time.process_time(), time.perf_counter()
t = tidelake.open_table(path)
rows = pa.table({"id": [first_id + i for i in range(4)], "p": [partition] * 4, "v": ["w"] * 4}, schema=t.schema)
t.write(rows)
print(json.dumps({"seconds": time.perf_counter() - t0, "cpu": time.process_time() - cpu0,
                  "rss_mb": lifetime_peak_mb()}))
"""

FIRST_ID = 10**15  # above every id of the built tables


def build(path: pathlib.Path, files: int, partitions: int, snapshots: int) -> None:
    """The metadata-only table of one size, with retention that keeps every snapshot."""
    if (path / "_built.json").exists():
        return
    planning_scale.build_metadata_only(path, files, partitions, snapshots)
    import tidelake

    t = tidelake.open_table(path)
    for key in ("snapshot.num-retained.min", "snapshot.num-retained.max"):
        t = t.set_option(key, "1000000")


def write(path: pathlib.Path, engine: str, repeat: int, counter: list[int]) -> dict[str, float]:
    """The median of ``repeat`` one-partition writes, each in a fresh process."""
    meta = json.loads((path / "_built.json").read_text())
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (engine, str(HERE), env.get("PYTHONPATH", "")) if p)
    runs = []
    for _ in range(repeat):
        counter[0] += 4
        out = subprocess.run([sys.executable, "-c", WRITE, str(path), str(meta["partitions"] // 2),
                              str(FIRST_ID + counter[0])], check=True, capture_output=True, text=True, env=env)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {k: statistics.median(r[k] for r in runs) for k in ("seconds", "cpu", "rss_mb")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000:1000:10,100000:10000:10,300000:10000:30",
                    help="FILES:PARTITIONS:SNAPSHOTS,... (default %(default)s)")
    ap.add_argument("--engines", default="current=", help="NAME=DIR,... (default %(default)s)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", default=os.environ.get("TIDELAKE_BENCH_DIR", tempfile.gettempdir() +
                                                        "/tidelake-bench"))
    args = ap.parse_args()
    print("load before:", os.getloadavg())
    work = pathlib.Path(args.workdir) / "write_scale"
    work.mkdir(parents=True, exist_ok=True)
    sizes = [tuple(int(x) for x in s.split(":")) for s in args.sizes.split(",")]
    engines = [tuple(e.split("=", 1)) for e in args.engines.split(",")]
    counter = [0]
    results: list[dict[str, Any]] = []
    for files, partitions, snapshots in sizes:
        path = work / f"t_{files}_{partitions}_{snapshots}"
        build(path, files, partitions, snapshots)
        for name, engine in engines:
            results.append({"files": files, "partitions": partitions, "engine": name,
                            **write(path, engine, args.repeat, counter)})
            print(json.dumps(results[-1]), file=sys.stderr)
    print("load after:", os.getloadavg())
    print("\n| files | partitions | engine | seconds | x smallest | CPU s | peak RSS MB |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        first = next(x for x in results if x["engine"] == r["engine"])
        print(f"| {r['files']:,} | {r['partitions']:,} | {r['engine']} | {r['seconds']:.3f} | "
              f"{r['seconds'] / first['seconds']:.1f}x | {r['cpu']:.2f} | {r['rss_mb']:.0f} |")


if __name__ == "__main__":
    main()
