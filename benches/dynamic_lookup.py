"""Point reads on a dynamic-bucket table (issue #17: buckets found through their HASH index):
the read benchmark's rows (2M-key bulk load + 10 upserts, never compacted) written to a
primary-key table with ``bucket = -1`` (``dynamic-bucket.target-row-num`` from ``--target``).

    .venv/bin/python benches/dynamic_lookup.py                 # full size, Paimon's 2M keys per bucket
    .venv/bin/python benches/dynamic_lookup.py --target 500000 # more buckets

Reports the full merged read (median of 3), then over 100 keys (10 absent) the median and p99
of `to_arrow(filter=[("id", "=", k)])` on one long-lived Table, of `Table.lookup([k])` and of a
warm `lookuper().lookup([k])`, with the buckets a point scan plans. Every answer is checked.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import workload as wl  # noqa: E402

POINTS = 100
ABSENT = 10


def _times(read: Callable[[int], Any], keys: list[int], present: set[int]) -> list[float]:
    out = []
    for k in keys:
        start = time.perf_counter()
        got = read(k)
        out.append(time.perf_counter() - start)
        if got.num_rows != (1 if k in present else 0):
            raise SystemExit(f"key {k}: {got.num_rows} rows")
    return out


def main() -> None:
    import tidelake

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--target", type=int, default=2_000_000)
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args()
    w = wl.Workload().scaled(args.scale)
    work = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="tidelake-dynamic-"))
    data = wl.save(w, work / "data")
    _, bulk, upserts = wl.load(data)
    path = work / f"dynamic-{args.target}"
    if not path.exists():
        t = tidelake.create_table(path, wl.SCHEMA, primary_keys=[wl.KEY], bucket=-1,
                                  options={"write-only": "true", "dynamic-bucket.target-row-num": str(args.target)})
        t.write(bulk)
        for up in upserts:
            t.upsert(up)
    final = wl.final_state(bulk, upserts)
    keys = final[wl.KEY].to_numpy()
    present = set(keys.tolist())
    rng = np.random.default_rng(7)
    points = [int(k) for k in rng.choice(keys, POINTS - ABSENT, replace=False)]
    points += [int(keys.max()) + 1 + i for i in range(ABSENT)]
    t = tidelake.open_table(path)
    buckets = len(t.scan().splits())
    planned = statistics.median(len(t.scan(filter=[(wl.KEY, "=", k)]).splits()) for k in points)
    print(f"{final.num_rows:,} rows, {buckets} buckets, a point scan plans {planned:g}; "
          f"load average {os.getloadavg()[0]:.2f} at start", flush=True)
    full = []
    for _ in range(3):
        start = time.perf_counter()
        if t.to_arrow().num_rows != final.num_rows:
            raise SystemExit("full read: wrong row count")
        full.append(time.perf_counter() - start)
    lookuper = t.lookuper()
    readers: dict[str, Callable[[int], Any]] = {
        "to_arrow(id = k)": lambda k: t.to_arrow(filter=[(wl.KEY, "=", k)]),
        "Table.lookup([k])": lambda k: t.lookup([k]),
        "lookuper().lookup([k])": lambda k: lookuper.lookup([k]),
    }
    results = {"full_read_ms": statistics.median(full) * 1000, "buckets": buckets, "planned": planned}
    print(f"full read {results['full_read_ms']:.0f} ms")
    for name, read in readers.items():
        read(points[0])  # warm
        times = _times(read, points, present)
        p50, p99 = statistics.median(times), sorted(times)[int(len(times) * 0.99) - 1]
        results[name] = {"p50_ms": p50 * 1000, "p99_ms": p99 * 1000}
        print(f"{name:<24} p50 {p50 * 1000:6.2f} ms  p99 {p99 * 1000:6.2f} ms  "
              f"p50/full {p50 / statistics.median(full):.2%}", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f} at end")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
