"""``tidelake.spark.sql`` on the shared local SparkSession: CREATE TABLE ... USING tidelake,
INSERT INTO/OVERWRITE (SELECT and VALUES), Paimon's procedures, tables named by path or by
``db.table`` of a warehouse, SELECT with time travel and system tables, pass-through of other
statements, and DELETE/UPDATE/MERGE parsed into plans and run with tidelake's row-level DML (checked against the rows a model expects)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import tidelake
import tidelake.spark
from _peers import new_warehouse, pp_read
from conftest import assert_same_rows
from tidelake.spark import dml as spark_dml

pyspark = pytest.importorskip("pyspark")
sql = tidelake.spark.sql


def test_create_insert_select_by_path_and_location(spark, tmp_path):
    _, wh = new_warehouse(tmp_path)
    path = f"{wh}/db.db/orders"
    row = sql(spark, f"""CREATE TABLE tidelake.`{path}` (id BIGINT, dt STRING, qty INT, note STRING)
                         USING tidelake PARTITIONED BY (dt)
                         TBLPROPERTIES ('primary-key' = 'id,dt', 'bucket' = '2', 'changelog-producer' = 'input')""")
    assert row.collect()[0].asDict() == {"path": path, "created": True}
    t = tidelake.open_table(path)
    assert (t.primary_keys, t.partition_keys, t.effective_options["bucket"]) == (["id", "dt"], ["dt"], 2)
    assert t.options["changelog-producer"] == "input"
    assert t.schema.field("qty").type == pa.int32() and not t.schema.field("id").nullable
    # IF NOT EXISTS is a no-op on an existing table; without it, an error
    again = f"CREATE TABLE IF NOT EXISTS tidelake.`{path}` (id BIGINT) USING tidelake"
    assert sql(spark, again).collect()[0].created is False
    with pytest.raises(tidelake.TableAlreadyExistsError):
        sql(spark, f"CREATE TABLE tidelake.`{path}` (id BIGINT) USING tidelake")

    # VALUES map by position and are cast (1 is an int literal, id is BIGINT)
    assert sql(spark, f"INSERT INTO tidelake.`{path}` VALUES (1, 'a', 10, 'x'), (2, 'b', 20, 'y')") \
        .collect()[0].snapshot_id == 1
    spark.range(3, 6).createOrReplaceTempView("staging")
    sql(spark, f"INSERT INTO tidelake.`{path}` (dt, id, qty) SELECT 'a', id, cast(id * 10 as int) FROM staging")
    expected = pa.table({"id": [1, 2, 3, 4, 5], "dt": ["a", "b", "a", "a", "a"], "qty": [10, 20, 30, 40, 50],
                         "note": ["x", "y", None, None, None]})
    assert_same_rows(t.to_arrow(), expected.cast(t.schema))
    assert_same_rows(pp_read(wh, "db.orders").select(t.schema.names).cast(t.schema), t.to_arrow())
    # upsert by key, then overwrite
    sql(spark, f"INSERT INTO tidelake.`{path}` SELECT 1, 'a', 11, 'x2'")
    assert t.to_arrow().filter(pa.compute.equal(t.to_arrow()["id"], 1))["qty"].to_pylist() == [11]
    sql(spark, f"INSERT OVERWRITE tidelake.`{path}` SELECT id, 'c', 0, NULL FROM staging")
    assert sorted(t.to_arrow()["id"].to_pylist()) == [3, 4, 5] and set(t.to_arrow()["dt"].to_pylist()) == {"c"}
    with pytest.raises(tidelake.InvalidArgumentError, match="columns"):
        sql(spark, f"INSERT INTO tidelake.`{path}` SELECT 1, 'a'")

    # LOCATION 'file:/...' resolves to the path; TIMESTAMP is with time zone, TIMESTAMP_NTZ without
    loc = tmp_path / "located"
    sql(spark, f"CREATE TABLE anything (id BIGINT, at TIMESTAMP, local TIMESTAMP_NTZ) USING tidelake "
               f"LOCATION 'file:{loc}'")
    located = tidelake.open_table(str(loc))
    assert located.schema.field("at").type.tz is not None and located.schema.field("local").type.tz is None


def test_identifiers_of_the_registered_warehouse(spark, tmp_path):
    _, wh = new_warehouse(tmp_path)
    sql(spark, "CREATE TABLE db.kv (k BIGINT, v STRING) USING tidelake TBLPROPERTIES ('primary-key'='k')",
        warehouse=wh)
    tidelake.spark.register(spark, warehouse=wh)
    try:
        sql(spark, "INSERT INTO db.kv VALUES (1, 'a'), (2, 'b')")
        sql(spark, "INSERT INTO db.kv VALUES (2, 'B')")
        assert_same_rows(tidelake.Catalog(wh).get_table("db.kv").to_arrow(),
                         pa.table({"k": pa.array([1, 2], pa.int64()), "v": ["a", "B"]}))
        # the same table through CALL's identifier argument
        assert sql(spark, "CALL sys.create_tag(table => 'db.kv', tag => 'v2')").collect()[0].snapshot_id == 2
        assert tidelake.Catalog(wh).get_table("db.kv").tags()[0].name == "v2"
    finally:
        spark.conf.unset(tidelake.spark.statements.WAREHOUSE_CONF)
    with pytest.raises(tidelake.InvalidArgumentError, match="warehouse"):
        sql(spark, "CREATE TABLE db.other (k BIGINT) USING tidelake")


def test_procedures(spark, tmp_path):
    _, wh = new_warehouse(tmp_path)
    path = f"{wh}/db.db/p"
    sql(spark, f"CREATE TABLE tidelake.`{path}` (k BIGINT, p INT, v STRING) USING tidelake PARTITIONED BY (p) "
               "TBLPROPERTIES ('primary-key'='k,p', 'bucket'='1', 'snapshot.num-retained.min'='1')")
    for i in range(3):
        sql(spark, f"INSERT INTO tidelake.`{path}` SELECT id, cast(id % 2 as int), '{i}' FROM range(6)")
    t = tidelake.open_table(path)
    # compact one partition by Paimon's partitions string (typed against the schema)
    done = sql(spark, f"CALL sys.compact(table => '{path}', partitions => 'p=1')").collect()[0].snapshot_id
    assert t.snapshot(done).commit_kind == "COMPACT"
    levels = {(f["partition"], f["level"]) for f in t.system("files").to_pylist()}
    assert levels == {("{0}", 0), ("{1}", 5)}  # only p=1 compacted (to the top level), p=0 untouched
    tag = sql(spark, f"CALL create_tag('{path}', 'before', 2)").collect()[0]
    assert (tag.tag, tag.snapshot_id) == ("before", 2)
    expired = sql(spark, f"CALL sys.expire_snapshots(table => '{path}', retain_max => 2)").collect()[0]
    assert expired.expired_snapshots >= 1 and len(t.snapshots()) == 2
    sql(spark, f"CALL sys.rollback(table => '{path}', version => 'before')")
    assert t.refresh().latest_snapshot().id == 2
    assert sorted(t.to_arrow()["v"].to_pylist()) == ["1"] * 6
    manifests = len(t.system("manifests"))
    assert sql(spark, f"CALL sys.compact_manifest(table => '{path}')").collect()[0].result is True
    assert t.refresh().latest_snapshot().commit_kind == "COMPACT" and len(t.system("manifests")) < manifests
    assert sql(spark, f"CALL sys.remove_unexisting_files(table => '{path}', dry_run => true)").collect() == []
    rescaled = sql(spark, f"CALL sys.rescale(table => '{path}', bucket_num => 3, partition => 'p=1')").collect()
    assert t.refresh().snapshot(rescaled[0].snapshot_id).commit_kind == "OVERWRITE"
    assert {r["partition"]: r["total_buckets"] for r in t.system("partitions").to_pylist()} == {"p=0": 1, "p=1": 3}
    assert sorted(t.to_arrow()["v"].to_pylist()) == ["1"] * 6
    t.set_option("file-index.bloom-filter.columns", "k")
    rewritten = sql(spark, f"CALL sys.rewrite_file_index(table => '{path}', partitions => 'p=1')").collect()
    assert t.refresh().snapshot(rewritten[0].snapshot_id).commit_kind == "COMPACT"
    assert sql(spark, f"CALL sys.rewrite_file_index('{path}', 'p=1')").collect()[0].snapshot_id is None
    assert sorted(t.to_arrow()["v"].to_pylist()) == ["1"] * 6
    assert sql(spark, f"CALL sys.purge_files(table => '{path}')").collect()[0].result == "Success"
    assert t.refresh().to_arrow().num_rows == 0 and len(t.snapshots()) == 1
    with pytest.raises(tidelake.UnsupportedError, match="migrate_table"):
        sql(spark, f"CALL sys.migrate_table(table => '{path}')")
    with pytest.raises(tidelake.InvalidArgumentError, match="no argument 'bogus'"):
        sql(spark, f"CALL sys.compact(table => '{path}', bogus => 1)")
    # sort compaction: Paimon's own refusals
    with pytest.raises(tidelake.UnsupportedError, match="bucket-unaware append"):
        sql(spark, f"CALL sys.compact(table => '{path}', order_strategy => 'zorder', order_by => 'k,v')")
    with pytest.raises(tidelake.InvalidArgumentError, match="needs order_by"):
        sql(spark, f"CALL sys.compact(table => '{path}', order_strategy => 'zorder')")
    with pytest.raises(tidelake.InvalidArgumentError, match="cannot work with order_by"):
        sql(spark, f"CALL sys.compact(table => '{path}', order_by => 'k')")
    logs = f"{wh}/db.db/logs"
    sql(spark, f"CREATE TABLE tidelake.`{logs}` (a BIGINT, b BIGINT, p INT) USING tidelake PARTITIONED BY (p)")
    for i in range(3):
        sql(spark, f"INSERT INTO tidelake.`{logs}` SELECT (id * 7) % 10, id, {i % 2} FROM range(10)")
    logs_table = tidelake.open_table(logs)
    p0 = {f["file_path"] for f in logs_table.system("files").to_pylist() if f["partition"] == "{0}"}
    sorted_ = sql(spark, f"CALL sys.compact(table => '{logs}', partitions => 'p=1', order_strategy => 'order', "
                         "order_by => 'a')").collect()[0].snapshot_id
    assert logs_table.snapshot(sorted_).commit_kind == "OVERWRITE"
    files = logs_table.system("files").to_pylist()
    assert {f["file_path"] for f in files if f["partition"] == "{0}"} == p0  # untouched
    assert [f["partition"] for f in files].count("{1}") == 1  # p=1 rewritten as one sorted file
    assert logs_table.to_arrow().num_rows == 30


def test_other_statements_go_to_spark(spark, tmp_path):
    assert sql(spark, "SELECT 1 AS one").collect()[0].one == 1
    sql(spark, "CREATE OR REPLACE TEMPORARY VIEW plain AS SELECT 2 AS two")
    assert sql(spark, "SELECT two FROM plain").collect()[0].two == 2
    # a CREATE TABLE with another provider is Spark's
    sql(spark, f"CREATE TABLE pq_t (a INT) USING parquet LOCATION '{tmp_path / 'pq'}'")
    sql(spark, "INSERT INTO pq_t VALUES (7)")
    assert sql(spark, "SELECT a FROM pq_t").collect()[0].a == 7
    sql(spark, "DROP TABLE pq_t")


def test_dml_statements_parse_into_plans_and_are_refused(spark, tmp_path, monkeypatch):
    _, wh = new_warehouse(tmp_path)
    path = f"{wh}/db.db/d"
    sql(spark, f"CREATE TABLE tidelake.`{path}` (id BIGINT, qty INT) USING tidelake TBLPROPERTIES ('primary-key'='id')")
    spark.range(3).selectExpr("id", "'U' AS op", "cast(id AS int) AS qty").createOrReplaceTempView("src")
    seen = []
    monkeypatch.setattr(tidelake.spark.statements.row_level, "run_dml", lambda s, plan: seen.append(plan) or s.range(0))
    sql(spark, f"DELETE FROM tidelake.`{path}` WHERE id > 3 AND qty < 2")
    sql(spark, f"UPDATE tidelake.`{path}` SET qty = qty + 1 WHERE id = 1")
    sql(spark, f"""MERGE INTO tidelake.`{path}` AS t USING src AS s ON t.id = s.id
                   WHEN MATCHED AND s.op = 'D' THEN DELETE
                   WHEN MATCHED THEN UPDATE SET qty = s.qty
                   WHEN NOT MATCHED AND s.qty > 0 THEN INSERT *
                   WHEN NOT MATCHED BY SOURCE THEN DELETE""")
    delete, update, merge = seen
    assert (delete.kind, delete.path, delete.where) == ("delete", path, "id > 3 AND qty < 2")
    assert (update.assignments, update.where) == ({"qty": "qty + 1"}, "id = 1")
    assert (merge.source, merge.source_alias, merge.target_alias, merge.on) == ("SELECT * FROM src", "s", "t",
                                                                               "t.id = s.id")
    assert [(c.kind, c.condition, c.assignments) for c in merge.clauses] == [
        ("matched_delete", "s.op = 'D'", None), ("matched_update", None, {"qty": "s.qty"}),
        ("not_matched_insert", "s.qty > 0", "*"), ("not_matched_by_source_delete", None, None)]
    monkeypatch.undo()
    assert [c.kind for c in tidelake.spark.merge(path, spark.table("src"), on="id").when_matched_update(set="*")
            .when_matched_delete(condition="source.op = 'D'").when_not_matched_insert()
            .when_not_matched_by_source_delete().clauses] == list(spark_dml.CLAUSE_KINDS)[:1] + [
        "matched_delete", "not_matched_insert", "not_matched_by_source_delete"]


def test_dml_statements_run(spark, tmp_path):
    _, wh = new_warehouse(tmp_path)
    path = f"{wh}/db.db/d"
    sql(spark, f"CREATE TABLE tidelake.`{path}` (id BIGINT, qty INT) USING tidelake TBLPROPERTIES ('primary-key'='id')")
    sql(spark, f"INSERT INTO tidelake.`{path}` VALUES (1, 10), (2, 20), (3, 30), (4, 40), (5, 50)")
    model = {1: 10, 2: 20, 3: 30, 4: 40, 5: 50}

    def rows() -> dict[int, int]:
        return {r["id"]: r["qty"] for r in tidelake.open_table(path).to_arrow().to_pylist()}

    out = sql(spark, f"DELETE FROM tidelake.`{path}` AS x WHERE x.id > 4 OR qty < 15").collect()[0]
    model = {k: v for k, v in model.items() if not (k > 4 or v < 15)}
    assert rows() == model and out.rows_deleted == 2 and out.snapshot_id == 2
    sql(spark, f"UPDATE tidelake.`{path}` SET qty = qty + 1 WHERE id = 2")
    model[2] += 1
    assert rows() == model
    spark.createDataFrame([(2, "D", 0), (3, "U", 33), (9, "I", 99), (8, "I", -1)],
                          "id long, op string, qty int").createOrReplaceTempView("changes")
    sql(spark, f"""MERGE INTO tidelake.`{path}` AS t USING changes AS s ON t.id = s.id
                   WHEN MATCHED AND s.op = 'D' THEN DELETE
                   WHEN MATCHED THEN UPDATE SET qty = s.qty + t.qty
                   WHEN NOT MATCHED AND s.qty > 0 THEN INSERT (id, qty) VALUES (s.id, s.qty)
                   WHEN NOT MATCHED BY SOURCE THEN DELETE""")
    assert rows() == {3: 63, 9: 99}  # 2 deleted, 3 updated, 9 inserted, 8 skipped, 4 not in source
    result = (tidelake.spark.merge(path, spark.createDataFrame([(3, 1)], "id long, qty int"), on="id")
              .when_matched_update(set="*").execute())
    assert rows() == {3: 1, 9: 99} and result.rows_updated == 1
    assert_same_rows(pp_read(wh, "db.d", None, schema=tidelake.open_table(path).schema),
                     tidelake.open_table(path).to_arrow())
    with pytest.raises(tidelake.TableNotFoundError):
        tidelake.spark.update(str(tmp_path / "none"), {"qty": "1"})


def test_create_database_in_the_warehouse(spark, tmp_path):
    wh = str(tmp_path / "wh")
    assert sql(spark, "CREATE DATABASE sales", warehouse=wh).collect()[0].database == "sales"
    assert "sales" in tidelake.Catalog(wh).list_databases()
    with pytest.raises(tidelake.TableAlreadyExistsError):
        sql(spark, "CREATE SCHEMA sales", warehouse=wh)
    sql(spark, "CREATE SCHEMA IF NOT EXISTS sales", warehouse=wh)  # no error
    sql(spark, "CREATE TABLE sales.t (k BIGINT) USING tidelake", warehouse=wh)
    assert tidelake.Catalog(wh).get_table("sales.t").schema.names == ["k"]


def test_select_reads_tidelake_tables_with_time_travel_and_system_tables(spark, tmp_path):
    _, wh = new_warehouse(tmp_path)
    tidelake.spark.register(spark, warehouse=wh, check_workers=False)
    try:
        sql(spark, "CREATE TABLE db.kv (k BIGINT, v STRING) USING tidelake TBLPROPERTIES ('primary-key'='k', "
                   "'bucket'='1')")
        sql(spark, "INSERT INTO db.kv VALUES (1, 'a'), (2, 'b')")
        t = tidelake.Catalog(wh).get_table("db.kv")
        t.create_tag("first")
        first = t.latest_snapshot()
        sql(spark, "INSERT INTO db.kv VALUES (2, 'B'), (3, 'c')")
        spark.createDataFrame([(1, "x"), (3, "z")], "k bigint, w string").createOrReplaceTempView("other")

        def rows(text: str) -> list[tuple]:
            return sorted(tuple(r) for r in sql(spark, text).collect())

        assert rows("SELECT k, v FROM db.kv WHERE k > 1") == [(2, "B"), (3, "c")]
        assert rows("SELECT db.kv.k, kv.v FROM db.kv") == [(1, "a"), (2, "B"), (3, "c")]  # its name qualifies
        assert rows("SELECT a.k, a.v, o.w FROM db.kv a JOIN other o ON a.k = o.k") == [(1, "a", "x"), (3, "c", "z")]
        assert rows(f"SELECT * FROM tidelake.`{t.path}` VERSION AS OF {first.id}") == [(1, "a"), (2, "b")]
        assert rows("SELECT * FROM db.kv VERSION AS OF 'first'") == [(1, "a"), (2, "b")]
        at = first.time_millis
        assert rows(f"SELECT * FROM db.kv TIMESTAMP AS OF timestamp_millis({at})") == [(1, "a"), (2, "b")]
        assert rows("WITH c AS (SELECT k FROM db.kv) SELECT count(*) FROM c UNION ALL SELECT 7") == [(3,), (7,)]
        assert rows("SELECT snapshot_id FROM db.`kv$snapshots`") == [(1,), (2,)]
        assert rows("SELECT k FROM other") == [(1,), (3,)]  # no tidelake table: Spark's own
        sql(spark, "CREATE TABLE db.copy (k BIGINT, v STRING) USING tidelake")
        sql(spark, "INSERT INTO db.copy SELECT * FROM db.kv VERSION AS OF 'first' WHERE k > 1")
        assert rows("SELECT * FROM db.copy") == [(2, "b")]
        with pytest.raises(tidelake.TableNotFoundError):
            sql(spark, "SELECT * FROM db.kv VERSION AS OF 99").collect()
    finally:
        spark.conf.unset(tidelake.spark.statements.WAREHOUSE_CONF)


def test_describe_alter_truncate_and_drop(spark, tmp_path):
    _, wh = new_warehouse(tmp_path)
    tidelake.spark.register(spark, warehouse=wh, check_workers=False)
    try:
        sql(spark, "CREATE TABLE db.kv (k BIGINT, v STRING) USING tidelake TBLPROPERTIES ('primary-key'='k')")
        sql(spark, "INSERT INTO db.kv VALUES (1, 'a')")
        assert [tuple(r)[:2] for r in sql(spark, "DESCRIBE TABLE db.kv").collect()] == [
            ("k", "bigint"), ("v", "string")]
        sql(spark, "ALTER TABLE db.kv ADD COLUMNS (score DOUBLE, note STRING)")
        sql(spark, "ALTER TABLE db.kv SET TBLPROPERTIES ('snapshot.num-retained.max' = '50')")
        t = tidelake.Catalog(wh).get_table("db.kv")
        assert t.schema.names == ["k", "v", "score", "note"] and t.options["snapshot.num-retained.max"] == "50"
        assert [tuple(r) for r in sql(spark, "SELECT * FROM db.kv").collect()] == [(1, "a", None, None)]
        sql(spark, "ALTER TABLE db.kv RENAME TO db.kv2")
        assert tidelake.Catalog(wh).list_tables("db") == ["kv2"]
        assert sql(spark, "TRUNCATE TABLE db.kv2").collect()[0].snapshot_id == 2  # schema changes make none
        assert sql(spark, "SELECT count(*) FROM db.kv2").collect()[0][0] == 0
        sql(spark, "ALTER TABLE db.kv2 ALTER COLUMN note COMMENT 'x'")
        assert tidelake.Catalog(wh).get_table("db.kv2").schema.field("note").metadata[b"description"] == b"x"
        with pytest.raises(tidelake.UnsupportedError, match="ALTER COLUMN"):
            sql(spark, "ALTER TABLE db.kv2 ADD CONSTRAINT positive CHECK (k > 0)")
        assert sql(spark, "DROP TABLE db.kv2").collect()[0].dropped
        assert sql(spark, "DROP TABLE IF EXISTS db.kv2").collect()[0].dropped is False
        assert tidelake.Catalog(wh).list_tables("db") == []
    finally:
        spark.conf.unset(tidelake.spark.statements.WAREHOUSE_CONF)


def test_a_table_spark_does_not_find_gets_a_hint_without_a_warehouse(spark):
    with pytest.raises(tidelake.TableNotFoundError, match="TABLE_OR_VIEW_NOT_FOUND.*tidelake.spark.register"):
        sql(spark, "SELECT * FROM nodb.nothing")
