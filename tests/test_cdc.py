"""tidelake.cdc: decoding change messages and syncing them into tables (issue #19).

The format decoders' type mapping is tested in Rust (crates/tidelake-core/src/cdc/tests.rs);
these tests check the Python API end to end: routing, table creation, schema evolution,
row kinds, exactly-once commits and malformed-message policies, against a model of the source.
"""

from __future__ import annotations

import datetime as dt
import json
import pathlib
import random
import sys

import pyarrow as pa
import pytest

import tidelake
from tidelake import cdc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
from cdc_stream import Column, DebeziumSource, decimal_column, micro_timestamp_column, money  # noqa: E402

ITEM_COLUMNS = [Column("id", "int64"), Column("name", "string"), Column("qty", "int32"),
                decimal_column("price", 10, 2), micro_timestamp_column("updated")]


def rows_by_id(table: tidelake.Table) -> dict[int, dict]:
    return {r["id"]: r for r in table.to_arrow().to_pylist()}


def source() -> DebeziumSource:
    src = DebeziumSource("inventory")
    src.create_table("items", ITEM_COLUMNS)
    src.create_table("users", [Column("id", "int64"), Column("email", "string")])
    return src


def test_decode_returns_batches_per_source_table_with_row_kinds():
    src = source()
    t0 = dt.datetime(2026, 1, 2, 3, 4, 5, 678901)
    events = [src.insert("items", {"id": 1, "name": "bolt", "qty": 3, "price": money(125), "updated": t0}),
              src.insert("users", {"id": 7, "email": "a@x"}),
              src.update("items", 1, {"qty": 4}),
              src.delete("users", 7)]
    decoded = cdc.decode(events)
    assert [(t.database, t.table, t.primary_keys) for t in decoded.tables] == [
        ("inventory", "items", ["id"]), ("inventory", "users", ["id"])]
    items = decoded.tables[0].batch
    assert items.column("_row_kind").to_pylist() == ["+I", "-U", "+U"]
    assert items.schema.field("price").type == pa.decimal128(10, 2)
    assert items.schema.field("updated").type == pa.timestamp("us")
    assert items.column("qty").to_pylist() == [3, 3, 4]
    assert items.column("updated").to_pylist() == [t0] * 3
    assert decoded.tables[1].batch.column("_row_kind").to_pylist() == ["+I", "-D"]


def test_decode_policies_name_the_message():
    good = json.dumps({"op": "c", "after": {"id": 1}, "source": {"db": "d", "table": "t"}})
    bad = json.dumps({"op": "c", "after": {"id": 2}, "source": {"db": "d"}})
    with pytest.raises(tidelake.InvalidArgumentError, match="debezium-json message 1 is malformed: no 'table' field"):
        cdc.decode([good, bad, good])
    decoded = cdc.decode([good, bad, "", None], on_error="dead_letter")
    assert [(d.index, d.value) for d in decoded.dead_letters] == [(1, bad.encode())]
    assert [i for i, _ in decoded.ignored] == [2, 3]
    with pytest.raises(tidelake.InvalidArgumentError, match="unknown CDC format"):
        cdc.decode([good], format="avro")
    with pytest.raises(tidelake.InvalidArgumentError, match="on_error"):
        cdc.decode([good], on_error="skip")


def test_sync_creates_evolves_and_applies_changes(tmp_path):
    catalog = tidelake.Catalog(tmp_path)
    src = source()
    t0 = dt.datetime(2026, 1, 2, 3, 4, 5)
    first = [src.insert("items", {"id": i, "name": f"n{i}", "qty": i, "price": money(100 * i), "updated": t0})
             for i in range(1, 5)]
    first.append(src.insert("users", {"id": 1, "email": "a@x"}))
    result = cdc.sync(catalog, first, table_mapping="ods.{database}_{table}", bucket=2)
    assert sorted(result.created) == ["ods.inventory_items", "ods.inventory_users"]
    items = catalog.get_table("ods.inventory_items")
    assert items.primary_keys == ["id"] and items.options["bucket"] == "2"
    assert rows_by_id(items) == src.model("items")

    # a column added mid-stream, an update, a delete: one more commit per table
    src.add_column("items", Column("note", "string"))
    second = [src.update("items", 2, {"note": "fragile", "qty": 20}), src.delete("items", 3),
              src.insert("items", {"id": 9, "name": "nut", "qty": 1, "price": money(5), "updated": t0, "note": "new"})]
    before = items.latest_snapshot().id
    result = cdc.sync(catalog, second, table_mapping="ods.{database}_{table}")
    assert result.evolved == ["ods.inventory_items"] and result.rows == {"ods.inventory_items": 4}
    items.refresh()
    assert items.schema.field("note").type == pa.string()
    assert items.latest_snapshot().id > before
    model = {k: {**v, "note": v.get("note")} for k, v in src.model("items").items()}
    assert rows_by_id(items) == model


def test_sync_widens_types_and_refuses_incompatible_changes(tmp_path):
    catalog = tidelake.Catalog(tmp_path)
    src = DebeziumSource("db")
    src.create_table("t", [Column("id", "int64"), Column("n", "int32"), Column("s", "string")])
    cdc.sync(catalog, [src.insert("t", {"id": 1, "n": 5, "s": "a"})])
    t = catalog.get_table("db.t")
    assert t.schema.field("n").type == pa.int32()
    # the source widened n to BIGINT
    src.tables["t"].columns[1] = Column("n", "int64")
    cdc.sync(catalog, [src.insert("t", {"id": 2, "n": 2**40, "s": "b"})])
    t.refresh()
    assert t.schema.field("n").type == pa.int64()
    assert rows_by_id(t)[2]["n"] == 2**40
    # BIGINT -> INT is narrower: the table keeps BIGINT, rows cast exactly
    src.tables["t"].columns[1] = Column("n", "int32")
    cdc.sync(catalog, [src.insert("t", {"id": 3, "n": 3, "s": "c"})])
    assert t.refresh().schema.field("n").type == pa.int64()
    # STRING -> INT is not a change Paimon makes: refused before anything is written
    snapshots = len(t.snapshots())
    src.tables["t"].columns[2] = Column("s", "int32")
    with pytest.raises(tidelake.SchemaMismatchError, match="source column 's' changed to INT"):
        cdc.sync(catalog, [src.insert("t", {"id": 4, "n": 4, "s": 4})])
    assert len(t.refresh().snapshots()) == snapshots and 4 not in rows_by_id(t)


def test_dropped_source_columns_stay_nullable(tmp_path):
    catalog = tidelake.Catalog(tmp_path)
    src = DebeziumSource("db")
    src.create_table("t", [Column("id", "int64"), Column("a", "string"), Column("b", "string")])
    cdc.sync(catalog, [src.insert("t", {"id": 1, "a": "x", "b": "y"})])
    src.tables["t"].columns.pop()  # ALTER TABLE t DROP COLUMN b
    cdc.sync(catalog, [src.insert("t", {"id": 2, "a": "z"}), src.update("t", 1, {"a": "w"})])
    t = catalog.get_table("db.t")
    assert t.schema.names == ["id", "a", "b"]
    assert rows_by_id(t) == {1: {"id": 1, "a": "w", "b": None}, 2: {"id": 2, "a": "z", "b": None}}


def test_sync_is_exactly_once_per_commit_identifier(tmp_path):
    catalog = tidelake.Catalog(tmp_path)
    src = source()
    events = [src.insert("users", {"id": i, "email": f"{i}@x"}) for i in range(3)]
    first = cdc.sync(catalog, events, commit_identifier=7, commit_user="job-1")
    users = catalog.get_table("inventory.users")
    snapshots = [s.id for s in users.snapshots()]
    again = cdc.sync(catalog, events, commit_identifier=7, commit_user="job-1")
    assert first.snapshots["inventory.users"] is not None and again.snapshots == {"inventory.users": None}
    assert [s.id for s in users.snapshots()] == snapshots
    # a retry after a partial failure commits the tables that had not committed
    more = [src.insert("users", {"id": 10, "email": "t@x"}),
            src.insert("items", {"id": 1, "name": "b", "qty": 1, "price": money(1), "updated": None})]
    catalog.create_database("inventory", ignore_if_exists=True)
    users_only = [more[0]]
    cdc.sync(catalog, users_only, commit_identifier=8, commit_user="job-1")
    result = cdc.sync(catalog, more, commit_identifier=8, commit_user="job-1")
    assert result.snapshots["inventory.users"] is None and result.snapshots["inventory.items"] is not None
    assert sorted(rows_by_id(users)) == [0, 1, 2, 10]
    with pytest.raises(tidelake.InvalidArgumentError, match="both"):
        cdc.sync(catalog, events, commit_identifier=9)


def test_malformed_messages_fail_or_go_to_the_dead_letter_table(tmp_path):
    catalog = tidelake.Catalog(tmp_path)
    src = source()
    events = [src.insert("users", {"id": 1, "email": "a"}), (None, b"{oops"), src.insert("users", {"id": 2, "email": "b"})]
    with pytest.raises(tidelake.InvalidArgumentError, match="message 1 is malformed: invalid JSON"):
        cdc.sync(catalog, events)
    assert catalog.list_databases() == []  # nothing created or written
    result = cdc.sync(catalog, events, on_error="dead_letter", dead_letter_table="ops.cdc_dead_letters",
                      commit_identifier=1, commit_user="u")
    assert [d.index for d in result.dead_letters] == [1]
    dead = catalog.get_table("ops.cdc_dead_letters").to_arrow().to_pylist()
    assert dead == [{"message_index": 1, "message_key": None, "message": b"{oops",
                     "error": dead[0]["error"]}] and "invalid JSON" in dead[0]["error"]
    assert sorted(rows_by_id(catalog.get_table("inventory.users"))) == [1, 2]
    # replayed: neither the rows nor the dead letters are written twice
    cdc.sync(catalog, events, on_error="dead_letter", dead_letter_table="ops.cdc_dead_letters",
             commit_identifier=1, commit_user="u")
    assert catalog.get_table("ops.cdc_dead_letters").to_arrow().num_rows == 1


def test_missing_primary_key_is_a_clear_error(tmp_path):
    catalog = tidelake.Catalog(tmp_path)
    msg = json.dumps({"op": "c", "after": {"id": 1, "v": "a"}, "source": {"db": "d", "table": "t"}})
    with pytest.raises(tidelake.InvalidArgumentError, match="name no primary key; pass primary_keys="):
        cdc.sync(catalog, [msg])
    cdc.sync(catalog, [msg], primary_keys={"d.t": ["id"]})
    assert catalog.get_table("d.t").primary_keys == ["id"]
    # once the table exists its keys are known: later messages need none
    cdc.sync(catalog, [msg.replace('"a"', '"b"')])
    assert catalog.get_table("d.t").to_arrow().to_pylist() == [{"id": 1, "v": "b"}]


def test_other_formats_sync(tmp_path):
    catalog = tidelake.Catalog(tmp_path)
    canal = [
        {"data": [{"id": "1", "v": "a"}, {"id": "2", "v": "b"}], "database": "c", "table": "t", "isDdl": False,
         "type": "INSERT", "pkNames": ["id"], "mysqlType": {"id": "bigint(20)", "v": "varchar(10)"}},
        {"data": None, "database": "c", "table": "t", "isDdl": True, "type": "ALTER", "sql": "alter table t add w int"},
        {"data": [{"id": "1", "v": "A"}], "old": [{"v": "a"}], "database": "c", "table": "t", "isDdl": False,
         "type": "UPDATE", "pkNames": ["id"], "mysqlType": {"id": "bigint(20)", "v": "varchar(10)"}},
        {"data": [{"id": "2", "v": "b"}], "database": "c", "table": "t", "isDdl": False, "type": "DELETE",
         "pkNames": ["id"], "mysqlType": {"id": "bigint(20)", "v": "varchar(10)"}},
    ]
    result = cdc.sync(catalog, [json.dumps(m) for m in canal], "canal-json")
    assert len(result.ignored) == 1
    assert catalog.get_table("c.t").to_arrow().to_pylist() == [{"id": 1, "v": "A"}]
    maxwell = [{"database": "m", "table": "t", "type": "insert", "data": {"id": 1, "v": 1.5}, "primary_key_columns": ["id"]},
               {"database": "m", "table": "t", "type": "update", "data": {"id": 1, "v": 2.5}, "old": {"v": 1.5},
                "primary_key_columns": ["id"]}]
    cdc.sync(catalog, [json.dumps(m) for m in maxwell], "maxwell-json")
    assert catalog.get_table("m.t").to_arrow().to_pylist() == [{"id": 1, "v": 2.5}]
    ogg = [{"table": "O.T", "op_type": "I", "primary_keys": ["ID"], "after": {"ID": 1, "N": "x"}},
           {"table": "O.T", "op_type": "D", "primary_keys": ["ID"], "before": {"ID": 1, "N": "x"}},
           {"table": "O.T", "op_type": "I", "primary_keys": ["ID"], "after": {"ID": 2, "N": "y"}}]
    cdc.sync(catalog, [json.dumps(m) for m in ogg], "ogg-json")
    assert catalog.get_table("O.T").to_arrow().to_pylist() == [{"ID": 2, "N": "y"}]


def test_sync_into_one_table(tmp_path):
    src = source()
    events = [src.insert("users", {"id": 1, "email": "a"})]
    table = tidelake.create_table(tmp_path / "t", pa.schema([pa.field("id", pa.int64(), False), ("email", pa.string())]),
                                  primary_keys=["id"])
    cdc.sync(table, events + [src.update("users", 1, {"email": "b"})])
    assert table.to_arrow().to_pylist() == [{"id": 1, "email": "b"}]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_history_equals_the_model(tmp_path, seed):
    """Random inserts, updates (several per key per batch), deletes and added columns over two
    source tables, synced in batches of random size: every table equals the source's rows."""
    rng = random.Random(seed)
    catalog = tidelake.Catalog(tmp_path)
    src = source()
    t0 = dt.datetime(2026, 1, 1)
    added = 0
    pending: list = []
    for step in range(400):
        table = rng.choice(["items", "users"])
        rows = src.tables[table].rows
        roll = rng.random()
        if roll < 0.02:
            added += 1
            src.add_column(table, Column(f"extra{added}", rng.choice(["string", "int64", "double"])))
            continue
        extra = {c.name: (f"e{step}" if c.type == "string" else (step if c.type == "int64" else step / 4))
                 for c in src.tables[table].columns if c.name.startswith("extra")}
        if roll < 0.45 or not rows:
            key = rng.randrange(60)
            if key in rows:
                continue
            if table == "items":
                row = {"id": key, "name": f"n{step}", "qty": rng.randrange(100), "price": money(rng.randrange(10**6)),
                       "updated": t0 + dt.timedelta(microseconds=rng.randrange(10**12))}
            else:
                row = {"id": key, "email": rng.choice([None, f"{step}@x"])}
            pending.append(src.insert(table, {**row, **extra}))
        elif roll < 0.8:
            key = rng.choice(sorted(rows))
            change = {"qty": rng.randrange(100)} if table == "items" else {"email": f"u{step}"}
            pending.append(src.update(table, key, {**change, **{k: v for k, v in extra.items() if rng.random() < .5}}))
        else:
            pending.append(src.delete(table, rng.choice(sorted(rows))))
        if rng.random() < 0.1:
            cdc.sync(catalog, pending, commit_identifier=step, commit_user="model")
            pending = []
    cdc.sync(catalog, pending, commit_identifier=10**6, commit_user="model")
    for name in ("items", "users"):
        table = catalog.get_table(f"inventory.{name}")
        expected = {k: {c: v.get(c) for c in table.schema.names} for k, v in src.model(name).items()}
        assert rows_by_id(table) == expected, name


def test_columns_seen_only_as_null_get_their_type_later(tmp_path):
    """Schemaless formats type a column by its values: one that held only nulls is not created
    as STRING (which a later number could not widen), but once it holds a value."""
    catalog = tidelake.Catalog(tmp_path)
    first = {"database": "m", "table": "t", "type": "insert", "data": {"id": 1, "score": None},
             "primary_key_columns": ["id"]}
    decoded = cdc.decode([json.dumps(first)], "maxwell-json")
    assert decoded.tables[0].batch.schema.field("score").type == pa.null()
    cdc.sync(catalog, [json.dumps(first)], "maxwell-json")
    t = catalog.get_table("m.t")
    assert t.schema.names == ["id"]
    second = {**first, "data": {"id": 2, "score": 7}}
    cdc.sync(catalog, [json.dumps(second), json.dumps({**first, "data": {"id": 3, "score": None}})], "maxwell-json")
    assert t.refresh().schema.field("score").type == pa.int64()
    assert sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "score": None}, {"id": 2, "score": 7}, {"id": 3, "score": None}]
