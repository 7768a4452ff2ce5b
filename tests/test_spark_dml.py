"""Distributed Spark DML (``tidelake.spark.delete/update/merge``) on local Spark: each call runs
one task per target (partition, bucket) group in the executors and commits once on the driver;
the table then equals a plain-Python model. A merge source whose first task attempt fails is
retried with every change applied once, and a group whose task finished twice (a retried or
speculative attempt) commits one result with the other's files discarded."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest

import tidelake
import tidelake.spark
from tidelake.spark import dml as spark_dml

pytest.importorskip("pyspark")

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.string(), nullable=False),
                    pa.field("qty", pa.int64()), pa.field("name", pa.string())])
KINDS = {
    "append": dict(partition_keys=["p"]),
    "append-dv-fixed": dict(partition_keys=["p"], bucket=2,
                            options={"bucket-key": "id", "deletion-vectors.enabled": "true"}),
    "dedup": dict(primary_keys=["id", "p"], partition_keys=["p"], bucket=2),
}
SOURCE = "id long, p string, qty long, name string"


def rows_of(t: tidelake.Table) -> list[tuple]:
    return sorted(tuple(r[c] for c in SCHEMA.names) for r in t.refresh().to_arrow().to_pylist())


def model_rows(model: list[dict]) -> list[tuple]:
    return sorted(tuple(r[c] for c in SCHEMA.names) for r in model)


def stage_tasks(spark, group: str) -> list[int]:
    """Task counts of the stages of the jobs run in job group ``group``."""
    tracker = spark.sparkContext.statusTracker()
    stages = [s for j in tracker.getJobIdsForGroup(group) for s in tracker.getJobInfo(j).stageIds]
    return [tracker.getStageInfo(s).numTasks for s in stages if tracker.getStageInfo(s) is not None]


def orphans(t: tidelake.Table) -> list:
    return t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000, dry_run=True)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_distributed_dml_matches_model(spark, tmp_path, kind):
    t = tidelake.create_table(str(tmp_path / kind), SCHEMA, **KINDS[kind])
    model = [{"id": i, "p": "ab"[i % 2], "qty": i % 10, "name": "x"} for i in range(40)]
    t.write(pa.Table.from_pylist(model, schema=SCHEMA))
    if "primary_keys" not in KINDS[kind]:  # duplicates, each deleted or updated
        t.write(pa.Table.from_pylist(model[:6], schema=SCHEMA))
        model += [dict(r) for r in model[:6]]
    _, groups = spark_dml._plan(t, t.latest_snapshot().id, None, "bucket")

    spark.sparkContext.setJobGroup("delete", "delete")
    res = tidelake.spark.delete(t.path, "qty < 2 AND id > 3")
    gone = [r for r in model if r["qty"] < 2 and r["id"] > 3]
    model = [r for r in model if not (r["qty"] < 2 and r["id"] > 3)]
    assert rows_of(t) == model_rows(model) and res.rows_deleted == len(gone)
    assert 1 < max(stage_tasks(spark, "delete")) <= len(groups)  # a task per (partition, bucket)
    assert len(groups) == (2 if kind == "append" else 4)

    res = tidelake.spark.update(t.path, {"qty": "qty + 100", "name": "'u'"}, "p = 'a' AND qty >= 5")
    hit = [r for r in model if r["p"] == "a" and r["qty"] >= 5]
    for r in hit:
        r["qty"] += 100
        r["name"] = "u"
    assert rows_of(t) == model_rows(model) and res.rows_updated == len(hit)

    src = [(i, "ab"[i % 2], 7, "m") for i in range(30, 50, 3)] + [(2, "b", 1, "m")]
    source = spark.createDataFrame(src, SOURCE).repartition(3)
    spark.sparkContext.setJobGroup("merge", "merge")
    res = (tidelake.spark.merge(t.path, source, on="t.id = s.id AND t.p = s.p", target_alias="t", source_alias="s")
           .when_matched_delete("s.qty < 3").when_matched_update({"qty": "t.qty + s.qty", "name": "s.name"})
           .when_not_matched_insert("*").when_not_matched_by_source_delete("t.qty = 9").execute())
    by_key = {(s[0], s[1]): s for s in src}
    matched = {(r["id"], r["p"]) for r in model}
    out, ins, upd, dele = [], 0, 0, 0
    for r in model:
        s = by_key.get((r["id"], r["p"]))
        if s is None:
            if r["qty"] == 9:
                dele += 1
            else:
                out.append(r)
        elif s[2] < 3:
            dele += 1
        else:
            out.append({**r, "qty": r["qty"] + s[2], "name": s[3]})
            upd += 1
    for s in src:
        if (s[0], s[1]) not in matched:
            out.append({"id": s[0], "p": s[1], "qty": s[2], "name": s[3]})
            ins += 1
    model = out
    assert rows_of(t) == model_rows(model)
    assert (res.rows_inserted, res.rows_updated, res.rows_deleted) == (ins, upd, dele)
    assert orphans(t) == []


def _fail_first_attempt(batches):
    from pyspark import TaskContext

    ctx = TaskContext.get()
    for batch in batches:
        if ctx.partitionId() == 1 and ctx.attemptNumber() == 0:
            raise RuntimeError("injected failure of a first attempt")
        yield batch


def test_a_failed_merge_task_is_retried_and_applies_once(spark, tmp_path):
    t = tidelake.create_table(str(tmp_path / "t"), SCHEMA, primary_keys=["id", "p"], partition_keys=["p"], bucket=2)
    t.write(pa.Table.from_pylist([{"id": i, "p": "ab"[i % 2], "qty": 0, "name": "x"} for i in range(20)],
                                 schema=SCHEMA))
    source = (spark.createDataFrame([(i, "ab"[i % 2], 1, "m") for i in range(10, 30)], SOURCE).repartition(2)
              .mapInArrow(_fail_first_attempt, SOURCE))
    res = (tidelake.spark.merge(t.path, source, on=["id", "p"])
           .when_matched_update({"qty": "target.qty + source.qty"}).when_not_matched_insert("*").execute())
    assert (res.rows_updated, res.rows_inserted) == (10, 10)
    got = {r["id"]: r["qty"] for r in t.to_arrow().to_pylist()}
    assert got == {**{i: 0 for i in range(10)}, **{i: 1 for i in range(10, 30)}}
    assert orphans(t) == []


def test_a_group_finished_twice_commits_once(tmp_path):
    """Two attempts of one group's task both finished (a retried or speculative attempt): the
    driver commits one, discards the other's files."""
    for kind in ("append-dv-fixed", "dedup"):
        t = tidelake.create_table(str(tmp_path / kind), SCHEMA, **KINDS[kind])
        t.write(pa.Table.from_pylist([{"id": i, "p": "ab"[i % 2], "qty": i, "name": "x"} for i in range(20)],
                                     schema=SCHEMA))
        snapshot = t.latest_snapshot().id
        grouping, groups = spark_dml._plan(t, snapshot, None, "bucket")
        task = spark_dml._FilteredTask(spark_dml.io.Location(t.path), snapshot, "qty >= 10", {"qty": "qty + 1"})
        results = [task(item) for item in groups.items()]
        results += [task(item) for item in list(groups.items())[:1]]  # the same group again
        res = spark_dml._commit(t, results)
        assert res.rows_updated == 10, kind
        assert sorted(r["qty"] for r in t.refresh().to_arrow().to_pylist()) == list(range(10)) + list(range(11, 21))
        assert orphans(t) == [], kind


def test_merge_joined_without_the_partition_columns_runs_as_one_group(spark, tmp_path):
    """A join lacking the partition columns cannot route source rows to partitions: the whole
    target is one task, and rows of every partition still match."""
    t = tidelake.create_table(str(tmp_path / "t"), SCHEMA, **KINDS["append-dv-fixed"])
    t.write(pa.Table.from_pylist([{"id": i, "p": "ab"[i % 2], "qty": 0, "name": "x"} for i in range(10)],
                                 schema=SCHEMA))
    source = spark.createDataFrame([(i, "z", 5, "m") for i in (1, 2, 20)], SOURCE)
    spark.sparkContext.setJobGroup("merge-one", "merge-one")
    res = (tidelake.spark.merge(t.path, source, on="id").when_matched_update({"qty": "source.qty"})
           .when_not_matched_insert("*").execute())
    assert (res.rows_updated, res.rows_inserted) == (2, 1)
    got = sorted((r["id"], r["p"], r["qty"]) for r in t.to_arrow().to_pylist())
    assert got == sorted([(i, "ab"[i % 2], 5 if i in (1, 2) else 0) for i in range(10)] + [(20, "z", 5)])
    assert orphans(t) == []


def test_spark_dml_filters_on_a_column_added_since_the_latest_commit(spark, tmp_path):
    """As Python DML (test_dml.py): the latest snapshot is read in the latest schema."""
    t = tidelake.create_table(str(tmp_path / "t"), SCHEMA, primary_keys=["id", "p"], bucket=2)
    t.write(pa.Table.from_pylist([{"id": i, "p": "ab"[i % 2], "qty": i, "name": "x"} for i in range(6)],
                                 schema=SCHEMA))
    t.add_column("note", pa.string())
    assert tidelake.spark.update(t.path, {"note": "'set'"}, "note is null and qty < 3").rows_updated == 3
    assert tidelake.spark.delete(t.path, "note is null and qty = 5").rows_deleted == 1
    assert sorted((r["id"], r["note"]) for r in tidelake.open_table(t.path).to_arrow().to_pylist()) == [
        (0, "set"), (1, "set"), (2, "set"), (3, None), (4, None)]
