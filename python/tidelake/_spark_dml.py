"""Row-level DML over Spark: :func:`delete`, :func:`update` and :func:`merge` (a builder of the
same shape as ``Table.merge``), and :class:`DmlPlan`, the plain-data form ``tidelake.spark.sql``
parses ``DELETE FROM`` / ``UPDATE`` / ``MERGE INTO`` into.

Not implemented yet: executing any of them raises :class:`~tidelake.UnsupportedError` naming
what is missing. They need the engine's row-level DML (``Table.delete/update/merge``, with a
commit that fails when a concurrent commit changed the rows being rewritten, so no update is
lost) to run per (partition, bucket) in Spark tasks with one commit on the driver, as
:func:`tidelake.spark.write` does. Arguments are checked before that, so a wrong table or clause
fails as it will once they run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import _spark_io as io
from .exceptions import InvalidArgumentError, UnsupportedError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["DmlPlan", "MergeClause", "SparkMerge", "delete", "update", "merge", "run_dml"]

MISSING = ("is not available yet: it needs tidelake's row-level DML (Table.delete/update/merge with a commit that "
           "detects concurrent changes to the rewritten rows), run per (partition, bucket) in Spark tasks")

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


def delete(path: str, filter: str, *, storage_options: dict[str, str] | None = None) -> Any:
    """Delete the rows of the table at ``path`` matching ``filter`` (Spark SQL), atomically."""
    io.Location(str(path), storage_options).open()
    raise UnsupportedError(f"tidelake.spark.delete {MISSING}")


def update(path: str, set: dict[str, str], filter: str | None = None, *,
           storage_options: dict[str, str] | None = None) -> Any:
    """Set columns (``{"qty": "qty + 1"}``, Spark SQL) of the rows matching ``filter``."""
    table = io.Location(str(path), storage_options).open()
    unknown = [c for c in set if c not in table.schema.names]
    if not set or unknown:
        raise InvalidArgumentError(f"update needs columns of {table.path} to set; unknown: {unknown}")
    raise UnsupportedError(f"tidelake.spark.update {MISSING}")


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

    def execute(self) -> Any:
        if not self.clauses:
            raise InvalidArgumentError("merge needs at least one when_... clause")
        raise UnsupportedError(f"tidelake.spark.merge {MISSING}")


def merge(target_path: str, source: DataFrame, on: str | list[str], *, target_alias: str = "target",
          source_alias: str = "source", storage_options: dict[str, str] | None = None) -> SparkMerge:
    """Merge ``source`` into the table at ``target_path`` on ``on`` (key columns, or a Spark SQL
    condition over the two aliases); add clauses, then ``.execute()``."""
    return SparkMerge(target_path, source, on, target_alias, source_alias, storage_options)


def run_dml(spark: SparkSession, plan: DmlPlan) -> DataFrame:
    """Run a parsed statement with :func:`delete` / :func:`update` / :func:`merge`."""
    if plan.kind == "delete":
        return delete(plan.path, plan.where or "true", storage_options=plan.storage_options)
    if plan.kind == "update":
        return update(plan.path, plan.assignments, plan.where, storage_options=plan.storage_options)
    if plan.kind != "merge" or plan.source is None or plan.on is None:
        raise InvalidArgumentError(f"not a DML plan: {plan}")
    builder = merge(plan.path, spark.sql(plan.source), plan.on, target_alias=plan.target_alias or "target",
                    source_alias=plan.source_alias or "source", storage_options=plan.storage_options)
    for clause in plan.clauses:
        builder._add(clause.kind, clause.condition, clause.assignments)
    return builder.execute()
