"""Compaction as plan -> task -> commit (`Table.compaction_plan`, `run_compaction_task`,
`CompactionPlan.commit`) and `tidelake.spark.compact`: tasks shipped as bytes to other processes
give the same table as `Table.compact()`; a plan commits once (a retried task's second result is
refused, committing the same results again is a no-op); a Spark task attempt that fails after
writing leaves no committed duplicate; a standalone Spark cluster runs the tasks in two executor
processes with the same result as single-process compaction.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pyarrow as pa
import pytest

import tidelake
import tidelake.spark
from conftest import assert_same_rows
from tidelake.compaction import CompactionTask, run_compaction_task

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.int64())])


def _table(path: pathlib.Path, buckets: int = 3) -> tidelake.Table:
    t = tidelake.create_table(path, SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                              options={"bucket": str(buckets), "write-only": "true"})
    for r in range(5):
        for dt in ("a", "b"):
            ids = list(range(r * 7, r * 7 + 40))
            t.upsert(pa.table({"id": ids, "dt": [dt] * len(ids), "v": [i * 10 + r for i in ids]}, schema=SCHEMA))
    t.delete(pa.table({"id": [3, 9, 27], "dt": ["a"] * 3}))
    return t


def _layout(t: tidelake.Table) -> list[tuple]:
    """(partition, bucket, level, row count) of every live file (the ``files`` system table)."""
    files = t.system("files").to_pylist()
    return sorted((str(f["partition"]), f["bucket"], f["level"], f["record_count"]) for f in files)


def _sorted(t: pa.Table) -> pa.Table:
    return t.sort_by([("dt", "ascending"), ("id", "ascending")])


def _run_elsewhere(task: bytes) -> bytes:
    return run_compaction_task(task)


def test_tasks_run_in_other_processes_equal_compact(tmp_path):
    t = _table(tmp_path / "t")
    shutil.copytree(tmp_path / "t", tmp_path / "ref")
    before = _sorted(t.to_arrow())
    plan = t.compaction_plan(full=True)
    assert plan.snapshot_id == t.latest_snapshot().id
    assert len({task.bucket for task in plan.tasks}) == 3 and len(plan.tasks) == 6
    shipped = [CompactionTask.from_bytes(task.to_bytes()) for task in plan.tasks]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        results = pool.map(_run_elsewhere, [task.to_bytes() for task in shipped])
    snapshot = plan.commit(results)
    t = tidelake.open_table(t.path)
    assert t.latest_snapshot().id == snapshot and t.latest_snapshot().commit_kind == "COMPACT"
    assert_same_rows(_sorted(t.to_arrow()), before)
    ref = tidelake.open_table(tmp_path / "ref")
    ref.compact(full=True)
    assert_same_rows(_sorted(ref.to_arrow()), before)
    assert _layout(t) == _layout(ref)
    # the same results again: already landed, no second snapshot
    assert plan.commit(results) == snapshot
    assert tidelake.open_table(t.path).latest_snapshot().id == snapshot


def test_a_plan_takes_one_result_per_task(tmp_path):
    t = _table(tmp_path / "t")
    latest = t.latest_snapshot().id
    plan = t.compaction_plan(full=True)
    results = [run_compaction_task(task) for task in plan.tasks]
    retried = run_compaction_task(plan.tasks[0])
    with pytest.raises(tidelake.InvalidArgumentError, match="two compaction results"):
        plan.commit([*results, retried])
    with pytest.raises(tidelake.InvalidArgumentError, match="results were given"):
        plan.commit(results[1:])
    assert tidelake.open_table(t.path).latest_snapshot().id == latest
    with pytest.raises(tidelake.InvalidArgumentError, match="compaction task"):
        CompactionTask.from_bytes(b'{"version": 1}')
    with pytest.raises(tidelake.InvalidArgumentError):
        run_compaction_task(b"garbage")
    assert plan.commit([retried, *results[1:]]) is not None


def test_a_task_of_an_older_schema_conflicts(tmp_path):
    t = _table(tmp_path / "t")
    plan = t.compaction_plan(full=True)
    t.add_column("w", pa.int64())
    with pytest.raises(tidelake.CommitConflictError, match="schema changed"):
        run_compaction_task(plan.tasks[0])


# ---- Spark ---------------------------------------------------------------------------------------


def test_spark_compact_equals_compact(spark, tmp_path):
    import tidelake.spark

    t = _table(tmp_path / "t")
    shutil.copytree(tmp_path / "t", tmp_path / "ref")
    before = _sorted(t.to_arrow())
    snapshot = tidelake.spark.compact(spark, t.path, full=True)
    t = tidelake.open_table(t.path)
    assert t.latest_snapshot().id == snapshot and t.latest_snapshot().commit_kind == "COMPACT"
    assert_same_rows(_sorted(t.to_arrow()), before)
    ref = tidelake.open_table(tmp_path / "ref")
    ref.compact(full=True)
    assert _layout(t) == _layout(ref)
    # run again after success: nothing left to compact, nothing committed
    assert tidelake.spark.compact(spark, t.path, full=True) is None
    assert tidelake.open_table(t.path).latest_snapshot().id == snapshot


def test_spark_compact_selects_partitions(spark, tmp_path):
    import tidelake.spark

    t = _table(tmp_path / "t")
    before = _sorted(t.to_arrow())
    tidelake.spark.compact(spark, t.path, full=True, partitions=[{"dt": "b"}])
    t = tidelake.open_table(t.path)
    levels = {(str(f["partition"]), f["level"]) for f in t.system("files").to_pylist()}
    assert all(level == 5 for p, level in levels if "b" in p), levels
    assert any(level == 0 for p, level in levels if "a" in p), levels
    assert_same_rows(_sorted(t.to_arrow()), before)


class _FailingFirstAttempt(tidelake.spark._CompactionRunner):
    """Runs its tasks, then fails the first attempt of Spark partition 0 (its files written)."""

    def __call__(self, tasks):
        from pyspark import TaskContext

        results = list(super().__call__(tasks))
        ctx = TaskContext.get()
        if ctx.partitionId() == 0 and ctx.attemptNumber() == 0:
            raise RuntimeError("injected failure after the compaction wrote its files")
        yield from results


def test_spark_retried_task_commits_once(spark, tmp_path, monkeypatch):
    import tidelake.spark

    t = _table(tmp_path / "t")
    shutil.copytree(tmp_path / "t", tmp_path / "ref")
    before = _sorted(t.to_arrow())
    monkeypatch.setattr(tidelake.spark, "_CompactionRunner", _FailingFirstAttempt)
    snapshots_before = t.latest_snapshot().id
    snapshot = tidelake.spark.compact(spark, t.path, full=True)
    t = tidelake.open_table(t.path)
    assert snapshot == snapshots_before + 1 == t.latest_snapshot().id
    assert_same_rows(_sorted(t.to_arrow()), before)
    ref = tidelake.open_table(tmp_path / "ref")
    ref.compact(full=True)
    assert _layout(t) == _layout(ref)
    # the failed attempt did write files: they are on disk, never committed
    on_disk = {p: len(list((tmp_path / p).rglob("data-*"))) for p in ("t", "ref")}
    assert on_disk["t"] > on_disk["ref"], on_disk
