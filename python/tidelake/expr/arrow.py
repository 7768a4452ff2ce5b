"""A filter tree as a :class:`pyarrow.compute.Expression` over a table's columns: how row-level
changes evaluate a filter on the rows they read, with SQL's three-valued logic (a NULL leaf
does not hold). Literals are cast to their column's Arrow type."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ..exceptions import InvalidArgumentError
from .tree import And, Between, Comparison, Filter, InList, IsNull, Or, StartsWith

__all__ = ["to_expression"]


def _scalar(value: Any, type_: pa.DataType) -> Any:
    import pyarrow.compute as pc

    try:
        return pc.scalar(pa.scalar(value).cast(type_))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        raise InvalidArgumentError(f"filter value {value!r} cannot be read as {type_}") from None


def to_expression(node: Filter, schema: pa.Schema) -> Any:
    """The pyarrow Expression of ``node`` on ``schema``'s columns."""
    import pyarrow.compute as pc

    if isinstance(node, (And, Or)):
        parts = [to_expression(a, schema) for a in node.args]
        if not parts:  # an empty And holds, an empty Or does not
            return pc.scalar(isinstance(node, And))
        out = parts[0]
        for p in parts[1:]:
            out = pc.and_kleene(out, p) if isinstance(node, And) else pc.or_kleene(out, p)
        return out
    name = node.field
    if name not in schema.names:
        raise InvalidArgumentError(f"unknown column {name!r} in filter; columns are {schema.names}")
    field, type_ = pc.field(name), schema.field(name).type
    if isinstance(node, Comparison):
        return getattr(pc, node.op.arrow_function)(field, _scalar(node.value, type_))
    if isinstance(node, InList):
        found = pc.is_in(field, value_set=pa.array(list(node.values)).cast(type_))
        return pc.invert(found) if node.negated else found
    if isinstance(node, IsNull):
        return pc.is_valid(field) if node.negated else pc.is_null(field)
    if isinstance(node, Between):
        return pc.and_kleene(pc.greater_equal(field, _scalar(node.lower, type_)),
                             pc.less_equal(field, _scalar(node.upper, type_)))
    if isinstance(node, StartsWith):
        return pc.starts_with(field, node.prefix)
    raise InvalidArgumentError(f"unsupported filter node {node!r}")
