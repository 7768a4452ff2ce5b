"""``INSERT INTO|OVERWRITE <t> [(cols)] [BY NAME] SELECT ...|VALUES ...`` on a tidelake table:
the query runs in Spark (its tidelake tables read as a SELECT reads them), its columns map to
the table's by position, by name or by the column list (missing columns null), cast to the
table's types, and :func:`tidelake.spark.write` commits them once."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...exceptions import InvalidArgumentError, UnsupportedError
from .. import io
from .context import Context
from .references import query_frame

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from sqlglot import exp

    from ...table import Table


def insert(ctx: Context, stmt: exp.Insert) -> DataFrame | None:
    from sqlglot import exp

    from .. import write

    target, columns = stmt.this, None
    if isinstance(target, exp.Schema):
        columns = [c.name for c in target.expressions]
        target = target.this
    if not isinstance(target, exp.Table):
        return None
    table = ctx.table(target)
    if table is None:
        return None
    if target.args.get("partition") is not None:
        raise UnsupportedError("INSERT ... PARTITION (...) is not supported on tidelake tables; put the partition "
                               "values in the query's columns (INSERT OVERWRITE replaces the whole table)")
    df = _as_table_rows(query_frame(ctx, stmt.expression), table, columns, bool(stmt.args.get("by_name")))
    snapshot = write(df, table, "overwrite" if stmt.args.get("overwrite") else "append")
    return ctx.result([(snapshot,)], "snapshot_id bigint")


def _as_table_rows(source: DataFrame, table: Table, columns: list[str] | None, by_name: bool) -> DataFrame:
    """``source``'s columns as the table's (Spark's INSERT rules: by position, by name, or the
    given column list; absent columns null), cast to the table's types."""
    from pyspark.sql import functions as F

    fields = io.spark_schema(table).fields
    names = [f.name for f in fields]
    if by_name:
        columns = list(source.columns)
    given = columns if columns is not None else names
    unknown = [c for c in given if c not in names]
    if unknown:
        raise InvalidArgumentError(f"columns {unknown} are not in table {table.path}; its columns are {names}")
    if len(source.columns) != len(given):
        raise InvalidArgumentError(f"the query has {len(source.columns)} columns but {len(given)} are inserted "
                                   f"({given}) into {table.path}")
    by_target = dict(zip(given, range(len(given))))
    source = source.toDF(*[f"_{i}" for i in range(len(given))])  # by position: the query's names may repeat
    return source.select(*[
        (source[f"_{by_target[f.name]}"] if f.name in by_target else F.lit(None)).cast(f.dataType).alias(f.name)
        for f in fields])
