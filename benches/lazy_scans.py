"""Lazy scans from polars and DuckDB vs an eager read + filter (issue #20): does the push-down pay?

The table is the read benchmark's (2M keys, 4 buckets, bulk + 10 upserts, never compacted; see
`benches/run.py`). The query keeps a 1% key range and two of the six columns:

    select id, price from t where id between lo and lo + 1% of the keys

Variants, each run in a fresh process (time: median of 3 runs; memory: the peak RSS growth of
the first run over the process with the table open and both engines imported):
* eager:  `t.to_arrow()` then a pyarrow filter and projection (what a user without push-down does);
* polars: `tidelake.polars.scan_table(t).filter(...).select(...).collect()` (projection and the
  range pushed into tidelake's planner);
* duckdb: `duckdb.sql(...)` over `t.to_pyarrow_dataset()` (DuckDB pushes its columns; the filter
  is applied to the merged rows).

    .venv/bin/python benches/lazy_scans.py               # full size
    .venv/bin/python benches/lazy_scans.py --scale 0.1   # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))

VARIANTS = ("eager", "polars", "duckdb")
RUNS = 3


def run_variant(variant: str, path: str, lo: int, hi: int) -> dict[str, float]:
    """In a fresh process: the variant's median time, its answer's row count and peak RSS growth."""
    # every variant imports both engines before its memory baseline
    import duckdb
    import polars as pl
    import pyarrow.compute as pc

    import tidelake
    from tidelake.polars import scan_table
    from memstat import reset_hwm, status_kb

    t = tidelake.open_table(path)
    t.scan()  # open: schema and first planning, outside the measurement

    def eager() -> int:
        full = t.to_arrow()
        mask = pc.and_(pc.greater_equal(full["id"], lo), pc.less_equal(full["id"], hi))
        return full.filter(mask).select(["id", "price"]).num_rows

    def lazy_polars() -> int:
        return scan_table(t).filter(pl.col("id").is_between(lo, hi)).select("id", "price").collect().height

    def lazy_duckdb() -> int:
        d = t.to_pyarrow_dataset()  # noqa: F841 (DuckDB's replacement scan)
        return len(duckdb.sql(f"select id, price from d where id between {lo} and {hi}").fetchall())

    fn = {"eager": eager, "polars": lazy_polars, "duckdb": lazy_duckdb}[variant]
    if not reset_hwm():
        raise SystemExit("cannot reset the peak RSS (/proc/self/clear_refs)")
    base = status_kb("VmRSS")
    times, rows = [], None
    for run in range(RUNS):
        start = time.perf_counter()
        rows = fn()
        times.append(time.perf_counter() - start)
        if run == 0:
            peak = status_kb("VmHWM")
    return {"seconds": statistics.median(times), "rows": rows, "peak_growth_mb": max(0, peak - base) / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--one", nargs=4, metavar=("VARIANT", "PATH", "LO", "HI"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        variant, path, lo, hi = args.one
        print(json.dumps(run_variant(variant, path, int(lo), int(hi))))
        return

    import worker

    setup, final = worker.read_tables(args.scale, args.workdir, "tidelake-lazy-")
    top = int(final["id"][-1].as_py())
    lo = top // 2
    hi = lo + max(1, top // 100)
    print(f"{final.num_rows:,} rows; load average {os.getloadavg()[0]:.2f} at start", flush=True)
    print(f"{'variant':<8} {'time':>9} {'vs eager':>9} {'peak RSS growth':>16} {'rows':>8}")
    results = {}
    for variant in VARIANTS:
        out = subprocess.run([sys.executable, __file__, "--one", variant, setup["tidelake_path"], str(lo), str(hi)],
                             check=True, capture_output=True, text=True).stdout
        results[variant] = r = json.loads(out.strip().splitlines()[-1])
        if r["rows"] != results["eager"]["rows"]:
            raise SystemExit(f"{variant} returned {r['rows']} rows, eager {results['eager']['rows']}")
        print(f"{variant:<8} {r['seconds'] * 1000:>7.0f}ms {r['seconds'] / results['eager']['seconds']:>8.2f}x "
              f"{r['peak_growth_mb']:>13.0f} MB {r['rows']:>8,}", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
