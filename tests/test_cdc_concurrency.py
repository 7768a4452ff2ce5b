"""Concurrent syncs in separate processes into one table: creation races, schema evolution
races (every process adds the same new column each round) and commit races; no acknowledged
row is lost and every column ends up in the schema once."""

from __future__ import annotations

import logging
import multiprocessing as mp
import pathlib
import sys

import pyarrow as pa
import pytest
from _workers import release_when_ready, start_together

import tidelake

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
from cdc_stream import Column, DebeziumSource  # noqa: E402

WORKERS = 3
ROUNDS = 12
ROWS = 5


class _Races(logging.Handler):
    """Counts the schema-evolution races ``tidelake.cdc`` logs (lost, then recomputed)."""

    count = 0

    def emit(self, record: logging.LogRecord) -> None:
        _Races.count += "raced" in record.getMessage()


def sync_worker(warehouse: str, worker: int, ready: str, go: str) -> tuple[dict, list[str], int]:
    """Round ``r``: the source gains column ``s<r>`` (in every worker, so they race to add it)
    and this worker inserts rows ``worker*1000 + r*10 + i``; every row also has this worker's
    own column ``c<worker>``. Returns the rows acknowledged (their sync returned), the tables
    this worker created and how many evolution races it lost."""
    from tidelake import cdc

    logging.getLogger("tidelake.cdc").addHandler(_Races())
    logging.getLogger("tidelake.cdc").setLevel(logging.INFO)
    tidelake.reset_logging()
    src = DebeziumSource("shop")
    src.create_table("t", [Column("id", "int64"), Column("v", "string"), Column(f"c{worker}", "int64")])
    catalog = tidelake.Catalog(warehouse)
    created = []
    start_together(ready, f"w{worker}", go)
    for r in range(ROUNDS):
        src.add_column("t", Column(f"s{r}", "int64"))
        events = [src.insert("t", {"id": worker * 1000 + r * 10 + i, "v": f"w{worker}", f"c{worker}": i,
                                   **{f"s{q}": r for q in range(r + 1)}}) for i in range(ROWS)]
        for _ in range(10):
            try:
                result = cdc.sync(catalog, events, bucket=2, commit_identifier=r, commit_user=f"worker-{worker}")
                break
            except tidelake.CommitConflictError:
                continue  # nothing of this commit landed; the same identifier makes the retry exactly-once
        else:
            raise AssertionError("no attempt landed")
        created += result.created
    return src.model("t"), created, _Races.count


@pytest.mark.parametrize("exists", [False, True])
def test_concurrent_syncs_create_and_evolve_one_table(tmp_path, exists):
    """``exists=False``: the processes race to create the table (one creates it, the others
    add their columns); ``True``: it exists with ``id, v``. Then every round every process adds
    the same new column: all but one lose that race, recompute and add nothing twice."""
    ctx = mp.get_context("spawn")
    ready, go = tmp_path / "ready", str(tmp_path / "go")
    ready.mkdir()
    warehouse = str(tmp_path / "wh")
    if exists:
        catalog = tidelake.Catalog(warehouse)
        catalog.create_database("shop")
        catalog.create_table("shop.t", pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())]),
                             primary_keys=["id"], bucket=2)
    with ctx.Pool(WORKERS) as pool:
        pending = pool.starmap_async(sync_worker, [(warehouse, w, str(ready), go) for w in range(WORKERS)])
        release_when_ready(str(ready), WORKERS, go)
        results = pending.get(timeout=300)
    assert sorted(c for _, created, _ in results for c in created) == ([] if exists else ["shop.t"])
    print(f"evolution races lost and recomputed: {sum(races for _, _, races in results)}")
    table = tidelake.Catalog(warehouse).get_table("shop.t")
    columns = ["id", "v", *(f"c{w}" for w in range(WORKERS)), *(f"s{r}" for r in range(ROUNDS))]
    assert sorted(table.schema.names) == sorted(columns)
    rows = {r["id"]: r for r in table.to_arrow().to_pylist()}
    acknowledged = {k: {c: row.get(c) for c in columns} for model, _, _ in results for k, row in model.items()}
    assert rows == acknowledged
    appends = [s for s in table.snapshots() if s.commit_kind == "APPEND"]
    assert len(appends) == WORKERS * ROUNDS
