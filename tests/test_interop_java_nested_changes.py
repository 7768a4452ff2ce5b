"""Changes to fields nested in ROW columns (Paimon's ``SchemaChange``s with a ``fieldNames`` path):
add (first / after a sibling), rename, drop, widen, comment, through a struct, a list's
``element`` and a map's ``value``. The same changes made by Java and by tidelake give the same
schema (field ids, ``highestFieldId``, order, types, comments), and each engine reads what the
other wrote before and after every change, in Parquet and Avro: a renamed field keeps its data, a
dropped one is gone, an added one reads null, a widened one is cast; in ORC too (files matched by
field name within each file's own schema, as Java reads them)."""

from __future__ import annotations

import json
import os
from typing import Any

import pyarrow as pa
import pytest

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import JavaError, Scenario, compare_all, java_write, tidelake_write
from _rest import rest_server  # noqa: F401  (a fresh Paimon REST server, a fixture)


def _row(*fields: tuple[str, Any]) -> dict[str, Any]:
    return {"type": "ROW", "fields": [{"id": i, "name": n, "type": t} for i, (n, t) in enumerate(fields)]}


FIELDS = [
    ("k", "INT NOT NULL"),
    ("s", _row(("a", "INT"), ("b", "FLOAT"), ("c", "STRING"))),
    ("l", {"type": "ARRAY", "element": _row(("x", "INT"))}),
    ("m", {"type": "MAP", "key": "STRING NOT NULL", "value": "INT"}),
]
STEPS: list[dict[str, Any]] = [
    {"rows": [[1, [10, 1.5, "c1"], [[1], [2]], [["p", 1]]], [2, None, None, None], [3, [None, 2.5, None], [], []]]},
    {"alter": [{"add": ["s", "d"], "type": "BIGINT", "arrow": pa.int64(), "after": "a"},
               {"rename": ["s", "c"], "to": "c2"},
               {"add": ["l", "element", "y"], "type": "STRING", "arrow": pa.string()}]},
    # s: a, d, b, c2; l: ROW<x, y>
    {"rows": [[4, [40, 400, 4.5, "c4"], [[4, "y4"]], [["q", 4]]]]},
    {"alter": [{"update_type": ["s", "a"], "type": "BIGINT", "arrow": pa.int64()},
               {"update_type": ["s", "b"], "type": "DOUBLE", "arrow": pa.float64()},
               {"drop": ["s", "c2"]},
               {"add": ["s", "e"], "type": "STRING", "arrow": pa.string(), "first": True},
               {"update_type": ["l", "element", "x"], "type": "BIGINT", "arrow": pa.int64()},
               {"update_type": ["m", "value"], "type": "BIGINT", "arrow": pa.int64()}]},
    # s: e, a BIGINT, d, b DOUBLE
    {"rows": [[5, ["e5", 5000000000, 50, 5.5], [[5000000000, None]], [["r", 5000000000]]],
              [1, ["e1", 11, None, 1.25], [[11, "y11"]], [["p", 11]]]]},
    {"alter": [{"comment": ["s", "a"], "value": "the a field"}, {"rename": ["s", "e"], "to": "e2"}]},
    {"rows": [[6, ["e6", 6, 60, 6.5], None, [["s", 6]]]]},
    {"compact": True},
]
FORMATS = ["parquet", "orc", "avro"]
WRITTEN = FORMATS  # formats tidelake writes ROW columns in


def _scenario(name: str, file_format: str, rows: bool = True) -> Scenario:
    steps = STEPS if rows else [s for s in STEPS if "alter" in s]
    return Scenario(name, FIELDS, steps, primary_keys=["k"], options={"bucket": "1", "file.format": file_format})


def _latest_schema(t: tidelake.Table) -> dict[str, Any]:
    schema_dir = os.path.join(t.path, "schema")
    latest = max(os.listdir(schema_dir), key=lambda n: int(n.rsplit("-", 1)[1]))
    with open(os.path.join(schema_dir, latest)) as f:
        return json.load(f)


@pytest.mark.parametrize("file_format", FORMATS)
def test_nested_changes_match_java_both_ways(java, tmp_path, file_format):
    wh = str(tmp_path)
    by_java = java_write(java, wh, _scenario("by_java", file_format))
    written = file_format in WRITTEN
    by_tidelake = tidelake_write(java, wh, _scenario("by_tidelake", file_format, rows=written))
    theirs, ours = _latest_schema(by_java), _latest_schema(by_tidelake)
    assert ours["fields"] == theirs["fields"] and ours["highestFieldId"] == theirs["highestFieldId"]
    s = next(f for f in ours["fields"] if f["name"] == "s")["type"]["fields"]
    assert [(f["name"], f["type"]) for f in s] == [("e2", "STRING"), ("a", "BIGINT"), ("d", "BIGINT"),
                                                   ("b", "DOUBLE")]
    assert s[1]["description"] == "the a field"
    compare_all(java, by_java, wh, f"nested changes ({file_format}), Java wrote")
    if written:
        compare_all(java, by_tidelake, wh, f"nested changes ({file_format}), tidelake wrote")
    for t in (by_java, by_tidelake) if written else (by_java,):
        rows = {r["k"]: r for r in t.to_arrow().to_pylist()}
        assert rows[3]["s"] == {"e2": None, "a": None, "d": None, "b": 2.5}  # c dropped, d and e added
        assert rows[4]["s"] == {"e2": None, "a": 40, "d": 400, "b": 4.5}
        assert rows[4]["l"] == [{"x": 4, "y": "y4"}] and rows[2]["s"] is None
        assert rows[1]["s"] == {"e2": "e1", "a": 11, "d": None, "b": 1.25}
        assert rows[5]["m"] == [("r", 5000000000)]


def _table(tmp_path, file_format: str = "parquet", catalog: tidelake.Catalog | None = None,
           **options: str) -> tidelake.Table:
    cat = catalog or tidelake.Catalog(str(tmp_path))
    cat.create_database("db", ignore_if_exists=True)
    s = pa.struct([("a", pa.int32()), ("b", pa.float32())])
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), ("s", s),
                        ("l", pa.list_(pa.field("element", pa.struct([("x", pa.int32())]))))])
    t = cat.create_table(f"db.t_{file_format}", schema, primary_keys=["k"], bucket=1,
                         options={"file.format": file_format, **options})
    t.write(pa.table({"k": pa.array([1, 2], pa.int32()), "s": pa.array([{"a": 1, "b": 0.5}, None], s),
                      "l": pa.array([[{"x": 7}], None], schema.field("l").type)}, schema=schema))
    return t


@pytest.mark.parametrize("file_format", WRITTEN)
def test_old_files_read_through_nested_ids(tmp_path, file_format):
    t = _table(tmp_path, file_format)
    t = (t.rename_column(["s", "a"], "a2").add_column(["s", "c"], pa.string(), first=True)
         .update_column_type(("s", "b"), pa.float64()).add_column(["l", "element", "y"], pa.int64(), after="x")
         .update_column_type(["l", "element", "x"], pa.int64()))
    assert t.schema.field("s").type == pa.struct([("c", pa.string()), ("a2", pa.int32()), ("b", pa.float64())])
    assert t.to_arrow().sort_by("k").to_pylist() == [
        {"k": 1, "s": {"c": None, "a2": 1, "b": 0.5}, "l": [{"x": 7, "y": None}]},
        {"k": 2, "s": None, "l": None}]
    t = t.drop_column(["s", "a2"])
    t.write(pa.table({"k": pa.array([3], pa.int32()), "s": pa.array([{"c": "z", "b": 2.0}], t.schema.field("s").type),
                      "l": pa.array([[{"x": 2**40, "y": 9}]], t.schema.field("l").type)}, schema=t.schema))
    assert t.to_arrow().sort_by("k").to_pylist() == [
        {"k": 1, "s": {"c": None, "b": 0.5}, "l": [{"x": 7, "y": None}]},
        {"k": 2, "s": None, "l": None},
        {"k": 3, "s": {"c": "z", "b": 2.0}, "l": [{"x": 2**40, "y": 9}]}]
    t.compact(full=True)
    assert len(t.refresh().to_arrow()) == 3


def test_nested_refusals_name_the_problem(java, tmp_path):
    t = _table(tmp_path)
    schema_id = _latest_schema(t)["id"]
    with pytest.raises(tidelake.SchemaMismatchError, match="cannot change column 's.a' from INT to SMALLINT"):
        t.update_column_type(["s", "a"], pa.int16())
    with pytest.raises(tidelake.InvalidArgumentError, match="'s.a' already exists"):
        t.add_column(["s", "a"], pa.int32())
    with pytest.raises(tidelake.InvalidArgumentError, match="column 's.q' does not exist; fields of 's' are a, b"):
        t.rename_column(["s", "q"], "r")
    with pytest.raises(tidelake.InvalidArgumentError, match="'k' is a partition or primary key column"):
        t.add_column(["k", "z"], pa.int32())
    with pytest.raises(tidelake.InvalidArgumentError, match="last field of its ROW"):
        t.drop_column(["l", "element", "x"])
    with pytest.raises(tidelake.InvalidArgumentError, match="the step into 'l' is 'element'"):
        t.drop_column(["l", "x"])
    with pytest.raises(tidelake.InvalidArgumentError, match="takes one name"):
        t.move_column(["s", "a"], first=True)  # type: ignore[arg-type]  # Paimon moves top-level columns only
    with pytest.raises(tidelake.InvalidArgumentError, match="a column is a name or a non-empty list"):
        t.drop_column([])
    assert _latest_schema(t.refresh())["id"] == schema_id
    job = {**Scenario("t_parquet", [], [{"alter": [{"drop": ["l", "element", "x"]}]}]).java_job(str(tmp_path)),
           "existing": True}
    with pytest.raises(JavaError, match="Cannot drop all fields"):
        java.run(job)


def test_spark_sql_nested_columns(spark, tmp_path):
    import tidelake.spark

    t = _table(tmp_path, **{"alter-column-null-to-not-null.disabled": "false"})
    ref = f"tidelake.`{t.path}`"
    for stmt in (f"ALTER TABLE {ref} ADD COLUMN s.c STRING FIRST",
                 f"ALTER TABLE {ref} ADD COLUMNS (s.d BIGINT AFTER a, l.element.y INT)",
                 f"ALTER TABLE {ref} RENAME COLUMN s.a TO a2",
                 f"ALTER TABLE {ref} ALTER COLUMN s.b TYPE DOUBLE",
                 f"ALTER TABLE {ref} ALTER COLUMN l.element.x TYPE BIGINT",
                 f"ALTER TABLE {ref} ALTER COLUMN s.a2 COMMENT 'said'",
                 f"ALTER TABLE {ref} ALTER COLUMN s.d SET NOT NULL",
                 f"ALTER TABLE {ref} DROP COLUMN s.c"):
        tidelake.spark.sql(spark, stmt)
    fields = next(f for f in _latest_schema(t)["fields"] if f["name"] == "s")["type"]["fields"]
    assert [(f["name"], f["type"]) for f in fields] == [("a2", "INT"), ("d", "BIGINT NOT NULL"), ("b", "DOUBLE")]
    assert fields[0]["description"] == "said"
    with pytest.raises(tidelake.UnsupportedError, match="top-level columns only"):
        tidelake.spark.sql(spark, f"ALTER TABLE {ref} ALTER COLUMN s.b FIRST")
    tidelake.spark.sql(spark, f"ALTER TABLE {ref} ALTER COLUMN s.d DROP NOT NULL")  # row 1 holds a null d
    assert t.refresh().to_arrow().sort_by("k").to_pylist()[0] == {
        "k": 1, "s": {"a2": 1, "d": None, "b": 0.5}, "l": [{"x": 7, "y": None}]}


def _nested_changes(t: tidelake.Table) -> tidelake.Table:
    return (t.add_column(["s", "c"], pa.string(), after="a").rename_column(["s", "a"], "a2")
            .update_column_type(["s", "b"], pa.float64()).update_column_comment(["s", "b"], "bee")
            .drop_column(["s", "c"]).add_column(["l", "element", "y"], pa.int64(), first=True)
            .update_column_nullability(["l", "element"], False))


def test_rest_catalog_takes_nested_changes_as_java_json(rest_server, tmp_path):  # noqa: F811
    """Through a REST catalog the changes go as Java's ``SchemaChange`` JSON (``fieldNames``
    paths), which Paimon's own server applies: the schema equals tidelake's own application."""
    options = {"alter-column-null-to-not-null.disabled": "false"}
    served = _nested_changes(_table(tmp_path, catalog=tidelake.Catalog.from_options(rest_server.options), **options))
    local = _nested_changes(_table(tmp_path / "local", **options))
    theirs = next(v for v in served.schemas() if v.id == served.schema_id)
    ours = next(v for v in local.schemas() if v.id == local.schema_id)
    assert theirs.fields == ours.fields and theirs.highest_field_id == ours.highest_field_id
    assert served.to_arrow().sort_by("k").to_pylist()[0] == {
        "k": 1, "s": {"a2": 1, "b": 0.5}, "l": [{"y": None, "x": 7}]}
