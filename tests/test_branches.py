"""Paimon branches through the Python API and the CLI: create (from a snapshot, a tag, empty),
open, read and write a branch, list, delete, fast-forward, ``scan.fallback-branch``, typed
errors; splits of a branch read in another process; branch creation racing expiration in other
processes never leaves an acknowledged branch with deleted files."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import time

import pyarrow as pa
import pytest
from click.testing import CliRunner

import tidelake
from _workers import branch_creator, create_branch_slowly, overwrite_and_expire, release_when_ready
from tidelake import cli

SCHEMA = pa.schema([("p", pa.int64()), ("v", pa.int64())])


def rows(t: tidelake.Table, **kw) -> list[tuple[int, int]]:
    return sorted((r["p"], r["v"]) for r in t.to_arrow(**kw).to_pylist())


def data(*pairs: tuple[int, int]) -> pa.Table:
    return pa.table({"p": [p for p, _ in pairs], "v": [v for _, v in pairs]}, schema=SCHEMA)


@pytest.fixture
def table(tmp_path) -> tidelake.Table:
    t = tidelake.create_table(tmp_path / "t", SCHEMA, partition_keys=["p"])
    t.write(data((1, 1)))
    t.create_tag("t1")
    t.write(data((1, 2)))
    return t


def test_branches_are_created_read_written_and_deleted(table, tmp_path):
    assert table.branch == "main" and table.branches() == []
    b = table.create_branch("b", from_snapshot=1)
    assert b.branch == "b" and "branch 'b'" in repr(b)
    assert (tmp_path / "t" / "branch" / "branch-b" / "snapshot" / "snapshot-1").is_file()
    assert rows(b) == [(1, 1)]
    b.write(data((2, 20)))
    assert rows(b) == [(1, 1), (2, 20)]
    assert rows(table) == [(1, 1), (1, 2)]
    assert rows(tidelake.open_table(table.path, branch="b")) == [(1, 1), (2, 20)]
    assert [s.id for s in b.snapshots()] == [1, 2]

    from_tag = table.create_branch("from-tag", from_tag="t1")
    assert rows(from_tag) == [(1, 1)] and [tg.name for tg in from_tag.tags()] == ["t1"]
    empty = table.create_branch("empty")
    assert rows(empty) == [] and empty.latest_snapshot() is None
    assert table.branches() == ["b", "empty", "from-tag"]

    # Splits of a branch name it, so a reader elsewhere re-opens the branch.
    splits = b.scan().splits()
    assert {s.branch for s in splits} == {"b"}
    assert sorted((r["p"], r["v"]) for s in splits for r in s.read().read_all().to_pylist()) == [(1, 1), (2, 20)]

    branches = table.system("branches")
    assert branches.column_names == ["branch_name", "create_time"]  # Java's BranchesTable
    assert branches.column("branch_name").to_pylist() == ["b", "empty", "from-tag"]
    assert branches.column("create_time").null_count == 0

    table.delete_branch("empty")
    assert table.branches() == ["b", "from-tag"]


@pytest.mark.parametrize("name", ["main", "", "  ", "123", "a/b"])
def test_bad_branch_names_are_refused(table, name):
    with pytest.raises(tidelake.InvalidArgumentError, match="branch name"):
        table.create_branch(name)


def test_missing_branches_snapshots_and_tags_are_typed_errors(table):
    with pytest.raises(tidelake.TableNotFoundError, match="branch 'nope'"):
        tidelake.open_table(table.path, branch="nope")
    with pytest.raises(tidelake.TableNotFoundError, match="branch 'nope'"):
        table.delete_branch("nope")
    with pytest.raises(tidelake.TableNotFoundError, match="branch 'nope'"):
        table.fast_forward("nope")
    with pytest.raises(tidelake.TableNotFoundError, match="snapshot 9"):
        table.create_branch("x", from_snapshot=9)
    with pytest.raises(tidelake.TableNotFoundError, match="tag 'nope'"):
        table.create_branch("x", from_tag="nope")
    with pytest.raises(tidelake.InvalidArgumentError, match="at most one"):
        table.create_branch("x", from_snapshot=1, from_tag="t1")
    assert table.branches() == []
    table.create_branch("x")
    with pytest.raises(tidelake.TableAlreadyExistsError, match="branch 'x'"):
        table.create_branch("x")
    with pytest.raises(tidelake.InvalidArgumentError, match="no snapshot"):
        table.fast_forward("x")


def test_fast_forward_and_fallback_branch(table):
    b = table.create_branch("b", from_tag="t1")
    b.write(data((2, 20)))
    table.fast_forward("b")
    assert rows(table) == [(1, 1), (2, 20)]
    assert [s.id for s in table.snapshots()] == [1, 2]

    fb = table.create_branch("fb", from_snapshot=1)
    fb.write(data((3, 300)))
    table.set_option("scan.fallback-branch", "fb")
    # Partitions 1 and 2 from main, 3 (absent from main) from the fallback branch, also read
    # split by split elsewhere.
    assert rows(table) == [(1, 1), (2, 20), (3, 300)]
    splits = table.scan().splits()
    assert sorted((r["p"], r["v"]) for s in splits for r in s.read().read_all().to_pylist()) == rows(table)
    with pytest.raises(tidelake.InvalidArgumentError, match="fallback"):
        table.delete_branch("fb")


def invoke(*args, code=0):
    result = CliRunner().invoke(cli.main, [str(a) for a in args], prog_name="tidelake")
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr, result.exception)
    return result


def test_cli_branches(table):
    path = table.path
    assert invoke("branches", "create", path, "b", "--snapshot", 1).stdout.strip() == "created branch b (snapshot 1)"
    invoke("branches", "create", path, "e")
    invoke("branches", "create", path, "t", "--tag", "t1")
    assert json.loads(invoke("branches", path, "--json").stdout) == ["b", "e", "t"]
    assert invoke("branches", "list", path).stdout.splitlines() == ["b", "e", "t", "(3 branches)"]
    info = json.loads(invoke("--branch", "b", "info", path, "--json").stdout)
    assert info["branch"] == "b" and info["branches"] == ["b", "e", "t"] and len(info["snapshots"]) == 1
    assert "branch: main; other branches: b, e, t" in invoke("info", path).stdout
    cat = invoke("--branch", "b", "cat", path, "--json").stdout
    assert [json.loads(line) for line in cat.splitlines()] == [{"p": 1, "v": 1}]
    assert "--branch" in invoke("--help").stdout

    invoke("branches", "delete", path, "e")
    assert invoke("branches", "delete", path, "e", code=3).stderr.startswith("error: ")
    assert "branch 'e'" in invoke("branches", "delete", path, "e", code=3).stderr
    invoke("branches", "create", path, "12", code=2)
    invoke("--branch", "nope", "cat", path, code=3)

    tidelake.open_table(path, branch="b").write(data((5, 5)))
    out = invoke("branches", "fast-forward", path, "b").stdout.strip()
    assert out == "fast-forwarded main to b (latest snapshot 2)"
    assert rows(tidelake.open_table(path)) == [(1, 1), (5, 5)]


def expiring_table(tmp_path) -> tuple[tidelake.Table, str, str]:
    """A table whose writers expire all but the latest snapshot, with one row; and the go file
    and ready directory of worker processes."""
    options = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1", "snapshot.time-retained": "1ms"}
    t = tidelake.create_table(tmp_path / "t", SCHEMA, options=options)
    t.write(data((0, 0)))
    (tmp_path / "ready").mkdir()
    return t, str(tmp_path / "go"), str(tmp_path / "ready")


def test_branch_creation_racing_expiration_never_loses_an_acknowledged_branch(tmp_path):
    """One process overwrites main and expires all but the latest snapshot after every commit
    (each expiration deletes the previous data file); another creates branches from whatever
    snapshot is latest. Every branch whose creation returned must stay fully readable."""
    t, go, ready = expiring_table(tmp_path)
    with mp.get_context("spawn").Pool(2) as pool:
        writing = pool.apply_async(overwrite_and_expire, (t.path, 60, go, ready))
        creating = pool.apply_async(branch_creator, (t.path, 60, go, ready))
        release_when_ready(ready, 2, go)
        commits = writing.get(timeout=240)
        created, refused = creating.get(timeout=240)
    print(f"{commits} overwrites; {len(created)} branches created, {refused} creations refused")
    assert len(created) >= 10
    assert len(t.snapshots()) == 1  # main kept expiring
    for name, snapshot_id in created:
        b = tidelake.open_table(t.path, branch=name)
        assert [s.id for s in b.snapshots()] == [snapshot_id]
        assert len(b.to_arrow()) == 1, name  # its one data file is still there
    assert sorted(os.listdir(tmp_path / "t" / "branch")) == sorted(f"branch-{n}" for n, _ in created)


def test_a_branch_whose_snapshot_expires_while_it_is_created_is_refused(tmp_path):
    """The creator reads snapshot 1, then its first branch file lands 1.5 s late; meanwhile this
    process overwrites the table and expires snapshot 1 with its data file. The creation must
    fail and leave no branch (maintenance listed branches before the branch existed)."""
    t, go, ready = expiring_table(tmp_path)
    with mp.get_context("spawn").Pool(1) as pool:
        creating = pool.apply_async(create_branch_slowly, (t.path, "b", 1, go, ready))
        release_when_ready(ready, 1, go)
        time.sleep(0.5)  # the creator has read snapshot 1 and waits on its first put
        t.write(data((1, 1)), mode="overwrite")
        assert [s.id for s in t.snapshots()] == [2]
        outcome = creating.get(timeout=60)
    assert outcome == "TableNotFoundError"
    assert t.branches() == [] and not (tmp_path / "t" / "branch" / "branch-b").exists()
