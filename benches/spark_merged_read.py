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
included), ``spark.read.format("tidelake")``, ``tidelake.spark.read``, and a prototype of the
native route (:func:`native_frame`, checked equal to the engine's rows first). Each case's wall time is
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


def split_reader(target: pa.Schema):
    """``mapInArrow`` body of :func:`native_frame`: the rows of pickled tidelake splits, as
    ``target`` (the Arrow schema of the DataFrame)."""

    def read(batches):
        import pickle

        for batch in batches:
            for payload in batch.column(0).to_pylist():
                for rows in pickle.loads(payload).read(65_536):
                    yield pa.RecordBatch.from_arrays([rows.column(f.name).cast(f.type) for f in target],
                                                     schema=target)

    return read


def native_frame(spark, path: str):
    """A prototype of the native route (the issue's design, not yet in ``tidelake.spark.read``):
    Spark's Parquet reader for the files :meth:`tidelake.scan.Scan.native_read` names, deleted
    positions removed by a broadcast anti-join on one 64-bit key (``xxhash64(file name)`` in the
    high 32 bits, ``_metadata.row_index`` in the low), base rows anti-joined with the delta's
    keys, the engine's splits through ``mapInArrow``; one DataFrame by ``unionByName``."""
    import pickle

    from pyspark.sql import functions as F

    import tidelake

    native = tidelake.open_table(path).scan().native_read()

    def read(files, metadata=False):
        retracts = any(f.drop_retracts for f in files)
        df = spark.read.schema(VALUE_SCHEMA + (", _VALUE_KIND tinyint" if retracts else "")).parquet(
            *[f"file:{path}/{f.path}" for f in files])
        if metadata:
            df = df.select("*", F.col("_metadata.file_name").alias("_file"),
                           F.col("_metadata.row_index").alias("_pos"))
        if retracts:
            df = df.where("_VALUE_KIND IN (0, 2)").drop("_VALUE_KIND")
        return df

    def key(file_col, pos_col):
        return F.shiftleft(F.xxhash64(F.col(file_col)).bitwiseAND(0x7FFFFFFF), 32).bitwiseOR(F.col(pos_col))

    parts = []
    plain = [f for f in native.files if not f.has_deletion_vector]
    with_dv = [f for f in native.files if f.has_deletion_vector]
    if plain:
        parts.append(read(plain))
    if with_dv:
        tags = spark.createDataFrame([(f.file_name,) for f in with_dv], "f string")
        distinct = tags.select(F.xxhash64("f").bitwiseAND(0x7FFFFFFF)).distinct().count()
        assert distinct == len(with_dv), "file tags collide: such files need a scan of their own"
        deleted = spark.createDataFrame(native.deleted_positions(with_dv))
        deleted = F.broadcast(deleted.select(key("file_name", "position").alias("_key")))
        rows = read(with_dv, metadata=True)
        parts.append(rows.join(deleted, key("_file", "_pos") == deleted["_key"], "left_anti").drop("_file", "_pos"))
    if native.base:
        keys = spark.read.schema("id bigint").parquet(*[f"file:{path}/{f.path}" for f in native.delta])
        parts.append(read(native.base).join(F.broadcast(keys), "id", "left_anti"))
    if native.engine:
        splits = spark.createDataFrame([(pickle.dumps(s),) for s in native.engine], "s binary")
        from pyspark.sql.pandas.types import to_arrow_schema

        target = to_arrow_schema(spark.createDataFrame([], VALUE_SCHEMA).schema, timezone="UTC")
        parts.append(splits.repartition(min(len(native.engine), 8)).mapInArrow(split_reader(target), VALUE_SCHEMA))
    frame = parts[0]
    for part in parts[1:]:
        frame = frame.unionByName(part)
    return frame


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
        got = native_frame(spark, path).toArrow().sort_by("id")
        assert got.select(["id", "v"]).equals(table.to_arrow(columns=["id", "v"]).sort_by("id").cast(got.select(["id", "v"]).schema)), kind
        files = [f"{path}/{f['file_path']}" if not f["file_path"].startswith("/") else f["file_path"]
                 for f in table.system("files").to_pylist()]
        shape = {"files": len(files), "stored rows": sum(f["record_count"] for f in table.system("files").to_pylist()),
                 "rows": table.to_arrow(columns=["id"]).num_rows}
        cases = [
            ("spark.read.parquet of the same files (floor)",
             lambda files=files: spark.read.schema(VALUE_SCHEMA).parquet(*files)),
            ("spark.read.format('tidelake')", lambda path=path: spark.read.format("tidelake").load(path)),
            ("tidelake.spark.read", lambda path=path: tidelake.spark.read(spark, path)),
            ("native route (prototype)", lambda path=path: native_frame(spark, path)),
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
        print(f"| {kind} ({shape['files']} files, {shape['stored rows']:,} stored, {shape['rows']:,} live) | {name} | "
              f"{median:.2f} ({best:.2f}) | {fw / median:.2f}x | {total:.2f} ({cpu['jvm']:.2f} + "
              f"{cpu['python workers']:.2f} + {cpu['driver']:.2f}) | {fc / total:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
