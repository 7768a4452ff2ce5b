"""Lazy polars scans of tidelake tables, through polars' IO-plugin API.

:func:`scan_table` returns a :class:`polars.LazyFrame` over one snapshot of a table. When the
frame is collected, polars hands the plugin the projected columns, the predicate, the row limit
and the batch size; the columns and the row limit go to tidelake's reader, and the parts of the
predicate that tidelake's filter language can state exactly go to its planner (partition, bucket,
file, page and key pruning). Polars still applies the whole predicate to what comes back, so a
part that is not pushed down never changes results; a part that is pushed down must mean exactly
what polars means, which is why only plain column-versus-literal comparisons on types whose
literals convert without loss are translated.

The frame is pinned to the snapshot that was latest (or asked for) when it was created: every
collect reads the same data.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ._filters import json_literal, literal_fits

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa

    from .table import Table

__all__ = ["scan_table"]

_COMPARE = {"Eq": "eq", "NotEq": "ne", "Lt": "lt", "LtEq": "le", "Gt": "gt", "GtEq": "ge"}
# `is_between(lo, hi, closed=...)` as the comparisons of its two bounds.
_BETWEEN = {"Both": ("ge", "le"), "Left": ("ge", "lt"), "Right": ("gt", "le"), "None": ("gt", "lt")}
# The same comparison with its operands swapped (`5 < col` is `col > 5`).
_MIRROR = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


def scan_table(source: str | Table, *, snapshot_id: int | None = None, tag: str | None = None,
               timestamp: Any = None, storage_options: dict[str, str] | None = None,
               branch: str | None = None) -> pl.LazyFrame:
    """A :class:`polars.LazyFrame` over a tidelake table (a path or an opened :class:`Table`).

    Projection, row limits, batch size and simple predicates are pushed into tidelake's reader.
    Time travel as :meth:`Table.scan` (``snapshot_id``, ``tag`` or ``timestamp``); by default the
    snapshot that is latest now.
    """
    import polars as pl
    from polars.io.plugins import register_io_source

    from .table import Table, open_table

    table = source if isinstance(source, Table) else open_table(source, storage_options, branch=branch)
    pinned = table.scan(snapshot_id=snapshot_id, tag=tag, timestamp=timestamp).snapshot_id
    arrow_schema = table.schema
    polars_schema = pl.from_arrow(arrow_schema.empty_table()).schema  # type: ignore[union-attr]

    def source_batches(with_columns: list[str] | None, predicate: pl.Expr | None, n_rows: int | None,
                       batch_size: int | None) -> Iterator[pl.DataFrame]:
        columns = list(with_columns) if with_columns is not None else list(arrow_schema.names)
        read = list(columns)
        tree = None
        if predicate is not None:
            read += [c for c in predicate.meta.root_names() if c not in read]
            tree = _to_filter_tree(json.loads(predicate.meta.serialize(format="json")), arrow_schema)
        if pinned is None:
            return
        reader = table.scan(columns=read, filter=tree, snapshot_id=pinned, batch_size=batch_size).to_reader()
        remaining = n_rows
        for batch in reader:
            frame = pl.from_arrow(batch)
            assert isinstance(frame, pl.DataFrame)
            if predicate is not None:
                frame = frame.filter(predicate)
            frame = frame.select(columns)
            if remaining is not None:
                frame = frame.head(remaining)
                remaining -= frame.height
            if frame.height:
                yield frame
            if remaining == 0:
                return

    return register_io_source(source_batches, schema=polars_schema)


def _to_filter_tree(node: dict[str, Any], schema: pa.Schema) -> dict[str, Any] | None:
    """tidelake's filter tree for the parts of a serialised polars predicate it can state exactly.

    Returns None when nothing can be pushed down. An AND keeps the conjuncts that translate (the
    rest is applied by polars); an OR, a NOT or anything else translates whole or not at all.
    """
    if "BinaryExpr" in node:
        expr = node["BinaryExpr"]
        op = expr["op"]
        if op in ("And", "LogicalAnd"):
            args = [t for t in (_to_filter_tree(expr["left"], schema), _to_filter_tree(expr["right"], schema)) if t]
            return None if not args else args[0] if len(args) == 1 else {"op": "and", "args": args}
        if op in ("Or", "LogicalOr"):
            left, right = _to_filter_tree(expr["left"], schema), _to_filter_tree(expr["right"], schema)
            return {"op": "or", "args": [left, right]} if left and right else None
        if op in _COMPARE:
            return _comparison(_COMPARE[op], expr["left"], expr["right"], schema)
        return None
    if "Function" in node:
        function, inputs = node["Function"]["function"], node["Function"]["input"]
        column = _column(inputs[0]) if inputs else None
        if column is None or column not in schema.names:
            return None
        if function == {"Boolean": "IsNull"}:
            return {"op": "is_null", "field": column}
        if function == {"Boolean": "IsNotNull"}:
            return {"op": "is_not_null", "field": column}
        boolean = function.get("Boolean") if isinstance(function, dict) else None
        if isinstance(boolean, dict) and "IsBetween" in boolean and len(inputs) == 3:
            lower_op, upper_op = _BETWEEN.get(boolean["IsBetween"].get("closed"), (None, None))
            lower = _comparison(lower_op, inputs[0], inputs[1], schema) if lower_op else None
            upper = _comparison(upper_op, inputs[0], inputs[2], schema) if upper_op else None
            return {"op": "and", "args": [lower, upper]} if lower and upper else None
        if isinstance(boolean, dict) and "IsIn" in boolean and len(inputs) == 2:
            values = _list_literal(inputs[1])
            if values is None or any(v is None for v in values):
                return None
            if not all(literal_fits(v, schema.field(column).type) for v in values):
                return None
            return {"op": "in", "field": column, "values": [json_literal(v) for v in values]}
    return None


def _comparison(op: str, left: dict[str, Any], right: dict[str, Any], schema: pa.Schema) -> dict[str, Any] | None:
    column, literal = _column(left), right
    if column is None:
        column, literal, op = _column(right), left, _MIRROR[op]
    if column is None or column not in schema.names:
        return None
    found, value = _scalar(literal)
    if not found or value is None or not literal_fits(value, schema.field(column).type):
        return None
    return {"op": op, "field": column, "value": json_literal(value)}


def _column(node: dict[str, Any]) -> str | None:
    name = node.get("Column") if isinstance(node, dict) else None
    return name if isinstance(name, str) else None


def _scalar(node: dict[str, Any]) -> tuple[bool, Any]:
    """(True, value) for a literal of a type translated exactly, else (False, None)."""
    literal = node.get("Literal") if isinstance(node, dict) else None
    if not isinstance(literal, dict):
        return False, None
    for kind in ("Dyn", "Scalar"):
        inner = literal.get(kind)
        if not isinstance(inner, dict) or len(inner) != 1:
            continue
        ((tag, value),) = inner.items()
        if tag in ("Int", "Float", "String", "Boolean") or tag.startswith(("Int", "UInt", "Float")):
            return True, value
        if tag == "Date" and isinstance(value, int):
            return True, _dt.date(1970, 1, 1) + _dt.timedelta(days=value)
    return False, None


def _list_literal(node: dict[str, Any]) -> list[Any] | None:
    """The values of an `is_in` list literal (polars serialises it as an Arrow IPC stream)."""
    import pyarrow as pa

    literal = node.get("Literal") if isinstance(node, dict) else None
    data = literal.get("Scalar", {}).get("List") if isinstance(literal, dict) else None
    if not isinstance(data, list):
        return None
    try:
        values = pa.ipc.open_stream(bytes(data)).read_all().column(0)
    except (pa.ArrowException, ValueError, IndexError):
        return None
    return values.to_pylist()
