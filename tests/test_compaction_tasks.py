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
import pathlib
import shutil

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
    t.delete_keys(pa.table({"id": [3, 9, 27], "dt": ["a"] * 3}))
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


# ---- append tables -------------------------------------------------------------------------------

APPEND = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.int64())])


def _append_table(path: pathlib.Path, options: dict[str, str], commits: int) -> tidelake.Table:
    t = tidelake.create_table(path, APPEND, partition_keys=["dt"], options={"write-only": "true", **options})
    for c in range(commits):
        ids = list(range(c * 4, c * 4 + 4))
        t.write(pa.table({"id": ids, "dt": ["a"] * 4, "v": [c] * 4}, schema=APPEND))
    return t


def _files_per_bucket(t: tidelake.Table) -> dict[int, int]:
    counts: dict[int, int] = {}
    for f in t.system("files").to_pylist():
        counts[f["bucket"]] = counts.get(f["bucket"], 0) + 1
    return counts


def test_append_compaction_follows_paimon_rules(tmp_path):
    """Fixed buckets: windows of compaction.min.file-num (5) files; full: everything small.
    Rows read in the same order (one bucket: the write order)."""
    t = _append_table(tmp_path / "one", {"bucket": "1", "bucket-key": "id"}, 7)
    before = t.to_arrow()
    assert _files_per_bucket(t) == {0: 7}
    snapshot = t.compact()
    assert t.snapshot(snapshot).commit_kind == "COMPACT"
    assert _files_per_bucket(t) == {0: 3}
    assert t.to_arrow().equals(before)
    assert t.compact() is None
    t.compact(full=True)
    assert _files_per_bucket(t) == {0: 1}
    assert t.to_arrow().equals(before)

    t = _append_table(tmp_path / "two", {"bucket": "2", "bucket-key": "id"}, 8)
    before = _sorted(t.to_arrow())
    per_bucket = _files_per_bucket(t)
    t.compact()
    assert _files_per_bucket(t) == {b: (n - 4 if n >= 5 else n) for b, n in per_bucket.items()}
    assert_same_rows(_sorted(t.to_arrow()), before)


def test_unaware_append_compaction(tmp_path):
    t = _append_table(tmp_path / "t", {}, 4)
    assert t.compact() is None, "4 small files: fewer than compaction.min.file-num"
    t.write(pa.table({"id": [99], "dt": ["a"], "v": [9]}, schema=APPEND))
    before = _sorted(t.to_arrow())
    t.compact()
    assert _files_per_bucket(t) == {0: 1}
    assert_same_rows(_sorted(t.to_arrow()), before)


def test_cli_and_spark_compact_append_tables(spark, tmp_path):
    from click.testing import CliRunner

    from tidelake import cli

    t = _append_table(tmp_path / "t", {"bucket": "2", "bucket-key": "id"}, 6)
    shutil.copytree(tmp_path / "t", tmp_path / "ref")
    before = _sorted(t.to_arrow())
    per_bucket = _files_per_bucket(t)
    assert sum(per_bucket.values()) >= 6 and set(per_bucket) == {0, 1}
    result = CliRunner().invoke(cli.main, ["compact", str(tmp_path / "ref"), "--full", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["files_before"] == sum(per_bucket.values()) and report["files_after"] == 2
    tidelake.spark.compact(spark, t.path, full=True)
    t = tidelake.open_table(t.path)
    assert _files_per_bucket(t) == {0: 1, 1: 1}
    assert_same_rows(_sorted(t.to_arrow()), before)
    assert _layout(t) == _layout(tidelake.open_table(tmp_path / "ref"))


def _append_forever(path: str, start: int, count: int, acked: "multiprocessing.Queue") -> None:
    t = tidelake.open_table(path)
    for i in range(start, start + count):
        t.write(pa.table({"id": [i], "dt": ["a"], "v": [i]}, schema=APPEND))
        acked.put(i)


def test_concurrent_appends_during_append_compaction_are_kept(tmp_path):
    """Writers in other processes append while this one compacts again and again: every
    acknowledged row is there exactly once."""
    t = _append_table(tmp_path / "t", {"bucket": "1", "bucket-key": "id", "compaction.min.file-num": "2"}, 3)
    ctx = multiprocessing.get_context("spawn")
    acked = ctx.Queue()
    writers = [ctx.Process(target=_append_forever, args=(t.path, 1000 * (w + 1), 25, acked)) for w in range(2)]
    for w in writers:
        w.start()
    compactions = 0
    while any(w.is_alive() for w in writers) or compactions < 3:
        try:
            if tidelake.open_table(t.path).compact() is not None:
                compactions += 1
        except tidelake.CommitConflictError:
            pass
    for w in writers:
        w.join()
        assert w.exitcode == 0
    ids = set(range(12)) | {acked.get(timeout=30) for _ in range(50)}
    assert len(ids) == 12 + 50
    got = tidelake.open_table(t.path).to_arrow().column("id").to_pylist()
    assert sorted(got) == sorted(ids), "every acknowledged row exactly once"
    assert compactions >= 3


@pytest.mark.exclusive  # a standalone cluster's two one-core workers
def test_standalone_cluster_compacts_in_two_executors(tmp_path):
    """Two one-core workers: the tasks run in both executor processes (Spark's REST API counts
    each executor's tasks), and the table equals the single-process compaction of a copy."""
    pytest.importorskip("pyspark")
    from _spark_cluster import free_port, run_driver, standalone_cluster

    t = _table(tmp_path / "t", buckets=4)
    shutil.copytree(tmp_path / "t", tmp_path / "ref")
    before = _sorted(t.to_arrow())
    tasks = len(t.compaction_plan(full=True).tasks)
    with standalone_cluster(tmp_path / "cluster", workers=2) as master:
        answer = run_driver(master, [t.path, str(free_port()), "2"])
    per_executor = answer["tasks_per_executor"]
    assert len(per_executor) == 2 and all(n > 0 for n in per_executor.values()), per_executor
    assert sum(per_executor.values()) == tasks
    t = tidelake.open_table(t.path)
    assert t.latest_snapshot().id == answer["snapshot"]
    ref = tidelake.open_table(tmp_path / "ref")
    ref.compact(full=True)
    assert _layout(t) == _layout(ref)
    assert t.to_arrow().sort_by([("dt", "ascending"), ("id", "ascending")]).equals(
        ref.to_arrow().sort_by([("dt", "ascending"), ("id", "ascending")]))
    assert_same_rows(_sorted(t.to_arrow()), before)
