"""Queries over tidelake tables: every table reference of a query that names a tidelake table
(see :mod:`tidelake.references`: ``db.t`` of the warehouse or catalog, ``tidelake.`/path```, a
system table ``db.`t$snapshots``` or ``tidelake.`/path$snapshots```) is read into a temporary
view with a unique name, at the snapshot, tag or time its ``VERSION AS OF`` / ``TIMESTAMP AS
OF`` selects, and the query is rewritten to name the view; Spark runs the rest (joins, CTEs,
subqueries, Spark's own tables).

Each view is a relation of its own, read with :func:`tidelake.spark.plain.read_table` pruned by
the simple conjuncts of the ``WHERE`` of the ``SELECT`` that reads the table
(:func:`tidelake.spark.pruning.select_filter`): partitions, buckets, files and row groups that
cannot match are never read, and Spark still applies the whole ``WHERE``."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from ...exceptions import TableNotFoundError
from ...references import find_system_table, rename, system_name, time_travel
from ..mapped import arrow_frame
from .context import Context

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from sqlglot import exp


def run_query(ctx: Context, stmt: exp.Query) -> DataFrame | None:
    """``stmt`` run by Spark with its tidelake tables read as temporary views (under the
    table's name as their alias, so ``t.col`` and ``db.t.col`` still resolve). None when it
    names no tidelake table."""
    from sqlglot import exp

    views: list[str] = []
    try:
        for ref in list(stmt.find_all(exp.Table)):
            frame = _read_ref(ctx, ref)
            if frame is None:
                continue
            view = f"tidelake_{uuid.uuid4().hex}"
            frame.createOrReplaceTempView(view)
            views.append(view)
            rename(stmt, ref, view)
        # analysed here: the views can go once the DataFrame holds their plans
        return ctx.spark_sql(stmt.sql("spark")) if views else None
    finally:
        for view in views:
            ctx.spark.catalog.dropTempView(view)


def query_frame(ctx: Context, query: exp.Expression) -> DataFrame:
    """The rows of a query (or VALUES) that may name tidelake tables."""
    from sqlglot import exp

    frame = run_query(ctx, query) if isinstance(query, exp.Query) else None
    return ctx.spark_sql(query.sql("spark")) if frame is None else frame


def _read_ref(ctx: Context, ref: exp.Table) -> DataFrame | None:
    """The rows of the tidelake table (or system table) ``ref`` names, None when it names none."""
    from ..plain import read_table
    from ..pruning import select_filter

    if system_name(ref) is not None:
        try:
            rows = find_system_table(ref, ctx.catalog(), ctx.storage_options)
        except TableNotFoundError:
            if ctx.is_path(ref):
                raise
            return None
        return None if rows is None else arrow_frame(ctx.spark, rows)
    table = ctx.table(ref)
    if table is None:
        return None
    travel = time_travel(ref, lambda value: _timestamp_ms(ctx, value))
    schema = table.scan(**travel).schema if travel else table.schema
    return read_table(ctx.spark, table, prune=select_filter(ref, schema), **travel)


def _timestamp_ms(ctx: Context, value: exp.Expression) -> int | None:
    """A ``TIMESTAMP AS OF`` time as Spark reads it (in the session's time zone)."""
    row = ctx.spark.sql(f"SELECT unix_millis(CAST({value.sql('spark')} AS TIMESTAMP))").first()
    return None if row is None else row[0]
