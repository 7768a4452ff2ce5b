"""Helpers for tests that check tidelake against peers (pypaimon) and plain-Python models.

Not a test module (leading underscore): imported by test_interop_pypaimon, test_write,
test_write_model and test_concurrency.
"""

from __future__ import annotations

import datetime as dt
import json
import math
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


# ---- canonical JSON rows (shared with the Java oracle, interop/java-oracle Values.java) --------

_EPOCH = dt.datetime(1970, 1, 1)


def _canon_timestamp(ns: int) -> str:
    secs, frac = divmod(ns, 10**9)
    return f"{(_EPOCH + dt.timedelta(seconds=secs)).isoformat(timespec='seconds')}.{frac:09d}"


def _canon_float(x: float) -> Any:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def canonical_column(col: pa.Array | pa.ChunkedArray) -> list[Any]:
    """The values of an Arrow column in the oracle's canonical JSON form: DECIMAL as a plain
    string with ``scale`` digits, binary as hex, DATE ``yyyy-MM-dd``, TIME and TIMESTAMP with nine
    fraction digits (LTZ as its UTC wall time), floats with NaN/±Infinity as strings, lists as
    lists, structs as the list of their fields, maps as lists of ``[key, value]`` pairs sorted by
    their JSON form (Java's map order is not the writer's)."""
    if isinstance(col, pa.ChunkedArray):
        col = pa.concat_arrays(col.chunks) if col.num_chunks else pa.array([], col.type)
    t = col.type
    valid = col.is_valid().to_pylist()
    if pa.types.is_timestamp(t) or pa.types.is_time(t):
        per = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[t.unit]
        width = pa.int64() if pa.types.is_timestamp(t) or t.bit_width == 64 else pa.int32()
        ints = col.view(width).to_pylist()
        if pa.types.is_timestamp(t):
            out = [_canon_timestamp(v * per) if v is not None else None for v in ints]
        else:
            out = [(_EPOCH + dt.timedelta(microseconds=v * per // 1000)).strftime("%H:%M:%S")
                   + f".{v * per % 10**9:09d}" if v is not None else None for v in ints]
    elif pa.types.is_decimal(t):
        out = [format(v, "f") if v is not None else None for v in col.to_pylist()]
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        out = [v.hex() if v is not None else None for v in col.to_pylist()]
    elif pa.types.is_date(t):
        out = [v.isoformat() if v is not None else None for v in col.to_pylist()]
    elif pa.types.is_floating(t):
        out = [_canon_float(v) if v is not None else None for v in col.to_pylist()]
    elif pa.types.is_map(t):
        keys, items = canonical_column(col.keys), canonical_column(col.items)
        offsets = col.offsets.to_pylist()
        out = [sorted(([keys[j], items[j]] for j in range(offsets[i], offsets[i + 1])), key=_pair_key)
               for i in range(len(col))]
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        values = canonical_column(col.values)
        offsets = col.offsets.to_pylist()
        out = [values[offsets[i]:offsets[i + 1]] for i in range(len(col))]
    elif pa.types.is_struct(t):
        fields = [canonical_column(col.field(i)) for i in range(t.num_fields)]
        out = [[f[i] for f in fields] for i in range(len(col))]
    else:
        out = col.to_pylist()
    return [v if ok else None for v, ok in zip(out, valid)]


def canonical_rows(t: pa.Table) -> list[list[Any]]:
    """The rows of ``t`` in canonical JSON form (:func:`canonical_column`), in table order."""
    cols = [canonical_column(c) for c in t.columns]
    return [list(r) for r in zip(*cols)] if cols else []


def _pair_key(kv: list[Any]) -> str:
    return json.dumps(kv, sort_keys=True)


def with_sorted_maps(value: Any, t: pa.DataType) -> Any:
    """A canonical value of Arrow type ``t`` with every map's pairs sorted as
    :func:`canonical_column` sorts them (for rows a peer rendered itself, e.g. Java's)."""
    if value is None:
        return None
    if pa.types.is_map(t):
        pairs = [[with_sorted_maps(k, t.key_type), with_sorted_maps(v, t.item_type)] for k, v in value]
        return sorted(pairs, key=_pair_key)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [with_sorted_maps(v, t.value_type) for v in value]
    if pa.types.is_struct(t):
        return [with_sorted_maps(v, t.field(i).type) for i, v in enumerate(value)]
    return value


def sorted_rows(rows: Iterable[list[Any]]) -> list[str]:
    """Canonical rows as a sorted multiset of JSON strings."""
    return sorted(json.dumps(r, sort_keys=True) for r in rows)
