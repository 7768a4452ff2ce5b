"""``DELETE FROM``, ``UPDATE`` and ``MERGE INTO`` on a tidelake table, parsed into a
:class:`~tidelake.spark.dml.DmlPlan` (plain data) and run by :func:`~tidelake.spark.dml.run_dml`
(one task per target (partition, bucket) on the executors, one atomic commit on the driver)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...exceptions import UnsupportedError
from ..dml import DmlPlan, MergeClause, run_dml
from .context import Context

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from sqlglot import exp

    from ...table import Table


def _target(ctx: Context, ref: Any) -> Table | None:
    """The table a DELETE, UPDATE or MERGE changes. Those commit by path: refused on a table
    whose catalog takes part in its commits (a JDBC or Hive lock, a REST server, a Hive
    Metastore), which a path commit would bypass."""
    from sqlglot import exp

    table = ctx.table(ref) if isinstance(ref, exp.Table) else None
    if table is not None and table._raw.commits_through_catalog:
        raise UnsupportedError(f"DELETE, UPDATE and MERGE through Spark on {ref.sql('spark')}: its catalog takes "
                               "part in the commits (a JDBC or Hive lock, a REST server, a Hive Metastore) and this "
                               "path does not go through it yet; "
                               "use tidelake.Catalog.get_table(...).delete/update/merge in Python")
    return table


def _text(node: Any) -> str | None:
    return None if node is None else node.sql("spark")


def _assignments(pairs: list[Any]) -> dict[str, str]:
    return {eq.this.name: eq.expression.sql("spark") for eq in pairs}


def delete_or_update(ctx: Context, stmt: exp.Delete | exp.Update) -> DataFrame | None:
    from sqlglot import exp

    table = _target(ctx, stmt.this)
    if table is None:
        return None
    where = stmt.args.get("where")
    update = isinstance(stmt, exp.Update)
    return run_dml(ctx.spark, DmlPlan("update" if update else "delete", table.path, table.storage_options or None,
                                      where=_text(where.this if where else None),
                                      assignments=_assignments(stmt.expressions) if update else {},
                                      target_alias=stmt.this.alias or None))


def merge(ctx: Context, stmt: exp.Merge) -> DataFrame | None:
    from sqlglot import exp

    table = _target(ctx, stmt.this)
    if table is None:
        return None
    using = stmt.args["using"]
    clauses = []
    for when in stmt.args["whens"].expressions:
        then = when.args["then"]
        condition = _text(when.args.get("condition"))
        if isinstance(then, exp.Var) and then.name.upper() == "DELETE":
            if not when.args.get("matched") and not when.args.get("source"):
                raise UnsupportedError("WHEN NOT MATCHED THEN DELETE is not valid MERGE")
            kind = "matched_delete" if when.args.get("matched") else "not_matched_by_source_delete"
            clauses.append(MergeClause(kind, condition))
        elif isinstance(then, exp.Update) and when.args.get("matched"):
            star = not then.expressions or isinstance(then.expressions[0], exp.Star)
            clauses.append(MergeClause("matched_update", condition, "*" if star else _assignments(then.expressions)))
        elif isinstance(then, exp.Insert) and not when.args.get("matched") and not when.args.get("source"):
            if then.this is None or isinstance(then.this, exp.Star):
                values: dict[str, str] | str = "*"
            else:
                values = dict(zip([c.name for c in then.this.expressions],
                                  [v.sql("spark") for v in then.expression.expressions]))
            clauses.append(MergeClause("not_matched_insert", condition, values))
        else:
            raise UnsupportedError(f"MERGE clause {when.sql('spark')!r} is not supported")
    if isinstance(using, exp.Table):
        bare = using.copy()
        bare.set("alias", None)
        source = f"SELECT * FROM {bare.sql('spark')}"
    elif isinstance(using, exp.Subquery):
        source = using.this.sql("spark")
    else:
        raise UnsupportedError(f"MERGE source {using.sql('spark')!r} is not supported: use a table or a subquery")
    return run_dml(ctx.spark, DmlPlan("merge", table.path, table.storage_options or None,
                                      source=source, source_alias=using.alias or None,
                                      target_alias=stmt.this.alias or None, on=_text(stmt.args.get("on")),
                                      clauses=clauses))
