"""Queries over tidelake tables: every table reference of a query that names a tidelake table
(``db.t`` of the warehouse or catalog, ``tidelake.`/path```, a system table ``db.`t$snapshots```
or ``tidelake.`/path$snapshots```) is read into a temporary view with a unique name, at the
snapshot, tag or time its ``VERSION AS OF`` / ``TIMESTAMP AS OF`` selects, and the query is
rewritten to name the view; Spark runs the rest (joins, CTEs, subqueries, Spark's own tables)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from ...exceptions import InvalidArgumentError, UnsupportedError
from ...table import open_table
from ..mapped import arrow_frame
from .context import Context, local_path

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
            alias = ref.args.get("alias")
            if alias is None:  # named as before: `t.col`, and `db.t.col` as `t.col`
                alias = exp.TableAlias(this=exp.to_identifier(ref.name, quoted=True))
                for column in stmt.find_all(exp.Column):
                    if column.table == ref.name and column.db == ref.db:
                        column.set("db", None)
            ref.replace(exp.Table(this=exp.to_identifier(view), alias=alias))
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
    from ...exceptions import TableNotFoundError
    from ..plain import read

    version = ref.args.get("version")
    if "$" in ref.name and ref.db:
        if version is not None:
            raise UnsupportedError(f"{ref.sql('spark')}: a system table has no time travel")
        if ctx.is_path(ref):
            path, _, name = ref.name.rpartition("$")
            return arrow_frame(ctx.spark, open_table(local_path(path), ctx.storage_options).system(name))
        catalog = ctx.catalog()
        if catalog is None:
            return None
        try:
            rows = catalog.system_table(f"{ref.db}.{ref.name}")
        except TableNotFoundError:
            return None
        return arrow_frame(ctx.spark, rows)
    table = ctx.table(ref)
    if table is None:
        return None
    return read(ctx.spark, table.path, storage_options=table.storage_options or None,
                **_time_travel(ctx, version, ref))


def _time_travel(ctx: Context, version: exp.Version | None, ref: exp.Table) -> dict[str, Any]:
    """``VERSION AS OF <snapshot id or tag>`` / ``TIMESTAMP AS OF <timestamp>`` as read arguments
    (Paimon's Spark time travel: a number is a snapshot id, other text a tag; a timestamp in the
    session's time zone)."""
    from sqlglot import exp

    if version is None:
        return {}
    value = version.expression
    if str(version.this).upper() == "TIMESTAMP":
        row = ctx.spark.sql(f"SELECT unix_millis(CAST({value.sql('spark')} AS TIMESTAMP))").first()
        if row is None or row[0] is None:
            raise InvalidArgumentError(f"{ref.sql('spark')}: TIMESTAMP AS OF needs a timestamp")
        return {"timestamp_ms": row[0]}
    if isinstance(value, exp.Literal):
        text = str(value.this)
        return {"snapshot_id": int(text)} if text.isdigit() else {"tag": text}
    raise InvalidArgumentError(f"{ref.sql('spark')}: VERSION AS OF takes a snapshot id or a tag name")
