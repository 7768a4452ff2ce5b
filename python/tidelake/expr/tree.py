"""The typed filter tree: the one form every front-end's filter is translated into, and the
engine's JSON filter model (``crates/tidelake-core/src/scan/predicate``) node for node.

Nodes are frozen dataclasses: :class:`Comparison`, :class:`InList`, :class:`IsNull`,
:class:`Between`, :class:`StartsWith`, joined by :class:`And` / :class:`Or`. :class:`Compare`
is the one operator table (engine name, SQL symbols, the operator with its operands swapped,
the pyarrow compute function); translators map their front-end's vocabulary onto it.

Invariants:

* literals are held JSON-ready (:func:`json_literal`): what the engine binds to the column's
  type, so :func:`to_json` is exact and a tree round-trips through :func:`from_json`;
* the tree has no NOT node, as the engine's: unknown (NULL) folds to false at every leaf, which
  is exact for AND/OR;
* :func:`from_json` accepts exactly the shapes the engine's ``Predicate::from_json`` accepts
  (literal types are checked when the engine binds the tree to a schema).
"""

from __future__ import annotations

import datetime as _dt
import decimal as _dec
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..exceptions import InvalidArgumentError

__all__ = ["Compare", "Comparison", "InList", "IsNull", "Between", "StartsWith", "And", "Or", "Filter",
           "all_of", "any_of", "to_json", "from_json", "filter_json", "json_literal", "literal_fits"]


class Compare(Enum):
    """A comparison operator; its value is the engine's name for it."""

    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"

    @property
    def mirrored(self) -> Compare:
        """The operator with its operands swapped (``5 < col`` is ``col > 5``)."""
        return _OPERATORS[self][1]

    @property
    def arrow_function(self) -> str:
        """The :mod:`pyarrow.compute` function evaluating it."""
        return _OPERATORS[self][2]

    @classmethod
    def of_symbol(cls, symbol: str) -> Compare | None:
        """The operator a SQL-style symbol (``=``, ``==``, ``!=``, ``<>``, ``<`` ...) names."""
        return _SYMBOLS.get(symbol)


_OPERATORS: dict[Compare, tuple[tuple[str, ...], Compare, str]] = {
    # operator: (symbols, mirrored, pyarrow.compute function)
    Compare.EQ: (("=", "=="), Compare.EQ, "equal"),
    Compare.NE: (("!=", "<>"), Compare.NE, "not_equal"),
    Compare.LT: (("<",), Compare.GT, "less"),
    Compare.LE: (("<=",), Compare.GE, "less_equal"),
    Compare.GT: ((">",), Compare.LT, "greater"),
    Compare.GE: ((">=",), Compare.LE, "greater_equal"),
}
_SYMBOLS = {symbol: op for op, (symbols, _, _) in _OPERATORS.items() for symbol in symbols}


@dataclass(frozen=True)
class Comparison:
    """``field <op> value`` (never matches a NULL value)."""

    field: str
    op: Compare
    value: Any


@dataclass(frozen=True)
class InList:
    """``field [NOT] IN values``; ``values`` may hold None (a NOT IN list with a None matches
    nothing, as in SQL)."""

    field: str
    values: tuple[Any, ...]
    negated: bool = False


@dataclass(frozen=True)
class IsNull:
    """``field IS [NOT] NULL``."""

    field: str
    negated: bool = False


@dataclass(frozen=True)
class Between:
    """``lower <= field <= upper``."""

    field: str
    lower: Any
    upper: Any


@dataclass(frozen=True)
class StartsWith:
    """A string column starting with ``prefix`` (byte-wise)."""

    field: str
    prefix: str


@dataclass(frozen=True)
class And:
    """Every child holds (an empty And is true)."""

    args: tuple[Filter, ...]


@dataclass(frozen=True)
class Or:
    """Some child holds (an empty Or is false)."""

    args: tuple[Filter, ...]


Filter = Comparison | InList | IsNull | Between | StartsWith | And | Or
"""A node of the typed filter tree."""

LEAVES = (Comparison, InList, IsNull, Between, StartsWith)


def all_of(parts: Iterable[Filter | None]) -> Filter | None:
    """The conjunction of the parts that are not None: None when there is none, the part itself
    when there is one."""
    kept = tuple(p for p in parts if p is not None)
    return None if not kept else kept[0] if len(kept) == 1 else And(kept)


def any_of(parts: Iterable[Filter | None]) -> Filter | None:
    """The disjunction of ``parts``, or None (no filter: every row) when any part is None."""
    kept = tuple(parts)
    if not kept or any(p is None for p in kept):
        return None
    return kept[0] if len(kept) == 1 else Or(kept)  # type: ignore[arg-type]


# ---- literals ------------------------------------------------------------------------------------

def json_literal(value: Any) -> Any:
    """A JSON-safe literal. Temporal and decimal values become ISO strings."""
    if isinstance(value, float) and not math.isfinite(value):
        # JSON has no NaN/Infinity; the engine reads these spellings for float columns.
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
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
        return bool(pa.types.is_boolean(type))
    if isinstance(value, int):
        return bool(pa.types.is_integer(type))
    if isinstance(value, float):
        return bool(pa.types.is_floating(type)) and math.isfinite(value)
    if isinstance(value, str):
        return bool(pa.types.is_string(type) or pa.types.is_large_string(type) or pa.types.is_string_view(type))
    if isinstance(value, _dt.date) and not isinstance(value, _dt.datetime):
        return bool(pa.types.is_date32(type))
    return False


# ---- the engine's JSON -------------------------------------------------------------------------

def to_json(node: Filter) -> dict[str, Any]:
    """The engine's JSON filter tree of ``node``."""
    if isinstance(node, (And, Or)):
        return {"op": "and" if isinstance(node, And) else "or", "args": [to_json(a) for a in node.args]}
    if isinstance(node, Comparison):
        return {"op": node.op.value, "field": node.field, "value": node.value}
    if isinstance(node, InList):
        return {"op": "not_in" if node.negated else "in", "field": node.field, "values": list(node.values)}
    if isinstance(node, IsNull):
        return {"op": "is_not_null" if node.negated else "is_null", "field": node.field}
    if isinstance(node, Between):
        return {"op": "between", "field": node.field, "lower": node.lower, "upper": node.upper}
    if isinstance(node, StartsWith):
        return {"op": "startswith", "field": node.field, "value": node.prefix}
    raise InvalidArgumentError(f"not a filter node: {node!r}")


def filter_json(node: Filter | None) -> str | None:
    """``node`` as the JSON text the binding takes (None: no filter)."""
    return None if node is None else json.dumps(to_json(node))


_KEYS: dict[str, tuple[str, ...]] = {
    "and": ("op", "args"), "or": ("op", "args"),
    "is_null": ("op", "field"), "is_not_null": ("op", "field"),
    "in": ("op", "field", "values"), "not_in": ("op", "field", "values"),
    "between": ("op", "field", "lower", "upper"),
    "startswith": ("op", "field", "value"),
    **{op.value: ("op", "field", "value") for op in Compare},
}
_OPS_TEXT = ", ".join(_KEYS)


def from_json(tree: Any) -> Filter:
    """The typed tree of an engine JSON filter tree (a dict), checked as the engine checks it:
    unknown ops, missing or unexpected keys are an :class:`InvalidArgumentError`."""

    def invalid(why: str) -> InvalidArgumentError:
        return InvalidArgumentError(f"invalid filter {json.dumps(tree, default=str)}: {why}")

    if not isinstance(tree, dict):
        raise invalid("expected a JSON object")
    op = tree.get("op")
    if not isinstance(op, str):
        raise invalid("missing string key 'op'")
    allowed = _KEYS.get(op)
    if allowed is None:
        raise invalid(f"unknown op '{op}' (expected one of {_OPS_TEXT})")
    unexpected = [k for k in tree if k not in allowed]
    if unexpected:
        raise invalid(f"unexpected key '{unexpected[0]}' for op '{op}' (expected keys: {', '.join(allowed)})")
    missing = [k for k in allowed if k not in tree]
    if missing:
        raise invalid(f"op '{op}' requires key '{missing[0]}'")
    if op in ("and", "or"):
        args = tree["args"]
        if not isinstance(args, list):
            raise invalid("'args' must be a JSON array")
        children = tuple(from_json(a) for a in args)
        return And(children) if op == "and" else Or(children)
    field = tree["field"]
    if not isinstance(field, str) or not field:
        raise invalid("'field' must be a non-empty string")
    if op in ("is_null", "is_not_null"):
        return IsNull(field, op == "is_not_null")
    if op in ("in", "not_in"):
        if not isinstance(tree["values"], list):
            raise invalid("'values' must be a JSON array")
        return InList(field, tuple(tree["values"]), op == "not_in")
    if op == "between":
        return Between(field, tree["lower"], tree["upper"])
    if op == "startswith":
        return StartsWith(field, tree["value"])
    return Comparison(field, Compare(op), tree["value"])
