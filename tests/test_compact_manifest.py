"""The ``compact_manifest`` procedure (Java ``BatchTableCommit.compactManifests``): tidelake
merges the manifests of a table Java wrote and Java reads the result, and the reverse; the
procedure is reachable from Python, the CLI and ``CALL sys.compact_manifest``."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
from click.testing import CliRunner

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import Scenario, compare_read, java_write, tidelake_write
from tidelake.cli import main as cli

FIELDS = [("k", "INT NOT NULL"), ("v", "STRING")]
STEPS: list[dict[str, Any]] = [
    {"rows": [[k, f"a{k}"] for k in range(0, 40)]},
    {"rows": [[k, f"b{k}"] for k in range(20, 60)]},
    {"rows": [{"kind": "-D", "values": [k, None]} for k in range(0, 10)]},
    {"compact": True},
    {"rows": [[k, f"c{k}"] for k in range(50, 70)]},
    {"rows": [[k, f"d{k}"] for k in range(65, 75)]},
]


def _scenario(name: str) -> Scenario:
    return Scenario(name, FIELDS, STEPS, primary_keys=["k"], options={"bucket": "2"})


def _manifests(t: tidelake.Table) -> list[dict[str, Any]]:
    return t.system("manifests").to_pylist()


def _live_files(t: tidelake.Table) -> list[str]:
    return sorted(t.system("files").column("file_path").to_pylist())


def test_tidelake_compacts_manifests_java_reads(java, tmp_path):
    """Java's table holds delta manifests with DELETE entries (its compaction's); tidelake's
    compact_manifest leaves fewer manifests, none with DELETE entries, the same live files and
    rows in a COMPACT snapshot with Java's identifier; Java reads it, and both keep writing."""
    wh = str(tmp_path)
    t = java_write(java, wh, _scenario("cm_java"))
    before = _manifests(t)
    assert any(m["num_deleted_files"] for m in before) and len(before) > 2
    files, rows = _live_files(t), t.to_arrow().sort_by("k")
    last = t.snapshots()[-1]

    sid = t.compact_manifests()

    snap = t.snapshots()[-1]
    assert sid == snap.id == last.id + 1
    assert snap.commit_kind == "COMPACT" and snap.commit_identifier == 2**63 - 1
    assert snap.delta_record_count == 0 and snap.total_record_count == last.total_record_count
    after = _manifests(t)
    assert len(after) < len(before) and not any(m["num_deleted_files"] for m in after)
    assert _live_files(t) == files and t.to_arrow().sort_by("k").equals(rows)
    assert t.compact_manifests() is None and t.snapshots()[-1].id == sid  # already compact
    compare_read(java, t, wh, "compact_manifest by tidelake")
    compare_read(java, t, wh, "before compact_manifest", snapshot_id=last.id)
    t.write(pa.table({"k": pa.array([1, 99], pa.int32()), "v": ["e1", "e99"]}))
    compare_read(java, t, wh, "written after compact_manifest")


def test_java_compacts_manifests_of_a_tidelake_table(java, tmp_path):
    """tidelake writes every step; Java's compact_manifest then merges its manifests, and
    tidelake reads the same files and rows as Java, and keeps writing."""
    wh = str(tmp_path)
    sc = _scenario("cm_tidelake")
    t = tidelake_write(java, wh, sc)
    before = _manifests(t)
    files, rows = _live_files(t), t.to_arrow().sort_by("k")
    java.run({**Scenario(sc.name, FIELDS, [{"compact_manifest": True}], primary_keys=["k"],
                         options=sc.options).java_job(wh), "existing": True})
    t = tidelake.Catalog(wh).get_table(f"db.{sc.name}")
    assert t.snapshots()[-1].commit_kind == "COMPACT"
    after = _manifests(t)
    assert len(after) <= len(before) and not any(m["num_deleted_files"] for m in after)
    assert _live_files(t) == files and t.to_arrow().sort_by("k").equals(rows)
    compare_read(java, t, wh, "compact_manifest by Java")
    t.write(pa.table({"k": pa.array([3], pa.int32()), "v": ["f3"]}))
    compare_read(java, t, wh, "tidelake writes after Java's compact_manifest")


def test_cli_compact_manifest(tmp_path):
    """``tidelake compact-manifest PATH`` merges, then says there is nothing left to merge."""
    cat = tidelake.Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table(
        "db.t", pa.schema([("k", pa.int32()), ("v", pa.string())]), primary_keys=["k"], bucket=1)
    for i in range(4):
        t.write(pa.table({"k": pa.array([i, i + 1], pa.int32()), "v": [str(i), str(i)]}))
    t.delete("k = 1")
    runner = CliRunner()
    first = runner.invoke(cli, ["compact-manifest", t.path, "--json"])
    assert first.exit_code == 0, first.output
    report = json.loads(first.output)
    assert report["snapshot_id"] == t.snapshots()[-1].id
    assert report["manifests_after"] < report["manifests_before"]
    again = runner.invoke(cli, ["compact-manifest", t.path])
    assert again.exit_code == 0 and "already compact" in again.output


def test_partition_sorted_manifests_java_reads(java, tmp_path):
    """Commits across shuffled partitions leave manifests in commit order, each spanning many
    partitions; tidelake's compact_manifest rewrites them sorted by partition and bucket; Java
    reads the result, a partition filter included, and tidelake writes on top."""
    wh = str(tmp_path)
    parts = [(i * 7) % 12 for i in range(12)]
    steps: list[dict[str, Any]] = [
        {"rows": [[k, p, f"r{r}-{k}"] for p in parts[r::3] for k in range(p * 100, p * 100 + 30)]}
        for r in range(3)
    ]
    steps.append({"rows": [{"kind": "-D", "values": [k, 5, None]} for k in range(500, 510)]})
    sc = Scenario("cm_sorted", [("k", "INT NOT NULL"), ("p", "INT NOT NULL"), ("v", "STRING")], steps,
                  primary_keys=["k", "p"], partition_keys=["p"],
                  options={"bucket": "2"})
    t = tidelake_write(java, wh, sc)
    files, rows = _live_files(t), t.to_arrow().sort_by("k")
    assert t.compact_manifests() is not None
    after = _manifests(t)
    assert not any(m["num_deleted_files"] for m in after)
    # (rolling into several partition-ranged manifests needs 1,000s of entries: the Rust test
    # commit::tests::manifests::full_compaction_sorts_entries_by_partition_then_bucket_... shows it)
    assert _live_files(t) == files and t.to_arrow().sort_by("k").equals(rows)
    assert t.compact_manifests() is None  # already partition-sorted
    compare_read(java, t, wh, "partition-sorted manifests")
    compare_read(java, t, wh, "partition-sorted manifests, one partition", filter="p = 7",
                 java_filter={"op": "=", "field": "p", "value": 7})
    t.write(pa.table({"k": pa.array([1, 700], pa.int32()), "p": pa.array([0, 7], pa.int32()), "v": ["x", "y"]}))
    compare_read(java, t, wh, "written after the sorted rewrite")
