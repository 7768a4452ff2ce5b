"""Incremental clustering (``clustering.incremental`` = true) with Java Paimon 1.3.1 (the ``java``
oracle): before every compaction Java's own ``IncrementalClusterManager`` says which files of
each partition it would cluster into which level (``cluster_pick``), and tidelake's compaction
must replace exactly those files by files at that level; Java then reads the same rows and the
same levels. Java writes and tidelake compacts (``compact()``, the CLI, planned tasks); tidelake
writes and Java writes on; idle history partitions; after a full clustering a filter on a
clustering column skips files;
deletion vectors of the clustered files go with them."""

from __future__ import annotations

import pathlib
import time
from typing import Any

import pyarrow as pa
from click.testing import CliRunner

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import JavaOracle, Scenario, compare_read, java_write, tidelake_write
from tidelake.cli import main as cli
from tidelake.compaction import run_compaction_task

FIELDS = [("a", "INT"), ("b", "BIGINT"), ("s", "STRING"), ("p", "INT")]
OPTIONS = {"bucket": "-1", "clustering.incremental": "true", "clustering.columns": "a,b",
           "num-sorted-run.compaction-trigger": "3"}


def _commit(n: int, salt: int) -> dict:
    """One commit of ``n`` rows over two partitions, with a null in every column but p."""
    rows = [[(i * 37 + salt) % 101, (i * 53 + salt * 7) % 97, f"s{(i + salt) % 13}", i % 2] for i in range(n)]
    rows.append([None, None, None, salt % 2])
    return {"rows": rows}


def _files(t: tidelake.Table) -> dict[str, tuple[int, str]]:
    """Live data files: name -> (level, partition directory)."""
    files = t.system("files").to_pylist()
    return {pathlib.Path(f["file_path"]).name: (f["level"], pathlib.Path(f["file_path"]).parent.parent.name)
            for f in files}


def _cluster_like_java(java: JavaOracle, t: tidelake.Table, full: bool = False,
                       run: Any = None, partitions: list[dict[str, Any]] | None = None) -> int | None:
    """Java's pick on the latest snapshot, then tidelake's compaction (``run``, default
    ``t.compact``): the files it replaced are those Java picks, its new files sit at the level
    Java picks for their partition, Java sees the same files at the same levels."""
    t = tidelake.open_table(t.path)
    before = _files(t)
    job: dict[str, Any] = {"op": "cluster_pick", "path": t.path, "full": full}
    if partitions is not None:
        job["partitions"] = partitions
    picks = java.run(job)
    assert picks["levels"] == {n: lv for n, (lv, _) in before.items()}
    picked = {f for u in picks["units"] for f in u["files"]}
    out_level = {before[u["files"][0]][1]: u["output_level"] for u in picks["units"]}
    sid = run() if run is not None else t.compact(full=full)
    t = tidelake.open_table(t.path)
    after = _files(t)
    assert set(before) - set(after) == picked
    if not picked:
        assert sid is None
        return None
    assert t.snapshot(t.latest_snapshot_id()).commit_kind == "COMPACT"
    added = {n: v for n, v in after.items() if n not in before}
    assert added and {part: out_level[part] for _, part in added.values()} == out_level
    assert all(level == out_level[part] for level, part in added.values())
    again = java.run({"op": "cluster_pick", "path": t.path, "full": False})
    assert again["levels"] == {n: lv for n, (lv, _) in after.items()}
    return t.latest_snapshot_id()


def test_tidelake_clusters_what_java_picks(java, tmp_path):
    wh = str(tmp_path)
    sc = Scenario("inc_cluster", FIELDS, [_commit(n, i) for i, n in enumerate([1500, 800, 800, 800])],
                  partition_keys=["p"], options=OPTIONS, mode="batch")
    t = java_write(java, wh, sc)
    rows = compare_read(java, t, wh, "java wrote, incremental clustering")
    # four level-0 runs per partition, trigger 3: Java clusters them
    assert _cluster_like_java(java, t) is not None
    assert compare_read(java, t, wh, "tidelake clustered", pypaimon=True) == rows
    # nothing new: nothing to cluster
    assert _cluster_like_java(java, t) is None
    # Java writes on: small level-0 runs below the large clustered level, picked by size
    # ratio and run count into a level between
    for i, n in enumerate([6, 4, 5]):
        java.run({**sc.java_job(wh, with_steps=False), "existing": True, "steps": [_commit(n, 10 + i)]})
    _cluster_like_java(java, t)
    # more of them: size amplification takes every run to the top level
    for i in range(4):
        java.run({**sc.java_job(wh, with_steps=False), "existing": True, "steps": [_commit(30, 20 + i)]})
    _cluster_like_java(java, t)
    _cluster_like_java(java, t, full=True)
    assert _cluster_like_java(java, t, full=True) is None
    after = compare_read(java, tidelake.open_table(t.path), wh, "after full clustering")
    assert len(after) == len(rows) + 18 + 124


def test_cli_clusters_what_java_picks(java, tmp_path):
    wh = str(tmp_path)
    sc = Scenario("inc_cluster_cli", FIELDS, [_commit(20, i) for i in range(4)], partition_keys=["p"],
                  options={**OPTIONS, "clustering.strategy": "hilbert"}, mode="batch")
    t = java_write(java, wh, sc)
    rows = compare_read(java, t, wh, "java wrote, before cli clustering")

    def cli_compact() -> int | None:
        result = CliRunner().invoke(cli, ["compact", t.path, "--partition", "p=1"], prog_name="tidelake")
        assert result.exit_code == 0, result.output
        return tidelake.open_table(t.path).latest_snapshot_id()

    before = _files(t)
    _cluster_like_java(java, t, run=cli_compact, partitions=[{"p": 1}])
    # only p=1 was selected: p=0 keeps its level-0 files
    after = _files(t)
    assert {n for n, (_, part) in before.items() if part == "p=0"} <= set(after)
    _cluster_like_java(java, t)
    assert compare_read(java, tidelake.open_table(t.path), wh, "tidelake cli clustered") == rows


def test_planned_tasks_cluster_what_java_picks(java, tmp_path):
    wh = str(tmp_path)
    sc = Scenario("inc_cluster_tasks", FIELDS, [_commit(20, i) for i in range(4)], partition_keys=["p"],
                  options=OPTIONS, mode="batch")
    t = java_write(java, wh, sc)
    rows = compare_read(java, t, wh, "java wrote, before planned clustering")

    def tasks() -> int | None:
        plan = t.compaction_plan()
        assert len(plan.tasks) == 2  # one per partition
        return plan.commit([run_compaction_task(task) for task in plan.tasks])

    _cluster_like_java(java, t, run=tasks)
    assert compare_read(java, tidelake.open_table(t.path), wh, "tidelake planned clustering") == rows


def test_idle_history_partitions_cluster_fully_like_java(java, tmp_path):
    wh = str(tmp_path)
    sc = Scenario("inc_cluster_history", FIELDS, [_commit(20, i) for i in range(2)], partition_keys=["p"],
                  options={**OPTIONS, "clustering.history-partition.idle-to-full-sort": "1s"}, mode="batch")
    t = java_write(java, wh, sc)
    rows = compare_read(java, t, wh, "java wrote, before history clustering")
    time.sleep(1.5)
    # p=1 has two level-0 runs, below the trigger: not clustered; p=0, left out and idle, is
    # clustered fully
    sid = _cluster_like_java(java, t, run=lambda: t.compact(partitions=[{"p": 1}]), partitions=[{"p": 1}])
    assert sid is not None
    levels = {part: level for level, part in _files(tidelake.open_table(t.path)).values() if level}
    assert levels == {"p=0": 3}
    assert compare_read(java, tidelake.open_table(t.path), wh, "tidelake history clustering") == rows


def test_java_continues_a_table_tidelake_clustered(java, tmp_path):
    wh = str(tmp_path)
    opts = {**OPTIONS, "target-file-size": "8kb", "clustering.columns": "b"}
    sc = Scenario("inc_cluster_tl", FIELDS, [_commit(8000, i) for i in range(4)], partition_keys=["p"],
                  options=opts, mode="batch")
    t = tidelake_write(java, wh, sc)
    rows = compare_read(java, t, wh, "tidelake wrote, incremental clustering")
    on_b = [("b", "<", 10)]
    scanned = len(t.scan(filter=on_b).native_read().files)
    _cluster_like_java(java, t, full=True)
    t = tidelake.open_table(t.path)
    assert compare_read(java, t, wh, "tidelake fully clustered", pypaimon=True) == rows
    # data skipping: the files are sorted by b, so a filter on b plans a few of them
    clustered = len(t.scan(filter=on_b).native_read().files)
    assert clustered < scanned and clustered < len(_files(t)) / 2, (clustered, scanned, len(_files(t)))
    # one run at the max level, clustered by the same columns: Java picks nothing more
    assert java.run({"op": "cluster_pick", "path": t.path, "full": True})["units"] == []
    # Java writes on, tidelake clusters again as Java picks
    java.run({**sc.java_job(wh, with_steps=False), "existing": True, "steps": [_commit(30, 5)]})
    _cluster_like_java(java, t, full=True)
    assert len(compare_read(java, tidelake.open_table(t.path), wh, "java wrote on")) == len(rows) + 31


def test_clustering_needs_columns(tmp_path):
    t = tidelake.create_table(str(tmp_path / "t"), pa.schema([("a", pa.int32())]),
                              options={"bucket": "-1", "clustering.incremental": "true"})
    t.write(pa.table({"a": pa.array([1, 2], pa.int32())}))
    try:
        t.compact()
    except tidelake.InvalidArgumentError as e:
        assert "clustering.columns" in str(e)
    else:
        raise AssertionError("compacted an incremental-clustering table without clustering.columns")
    assert t.to_arrow().num_rows == 2


def test_clustering_applies_deletion_vectors(java, tmp_path):
    wh = str(tmp_path)
    sc = Scenario("inc_cluster_dv", FIELDS, [_commit(30, i) for i in range(3)], partition_keys=["p"],
                  options={**OPTIONS, "deletion-vectors.enabled": "true"}, mode="batch")
    t = tidelake_write(java, wh, sc)
    t.delete([("a", "<", 20)])
    t = tidelake.open_table(t.path)
    rows = compare_read(java, t, wh, "tidelake deleted, before clustering")
    assert t.system("table_indexes").num_rows > 0
    _cluster_like_java(java, t, full=True)
    t = tidelake.open_table(t.path)
    assert compare_read(java, t, wh, "tidelake clustered with deletion vectors", pypaimon=True) == rows
    # every file with a vector was rewritten: no deletion vector is left
    assert t.system("table_indexes").num_rows == 0
