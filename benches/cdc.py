"""CDC ingestion throughput (issue #19): Debezium JSON events synced into a table with
``tidelake.cdc.sync`` vs the plain upsert path writing the same changes from Arrow.

    .venv/bin/python benches/cdc.py                  # 100,000 events in batches of 10,000
    .venv/bin/python benches/cdc.py --events 20000   # quicker

The events (``examples/cdc_stream.py``: Debezium MySQL connector shape, schema envelope, Kafka
key) change one source table ``id BIGINT, name STRING, qty INT, price DECIMAL(10,2), updated
TIMESTAMP(6)``: 50% inserts, 35% updates (before + after image), 15% deletes. Timed per system,
each on a fresh table with 4 buckets, one commit per batch:

* ``cdc.sync``: JSON bytes -> decode (Rust) -> schema check -> write with row kinds -> commit;
* ``decode only``: ``cdc.decode`` of the same bytes (the parsing share of the above);
* ``decode only, no envelope``: the same events without Kafka Connect's schema envelope
  (``schemas.enable=false``: the payload only, types inferred), to show what the envelope costs;
* ``upsert (Arrow)``: the same changes prepared as Arrow beforehand (the after images upserted,
  the deleted keys deleted, one writer and one commit per batch): what a hand-written pipeline
  that already has typed rows pays.

Both tables are checked equal to the source's rows at the end.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import pathlib
import random
import sys
import tempfile
import time

import pyarrow as pa

import tidelake
from tidelake import cdc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
from cdc_stream import Column, DebeziumSource, decimal_column, micro_timestamp_column, money  # noqa: E402

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("name", pa.string()), ("qty", pa.int32()),
                    ("price", pa.decimal128(10, 2)), ("updated", pa.timestamp("us"))])


def workload(events: int, batch: int, seed: int = 5):
    """Batches of (Debezium messages, upsert rows, deleted keys) and the source."""
    rng = random.Random(seed)
    src = DebeziumSource("bench")
    src.create_table("items", [Column("id", "int64"), Column("name", "string"), Column("qty", "int32"),
                               decimal_column("price", 10, 2), micro_timestamp_column("updated")])
    rows = src.tables["items"].rows
    t0 = dt.datetime(2026, 1, 1)
    out = []
    next_id = 0
    for start in range(0, events, batch):
        messages, upserts, deletes = [], {}, set()
        for i in range(start, min(events, start + batch)):
            roll = rng.random()
            if roll < 0.5 or len(rows) < 100:
                row = {"id": next_id, "name": f"item {next_id}", "qty": rng.randrange(1000),
                       "price": money(rng.randrange(10**7)), "updated": t0 + dt.timedelta(seconds=i)}
                next_id += 1
                messages.append(src.insert("items", row))
            elif roll < 0.85:
                key = rng.choice(list(rows)) if len(rows) < 1000 else rng.randrange(next_id)
                if key not in rows:
                    continue
                messages.append(src.update("items", key, {"qty": rng.randrange(1000),
                                                          "updated": t0 + dt.timedelta(seconds=i)}))
                row = rows[key]
            else:
                key = rng.randrange(next_id)
                if key not in rows:
                    continue
                messages.append(src.delete("items", key))
                upserts.pop(key, None)
                deletes.add(key)
                continue
            upserts[row["id"]] = dict(row)
            deletes.discard(row["id"])
        up = pa.Table.from_pylist(list(upserts.values()), schema=SCHEMA)
        dl = pa.table({"id": pa.array(sorted(deletes), pa.int64())})
        out.append((messages, up, dl))
    return src, out


def state(table: tidelake.Table) -> dict:
    return {r["id"]: r for r in table.to_arrow().to_pylist()}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=10_000)
    args = ap.parse_args()
    gen = time.perf_counter()
    src, batches = workload(args.events, args.batch)
    n = sum(len(m) for m, _, _ in batches)
    size = sum(len(v) for m, _, _ in batches for _, v in m)
    print(f"{n} events ({size / 1e6:.0f} MB of JSON) in {len(batches)} batches, generated in "
          f"{time.perf_counter() - gen:.0f} s")
    expected = {k: {c: v.get(c) for c in SCHEMA.names} for k, v in src.model("items").items()}
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        for messages, _, _ in batches:
            cdc.decode(messages)
        results["decode only"] = time.perf_counter() - start
        bare = [[(k, json.dumps(json.loads(v)["payload"]).encode()) for k, v in m] for m, _, _ in batches]
        start = time.perf_counter()
        for messages in bare:
            cdc.decode(messages)
        results["decode only, no envelope"] = time.perf_counter() - start
        bare_size = sum(len(v) for m in bare for _, v in m)

        catalog = tidelake.Catalog(pathlib.Path(tmp) / "wh")
        start = time.perf_counter()
        for i, (messages, _, _) in enumerate(batches):
            cdc.sync(catalog, messages, bucket=4, commit_identifier=i, commit_user="bench")
        results["cdc.sync"] = time.perf_counter() - start
        assert state(catalog.get_table("bench.items")) == expected

        table = tidelake.create_table(pathlib.Path(tmp) / "plain", SCHEMA, primary_keys=["id"], bucket=4)
        start = time.perf_counter()
        for i, (_, up, dl) in enumerate(batches):
            with table.writer(wait_compaction=True) as w:
                w.upsert(up)
                w.delete(dl)
                table.commit(w.prepare_commit(), i, w.commit_user)
        results["upsert (Arrow)"] = time.perf_counter() - start
        assert state(table) == expected
    print(f"(without the envelope: {bare_size / 1e6:.0f} MB)")
    print("\n| path | seconds | events/s |\n|---|---:|---:|")
    for name, secs in results.items():
        print(f"| {name} | {secs:.2f} | {n / secs:,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
