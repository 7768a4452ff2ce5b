"""Filter conversion: pyarrow-style DNF tuples to tidelake's JSON filter tree, which the
engine compiles (binding, typing, evaluation and pruning all happen in Rust).

Accepted forms (as in ``pyarrow.parquet``):

* ``[("qty", ">=", 50), ("name", "in", ["a", "b"])]`` — a conjunction;
* ``[[...], [...]]`` — a disjunction of conjunctions;
* ``("qty", ">=", 50)`` — a single predicate;
* a string in the engine's text filter language, ``"qty >= 50 and name in ('a', 'b')"``
  (parsed by the engine, see :func:`parse_filter_text`);
* a JSON-ready ``dict`` tree (``{"op": "and", "args": [...]}``), passed through.

Operators: ``= == != < <= > >= in not in is_null is_not_null`` (``is_null`` and
``is_not_null`` take no value, or any value, which is ignored).
"""

from __future__ import annotations

import datetime as _dt
import decimal as _dec
import json
import math
from collections.abc import Sequence
from typing import Any

from . import _internal
from .exceptions import InvalidArgumentError

_COMPARE = {"=": "eq", "==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}


def json_literal(value: Any) -> Any:
    """A JSON-safe literal. Temporal and decimal values become ISO strings."""
    if isinstance(value, float) and not math.isfinite(value):
        # JSON has no NaN/Infinity; the engine reads these spellings for float columns.
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, _dt.datetime):
        return value.isoformat()
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, _dt.time):
        return value.isoformat()
    if isinstance(value, _dec.Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    raise InvalidArgumentError(f"unsupported filter literal {value!r} of type {type(value).__name__}")


def literal_fits(value: Any, type: Any) -> bool:
    """Whether a Python literal means the same value for a column of Arrow ``type`` in tidelake
    as in the engine that wrote it (polars, pyarrow): filters other engines hand over are pushed
    only then."""
    import pyarrow as pa

    if isinstance(value, bool):
        return pa.types.is_boolean(type)
    if isinstance(value, int):
        return pa.types.is_integer(type)
    if isinstance(value, float):
        return pa.types.is_floating(type) and math.isfinite(value)
    if isinstance(value, str):
        return pa.types.is_string(type) or pa.types.is_large_string(type) or pa.types.is_string_view(type)
    if isinstance(value, _dt.date) and not isinstance(value, _dt.datetime):
        return pa.types.is_date32(type)
    return False


def _predicate(term: Any) -> dict[str, Any]:
    if not isinstance(term, (tuple, list)) or len(term) not in (2, 3) or not isinstance(term[0], str):
        raise InvalidArgumentError(f"a filter term must be (column, op, value), got {term!r}")
    column, op = term[0], str(term[1]).strip().lower()
    value = term[2] if len(term) == 3 else None
    if op in _COMPARE:
        if value is None:
            raise InvalidArgumentError(
                f"filter ({column!r}, {op!r}, None): comparisons with NULL never match; use 'is_null'"
            )
        return {"op": _COMPARE[op], "field": column, "value": json_literal(value)}
    if op in ("in", "not in", "not_in"):
        if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, set, frozenset)):
            raise InvalidArgumentError(f"filter ({column!r}, {op!r}, ...) needs a list of values")
        return {"op": "in" if op == "in" else "not_in", "field": column, "values": [json_literal(v) for v in value]}
    if op in ("is_null", "is null"):
        return {"op": "is_null", "field": column}
    if op in ("is_not_null", "is not null"):
        return {"op": "is_not_null", "field": column}
    raise InvalidArgumentError(f"unknown filter operator {term[1]!r} in {term!r}")


def parse_filter_text(text: str) -> dict[str, Any]:
    """The filter tree of ``text``: terms ``col OP value`` (``= == != <> < <= > >=``),
    ``col [not] in (v1, ...)`` and ``col is [not] null`` joined by ``and``, which binds tighter
    than ``or``; values are numbers, quoted strings, ``true``/``false``, ISO dates and
    timestamps or bare words. Raises :class:`InvalidArgumentError` naming the position."""
    tree: dict[str, Any] = json.loads(_internal.parse_filter_text(text))
    return tree


def _is_term(x: Any) -> bool:
    return isinstance(x, (tuple, list)) and len(x) in (2, 3) and isinstance(x[0], str)


def to_filter_tree(filters: Any) -> dict[str, Any] | None:
    """Convert the accepted filter forms to the JSON tree, or None for no filter."""
    if filters is None:
        return None
    if isinstance(filters, dict):
        return filters
    if isinstance(filters, str):
        return parse_filter_text(filters)
    if _is_term(filters):
        return _predicate(filters)
    if not isinstance(filters, (list, tuple)) or not filters:
        raise InvalidArgumentError(f"unsupported filter {filters!r}")
    if all(_is_term(t) for t in filters):
        return {"op": "and", "args": [_predicate(t) for t in filters]}
    if all(isinstance(c, (list, tuple)) and c and all(_is_term(t) for t in c) for c in filters):
        return {"op": "or", "args": [{"op": "and", "args": [_predicate(t) for t in c]} for c in filters]}
    raise InvalidArgumentError(f"unsupported filter {filters!r}: expected (col, op, value) tuples in DNF")


def to_filter_json(filters: Any) -> str | None:
    tree = to_filter_tree(filters)
    return None if tree is None else json.dumps(tree)
