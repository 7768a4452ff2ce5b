"""Spark SQL parity of ``tidelake.spark.sql`` on the shared local SparkSession, with ``db.table``
names resolved through a catalog given as Paimon catalog options (``register(spark,
catalog={...})``): queries (joins, CTEs, subqueries, time travel, system tables, paths as
``tidelake.`file:/...```), CTAS / REPLACE TABLE, ALTER / SHOW / DESCRIBE / TRUNCATE / DROP,
Paimon's procedures, Spark's own catalog tables over the ``tidelake`` source, and the
statements of Paimon's Spark documentation. Every result is compared with tidelake's own API
(``Table.to_arrow()``, ``Table.schema``, ``tags()``...)."""

from __future__ import annotations

import datetime as dt
import os
import time
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import tidelake
import tidelake.spark
from _peers import new_warehouse
from conftest import assert_same_rows
from tidelake.spark.statements import CATALOG_CONF

pyspark = pytest.importorskip("pyspark")
sql = tidelake.spark.sql


@pytest.fixture
def catalog(spark, tmp_path):
    """A warehouse with database ``db``, registered as Paimon catalog options."""
    _, wh = new_warehouse(tmp_path)
    tidelake.spark.register(spark, catalog={"metastore": "filesystem", "warehouse": wh}, check_workers=False)
    try:
        yield tidelake.Catalog(wh)
    finally:
        spark.conf.unset(CATALOG_CONF)


def rows(spark, text: str) -> list[tuple]:
    return sorted((tuple(r) for r in sql(spark, text).collect()), key=repr)


def arrow_rows(table: pa.Table) -> list[tuple]:
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)


def session_time(spark, millis: int) -> str:
    """``millis`` as a timestamp literal in the session's time zone (how Spark reads one)."""
    zone = ZoneInfo(spark.conf.get("spark.sql.session.timeZone"))
    return dt.datetime.fromtimestamp(millis / 1000, zone).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def test_queries_over_catalog_and_path_tables(spark, catalog, tmp_path):
    sql(spark, "CREATE TABLE db.orders (id BIGINT, customer BIGINT, qty INT) USING tidelake "
               "TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '2')")
    sql(spark, "CREATE TABLE db.customers (cid BIGINT, name STRING) USING tidelake")
    sql(spark, "INSERT INTO db.orders VALUES (1, 10, 5), (2, 20, 7), (3, 10, 1)")
    sql(spark, "INSERT INTO db.customers VALUES (10, 'ann'), (20, 'bob'), (30, 'cy')")
    orders, customers = catalog.get_table("db.orders"), catalog.get_table("db.customers")
    first = orders.latest_snapshot()
    orders.create_tag("v1")
    time.sleep(1.1)  # the next snapshot is a second later: TIMESTAMP AS OF <epoch seconds> below
    sql(spark, "INSERT INTO db.orders VALUES (2, 20, 70), (4, 30, 2)")
    now = orders.to_arrow()
    assert rows(spark, "SELECT * FROM db.orders") == arrow_rows(now)

    # a join of two tidelake tables, aggregated, against the same computed from to_arrow()
    names = {r["cid"]: r["name"] for r in customers.to_arrow().to_pylist()}
    totals: dict[str, int] = {}
    for r in now.to_pylist():
        totals[names[r["customer"]]] = totals.get(names[r["customer"]], 0) + r["qty"]
    assert rows(spark, "SELECT c.name, sum(o.qty) FROM db.orders o JOIN db.customers c ON o.customer = c.cid "
                       "GROUP BY c.name") == sorted(totals.items())
    # CTE, IN subquery, scalar subquery, EXISTS
    assert rows(spark, "WITH big AS (SELECT * FROM db.orders WHERE qty > 4) SELECT id FROM big") == \
        [(r["id"],) for r in sorted(now.to_pylist(), key=lambda r: r["id"]) if r["qty"] > 4]
    assert rows(spark, "SELECT name FROM db.customers WHERE cid IN (SELECT customer FROM db.orders)") == \
        sorted((names[c],) for c in set(now["customer"].to_pylist()))
    assert rows(spark, "SELECT (SELECT max(qty) FROM db.orders) AS m") == [(pc.max(now["qty"]).as_py(),)]
    assert rows(spark, "SELECT name FROM db.customers c WHERE NOT EXISTS "
                       "(SELECT 1 FROM db.orders o WHERE o.customer = c.cid)") == []
    # time travel: snapshot id, tag, timestamp string (session time zone), epoch seconds
    old = arrow_rows(orders.to_arrow(snapshot_id=first.id))
    assert rows(spark, f"SELECT * FROM db.orders VERSION AS OF {first.id}") == old
    assert rows(spark, "SELECT * FROM db.orders VERSION AS OF 'v1'") == old
    assert rows(spark, f"SELECT * FROM db.orders TIMESTAMP AS OF '{session_time(spark, first.time_millis)}'") == old
    assert rows(spark, f"SELECT * FROM db.orders TIMESTAMP AS OF {first.time_millis // 1000 + 1} AS o "
                       "WHERE o.qty > 0") == old
    # system tables of the catalog and of a path, and the same table by path (plain, file:, file://)
    assert rows(spark, "SELECT snapshot_id, commit_kind FROM db.`orders$snapshots`") == \
        arrow_rows(orders.system("snapshots").select(["snapshot_id", "commit_kind"]))
    assert rows(spark, "SELECT tag_name, snapshot_id FROM db.`orders$tags`") == [("v1", first.id)]
    assert rows(spark, "SELECT * FROM db.`orders$options`") == arrow_rows(orders.system("options"))
    assert rows(spark, f"SELECT snapshot_id FROM tidelake.`{orders.path}$snapshots`") == [(1,), (2,)]
    for path in (orders.path, f"file:{orders.path}", f"file://{orders.path}"):
        assert rows(spark, f"SELECT * FROM tidelake.`{path}` VERSION AS OF 'v1'") == old
    # a tidelake table joined with Spark's own view
    spark.createDataFrame([(1, "x")], "id bigint, note string").createOrReplaceTempView("notes")
    assert rows(spark, "SELECT o.qty, n.note FROM db.orders o JOIN notes n USING (id)") == [(5, "x")]
    # names neither side knows are named in tidelake's error
    with pytest.raises(tidelake.TableNotFoundError, match="`db`.`nothing`.*tidelake catalog"):
        sql(spark, "SELECT * FROM db.nothing")
    with pytest.raises(tidelake.TableNotFoundError, match="`nodb`.`orders`"):
        sql(spark, "SELECT * FROM db.orders JOIN nodb.orders USING (id)")
    with pytest.raises(tidelake.TableNotFoundError):
        sql(spark, f"SELECT * FROM tidelake.`{tmp_path / 'none'}`")


def test_ctas_and_replace_table(spark, catalog):
    sql(spark, "CREATE TABLE db.src (k BIGINT, dt STRING, v DOUBLE) USING tidelake")
    sql(spark, "INSERT INTO db.src VALUES (1, 'a', 1.5), (2, 'b', 2.5), (3, 'a', NULL)")
    src = catalog.get_table("db.src").to_arrow()
    out = sql(spark, "CREATE TABLE db.copy USING tidelake PARTITIONED BY (dt) "
                     "TBLPROPERTIES ('primary-key' = 'k,dt', 'bucket' = '1') AS SELECT * FROM db.src").collect()[0]
    assert (out.created, out.snapshot_id) == (True, 1)
    copy = catalog.get_table("db.copy")
    assert (copy.primary_keys, copy.partition_keys, copy.effective_options["bucket"]) == (["k", "dt"], ["dt"], 1)
    assert copy.schema.names == ["k", "dt", "v"] and not copy.schema.field("k").nullable
    assert arrow_rows(copy.to_arrow()) == arrow_rows(src)
    # IF NOT EXISTS on an existing table writes nothing; without it, an error
    assert sql(spark, "CREATE TABLE IF NOT EXISTS db.copy USING tidelake AS SELECT * FROM db.src") \
        .collect()[0].created is False
    assert copy.latest_snapshot().id == 1
    with pytest.raises(tidelake.TableAlreadyExistsError):
        sql(spark, "CREATE TABLE db.copy USING tidelake AS SELECT 1 AS k")
    # REPLACE TABLE / CREATE OR REPLACE: the new table has the query's columns and rows only
    sql(spark, "REPLACE TABLE db.copy USING tidelake AS SELECT k, v * 2 AS v2 FROM db.src WHERE v IS NOT NULL")
    replaced = catalog.get_table("db.copy")
    assert replaced.schema.names == ["k", "v2"] and replaced.primary_keys == []
    assert arrow_rows(replaced.to_arrow()) == [(1, 3.0), (2, 5.0)]
    with pytest.raises(tidelake.UnsupportedError, match="reading the table it replaces"):
        sql(spark, "REPLACE TABLE db.copy USING tidelake AS SELECT * FROM db.copy")
    assert arrow_rows(catalog.get_table("db.copy").to_arrow()) == [(1, 3.0), (2, 5.0)]
    sql(spark, "CREATE OR REPLACE TABLE db.fresh USING tidelake AS SELECT count(*) AS n FROM db.src")
    assert catalog.get_table("db.fresh").to_arrow().to_pylist() == [{"n": 3}]
    # time travel in the CTAS query
    sql(spark, "INSERT INTO db.src VALUES (4, 'c', 4.0)")
    sql(spark, "CREATE TABLE db.old USING tidelake AS SELECT * FROM db.src VERSION AS OF 1")
    assert arrow_rows(catalog.get_table("db.old").to_arrow()) == arrow_rows(src)


def test_alter_show_describe_truncate_drop(spark, catalog):
    sql(spark, "CREATE TABLE db.t (k BIGINT, dt STRING, a INT, b STRING) USING tidelake PARTITIONED BY (dt) "
               "TBLPROPERTIES ('primary-key' = 'k,dt', 'bucket' = '1')")
    sql(spark, "INSERT INTO db.t VALUES (1, 'x', 1, 'p'), (2, 'y', 2, 'q'), (3, 'y', 3, 'r')")
    t = catalog.get_table("db.t")

    sql(spark, "ALTER TABLE db.t ADD COLUMN c DOUBLE COMMENT 'the c' AFTER k")
    sql(spark, "ALTER TABLE db.t ADD COLUMN z STRING FIRST")
    sql(spark, "ALTER TABLE db.t ADD COLUMNS (e INT, f STRING)")
    assert t.refresh().schema.names == ["z", "k", "c", "dt", "a", "b", "e", "f"]
    assert t.schema.field("c").metadata[b"description"] == b"the c"
    sql(spark, "ALTER TABLE db.t RENAME COLUMN b TO bee")
    sql(spark, "ALTER TABLE db.t DROP COLUMN z")
    sql(spark, "ALTER TABLE db.t DROP COLUMNS (e, f)")
    sql(spark, "ALTER TABLE db.t ALTER COLUMN a TYPE BIGINT")
    t.refresh()
    assert t.schema.names == ["k", "c", "dt", "a", "bee"] and t.schema.field("a").type == pa.int64()
    sql(spark, "ALTER TABLE db.t SET TBLPROPERTIES ('snapshot.num-retained.max' = '20', 'write-buffer-size' = "
               "'64 mb')")
    assert t.refresh().options["snapshot.num-retained.max"] == "20"
    sql(spark, "ALTER TABLE db.t UNSET TBLPROPERTIES ('write-buffer-size')")
    assert "write-buffer-size" not in t.refresh().options
    with pytest.raises(tidelake.InvalidArgumentError, match="write-buffer-size"):
        sql(spark, "ALTER TABLE db.t UNSET TBLPROPERTIES ('write-buffer-size')")
    sql(spark, "ALTER TABLE db.t UNSET TBLPROPERTIES IF EXISTS ('write-buffer-size')")
    assert rows(spark, "SELECT * FROM db.t") == arrow_rows(t.to_arrow())
    assert rows(spark, "SELECT k, a, bee FROM db.t") == [(1, 1, "p"), (2, 2, "q"), (3, 3, "r")]

    # DESCRIBE and SHOW answer Spark's columns
    described = sql(spark, "DESCRIBE TABLE db.t")
    assert described.columns == ["col_name", "data_type", "comment"]
    assert [tuple(r) for r in described.collect()] == [
        ("k", "bigint", None), ("c", "double", "the c"), ("dt", "string", None), ("a", "bigint", None),
        ("bee", "string", None), ("# Partition Information", "", ""), ("# col_name", "data_type", "comment"),
        ("dt", "string", None)]
    assert rows(spark, "SHOW PARTITIONS db.t") == [("dt=x",), ("dt=y",)]
    props = sql(spark, "SHOW TBLPROPERTIES db.t")
    assert props.columns == ["key", "value"]
    assert dict(rows(spark, "SHOW TBLPROPERTIES db.t")) == {**t.options, "primary-key": "k,dt"}
    assert rows(spark, "SHOW TBLPROPERTIES db.t ('snapshot.num-retained.max')") == [
        ("snapshot.num-retained.max", "20")]
    # SHOW CREATE TABLE makes the same table again
    text = sql(spark, "SHOW CREATE TABLE db.t").collect()[0].createtab_stmt
    sql(spark, text.replace("CREATE TABLE db.t", "CREATE TABLE db.t2"))
    t2 = catalog.get_table("db.t2")
    assert (t2.schema, t2.primary_keys, t2.partition_keys, t2.options) == (
        t.schema, t.primary_keys, t.partition_keys, t.options)
    assert t2.schema.field("c").metadata == {b"description": b"the c"}
    shown = sql(spark, "SHOW TABLES IN db")
    assert shown.columns == ["namespace", "tableName", "isTemporary"]
    assert rows(spark, "SHOW TABLES IN db") == [("db", n, False) for n in catalog.list_tables("db")]
    assert rows(spark, "SHOW TABLES FROM db LIKE 't2|nope*'") == [("db", "t2", False)]

    # DROP PARTITION, TRUNCATE, RENAME, DROP
    sql(spark, "ALTER TABLE db.t DROP PARTITION (dt = 'x')")
    assert rows(spark, "SELECT k FROM db.t") == [(2,), (3,)] == arrow_rows(t.to_arrow(columns=["k"]))
    snapshot = sql(spark, "TRUNCATE TABLE db.t").collect()[0].snapshot_id
    assert t.snapshot(snapshot).commit_kind == "OVERWRITE" and t.to_arrow().num_rows == 0
    sql(spark, "ALTER TABLE db.t2 RENAME TO db.t3")
    assert sorted(catalog.list_tables("db")) == ["t", "t3"]
    assert sql(spark, "DROP TABLE db.t3").collect()[0].dropped
    assert sql(spark, "DROP TABLE IF EXISTS db.t3").collect()[0].dropped is False
    assert catalog.list_tables("db") == ["t"]
    with pytest.raises(tidelake.TableNotFoundError, match="`db`.`t3`"):
        sql(spark, "DROP TABLE db.t3")
    with pytest.raises(tidelake.TableNotFoundError, match="`db`.`t3`"):
        sql(spark, "TRUNCATE TABLE db.t3")


def test_procedures(spark, catalog):
    sql(spark, "CREATE TABLE db.p (k BIGINT, dt STRING, v STRING) USING tidelake PARTITIONED BY (dt) "
               "TBLPROPERTIES ('primary-key' = 'k,dt', 'bucket' = '1', "
               "'partition.timestamp-formatter' = 'yyyy-MM-dd')")
    today = dt.date.today().isoformat()
    sql(spark, f"INSERT INTO db.p VALUES (1, '2020-01-01', 'a'), (2, '{today}', 'b')")
    sql(spark, f"INSERT INTO db.p VALUES (3, '{today}', 'c')")
    t = catalog.get_table("db.p")
    one, two = t.snapshot(1), t.snapshot(2)

    sql(spark, "CALL sys.create_tag(table => 'db.p', tag => 'a', snapshot => 1)")
    sql(spark, f"CALL sys.create_tag_from_timestamp(table => 'db.p', tag => 'b', timestamp => {two.time_millis})")
    assert [(g.name, g.snapshot_id) for g in t.tags()] == [("a", 1), ("b", 2)]
    assert rows(spark, "CALL sys.rename_tag(table => 'db.p', tag => 'a', target_tag => 'c')") == [("a", "c")]
    assert rows(spark, "CALL sys.replace_tag('db.p', 'b', 1, '2 h')") == [("b", 1)]
    assert [(g.name, g.snapshot_id, g.time_retained) for g in t.tags()] == [("b", 1, 7200), ("c", 1, None)]
    with pytest.raises(tidelake.InvalidArgumentError, match="rename_tag needs target_tag"):
        sql(spark, "CALL sys.rename_tag(table => 'db.p', tag => 'c')")
    sql(spark, "CALL sys.rename_tag(table => 'db.p', tag => 'c', target_tag => 'a')")
    assert rows(spark, "CALL sys.delete_tag(table => 'db.p', tag => 'a,b')") == [("a",), ("b",)]
    assert t.tags() == []

    sql(spark, "CALL sys.create_tag(table => 'db.p', tag => 'first', snapshot => 1)")
    sql(spark, "CALL sys.create_branch(table => 'db.p', branch => 'dev', tag => 'first')")
    assert t.branches() == ["dev"]
    dev = tidelake.open_table(t.path, branch="dev")
    assert arrow_rows(dev.to_arrow()) == arrow_rows(t.to_arrow(snapshot_id=1))
    sql(spark, "CALL sys.create_branch(table => 'db.p', branch => 'empty')")
    assert rows(spark, "CALL sys.delete_branch(table => 'db.p', branch => 'empty')") == [("empty",)]
    assert t.branches() == ["dev"]

    # orphan files: listed by a dry run, then deleted
    orphan = os.path.join(t.path, "dt=2020-01-01", "bucket-0", "data-orphan.parquet")
    with open(orphan, "wb") as f:
        f.write(b"x" * 10)
    later = "2099-01-01 00:00:00"
    assert rows(spark, f"CALL sys.remove_orphan_files(table => 'db.p', older_than => '{later}', dry_run => true)") \
        == [(1, 10)]
    assert os.path.exists(orphan)
    assert rows(spark, f"CALL sys.remove_orphan_files(table => 'db.p', older_than => '{later}')") == [(1, 10)]
    assert not os.path.exists(orphan)

    # partitions expire by the table's formatter; another formatter is refused
    with pytest.raises(tidelake.UnsupportedError, match="partition.timestamp-formatter"):
        sql(spark, "CALL sys.expire_partitions(table => 'db.p', expiration_time => '1 d', "
                   "timestamp_formatter => 'yyyyMMdd')")
    assert rows(spark, "CALL sys.expire_partitions(table => 'db.p', expiration_time => '1 d', "
                       "timestamp_formatter => 'yyyy-MM-dd')") == [("dt=2020-01-01",)]
    assert sorted(t.to_arrow()["k"].to_pylist()) == [2, 3]

    sql(spark, "CALL sys.reset_consumer(table => 'db.p', consumerId => 'c1', nextSnapshotId => 2)")
    assert t.consumers() == {"c1": 2}
    sql(spark, "CALL sys.reset_consumer(table => 'db.p', consumerId => 'c1')")
    assert t.consumers() == {}

    sql(spark, f"CALL sys.rollback_to_timestamp(table => 'db.p', timestamp => {two.time_millis})")
    assert t.latest_snapshot().id == 2 and sorted(t.to_arrow()["k"].to_pylist()) == [1, 2, 3]
    sql(spark, "CALL sys.fast_forward(table => 'db.p', branch => 'dev')")
    assert arrow_rows(t.to_arrow()) == arrow_rows(dev.to_arrow()) and t.latest_snapshot().id == one.id
    with pytest.raises(tidelake.InvalidArgumentError, match="delete_tag needs tag"):
        sql(spark, "CALL sys.delete_tag(table => 'db.p')")


def test_spark_catalog_tables_over_the_source(spark, tmp_path):
    """Spark's own CREATE TABLE ... USING tidelake over an existing table, by LOCATION or the
    path option, plain or as file: URLs: Spark reads and inserts through the data source."""
    path = str(tmp_path / "own")
    tidelake.write_table(path, pa.table({"id": pa.array([1, 2], pa.int64()), "s": ["a", "b"]}))
    for i, where in enumerate((f"OPTIONS (path 'file:{path}')", f"LOCATION 'file://{path}'", f"LOCATION '{path}'")):
        spark.sql(f"CREATE TABLE own{i} USING tidelake {where}")
        try:
            spark.sql(f"INSERT INTO own{i} VALUES ({10 + i}, 'x')")
            got = sorted((tuple(r) for r in spark.sql(f"SELECT * FROM own{i}").collect()), key=repr)
            assert got == arrow_rows(tidelake.open_table(path).to_arrow())
            assert (10 + i, "x") in got
        finally:
            spark.sql(f"DROP TABLE own{i}")
    assert tidelake.open_table(path).to_arrow().num_rows == 5  # DROP of Spark's entry keeps the files


def test_paimon_spark_docs_examples(spark, catalog):
    """Statements as Paimon's Spark documentation writes them (database-qualified: the docs
    assume the Paimon catalog is Spark's current one)."""
    sql(spark, "CREATE DATABASE IF NOT EXISTS test")
    sql(spark, """CREATE TABLE test.my_table (
                      user_id BIGINT,
                      item_id BIGINT,
                      behavior STRING,
                      dt STRING,
                      hh STRING
                  ) PARTITIONED BY (dt, hh) TBLPROPERTIES (
                      'primary-key' = 'dt,hh,user_id'
                  )""")
    t = catalog.get_table("test.my_table")
    assert (t.primary_keys, t.partition_keys) == (["dt", "hh", "user_id"], ["dt", "hh"])
    sql(spark, "INSERT INTO test.my_table VALUES (1, 1, 'view', '2023-01-01', '10'), "
               "(2, 2, 'buy', '2023-01-01', '11')")
    sql(spark, "INSERT INTO test.my_table VALUES (1, 3, 'buy', '2023-01-01', '10')")
    assert rows(spark, "SELECT * FROM test.my_table") == arrow_rows(t.to_arrow())
    assert rows(spark, "SELECT user_id, item_id FROM test.my_table VERSION AS OF 1") == [(1, 1), (2, 2)]
    sql(spark, "CALL sys.create_tag(table => 'test.my_table', tag => 'test_tag', snapshot => 1)")
    assert rows(spark, "SELECT user_id, item_id FROM test.my_table VERSION AS OF 'test_tag'") == [(1, 1), (2, 2)]
    assert [g.name for g in t.tags()] == ["test_tag"]
    assert rows(spark, "SELECT snapshot_id FROM test.`my_table$snapshots`") == [(1,), (2,)]
    sql(spark, "CREATE TABLE test.my_table_all AS SELECT * FROM test.my_table")
    sql(spark, "CREATE TABLE test.my_table_all_as PARTITIONED BY (dt) TBLPROPERTIES ('primary-key' = 'dt,hh') "
               "AS SELECT * FROM test.my_table_all")
    assert catalog.get_table("test.my_table_all_as").primary_keys == ["dt", "hh"]
    assert_same_rows(catalog.get_table("test.my_table_all").to_arrow(), t.to_arrow())

    sql(spark, "UPDATE test.my_table SET behavior = 'like' WHERE user_id = 2")
    sql(spark, "DELETE FROM test.my_table WHERE item_id = 3")
    assert rows(spark, "SELECT user_id, behavior FROM test.my_table") == [(2, "like")]
    sql(spark, "CALL sys.rollback(table => 'test.my_table', version => '2')")
    assert rows(spark, "SELECT user_id, item_id FROM test.my_table") == [(1, 3), (2, 2)]

    sql(spark, "ALTER TABLE test.my_table SET TBLPROPERTIES ('write-buffer-size' = '256 MB')")
    assert t.refresh().options["write-buffer-size"] == "256 MB"
    sql(spark, "ALTER TABLE test.my_table UNSET TBLPROPERTIES ('write-buffer-size')")
    sql(spark, "ALTER TABLE test.my_table ADD COLUMNS (c1 INT, c2 STRING)")
    sql(spark, "ALTER TABLE test.my_table RENAME COLUMN c1 TO c0")
    sql(spark, "ALTER TABLE test.my_table DROP COLUMNS (c0, c2)")
    sql(spark, "ALTER TABLE test.my_table ADD COLUMN c INT FIRST")
    sql(spark, "ALTER TABLE test.my_table ALTER COLUMN c TYPE BIGINT")
    assert t.refresh().schema.names == ["c", "user_id", "item_id", "behavior", "dt", "hh"]
    assert "write-buffer-size" not in t.options and t.schema.field("c").type == pa.int64()

    sql(spark, "CALL sys.compact(table => 'test.my_table')")
    assert t.latest_snapshot().commit_kind == "COMPACT"
    sql(spark, "CALL sys.expire_snapshots(table => 'test.my_table', retain_max => 1, retain_min => 1)")
    assert len(t.snapshots()) == 1
    sql(spark, "CALL sys.delete_tag(table => 'test.my_table', tag => 'test_tag')")
    sql(spark, "INSERT OVERWRITE test.my_table SELECT 0, 9, 9, 'view', '2023-01-02', '00'")
    assert rows(spark, "SELECT user_id, dt FROM test.my_table") == [(9, "2023-01-02")]
    sql(spark, "TRUNCATE TABLE test.my_table")
    assert t.to_arrow().num_rows == 0
    sql(spark, "ALTER TABLE test.my_table RENAME TO test.my_table_new")
    sql(spark, "DROP TABLE test.my_table_new")
    assert sorted(catalog.list_tables("test")) == ["my_table_all", "my_table_all_as"]
