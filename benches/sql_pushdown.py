"""What ``tidelake.sql`` pushes into tidelake's planner for a selective query (issue #36, item 4).

The table: primary key ``(id, day)``, partitioned by ``day`` (10 days), 4 buckets, ROWS rows
written in 5 commits of contiguous id blocks (so each data file covers one id range of one day
and bucket): 200 data files. The query keeps one day and 1% of the ids:

    SELECT id, price FROM db.t WHERE day = '2026-01-05' AND id BETWEEN lo AND lo + 1%

Reported, for ``tidelake.sql`` (DuckDB hands the dataset its columns and filter; the filter
reaches the planner through Substrait):
* files and stored rows the planned read opens (the scans' splits), against the table's total;
* rows tidelake's read hands DuckDB (after page and row pruning and the merge);
* wall time (median of 3), against DuckDB over a plain ``t.to_arrow()`` (everything read,
  DuckDB filters).

    .venv/bin/python benches/sql_pushdown.py              # 1,000,000 rows
    .venv/bin/python benches/sql_pushdown.py --scale 0.1  # quicker
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import tempfile
import time
from typing import Any

import pyarrow as pa

import tidelake
from tidelake.scan import Scan

DAYS = [dt.date(2026, 1, 1) + dt.timedelta(days=i) for i in range(10)]
COMMITS = 5
RUNS = 3


def build(warehouse: str, rows: int) -> tidelake.Table:
    catalog = tidelake.Catalog(warehouse)
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("day", pa.date32(), nullable=False),
                        ("qty", pa.int32()), ("price", pa.float64()), ("note", pa.string())])
    table = catalog.create_table("db.t", schema, primary_keys=["id", "day"], partition_keys=["day"], bucket=4,
                                 options={"write-only": "true"})
    block = rows // COMMITS
    for k in range(COMMITS):
        ids = pa.array(range(k * block, (k + 1) * block), pa.int64())
        table.write(pa.table({"id": ids, "day": pa.array([DAYS[i % len(DAYS)] for i in range(block)], pa.date32()),
                              "qty": pa.array([i % 100 for i in range(block)], pa.int32()),
                              "price": pa.array([i * 0.5 for i in range(block)], pa.float64()),
                              "note": pa.array([f"note-{i}" for i in range(block)])}, schema=schema))
    return table


def planned(scan: Scan) -> tuple[int, int]:
    """(data files, stored rows) the scan's splits open."""
    splits = scan.splits()
    return sum(len(json.loads(s.payload)["files"]) for s in splits), sum(s.row_count for s in splits)


def measure_sql(query: str, warehouse: str) -> dict[str, Any]:
    """Run ``query`` once, recording every scan tidelake plans for it and the rows each hands on."""
    scans: list[Scan] = []
    handed = [0]
    to_reader = Scan.to_reader

    def spy(self: Scan, progress: Any = None) -> pa.RecordBatchReader:
        scans.append(self)
        reader = to_reader(self, progress)

        def counted() -> Any:
            for batch in reader:
                handed[0] += batch.num_rows
                yield batch

        return pa.RecordBatchReader.from_batches(reader.schema, counted())

    Scan.to_reader = spy  # type: ignore[method-assign]
    try:
        result = tidelake.sql(query, warehouse=warehouse)
    finally:
        Scan.to_reader = to_reader  # type: ignore[method-assign]
    files = rows = 0
    for scan in scans:
        f, r = planned(scan)
        files, rows = files + f, rows + r
    return {"result_rows": result.num_rows, "files": files, "stored_rows": rows, "handed_rows": handed[0]}


def timed(fn: Any) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args()
    import duckdb

    rows = int(1_000_000 * args.scale)
    warehouse = tempfile.mkdtemp(prefix="tidelake-sql-", dir=args.workdir)
    print(f"load average {os.getloadavg()[0]:.2f} at start; building {rows:,} rows in {warehouse}", flush=True)
    table = build(warehouse, rows)
    total_files, total_rows = planned(table.scan())
    lo = rows // 2
    hi = lo + rows // 100
    where = f"day = DATE '{DAYS[4]}' AND id BETWEEN {lo} AND {hi}"
    query = f"SELECT id, price FROM db.t WHERE {where}"
    pushed = measure_sql(query, warehouse)
    print(f"table: {total_files} data files, {total_rows:,} stored rows")
    print(f"tidelake.sql: planned {pushed['files']} files ({pushed['files'] / total_files:.1%}), "
          f"{pushed['stored_rows']:,} stored rows ({pushed['stored_rows'] / total_rows:.1%}); "
          f"{pushed['handed_rows']:,} rows handed to DuckDB; {pushed['result_rows']:,} in the answer")

    def over_to_arrow() -> int:
        everything = table.to_arrow()  # noqa: F841 (DuckDB's replacement scan)
        return len(duckdb.sql(f"SELECT id, price FROM everything WHERE {where}").fetchall())

    if over_to_arrow() != pushed["result_rows"]:
        raise SystemExit("DuckDB over to_arrow() answers differently")
    sql_s = timed(lambda: tidelake.sql(query, warehouse=warehouse))
    arrow_s = timed(over_to_arrow)
    print(f"time: tidelake.sql {sql_s * 1000:.0f} ms, DuckDB over to_arrow() {arrow_s * 1000:.0f} ms "
          f"({arrow_s / sql_s:.1f}x)")
    print(f"load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
