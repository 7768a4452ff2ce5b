"""The ``remove_unexisting_files`` procedure (Java ``ListUnexistingFiles`` + one commit deleting
what it lists): a data file lost from storage is listed, then removed in one OVERWRITE commit
after which the table reads again; tidelake repairs a Java table and Java repairs a tidelake
table, and both read the same rows afterwards."""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
import pytest

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import Scenario, compare_read, java_write, tidelake_write

FIELDS = [("k", "INT NOT NULL"), ("p", "STRING NOT NULL"), ("v", "STRING")]
STEPS: list[dict[str, Any]] = [
    {"rows": [[k, f"p{k % 2}", f"a{k}"] for k in range(0, 40)]},
    {"rows": [[k, f"p{k % 2}", f"b{k}"] for k in range(30, 60)]},
    {"rows": [[k, f"p{k % 2}", f"c{k}"] for k in range(55, 80)]},
]


def _scenario(name: str) -> Scenario:
    return Scenario(name, FIELDS, STEPS, primary_keys=["k", "p"], partition_keys=["p"],
                    options={"bucket": "2", "write-only": "true"})


def _lose_one_file(t: tidelake.Table) -> str:
    """Delete the newest data file of partition p1 from storage; its path as the files table has it."""
    files = [f for f in t.system("files").to_pylist() if f["partition"] == "{p1}"]
    lost = max(files, key=lambda f: (f["max_sequence_number"], f["file_path"]))["file_path"]
    os.remove(lost.removeprefix("file:"))
    return lost


def _same_path(a: str, b: str) -> bool:
    return a.removeprefix("file:") == b.removeprefix("file:")


def test_tidelake_removes_lost_files_of_a_java_table(java, tmp_path):
    wh = str(tmp_path)
    t = java_write(java, wh, _scenario("lost_java"))
    lost = _lose_one_file(t)
    with pytest.raises(tidelake.TidelakeError):
        t.to_arrow()
    before = [s.id for s in t.snapshots()]

    listed = t.remove_unexisting_files(dry_run=True)
    assert len(listed) == 1 and _same_path(listed[0], lost)
    assert [s.id for s in t.snapshots()] == before  # a dry run commits nothing

    removed = t.remove_unexisting_files()
    assert len(removed) == 1 and _same_path(removed[0], lost)
    snap = t.snapshots()[-1]
    assert snap.id == before[-1] + 1 and snap.commit_kind == "OVERWRITE"
    assert snap.commit_identifier == 2**63 - 1
    assert not any(_same_path(f, lost) for f in t.system("files").column("file_path").to_pylist())
    assert t.remove_unexisting_files() == [] and t.snapshots()[-1].id == snap.id
    rows = compare_read(java, t, wh, "after tidelake's remove_unexisting_files")
    assert rows  # p0 and the older files of p1 still read
    t.write(pa.table({"k": pa.array([1000], pa.int32()), "p": ["p1"], "v": ["new"]}))
    compare_read(java, t, wh, "tidelake writes after remove_unexisting_files")


def test_java_removes_lost_files_of_a_tidelake_table(java, tmp_path):
    wh = str(tmp_path)
    sc = _scenario("lost_tidelake")
    t = tidelake_write(java, wh, sc)
    lost = _lose_one_file(t)
    listed = t.remove_unexisting_files(dry_run=True)
    assert len(listed) == 1 and _same_path(listed[0], lost)
    java.run({**Scenario(sc.name, FIELDS, [{"remove_unexisting_files": True}], primary_keys=sc.primary_keys,
                         partition_keys=sc.partition_keys, options=sc.options).java_job(wh), "existing": True})
    t = tidelake.Catalog(wh).get_table(f"db.{sc.name}")
    assert t.snapshots()[-1].commit_kind == "OVERWRITE"
    assert t.remove_unexisting_files(dry_run=True) == []
    compare_read(java, t, wh, "after Java's remove_unexisting_files")


def test_nothing_lost_commits_nothing(tmp_path):
    cat = tidelake.Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table(
        "db.t", pa.schema([("k", pa.int32()), ("v", pa.string())]), primary_keys=["k"], bucket=1)
    t.write(pa.table({"k": pa.array([1], pa.int32()), "v": ["a"]}))
    assert t.remove_unexisting_files() == [] and len(t.snapshots()) == 1
