"""Marking partitions done (``partition.mark-done-action``), two-way with Java Paimon 1.3.1:
the ``_SUCCESS`` file a batch write with ``partition.end-input-to-done`` leaves in each
partition it wrote (Java: Spark's ``markDoneIfNeeded``, reproduced by the oracle's batch
writes), and the ``mark_partition_done`` procedure through Python, the CLI and
``tidelake.spark.sql``. Markers are compared with Java's byte layout and parsed with Java's
``SuccessFile``; actions tidelake does not implement are refused before anything is written."""

from __future__ import annotations

import json
import pathlib
import re
import time

import pyarrow as pa
import pytest
from click.testing import CliRunner

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import Scenario, compare_read, java_write
from tidelake import cli

OPTIONS = {"bucket": "1", "partition.mark-done-action": "success-file",
           "partition.end-input-to-done": "true"}
FIELDS = [("id", "BIGINT NOT NULL"), ("dt", "STRING NOT NULL"), ("v", "INT")]
SCHEMA = pa.schema([("id", pa.int64(), False), ("dt", pa.string(), False), ("v", pa.int32())])


def _rows(dt: str, n: int = 3) -> pa.Table:
    return pa.table({"id": list(range(n)), "dt": [dt] * n, "v": list(range(n))}, schema=SCHEMA)


def _marker(t: tidelake.Table, partition: str) -> pathlib.Path:
    return pathlib.Path(t.path) / partition / "_SUCCESS"


def _java_marker(java, wh: str, name: str, partition: str) -> dict:
    return java.run({"op": "success_file", "warehouse": wh, "table": f"db.{name}", "partition": partition})


def _layout(text: str) -> str:
    """A marker's bytes with its two times blanked: what must equal Java's."""
    return re.sub(r"\d+", "N", text)


def test_java_marks_tidelake_continues(java, tmp_path):
    """Java writes dt=a (and marks it); tidelake writes dt=b, then dt=a again: its markers have
    Java's bytes, Java's SuccessFile reads them, and rewriting dt=a keeps Java's creation time."""
    wh = str(tmp_path)
    sc = Scenario("md_java", FIELDS, [{"rows": [[1, "a", 1], [2, "a", 2]]}], ["id", "dt"], ["dt"], OPTIONS,
                  mode="batch")
    t = java_write(java, wh, sc)
    java_text = _marker(t, "dt=a").read_text()
    created = _java_marker(java, wh, sc.name, "dt=a")
    assert created["exists"] and created["creationTime"] == created["modificationTime"]
    before = int(time.time() * 1000)
    t.write(_rows("b"))
    ours = _java_marker(java, wh, sc.name, "dt=b")
    assert ours["exists"] and before <= ours["creationTime"] == ours["modificationTime"] <= time.time() * 1000
    assert _layout(_marker(t, "dt=b").read_text()) == _layout(java_text)
    json.loads(_marker(t, "dt=b").read_text())
    time.sleep(0.01)
    t.write(_rows("a", 1))
    again = _java_marker(java, wh, sc.name, "dt=a")
    assert again["creationTime"] == created["creationTime"] < again["modificationTime"]
    compare_read(java, t, wh, "mark-done java->tidelake")


def test_tidelake_marks_java_continues(java, tmp_path):
    """tidelake creates the table and writes dt=a (one-shot write) and dt=b (writer + commit):
    Java reads both markers; Java then writes dt=c into the same table and marks it; the rows
    agree."""
    wh = str(tmp_path)
    cat = tidelake.Catalog(wh)
    cat.create_database("db")
    t = cat.create_table("db.md_ours", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options=OPTIONS)
    t.write(_rows("a"))
    w = t.writer()
    w.write(_rows("b"))
    t.commit(w.prepare_commit(), commit_user=w.commit_user)
    w.close()
    for p in ("dt=a", "dt=b"):
        found = _java_marker(java, wh, "md_ours", p)
        assert found["exists"] and found["creationTime"] == found["modificationTime"], (p, found)
    sc = Scenario("md_ours", FIELDS, [{"rows": [[7, "c", 7]]}], ["id", "dt"], ["dt"], OPTIONS, mode="batch")
    java.run({**sc.java_job(wh), "existing": True})
    assert _marker(t, "dt=c").exists()
    compare_read(java, cat.get_table("db.md_ours"), wh, "mark-done tidelake->java")


def test_no_marker_without_end_input_or_for_streaming_commits(tmp_path):
    """Without ``partition.end-input-to-done`` a write marks nothing, and commits with a
    stream identifier (a streaming job: its input does not end) never mark."""
    plain = tidelake.create_table(str(tmp_path / "plain"), SCHEMA, partition_keys=["dt"],
                                  options={"partition.mark-done-action": "success-file"})
    plain.write(_rows("a"))
    assert not _marker(plain, "dt=a").exists()
    t = tidelake.create_table(str(tmp_path / "stream"), SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                              options=OPTIONS)
    w = t.writer()
    w.write(_rows("a"))
    t.commit(w.prepare_commit(), commit_identifier=1, commit_user=w.commit_user)
    w.close()
    assert t.to_arrow().num_rows == 3 and not _marker(t, "dt=a").exists()


def test_mark_partition_done_procedure_python_cli_java(java, tmp_path):
    """``Table.mark_partition_done`` and ``tidelake mark-partition-done`` write the marker Java's
    procedure writes (Java's SuccessFile reads it), keep the creation time of Java's marker and
    refresh its modification time; partial specs and unpartitioned tables are refused."""
    wh = str(tmp_path)
    sc = Scenario("md_proc", FIELDS, [{"rows": [[1, "a", 1]]}], ["id", "dt"], ["dt"],
                  {"bucket": "1", "partition.mark-done-action": "success-file"}, mode="batch")
    t = java_write(java, wh, sc)
    assert not _marker(t, "dt=a").exists()
    t.mark_partition_done([{"dt": "a"}])
    ours = _java_marker(java, wh, sc.name, "dt=a")
    assert ours["exists"] and ours["creationTime"] == ours["modificationTime"]
    time.sleep(0.01)
    java.run({"op": "mark_done", "warehouse": wh, "table": f"db.{sc.name}", "partitions": [{"dt": "a"}]})
    theirs = _java_marker(java, wh, sc.name, "dt=a")
    assert theirs["creationTime"] == ours["creationTime"] < theirs["modificationTime"]
    java.run({"op": "mark_done", "warehouse": wh, "table": f"db.{sc.name}", "partitions": [{"dt": "x"}]})
    time.sleep(0.01)
    result = CliRunner().invoke(cli.main, ["mark-partition-done", t.path, "--partition", "dt=x", "--partition",
                                           "dt=y"], prog_name="tidelake")
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "marked dt=x; dt=y done"
    x = _java_marker(java, wh, sc.name, "dt=x")
    assert x["creationTime"] < x["modificationTime"]
    assert _java_marker(java, wh, sc.name, "dt=y")["exists"]
    two = tidelake.create_table(str(tmp_path / "two"), pa.schema([("a", pa.int32()), ("b", pa.int32())]),
                                partition_keys=["a", "b"])
    with pytest.raises(tidelake.InvalidArgumentError, match="'b' is missing"):
        two.mark_partition_done([{"a": 1}])
    flat = tidelake.create_table(str(tmp_path / "flat"), SCHEMA)
    with pytest.raises(tidelake.InvalidArgumentError, match="not partition keys"):
        flat.mark_partition_done([{"dt": "a"}])


@pytest.mark.parametrize("action", ["done-partition", "success-file,mark-event"])
def test_actions_needing_a_metastore_are_refused(java, tmp_path, action):
    """``done-partition`` and ``mark-event`` go through a metastore, which tidelake does not
    implement: it refuses writes and the procedure on such a Java table, naming the option,
    before writing anything (no silent skip)."""
    wh = str(tmp_path)
    opts = {**OPTIONS, "partition.mark-done-action": action}
    sc = Scenario(f"md_refused_{len(action)}", FIELDS, [], ["id", "dt"], ["dt"], opts, mode="batch")
    java.run(sc.java_job(wh))
    t = tidelake.Catalog(wh).get_table(f"db.{sc.name}")
    with pytest.raises(tidelake.UnsupportedError, match="'partition.mark-done-action'"):
        t.write(_rows("a"))
    with pytest.raises(tidelake.UnsupportedError, match="'partition.mark-done-action'"):
        t.mark_partition_done([{"dt": "a"}])
    assert t.snapshots() == [] and not _marker(t, "dt=a").exists()


def test_mark_partition_done_spark_call(spark, tmp_path):
    """``CALL sys.mark_partition_done(table => ..., partitions => 'dt=a;dt=b')`` with Paimon's
    argument names and result column marks each partition."""
    import tidelake.spark

    t = tidelake.create_table(str(tmp_path / "t"), SCHEMA, partition_keys=["dt"],
                              options={"partition.mark-done-action": "success-file"})
    rows = tidelake.spark.sql(spark, f"CALL sys.mark_partition_done(table => '{t.path}', "
                                     "partitions => 'dt=a;dt=b')").collect()
    assert [r.asDict() for r in rows] == [{"result": True}]
    for p in ("dt=a", "dt=b"):
        marker = json.loads(_marker(t, p).read_text())
        assert marker["creationTime"] == marker["modificationTime"] > 0
    with pytest.raises(tidelake.InvalidArgumentError, match="partitions =>"):
        tidelake.spark.sql(spark, f"CALL sys.mark_partition_done(table => '{t.path}')")
