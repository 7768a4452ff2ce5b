"""Spark DML and Python DML are one engine path: the same DELETE / UPDATE / MERGE statements
run through ``tidelake.spark`` (tasks planned on the driver, run in executors, committed on the
driver) and through ``Table.delete/update/merge`` (the same tasks in one process) leave copies
of one table identical, for every table kind, with the same commits (kinds, rows and files
counted); and a task's bytes round-trip while another format version is refused."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

import tidelake
import tidelake.spark
from tidelake import dml
from tidelake._internal import RawRowLevelTask

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.string(), nullable=False),
                    pa.field("qty", pa.int64()), pa.field("name", pa.string())])
KINDS = {
    "pk-dedup": dict(primary_keys=["id", "p"], partition_keys=["p"], bucket=2),
    "pk-partial-update": dict(primary_keys=["id", "p"], partition_keys=["p"], bucket=2,
                              options={"merge-engine": "partial-update",
                                       "partial-update.remove-record-on-delete": "true"}),
    "append": dict(partition_keys=["p"]),
    "append-dv": dict(partition_keys=["p"], bucket=2,
                      options={"bucket-key": "id", "deletion-vectors.enabled": "true"}),
}
ROWS = [{"id": i, "p": "ab"[i % 2], "qty": i % 10, "name": "x"} for i in range(40)]
SOURCE = [(i, "ab"[i % 2], i % 3, "m") for i in range(30, 50)]


def _table(path, kind: str) -> tidelake.Table:
    t = tidelake.create_table(str(path), SCHEMA, **KINDS[kind])
    t.write(pa.Table.from_pylist(ROWS, schema=SCHEMA))
    return t


def _state(t: tidelake.Table) -> list[tuple]:
    return sorted(tuple(r[c] for c in SCHEMA.names) for r in t.refresh().to_arrow().to_pylist())


def _summary(t: tidelake.Table, res) -> tuple:
    kinds = tuple(s.commit_kind for s in t.refresh().snapshots())
    return (kinds, res.rows_inserted, res.rows_updated, res.rows_deleted, res.files_added, res.files_removed)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_spark_and_python_dml_leave_identical_tables(spark, tmp_path, kind):
    by_spark, by_python = _table(tmp_path / "spark", kind), _table(tmp_path / "python", kind)
    source_rows = [dict(zip(SCHEMA.names, r)) for r in SOURCE]
    source = spark.createDataFrame(SOURCE, "id long, p string, qty long, name string")
    statements = [
        ("delete",
         lambda: tidelake.spark.delete(by_spark.path, "qty < 2 AND id > 3"),
         lambda: by_python.delete("qty < 2 AND id > 3")),
        ("update",
         lambda: tidelake.spark.update(by_spark.path, {"qty": "qty + 100", "name": "'u'"}, "p = 'a' AND qty >= 5"),
         lambda: by_python.update({"qty": "qty + 100", "name": "'u'"}, "p = 'a' AND qty >= 5")),
        ("merge",
         lambda: (tidelake.spark.merge(by_spark.path, source, on=["id", "p"])
                  .when_matched_delete("source.qty = 0")
                  .when_matched_update({"qty": "target.qty + source.qty"})
                  .when_not_matched_insert("*").execute()),
         lambda: (by_python.merge(pa.Table.from_pylist(source_rows, schema=SCHEMA), on=["id", "p"])
                  .when_matched_delete("source.qty = 0")
                  .when_matched_update({"qty": "target.qty + source.qty"})
                  .when_not_matched_insert("*").execute())),
    ]
    for name, run_spark, run_python in statements:
        spark_result, python_result = run_spark(), run_python()
        assert _state(by_spark) == _state(by_python), name
        assert _summary(by_spark, spark_result) == _summary(by_python, python_result), name
    assert _state(by_python) != sorted(tuple(r.values()) for r in ROWS)  # the statements changed rows


def test_task_bytes_round_trip_and_other_versions_are_refused(tmp_path):
    t = _table(tmp_path / "t", "append-dv")
    snapshot, tasks = dml.plan(t, "delete", "qty < 2", deletes=True)
    assert snapshot == t.latest_snapshot().id and len(tasks) == 4  # two partitions, two buckets
    for task in tasks:
        raw = RawRowLevelTask.from_bytes(task)
        assert raw.to_bytes() == task and raw.snapshot_id == snapshot and raw.strategy == "deletion-vectors"
    places = sorted((RawRowLevelTask.from_bytes(x).partition, RawRowLevelTask.from_bytes(x).bucket) for x in tasks)
    assert len(set(places)) == 4
    newer = json.loads(tasks[0])
    newer["version"] += 1
    refused = f"row-level task version {newer['version']} is not supported"
    with pytest.raises(tidelake.InvalidArgumentError, match=refused):
        RawRowLevelTask.from_bytes(json.dumps(newer).encode())
    with pytest.raises(tidelake.InvalidArgumentError, match=refused):
        dml.prepare_delete(t, "qty < 2", snapshot, tasks=[json.dumps(newer).encode()])
    # the tasks run in any order and process give the one-shot delete's result
    changes = [dml.prepare_delete(t, "qty < 2", snapshot, tasks=[task]) for task in reversed(tasks)]
    res = dml.commit_changes(t, changes)
    assert res.rows_deleted == sum(1 for r in ROWS if r["qty"] < 2)
    assert sorted(r["id"] for r in t.to_arrow().to_pylist()) == [r["id"] for r in ROWS if r["qty"] >= 2]


def test_the_engine_refuses_what_the_table_cannot_take(tmp_path):
    t = tidelake.create_table(str(tmp_path / "t"), SCHEMA, primary_keys=["id", "p"], bucket=1,
                              options={"deduplicate.ignore-delete": "true"})
    t.write(pa.Table.from_pylist(ROWS, schema=SCHEMA))
    with pytest.raises(tidelake.UnsupportedError, match="ignores deletes"):
        dml.plan(t, "delete", "qty < 2", deletes=True)
    with pytest.raises(tidelake.UnsupportedError, match="ignores deletes"):
        t.delete("qty < 2")
    assert t.update({"qty": "qty + 1"}, "qty < 2").rows_updated == 8  # an update deletes nothing
