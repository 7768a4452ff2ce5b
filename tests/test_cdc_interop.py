"""Tables written by tidelake.cdc.sync read identically by Java Paimon 1.3.1 and pypaimon:
latest state, every snapshot, and each commit's changes with their row kinds (-U/+U from
Debezium before images, -D).

Changes are compared for commits made at the latest schema only: Java reads an older
snapshot's changes with that snapshot's schema, ``Table.changes`` with the latest one (a
difference of ``changes``, not of what sync wrote)."""

from __future__ import annotations

import datetime as dt
import pathlib
import random
import sys

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import compare_all, compare_changes
from tidelake import cdc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
from cdc_stream import Column, DebeziumSource, decimal_column, micro_timestamp_column, money  # noqa: E402


def test_java_and_pypaimon_read_synced_tables(java, tmp_path):  # noqa: F811
    rng = random.Random(11)
    src = DebeziumSource("src")
    src.create_table("items", [Column("id", "int64"), Column("name", "string"), Column("qty", "int32"),
                               decimal_column("price", 12, 3), micro_timestamp_column("updated"),
                               Column("day", "int32", "io.debezium.time.Date"),
                               Column("at", "int64", "io.debezium.time.Timestamp")])
    src.create_table("tags", [Column("id", "int64"), Column("label", "string")])
    catalog = tidelake.Catalog(tmp_path)
    t0 = dt.datetime(2026, 3, 1, 12, 0, 0, 123456)
    for batch in range(4):
        if batch == 2:
            src.add_column("items", Column("weight", "double"))
        events = []
        for i in range(30):
            key = rng.randrange(25)
            rows = src.tables["items"].rows
            if key not in rows:
                row = {"id": key, "name": f"n{i}", "qty": i, "price": money(rng.randrange(10**6)) / 10,
                       "updated": t0 + dt.timedelta(microseconds=rng.randrange(10**9)),
                       "day": dt.date(2026, 3, 1 + batch), "at": dt.datetime(2026, 3, 1, 1, 2, 3, 456000)}
                if batch >= 2:
                    row["weight"] = rng.random()
                events.append(src.insert("items", row))
            elif rng.random() < 0.7:
                events.append(src.update("items", key, {"qty": rng.randrange(100)}))
            else:
                events.append(src.delete("items", key))
            events.append(src.insert("tags", {"id": batch * 100 + i, "label": f"l{i}"}) if i % 3 == 0
                          else src.update("tags", 0, {"label": f"x{batch}{i}"}) if 0 in src.tables["tags"].rows
                          else src.insert("tags", {"id": 0, "label": "zero"}))
        cdc.sync(catalog, events, table_mapping="db.{table}", bucket=2, commit_identifier=batch, commit_user="u")
    for name in ("items", "tags"):
        table = catalog.get_table(f"db.{name}")
        got = {r["id"]: r for r in table.to_arrow().to_pylist()}
        assert got == {k: {c: v.get(c) for c in table.schema.names} for k, v in src.model(name).items()}
        compare_all(java, table, str(tmp_path), f"cdc {name}", changes=False, pypaimon=True)
        snapshots = table.snapshots()
        latest_schema = table.schema_id
        for before, after in zip(snapshots, snapshots[1:]):
            if before.schema_id == after.schema_id == latest_schema:
                compare_changes(java, table, str(tmp_path), f"cdc {name}", before.id, after.id)
