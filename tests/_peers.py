"""Helpers for tests that check tidelake against peers (pypaimon) and plain-Python models.

Not a test module (leading underscore): imported by test_interop_pypaimon, test_write,
test_write_model and test_concurrency.
"""

from __future__ import annotations

import os
import pathlib
from typing import Any, Iterable

import pyarrow as pa
import pyarrow.compute as pc

import tidelake

DB = "db"


def new_warehouse(path: pathlib.Path | str) -> tuple[tidelake.Catalog, str]:
    """A tidelake filesystem catalog with database ``db``."""
    wh = str(path)
    cat = tidelake.Catalog(wh)
    cat.create_database(DB, ignore_if_exists=True)
    return cat, wh


# ---- pypaimon --------------------------------------------------------------------------------


def pp_catalog(warehouse: str):
    from pypaimon import CatalogFactory

    return CatalogFactory.create({"warehouse": str(warehouse)})


def pp_table(warehouse: str, ident: str = "db.t", options: dict[str, str] | None = None):
    t = pp_catalog(warehouse).get_table(ident)
    if options:
        t = t.copy({k: str(v) for k, v in options.items()})
    return t


def pp_read(warehouse: str, ident: str = "db.t", options: dict[str, str] | None = None,
            schema: pa.Schema | None = None) -> pa.Table:
    """A full batch read with pypaimon (optionally with dynamic options such as
    ``scan.snapshot-id``). ``schema``: the schema to return when pypaimon reads no splits."""
    t = pp_table(warehouse, ident, options)
    rb = t.new_read_builder()
    splits = rb.new_scan().plan().splits()
    out = rb.new_read().to_arrow(splits)
    if out is None:
        assert schema is not None, "pypaimon returned None and no schema was given"
        return schema.empty_table()
    return out


def pp_stream_initial(warehouse: str, ident: str = "db.t") -> pa.Table:
    """pypaimon's initial streaming plan: the full latest snapshot *including* level-0 files
    (batch scans of first-row tables hide level 0, streaming scans do not)."""
    t = pp_table(warehouse, ident)
    sb = t.new_stream_read_builder()
    scan = sb.new_streaming_scan()
    plan = next(iter(scan.stream_sync()))
    return sb.new_read().to_arrow(plan.splits())


def pp_create(warehouse: str, ident: str, schema: pa.Schema, primary_keys: list[str] | None = None,
              partition_keys: list[str] | None = None, options: dict[str, str] | None = None):
    from pypaimon import Schema

    cat = pp_catalog(warehouse)
    cat.create_database(ident.split(".")[0], True)
    cat.create_table(ident, Schema.from_pyarrow_schema(schema, partition_keys=partition_keys,
                                                        primary_keys=primary_keys, options=options), False)
    return cat.get_table(ident)


def pp_write(table, data: pa.Table, overwrite: dict | None | bool = False) -> None:
    """One pypaimon batch commit of ``data`` (``overwrite``: False, True (whole) or a static
    partition dict)."""
    wb = table.new_batch_write_builder()
    if overwrite is not False:
        wb = wb.overwrite(None if overwrite is True else overwrite)
    w = wb.new_write()
    c = wb.new_commit()
    try:
        w.write_arrow(data)
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


# ---- comparisons ------------------------------------------------------------------------------


def conform_to(t: pa.Table, schema: pa.Schema) -> pa.Table:
    """``t``'s columns in ``schema``'s order and types (for comparing peers' results whose
    Arrow types differ only in representation, e.g. BINARY(n) as variable binary)."""
    t = t.select(schema.names)
    return t.cast(schema)


def truncate_ns_to_us(t: pa.Table) -> pa.Table:
    """TIMESTAMP(7..9) columns cut to microseconds (pypaimon's PK read does this)."""
    cols = []
    for name, col in zip(t.column_names, t.columns):
        if pa.types.is_timestamp(col.type) and col.type.unit == "ns":
            col = pc.floor_temporal(col, unit="microsecond")
        cols.append(col)
    return pa.table(cols, names=t.column_names)


def model_table(rows: Iterable[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """Rows of a plain-Python model as a pyarrow table in ``schema``."""
    return pa.Table.from_pylist(list(rows), schema=schema)


def table_files(table: "tidelake.Table | str | os.PathLike[str]") -> set[str]:
    """Every file of a table (or under a local table directory), relative paths; local or S3."""
    from _s3 import TableFiles

    return (TableFiles.of(table) if isinstance(table, tidelake.Table) else TableFiles(table)).names()


def data_files(table: "tidelake.Table | str | os.PathLike[str]") -> set[str]:
    """Data/changelog files (everything outside schema/, snapshot/, manifest/, index/)."""
    meta = ("schema/", "snapshot/", "manifest/", "index/", "tag/", "branch/", "consumer/")
    return {f for f in table_files(table) if not f.startswith(meta)}
