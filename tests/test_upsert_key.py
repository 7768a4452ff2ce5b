"""``upsert-key`` (Paimon 1.3): an append table whose batch appends are merges on the upsert
keys, as Paimon's Spark ``RewriteUpsertTable`` rewrites ``INSERT INTO``: a row whose keys the
table holds (nulls matching nulls) replaces it, the others are inserted; with
``sequence.field`` only a row's latest version by it counts, and an older one never replaces a
newer. Through :meth:`tidelake.Table.write`, :func:`tidelake.spark.write` and Spark SQL
``INSERT INTO``; Java Paimon (whose core writers append) reads what tidelake merged and tidelake
merges into what Java wrote."""

from __future__ import annotations

import pyarrow as pa
import pytest

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import Scenario, compare_read, java_write

SCHEMA = pa.schema([pa.field("k", pa.int64()), pa.field("dt", pa.string()), pa.field("v", pa.string()),
                    pa.field("ts", pa.int64())])


def _table(path, **options: str) -> tidelake.Table:
    return tidelake.create_table(str(path), SCHEMA, partition_keys=["dt"], options={"upsert-key": "k,dt", **options})


def _rows(*rows: tuple) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rows], schema=SCHEMA)


def _read(t: tidelake.Table) -> list[tuple]:
    return sorted(((r["k"] is None, r["k"] or 0), r["dt"], r["v"], r["ts"]) for r in t.to_arrow().to_pylist())


def _plain(t: tidelake.Table) -> list[tuple]:
    return [((k or 0) if not isnull else None, dt, v, ts) for (isnull, k), dt, v, ts in _read(t)]


def test_appends_merge_on_the_upsert_keys(tmp_path):
    t = _table(tmp_path / "t")
    t.write(_rows((1, "a", "x", 1), (2, "a", "x", 1), (None, "a", "x", 1), (1, "b", "x", 1)))
    t.write(_rows((1, "a", "y", 0), (None, "a", "y", 0), (3, "a", "y", 0), (3, "a", "z", 0)))
    # (1, a) and (None, a) replaced; (1, b) is another key; both new rows of key 3 are inserted
    assert _plain(t) == [(1, "a", "y", 0), (1, "b", "x", 1), (2, "a", "x", 1), (3, "a", "y", 0), (3, "a", "z", 0),
                         (None, "a", "y", 0)]
    # a key the table holds twice now matches two rows: a MERGE cannot say which to replace
    with pytest.raises(tidelake.InvalidArgumentError, match="matches several source rows|several"):
        t.write(_rows((3, "a", "w", 0), (3, "a", "w2", 0)))
    before = _plain(t)
    assert t.write(_rows((2, "a", "u", 5))).snapshot_id is not None
    assert _plain(t) == [r if r[:2] != (2, "a") else (2, "a", "u", 5) for r in before]
    # overwrite is not a merge (Paimon rewrites INSERT INTO only)
    t.write(_rows((9, "c", "o", 0), (9, "c", "o", 0)), mode="overwrite", overwrite_partition={"dt": "c"})
    assert [r for r in _plain(t) if r[1] == "c"] == [(9, "c", "o", 0), (9, "c", "o", 0)]
    # writers that append cannot merge: refused rather than adding rows of keys the table holds
    with pytest.raises(tidelake.UnsupportedError, match="upsert-key"):
        t.writer()


def test_the_sequence_field_keeps_the_latest_version(tmp_path):
    t = _table(tmp_path / "t", **{"sequence.field": "ts"})
    t.write(_rows((1, "a", "v5", 5), (1, "a", "v7", 7), (1, "a", "v6", 6), (2, "a", "v1", 1), (2, "a", "nul", None)))
    assert _plain(t) == [(1, "a", "v7", 7), (2, "a", "v1", 1)]  # one row per key: the newest, nulls last
    t.write(_rows((1, "a", "old", 3), (2, "a", "same", 1), (3, "a", "new", 0)))
    assert _plain(t) == [(1, "a", "v7", 7), (2, "a", "same", 1), (3, "a", "new", 0)]


def test_upsert_key_is_validated_as_java_validates_it(tmp_path):
    with pytest.raises(tidelake.SchemaMismatchError, match="Cannot define .upsert-key."):
        tidelake.create_table(str(tmp_path / "pk"), pa.schema([pa.field("k", pa.int64(), nullable=False)]),
                              primary_keys=["k"], options={"upsert-key": "k"})
    with pytest.raises(tidelake.SchemaMismatchError, match="upsert key .nope. is not a column"):
        tidelake.create_table(str(tmp_path / "x"), SCHEMA, options={"upsert-key": "nope"})
    nested = pa.schema([pa.field("s", pa.struct([pa.field("a", pa.int32())]))])
    with pytest.raises(tidelake.SchemaMismatchError, match="only atomic types"):
        tidelake.create_table(str(tmp_path / "y"), nested, options={"upsert-key": "s"})


def test_spark_appends_and_insert_into_merge(spark, tmp_path):
    import tidelake.spark

    path = str(tmp_path / "t")
    t = _table(path, **{"sequence.field": "ts"})
    df = spark.createDataFrame([(1, "a", "x", 1), (1, "a", "newer", 2), (None, "a", "n", 1)], "k long, dt string, "
                               "v string, ts long")
    tidelake.spark.write(df, path)
    assert _plain(t) == [(1, "a", "newer", 2), (None, "a", "n", 1)]
    tidelake.spark.sql(spark, f"INSERT INTO tidelake.`{path}` VALUES (1, 'a', 'older', 1), (NULL, 'a', 'n2', 3), "
                              "(4, 'b', 'w', 0)")
    assert _plain(t) == [(1, "a", "newer", 2), (4, "b", "w", 0), (None, "a", "n2", 3)]


def test_java_reads_what_tidelake_merged_and_tidelake_merges_into_javas(java, tmp_path):
    wh = str(tmp_path)
    fields = [("k", "BIGINT"), ("dt", "STRING"), ("v", "STRING"), ("ts", "BIGINT")]
    sc = Scenario("upserted", fields, [{"rows": [[1, "a", "j1", 1], [2, "a", "j2", 2], [None, "b", "jn", 1]]}],
                  partition_keys=["dt"], options={"upsert-key": "k,dt", "sequence.field": "ts"}, mode="batch")
    t = java_write(java, wh, sc)  # Java's core writer appends
    t.write(_rows((1, "a", "t1", 5), (2, "a", "stale", 1), (None, "b", "tn", 2), (3, "c", "t3", 0)))
    rows = compare_read(java, t, wh, "tidelake merged into Java's rows", pypaimon=True)
    assert len(rows) == 4
    assert _plain(t) == [(1, "a", "t1", 5), (2, "a", "j2", 2), (3, "c", "t3", 0), (None, "b", "tn", 2)]
