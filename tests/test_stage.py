"""Write-audit-publish (``Table.stage``): a stage forks the latest snapshot onto a branch, is
audited, then is published as ONE snapshot of the table or discarded.

What is promised and checked here: nothing staged is visible before publishing; publishing adds
exactly one snapshot whose rows are the stage's; an exception or a failed expectation discards
the stage; a table that moved since the fork refuses the publish (the branch is kept); writers of
the table racing a publish (processes) lose no acknowledged write on either side; a process
killed (SIGKILL) while writing to a stage or while publishing leaves the table exactly as before
or exactly as the stage; Java Paimon reads a published table as tidelake does.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pytest
from click.testing import CliRunner

import tidelake
from _java import compare_read
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from tidelake.cli import main as cli

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def rows(keys, tag: str = "a") -> pa.Table:
    return pa.table({"k": list(keys), "v": [f"{tag}{k}" for k in keys]}, schema=SCHEMA)


def state(t: tidelake.Table) -> list[tuple]:
    return sorted((r["k"], r["v"]) for r in t.to_arrow().to_pylist())


def keys(t: tidelake.Table) -> set[int]:
    return set(t.to_arrow()["k"].to_pylist())


def pk_table(path, **options: str) -> tidelake.Table:
    t = tidelake.create_table(str(path), SCHEMA, primary_keys=["k"], bucket=2, options=options or None)
    t.write(rows(range(5)))
    return t


# ---- publish, discard, expectations ------------------------------------------------------------


def test_publish_makes_the_staged_rows_one_new_snapshot(tmp_path):
    t = pk_table(tmp_path / "t")
    before, main_rows = t.latest_snapshot_id(), state(t)
    with t.stage("etl-2026-12-01") as s:
        assert isinstance(s, tidelake.Stage) and s.branch == "etl-2026-12-01" and s.base_snapshot_id == before
        s.write(rows([10, 11], "b"))
        s.upsert(rows([1], "c"))
        s.delete("k = 2")
        assert state(t) == main_rows and t.latest_snapshot_id() == before  # nothing visible yet
        staged = state(s)
        diff = s.changes()
        assert sorted((r["k"], r["_row_kind"], r["v"]) for r in diff.to_pylist()) == [
            (1, "+I", "c1"), (2, "-D", "a2"), (10, "+I", "b10"), (11, "+I", "b11")]
    assert staged == sorted([(k, f"a{k}") for k in (0, 3, 4)] + [(1, "c1"), (10, "b10"), (11, "b11")])
    assert state(t) == staged and t.latest_snapshot_id() == before + 1
    assert t.branches() == []
    # the table's own change readers see what the stage changed
    assert sorted(t.changes(before, mode="diff").to_pylist(), key=repr) == sorted(diff.to_pylist(), key=repr)
    assert t.latest_snapshot().commit_user.startswith("tidelake-publish-")


def test_published_appends_are_the_delta_of_the_new_snapshot(tmp_path):
    t = tidelake.create_table(str(tmp_path / "t"), SCHEMA)
    t.write(rows(range(3)))
    before = t.latest_snapshot_id()
    with t.stage("etl") as s:
        s.write(rows([7, 8]))
        s.write(rows([9]))
    assert t.latest_snapshot_id() == before + 1 and t.latest_snapshot().commit_kind == "APPEND"
    assert sorted(t.changes(before, mode="delta")["k"].to_pylist()) == [7, 8, 9]
    assert keys(t) == {0, 1, 2, 7, 8, 9}


def test_stage_of_an_empty_table_and_a_stage_that_changed_nothing(tmp_path):
    t = tidelake.create_table(str(tmp_path / "t"), SCHEMA, primary_keys=["k"], bucket=1)
    with t.stage("first") as s:
        assert s.base_snapshot_id is None and s.changes().num_rows == 0
        s.write(rows([1, 2]))
    assert keys(t) == {1, 2} and t.latest_snapshot_id() == 1
    s = t.stage("idle")
    assert s.publish() is None and t.latest_snapshot_id() == 1 and t.branches() == []
    with pytest.raises(tidelake.InvalidArgumentError, match="already published"):
        s.abandon()


def test_an_exception_discards_the_stage(tmp_path):
    t = pk_table(tmp_path / "t")
    before, main_rows = t.latest_snapshot_id(), state(t)
    with pytest.raises(RuntimeError, match="boom"):
        with t.stage("etl") as s:
            s.write(rows([10]))
            raise RuntimeError("boom")
    assert state(t) == main_rows and t.latest_snapshot_id() == before and t.branches() == []
    with t.stage("etl") as s:  # the name is free again
        s.write(rows([10]))
    assert keys(t) == {0, 1, 2, 3, 4, 10}


def _raise_assertion(diff: pa.Table) -> None:
    assert diff.num_rows > 100, "too few changes"


@pytest.mark.parametrize("expectation,why", [
    ({"min_rows": 100}, "fewer than min_rows=100"),
    ({"max_rows": 6}, "more than max_rows=6"),
    ({"not_null": ["v"]}, "null values .*'v': 1"),
    ({"check": lambda diff: diff.num_rows == 0, "name": "no changes"}, "no changes failed: check <lambda> returned False"),
    ({"check": _raise_assertion}, "too few changes"),
])
def test_a_failed_expectation_raises_and_discards(tmp_path, expectation, why):
    t = pk_table(tmp_path / "t")
    before, main_rows = t.latest_snapshot_id(), state(t)
    with pytest.raises(tidelake.ExpectationError, match=why):
        with t.stage("etl") as s:
            s.expect(**expectation)
            s.write(rows([10, 11]))
            s.write(pa.table({"k": [12], "v": [None]}, schema=SCHEMA))
    assert state(t) == main_rows and t.latest_snapshot_id() == before and t.branches() == []


def test_met_expectations_publish_and_bad_ones_are_refused(tmp_path):
    t = pk_table(tmp_path / "t")
    with t.stage("etl") as s:
        s.write(rows([10, 11]))
        s.write(pa.table({"k": [0], "v": [None]}, schema=SCHEMA))  # not a changed row after the next upsert
        s.upsert(rows([0]))
        s.expect(min_rows=7, max_rows=7, not_null=["v"], check=lambda diff: diff.num_rows == 2)
        s.audit()
        for bad, what in (({"min_rows": -1}, "min_rows"), ({"not_null": ["nope"]}, "unknown columns"),
                          ({"check": 3}, "callable")):
            with pytest.raises(tidelake.InvalidArgumentError, match=what):
                s.expect(**bad)
    assert keys(t) == {0, 1, 2, 3, 4, 10, 11}


# ---- conflicts -----------------------------------------------------------------------------------


def test_publish_is_refused_when_main_moved_and_the_branch_is_kept(tmp_path):
    t = pk_table(tmp_path / "t")
    s = t.stage("etl")
    s.write(rows([10]))
    t.write(rows([20]))
    with pytest.raises(tidelake.CommitConflictError, match="branch is kept for inspection"):
        s.publish()
    assert keys(t) == {0, 1, 2, 3, 4, 20} and t.branches() == ["etl"]
    assert keys(tidelake.open_table(t.path, branch="etl")) == {0, 1, 2, 3, 4, 10}
    with pytest.raises(tidelake.CommitConflictError):  # by name too, still refused
        t.publish_stage("etl")
    t.delete_branch("etl")
    # the context-manager form: the conflict propagates, the branch stays
    with pytest.raises(tidelake.CommitConflictError, match="moved"):
        with t.stage("etl2") as s:
            s.write(rows([30]))
            t.write(rows([21]))
    assert keys(t) == {0, 1, 2, 3, 4, 20, 21} and t.branches() == ["etl2"]


def test_an_empty_table_written_meanwhile_refuses_the_publish(tmp_path):
    t = tidelake.create_table(str(tmp_path / "t"), SCHEMA, primary_keys=["k"], bucket=1)
    s = t.stage("etl")
    s.write(rows([1]))
    t.write(rows([2]))
    with pytest.raises(tidelake.CommitConflictError, match="kept"):
        s.publish()
    assert keys(t) == {2}


def test_a_stage_that_altered_the_schema_is_refused(tmp_path):
    t = pk_table(tmp_path / "t")
    s = t.stage("etl")
    s.add_column("extra", pa.int64())
    s.write(pa.table({"k": [10], "v": ["x"], "extra": [1]}))
    with pytest.raises(tidelake.UnsupportedError, match="altered the schema"):
        s.publish()
    assert keys(t) == set(range(5)) and t.branches() == ["etl"]


# ---- processes: racing writers, kill -9 ------------------------------------------------------------

_TESTS = os.path.dirname(os.path.abspath(__file__))


def _spawn(code: str, *args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([_TESTS, os.environ.get("PYTHONPATH", "")]))
    return subprocess.Popen([sys.executable, "-c", code, *args], env=env, stderr=subprocess.PIPE)


def _wait_for(path, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:] if proc.stderr else proc.returncode
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.02)


_MAIN_WRITER = """
import json, random, sys, time
import pyarrow as pa, tidelake
path, wid, seconds, acked = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
t = tidelake.open_table(path)
schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
end, i = time.monotonic() + seconds, 0
with open(acked, "a") as out:
    while time.monotonic() < end:
        k = wid * 1_000_000 + i
        i += 1
        print(json.dumps({"try": k}), file=out, flush=True)
        try:
            t.write(pa.table({"k": [k], "v": ["w"]}, schema=schema))
        except tidelake.CommitConflictError:
            continue
        print(json.dumps({"acked": k}), file=out, flush=True)
        time.sleep(random.uniform(0, 0.15))
"""


def test_main_writers_racing_publishes_lose_no_acknowledged_write(tmp_path):
    """Two writer processes append to main while this process stages and publishes in a loop:
    every acknowledged write of both sides is in the table, no refused stage's row is."""
    t = pk_table(tmp_path / "t", **{"commit.max-retries": "50"})
    logs = [tmp_path / f"writer-{w}.jsonl" for w in range(2)]
    writers = [_spawn(_MAIN_WRITER, t.path, str(w + 1), "8", str(log)) for w, log in enumerate(logs)]
    published, refused, n = set(), set(), 0
    deadline = time.monotonic() + 7
    while time.monotonic() < deadline:
        batch = range(500_000 + n * 10, 500_000 + n * 10 + 3)
        n += 1
        s = t.stage(f"etl-{n}")
        s.write(rows(batch))
        try:
            s.publish()
            published.update(batch)
        except tidelake.CommitConflictError:
            refused.update(batch)
            s.abandon()
    for w in writers:
        assert w.wait(timeout=120) == 0, w.stderr.read().decode()[-2000:] if w.stderr else ""
    acked, tried = set(), set()
    for log in logs:
        for line in log.read_text().splitlines():
            entry = json.loads(line)
            (acked if "acked" in entry else tried).add(entry.get("acked", entry.get("try")))
    final = keys(t)
    print(f"published {len(published) // 3} stages, refused {len(refused) // 3}; writers acked {len(acked)}")
    assert published and acked
    assert acked <= final and published <= final and not (refused & final)
    assert final <= set(range(5)) | acked | tried | published
    assert t.branches() == []


_PAUSED_WRITER = """
import sys
import pyarrow as pa, tidelake
from tidelake import _internal
path, key, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3]
t = tidelake.open_table(path)
_internal.set_failpoint("commit-before-snapshot", "1*sleep(3000)")
open(ready, "w").close()
t.write(pa.table({"k": [key], "v": ["w"]}, schema=t.schema))
"""


def test_a_writer_that_loses_the_race_to_a_publish_lands_on_top(tmp_path):
    """A main writer paused right before creating its snapshot while a stage publishes: its
    snapshot id is taken, so it retries on top of the published snapshot and both land."""
    t = pk_table(tmp_path / "t")
    s = t.stage("etl")
    s.write(rows([10]))
    proc = _spawn(_PAUSED_WRITER, t.path, "20", str(tmp_path / "ready"))
    _wait_for(tmp_path / "ready", proc)
    time.sleep(1)  # the writer is asleep in its commit, based on the fork
    published = s.publish()
    assert proc.wait(timeout=60) == 0, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
    assert keys(t) == {0, 1, 2, 3, 4, 10, 20}
    assert t.latest_snapshot_id() == published + 1


def test_a_writer_that_wins_the_race_makes_the_publish_fail(tmp_path):
    """A publish paused right before creating its snapshot while a main writer commits: the
    publish finds its snapshot id taken and is refused; the writer's row is kept."""
    from tidelake import _internal

    t = pk_table(tmp_path / "t")
    s = t.stage("etl")
    s.write(rows([10]))
    proc = _spawn("import sys, time, pyarrow as pa, tidelake; time.sleep(1); t = tidelake.open_table(sys.argv[1]);"
                  "t.write(pa.table({'k': [20], 'v': ['w']}, schema=t.schema))", t.path)
    _internal.set_failpoint("commit-before-snapshot", "1*sleep(4000)")
    try:
        with pytest.raises(tidelake.CommitConflictError, match="kept"):
            s.publish()
    finally:
        _internal.set_failpoint("commit-before-snapshot", "off")
    assert proc.wait(timeout=60) == 0, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
    assert keys(t) == {0, 1, 2, 3, 4, 20} and t.branches() == ["etl"]


_STAGER = """
import sys
import pyarrow as pa, tidelake
from tidelake import _internal
path, point, ready = sys.argv[1], sys.argv[2], sys.argv[3]
t = tidelake.open_table(path)
s = t.stage("crashy")
s.write(pa.table({"k": [10, 11], "v": ["s", "s"]}, schema=t.schema))
s.delete("k = 0")
_internal.set_failpoint(point, "sleep(60000)")
open(ready, "w").close()
if point == "write-flush":
    s.write(pa.table({"k": [12], "v": ["s"]}, schema=t.schema))
else:
    s.publish()
"""


@pytest.mark.parametrize("point", ["write-flush", "commit-before-snapshot", "commit-after-snapshot"])
def test_kill_9_while_staging_or_publishing(tmp_path, point):
    """SIGKILL while writing to the stage, before the published snapshot is created, or right
    after: the table is exactly as before (the stage branch kept, publishable) or exactly the
    stage (publishing again answers the same snapshot)."""
    t = pk_table(tmp_path / "t")
    before, main_rows = t.latest_snapshot_id(), state(t)
    proc = _spawn(_STAGER, t.path, point, str(tmp_path / "ready"))
    _wait_for(tmp_path / "ready", proc)
    time.sleep(1.5)  # inside the paused step
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL
    t = tidelake.open_table(t.path)
    staged = sorted([(k, f"a{k}") for k in (1, 2, 3, 4)] + [(10, "s"), (11, "s")])
    assert t.branches() == ["crashy"]
    assert state(tidelake.open_table(t.path, branch="crashy")) == staged
    if point == "commit-after-snapshot":
        assert state(t) == staged and t.latest_snapshot_id() == before + 1
        assert t.publish_stage("crashy") == before + 1  # already published: the same snapshot
    else:
        assert state(t) == main_rows and t.latest_snapshot_id() == before
        assert t.publish_stage("crashy") == before + 1
    assert state(t) == staged and t.latest_snapshot_id() == before + 1 and t.branches() == []
    t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000)
    assert state(tidelake.open_table(t.path)) == staged


# ---- front-ends and interop ------------------------------------------------------------------------


def test_cli_stage_and_publish(tmp_path):
    t = pk_table(tmp_path / "t")
    run = CliRunner().invoke
    out = run(cli, ["branches", "stage", t.path, "etl"])
    assert out.exit_code == 0 and "created stage etl (from snapshot 1)" in out.output, out.output
    tidelake.open_table(t.path, branch="etl").write(rows([10]))
    assert keys(t) == set(range(5))
    out = run(cli, ["branches", "publish", t.path, "etl"])
    assert out.exit_code == 0 and "published etl: snapshot 2" in out.output, out.output
    assert keys(t) == {0, 1, 2, 3, 4, 10} and t.branches() == []
    run(cli, ["branches", "stage", t.path, "etl"])
    tidelake.open_table(t.path, branch="etl").write(rows([11]))
    t.write(rows([12]))
    out = run(cli, ["branches", "publish", t.path, "etl"])
    assert out.exit_code == 1 and "kept for inspection" in out.output, out.output
    assert run(cli, ["branches", "delete", t.path, "etl"]).exit_code == 0
    assert keys(t) == {0, 1, 2, 3, 4, 10, 12} and t.branches() == []


def test_java_reads_a_published_table_as_tidelake_does(java, tmp_path):  # noqa: F811
    wh = str(tmp_path / "wh")
    catalog = tidelake.Catalog(wh)
    catalog.create_database("db")
    t = catalog.create_table("db.wap", SCHEMA, primary_keys=["k"], bucket=2)
    t.write(rows(range(20)))
    t.write(rows(range(20, 30)))
    before = t.latest_snapshot_id()
    with t.stage("etl") as s:
        s.upsert(rows(range(5), "new"))
        s.delete("k >= 25")
        s.write(rows(range(40, 45)))
        for _ in range(5):  # enough commits to compact on the stage: files replaced, not only added
            s.write(rows([random.randrange(100)], "r"))
    assert t.latest_snapshot_id() == before + 1
    compare_read(java, t, wh, "published stage", pypaimon=True)
    compare_read(java, t, wh, "before the publish", snapshot_id=before)


def test_spark_creates_writes_and_publishes_a_stage(spark, tmp_path):
    import tidelake.spark
    from _peers import new_warehouse
    from tidelake.spark.statements import CATALOG_CONF

    catalog, wh = new_warehouse(tmp_path)
    tidelake.spark.register(spark, catalog={"metastore": "filesystem", "warehouse": wh}, check_workers=False)
    try:
        t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], bucket=2)
        t.write(rows(range(3)))
        [row] = tidelake.spark.sql(spark, "CALL sys.create_stage(table => 'db.t', branch => 'etl')").collect()
        assert (row.branch, row.base_snapshot_id) == ("etl", 1)
        df = spark.createDataFrame([(10, "s"), (1, "s")], "k bigint, v string")
        tidelake.spark.write(df, catalog.get_table("db.t$branch_etl"))
        assert keys(t) == {0, 1, 2}
        [row] = tidelake.spark.sql(spark, "CALL sys.publish_stage(table => 'db.t', branch => 'etl')").collect()
        assert row.snapshot_id == 2 and t.branches() == []
        assert state(t) == [(0, "a0"), (1, "s"), (2, "a2"), (10, "s")]
    finally:
        spark.conf.unset(CATALOG_CONF)
