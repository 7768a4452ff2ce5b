"""Full-compaction benchmark: tidelake's `Table.compact(full=True)` against the floor.

    .venv/bin/python benches/compaction.py                # 10M stored rows, 4 buckets, 11 runs each
    .venv/bin/python benches/compaction.py --scale 0.05   # smoke run

Workload (`workload.py`, fixed seed): a primary-key table of 4 buckets written by tidelake with
`write-only=true`: a bulk load of 5,000,000 keys, then 10 upserts of 500,000 rows (half existing
keys), i.e. 10,000,000 stored rows in 11 level-0 sorted runs per bucket, 7,500,000 live rows.

Each phase runs in its own process (peak RSS = its `VmHWM`) on the same bytes:
* `floor`: pyarrow reads every data file of the table (`pq.read_table`) and writes the rows once
  (`pq.write_table`, zstd level 1, like the table's files): no merge, no metadata.
* `compact`: `tidelake.open_table(p).compact(full=True)` on a fresh copy of the table.
* `mor before` / `mor after`: merge-on-read of the latest snapshot before and after the
  compaction (`to_reader(batch_size=65536)`, batches consumed and dropped).
* `spark compact` (with `--spark-workers N[,M...]`): `tidelake.spark.compact(spark, p, full=True)`
  on another fresh copy per worker count, its tasks on a local Spark standalone cluster of N one-core workers
  (`tests/_spark_cluster.py`; the time excludes starting the cluster and the session); the
  result is checked to hold the same rows as `compact`'s.
* `java compact, cold` / `warm` (with `--java`): Java Paimon 1.3.1's full compaction of a copy
  (`benches/java_peer.py`'s compact step: `BatchTableWrite.compact(partition, bucket, true)` per
  bucket, one commit; JVM `java_peer.JVM_FLAGS`), in a fresh JVM, and the median of 2 runs after
  a first one in one JVM; its rows are checked equal to the merge-on-read's count.
MB/s in = stored bytes read / s; MB/s out = bytes written / s. Results are printed as Markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import workload as wl  # noqa: E402


def data_files(table: pathlib.Path) -> list[pathlib.Path]:
    return sorted(p for p in table.glob("bucket-*/data-*") if p.is_file())


def live_bytes(table: pathlib.Path) -> int:
    import tidelake

    sizes = tidelake.open_table(table).system("files").column("file_size_in_bytes").to_pylist()
    return sum(sizes)


def child(phase: str, path: str, out: str) -> dict:
    """One timed phase; returns its numbers (run in a fresh process)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import tidelake

    table = pathlib.Path(path)
    if phase == "floor":
        files = data_files(table)
        began = time.perf_counter()
        rows = pa.concat_tables([pq.read_table(f) for f in files])
        pq.write_table(rows, out, compression="zstd", compression_level=1)
        took = time.perf_counter() - began
        return {"s": took, "in": sum(f.stat().st_size for f in files), "out": os.path.getsize(out),
                "rows": rows.num_rows}
    if phase == "compact":
        before = live_bytes(table)
        t = tidelake.open_table(table)
        began = time.perf_counter()
        sid = t.compact(full=True)
        took = time.perf_counter() - began
        assert sid is not None
        return {"s": took, "in": before, "out": live_bytes(table), "rows": None}
    # merge-on-read
    t = tidelake.open_table(table)
    began = time.perf_counter()
    rows = sum(b.num_rows for b in t.to_reader(batch_size=65536))
    return {"s": time.perf_counter() - began, "in": live_bytes(table), "out": 0, "rows": rows}


def run(phase: str, path: pathlib.Path, out: pathlib.Path) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", phase, str(path), str(out)],
                          stdout=subprocess.PIPE, text=True, check=True)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["peak_rss_mb"] = result.pop("peak_rss_kb") / 1024
    return result


def spark_compact(table: pathlib.Path, work: pathlib.Path, workers: int) -> dict:
    """`tidelake.spark.compact` of `table` on a standalone cluster of `workers` (see the docs)."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
    from _spark_cluster import free_port, run_driver, standalone_cluster

    before = live_bytes(table)
    with standalone_cluster(work / f"cluster-{workers}", workers=workers) as master:
        answer = run_driver(master, [str(table), str(free_port()), str(workers)])
    tasks = answer["tasks_per_executor"]
    print(f"spark compact: tasks per executor {tasks}")
    return {"s": answer["seconds"], "in": before, "out": live_bytes(table), "rows": None, "peak_rss_mb": None}


def java_compact(source: pathlib.Path, work: pathlib.Path, *, warm: bool) -> dict:
    """Java Paimon's full compaction of a copy of `source`, cold (one run in a fresh JVM) or warm."""
    import java_peer

    res = java_peer.run_process(java_peer.command(java_peer.SYSTEM, "compact", [f"table={source}"], 3 if warm else 1,
                                                  work, work / "java", java_peer.java_classpath()),
                                work / "java.log", timeout=3600)["compact"]
    s = java_peer.summarize(res, warm=warm)
    return {"s": s["wall_s"], "in": live_bytes(source), "out": 0, "rows": s["rows"], "peak_rss_mb": s["peak_rss_mb"]}


def _sorted_rows(table: pathlib.Path):
    import tidelake

    return tidelake.open_table(table).to_arrow().sort_by("id")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--workdir", default=os.environ.get("TIDELAKE_BENCH_DIR", "/tmp/tidelake-bench") + "/compaction")
    ap.add_argument("--spark-workers", default="", help="also compact with Spark on N workers (N,M,...: each)")
    ap.add_argument("--java", action="store_true", help="also compact with Java Paimon (cold and warm JVM)")
    ap.add_argument("--child", nargs=3, metavar=("PHASE", "PATH", "OUT"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        result = child(*a.child)
        # VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec (the parent holds the workload)
        status = pathlib.Path("/proc/self/status").read_text()
        result["peak_rss_kb"] = int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("VmHWM:")))
        print(json.dumps(result))
        return

    import tidelake

    w = wl.Workload(rows=5_000_000, upsert_rows=500_000).scaled(a.scale)
    work = pathlib.Path(a.workdir)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    bulk, upserts = wl.generate(w)
    source = work / "source"
    wl.write_runs(source, w, bulk, upserts)
    stored = bulk.num_rows + sum(u.num_rows for u in upserts)
    del bulk, upserts
    runs = len(data_files(source)) // w.buckets
    table = work / "table"
    shutil.copytree(source, table)
    spark_workers = [int(n) for n in a.spark_workers.split(",") if n]
    for n in spark_workers:
        shutil.copytree(source, work / f"spark-table-{n}")
    results = {
        "floor": run("floor", source, work / "floor.parquet"),
        "mor before": run("mor", table, work / "unused"),
        "compact": run("compact", table, work / "unused"),
        "mor after": run("mor", table, work / "unused"),
    }
    for n in spark_workers:
        results[f"spark compact, {n} workers"] = spark_compact(work / f"spark-table-{n}", work, n)
        same = _sorted_rows(work / f"spark-table-{n}").equals(_sorted_rows(table))
        print(f"spark compact on {n} workers: same rows as compact: {same}")
        assert same
    if a.java:
        import java_peer

        if java_peer.missing():
            print(f"java_paimon skipped: {java_peer.missing()}")
        else:
            for mode in ("cold", "warm"):
                results[f"java compact, {mode}"] = r = java_compact(source, work, warm=mode == "warm")
                assert r["rows"] == results["mor before"]["rows"], (r["rows"], results["mor before"]["rows"])
    floor_s = results["floor"]["s"]
    print(f"\n{stored:,} stored rows, {w.buckets} buckets, {runs} sorted runs per bucket, "
          f"{results['mor before']['rows']:,} live rows; tidelake {tidelake.__version__}\n")
    print("| phase | s | MB in | MB out | MB/s in | MB/s out | vs floor (time) | peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|")
    mb = 1024 * 1024
    for name, r in results.items():
        ratio = f"{floor_s / r['s']:.2f}x" if name in ("floor", "compact") or name.startswith(("spark", "java")) else "-"
        out = f"{r['out'] / mb:.0f}" if r["out"] else "-"
        rate_out = f"{r['out'] / mb / r['s']:.0f}" if r["out"] else "-"
        rss = f"{r['peak_rss_mb']:.0f}" if r.get("peak_rss_mb") is not None else "-"
        print(f"| {name} | {r['s']:.2f} | {r['in'] / mb:.0f} | {out} | {r['in'] / mb / r['s']:.0f} | "
              f"{rate_out} | {ratio} | {rss} |")
    print(f"\nmerge-on-read: {results['mor before']['s']:.2f} s before, {results['mor after']['s']:.2f} s after "
          f"({results['mor before']['s'] / results['mor after']['s']:.2f}x faster)")


if __name__ == "__main__":
    main()
