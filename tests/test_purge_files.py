"""The ``purge_files`` procedure (Java ``FileStoreTable.purgeFiles``): branches, tags and
consumers go, the rows go in one OVERWRITE snapshot, ``changelog/`` and every older snapshot and
orphan file go. tidelake purges a Java table leaving the files Java's own purge leaves on the
same table, Java purges a tidelake table, and both read the purged table (and what is written
after) the same; from Python, the CLI and ``CALL``."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import Scenario, compare_read, java_write, tidelake_write
from tidelake import cli

FIELDS = [("k", "INT NOT NULL"), ("p", "STRING NOT NULL"), ("v", "STRING")]
OPTIONS = {"bucket": "2", "changelog-producer": "input",
           # snapshots expire into long-lived changelogs (changelog/), which purging deletes
           "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2",
           "changelog.num-retained.min": "1", "changelog.num-retained.max": "20"}
STEPS: list[dict[str, Any]] = [
    {"rows": [[k, f"p{k % 2}", f"a{k}"] for k in range(0, 40)]},
    {"tag": "t1"},
    {"create_branch": "b1"},
    {"rows": [[k, f"p{k % 2}", f"b{k}"] for k in range(0, 10)], "branch": "b1"},
    {"rows": [[k, f"p{k % 2}", f"c{k}"] for k in range(30, 60)]},
    {"tag": "t2"},
    {"rows": [[k, f"p{k % 2}", f"d{k}"] for k in range(55, 80)]},
    {"rows": [[k, f"p{k % 2}", f"e{k}"] for k in range(70, 90)]},
]
NEW_ROWS = pa.table({"k": pa.array([1000, 1001], pa.int32()), "p": ["p0", "p1"], "v": ["x", "y"]})


def _scenario(name: str) -> Scenario:
    return Scenario(name, FIELDS, STEPS, primary_keys=["k", "p"], partition_keys=["p"], options=OPTIONS,
                    mode="batch")


def _shape(table_dir: str) -> set[str]:
    """Every file under the table, its generated name (uuid, counter) replaced by its kind."""
    out = set()
    for root, _, files in os.walk(table_dir):
        for name in files:
            rel = Path(root, name).relative_to(table_dir).as_posix()
            if rel.startswith(("manifest/", "index/")) or "/bucket-" in rel:
                rel = re.sub(r"-[0-9a-f]{8}-[0-9a-f-]+(-\d+)?(\.\w+)?$", "", rel)
            out.add(rel)
    return out


def _is_purged(t: tidelake.Table) -> None:
    t = t.refresh()
    assert t.branches() == [] and t.tags() == [] and t.consumers() == {}
    snaps = t.snapshots()
    assert len(snaps) == 1 and snaps[0].commit_kind == "OVERWRITE"
    assert t.to_arrow().num_rows == 0
    assert not os.path.exists(os.path.join(t.path, "changelog"))
    assert t.verify().violations == []


def test_tidelake_purges_a_java_table_as_java_does(java, tmp_path):
    wh = str(tmp_path)
    ours, theirs = java_write(java, wh, _scenario("ours")), java_write(java, wh, _scenario("theirs"))
    for t in (ours, theirs):
        t.reset_consumer("c1", t.latest_snapshot_id())
        assert os.path.isdir(os.path.join(t.path, "changelog")) and t.tags() and t.branches() == ["b1"]
    latest = ours.latest_snapshot_id()

    purged = ours.purge_files()
    assert purged["branches"] == ["b1"] and purged["tags"] == ["t1", "t2"] and purged["consumers"] == ["c1"]
    assert purged["snapshot_id"] == latest + 1 and purged["snapshots_expired"] > 0
    _is_purged(ours)
    java.run({**_scenario("theirs").java_job(wh, with_steps=False), "steps": [{"purge_files": True}],
              "existing": True})
    _is_purged(theirs)
    assert theirs.refresh().latest_snapshot_id() == latest + 1
    assert _shape(ours.path) == _shape(theirs.path)

    assert compare_read(java, ours, wh, "after tidelake's purge_files") == []
    ours.write(NEW_ROWS)
    assert len(compare_read(java, ours.refresh(), wh, "tidelake writes after purge_files")) == 2


def test_java_purges_a_tidelake_table(java, tmp_path):
    wh = str(tmp_path)
    sc = _scenario("purged_by_java")
    t = tidelake_write(java, wh, sc)
    t.reset_consumer("c1", t.latest_snapshot_id())
    java.run({**sc.java_job(wh, with_steps=False), "steps": [{"purge_files": True}], "existing": True})
    _is_purged(t)
    t.refresh().write(NEW_ROWS)
    assert len(compare_read(java, t.refresh(), wh, "tidelake writes after Java's purge_files")) == 2


def _small(tmp_path: Path, **options: str) -> tidelake.Table:
    cat = tidelake.Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("k", pa.int32()), ("v", pa.string())]), primary_keys=["k"], bucket=1,
                         options=options)
    t.write(pa.table({"k": pa.array([1, 2], pa.int32()), "v": ["a", "b"]}))
    t.write(pa.table({"k": pa.array([3], pa.int32()), "v": ["c"]}))
    return t


def test_purge_refuses_a_branch_and_a_fallback_branch_and_changes_nothing(tmp_path):
    t = _small(tmp_path)
    t.create_branch("b1")
    with pytest.raises(tidelake.InvalidArgumentError, match="main branch"):
        tidelake.open_table(t.path, branch="b1").purge_files()
    t = t.set_option("scan.fallback-branch", "b1")
    with pytest.raises(tidelake.InvalidArgumentError, match="fallback branch 'b1'"):
        t.purge_files()
    assert t.branches() == ["b1"] and t.to_arrow().num_rows == 3


def test_cli_asks_first_and_purges_with_yes(tmp_path):
    t = _small(tmp_path)
    refused = CliRunner().invoke(cli.main, ["purge-files", t.path], prog_name="tidelake")
    assert refused.exit_code == 2 and "--yes" in refused.output
    assert t.refresh().to_arrow().num_rows == 3
    done = CliRunner().invoke(cli.main, ["purge-files", t.path, "--yes", "--json"], prog_name="tidelake")
    assert done.exit_code == 0, done.output
    assert '"snapshot_id": 3' in done.output
    assert t.refresh().to_arrow().num_rows == 0 and len(t.snapshots()) == 1
