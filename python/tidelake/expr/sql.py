"""SQL expression strings of row-level DML (``"target.qty > source.qty AND source.op = 'U'"``)
as :class:`pyarrow.compute.Expression`: sqlglot parses, this module translates its syntax tree,
pyarrow evaluates. Nothing here parses text by hand.

Columns are resolved by a ``resolve(qualifier, name)`` callback of the caller (``qualifier`` is
``"target"``, ``"source"`` or None), which returns the name of the column in the table the
expression is evaluated on and its Arrow type. Comparisons of a typed column with a string
literal cast the literal to the column's type (``dt = '2024-05-14'`` on a date column), as SQL
engines do. Conditions evaluate with SQL's three-valued logic; a NULL condition does not hold.

The simple conjuncts of a filter (``column <op> literal``, ``column [NOT] IN (...)``,
``column IS [NOT] NULL``) are also returned as the typed filter tree by :func:`pushdown_tree`,
to prune partitions, buckets and files before any row is read. Comparison operators come from
the tree's one operator table (:class:`~.tree.Compare`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..exceptions import InvalidArgumentError
from .tree import Compare, Comparison, Filter, InList, IsNull, all_of, json_literal

Resolver = Callable[[str | None, str], tuple[str, Any]]
"""``resolve(qualifier, column) -> (field name, pyarrow type)``."""

_COMPARE = {"EQ": Compare.EQ, "NEQ": Compare.NE, "GT": Compare.GT, "GTE": Compare.GE, "LT": Compare.LT,
            "LTE": Compare.LE}
"""sqlglot's comparison node classes."""
_ARITH = {"Add": "add_checked", "Sub": "subtract_checked", "Mul": "multiply_checked", "Div": "divide_checked"}
_FUNCTIONS = {"ABS": "abs", "UPPER": "utf8_upper", "LOWER": "utf8_lower", "LENGTH": "utf8_length",
              "TRIM": "utf8_trim_whitespace", "ROUND": "round", "FLOOR": "floor", "CEIL": "ceil"}


def parse(text: str) -> Any:
    """The sqlglot syntax tree of one SQL expression."""
    import sqlglot
    from sqlglot.errors import ParseError

    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError(f"expected a SQL expression, got {text!r}")
    try:
        return sqlglot.parse_one(text)
    except ParseError as e:
        raise InvalidArgumentError(f"cannot parse SQL expression {text!r}: {parse_error_text(e)}") from None


def parse_error_text(error: Any) -> str:
    """sqlglot's parse error in plain words (its message underlines with terminal escapes):
    the first problem and where it is."""
    first = (getattr(error, "errors", None) or [{}])[0]
    description = first.get("description")
    if not description:
        return str(error).splitlines()[0]
    return f"{description} at line {first.get('line')}, column {first.get('col')}"


def to_expression(text: str, resolve: Resolver) -> Any:
    """``text`` as a pyarrow compute Expression over the columns ``resolve`` names."""
    return _Translator(text, resolve).expr(parse(text))


class _Translator:
    def __init__(self, text: str, resolve: Resolver) -> None:
        self.text = text
        self.resolve = resolve

    def fail(self, node: Any, why: str = "is not supported") -> InvalidArgumentError:
        return InvalidArgumentError(f"in SQL expression {self.text!r}: {node.sql()!r} {why}")

    def column(self, node: Any) -> tuple[Any, Any]:
        import pyarrow.compute as pc

        qualifier = node.table or None
        name, type_ = self.resolve(qualifier.lower() if qualifier else None, node.name)
        return pc.field(name), type_

    def typed(self, node: Any) -> tuple[Any, Any]:
        """(expression, Arrow type when it is a plain column, else None)."""
        from sqlglot import exp

        if isinstance(node, exp.Column):
            return self.column(node)
        if isinstance(node, exp.Paren):
            return self.typed(node.this)
        return self.expr(node), None

    def literal(self, node: Any, type_: Any = None) -> Any:
        import pyarrow as pa
        import pyarrow.compute as pc
        from sqlglot import exp

        if isinstance(node, exp.Null):
            value: Any = None
        elif isinstance(node, exp.Boolean):
            value = node.this
        elif node.is_string:
            value = node.this
        else:
            text = node.this
            value = float(text) if any(c in text for c in ".eE") else int(text)
        scalar = pa.scalar(value) if type_ is None or value is None else None
        if scalar is None:
            try:
                scalar = pa.scalar(value).cast(type_)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                raise self.fail(node, f"cannot be read as {type_}") from None
        elif value is None and type_ is not None:
            scalar = pa.scalar(None, type_)
        return pc.scalar(scalar)

    def operand(self, node: Any, other_type: Any) -> Any:
        from sqlglot import exp

        if isinstance(node, (exp.Literal, exp.Null, exp.Boolean)):
            return self.literal(node, other_type)
        if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
            return self.literal(exp.Literal.number(f"-{node.this.this}"), other_type)
        return self.expr(node)

    def pair(self, node: Any) -> tuple[Any, Any]:
        """Both operands of a binary node, literals typed after the column on the other side."""
        _, left_type = self.typed(node.left)
        _, right_type = self.typed(node.right)
        return self.operand(node.left, right_type), self.operand(node.right, left_type)

    def expr(self, node: Any) -> Any:
        import pyarrow.compute as pc
        from sqlglot import exp

        kind = type(node).__name__
        if isinstance(node, exp.Column):
            return self.column(node)[0]
        if isinstance(node, (exp.Literal, exp.Null, exp.Boolean)):
            return self.literal(node)
        if isinstance(node, exp.Paren):
            return self.expr(node.this)
        if kind in _COMPARE:
            left, right = self.pair(node)
            return getattr(pc, _COMPARE[kind].arrow_function)(left, right)
        if isinstance(node, exp.And):
            return pc.and_kleene(self.expr(node.left), self.expr(node.right))
        if isinstance(node, exp.Or):
            return pc.or_kleene(self.expr(node.left), self.expr(node.right))
        if isinstance(node, exp.Not):
            return pc.invert(self.expr(node.this))
        if isinstance(node, exp.Is):
            if not isinstance(node.expression, exp.Null):
                raise self.fail(node)
            return pc.is_null(self.expr(node.this))
        if isinstance(node, exp.In):
            target, type_ = self.typed(node.this)
            if node.args.get("query") is not None or not node.expressions:
                raise self.fail(node)
            values = [self.operand(v, type_) for v in node.expressions]
            out = pc.equal(target, values[0])
            for v in values[1:]:
                out = pc.or_kleene(out, pc.equal(target, v))
            return out
        if isinstance(node, exp.Between):
            target, type_ = self.typed(node.this)
            low, high = self.operand(node.args["low"], type_), self.operand(node.args["high"], type_)
            return pc.and_kleene(pc.greater_equal(target, low), pc.less_equal(target, high))
        if isinstance(node, exp.Like):
            pattern = node.expression
            if not (isinstance(pattern, exp.Literal) and pattern.is_string):
                raise self.fail(node, "needs a string literal pattern")
            return pc.match_like(self.expr(node.this), pattern.this)
        if kind in _ARITH:
            left, right = self.pair(node)
            return getattr(pc, _ARITH[kind])(left, right)
        if isinstance(node, exp.Neg):
            return pc.negate_checked(self.expr(node.this))
        if isinstance(node, exp.DPipe):
            return pc.binary_join_element_wise(self.expr(node.left), self.expr(node.right), "")
        if isinstance(node, exp.Coalesce):
            return pc.coalesce(self.expr(node.this), *[self.expr(e) for e in node.expressions])
        if isinstance(node, exp.Cast):
            return self.expr(node.this).cast(_arrow_type(node, self))
        if isinstance(node, exp.Case):
            return self.case(node)
        if isinstance(node, exp.Func) and node.sql_name() in _FUNCTIONS:
            return getattr(pc, _FUNCTIONS[node.sql_name()])(self.expr(node.this))
        raise self.fail(node)

    def case(self, node: Any) -> Any:
        """``CASE WHEN c1 THEN v1 ... ELSE d END``, folded right to left into if_else."""
        import pyarrow.compute as pc

        if node.this is not None:
            raise self.fail(node, "(CASE <expr> WHEN ...) is not supported; use CASE WHEN <condition>")
        default = node.args.get("default")
        out = self.expr(default) if default is not None else pc.scalar(None)
        for when in reversed(node.args["ifs"]):
            out = pc.if_else(pc.coalesce(self.expr(when.this), pc.scalar(False)), self.expr(when.args["true"]), out)
        return out


def _arrow_type(node: Any, translator: _Translator) -> Any:
    import pyarrow as pa

    name = node.to.this.name if hasattr(node.to.this, "name") else str(node.to.this)
    types = {"INT": pa.int32(), "BIGINT": pa.int64(), "SMALLINT": pa.int16(), "TINYINT": pa.int8(),
             "DOUBLE": pa.float64(), "FLOAT": pa.float32(), "VARCHAR": pa.string(), "TEXT": pa.string(),
             "BOOLEAN": pa.bool_(), "DATE": pa.date32(), "STRING": pa.string()}
    if name not in types:
        raise translator.fail(node, f"casts to unsupported type {name}")
    return types[name]


def pushdown_tree(text: str, columns: set[str], qualifier: str | None = None) -> Filter | None:
    """The filter tree of the simple conjuncts of ``text`` on ``columns`` (a superset of the
    rows ``text`` selects), or None when there is none. Columns qualified by another name than
    ``qualifier`` are left out."""
    return pushdown_tree_of(parse(text), columns, qualifier)


def pushdown_tree_of(tree: Any, columns: set[str], qualifier: str | None = None) -> Filter | None:
    """:func:`pushdown_tree` of an expression sqlglot parsed."""
    from sqlglot import exp

    def name_of(node: Any) -> str | None:
        if not isinstance(node, exp.Column) or node.name not in columns:
            return None
        q = (node.table or "").lower() or None
        return node.name if q in (None, qualifier) else None

    def value_of(node: Any) -> tuple[bool, Any]:
        if isinstance(node, exp.Boolean):
            return True, node.this
        if isinstance(node, exp.Literal):
            if node.is_string:
                return True, node.this
            text = node.this
            return True, json_literal(float(text) if any(c in text for c in ".eE") else int(text))
        return False, None

    def term(node: Any) -> Filter | None:
        kind = type(node).__name__
        if kind in _COMPARE:
            op, left, right = _COMPARE[kind], name_of(node.left), name_of(node.right)
            if left is None and right is not None:
                op, left, node_value = op.mirrored, right, node.left
            else:
                node_value = node.right
            if left is None:
                return None
            ok, value = value_of(node_value)
            return Comparison(left, op, value) if ok else None
        if isinstance(node, exp.In) and name_of(node.this) is not None and node.expressions:
            values = [value_of(v) for v in node.expressions]
            if all(ok for ok, _ in values):
                return InList(node.this.name, tuple(v for _, v in values))
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null) and name_of(node.this):
            return IsNull(node.this.name)
        if (isinstance(node, exp.Not) and isinstance(node.this, exp.Is)
                and isinstance(node.this.expression, exp.Null) and name_of(node.this.this)):
            return IsNull(node.this.this.name, negated=True)
        return None

    conjuncts = list(tree.flatten()) if isinstance(tree, exp.And) else [tree]
    return all_of(term(c.unnest()) for c in conjuncts)
