"""``full-compaction.delta-commits``: tidelake's writers fully compact after every N-th commit
identifier (and after every batch commit), as Java's writers (Flink's
``GlobalFullCompactionSinkWrite``, Spark's data writers), two ways with Java Paimon 1.3.1 (the
``java`` oracle). Java's oracle writes through the plain Table API, which has no periodic full
compaction: its ``compact`` steps stand for Flink's, at the same identifiers.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import Scenario, compare_all, compare_changes, java_write, tidelake_write, to_arrow
from _peers import canonical_rows, sorted_rows

KV = [("k", "INT NOT NULL"), ("p", "STRING"), ("v", "BIGINT")]
OPTIONS = {"bucket": "1", "changelog-producer": "full-compaction", "full-compaction.delta-commits": "3"}


def _rows(n: int, start: int, salt: int) -> dict:
    return {"rows": [[i, f"p{i % 2}", i * 100 + salt] for i in range(start, start + n)]}


# six commits (identifiers 1..6): upserts of overlapping keys, and deletes
STEPS = [
    _rows(6, 0, 1),
    _rows(4, 3, 2),
    {"rows": [{"kind": "-D", "values": [1, "p1", 0]}, {"kind": "-D", "values": [4, "p0", 0]}]},
    _rows(5, 2, 4),
    {"rows": [{"kind": "-D", "values": [6, "p0", 0]}]},
    _rows(3, 7, 6),
]


def _with_java_compactions(steps: list[dict]) -> list[dict]:
    """``steps`` for Java's oracle: a full compaction after every third commit, where Flink's
    ``GlobalFullCompactionSinkWrite`` makes one."""
    return [x for i, st in enumerate(steps, 1) for x in ([st, {"compact": True}] if i % 3 == 0 else [st])]


def _kinds(t: tidelake.Table) -> list[str]:
    """The commit kinds, without the empty APPEND the oracle's compact step commits before its
    COMPACT (Flink's full compaction is one commit with the write)."""
    return [s.commit_kind for s in t.snapshots() if s.commit_kind != "APPEND" or s.delta_record_count]


def _all_changes(t: tidelake.Table) -> list[str]:
    return sorted_rows(canonical_rows(t.changes(0, t.latest_snapshot().id)))


def test_tidelake_continues_java_table(java, tmp_path):
    """Java creates the table; tidelake's stream writer commits identifiers 1..6: a full
    compaction (with its changelog) follows commits 3 and 6 only, the snapshot kinds are those
    of Java on the same input, Java reads every snapshot and changelog as tidelake does, and
    both tables' changelogs agree."""
    wh = str(tmp_path / "tl")
    sc = Scenario("fc_tidelake", KV, STEPS, primary_keys=["k", "p"], partition_keys=["p"], options=OPTIONS)
    t = tidelake_write(java, wh, sc)
    snaps = t.snapshots()
    kinds = ["APPEND"] * 3 + ["COMPACT"] + ["APPEND"] * 3 + ["COMPACT"]
    assert _kinds(t) == kinds
    compacts = [s for s in snaps if s.commit_kind == "COMPACT"]
    assert all((s.changelog_record_count or 0) > 0 for s in compacts), compacts
    assert all((s.changelog_record_count or 0) == 0 for s in snaps if s.commit_kind == "APPEND")
    compare_all(java, t, wh, "B full-compaction.delta-commits")
    compare_changes(java, t, wh, "B full-compaction.delta-commits", 0, snaps[-1].id)

    # Java on the same input (its full compactions where Flink makes them)
    jwh = str(tmp_path / "java")
    jt = java_write(java, jwh, Scenario("fc_java", KV, _with_java_compactions(STEPS), ["k", "p"], ["p"], OPTIONS))
    assert _kinds(jt) == kinds, _kinds(jt)
    assert _all_changes(t) == _all_changes(jt)
    assert sorted_rows(canonical_rows(t.to_arrow())) == sorted_rows(canonical_rows(jt.to_arrow()))


def test_java_continues_tidelake_table(java, tmp_path):
    """tidelake creates the table and commits identifiers 1..3 (a full compaction follows the
    third); Java's writer continues with three commits and its full compaction; both read the
    whole history and its changelog alike."""
    wh = str(tmp_path)
    cat = tidelake.Catalog(wh)
    cat.create_database("db")
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), ("p", pa.string()), ("v", pa.int64())])
    t = cat.create_table("db.fc_both", schema, primary_keys=["k", "p"], partition_keys=["p"], options=OPTIONS)
    with t.writer() as w:
        for ident, step in enumerate(STEPS[:3], 1):
            inserts = [r for r in step["rows"] if isinstance(r, list)]
            deletes = [r["values"] for r in step["rows"] if not isinstance(r, list)]
            if inserts:
                w.write(to_arrow(schema, inserts))
            if deletes:
                w.delete(to_arrow(schema, deletes))
            t.commit(w.prepare_commit(), commit_identifier=ident, commit_user=w.commit_user)
    assert _kinds(t) == ["APPEND"] * 3 + ["COMPACT"]
    sc = Scenario("fc_both", KV, _with_java_compactions(STEPS[3:]), ["k", "p"], ["p"], OPTIONS)
    java.run({**sc.java_job(wh), "existing": True})
    t = cat.get_table("db.fc_both")
    assert _kinds(t) == ["APPEND"] * 3 + ["COMPACT"] + ["APPEND"] * 3 + ["COMPACT"]
    compare_all(java, t, wh, "A after B full-compaction.delta-commits")
    compare_changes(java, t, wh, "A after B full-compaction.delta-commits", 0, t.latest_snapshot().id)


@pytest.mark.parametrize("options", [OPTIONS, {"bucket": "1", "full-compaction.delta-commits": "2"}],
                         ids=["full-compaction-producer", "no-producer"])
def test_batch_commits_compact_every_time(tmp_path, options):
    """A batch commit (Java's end-of-input identifier) is always followed by the full
    compaction, as Java's batch writers do; the table then is one run at the max level."""
    t = tidelake.create_table(str(tmp_path / "t"), pa.schema([pa.field("k", pa.int32(), nullable=False),
                                                                ("v", pa.string())]),
                              primary_keys=["k"], options=options)
    t.write(pa.table({"k": pa.array([1, 2], pa.int32()), "v": ["a", "b"]}))
    t.upsert(pa.table({"k": pa.array([2, 3], pa.int32()), "v": ["B", "c"]}))
    assert _kinds(t) == ["APPEND", "COMPACT", "APPEND", "COMPACT"]
    assert t.compact(full=True) is None  # nothing left to compact
    produced = [(s.changelog_record_count or 0) > 0 for s in t.snapshots()]
    assert produced == ([False, True, False, True] if "changelog-producer" in options else [False] * 4)
