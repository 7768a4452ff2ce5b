"""The Spark paths that need no Python Data Source: ``tidelake.spark.read`` / ``write`` /
``merge`` / ``update`` / ``delete`` / ``sql`` through ``mapInArrow`` (PySpark 3.3+). They run in
the main suite on PySpark 4.x and, unchanged, in the PySpark 3.5 lane of ``make test``
(``make spark35-test``), where Spark has no Python Data Source and every engine read is
:mod:`tidelake.spark.mapped`. Every answer is checked against the table's own read."""

from __future__ import annotations

import pyarrow as pa
import pytest

import tidelake
import tidelake.spark
from _peers import new_warehouse
from conftest import assert_same_rows

pyspark = pytest.importorskip("pyspark")

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("p", pa.string(), nullable=False),
                    ("v", pa.string())])


def rows(keys, p="a", tag="v") -> pa.Table:
    return pa.table({"k": pa.array(list(keys), pa.int64()), "p": [p] * len(keys), "v": [f"{tag}{k}" for k in keys]},
                    schema=SCHEMA)


def spark_rows(frame) -> pa.Table:
    """A Spark DataFrame's rows as a pyarrow Table of :data:`SCHEMA`'s columns it has."""
    got = pa.Table.from_pylist([r.asDict() for r in frame.collect()])
    return got.cast(pa.schema([SCHEMA.field(n) for n in got.schema.names]).remove_metadata()) if got.num_rows \
        else got


def table(tmp_path, *, pk=True, partition=False, **options) -> tidelake.Table:
    cat, _ = new_warehouse(tmp_path)
    return cat.create_table("db.t", SCHEMA, primary_keys=(["k", "p"] if partition else ["k"]) if pk else None,
                            partition_keys=["p"] if partition else None, bucket=2 if pk else None,
                            options=options or None)


def _sorted(t: pa.Table) -> pa.Table:
    return t.sort_by([(n, "ascending") for n in t.schema.names])


@pytest.mark.parametrize("kind", ["pk", "dv", "append", "partitioned"])
def test_read_equals_the_tables_own_read(spark, tmp_path, kind):
    options = {"deletion-vectors.enabled": "true"} if kind == "dv" else {}
    t = table(tmp_path, pk=kind != "append", partition=kind == "partitioned", **options)
    t.write(rows(range(0, 60)))
    t.write(rows(range(20, 90), tag="w"))  # overlapping keys: merged on PK tables, both kept on append
    if kind == "partitioned":
        t.write(rows(range(0, 30), p="b"))
    if kind != "append":
        t.delete(filter=[("k", "<", 5)])
    expected = t.to_arrow()
    assert_same_rows(_sorted(spark_rows(tidelake.spark.read(spark, t.path))), _sorted(expected), check_types=False)
    got = spark_rows(tidelake.spark.read(spark, t.path, columns=["v"]))
    assert sorted(got.column("v").to_pylist()) == sorted(expected.column("v").to_pylist())


def test_time_travel_and_later_commits(spark, tmp_path):
    t = table(tmp_path)
    first = t.write(rows(range(10)))
    frame = tidelake.spark.read(spark, t.path)  # pinned to the snapshot current now
    t.write(rows(range(5, 20), tag="w"))
    assert frame.count() == 10
    assert tidelake.spark.read(spark, t.path, snapshot_id=first).count() == 10
    assert tidelake.spark.read(spark, t.path).count() == 20


def test_projection_of_a_table_with_a_column_spark_reads_differently(spark, tmp_path):
    """A TIMESTAMP(9) column makes no split plain for a read of every column, while a read of
    the other columns has plain splits: both parts of the read must classify alike (once every
    row of such a projection went missing)."""
    cat, _ = new_warehouse(tmp_path)
    t = cat.create_table("db.n", pa.schema([pa.field("id", pa.int64(), nullable=False), ("ts", pa.timestamp("ns"))]))
    t.write(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "ts": pa.array([1000, 2000, 3000], pa.timestamp("ns"))}))
    assert tidelake.spark.read(spark, t.path).count() == 3
    assert sorted(r["id"] for r in tidelake.spark.read(spark, t.path, columns=["id"]).collect()) == [1, 2, 3]


@pytest.mark.parametrize("mode", ["append", "overwrite", "upsert", "delete"])
def test_write_modes(spark, tmp_path, mode):
    t = table(tmp_path, partition=True)
    t.write(rows(range(10)))
    frame = spark.createDataFrame(rows(range(5, 15), tag="w").to_pandas())
    tidelake.spark.write(frame, t.path, mode=mode)
    before = {r["k"]: r["v"] for r in rows(range(10)).to_pylist()}
    new = {r["k"]: r["v"] for r in rows(range(5, 15), tag="w").to_pylist()}
    expected = {"append": {**before, **new}, "upsert": {**before, **new}, "overwrite": new,
                "delete": {k: v for k, v in before.items() if k not in new}}[mode]
    assert {r["k"]: r["v"] for r in t.to_arrow().to_pylist()} == expected


def test_merge_update_delete(spark, tmp_path):
    t = table(tmp_path, partition=True)
    t.write(rows(range(10)))
    t.write(rows(range(10), p="b"))
    source = spark.createDataFrame(pa.concat_tables([rows([1, 2, 30], tag="s"), rows([3], p="b", tag="s")]).to_pandas())
    (tidelake.spark.merge(t.path, source, on=["k", "p"]).when_matched_update()
     .when_not_matched_insert().execute())
    tidelake.spark.update(t.path, {"v": "'u'"}, "k = 4 AND p = 'a'")
    tidelake.spark.delete(t.path, "k >= 8")
    expected = {(k, p): f"v{k}" for k in range(8) for p in "ab"}
    expected.update({(1, "a"): "s1", (2, "a"): "s2", (3, "b"): "s3", (4, "a"): "u"})
    assert {(r["k"], r["p"]): r["v"] for r in t.to_arrow().to_pylist()} == expected
    spark_side = {(r["k"], r["p"]): r["v"] for r in tidelake.spark.read(spark, t.path).collect()}
    assert spark_side == expected and (30, "a") not in spark_side


def test_sql(spark, tmp_path):
    wh = str(tmp_path / "wh")
    sql = lambda q: tidelake.spark.sql(spark, q, warehouse=wh)  # noqa: E731
    sql("CREATE DATABASE IF NOT EXISTS db")
    sql("CREATE TABLE db.t (k BIGINT NOT NULL, v STRING) TBLPROPERTIES ('primary-key' = 'k', 'bucket' = '2')")
    sql("INSERT INTO db.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    sql("INSERT INTO db.t VALUES (2, 'B')")
    assert sorted(tuple(r) for r in sql("SELECT k, v FROM db.t").collect()) == [(1, "a"), (2, "B"), (3, "c")]
    assert sorted(tuple(r) for r in sql("SELECT k, v FROM db.t VERSION AS OF 1").collect()) == [
        (1, "a"), (2, "b"), (3, "c")]
    assert [r["snapshot_id"] for r in sql("SELECT snapshot_id FROM db.`t$snapshots` ORDER BY 1").collect()] == [1, 2]
    sql("UPDATE db.t SET v = 'x' WHERE k = 1")
    sql("DELETE FROM db.t WHERE k = 3")
    sql("CREATE TABLE db.c AS SELECT k, v FROM db.t WHERE k < 2")
    t = tidelake.Catalog(wh).get_table("db.t")
    assert sorted((r["k"], r["v"]) for r in t.to_arrow().to_pylist()) == [(1, "x"), (2, "B")]
    assert [tuple(r) for r in sql("SELECT k, v FROM db.c").collect()] == [(1, "x")]
    sql("CALL sys.create_tag(table => 'db.t', tag => 'first', snapshot => 1)")
    assert [tag.name for tag in t.tags()] == ["first"]
