"""Point lookups and narrow ranges on the read benchmark's table (issue #17): a 2M-key
primary-key table, 4 buckets, bulk load + 10 upsert commits, never compacted (the same table
`benches/run.py` reads), and a Delta table with the same final rows.

    .venv/bin/python benches/point_lookup.py               # full size
    .venv/bin/python benches/point_lookup.py --scale 0.1   # quicker
    .venv/bin/python benches/point_lookup.py --page-rows 512   # tidelake's pages of 512 rows

Reports, per system, the full merged read, the median and p99 of point lookups
(`id = k` over 100 keys, 10 of them absent) and of 1% key ranges (20 ranges), each also as a
ratio of that system's full read (targets for tidelake: point <= 1%, range <= 10%). Systems:
tidelake, pypaimon with its native (Rust) reader, deltalake. Every answer is checked against
the expected final state.

Then the lookup API: one key (median/p99 over the same 100 keys) and 1,000 keys in one call,
through `Table.lookup` (plans the snapshot on every call: cold) and a `Table.lookuper()`
(first call on a new lookuper: cold; later calls: warm, the same 1,000 keys five times; "new":
five other sets of 1,000 random keys, one call each), against pypaimon native and deltalake
answering the same keys with `=` / `in` filters (targets: one key <= 5 ms warm, 1,000 keys
<= 50 ms).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import worker  # noqa: E402
import workload as wl  # noqa: E402

POINTS = 100
ABSENT = 10
RANGES = 20


def timed(fn: Callable[[], pa.Table]) -> tuple[float, pa.Table]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def readers(setup: dict[str, Any]) -> dict[str, Callable[[Any], pa.Table]]:
    """Per system: read with `filter`, one of None, ("=", k) or ("between", lo, hi)."""
    import tidelake
    from deltalake import DeltaTable
    from pypaimon.table.file_store_table import FileStoreTable

    t = tidelake.open_table(setup["tidelake_path"])
    paimon = FileStoreTable.from_path(setup["tidelake_path"]).copy({"read.native.enabled": "true"})

    def tl(f: Any) -> pa.Table:
        if f is None:
            return t.to_arrow()
        if f[0] == "=":
            return t.to_arrow(filter=[(wl.KEY, "=", f[1])])
        return t.to_arrow(filter=[(wl.KEY, ">=", f[1]), (wl.KEY, "<=", f[2])])

    def pp(f: Any) -> pa.Table:
        rb = paimon.new_read_builder()
        if f is not None:
            pb = rb.new_predicate_builder()
            rb = rb.with_filter(pb.equal(wl.KEY, f[1]) if f[0] == "=" else pb.between(wl.KEY, f[1], f[2]))
        return rb.new_read().to_arrow(rb.new_scan().plan().splits())

    def dl(f: Any) -> pa.Table:
        table = DeltaTable(setup["delta_path"])
        if f is None:
            return table.to_pyarrow_table()
        if f[0] == "=":
            return table.to_pyarrow_table(filters=[(wl.KEY, "=", f[1])])
        return table.to_pyarrow_table(filters=[(wl.KEY, ">=", f[1]), (wl.KEY, "<=", f[2])])

    return {"tidelake": tl, "pypaimon_native": pp, "deltalake": dl}


def expected_rows(final: pa.Table, f: Any) -> int:
    ids = final[wl.KEY]
    if f[0] == "=":
        return pc.sum(pc.equal(ids, f[1])).as_py() or 0
    return pc.sum(pc.and_(pc.greater_equal(ids, f[1]), pc.less_equal(ids, f[2]))).as_py() or 0


def checked_times(name: str, read: Callable[[Any], pa.Table], filters: list[Any], final: pa.Table) -> list[float]:
    """Seconds each filtered read took; each answer checked against the final state."""
    times = []
    for f in filters:
        took, got = timed(lambda f=f: read(f))
        if got.num_rows != expected_rows(final, f):
            raise SystemExit(f"{name}: {f} returned {got.num_rows} rows, expected {expected_rows(final, f)}")
        times.append(took)
    return times


BATCH = 1000


def lookup_readers(setup: dict[str, Any]) -> dict[str, Callable[[list[int]], pa.Table]]:
    """Per system: the rows of some keys."""
    import tidelake
    from deltalake import DeltaTable
    from pypaimon.table.file_store_table import FileStoreTable

    t = tidelake.open_table(setup["tidelake_path"])
    lookuper = t.lookuper()
    paimon = FileStoreTable.from_path(setup["tidelake_path"]).copy({"read.native.enabled": "true"})

    def pp(keys: list[int]) -> pa.Table:
        rb = paimon.new_read_builder()
        pb = rb.new_predicate_builder()
        rb = rb.with_filter(pb.equal(wl.KEY, keys[0]) if len(keys) == 1 else pb.is_in(wl.KEY, keys))
        return rb.new_read().to_arrow(rb.new_scan().plan().splits())

    def dl(keys: list[int]) -> pa.Table:
        op = ("=", keys[0]) if len(keys) == 1 else ("in", keys)
        return DeltaTable(setup["delta_path"]).to_pyarrow_table(filters=[(wl.KEY, *op)])

    return {"tidelake lookup()": t.lookup, "tidelake lookuper": lookuper.lookup,
            "pypaimon_native": pp, "deltalake": dl}


def lookups(setup: dict[str, Any], final: pa.Table, points: list[int], batch: list[int],
            others: list[list[int]]) -> None:
    present = set(final[wl.KEY].to_pylist())

    def check(name: str, keys: list[int], got: pa.Table) -> None:
        want = sum(1 for k in set(keys) if k in present)
        if got.num_rows != want:
            raise SystemExit(f"{name}: {len(keys)} keys returned {got.num_rows} rows, expected {want}")

    print(f"\n{'lookups':<18} {'1 key cold':>10} {'1 key p50':>10} {'p99':>9} {'1,000 cold':>11} {'1,000 warm':>11} "
          f"{'1,000 new':>11}")
    import tidelake

    for name, read in lookup_readers(setup).items():
        if name == "tidelake lookuper":  # cold: a new lookuper's first call
            t = tidelake.open_table(setup["tidelake_path"])
            cold1, got = timed(lambda: t.lookuper().lookup([points[0]]))
            check(name, [points[0]], got)
            cold_batch, got = timed(lambda: t.lookuper().lookup(batch))
        else:
            cold1, got = timed(lambda: read([points[0]]))
            check(name, [points[0]], got)
            cold_batch, got = timed(lambda: read(batch))
        check(name, batch, got)
        times = []
        for k in points:
            took, got = timed(lambda k=k: read([k]))
            check(name, [k], got)
            times.append(took)
        warm_batch = []
        for _ in range(5):
            took, got = timed(lambda: read(batch))
            check(name, batch, got)
            warm_batch.append(took)
        fresh_batch = []
        for other in others:
            took, got = timed(lambda other=other: read(other))
            check(name, other, got)
            fresh_batch.append(took)
        p50, p99 = statistics.median(times), sorted(times)[int(len(times) * 0.99) - 1]
        print(f"{name:<18} {cold1 * 1000:>8.1f}ms {p50 * 1000:>8.1f}ms {p99 * 1000:>7.1f}ms "
              f"{cold_batch * 1000:>9.1f}ms {statistics.median(warm_batch) * 1000:>9.1f}ms "
              f"{statistics.median(fresh_batch) * 1000:>9.1f}ms", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--page-rows", type=int, default=None,
                    help="the tidelake table's parquet.page.row.count.limit (default: tidelake's)")
    args = ap.parse_args()
    options = {"parquet.page.row.count.limit": str(args.page_rows)} if args.page_rows else None
    setup, final = worker.read_tables(args.scale, args.workdir, "tidelake-lookup-", options)
    keys = final[wl.KEY].to_numpy()
    rng = np.random.default_rng(7)
    present = rng.choice(keys, POINTS - ABSENT, replace=False).tolist()
    absent = [int(keys.max()) + 1 + i for i in range(ABSENT)]
    points = [("=", int(k)) for k in present + absent]
    width = max(1, int(keys.max()) // 100)
    ranges = [("between", int(lo), int(lo) + width) for lo in rng.integers(0, int(keys.max()) - width, RANGES)]
    print(f"{final.num_rows:,} rows; load average {os.getloadavg()[0]:.2f} at start", flush=True)
    print(f"{'system':<16} {'full read':>10} {'point p50':>10} {'p99':>9} {'p50/full':>9} "
          f"{'range p50':>10} {'range/full':>10}")
    for name, read in readers(setup).items():
        read(points[0])  # warm: open, footers, first planning
        full = statistics.median(timed(lambda: read(None))[0] for _ in range(3))
        point_times, range_times = checked_times(name, read, points, final), checked_times(name, read, ranges, final)
        p50, p99 = statistics.median(point_times), sorted(point_times)[int(len(point_times) * 0.99) - 1]
        r50 = statistics.median(range_times)
        print(f"{name:<16} {full * 1000:>8.0f}ms {p50 * 1000:>8.1f}ms {p99 * 1000:>7.1f}ms {p50 / full:>8.1%} "
              f"{r50 * 1000:>8.1f}ms {r50 / full:>9.1%}", flush=True)
    batch = rng.choice(keys, BATCH - ABSENT, replace=False).tolist() + absent
    others = [[int(k) for k in rng.choice(keys, BATCH, replace=False)] for _ in range(5)]
    lookups(setup, final, [k for _, k in points], [int(k) for k in batch], others)
    print(f"load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
