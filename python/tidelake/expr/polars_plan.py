"""The part of a polars predicate (its serialised plan, ``Expr.meta.serialize(format="json")``)
that tidelake's filter tree states exactly.

Invariant: the tree is implied by the predicate, so it only narrows what is read (polars still
applies the whole predicate): an AND keeps the conjuncts that translate; an OR, a NOT or
anything else translates whole or not at all; only plain column-versus-literal comparisons on
types whose literals convert without loss (:func:`~.tree.literal_fits`) are translated.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

import pyarrow as pa

from .tree import Compare, Comparison, Filter, InList, IsNull, all_of, any_of, json_literal, literal_fits

__all__ = ["pushable_filter"]

_COMPARE = {"Eq": Compare.EQ, "NotEq": Compare.NE, "Lt": Compare.LT, "LtEq": Compare.LE, "Gt": Compare.GT,
            "GtEq": Compare.GE}
"""polars' comparison operator names."""
_BETWEEN = {"Both": (Compare.GE, Compare.LE), "Left": (Compare.GE, Compare.LT), "Right": (Compare.GT, Compare.LE),
            "None": (Compare.GT, Compare.LT)}
"""`is_between(lo, hi, closed=...)` as the comparisons of its two bounds."""


def pushable_filter(node: dict[str, Any], schema: pa.Schema) -> Filter | None:
    """The filter tree of a serialised polars predicate, or None when nothing can be pushed."""
    if "BinaryExpr" in node:
        expr = node["BinaryExpr"]
        op = expr["op"]
        if op in ("And", "LogicalAnd"):
            return all_of([pushable_filter(expr["left"], schema), pushable_filter(expr["right"], schema)])
        if op in ("Or", "LogicalOr"):
            return any_of([pushable_filter(expr["left"], schema), pushable_filter(expr["right"], schema)])
        if op in _COMPARE:
            return _comparison(_COMPARE[op], expr["left"], expr["right"], schema)
        return None
    if "Function" in node:
        function, inputs = node["Function"]["function"], node["Function"]["input"]
        column = _column(inputs[0]) if inputs else None
        if column is None or column not in schema.names:
            return None
        if function == {"Boolean": "IsNull"}:
            return IsNull(column)
        if function == {"Boolean": "IsNotNull"}:
            return IsNull(column, negated=True)
        boolean = function.get("Boolean") if isinstance(function, dict) else None
        if isinstance(boolean, dict) and "IsBetween" in boolean and len(inputs) == 3:
            bounds = _BETWEEN.get(boolean["IsBetween"].get("closed"))
            if bounds is None:
                return None
            lower = _comparison(bounds[0], inputs[0], inputs[1], schema)
            upper = _comparison(bounds[1], inputs[0], inputs[2], schema)
            return all_of([lower, upper]) if lower and upper else None
        if isinstance(boolean, dict) and "IsIn" in boolean and len(inputs) == 2:
            values = _list_literal(inputs[1])
            if values is None or any(v is None for v in values):
                return None
            if not all(literal_fits(v, schema.field(column).type) for v in values):
                return None
            return InList(column, tuple(json_literal(v) for v in values))
    return None


def _comparison(op: Compare, left: dict[str, Any], right: dict[str, Any], schema: pa.Schema) -> Filter | None:
    column, literal = _column(left), right
    if column is None:
        column, literal, op = _column(right), left, op.mirrored
    if column is None or column not in schema.names:
        return None
    found, value = _scalar(literal)
    if not found or value is None or not literal_fits(value, schema.field(column).type):
        return None
    return Comparison(column, op, json_literal(value))


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
    literal = node.get("Literal") if isinstance(node, dict) else None
    data = literal.get("Scalar", {}).get("List") if isinstance(literal, dict) else None
    if not isinstance(data, list):
        return None
    try:
        values = pa.ipc.open_stream(bytes(data)).read_all().column(0)
    except (pa.ArrowException, ValueError, IndexError):
        return None
    return list(values.to_pylist())
