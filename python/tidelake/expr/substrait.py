"""The part of a :class:`pyarrow.compute.Expression` filter that tidelake's planner can take.

pyarrow serialises an expression to Substrait (``Expression.to_substrait``, its public
interchange form); the ``substrait`` package (the ``duckdb`` extra) decodes that, and
:func:`pushable_filter` turns what it can state exactly into the typed filter tree: column
versus literal comparisons, ``is_in``, null checks and boolean columns, joined by AND/OR.

Invariant: the pushed tree is implied by the expression (every row the expression keeps, the
tree keeps), so it only narrows what is read; callers still apply the whole expression to the
rows (DuckDB and pyarrow's scanner do). Hence an AND keeps the conjuncts that translate, an OR
needs every side to translate (to something implied by that side), ``if c then x else
null`` (how DuckDB hands over ``IN``) keeps what ``c AND x`` keeps, and NOT, arithmetic, casts
and literals of another type than their column translate to nothing. Without the
``substrait`` package nothing is pushed.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

import pyarrow as pa

from .tree import Compare, Comparison, Filter, InList, IsNull, all_of, any_of, json_literal, literal_fits

__all__ = ["pushable_filter"]

_COMPARE = {"equal": Compare.EQ, "not_equal": Compare.NE, "lt": Compare.LT, "lte": Compare.LE,
            "gt": Compare.GT, "gte": Compare.GE}
"""Substrait's comparison function names."""


def pushable_filter(expression: Any, schema: pa.Schema) -> Filter | None:
    """A filter tree implied by ``expression`` (over ``schema``), or None when no part of it
    can be pushed."""
    try:
        from substrait import extended_expression_pb2
    except ImportError:
        return None
    try:
        encoded = bytes(expression.to_substrait(schema))
    except (pa.ArrowException, TypeError):  # e.g. an int column against a float literal
        return None
    message = extended_expression_pb2.ExtendedExpression()
    message.ParseFromString(encoded)
    functions = {e.extension_function.function_anchor: e.extension_function.name.split(":")[0]
                 for e in message.extensions if e.HasField("extension_function")}
    if len(message.referred_expr) != 1:
        return None
    return _Translator(functions, schema).tree(message.referred_expr[0].expression)


class _Translator:
    def __init__(self, functions: dict[int, str], schema: pa.Schema) -> None:
        self._functions = functions
        self._schema = schema

    def tree(self, node: Any) -> Filter | None:
        kind = node.WhichOneof("rex_type")
        if kind == "selection":  # a boolean column on its own
            column = self._column(node)
            if column is None or not pa.types.is_boolean(self._schema.field(column).type):
                return None
            return Comparison(column, Compare.EQ, True)
        if kind == "singular_or_list":
            column = self._column(node.singular_or_list.value)
            values = [self._literal(o) for o in node.singular_or_list.options]
            if column is None or not values or any(v is None or not self._fits(v, column) for v in values):
                return None
            return InList(column, tuple(json_literal(v) for v in values))
        if kind == "if_then":  # `if c then x else null`, DuckDB's IN: a kept row has c and x true
            clauses, otherwise = node.if_then.ifs, getattr(node.if_then, "else")
            if len(clauses) != 1 or not self._never_kept(otherwise):
                return None
            return all_of([self.tree(getattr(clauses[0], "if")), self.tree(clauses[0].then)])
        if kind != "scalar_function":
            return None
        call = node.scalar_function
        name = self._functions.get(call.function_reference)
        args = [a.value for a in call.arguments]
        if name == "and":
            return all_of(map(self.tree, args))
        if name == "or":
            return any_of([self.tree(a) for a in args])
        if name in ("is_null", "is_not_null") and len(args) == 1:
            column = self._column(args[0])
            return None if column is None else IsNull(column, name == "is_not_null")
        if name in _COMPARE and len(args) == 2:
            op, column, value = _COMPARE[name], self._column(args[0]), self._literal(args[1])
            if column is None:
                op, column, value = op.mirrored, self._column(args[1]), self._literal(args[0])
            if column is None or value is None or not self._fits(value, column):
                return None
            return Comparison(column, op, json_literal(value))
        return None

    def _column(self, node: Any) -> str | None:
        if node.WhichOneof("rex_type") != "selection":
            return None
        selection = node.selection
        if not selection.HasField("root_reference") or not selection.HasField("direct_reference"):
            return None
        reference = selection.direct_reference
        if reference.WhichOneof("reference_type") != "struct_field" or reference.struct_field.HasField("child"):
            return None
        index = reference.struct_field.field
        return self._schema.names[index] if 0 <= index < len(self._schema) else None

    @staticmethod
    def _never_kept(node: Any) -> bool:
        """Whether ``node`` is a null or false literal (a filter keeps no row by it)."""
        if node.WhichOneof("rex_type") != "literal":
            return False
        literal = node.literal
        return literal.WhichOneof("literal_type") == "null" or (
            literal.WhichOneof("literal_type") == "boolean" and not literal.boolean)

    @staticmethod
    def _literal(node: Any) -> Any:
        """The value of a literal of a type translated exactly; None otherwise."""
        if node.WhichOneof("rex_type") != "literal":
            return None
        literal = node.literal
        kind = literal.WhichOneof("literal_type")
        if kind in ("boolean", "i8", "i16", "i32", "i64", "fp32", "fp64", "string"):
            return getattr(literal, kind)
        if kind == "date":
            return _dt.date(1970, 1, 1) + _dt.timedelta(days=literal.date)
        return None

    def _fits(self, value: Any, column: str) -> bool:
        return literal_fits(value, self._schema.field(column).type)
