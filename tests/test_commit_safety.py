"""Commit safety regressions, each a race a hostile user ran against earlier builds (the
concurrency soak in test_soak.py runs them all at once): a slow writer whose base snapshot
expires, writers sharing a commit user, a writer opened before a newer commit, a deletion-vector
write whose compaction lost to a concurrent one, files deleted while a commit retries. Races run
in separate processes; every check is on the acknowledged writes."""

from __future__ import annotations

import multiprocessing as mp
import time

import pyarrow as pa
import pytest

import tidelake
from _java import compare_read, java  # noqa: F401  (fixture)
from _workers import commit_rounds, race, slow_upsert, upsert_rounds

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string())])


def rows(pairs: dict[int, str]) -> pa.Table:
    return pa.table({"k": pa.array(list(pairs), pa.int64()), "v": pa.array(list(pairs.values()))}, schema=SCHEMA)


def visible(t: tidelake.Table) -> dict[int, str]:
    return {r["k"]: r["v"] for r in tidelake.open_table(t.path, storage_options=t.storage_options).to_arrow().to_pylist()}


def delayed(storage_options: dict | None, op: str, path: str, ms: int) -> dict[str, str]:
    """Storage options that delay the first ``op`` on a path containing ``path`` (a slow writer)."""
    return {**(storage_options or {}), "tidelake.fault.nth": "1", "tidelake.fault.op": op,
            "tidelake.fault.path": path, "tidelake.fault.action": f"delay:{ms}"}


def test_a_slow_write_whose_base_expires_lands_on_the_newest_snapshot(storage):
    """Writer S reads latest = 1, then its manifest uploads stall; 2..5 land and 1..3 expire.
    S must not create the expired id 2 (LATEST would move back and hide 3..5): it lands at 6,
    and every acknowledged row is visible."""
    t = storage.create_table("t", SCHEMA, primary_keys=["k"], bucket=1)
    t.upsert(rows({1: "one"}))
    slow_options = delayed(storage.options, "put", "manifest/manifest-", 3000)
    with mp.get_context("spawn").Pool(1) as pool:
        pending = pool.apply_async(slow_upsert, (t.path, slow_options, {100: "slow"}))
        time.sleep(1.5)  # the slow writer has read snapshot 1 and is stuck uploading
        for i in range(2, 6):
            assert t.upsert(rows({i: str(i)})) is not None
        t.expire_snapshots(retain_min=2, retain_max=2)
        assert [s.id for s in t.snapshots()][0] >= 4
        slow_id = pending.get(timeout=60)
    ids = [s.id for s in tidelake.open_table(t.path, storage_options=t.storage_options).snapshots()]
    assert ids == list(range(ids[0], ids[-1] + 1)) and slow_id > 5, (ids, slow_id)
    assert visible(t) == {1: "one", 2: "2", 3: "3", 4: "4", 5: "5", 100: "slow"}
    assert int(storage_latest_hint(t)) == ids[-1]


def storage_latest_hint(t: tidelake.Table) -> str:
    from _s3 import TableFiles

    return TableFiles.of(t).read("snapshot/LATEST").decode()


def test_writers_sharing_a_commit_user_all_land(tmp_path):
    """Two processes commit with the same commit user at the same time, round after round: every
    commit that returned has its rows visible (own snapshots are recognised exactly)."""
    t = tidelake.create_table(str(tmp_path / "t"), SCHEMA, primary_keys=["k"], bucket=2)
    go = str(tmp_path / "go")
    with mp.get_context("spawn").Pool(2) as pool:
        pending = [pool.apply_async(commit_rounds, (t.path, w, 15, go)) for w in range(2)]
        time.sleep(2)
        open(go, "w").close()
        results = [p.get(timeout=120) for p in pending]
    acked = [k for a, _ in results for k in a]
    print(f"{len(acked)} of 30 commits landed, the others raised CommitConflictError")
    assert len(acked) + sum(len(c) for _, c in results) == 30 and len(acked) >= 15
    assert sorted(visible(t)) == sorted(acked)


def test_the_write_acknowledged_last_wins(tmp_path):
    """A writer opened before a newer commit of the same key must not land ordered before it:
    its commit either wins or raises CommitConflictError, and compaction changes nothing."""
    t = tidelake.create_table(str(tmp_path / "t"), SCHEMA, primary_keys=["k"], bucket=1)
    t.upsert(rows({1: "first"}))
    w = t.writer()
    w.upsert(rows({1: "old writer"}))
    messages = w.prepare_commit()
    t.upsert(rows({1: "newer"}))
    try:
        t.commit(messages)
        expected = "old writer"
    except tidelake.CommitConflictError:
        expected = "newer"
    w.close()
    assert visible(t) == {1: expected}
    t.compact(full=True)
    assert visible(t) == {1: expected}


def test_a_writer_opened_before_a_newer_commit_of_its_keys_lands_after_it(tmp_path, java):
    """Two-phase writers of overlapping keys, the one opened first committing last: instead of
    CommitConflictError its files are re-sequenced above the newer commit, so it wins for the
    keys both wrote, as if it had opened after it; Java and pypaimon read the same rows, also
    after a full compaction. Its original files are left to orphan cleaning (its caller holds
    their messages)."""
    wh = tmp_path / "wh"
    catalog = tidelake.Catalog(str(wh))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], bucket=1)
    t.upsert(rows({k: "base" for k in range(20)}))
    old, new = t.writer(), t.writer()
    old.upsert(rows({k: "old" for k in range(0, 20, 2)}))
    new.upsert(rows({k: "new" for k in range(0, 20, 3)}))
    t.commit(new.prepare_commit())
    assert t.commit(old.prepare_commit())  # landed, not CommitConflictError
    old.close()
    new.close()
    expected = {k: "old" if k % 2 == 0 else "new" if k % 3 == 0 else "base" for k in range(20)}
    assert visible(t) == expected
    compare_read(java, t.refresh(), str(wh), "re-sequenced", pypaimon=True)
    orphans = t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000)
    assert len(orphans) == 1  # the old writer's original file
    t.compact(full=True)
    assert visible(t) == expected
    compare_read(java, t.refresh(), str(wh), "re-sequenced and compacted", pypaimon=True)


@pytest.mark.parametrize("bucket", [1, -1])
def test_racing_upserts_leave_the_last_acknowledged_value(tmp_path, bucket):
    """Three processes upsert the same 4 keys with unique values through two-phase writers;
    for every key the visible value is the one whose APPEND snapshot is the newest, also after
    a full compaction."""
    t = tidelake.create_table(str(tmp_path / "t"), SCHEMA, primary_keys=["k"], bucket=bucket)
    acks = race(tmp_path, upsert_rounds, 3, t.path, 12, 4)
    landed = [a for a in acks if a["append_id"] is not None]
    print(f"{len(landed)} of {len(acks)} upserts landed, {len(acks) - len(landed)} CommitConflictError")
    assert landed
    expected: dict[int, tuple[int, str]] = {}
    for a in landed:
        for k in a["keys"]:
            if k not in expected or expected[k][0] < a["append_id"]:
                expected[k] = (a["append_id"], a["value"])
    assert visible(t) == {k: v for k, (_, v) in expected.items()}
    t.compact(full=True)
    assert visible(t) == {k: v for k, (_, v) in expected.items()}


def test_a_deletion_vector_write_is_visible_when_it_returns(tmp_path):
    """On a deletion-vector table level 0 is not read: the writer's compaction (which marks the
    older copies in the bucket's deletion vectors) loses to a concurrent write's compaction,
    which replaced those deletion vectors first, and is dropped at commit; the commit compacts
    again before it returns."""
    t = tidelake.create_table(str(tmp_path / "t"), SCHEMA, primary_keys=["k"], bucket=1,
                              options={"deletion-vectors.enabled": "true"})
    t.upsert(rows({k: "a" for k in range(100)}))
    t.upsert(rows({k: "b" for k in range(50, 150)}))
    w = t.writer()
    w.upsert(rows({k: "new" for k in range(10)}))
    messages = w.prepare_commit()
    t.upsert(rows({k: "other" for k in range(100, 110)}))
    ids = t.commit(messages)
    w.close()
    # the writer's own COMPACT was dropped; the one that made the rows visible came after it
    assert len(ids) == 2 and t.snapshot(ids[1]).commit_user.startswith("tidelake-compact-"), ids
    got = visible(t)
    assert {k: got[k] for k in [*range(10), *range(100, 110)]} == {
        **{k: "new" for k in range(10)}, **{k: "other" for k in range(100, 110)}}
    assert len(got) == 150


def test_a_retrying_commit_whose_files_were_cleaned_fails_cleanly(tmp_path):
    """Orphan cleaning deletes the files of a commit that is still retrying: the commit raises
    CommitConflictError instead of publishing a snapshot of missing files."""
    t = tidelake.create_table(str(tmp_path / "t"), SCHEMA, primary_keys=["k"], bucket=1)
    t.upsert(rows({1: "one"}))
    slow_options = delayed(None, "put", "snapshot/snapshot-", 5000)

    def lists() -> int:
        return len(list((tmp_path / "t" / "manifest").glob("manifest-list-*")))

    before = lists()
    with mp.get_context("spawn").Pool(1) as pool:
        pending = pool.apply_async(slow_upsert, (t.path, slow_options, {2: "slow"}, False))
        deadline = time.monotonic() + 60
        while lists() == before:  # its manifest list is written: it is stuck creating snapshot-2
            assert time.monotonic() < deadline, "the slow writer never reached its commit"
            time.sleep(0.02)
        t.upsert(rows({3: "three"}))  # takes id 2: the slow commit must retry
        removed = t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000)
        assert any("bucket-0" in path for path, _ in removed), removed
        outcome = pending.get(timeout=60)
    assert outcome == "CommitConflictError", outcome
    assert visible(t) == {1: "one", 3: "three"}


def test_a_first_commit_that_others_built_on_before_it_returned_is_acknowledged(tmp_path):
    """The first commit of a table creates snapshot 1, then stalls before it returns; another
    writer commits snapshot 2 on top of it meanwhile. The stalled commit has no base snapshot to
    check, but snapshot 2 names its manifests: it landed, and returns so (it used to give up
    with "whether this commit is visible cannot be told")."""
    t = tidelake.create_table(str(tmp_path / "t"), SCHEMA, primary_keys=["k"], bucket=1)
    slow_options = {**delayed(None, "put", "snapshot/snapshot-1", 3000), "tidelake.fault.when": "after"}
    with mp.get_context("spawn").Pool(1) as pool:
        pending = pool.apply_async(slow_upsert, (t.path, slow_options, {1: "first"}, False))
        deadline = time.monotonic() + 60
        while not (tmp_path / "t" / "snapshot" / "snapshot-1").exists():
            assert time.monotonic() < deadline, "the slow writer never created snapshot 1"
            time.sleep(0.01)
        assert t.upsert(rows({2: "second"})).snapshot_ids == (2,)
        assert pending.get(timeout=60) == [1]
    assert visible(t) == {1: "first", 2: "second"}
