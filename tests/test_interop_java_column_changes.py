"""Column moves, nullability, comments and default values (Paimon's ``updateColumnPosition``,
``updateColumnNullability``, ``updateColumnComment``, ``updateColumnDefaultValue``): the same
changes made by Java and by tidelake give the same schema (field ids, order, types with their
nullability, comments, defaults), and each engine reads what the other wrote across them, every
snapshot and change; a null written to a column with a default is stored as the default by both."""

from __future__ import annotations

import json
import os
from typing import Any

import pyarrow as pa
import pytest

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import JavaError, Scenario, compare_all, java_write, tidelake_write

FIELDS = [("k", "INT NOT NULL"), ("a", "STRING"), ("b", "BIGINT"), ("c", "DOUBLE")]
STEPS: list[dict[str, Any]] = [
    {"rows": [[1, "a1", 10, 1.5], [2, None, 20, None]]},
    {"alter": [{"move": "c"}]},  # c, k, a, b
    {"rows": [[2.5, 3, "a3", 30]]},
    {"alter": [{"move": "a", "after": "b"}]},  # c, k, b, a
    {"rows": [[3.5, 1, 11, "a1x"]]},
    {"alter": [{"nullable": "b", "value": False}, {"comment": "a", "value": "the a column"}]},
    {"rows": [[4.5, 4, 40, "a4"], [None, 2, 21, None]]},
    {"alter": [{"default": "a", "value": "'fallback'"}, {"default": "c", "value": "0.5"}]},
    {"rows": [[None, 5, 50, None], [6.5, 6, 60, "given"]]},  # both engines store the defaults
]
OPTIONS = {"bucket": "1", "alter-column-null-to-not-null.disabled": "false"}


def _scenario(name: str) -> Scenario:
    return Scenario(name, FIELDS, STEPS, primary_keys=["k"], options=OPTIONS)


def _latest_schema(t: tidelake.Table) -> dict[str, Any]:
    schema_dir = os.path.join(t.path, "schema")
    latest = max(os.listdir(schema_dir), key=lambda n: int(n.rsplit("-", 1)[1]))
    with open(os.path.join(schema_dir, latest)) as f:
        return json.load(f)


def test_column_changes_match_java_both_ways(java, tmp_path):
    wh = str(tmp_path)
    by_java = java_write(java, wh, _scenario("by_java"))
    by_tidelake = tidelake_write(java, wh, _scenario("by_tidelake"))
    theirs, ours = _latest_schema(by_java), _latest_schema(by_tidelake)
    assert [f["name"] for f in ours["fields"]] == ["c", "k", "b", "a"]
    assert ours["fields"] == theirs["fields"] and ours["highestFieldId"] == theirs["highestFieldId"]
    assert by_tidelake.schema.field("b").nullable is False
    assert by_tidelake.schema.field("a").metadata[b"description"] == b"the a column"
    compare_all(java, by_java, wh, "column changes, Java wrote")
    compare_all(java, by_tidelake, wh, "column changes, tidelake wrote")
    for t in (by_java, by_tidelake):
        row = [r for r in t.to_arrow().to_pylist() if r["k"] == 5]
        assert row == [{"c": 0.5, "k": 5, "b": 50, "a": "fallback"}]


def test_defaults_fill_nulls_and_missing_columns(tmp_path):
    t = _table(tmp_path).update_column_default("a", "'none given'").update_column_default("b", 42)
    t.write(pa.table({"k": pa.array([2, 3], pa.int32()), "a": [None, "x"], "b": pa.array([None, 1], pa.int64())}))
    t.write(pa.table({"k": pa.array([4], pa.int32())}))  # a and b not given: their defaults
    rows = {r["k"]: (r["a"], r["b"]) for r in t.to_arrow().to_pylist()}
    assert rows == {1: ("x", 7), 2: ("none given", 42), 3: ("x", 1), 4: ("none given", 42)}
    with pytest.raises(tidelake.SchemaMismatchError, match="default value `abc` of column 'b'"):
        t.update_column_default("b", "abc")
    t = t.update_column_default("b", None)
    t.write(pa.table({"k": pa.array([5], pa.int32()), "a": ["y"], "b": pa.array([None], pa.int64())}))
    assert [r["b"] for r in t.to_arrow().to_pylist() if r["k"] == 5] == [None]


def _table(tmp_path, **options: str) -> tidelake.Table:
    cat = tidelake.Catalog(str(tmp_path))
    cat.create_database("db")
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), ("a", pa.string()), ("b", pa.int64())])
    t = cat.create_table("db.t", schema, primary_keys=["k"], bucket=1, options=options)
    t.write(pa.table({"k": pa.array([1], pa.int32()), "a": ["x"], "b": pa.array([7], pa.int64())}, schema=schema))
    return t


def test_refusals_name_the_problem_and_change_nothing(java, tmp_path):
    t = _table(tmp_path)
    schema_id = _latest_schema(t)["id"]
    with pytest.raises(tidelake.UnsupportedError, match="alter-column-null-to-not-null.disabled"):
        t.update_column_nullability("a", False)  # Java refuses it by default too
    with pytest.raises(tidelake.InvalidArgumentError, match="primary key column 'k'"):
        t.update_column_nullability("k", True)
    with pytest.raises(tidelake.InvalidArgumentError, match="already first"):
        t.move_column("k", first=True)
    with pytest.raises(tidelake.InvalidArgumentError, match="'nope' does not exist"):
        t.move_column("a", after="nope")
    with pytest.raises(tidelake.InvalidArgumentError, match="exactly one"):
        t.move_column("a")
    assert _latest_schema(t.refresh())["id"] == schema_id
    job = {**Scenario("t", [], [{"alter": [{"nullable": "a", "value": False}]}]).java_job(str(tmp_path)),
           "existing": True}
    with pytest.raises(JavaError, match="nullable to non nullable"):
        java.run(job)


def test_spark_sql_alter_column(spark, tmp_path):
    import tidelake.spark

    t = _table(tmp_path, **{"alter-column-null-to-not-null.disabled": "false"})
    for stmt in (f"ALTER TABLE tidelake.`{t.path}` ALTER COLUMN b FIRST",
                 f"ALTER TABLE tidelake.`{t.path}` ALTER COLUMN a AFTER k",
                 f"ALTER TABLE tidelake.`{t.path}` ALTER COLUMN a COMMENT 'said'",
                 f"ALTER TABLE tidelake.`{t.path}` ALTER COLUMN b SET NOT NULL"):
        tidelake.spark.sql(spark, stmt)
    fields = _latest_schema(t)["fields"]
    assert [f["name"] for f in fields] == ["b", "k", "a"]
    assert fields[2].get("description") == "said" and fields[0]["type"] == "BIGINT NOT NULL"
    tidelake.spark.sql(spark, f"ALTER TABLE tidelake.`{t.path}` ALTER COLUMN b DROP NOT NULL")
    assert _latest_schema(t)["fields"][0]["type"] == "BIGINT"
    tidelake.spark.sql(spark, f"ALTER TABLE tidelake.`{t.path}` ALTER COLUMN a SET DEFAULT 'dflt'")
    assert _latest_schema(t)["fields"][2]["defaultValue"] == "'dflt'"
    tidelake.spark.sql(spark, f"ALTER TABLE tidelake.`{t.path}` ALTER COLUMN a DROP DEFAULT")
    assert "defaultValue" not in _latest_schema(t)["fields"][2]
    assert t.refresh().to_arrow().to_pylist() == [{"b": 7, "k": 1, "a": "x"}]
