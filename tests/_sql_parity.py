"""The Spark SQL parity statements of ``tidelake.spark.sql`` as one script, run on the local
SparkSession (``tests/test_spark_sql_parity.py``) and by the standalone cluster's driver
(``tests/test_spark_cluster.py``), whose answers must be the same.

The script covers every statement class of the parity list (issue #32 item 3): CREATE, INSERT
and INSERT OVERWRITE, SELECT with joins, CTEs, IN / EXISTS / scalar subqueries, by catalog name
and by path; VERSION AS OF (id and tag); system tables; CTAS, REPLACE TABLE AS SELECT; ALTER
TABLE (add / rename / drop / widen, SET / UNSET TBLPROPERTIES); SHOW TABLES, SHOW CREATE TABLE,
SHOW PARTITIONS, DESCRIBE; DELETE / UPDATE / MERGE INTO; CALL procedures (tags, branches,
compact, expire, rollback); TRUNCATE and DROP. Answers hold nothing that differs between two
runs (no commit times; the warehouse path written ``<warehouse>``): each statement's rows,
sorted, as JSON-able lists.
"""

from __future__ import annotations

from typing import Any

STATEMENTS = [
    "CREATE DATABASE IF NOT EXISTS shop",
    "CREATE TABLE shop.orders (id BIGINT, customer BIGINT, qty INT, dt STRING) USING tidelake PARTITIONED BY (dt) "
    "TBLPROPERTIES ('primary-key' = 'id,dt', 'bucket' = '2')",
    "CREATE TABLE shop.customers (cid BIGINT, name STRING) USING tidelake",
    "INSERT INTO shop.orders VALUES (1, 10, 5, 'd1'), (2, 20, 7, 'd1'), (3, 10, 1, 'd2')",
    "INSERT INTO shop.customers VALUES (10, 'ann'), (20, 'bob'), (30, 'cy')",
    "CALL sys.create_tag(table => 'shop.orders', tag => 'v1', snapshot => 1)",
    "INSERT INTO shop.orders VALUES (2, 20, 70, 'd1'), (4, 30, 2, 'd2')",
    "SELECT * FROM shop.orders",
    "SELECT c.name, sum(o.qty) FROM shop.orders o JOIN shop.customers c ON o.customer = c.cid GROUP BY c.name",
    "WITH big AS (SELECT * FROM shop.orders WHERE qty > 4) SELECT id FROM big",
    "SELECT name FROM shop.customers WHERE cid IN (SELECT customer FROM shop.orders WHERE dt = 'd2')",
    "SELECT (SELECT max(qty) FROM shop.orders) AS m",
    "SELECT name FROM shop.customers c WHERE NOT EXISTS (SELECT 1 FROM shop.orders o WHERE o.customer = c.cid)",
    "SELECT * FROM shop.orders VERSION AS OF 1",
    "SELECT * FROM shop.orders VERSION AS OF 'v1' WHERE dt = 'd1'",
    "SELECT snapshot_id, commit_kind FROM shop.`orders$snapshots`",
    "SELECT tag_name, snapshot_id FROM shop.`orders$tags`",
    "SELECT partition, record_count FROM shop.`orders$partitions`",
    "CREATE TABLE shop.big USING tidelake PARTITIONED BY (dt) TBLPROPERTIES ('primary-key' = 'id,dt', "
    "'bucket' = '1') AS SELECT * FROM shop.orders WHERE qty > 1",
    "SELECT * FROM shop.big",
    "REPLACE TABLE shop.big USING tidelake AS SELECT id, qty * 2 AS q2 FROM shop.orders",
    "SELECT * FROM shop.big",
    "ALTER TABLE shop.orders ADD COLUMN note STRING COMMENT 'free text' AFTER qty",
    "ALTER TABLE shop.orders ADD COLUMNS (e INT, f STRING)",
    "ALTER TABLE shop.orders RENAME COLUMN f TO g",
    "ALTER TABLE shop.orders DROP COLUMNS (e, g)",
    "ALTER TABLE shop.orders ALTER COLUMN qty TYPE BIGINT",
    "ALTER TABLE shop.orders SET TBLPROPERTIES ('snapshot.num-retained.max' = '50', 'write-buffer-size' = '64 mb')",
    "ALTER TABLE shop.orders UNSET TBLPROPERTIES ('write-buffer-size')",
    "DESCRIBE TABLE shop.orders",
    "SHOW TBLPROPERTIES shop.orders ('snapshot.num-retained.max')",
    "SHOW PARTITIONS shop.orders",
    "SHOW TABLES IN shop",
    "SHOW CREATE TABLE shop.customers",
    "UPDATE shop.orders SET note = 'big' WHERE qty > 6",
    "DELETE FROM shop.orders WHERE id = 3",
    "MERGE INTO shop.orders t USING (SELECT 4 AS id, 30 AS customer, 9 AS qty, 'd2' AS dt UNION ALL "
    "SELECT 5, 10, 1, 'd2') s ON t.id = s.id AND t.dt = s.dt "
    "WHEN MATCHED THEN UPDATE SET qty = s.qty WHEN NOT MATCHED THEN INSERT (id, customer, qty, dt) "
    "VALUES (s.id, s.customer, s.qty, s.dt)",
    "SELECT id, customer, qty, note, dt FROM shop.orders",
    "SELECT count(*) FROM shop.orders VERSION AS OF 'v1'",
    "CALL sys.create_branch(table => 'shop.orders', branch => 'dev', tag => 'v1')",
    "CALL sys.compact(table => 'shop.orders')",
    "SELECT commit_kind FROM shop.`orders$snapshots` ORDER BY snapshot_id DESC LIMIT 1",
    "CALL sys.expire_snapshots(table => 'shop.orders', retain_max => 2, retain_min => 1)",
    "SELECT count(*) FROM shop.`orders$snapshots`",
    "CALL sys.rollback(table => 'shop.orders', version => 'v1')",
    "SELECT id, qty FROM shop.orders",
    "CALL sys.delete_tag(table => 'shop.orders', tag => 'v1')",
    "CALL sys.delete_branch(table => 'shop.orders', branch => 'dev')",
    "INSERT OVERWRITE shop.customers SELECT 40, 'dee'",
    "SELECT * FROM shop.customers",
    "TRUNCATE TABLE shop.orders",
    "SELECT count(*) FROM shop.orders",
    "DROP TABLE shop.big",
    "SHOW TABLES IN shop",
]
"""The script, in order; each statement's answer is compared."""


def _plain(value: Any, warehouse: str) -> Any:
    """A JSON-able form of one Spark value (rows, lists and maps of plain values), with the
    warehouse's path written ``<warehouse>``."""
    if isinstance(value, (list, tuple)):
        return [_plain(v, warehouse) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v, warehouse) for k, v in sorted(value.items())}
    if isinstance(value, str):
        return value.replace(warehouse, "<warehouse>")
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    return str(value)


def run(spark: Any, warehouse: str) -> list[list[Any]]:
    """Run :data:`STATEMENTS` with ``db.table`` names in the filesystem catalog at ``warehouse``
    (created empty by the caller); each statement's rows (sorted), in order."""
    import tidelake.spark
    from tidelake.spark.statements import CATALOG_CONF

    tidelake.spark.register(spark, catalog={"metastore": "filesystem", "warehouse": warehouse},
                            check_workers=False)
    answers = []
    try:
        for statement in STATEMENTS:
            rows = [_plain(list(r), warehouse) for r in tidelake.spark.sql(spark, statement).collect()]
            answers.append(sorted(rows, key=repr))
    finally:
        spark.conf.unset(CATALOG_CONF)
    return answers
