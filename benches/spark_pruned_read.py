"""A selective query on a partitioned table through Spark, pruned vs full scan (not run in CI).

``python benches/spark_pruned_read.py [--rows 1500000] [--days 30] [--repeat 3]`` on
``local[2]``, UI off. One primary-key table (``id, day, v, s``; partitioned by ``day``, 2
buckets, written once, so every split is a plain Parquet file) and the same rows as
Hive-partitioned Parquet written by Spark. Each case runs ``where day = <one day>`` to a
``count()`` and a ``noop`` write of the rows (median of ``--repeat`` after one warm-up):

* ``tidelake.spark.read(spark, path, filter="day = ...")``: pruned by tidelake's planner
  (:mod:`tidelake.spark.pruning`);
* ``tidelake.spark.sql`` with the same ``WHERE``: pruned the same way;
* ``tidelake.spark.read(spark, path).where(...)``: every file listed, Spark filters rows;
* ``spark.read.format("tidelake").load(path).where(...)``: the data source, no push-down on
  PySpark <= 4.3 (every split read through the Python worker);
* ``spark.read.parquet(hive_dir).where(...)``: Spark's partition pruning (the floor).

Prints a Markdown table; see benches/README.md (Spark section).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_500_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql import SparkSession

    import tidelake
    import tidelake.spark

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.driver.memory", "4g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    tidelake.spark.register(spark)
    root = tempfile.mkdtemp(prefix="pruned-read-")
    ids = pa.array(range(args.rows), pa.int64())
    days = pc.cast(pc.divide(pc.multiply(ids, args.days), args.rows), pa.int32())
    day_text = pc.binary_join_element_wise("2026-11-", pc.utf8_lpad(pc.cast(pc.add(days, 1), pa.string()), 2, "0"), "")
    rows = pa.table({"id": ids, "day": day_text, "v": pc.multiply(pc.cast(ids, pa.float64()), 0.5),
                     "s": pc.binary_join_element_wise("s", pc.cast(ids, pa.string()), "")})
    table = tidelake.create_table(f"{root}/t", rows.schema, primary_keys=["id", "day"], partition_keys=["day"],
                                  bucket=2)
    table.write(rows)
    hive = f"{root}/hive"
    spark.createDataFrame(rows).write.partitionBy("day").parquet(hive)
    wanted = f"2026-11-{args.days // 2:02d}"
    condition = f"day = '{wanted}'"
    expected = pc.sum(pc.equal(rows["day"], wanted)).as_py()
    cases = {
        "tidelake.spark.read(filter=)": lambda: tidelake.spark.read(spark, table.path, filter=condition),
        "tidelake.spark.sql WHERE": lambda: tidelake.spark.sql(
            spark, f"SELECT * FROM tidelake.`{table.path}` WHERE {condition}"),
        "tidelake.spark.read + where (full)": lambda: tidelake.spark.read(spark, table.path).where(condition),
        "data source + where (full, no push-down)": lambda: spark.read.format("tidelake").load(table.path)
        .where(condition),
        "spark.read.parquet(hive) + where (floor)": lambda: spark.read.parquet(hive).where(condition),
    }
    results: dict[str, tuple[float, float]] = {}
    for name, frame in cases.items():
        counts, noops = [], []
        for i in range(args.repeat + 1):
            start = time.perf_counter()
            n = frame().count()
            middle = time.perf_counter()
            frame().write.format("noop").mode("overwrite").save()
            end = time.perf_counter()
            assert n == expected, (name, n, expected)
            if i:
                counts.append(middle - start)
                noops.append(end - middle)
        results[name] = (statistics.median(counts), statistics.median(noops))
    floor = results["spark.read.parquet(hive) + where (floor)"]
    print(f"\n{args.rows:,} rows, {args.days} partitions, {expected:,} rows selected; load {os.getloadavg()[0]:.1f}\n")
    print("| case | count() s | noop s | noop vs floor |")
    print("|---|---|---|---|")
    for name, (count, noop) in results.items():
        print(f"| {name} | {count:.2f} | {noop:.2f} | {floor[1] / noop:.2f}x |")
    spark.stop()


if __name__ == "__main__":
    main()
