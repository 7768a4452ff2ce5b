"""Concurrent committers: 4 OS processes upsert disjoint key ranges into one table at the same
moment. Every commit lands or raises CommitConflictError; landed data is all there, conflicting
commits left nothing visible, snapshot ids stay contiguous, and pypaimon reads the same rows."""

from __future__ import annotations

import json
import multiprocessing as mp
import pathlib

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tidelake
from _peers import conform_to, new_warehouse, pp_read, pp_table, pp_write
from _workers import compactor_loop, concurrent_upserts, release_when_ready
from conftest import assert_same_rows

WORKERS = 4
COMMITS = 5
ROWS = 200

SCHEMA = pa.schema([("k", pa.int64()), ("w", pa.int32()), ("c", pa.int32())])


def run_workers(table_path: str, tmp_path, compactor: bool,
                storage_options: dict | None = None) -> tuple[list[dict], dict | None]:
    ctx = mp.get_context("spawn")
    go, stop = str(tmp_path / "go"), str(tmp_path / "stop")
    ready = tmp_path / "ready"
    ready.mkdir()
    with ctx.Pool(WORKERS + compactor) as pool:
        pending = pool.starmap_async(concurrent_upserts,
                                     [(table_path, w, COMMITS, ROWS, go, str(ready), storage_options)
                                      for w in range(WORKERS)])
        compacting = (pool.apply_async(compactor_loop, (table_path, go, stop, str(ready), storage_options))
                      if compactor else None)
        release_when_ready(str(ready), WORKERS + compactor, go)  # they all start at once
        results = pending.get(timeout=120)
        open(stop, "w").close()
        compactions = compacting.get(timeout=60) if compacting else None
    return [r for per_worker in results for r in per_worker], compactions


def check_landed(t: tidelake.Table, records: list[dict], compactions: dict | None):
    """Every landed commit is one APPEND snapshot with all its rows, every conflicting one left
    nothing, ids are contiguous. Returns the table, the landed records and the expected rows."""
    assert len(records) == WORKERS * COMMITS
    snaps = t.snapshots()
    assert [s.id for s in snaps] == list(range(1, len(snaps) + 1))  # contiguous 1..k
    appended_by = {s.commit_user: s for s in snaps if s.commit_kind == "APPEND"}
    landed = [r for r in records if r["conflict"] is None]
    conflicts = [r for r in records if r["conflict"] is not None]
    print(f"{len(landed)} landed, {len(conflicts)} CommitConflictError, {len(snaps)} snapshots "
          f"({sum(s.commit_kind == 'COMPACT' for s in snaps)} COMPACT); compactor: {compactions}")
    if compactions is not None:
        assert compactions["compacted"] >= 1
        assert sum(s.commit_kind == "COMPACT" for s in snaps) >= compactions["compacted"]
    for r in landed:
        assert r["user"] in appended_by, r["user"]
        assert r["ids"] and r["ids"][0] == appended_by[r["user"]].id
    for r in conflicts:  # a conflicting commit must not have landed its data
        assert r["user"] not in appended_by, f"{r['user']} raised CommitConflictError but its APPEND landed"
    assert len(appended_by) == len(landed)
    expected = pa.Table.from_pylist([{"k": k, "w": r["worker"], "c": r["commit"]} for r in landed for k in r["keys"]],
                                    schema=t.schema)
    assert_same_rows(t.to_arrow(), expected)
    return t, landed, expected


CASES = {
    "fixed-bucket": (2, {}, False),
    # a 5th process fully compacts the table in a loop while the writers commit: COMPACT
    # commits race APPEND commits on the same buckets
    "with-compactor": (2, {}, True),
    # dynamic buckets: every writer replaces the same HASH index file (Java allows one writer
    # job per partition; tidelake must still never lose or duplicate a key)
    "dynamic-bucket": (-1, {"dynamic-bucket.target-row-num": "150"}, False),
    # every commit is followed by a full compaction (batch identifier, Java's rule): the
    # writers' COMPACT commits race each other's APPENDs; a lost compaction never loses a write
    "full-compaction-delta-commits": (2, {"changelog-producer": "full-compaction",
                                          "full-compaction.delta-commits": "1"}, False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_concurrent_committers(tmp_path, case):
    bucket, options, compactor = CASES[case]
    cat, wh = new_warehouse(tmp_path / "wh")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"], bucket=bucket, options=options)
    records, compactions = run_workers(t.path, tmp_path, compactor)
    t, landed, expected = check_landed(tidelake.open_table(t.path), records, compactions)
    got = t.to_arrow()
    theirs = conform_to(pp_read(wh, schema=t.schema), t.schema)
    assert_same_rows(theirs, got)
    # pypaimon then upserts some landed keys: it must find each in the bucket that holds it
    # (fixed: same hash; dynamic: through the HASH index the concurrent commits left behind)
    assert landed
    some = [k for r in landed[::3] for k in r["keys"][::7]]
    pp_write(pp_table(wh), pa.table({"k": pa.array(some, pa.int64()), "w": pa.array([-1] * len(some), pa.int32()),
                                     "c": pa.array([-1] * len(some), pa.int32())}))
    model = {row["k"]: row for row in expected.to_pylist()}
    model.update({k: {"k": k, "w": -1, "c": -1} for k in some})
    got = tidelake.open_table(t.path).to_arrow()
    assert_same_rows(got, pa.Table.from_pylist(list(model.values()), schema=t.schema))
    assert_same_rows(conform_to(pp_read(wh, schema=t.schema), t.schema), got)
    if bucket == -1:
        # the live HASH index files list every key exactly once (none lost to a racing commit)
        root = pathlib.Path(t.path)
        snap = json.loads((root / "snapshot" / f"snapshot-{t.latest_snapshot().id}").read_text())
        with open(root / "manifest" / snap["indexManifest"], "rb") as f:
            entries = [e for e in fastavro.reader(f) if e["_INDEX_TYPE"] == "HASH"]
        assert all(e["_KIND"] == 0 for e in entries)
        assert len({e["_BUCKET"] for e in entries}) == len(entries) > 1
        assert sum(e["_ROW_COUNT"] for e in entries) == got.num_rows
        # no key lives in two buckets
        where: dict = {}
        for f in pathlib.Path(t.path).rglob("bucket-*/data-*.parquet"):
            for k in pq.ParquetFile(f).read(columns=["k"]).column(0).to_pylist():
                where.setdefault(k, set()).add(f.parent.name)
        assert all(len(b) == 1 for b in where.values())


def test_concurrent_committers_on_s3(tmp_path, s3_server):
    """4 writer processes and a compactor on one table on the S3 server."""
    location = f"s3://{s3_server.new_bucket()}/wh/t"
    t = tidelake.create_table(location, SCHEMA, primary_keys=["k"], bucket=2, storage_options=s3_server.options)
    records, compactions = run_workers(location, tmp_path, True, s3_server.options)
    check_landed(tidelake.open_table(location, storage_options=s3_server.options), records, compactions)
