"""The system tables ``$ro``, ``$binlog``, ``$aggregation_fields``, ``$statistics``,
``$table_indexes`` and ``$file_key_ranges`` and the global ``sys.all_table_options``, against
Java Paimon 1.3.1 (the ``java`` oracle's ``system_table`` job reads them through Java's catalog;
``$file_key_ranges``, added after 1.3.1, against the same columns of Java's ``$files``).

Each table is written once by Java's writers and once by tidelake's (into a table Java
created); both readers then read the same files, so rows must be equal as they are: file names,
sizes and counts included. Column names, order, types and nullability must be Java's (compared
as Java prints types). The only normalization: ``all_table_options``' ``path`` value, which Java
prints as a URI (``file:/...``) and tidelake as the location it was opened with.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import JavaOracle, Scenario, java_write, tidelake_write
from _peers import canonical_rows, sorted_rows, with_sorted_maps

KV = [("k", "INT NOT NULL"), ("p", "STRING"), ("v", "BIGINT"), ("s", "STRING")]


def _kv_rows(n: int, start: int = 0, salt: str = "") -> list[list]:
    return [[i, f"p{i % 2}", i * 10 + start, f"{salt}{i}"] for i in range(start, start + n)]


def _levels_steps() -> list[dict]:
    """Rows fully compacted to the top level, then upserts and deletes that stay below it."""
    return [
        {"rows": _kv_rows(8)},
        {"rows": _kv_rows(6, 4, "u")},
        {"rows": [{"kind": "-D", "values": [1, "p1", 0, ""]}]},
        {"compact": True},
        {"rows": _kv_rows(3, 0, "w")},
        {"rows": [{"kind": "-D", "values": [4, "p0", 0, ""]}]},
        {"rows": _kv_rows(2, 10, "y")},
    ]


SCENARIOS = [
    Scenario("pk_levels", KV, _levels_steps(), primary_keys=["k", "p"], partition_keys=["p"],
             options={"bucket": "2"}),
    Scenario("pk_dv", KV, _levels_steps(), primary_keys=["k", "p"], partition_keys=["p"],
             options={"bucket": "1", "deletion-vectors.enabled": "true"}),
    Scenario("pk_dynamic", KV, _levels_steps(), primary_keys=["k"], options={"bucket": "-1"}),
    Scenario("append_parts", KV, [{"rows": _kv_rows(5)}, {"rows": _kv_rows(4, 5, "b")}],
             partition_keys=["p"], mode="batch"),
    Scenario("agg", [("k", "INT NOT NULL"), ("total", "BIGINT"), ("top", "INT"), ("last", "STRING")], [
        {"rows": [[1, 5, 3, "a"], [2, 1, 1, "b"]]},
        {"rows": [[1, 7, 9, None], [3, 2, 2, "c"]]},
        {"compact": True},
        {"rows": [[1, -2, 4, "z"]]},
    ], primary_keys=["k"], options={"bucket": "1", "merge-engine": "aggregation",
                                     "fields.total.aggregate-function": "sum",
                                     "fields.top.aggregate-function": "max",
                                     "fields.last.aggregate-function": "last_non_null_value"}),
]

NAMES = ["ro", "binlog", "aggregation_fields", "statistics", "table_indexes"]


def paimon_type(t: pa.DataType, nullable: bool) -> str:
    """An Arrow type of these tables as Java prints the Paimon type (``asSQLString``)."""
    simple = {pa.string(): "STRING", pa.int32(): "INT", pa.int64(): "BIGINT", pa.int8(): "TINYINT",
              pa.timestamp("ms"): "TIMESTAMP(3)"}
    if t in simple:
        text = simple[t]
    elif pa.types.is_list(t):
        text = f"ARRAY<{paimon_type(t.value_type, t.value_field.nullable)}>"
    elif pa.types.is_struct(t):
        text = "ROW<" + ", ".join(f"`{f.name}` {paimon_type(f.type, f.nullable)}" for f in t) + ">"
    else:
        raise AssertionError(f"no Paimon type for {t}")
    return text if nullable else f"{text} NOT NULL"


def java_system_table(java: JavaOracle, warehouse: str, identifier: str) -> dict[str, Any]:
    return java.run({"op": "system_table", "warehouse": warehouse, "table": identifier})


def assert_same_as_java(java: JavaOracle, warehouse: str, identifier: str, ours: pa.Table) -> list[str]:
    """Our rows and columns equal Java's; returns the rows (sorted canonical JSON)."""
    theirs = java_system_table(java, warehouse, identifier)
    assert ours.column_names == theirs["fields"], identifier
    assert [paimon_type(f.type, f.nullable) for f in ours.schema] == theirs["types"], identifier
    want = sorted_rows([[with_sorted_maps(v, f.type) for v, f in zip(r, ours.schema)] for r in theirs["rows"]])
    got = sorted_rows(canonical_rows(ours))
    assert got == want, identifier
    return got


@pytest.mark.parametrize("writer", ["java", "tidelake"])
@pytest.mark.parametrize("sc", SCENARIOS, ids=lambda s: s.name)
def test_system_tables_equal_javas(java, tmp_path, sc, writer):
    wh = str(tmp_path / "wh")
    t = (java_write if writer == "java" else tidelake_write)(java, wh, sc)
    java.run({"op": "analyze", "warehouse": wh, "table": f"db.{sc.name}", "statistics": {
        "mergedRecordCount": 7, "mergedRecordSize": 420,
        "colStats": {"k": {"colId": 0, "distinctCount": 7, "min": "0", "max": "11", "nullCount": 0,
                           "avgLen": 4, "maxLen": 4}}}})
    t = tidelake.Catalog(wh).get_table(f"db.{sc.name}")
    rows = {name: assert_same_as_java(java, wh, f"db.{sc.name}${name}", t.system(name)) for name in NAMES}
    # the cases are real: each table has rows where the scenario makes them
    assert rows["ro"] and rows["binlog"] and rows["aggregation_fields"] and rows["statistics"]
    assert bool(rows["table_indexes"]) == (sc.name in ("pk_dv", "pk_dynamic"))
    if sc.primary_keys:
        # rows written after the full compaction are not read-optimized yet
        assert rows["ro"] != sorted_rows(canonical_rows(t.to_arrow()))
    # $file_key_ranges (Paimon 2.0's, after 1.3.1) is Java 1.3.1's $files in its own columns, and
    # first_row_id (Paimon 2.0's, null without row tracking)
    ranges = t.system("file_key_ranges")
    assert ranges.column_names[-1] == "first_row_id" and ranges["first_row_id"].null_count == ranges.num_rows
    ranges = ranges.drop_columns(["first_row_id"])
    files = java_system_table(java, wh, f"db.{sc.name}$files")
    kept = [files["fields"].index(c) for c in ranges.column_names]
    assert [paimon_type(f.type, f.nullable) for f in ranges.schema] == [files["types"][i] for i in kept]
    assert sorted_rows(canonical_rows(ranges)) == sorted_rows([[r[i] for i in kept] for r in files["rows"]])
    assert ranges.num_rows == len(files["rows"]) > 0


def test_read_optimized_sees_only_compacted_rows(tmp_path):
    t = tidelake.create_table(str(tmp_path / "t"), pa.schema([pa.field("k", pa.int32(), nullable=False),
                                                              ("v", pa.string())]),
                              primary_keys=["k"], bucket=1)
    t.write(pa.table({"k": pa.array([1, 2], pa.int32()), "v": ["a", "b"]}))
    assert t.system("ro").num_rows == 0  # level 0 only
    t.compact(full=True)
    t.write(pa.table({"k": pa.array([2, 3], pa.int32()), "v": ["B", "c"]}))
    assert sorted(t.system("ro").to_pylist(), key=lambda r: r["k"]) == [{"k": 1, "v": "a"}, {"k": 2, "v": "b"}]
    t.compact(full=True)
    assert sorted(r["v"] for r in t.system("ro").to_pylist()) == ["B", "a", "c"]


def test_all_table_options_equal_javas(java, tmp_path):
    wh = str(tmp_path / "wh")
    for sc in SCENARIOS[3:]:
        java_write(java, wh, sc)
    tidelake.Catalog(wh).create_database("other")
    tidelake.Catalog(wh).create_table("other.t2", pa.schema([("a", pa.int32())]), options={"file.format": "orc"})
    ours = tidelake.Catalog(wh).system_table("sys.all_table_options")
    theirs = java_system_table(java, wh, "sys.all_table_options")
    assert ours.column_names == theirs["fields"]
    assert [paimon_type(f.type, f.nullable) for f in ours.schema] == theirs["types"]

    def unify(rows: list[list[Any]]) -> list[str]:
        return sorted_rows([[d, t, k, v.removeprefix("file:") if k == "path" else v] for d, t, k, v in rows])

    got = unify(canonical_rows(ours))
    assert got == unify(theirs["rows"])
    assert any('"other", "t2", "file.format", "orc"' in r for r in got)
    # the SQL front-end reaches it as sys.all_table_options
    counted = tidelake.sql("SELECT count(*) AS n FROM sys.all_table_options", warehouse=wh)
    assert counted["n"].to_pylist() == [len(got)]


def test_new_system_tables_through_spark_sql_and_the_cli(spark, tmp_path):
    import json

    from click.testing import CliRunner

    import tidelake.spark
    from tidelake import cli

    wh = str(tmp_path / "wh")
    t = tidelake.Catalog(wh)
    t.create_database("db")
    kv = t.create_table("db.kv", pa.schema([pa.field("k", pa.int32(), nullable=False), ("v", pa.int64())]),
                        primary_keys=["k"], bucket=1)
    kv.write(pa.table({"k": pa.array([1, 2], pa.int32()), "v": [10, 20]}))
    kv.compact(full=True)
    kv.write(pa.table({"k": pa.array([2, 3], pa.int32()), "v": [21, 30]}))
    tidelake.spark.register(spark, warehouse=wh, check_workers=False)
    try:
        rows = sorted(tuple(r) for r in tidelake.spark.sql(spark, "SELECT * FROM db.`kv$ro`").collect())
        assert rows == [(1, 10), (2, 20)]
        binlog = sorted((r["rowkind"], list(r["k"])) for r in tidelake.spark.sql(
            spark, "SELECT rowkind, k FROM db.`kv$binlog`").collect())
        assert binlog == [("+I", [1]), ("+I", [2]), ("+I", [3])]
        options = tidelake.spark.sql(spark, "SELECT key FROM sys.all_table_options WHERE table_name = 'kv'")
        assert {r["key"] for r in options.collect()} >= {"bucket", "path"}
    finally:
        spark.conf.unset(tidelake.spark.statements.WAREHOUSE_CONF)
    result = CliRunner().invoke(cli.main, ["system", kv.path, "ro", "--json"], prog_name="tidelake")
    assert result.exit_code == 0, result.output
    assert sorted(r["k"] for r in json.loads(result.stdout)) == [1, 2]
