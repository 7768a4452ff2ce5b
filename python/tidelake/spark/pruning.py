"""Which parts of a tidelake table a Spark SQL condition lets a read skip, for the reads whose
relation tidelake builds for one query: :func:`tidelake.spark.read` with ``filter=`` and the
tables of a ``SELECT`` run by :func:`tidelake.spark.sql`.

Why not Spark's own push-down: PySpark 4.1-4.3 keeps the read planned with one query's pushed
filters on the relation and hands it to later scans of it (SPARK-51575; see
``tests/test_spark_pushdown.py``), and the read's tasks cannot tell which query or scan they
serve. A relation built here is planned with its filter fixed in its options, so whichever scan
reuses its plan reads what the filter admits, and Spark's own filter above it keeps the answer
exact.

Invariant: the tree returned selects a superset of the rows the condition selects. Only simple
conjuncts count (``column <op> literal``, ``IN``, ``IS [NOT] NULL``, through
:func:`tidelake.expr.sql.pushdown_tree`), and of those only terms whose literal means the same
value for the column in Spark as in the engine (:func:`tidelake.expr.literal_fits`, plus
``'YYYY-MM-DD'`` strings against DATE columns; Spark casts ``k = '1'`` on a number column, the
engine would not).
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING, Any

from .. import expr
from ..expr.sql import pushdown_tree_of

if TYPE_CHECKING:
    import pyarrow as pa
    from sqlglot import exp

__all__ = ["condition_filter", "select_filter", "parse_condition"]


def condition_filter(condition: Any, schema: pa.Schema,
                     qualifier: str | None = None) -> expr.Filter | None:
    """The pruning tree of Spark SQL ``condition`` (text, or sqlglot's tree of it) over a table of ``schema``
    (None: nothing to prune with). Columns qualified by another name than ``qualifier`` are not
    the table's."""
    node = parse_condition(condition) if isinstance(condition, str) else condition
    if node is None:
        return None
    tree = pushdown_tree_of(node, set(schema.names), qualifier.lower() if qualifier else None)
    terms = tree.args if isinstance(tree, expr.And) else () if tree is None else (tree,)
    return expr.all_of(t for t in terms if _fits(t, schema))


def parse_condition(text: str) -> Any:
    """Spark SQL condition ``text`` parsed by sqlglot, None when sqlglot cannot parse it (Spark
    then reports what is wrong with it)."""
    import sqlglot
    from sqlglot.errors import ParseError, TokenError

    try:
        return sqlglot.parse_one(text, read="spark")
    except (ParseError, TokenError):
        return None


def _fits(term: Any, schema: pa.Schema) -> bool:
    if isinstance(term, expr.IsNull):
        return True
    if isinstance(term, expr.Comparison):
        return _literal_fits(term.value, schema.field(term.field).type)
    if isinstance(term, expr.InList):
        return all(_literal_fits(v, schema.field(term.field).type) for v in term.values)
    return False


def _literal_fits(value: Any, type: pa.DataType) -> bool:
    """:func:`tidelake.expr.literal_fits`, and a ``'YYYY-MM-DD'`` string against a DATE column,
    which Spark casts to that date (``dt = '2026-11-01'``)."""
    import pyarrow as pa

    if isinstance(value, str) and pa.types.is_date32(type) and len(value) == 10:
        try:
            _dt.date.fromisoformat(value)
        except ValueError:
            return False
        return True
    return expr.literal_fits(value, type)


def select_filter(ref: exp.Table, schema: pa.Schema) -> expr.Filter | None:
    """The pruning tree of the ``WHERE`` of the ``SELECT`` whose ``FROM`` names ``ref`` (a
    table of ``schema``), None when it has none or when the ``WHERE`` does not filter the
    table's rows: an outer join (its ``WHERE`` also sees null-extended rows), or ``ref`` not
    in that ``SELECT``'s own ``FROM`` / joins."""
    from sqlglot import exp

    select = ref.parent_select
    if not isinstance(select, exp.Select) or ref.parent is None:
        return None
    where = select.args.get("where")
    if where is None or any(j.side for j in select.args.get("joins") or ()):
        return None
    source: Any = ref.parent
    if isinstance(source, exp.Join):
        source = source.parent
    if source is not select and not (isinstance(source, exp.From) and source.parent is select):
        return None
    return condition_filter(where.this, schema, ref.alias_or_name)
