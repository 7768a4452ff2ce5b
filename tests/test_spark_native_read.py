"""``tidelake.spark.read`` of tables that need merging: which part of each table Spark's own
Parquet reader reads (:func:`tidelake.spark.plain.classified_read`: key-range sections,
deletion-vector files and base less the delta's keys with ``spark_joins``) and which the engine
reads, and that the DataFrame holds exactly the rows of ``Table.to_arrow()`` with and without
``spark_joins``; engine splits packed into tasks by size (``source.split.target-size`` /
``source.split.open-file-cost``)."""

from __future__ import annotations

import os
import pyarrow as pa
import pytest

import tidelake
import tidelake.spark
from conftest import assert_same_rows
from tidelake.scan import NativeFile
from tidelake.spark import io as spark_io
from tidelake.spark import native as spark_native
from tidelake.spark import plain as spark_plain
from tidelake.spark.mapped import read_splits
from tidelake.spark.source import BatchReader

pyspark = pytest.importorskip("pyspark")

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("n", pa.int32()), ("v", pa.string())])


def rows(keys, tag: str = "") -> pa.Table:
    keys = list(keys)
    return pa.table({"k": pa.array(keys, pa.int64()), "n": pa.array([None if k % 9 == 0 else k % 1000 for k in keys],
                                                                     pa.int32()),
                     "v": [None if k % 13 == 0 else f"{tag}{k}" for k in keys]}, schema=SCHEMA)


def pk_table(path, **options):
    return tidelake.create_table(path, SCHEMA, primary_keys=["k"], bucket=2,
                                 options={"target-file-size": "16 kb", **options})


def classified(t, columns=None, joins=True):
    return spark_plain.classified_read(t, columns, {}, None, joins=joins)


def assert_reads_like_the_table(spark, t, columns=None, where=None):
    """Both reads (deleted rows removed by Spark's joins, or by the engine) hold the table's
    rows; returns the one with joins."""
    expected = t.to_arrow(columns=columns)
    if where is not None:
        import duckdb

        expected = duckdb.sql(f"select * from expected where {where}").to_arrow_table()
    for joins in (False, True):
        df = tidelake.spark.read(spark, t.path, columns=columns, filter=where, spark_joins=joins)
        got = df.toArrow()
        assert_same_rows(got.cast(expected.schema), expected)
    return df


def data_files(t) -> set[str]:
    return {f"file://{f['file_path']}" for f in t.system("files").to_pylist()}


def test_compacted_buckets_of_several_files_are_read_natively(spark, tmp_path):
    t = pk_table(tmp_path / "t")
    t.write(rows(range(20_000)))
    t.write(rows(range(0, 20_000, 3), tag="w"))
    t.compact(full=True)
    found = classified(t)
    assert len(found.files) > 2, "the test needs buckets of several max-level files"
    assert not found.engine and not found.base
    df = assert_reads_like_the_table(spark, t)
    assert set(df.inputFiles()) == data_files(t)


def test_non_overlapping_level0_files_are_read_natively(spark, tmp_path):
    t = pk_table(tmp_path / "t", **{"write-only": "true"})
    for part in range(4):
        t.write(rows(range(part * 1000, (part + 1) * 1000)))
    found = classified(t)
    assert len(found.files) == 8 and not found.engine
    assert_reads_like_the_table(spark, t)
    assert_reads_like_the_table(spark, t, columns=["v"], where="v like '1%'")


def test_overlapping_sections_go_to_the_engine_the_others_are_native(spark, tmp_path):
    t = pk_table(tmp_path / "t", **{"write-only": "true"})
    t.write(rows(range(0, 1000)))
    t.write(rows(range(500, 700), tag="w"))  # overlaps the middle of each bucket's first file
    t.write(rows(range(5000, 6000)))  # a section of its own
    found = classified(t)
    assert found.engine and len(found.files) == 2
    assert_reads_like_the_table(spark, t)


@pytest.mark.parametrize("bucket", [1, 4])
def test_deletion_vector_tables_drop_deleted_positions_by_a_join(spark, tmp_path, bucket):
    """One file per bucket: the key is the row index alone; several: the file-name hash too."""
    t = tidelake.create_table(tmp_path / "t", SCHEMA, primary_keys=["k"], bucket=bucket,
                              options={"deletion-vectors.enabled": "true"})
    t.write(rows(range(3000)))
    t.compact(full=True)
    t.write(rows(range(0, 3000, 100), tag="w"))
    t.delete_keys(rows(range(1, 3000, 250)))
    t.compact()
    found = classified(t)
    assert any(f.has_deletion_vector for f in found.files) and not found.engine
    by_engine = classified(t, joins=False)
    assert by_engine.engine and not any(f.has_deletion_vector for f in by_engine.files)
    df = assert_reads_like_the_table(spark, t)
    assert df.count() == 3000 - 12
    assert_reads_like_the_table(spark, t, columns=["v", "n"], where="n > 500")


def test_file_tags_group_files_so_that_no_two_of_a_scan_share_one():
    def f(name, row_count=10):
        return NativeFile(name, name, 1, row_count, False, {"cardinality": 1})

    a, b, c, d, huge = f("a"), f("b"), f("c"), f("d"), f("e", 1 << 32)
    assert spark_native.tagged_groups([a, b, c, d, huge], [1, 2, 1, 1, 3]) == [[a, b], [c], [d], [huge]]
    assert spark_native.tagged_groups([], []) == []


def test_base_less_the_delta_keys_plus_the_merged_delta(spark, tmp_path):
    t = pk_table(tmp_path / "t", **{"write-only": "true"})
    t.write(rows(range(10_000)))
    t.compact(full=True)
    t.write(rows(range(0, 10_000, 10), tag="w"))
    t.delete_keys(rows(range(5, 10_000, 1000)))
    t.write(rows(range(3, 10_000, 997), tag="x"))
    found = classified(t)
    assert found.base and found.delta and found.engine
    assert not classified(t, joins=False).base
    assert sum(s.row_count for s in found.engine) == sum(f.row_count for f in found.delta)  # the delta's merge only
    assert_reads_like_the_table(spark, t)
    assert_reads_like_the_table(spark, t, columns=["v"])  # the key is read for the join only
    assert_reads_like_the_table(spark, t, where="k < 100 or v like 'x%'")


@pytest.mark.parametrize("options", [{"sequence.field": "n"}, {"merge-engine": "partial-update"},
                                     {"merge-engine": "aggregation"}],
                         ids=["sequence-field", "partial-update", "aggregation"])
def test_merges_that_are_not_newest_record_wins_go_to_the_engine(spark, tmp_path, options):
    t = pk_table(tmp_path / "t", **{"write-only": "true"}, **options)
    t.write(rows(range(2000)))
    t.compact(full=True)
    t.write(rows(range(0, 2000, 7), tag="w"))
    found = classified(t)
    assert not found.base and found.engine
    assert_reads_like_the_table(spark, t)


def test_many_small_splits_are_packed_into_tasks_by_size(spark, tmp_path):
    schema = pa.schema([("p", pa.string()), ("k", pa.int64())])
    t = tidelake.create_table(tmp_path / "t", schema, partition_keys=["p"],
                              options={"source.split.open-file-cost": "1 mb"})
    t.write(pa.table({"p": [f"p{i:02}" for i in range(40)], "k": list(range(40))}, schema=schema))
    splits = t.scan().splits()
    assert len(splits) == 40
    spark_schema = spark_io.spark_schema(t)
    # 40 files of 1 MB each (the open-file cost): one 128 MB task, unless that leaves cores idle
    assert [len(task) for task in spark_plain.engine_tasks(t, splits, parallelism=1)] == [40]
    assert [len(task) for task in spark_plain.engine_tasks(t, splits, parallelism=8)] == [4] * 10  # 128 -> 4 MB
    pinned = BatchReader({"path": t.path, "snapshot-id": "1"}, spark_schema).partitions()
    assert sum(len(p.splits) for p in pinned) == 40 and len(pinned) >= min(40, os.cpu_count() or 1)
    t2 = t.set_option("source.split.target-size", "8 mb")
    pinned = BatchReader({"path": t2.path, "snapshot-id": "1"}, spark_schema).partitions()
    assert [len(p.splits) for p in pinned] == [8] * 5
    tasks = spark_plain.engine_tasks(t2, splits, parallelism=2)
    frame = read_splits(spark, tasks, spark_schema)
    assert frame.rdd.getNumPartitions() == 5
    assert sorted(r.k for r in frame.collect()) == list(range(40))
    latest = BatchReader({"path": t2.path}, spark_schema).partitions()
    assert len(latest) == 5
    df = spark.read.format("tidelake").load(t2.path)
    assert sorted(r.k for r in df.collect()) == list(range(40))


def test_split_sizes_must_be_memory_sizes(tmp_path):
    t = tidelake.create_table(tmp_path / "t", SCHEMA, primary_keys=["k"], bucket=1,
                              options={"source.split.target-size": "64 mb", "source.split.open-file-cost": "512kb"})
    assert spark_plain.split_packing(t) == (64 << 20, 512 << 10)
    with pytest.raises(tidelake.InvalidArgumentError, match="source.split.target-size"):
        t.set_option("source.split.target-size", "lots")
