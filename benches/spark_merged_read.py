"""Spark reads of primary-key tables that need a merge, against Spark's own Parquet read of the
very same files in the same run (not run in CI).

``python benches/spark_merged_read.py [--rows 2000000] [--repeat 3] [--tables compacted,dv1,...]``
on ``local[2]``, driver 4g, UI off, session time zone UTC, ``maxRecordsPerBatch`` 10000. Each
table has the 6-column workload of ``spark_bench.py`` (id BIGINT primary key, k, v, s, ts,
flag), 4 buckets, and is shaped so that reading it needs what its name says:

* ``compacted``: one full compaction with a 4 MB target file size: every bucket is one sorted
  run of several max-level files (each a key-range section of its own);
* ``time_ordered``: five writes of consecutive key ranges, never compacted: level-0 files
  whose key ranges do not overlap;
* ``dv1`` / ``dv10``: a deletion-vector table, compacted, then 1 % / 10 % of its keys upserted
  and compacted again (lookup compaction marks the old rows deleted);
* ``delta10``: compacted, then 10 % of its keys upserted without compaction (a level-0 delta
  over the max-level base);
* ``overlapping``: five writes of random keys, never compacted (a genuine merge everywhere).

Cases per table, each to the ``noop`` sink: ``spark.read.parquet`` of the table's live data
files with the table's value schema (the floor: the bytes every other case reads, stale rows
included), ``spark.read.format("tidelake")`` (the engine merges every split),
``tidelake.spark.read`` (the product path: Spark's Parquet reader for key-range sections, the
engine for the rest) and ``tidelake.spark.read(spark_joins=True)`` (Spark's reader also for
deletion-vector files and base less the delta's keys, deleted rows removed by broadcast
anti-joins, see :mod:`tidelake.spark.native`); both checked equal to the engine's rows first,
and the division with joins printed: native files, base/delta files, engine splits and tasks.
Each case's wall time is
the median of ``--repeat`` after a warm-up, with the CPU seconds by process (JVM, Python
workers, driver) as ``spark_bench.py`` measures them; the Markdown table gives each case's
ratio to its table's floor (wall and CPU). ``uptime`` is printed before and after: record it
with the numbers (benches/README.md, Spark section; earlier runs in benches/LOG.md).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spark_bench import SCHEMA, timed  # noqa: E402

TABLES = ["compacted", "time_ordered", "dv1", "dv10", "delta10", "overlapping"]
TARGET_FILE_SIZE = "4 mb"
"""Small enough that a compacted bucket of 2M / 4 rows is several max-level files."""
VALUE_SCHEMA = "id bigint, k int, v double, s string, ts timestamp, flag boolean"


def rows(ids: np.ndarray) -> pa.Table:
    """The workload's rows of keys ``ids`` (as ``spark_bench.py`` generates them)."""
    return pa.table({
        "id": ids,
        "k": (ids % 1000).astype(np.int32),
        "v": ids * 0.5,
        "s": pa.array(np.char.add("s", (ids % 10_000).astype(str))),
        "ts": pa.array((ids + 1_700_000_000) * 1_000_000, pa.timestamp("us", tz="UTC")),
        "flag": ids % 7 == 0,
    }, schema=SCHEMA)


def write_in_chunks(t, ids, chunk: int = 500_000) -> None:
    ids = np.asarray(ids, dtype=np.int64)
    for start in range(0, len(ids), chunk):
        t.write(rows(ids[start:start + chunk]))


def build(kind: str, path: str, n: int) -> None:
    """Table ``kind`` (see the module docs) of ``n`` keys at ``path``."""
    import tidelake

    options = {"target-file-size": TARGET_FILE_SIZE, "write-only": "true"}
    if kind.startswith("dv"):
        options = {"deletion-vectors.enabled": "true", "target-file-size": TARGET_FILE_SIZE}
    t = tidelake.create_table(path, SCHEMA, primary_keys=["id"], bucket=4, options=options)
    rng = random.Random(42)
    if kind in ("time_ordered", "overlapping"):
        for part in range(5):
            ids = range(part * n // 5, (part + 1) * n // 5) if kind == "time_ordered" else rng.sample(range(n), n // 5)
            write_in_chunks(t, list(ids), chunk=n)
        return
    write_in_chunks(t, list(range(n)))
    t.compact(full=True)
    share = {"dv1": 0.01, "dv10": 0.10, "delta10": 0.10}.get(kind)
    if share:
        write_in_chunks(t, sorted(rng.sample(range(n), int(n * share))), chunk=n)
        if kind.startswith("dv"):
            t.compact()


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tables", default=",".join(TABLES))
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "tidelake-merged-read-bench"))
    args = ap.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import tidelake
    import tidelake.spark
    from tidelake.spark.plain import classified_read, engine_tasks

    print("before:", uptime(), flush=True)
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    kinds = args.tables.split(",")
    for kind in kinds:
        build(kind, os.path.join(args.workdir, kind), args.rows)
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "4g").config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.execution.arrow.maxRecordsPerBatch", "10000").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    tidelake.spark.register(spark)

    results = []
    for kind in kinds:
        path = os.path.join(args.workdir, kind)
        table = tidelake.open_table(path)
        want = table.to_arrow(columns=["id", "v"]).sort_by("id")
        for joins in (False, True):
            got = tidelake.spark.read(spark, path, spark_joins=joins).toArrow().sort_by("id")
            assert got.select(["id", "v"]).equals(want.cast(got.select(["id", "v"]).schema)), kind
        files = [f"{path}/{f['file_path']}" if not f["file_path"].startswith("/") else f["file_path"]
                 for f in table.system("files").to_pylist()]
        found = classified_read(table, None, {}, None, joins=True)
        shape = {"files": len(files), "stored rows": sum(f["record_count"] for f in table.system("files").to_pylist()),
                 "rows": table.to_arrow(columns=["id"]).num_rows, "native": len(found.files),
                 "with dv": sum(f.has_deletion_vector for f in found.files), "base": len(found.base),
                 "delta": len(found.delta), "engine splits": len(found.engine),
                 "engine tasks": len(engine_tasks(table, found.engine))}
        cases = [
            ("spark.read.parquet of the same files (floor)",
             lambda files=files: spark.read.schema(VALUE_SCHEMA).parquet(*files)),
            ("spark.read.format('tidelake')", lambda path=path: spark.read.format("tidelake").load(path)),
            ("tidelake.spark.read", lambda path=path: tidelake.spark.read(spark, path)),
            ("tidelake.spark.read(spark_joins=True)",
             lambda path=path: tidelake.spark.read(spark, path, spark_joins=True)),
        ]
        for name, frame in cases:
            median, best, _, cpu = timed(lambda frame=frame: frame().write.format("noop").mode("overwrite").save(),
                                         args.repeat)
            results.append((kind, shape, name, median, best, cpu))
            print(f"{kind} {shape} | {name}: {median:.2f} s (best {best:.2f}); cpu {cpu}", flush=True)
    spark.stop()
    print("after:", uptime())

    print(f"\n{args.rows:,} keys x 6 columns, 4 buckets, local[2], median of {args.repeat} (best)\n")
    print("| table | case | wall s median (best) | vs floor, wall | CPU s (JVM + workers + driver) | vs floor, CPU |")
    print("|---|---|---|---|---|---|")
    floors = {}
    for kind, shape, name, median, best, cpu in results:
        total = sum(cpu.values())
        if "floor" in name:
            floors[kind] = (median, total)
        fw, fc = floors[kind]
        print(f"| {kind} ({shape['files']} files, {shape['stored rows']:,} stored, {shape['rows']:,} live; "
              f"native {shape['native']} ({shape['with dv']} with DV), base/delta {shape['base']}/{shape['delta']}, "
              f"engine {shape['engine splits']} splits in {shape['engine tasks']} tasks) | {name} | "
              f"{median:.2f} ({best:.2f}) | {fw / median:.2f}x | {total:.2f} ({cpu['jvm']:.2f} + "
              f"{cpu['python workers']:.2f} + {cpu['driver']:.2f}) | {fc / total:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
