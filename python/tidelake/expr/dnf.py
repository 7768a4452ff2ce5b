"""The filter forms users hand to reads and row-level changes, as the typed tree.

Accepted forms (as in ``pyarrow.parquet``):

* ``[("qty", ">=", 50), ("name", "in", ["a", "b"])]``: a conjunction;
* ``[[...], [...]]``: a disjunction of conjunctions;
* ``("qty", ">=", 50)``: a single predicate;
* a string in the engine's text filter language, ``"qty >= 50 and name in ('a', 'b')"``
  (parsed by the engine, see :func:`parse_filter_text`);
* a JSON ``dict`` tree (``{"op": "and", "args": [...]}``), checked by :func:`~.tree.from_json`;
* a typed tree node, as it is.

Operators: ``= == != <> < <= > >= in not in is_null is_not_null`` (``is_null`` and
``is_not_null`` take no value, or any value, which is ignored).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .. import _internal
from ..exceptions import InvalidArgumentError
from .tree import LEAVES, And, Compare, Comparison, Filter, InList, IsNull, Or, from_json, json_literal

__all__ = ["to_filter", "parse_filter_text"]


def _term(term: Any) -> Filter:
    if not isinstance(term, (tuple, list)) or len(term) not in (2, 3) or not isinstance(term[0], str):
        raise InvalidArgumentError(f"a filter term must be (column, op, value), got {term!r}")
    column, op = term[0], str(term[1]).strip().lower()
    value = term[2] if len(term) == 3 else None
    compare = Compare.of_symbol(op)
    if compare is not None:
        if value is None:
            raise InvalidArgumentError(
                f"filter ({column!r}, {op!r}, None): comparisons with NULL never match; use 'is_null'"
            )
        return Comparison(column, compare, json_literal(value))
    if op in ("in", "not in", "not_in"):
        if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, set, frozenset)):
            raise InvalidArgumentError(f"filter ({column!r}, {op!r}, ...) needs a list of values")
        return InList(column, tuple(json_literal(v) for v in value), op != "in")
    if op in ("is_null", "is null"):
        return IsNull(column)
    if op in ("is_not_null", "is not null"):
        return IsNull(column, negated=True)
    raise InvalidArgumentError(f"unknown filter operator {term[1]!r} in {term!r}")


def parse_filter_text(text: str) -> Filter:
    """The filter tree of ``text``: terms ``col OP value`` (``= == != <> < <= > >=``),
    ``col [not] in (v1, ...)`` and ``col is [not] null`` joined by ``and``, which binds tighter
    than ``or``; values are numbers, quoted strings, ``true``/``false``, ISO dates and
    timestamps or bare words. Raises :class:`InvalidArgumentError` naming the position."""
    return from_json(json.loads(_internal.parse_filter_text(text)))


def _is_term(x: Any) -> bool:
    return isinstance(x, (tuple, list)) and len(x) in (2, 3) and isinstance(x[0], str)


def to_filter(filters: Any) -> Filter | None:
    """The typed tree of any accepted filter form, or None for no filter."""
    if filters is None:
        return None
    if isinstance(filters, LEAVES + (And, Or)):
        return filters
    if isinstance(filters, dict):
        return from_json(filters)
    if isinstance(filters, str):
        return parse_filter_text(filters)
    if _is_term(filters):
        return _term(filters)
    if not isinstance(filters, (list, tuple)) or not filters:
        raise InvalidArgumentError(f"unsupported filter {filters!r}")
    if all(_is_term(t) for t in filters):
        return And(tuple(_term(t) for t in filters))
    if all(isinstance(c, (list, tuple)) and c and all(_is_term(t) for t in c) for c in filters):
        return Or(tuple(And(tuple(_term(t) for t in c)) for c in filters))
    raise InvalidArgumentError(f"unsupported filter {filters!r}: expected (col, op, value) tuples in DNF")
