"""``tidelake.spark.read``: splits that are plain Parquet files read by Spark's own Parquet
reader, the rest by the ``tidelake`` data source, one snapshot. Every test compares the rows
with ``spark.read.format("tidelake")`` of the same snapshot and checks which files Spark read
itself (``DataFrame.inputFiles()``: the data source part lists none)."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

import tidelake
import tidelake.spark
from _java import Scenario, java_write
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from conftest import assert_same_rows
from tidelake.spark import plain as spark_plain
from tidelake.spark.source import BatchReader

pyspark = pytest.importorskip("pyspark")

UTC = dt.timezone.utc
D = decimal.Decimal

PLAIN_TYPES = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()),
    ("f32", pa.float32()), ("f64", pa.float64()),
    ("dec5", pa.decimal128(5, 2)), ("dec18", pa.decimal128(18, 4)), ("dec38", pa.decimal128(38, 10)),
    ("d", pa.date32()),
    ("ts0", pa.timestamp("s")), ("ts3", pa.timestamp("ms")), ("ts6", pa.timestamp("us")),
    ("ltz0", pa.timestamp("s", tz="UTC")), ("ltz3", pa.timestamp("ms", tz="UTC")),
    ("ltz6", pa.timestamp("us", tz="UTC")),
    ("s", pa.string()), ("bin", pa.binary()),
    ("arr", pa.list_(pa.int32())),
    ("m", pa.map_(pa.string(), pa.int64())),
    ("st", pa.struct([("x", pa.int32()),
                      ("y", pa.list_(pa.struct([("k", pa.string()), ("t", pa.timestamp("us"))])))])),
])

ANCIENT = [dt.datetime(1, 1, 1), dt.datetime(1000, 6, 15, 12, 0, 1), dt.datetime(1582, 10, 4, 23, 59, 59),
           dt.datetime(1899, 12, 31, 23, 0), dt.datetime(1970, 1, 1), dt.datetime(2024, 3, 10, 2, 30, 15)]


def typed_rows(start: int, n: int) -> pa.Table:
    rows = []
    for i in range(start, start + n):
        if i % 5 == 0:  # every nullable column null
            rows.append({"id": i})
            continue
        t = ANCIENT[i % len(ANCIENT)] + dt.timedelta(seconds=i)
        rows.append({
            "id": i, "b": i % 2 == 0, "i8": (i % 256) - 128, "i16": -i, "i32": i * 1000,
            "f32": float("nan") if i % 11 == 0 else i / 3, "f64": -i / 7,
            "dec5": D(i % 1000) / 100 - 5, "dec18": D(i) / 10_000,
            "dec38": D("-1234567890123456789012345678.0123456789") + i,
            "d": t.date(), "ts0": t, "ts3": t + dt.timedelta(milliseconds=i % 1000),
            "ts6": t + dt.timedelta(microseconds=i), "ltz0": t.replace(tzinfo=UTC),
            "ltz3": (t + dt.timedelta(milliseconds=7)).replace(tzinfo=UTC),
            "ltz6": (t + dt.timedelta(microseconds=i)).replace(tzinfo=UTC),
            "s": "" if i % 3 == 0 else f"s{i}é", "bin": bytes([i % 256, 0]),
            "arr": [] if i % 4 == 0 else [i, None, -i],
            "m": {"a": i, "b": None} if i % 2 else {},
            "st": None if i % 7 == 0 else {"x": i, "y": [{"k": f"k{i}", "t": t}, None]},
        })
    return pa.Table.from_pylist(rows, schema=PLAIN_TYPES)


def ds_read(spark, path: str, **options):
    reader = spark.read.format("tidelake")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(path)


def data_files(path) -> set[str]:
    return {f"file://{f['file_path']}" for f in tidelake.open_table(str(path)).system("files").to_pylist()}


def assert_same_as_source(got, expected) -> None:
    """Same column names, types and rows (Spark's file reader makes every column nullable)."""
    g, e = got.toArrow(), expected.toArrow()
    assert_same_rows(g.cast(e.schema), e)


@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
def test_every_plain_type_reads_as_the_data_source_reads_it(spark, tmp_path, pk):
    t = tidelake.create_table(tmp_path / "t", PLAIN_TYPES, primary_keys=["id"] if pk else None,
                              bucket=2 if pk else None)
    t.write(typed_rows(0, 600))
    df = tidelake.spark.read(spark, t.path)
    assert set(df.inputFiles()) == data_files(t.path)  # Spark's reader read every file
    assert df.columns == PLAIN_TYPES.names
    assert_same_as_source(df, ds_read(spark, t.path))
    expected = ds_read(spark, t.path).toArrow()
    assert_same_rows(typed_rows(0, 600).cast(expected.schema), expected)  # and the source's rows


@pytest.mark.parametrize("column", [pa.field("ts9", pa.timestamp("ns")),
                                    pa.field("ltz9", pa.timestamp("ns", tz="UTC"))])
def test_types_spark_reads_differently_go_through_the_data_source(spark, tmp_path, column):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), column])
    t = tidelake.create_table(tmp_path / "t", schema, primary_keys=["id"], bucket=1)
    t.write(pa.table({"id": [1, 2], column.name: pa.array([1_000_000_000, None], pa.int64()).cast(column.type)}))
    df = tidelake.spark.read(spark, t.path)
    assert df.inputFiles() == []
    assert_same_as_source(df, ds_read(spark, t.path))


def test_spark_readable_types():
    assert all(spark_plain.spark_readable(f.type) for f in PLAIN_TYPES)
    variant = pa.struct([pa.field("value", pa.binary(), False), pa.field("metadata", pa.binary(), False)])
    for t in (pa.timestamp("ns"), pa.time32("ms"), pa.binary(16), pa.large_binary(), variant, pa.list_(variant),
              pa.map_(pa.string(), pa.timestamp("ns")), pa.uint32()):
        assert not spark_plain.spark_readable(t), t


KV = pa.schema([pa.field("k", pa.int64(), nullable=False), ("p", pa.string()), ("v", pa.string())])


def kv(keys, p="a", tag="v") -> pa.Table:
    return pa.table({"k": pa.array(list(keys), pa.int64()), "p": [p] * len(keys), "v": [f"{tag}{k}" for k in keys]},
                    schema=KV)


def test_merged_and_plain_splits_of_one_snapshot(spark, tmp_path):
    t = tidelake.create_table(tmp_path / "t", KV, primary_keys=["k"], bucket=4)
    t.write(kv(range(200)))  # one file per bucket: all plain
    assert set(tidelake.spark.read(spark, t.path).inputFiles()) == data_files(t.path)
    plain_before = data_files(t.path)
    t.write(kv([7], tag="w"))  # the bucket of key 7 gets a second file: merged by the data source
    t.delete_keys(kv([8]))
    df = tidelake.spark.read(spark, t.path)
    read_by_spark = set(df.inputFiles())
    assert 0 < len(read_by_spark) < len(plain_before) and read_by_spark < plain_before
    assert_same_as_source(df, ds_read(spark, t.path))
    rows = {r.k: r.v for r in df.collect()}
    assert len(rows) == 199 and rows[7] == "w7" and 8 not in rows


def test_a_single_file_with_retracts_is_read_less_its_retracts(spark, tmp_path):
    t = tidelake.create_table(tmp_path / "t", KV, primary_keys=["k"], bucket=1)
    t.write(kv(range(5)))
    t.compact(full=True)
    t.delete_keys(kv([1, 2]))
    t.compact(full=True)  # one file again, without the deleted keys
    assert tidelake.spark.read(spark, t.path).count() == 3
    t2 = tidelake.create_table(tmp_path / "t2", KV, primary_keys=["k"], bucket=1)
    t2.delete_keys(kv([1]))  # one level-0 file holding only a retract row
    assert len(t2.scan().splits()) == 1
    (file,) = spark_plain.classified_read(t2, None, {}, None).files
    assert file.drop_retracts  # Spark reads it and drops the retract row
    df = tidelake.spark.read(spark, t2.path)
    assert set(df.inputFiles()) == data_files(t2.path) and df.count() == 0


def test_the_dataframe_reads_the_snapshot_of_its_creation(spark, tmp_path):
    t = tidelake.create_table(tmp_path / "t", KV, primary_keys=["k"], bucket=2)
    t.write(kv(range(10)))
    t.write(kv([1], tag="w"))  # one bucket merged, one plain
    df = tidelake.spark.read(spark, t.path)
    assert df.count() == 10
    t.write(kv(range(10, 20)))
    assert df.count() == 10  # pinned: both parts
    assert {r.v for r in df.where("k = 1").collect()} == {"w1"}
    assert tidelake.spark.read(spark, t.path).count() == 20
    first = tidelake.spark.read(spark, t.path, snapshot_id=1)
    assert_same_as_source(first, ds_read(spark, t.path, **{"snapshot-id": 1}))
    t.create_tag("two", snapshot_id=2)
    assert_same_as_source(tidelake.spark.read(spark, t.path, tag="two"), ds_read(spark, t.path, tag="two"))


def test_schema_evolved_files_go_through_the_data_source(spark, tmp_path):
    t = tidelake.create_table(tmp_path / "t", KV, partition_keys=["p"])
    t.write(kv(range(5), p="a"))
    t = t.add_column("extra", pa.int32())
    t.write(pa.table({"k": pa.array([10, 11], pa.int64()), "p": ["b", "b"], "v": ["x", "y"],
                      "extra": pa.array([1, None], pa.int32())}))
    df = tidelake.spark.read(spark, t.path)
    read_by_spark = set(df.inputFiles())
    assert read_by_spark and all("/p=b/" in f for f in read_by_spark)
    assert_same_as_source(df, ds_read(spark, t.path))
    assert {r.k: r.extra for r in df.collect()} == {0: None, 1: None, 2: None, 3: None, 4: None, 10: 1, 11: None}
    # a snapshot of an older schema: all through the data source
    old = tidelake.spark.read(spark, t.path, snapshot_id=1)
    assert old.inputFiles() == [] and old.columns == ["k", "p", "v"]  # the snapshot's schema
    assert_same_as_source(old, ds_read(spark, t.path, **{"snapshot-id": 1}))
    assert sorted(r.k for r in old.collect()) == [0, 1, 2, 3, 4]


def test_deletion_vector_files_are_read_less_their_deleted_positions(spark, tmp_path):
    t = tidelake.create_table(tmp_path / "t", KV, primary_keys=["k"], bucket=2,
                              options={"deletion-vectors.enabled": "true"})
    t.write(kv(range(100)))
    t.compact(full=True)
    t.write(kv(range(0, 100, 10), tag="w"))
    t.compact()
    found = spark_plain.classified_read(t, None, {}, None, joins=True)
    assert any(f.has_deletion_vector for f in found.files), "the test needs a file with a deletion vector"
    assert not found.engine
    df = tidelake.spark.read(spark, t.path, spark_joins=True)
    assert set(df.inputFiles()) == data_files(t.path)
    assert_same_as_source(df, ds_read(spark, t.path))
    assert df.count() == 100 and {r.v for r in df.where("k % 10 = 0").collect()} == {f"w{k}" for k in range(0, 100, 10)}
    by_engine = tidelake.spark.read(spark, t.path)  # without joins the engine applies the vectors
    assert set(by_engine.inputFiles()) < data_files(t.path)
    assert_same_as_source(by_engine, ds_read(spark, t.path))


def test_partitioned_table_with_filters_and_projections(spark, tmp_path):
    t = tidelake.create_table(tmp_path / "t", KV, primary_keys=["k", "p"], partition_keys=["p"], bucket=2)
    for p in "abc":
        t.write(kv(range(50), p=p, tag=p))
    t.write(kv(range(0, 50, 7), p="b", tag="B"))
    df = tidelake.spark.read(spark, t.path)
    assert df.inputFiles() and set(df.inputFiles()) < data_files(t.path)
    ds = ds_read(spark, t.path)
    for where in ("k % 3 = 0 and p = 'b'", "v like 'B%'", "p in ('a', 'c') and k > 40", "v is null"):
        assert_same_as_source(df.where(where).select("v", "k"), ds.where(where).select("v", "k"))
    some = tidelake.spark.read(spark, t.path, columns=["v", "k"])
    assert some.columns == ["v", "k"]
    assert_same_as_source(some.where("k > 45"), ds.select("v", "k").where("k > 45"))
    with pytest.raises(tidelake.InvalidArgumentError, match="nope"):
        tidelake.spark.read(spark, t.path, columns=["k", "nope"])


def test_empty_table(spark, tmp_path):
    t = tidelake.create_table(tmp_path / "t", KV, primary_keys=["k"], bucket=2)
    df = tidelake.spark.read(spark, t.path)
    assert df.columns == ["k", "p", "v"] and df.count() == 0


def test_skip_plain_splits_needs_a_pinned_snapshot(tmp_path):
    from tidelake.spark import io as spark_io

    t = tidelake.create_table(tmp_path / "t", KV, primary_keys=["k"], bucket=2)
    t.write(kv(range(10)))
    schema = spark_io.spark_schema(t)
    with pytest.raises(tidelake.InvalidArgumentError, match="pinned snapshot"):
        BatchReader({"path": t.path, spark_plain.SKIP_PLAIN: "true"}, schema).partitions()
    pinned = {"path": t.path, spark_plain.SKIP_PLAIN: "true", "snapshot-id": "1"}
    assert BatchReader(pinned, schema).partitions() == []  # both buckets are plain
    t.write(kv([3], tag="w"))
    (part,) = BatchReader({**pinned, "snapshot-id": "2"}, schema).partitions()
    found = spark_plain.classified_read(t, None, {"snapshot_id": 2}, None)
    assert [s.payload for s in part.splits] == [s.payload for s in found.engine]
    assert sum(s.row_count for s in part.splits) + sum(f.row_count for f in found.files) == 11


def test_object_store_tables_go_through_the_data_source(spark, s3_server):
    opts = s3_server.options
    path = f"s3://{s3_server.new_bucket()}/db.db/t"
    t = tidelake.create_table(path, KV, primary_keys=["k"], bucket=2, storage_options=opts)
    t.write(kv(range(20)))
    df = tidelake.spark.read(spark, path, storage_options=opts)
    assert df.inputFiles() == []
    assert_same_rows(df.toArrow(), t.to_arrow())


def test_row_tracking_files_go_through_the_data_source(spark, java, tmp_path):  # noqa: F811
    """Files with row ids (row tracking, written by Java Paimon: tidelake does not write such
    tables) may be merged by row range with data-evolution files: left to the engine."""
    sc = Scenario("rows", [("id", "INT"), ("a", "STRING")], [{"rows": [[1, "x"], [2, "y"]]}, {"rows": [[3, "z"]]}],
                  options={"row-tracking.enabled": "true", "data-evolution.enabled": "true"}, mode="batch")
    t = java_write(java, str(tmp_path), sc)
    assert sorted(f["first_row_id"] for f in t.system("files").to_pylist()) == [0, 2]
    df = tidelake.spark.read(spark, t.path)
    assert df.inputFiles() == []
    assert_same_as_source(df, ds_read(spark, t.path))
    assert sorted(r.id for r in df.collect()) == [1, 2, 3]
