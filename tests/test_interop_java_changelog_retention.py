"""A decoupled changelog lifecycle (``changelog.num-retained.*`` above the snapshot retention),
two ways with Java Paimon 1.3.1 (the ``java`` oracle): expiry after every commit keeps each
expired snapshot as ``changelog/changelog-N`` and expires those by the changelog retention, as
Java's does (the same files under ``changelog/``); tidelake's ``changes()`` over expired
snapshots reads them, and agrees with Java's streaming read, which falls back to them.

Retention: one snapshot (min = max, so no time cutoff is involved) and three changelogs (the
latest snapshot's, in the snapshot, and two long-lived ones).
"""

from __future__ import annotations

import pathlib

import pyarrow as pa

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import Scenario, java_write, to_arrow
from _peers import canonical_rows, sorted_rows

KV = [("k", "INT NOT NULL"), ("v", "BIGINT")]
OPTIONS = {"bucket": "1", "changelog-producer": "input", "num-sorted-run.compaction-trigger": "10",  # no COMPACT
           "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1",
           "changelog.num-retained.min": "1", "changelog.num-retained.max": "3"}
STEPS = [{"rows": [[k, k * 10 + i] for k in range(i, i + 3)]} for i in range(6)]


def _changelog_dir(t: tidelake.Table) -> list[str]:
    return sorted(p.name for p in (pathlib.Path(t.path) / "changelog").iterdir())


def _changelog_files(t: tidelake.Table) -> int:
    return sum(1 for p in (pathlib.Path(t.path) / "bucket-0").iterdir() if p.name.startswith("changelog-"))


def _write(t: tidelake.Table, steps: list[dict]) -> None:
    """One commit per step; each runs the committer's expiry, as Java's commits do."""
    for step in steps:
        t.write(to_arrow(t.schema, step["rows"]))


def _java_stream(java, wh: str, t: tidelake.Table, start: int, end: int) -> list[str]:
    answer = java.run({"op": "read", "warehouse": wh, "table": f"db.{pathlib.Path(t.path).name}",
                       "stream": {"from": start + 1, "to": end}})
    return sorted_rows([[k, *r] for k, r in zip(answer["kinds"], answer["rows"])])


def _expected_state(t: tidelake.Table) -> None:
    assert [s.id for s in t.snapshots()] == [6]
    assert _changelog_dir(t) == ["EARLIEST", "LATEST", "changelog-4", "changelog-5"]
    assert _changelog_files(t) == 3, "the changelog files of snapshots 4..6"


def test_tidelake_continues_java_table(java, tmp_path):
    """Java writes and expires three commits, tidelake three more; Java's streaming read over the
    expired snapshots 4 and 5 and the latest equals tidelake's changes(3, 6), and the files under
    changelog/ are those Java's own expiry leaves after the same six commits."""
    wh = str(tmp_path / "both")
    sc = Scenario("cl_both", KV, STEPS[:3], ["k"], [], OPTIONS)
    t = java_write(java, wh, sc)
    assert [s.id for s in t.snapshots()] == [3]
    _write(t, STEPS[3:])
    _expected_state(t)
    ours = sorted_rows(canonical_rows(t.changes(3, 6)))
    assert len(ours) == 9
    assert ours == _java_stream(java, wh, t, 3, 6)

    jwh = str(tmp_path / "java")
    jt = java_write(java, jwh, Scenario("cl_java", KV, STEPS, ["k"], [], OPTIONS))
    _expected_state(jt)
    assert ours == sorted_rows(canonical_rows(jt.changes(3, 6)))


def test_java_reads_tidelake_changelogs(java, tmp_path):
    """tidelake creates, writes and expires six commits; Java streams the same changes from the
    long-lived changelogs tidelake wrote."""
    wh = str(tmp_path)
    cat = tidelake.Catalog(wh)
    cat.create_database("db")
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), ("v", pa.int64())])
    t = cat.create_table("db.cl_tidelake", schema, primary_keys=["k"], options=OPTIONS)
    _write(t, STEPS)
    _expected_state(t)
    ours = sorted_rows(canonical_rows(t.changes(3, 6)))
    assert len(ours) == 9
    assert ours == _java_stream(java, wh, t, 3, 6)
    # expire_changelogs (Paimon's procedure) keeps the latest long-lived changelog
    assert t.expire_changelogs(retain_max=1)["changelogs"] == 1
    assert _changelog_dir(t) == ["EARLIEST", "LATEST", "changelog-5"]
    assert sorted_rows(canonical_rows(t.changes(4, 6))) == _java_stream(java, wh, t, 4, 6)
