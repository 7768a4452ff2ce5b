"""Column moves, nullability and comments (Paimon's ``updateColumnPosition``,
``updateColumnNullability``, ``updateColumnComment``): the same changes made by Java and by
tidelake give the same schema (field ids, order, types with their nullability, comments), and
each engine reads what the other wrote across them, every snapshot and change."""

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
    assert t.refresh().to_arrow().to_pylist() == [{"b": 7, "k": 1, "a": "x"}]
