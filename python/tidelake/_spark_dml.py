"""Row-level DML over Spark: :func:`delete`, :func:`update` and :func:`merge` (a builder of the
same shape as ``Table.merge``), and :class:`DmlPlan`, the plain-data form ``tidelake.spark.sql``
parses ``DELETE FROM`` / ``UPDATE`` / ``MERGE INTO`` into.

They run tidelake's row-level DML (:mod:`tidelake.dml`: one atomic commit that fails when a
concurrent commit changed the rows it read, so no update is lost) on the driver: the target's
matching rows are read there (pruned by partition, bucket and key) and a merge's source is
collected to the driver as Arrow (``DataFrame.toArrow``), so a merge source must fit in the
driver's memory. Spark SQL expression text is rewritten for tidelake's SQL (sqlglot), with the
statement's table aliases turned into ``target`` / ``source``. Not yet distributed per
(partition, bucket) over the executors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import _spark_io as io
from .exceptions import InvalidArgumentError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from .write import WriteResult

__all__ = ["DmlPlan", "MergeClause", "SparkMerge", "delete", "update", "merge", "run_dml"]

CLAUSE_KINDS = ("matched_update", "matched_delete", "not_matched_insert", "not_matched_by_source_delete")


@dataclass
class MergeClause:
    """One ``WHEN`` clause: ``kind`` is one of :data:`CLAUSE_KINDS`; ``condition`` and the
    values of ``assignments`` are Spark SQL expression text (``"*"``: all columns)."""

    kind: str
    condition: str | None = None
    assignments: dict[str, str] | str | None = None


@dataclass
class DmlPlan:
    """A parsed DELETE / UPDATE / MERGE (expressions as Spark SQL text; ``source`` a query)."""

    kind: str
    path: str
    storage_options: dict[str, str] | None = None
    where: str | None = None
    assignments: dict[str, str] = field(default_factory=dict)
    source: str | None = None
    source_alias: str | None = None
    target_alias: str | None = None
    on: str | None = None
    clauses: list[MergeClause] = field(default_factory=list)


def _tidelake_sql(text: str | None, aliases: Mapping[str, str | None]) -> str | None:
    """Spark SQL expression ``text`` as the SQL tidelake's DML reads, with column qualifiers in
    ``aliases`` (lower case) renamed (``target`` / ``source``) or dropped (None)."""
    if text is None:
        return None
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError

    try:
        tree = sqlglot.parse_one(text, read="spark")
    except ParseError as e:
        raise InvalidArgumentError(f"cannot parse Spark SQL expression {text!r}: {e}") from None

    def requalify(node: Any) -> Any:
        if isinstance(node, exp.Column) and node.table and node.table.lower() in aliases:
            qualifier = aliases[node.table.lower()]
            return exp.column(node.name, table=qualifier) if qualifier else exp.column(node.name)
        return node

    return str(tree.transform(requalify).sql())


def delete(path: str, filter: str | None, *, storage_options: dict[str, str] | None = None,
           target_alias: str | None = None) -> WriteResult:
    """Delete the rows of the table at ``path`` matching ``filter`` (Spark SQL; all rows when
    None), atomically."""
    table = io.Location(str(path), storage_options).open()
    aliases = {target_alias.lower(): None} if target_alias else {}
    return table.delete(_tidelake_sql(filter, aliases))


def update(path: str, set: dict[str, str], filter: str | None = None, *,
           storage_options: dict[str, str] | None = None, target_alias: str | None = None) -> WriteResult:
    """Set columns (``{"qty": "qty + 1"}``, Spark SQL) of the rows matching ``filter``."""
    table = io.Location(str(path), storage_options).open()
    unknown = [c for c in set if c not in table.schema.names]
    if not set or unknown:
        raise InvalidArgumentError(f"update needs columns of {table.path} to set; unknown: {unknown}")
    aliases = {target_alias.lower(): None} if target_alias else {}
    values = {c: _tidelake_sql(v, aliases) for c, v in set.items()}
    return table.update(values, _tidelake_sql(filter, aliases))


class SparkMerge:
    """``merge(target, source, on)`` builder; clauses of a kind apply in the order given."""

    def __init__(self, path: str, source: DataFrame, on: str | list[str], target_alias: str = "target",
                 source_alias: str = "source", storage_options: dict[str, str] | None = None) -> None:
        self.where = io.Location(str(path), storage_options)
        self.where.open()
        self.source, self.on = source, on
        self.target_alias, self.source_alias = target_alias, source_alias
        self.clauses: list[MergeClause] = []

    def _add(self, kind: str, condition: str | None, assignments: dict[str, str] | str | None = None) -> SparkMerge:
        self.clauses.append(MergeClause(kind, condition, assignments))
        return self

    def when_matched_update(self, set: dict[str, str] | str = "*", condition: str | None = None) -> SparkMerge:
        return self._add("matched_update", condition, set)

    def when_matched_delete(self, condition: str | None = None) -> SparkMerge:
        return self._add("matched_delete", condition)

    def when_not_matched_insert(self, values: dict[str, str] | str = "*", condition: str | None = None) -> SparkMerge:
        return self._add("not_matched_insert", condition, values)

    def when_not_matched_by_source_delete(self, condition: str | None = None) -> SparkMerge:
        return self._add("not_matched_by_source_delete", condition)

    def execute(self) -> WriteResult:
        """Run the merge: one atomic commit on the driver."""
        if not self.clauses:
            raise InvalidArgumentError("merge needs at least one when_... clause")
        aliases: dict[str, str | None] = {self.target_alias.lower(): "target", self.source_alias.lower(): "source"}
        on = self.on if isinstance(self.on, list) else _tidelake_sql(self.on, aliases)
        builder = self.where.open().merge(self.source.toArrow(), on)
        for c in self.clauses:
            condition = _tidelake_sql(c.condition, aliases)
            values = c.assignments if not isinstance(c.assignments, dict) else {
                k: _tidelake_sql(v, aliases) for k, v in c.assignments.items()}
            if c.kind == "matched_update":
                builder.when_matched_update(values if values is not None else "*", condition)
            elif c.kind == "matched_delete":
                builder.when_matched_delete(condition)
            elif c.kind == "not_matched_insert":
                builder.when_not_matched_insert(values if values is not None else "*", condition)
            else:
                builder.when_not_matched_by_source_delete(condition)
        return builder.execute()


def merge(target_path: str, source: DataFrame, on: str | list[str], *, target_alias: str = "target",
          source_alias: str = "source", storage_options: dict[str, str] | None = None) -> SparkMerge:
    """Merge ``source`` into the table at ``target_path`` on ``on`` (key columns, or a Spark SQL
    condition over the two aliases); add clauses, then ``.execute()``."""
    return SparkMerge(target_path, source, on, target_alias, source_alias, storage_options)


def run_dml(spark: SparkSession, plan: DmlPlan) -> DataFrame:
    """Run a parsed statement with :func:`delete` / :func:`update` / :func:`merge`; its metrics
    as a one-row DataFrame."""
    if plan.kind == "delete":
        result = delete(plan.path, plan.where, storage_options=plan.storage_options, target_alias=plan.target_alias)
    elif plan.kind == "update":
        result = update(plan.path, plan.assignments, plan.where, storage_options=plan.storage_options,
                        target_alias=plan.target_alias)
    elif plan.kind == "merge" and plan.source is not None and plan.on is not None:
        builder = merge(plan.path, spark.sql(plan.source), plan.on, target_alias=plan.target_alias or "target",
                        source_alias=plan.source_alias or "source", storage_options=plan.storage_options)
        for clause in plan.clauses:
            builder._add(clause.kind, clause.condition, clause.assignments)
        result = builder.execute()
    else:
        raise InvalidArgumentError(f"not a DML plan: {plan}")
    return spark.createDataFrame([{
        "snapshot_id": result.snapshot_id, "rows_inserted": result.rows_inserted,
        "rows_updated": result.rows_updated, "rows_deleted": result.rows_deleted,
        "files_added": result.files_added, "files_removed": result.files_removed}],
        "snapshot_id long, rows_inserted long, rows_updated long, rows_deleted long, files_added long, "
        "files_removed long")
