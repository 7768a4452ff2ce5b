"""Concurrent syncs in separate processes into the same new tables: creation races, schema
evolution races (each process brings a column of its own) and the data commits all land; no
acknowledged row is lost and every column ends up in the schema."""

from __future__ import annotations

import multiprocessing as mp
import pathlib
import sys

from _workers import release_when_ready, start_together

import tidelake

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
from cdc_stream import Column, DebeziumSource  # noqa: E402

WORKERS = 3
ROWS = 40


def sync_worker(warehouse: str, worker: int, ready: str, go: str) -> tuple[list[int], list[str]]:
    """Sync rows ``worker*1000 + i`` with a column ``c<worker>`` of this worker's own; returns
    the keys whose sync call returned (acknowledged) and the tables it created."""
    from tidelake import cdc

    src = DebeziumSource("shop")
    src.create_table("t", [Column("id", "int64"), Column("v", "string"), Column(f"c{worker}", "int64")])
    events = [src.insert("t", {"id": worker * 1000 + i, "v": f"w{worker}", f"c{worker}": i}) for i in range(ROWS)]
    catalog = tidelake.Catalog(warehouse)
    start_together(ready, f"w{worker}", go)
    for _ in range(10):
        try:
            result = cdc.sync(catalog, events, bucket=2, commit_identifier=1, commit_user=f"worker-{worker}")
            break
        except tidelake.CommitConflictError:
            continue  # nothing of this commit landed; the same identifier makes the retry exactly-once
    else:
        raise AssertionError("no attempt landed")
    return sorted(src.model("t")), result.created


def test_concurrent_syncs_create_and_evolve_one_table(tmp_path):
    ctx = mp.get_context("spawn")
    ready, go = tmp_path / "ready", str(tmp_path / "go")
    ready.mkdir()
    warehouse = str(tmp_path / "wh")
    with ctx.Pool(WORKERS) as pool:
        pending = pool.starmap_async(sync_worker, [(warehouse, w, str(ready), go) for w in range(WORKERS)])
        release_when_ready(str(ready), WORKERS, go)
        results = pending.get(timeout=180)
    acknowledged = [keys for keys, _ in results]
    assert sorted(c for _, created in results for c in created) == ["shop.t"]  # one creator won
    table = tidelake.Catalog(warehouse).get_table("shop.t")
    assert sorted(table.schema.names) == sorted(["id", "v"] + [f"c{w}" for w in range(WORKERS)])
    rows = {r["id"]: r for r in table.to_arrow().to_pylist()}
    assert sorted(rows) == sorted(k for keys in acknowledged for k in keys)
    for key, row in rows.items():
        worker, i = divmod(key, 1000)
        assert row == {"id": key, "v": f"w{worker}", **{f"c{w}": (i if w == worker else None) for w in range(WORKERS)}}
    # the creator's schema, then one column added by each other worker: none twice
    assert len(table.schemas()) == WORKERS
    # one APPEND per worker (and maybe compactions), however the races went
    appends = [s for s in table.snapshots() if s.commit_kind == "APPEND"]
    assert sorted(s.commit_user for s in appends) == [f"worker-{w}" for w in range(WORKERS)]
