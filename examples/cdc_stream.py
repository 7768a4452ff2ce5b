"""A source database that emits Debezium JSON change events, with the rows it holds as a model.

Used by the CDC demo (``examples/cdc_demo.py``), the CDC tests and ``benches/cdc.py``. Each
event is a Kafka-style ``(key, value)`` pair as Debezium's MySQL connector with Kafka Connect's
JSON converter (``schemas.enable=true``) writes it: the key holds the primary key, the value
the ``{"schema", "payload"}`` envelope with ``before``/``after`` images typed by Kafka Connect
schemas (Decimal as base64 unscaled bytes, DATETIME(6) as MicroTimestamp).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
from dataclasses import dataclass, field
from typing import Any

EPOCH = dt.datetime(1970, 1, 1)


@dataclass(frozen=True)
class Column:
    """A source column: its name, Kafka Connect type, logical name and parameters."""

    name: str
    type: str
    logical: str | None = None
    parameters: dict[str, str] | None = None

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"field": self.name, "type": self.type, "optional": self.name != "id"}
        if self.logical:
            out["name"] = self.logical
        if self.parameters:
            out["parameters"] = self.parameters
        return out

    def encode(self, v: Any) -> Any:
        if v is None:
            return None
        if self.logical == "org.apache.kafka.connect.data.Decimal":
            unscaled = int(v.scaleb(int(self.parameters["scale"])))  # type: ignore[index]
            size = max(1, (unscaled.bit_length() + 8) // 8)
            return base64.b64encode(unscaled.to_bytes(size, "big", signed=True)).decode()
        if self.logical == "io.debezium.time.MicroTimestamp":
            return (v - EPOCH) // dt.timedelta(microseconds=1)
        if self.logical == "io.debezium.time.Timestamp":
            return (v - EPOCH) // dt.timedelta(milliseconds=1)
        if self.logical == "io.debezium.time.Date":
            return (v - EPOCH.date()).days
        return v


def decimal_column(name: str, precision: int, scale: int) -> Column:
    return Column(name, "bytes", "org.apache.kafka.connect.data.Decimal",
                  {"scale": str(scale), "connect.decimal.precision": str(precision)})


def micro_timestamp_column(name: str) -> Column:
    return Column(name, "int64", "io.debezium.time.MicroTimestamp")


@dataclass
class SourceTable:
    name: str
    columns: list[Column]
    rows: dict[int, dict[str, Any]] = field(default_factory=dict)

    def row_schema(self) -> dict[str, Any]:
        return {"type": "struct", "optional": True, "name": f"dbserver1.{self.name}.Value",
                "fields": [c.schema() for c in self.columns]}

    def image(self, row: dict[str, Any] | None) -> dict[str, Any] | None:
        if row is None:
            return None
        return {c.name: c.encode(row.get(c.name)) for c in self.columns}


class DebeziumSource:
    """One source database; its methods change rows and return the Debezium event."""

    def __init__(self, database: str) -> None:
        self.database = database
        self.tables: dict[str, SourceTable] = {}
        self.position = 0

    def create_table(self, name: str, columns: list[Column]) -> None:
        self.tables[name] = SourceTable(name, list(columns))

    def add_column(self, table: str, column: Column) -> None:
        """``ALTER TABLE ... ADD COLUMN``: later events carry it; existing rows hold null."""
        self.tables[table].columns.append(column)

    def _event(self, table: SourceTable, op: str, before: dict[str, Any] | None, after: dict[str, Any] | None,
               key: int) -> tuple[bytes, bytes]:
        self.position += 1
        row_schema = table.row_schema()
        value = {
            "schema": {"type": "struct", "name": f"dbserver1.{self.database}.{table.name}.Envelope", "fields": [
                {**row_schema, "field": "before"},
                {**row_schema, "field": "after"},
                {"field": "source", "type": "struct", "fields": [
                    {"field": "db", "type": "string"}, {"field": "table", "type": "string"}]},
                {"field": "op", "type": "string"},
                {"field": "ts_ms", "type": "int64", "optional": True},
            ]},
            "payload": {
                "before": table.image(before), "after": table.image(after), "op": op,
                "source": {"version": "2.7.0.Final", "connector": "mysql", "name": "dbserver1",
                           "db": self.database, "table": table.name, "file": "mysql-bin.000003",
                           "pos": self.position},
                "ts_ms": 1_700_000_000_000 + self.position,
            },
        }
        key_value = {"schema": {"type": "struct", "name": f"dbserver1.{self.database}.{table.name}.Key",
                                "fields": [{"field": "id", "type": "int64"}]},
                     "payload": {"id": key}}
        return json.dumps(key_value).encode(), json.dumps(value).encode()

    def insert(self, table: str, row: dict[str, Any]) -> tuple[bytes, bytes]:
        t = self.tables[table]
        full = {c.name: row.get(c.name) for c in t.columns}
        t.rows[row["id"]] = full
        return self._event(t, "c", None, full, row["id"])

    def update(self, table: str, key: int, changes: dict[str, Any]) -> tuple[bytes, bytes]:
        t = self.tables[table]
        before = {c.name: t.rows[key].get(c.name) for c in t.columns}
        after = {**before, **changes}
        t.rows[key] = after
        return self._event(t, "u", before, after, key)

    def delete(self, table: str, key: int) -> tuple[bytes, bytes]:
        t = self.tables[table]
        before = t.rows.pop(key)
        return self._event(t, "d", before, None, key)

    def model(self, table: str) -> dict[int, dict[str, Any]]:
        """The rows of ``table`` as a sync should leave them (columns the table never had: null)."""
        return {k: dict(v) for k, v in self.tables[table].rows.items()}


def money(cents: int) -> decimal.Decimal:
    return decimal.Decimal(cents).scaleb(-2)
