"""Sort compaction and data skipping: files pruned and read time for a filter on the *second*
of two clustering columns, before and after `Table.compact(order_by=["a", "b"], strategy=...)`.

    .venv/bin/python benches/sort_compaction.py            # 4,000,000 rows, ~1-2 min
    .venv/bin/python benches/sort_compaction.py --write-buffer-size 64mb   # sorts that spill
    .venv/bin/python benches/sort_compaction.py --quick    # 200,000 rows, seconds

Workload (fixed seed): an unpartitioned bucket-unaware append table `(a BIGINT, b BIGINT,
payload STRING)`, `a` and `b` uniform in [0, 1,000,000), written by tidelake in 20 commits
(`target-file-size` 1 MB, `--file-size`; 256 kB with --quick), so that every file spans every
value of `a` and `b` (`--write-buffer-size` bounds what a sort holds in memory before it
spills). For each strategy (`order`, `zorder`, `hilbert`) a copy of that table is
sort-compacted by (a, b), timed, and then read with the filter `b >= 500000 AND b < 510000`
(1% of the rows): files planned (the scan's data files after statistics pruning) of the files
in the table, the read's wall time (median of 3, rows checked equal to the unsorted table's)
and rows read. The `b` filter is what `order` cannot serve (it sorts by `a` first) and the
curves can. Compaction: wall and CPU seconds, and the growth of the process's peak RSS over
its resident size before (the first strategy's includes the allocator's warm-up). Results:
Markdown on stdout with the 1-minute load average, `--out` JSON, `--png` a bar chart.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import memstat  # noqa: E402

FILTER = [("b", ">=", 500_000), ("b", "<", 510_000)]
STRATEGIES = ("order", "zorder", "hilbert")
COMMITS = 20


def build(path: pathlib.Path, rows: int, options: dict[str, str]) -> None:
    import numpy as np
    import pyarrow as pa

    import tidelake

    schema = pa.schema([("a", pa.int64()), ("b", pa.int64()), ("payload", pa.string())])
    t = tidelake.create_table(path, schema, options=options)
    rng = np.random.default_rng(33)
    per = rows // COMMITS
    for _ in range(COMMITS):
        a = rng.integers(0, 1_000_000, per)
        b = rng.integers(0, 1_000_000, per)
        payload = pa.array([f"row-{x:07d}" for x in a])
        t.write(pa.table({"a": a, "b": b, "payload": payload}, schema=schema))


def measure(path: pathlib.Path, expected: int | None) -> dict[str, Any]:
    import tidelake

    t = tidelake.open_table(path)
    files = len(t.scan().native_read().files)
    planned = len(t.scan(filter=FILTER).native_read().files)
    times, rows = [], 0
    for _ in range(3):
        began = time.perf_counter()
        rows = t.to_arrow(filter=FILTER).num_rows
        times.append(time.perf_counter() - began)
    assert expected is None or rows == expected, (rows, expected)
    return {"files": files, "planned": planned, "read_s": statistics.median(times), "rows": rows}


def run(workdir: pathlib.Path, rows: int, options: dict[str, str]) -> dict[str, Any]:
    import tidelake

    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    base = workdir / "base"
    began = time.perf_counter()
    build(base, rows, options)
    print(f"built {rows:,} rows in {time.perf_counter() - began:.1f} s", file=sys.stderr, flush=True)
    before = measure(base, None)
    results: dict[str, Any] = {"rows": rows, "options": options, "filter": "b >= 500000 AND b < 510000",
                               "before": before, "load_1m_start": os.getloadavg()[0], "strategies": {}}
    for strategy in STRATEGIES:
        copy = workdir / strategy
        shutil.copytree(base, copy)
        t = tidelake.open_table(copy)
        memstat.reset_hwm()
        rss = memstat.status_kb("VmRSS") / 1024
        began, cpu = time.perf_counter(), time.process_time()
        t.compact(order_by=["a", "b"], strategy=strategy)
        took, cpu = time.perf_counter() - began, time.process_time() - cpu
        after = measure(copy, before["rows"])
        results["strategies"][strategy] = {**after, "compact_s": took, "compact_cpu_s": cpu,
                                           "compact_rss_growth_mb": memstat.hwm_mb() - rss,
                                           "load_1m": os.getloadavg()[0]}
        print(f"{strategy}: {after}", file=sys.stderr, flush=True)
        shutil.rmtree(copy)
    results["load_1m_end"] = os.getloadavg()[0]
    return results


def report(r: dict[str, Any]) -> str:
    b = r["before"]
    opts = ", ".join(f"{k} {v}" for k, v in r["options"].items())
    lines = [f"{r['rows']:,} rows, {opts}, filter `{r['filter']}` ({b['rows']:,} rows); load average (1 min) "
             f"{r['load_1m_start']:.1f} -> {r['load_1m_end']:.1f} on {os.cpu_count()} cores",
             "",
             "| table | data files | files planned for the filter | pruned | read s (median of 3) | "
             "compact s [CPU s] | compact RSS growth MB |",
             "|---|---|---|---|---|---|---|",
             f"| unsorted | {b['files']} | {b['planned']} | {1 - b['planned'] / b['files']:.0%} | "
             f"{b['read_s']:.3f} | | |"]
    for name, s in r["strategies"].items():
        lines.append(f"| {name} (a, b) | {s['files']} | {s['planned']} | {1 - s['planned'] / s['files']:.0%} | "
                     f"{s['read_s']:.3f} | {s['compact_s']:.1f} [{s['compact_cpu_s']:.1f}] | "
                     f"{s['compact_rss_growth_mb']:.0f} |")
    return "\n".join(lines)


def plot(r: dict[str, Any], png: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["unsorted", *r["strategies"]]
    shares = [r["before"]["planned"] / r["before"]["files"]] + [
        s["planned"] / s["files"] for s in r["strategies"].values()]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar(names, [100 * s for s in shares], color=["#999999", "#4c72b0", "#55a868", "#c44e52"])
    ax.set_ylabel("% of data files planned")
    ax.set_title(f"filter on b, second clustering column ({r['rows']:,} rows)")
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=100)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--file-size", default="1mb", help="the table's target-file-size")
    ap.add_argument("--write-buffer-size", help="the table's write-buffer-size (what a sort holds in memory "
                                                "before it spills; default Paimon's 256 mb)")
    ap.add_argument("--quick", action="store_true", help="200,000 rows, 256 kB files")
    ap.add_argument("--workdir", default=os.environ.get("TIDELAKE_BENCH_DIR", "/tmp/tidelake-bench") + "/sort")
    ap.add_argument("--out", help="write the results as JSON here")
    ap.add_argument("--png", help="plot the share of files planned here")
    args = ap.parse_args()
    rows, file_size = (200_000, "256kb") if args.quick else (args.rows, args.file_size)
    options = {"target-file-size": file_size}
    if args.write_buffer_size:
        options["write-buffer-size"] = args.write_buffer_size
    results = run(pathlib.Path(args.workdir), rows, options)
    print(report(results))
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(results, indent=2))
    if args.png:
        plot(results, pathlib.Path(args.png))
    shutil.rmtree(args.workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
