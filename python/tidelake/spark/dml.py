"""Row-level DML over Spark: :func:`delete`, :func:`update` and :func:`merge` (a builder of the
same shape as ``Table.merge``), and :class:`DmlPlan`, the plain-data form ``tidelake.spark.sql``
parses ``DELETE FROM`` / ``UPDATE`` / ``MERGE INTO`` into.

They run tidelake's row-level DML (:mod:`tidelake.dml`) distributed over the executors:

* the driver has the engine plan the change on the latest snapshot (:func:`tidelake.dml.plan`:
  capability, strategy, the splits the filter may match grouped into tasks by (partition,
  bucket), each task versioned bytes);
* each group of tasks is one Spark task, which computes its share of the change from that
  snapshot (:func:`tidelake.dml.prepare_delete` / ``prepare_update`` /
  ``MergeBuilder.prepare`` with the tasks' bytes) and returns it uncommitted (the engine's
  prepared-change bytes, its files written; nothing is pickled);
* a merge's source rows are routed to their target group first: each row's (partition, bucket)
  is computed by the engine from its join columns (``RawTable.row_places``, the function
  writes route with) and the source is cogrouped with the target's groups, so a task sees its
  bucket's source rows and splits (by partition only when the join columns lack the bucket
  key or buckets are not fixed, as one group when they lack the partition columns);
* the driver commits every task's change at once (:func:`tidelake.dml.commit_payloads`): one
  snapshot that fails when a concurrent commit changed what the tasks read, in which case
  nothing landed and the job runs again from the new latest snapshot. Exactly one result per
  group is committed: a duplicate (a retried or speculative attempt that also finished) has its
  files discarded; a failed attempt deletes its own files.

Spark SQL expression text is rewritten for tidelake's SQL (sqlglot), with the statement's table
aliases turned into ``target`` / ``source``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from .. import dml
from .._internal import RawTable
from ..exceptions import InvalidArgumentError
from ..expr.sql import parse_error_text
from ..write import replayed
from . import io

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from ..expr import Filter
    from ..table import Table
    from ..write import WriteResult

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
        raise InvalidArgumentError(f"cannot parse Spark SQL expression {text!r}: {parse_error_text(e)}") from None

    def requalify(node: Any) -> Any:
        if isinstance(node, exp.Column) and node.table and node.table.lower() in aliases:
            qualifier = aliases[node.table.lower()]
            return exp.column(node.name, table=qualifier) if qualifier else exp.column(node.name)
        return node

    return str(tree.transform(requalify).sql())


# ---- distribution --------------------------------------------------------------------------------

_PARTITION, _BUCKET = "__tidelake_partition", "__tidelake_bucket"
"""Columns naming a row's or a split's group: framed partition row and bucket (-1: any)."""
_TASK = "__tidelake_task"
"""Column holding the bytes of one engine task of a group."""
_RESULT = "group_partition binary, group_bucket int, change binary"
"""What each merge task returns: its group and its prepared change's bytes."""
_RESULT_SCHEMA = pa.schema([("group_partition", pa.binary()), ("group_bucket", pa.int32()), ("change", pa.binary())])

Group = tuple[bytes, int]
Tasks = list[bytes]
"""The engine's tasks (bytes) of one group."""


@dataclass(frozen=True)
class _Grouping:
    """How splits and source rows are grouped into tasks: by ``level`` "bucket" (fixed buckets;
    partitions in ``coarse``, whose files were written with another bucket count, by partition),
    "partition" or "table"."""

    level: str
    coarse: frozenset[bytes] = frozenset()

    def group(self, partition: bytes, bucket: int) -> Group:
        if self.level == "table":
            return b"", -1
        if self.level == "partition" or partition in self.coarse or bucket < 0:
            return partition, -1
        return partition, bucket


def _plan(table: Table, snapshot: int | None, tree: Filter | None, level: str, *, what: str = "merge",
          deletes: bool = False) -> tuple[_Grouping, dict[Group, Tasks]]:
    """The engine's tasks of ``what`` on ``snapshot`` for the rows the filter ``tree`` may
    keep, grouped for Spark by ``level`` (the engine refuses what the table cannot take)."""
    if snapshot is None:
        return _Grouping(level), {}
    from .._internal import RawRowLevelTask

    buckets = table.effective_options["bucket"]
    planned = dml._plan(table, what, deletes=deletes, tree=tree, snapshot=snapshot)
    placed = []
    coarse = set()
    for task in planned.tasks:
        raw = RawRowLevelTask.from_bytes(task)
        if buckets <= 0 or raw.total_buckets != buckets:
            coarse.add(raw.partition)
        placed.append((raw.partition, raw.bucket, task))
    grouping = _Grouping(level if buckets > 0 else ("table" if level == "table" else "partition"), frozenset(coarse))
    groups: dict[Group, Tasks] = {}
    for partition, bucket, task in placed:
        groups.setdefault(grouping.group(partition, bucket), []).append(task)
    return grouping, groups


def _commit(table: Table, results: list[tuple[Group, bytes]]) -> WriteResult:
    """Commit one change (bytes) per group (duplicates' files are discarded) as one transaction."""
    chosen: dict[Group, bytes] = {}
    for group, change in results:
        if group in chosen:
            table._raw.discard(RawTable.prepared_change_messages(change))
        else:
            chosen[group] = change
    return dml.commit_payloads(table, list(chosen.values()), f"spark-dml-{uuid.uuid4()}", io.JOB_IDENTIFIER)


def _run_job(table: Table, job: Callable[[int | None], list[tuple[Group, bytes]]]) -> WriteResult:
    """Run ``job(snapshot)`` on the latest snapshot and commit its changes; a conflict or an
    expired snapshot (nothing landed) runs it again from the new latest."""
    return replayed(lambda: _commit(table, job(table._raw.latest_snapshot_id())), table._raw)


def _result(group: Group, change: bytes) -> pa.Table:
    return pa.table({"group_partition": pa.array([group[0]], pa.binary()),
                     "group_bucket": pa.array([group[1]], pa.int32()),
                     "change": pa.array([change], pa.binary())})


def _collected(rows: list[Any]) -> list[tuple[Group, bytes]]:
    """The (group, change bytes) pairs of merge tasks' result rows."""
    return [((bytes(r["group_partition"]), r["group_bucket"]), bytes(r["change"])) for r in rows]


@dataclass(frozen=True)
class _FilteredTask:
    """One group's share of a delete (``set`` None) or update, computed in an executor."""

    where: io.Location
    snapshot: int | None
    filter: str | None
    set: dict[str, str] | None

    def __call__(self, task: tuple[Group, Tasks]) -> tuple[Group, bytes]:
        group, tasks = task
        table = self.where.open()
        if self.set is None:
            return group, dml.prepare_delete(table, self.filter, self.snapshot, tasks=tasks).payload
        return group, dml.prepare_update(table, self.set, self.filter, self.snapshot, tasks=tasks).payload


def _filtered(spark: SparkSession, where: io.Location, filter: str | None,
              set: dict[str, str] | None) -> WriteResult:
    table = where.open()
    schema = table.schema
    pushdown = dml._compile(filter, {"target": dict(zip(schema.names, schema.types))}, schema).pushdown

    def job(snapshot: int | None) -> list[tuple[Group, bytes]]:
        _, groups = _plan(table, snapshot, pushdown, "bucket", what="delete" if set is None else "update",
                          deletes=set is None)
        if not groups:
            return []
        task = _FilteredTask(where, snapshot, filter, set)
        return spark.sparkContext.parallelize(list(groups.items()), len(groups)).map(task).collect()

    return _run_job(table, job)


def delete(path: str, filter: str | None, *, storage_options: dict[str, str] | None = None,
           target_alias: str | None = None, spark: SparkSession | None = None) -> WriteResult:
    """Delete the rows of the table at ``path`` matching ``filter`` (Spark SQL; all rows when
    None), atomically, one task per (partition, bucket) of the rows that can match (``spark``:
    the session, default the active one)."""
    where = io.Location(str(path), storage_options)
    where.open()
    aliases = {target_alias.lower(): None} if target_alias else {}
    return _filtered(_session(spark), where, _tidelake_sql(filter, aliases), None)


def update(path: str, set: dict[str, str], filter: str | None = None, *,
           storage_options: dict[str, str] | None = None, target_alias: str | None = None,
           spark: SparkSession | None = None) -> WriteResult:
    """Set columns (``{"qty": "qty + 1"}``, Spark SQL) of the rows matching ``filter``,
    distributed as :func:`delete`."""
    where = io.Location(str(path), storage_options)
    table = where.open()
    unknown = [c for c in set if c not in table.schema.names]
    if not set or unknown:
        raise InvalidArgumentError(f"update needs columns of {table.path} to set; unknown: {unknown}")
    aliases = {target_alias.lower(): None} if target_alias else {}
    values = {c: _tidelake_sql(v, aliases) or "NULL" for c, v in set.items()}
    return _filtered(_session(spark), where, _tidelake_sql(filter, aliases), values)


def _session(spark: SparkSession | None) -> SparkSession:
    from pyspark.sql import SparkSession

    session = spark or SparkSession.getActiveSession()
    if session is None:
        raise InvalidArgumentError("no active SparkSession: pass spark=")
    return session


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
        """Run the merge: one task per target (partition, bucket) group with its source rows,
        one atomic commit on the driver."""
        if not self.clauses:
            raise InvalidArgumentError("merge needs at least one when_... clause")
        aliases: dict[str, str | None] = {self.target_alias.lower(): "target", self.source_alias.lower(): "source"}
        on = self.on if isinstance(self.on, list) else _tidelake_sql(self.on, aliases)
        clauses = [MergeClause(c.kind, _tidelake_sql(c.condition, aliases), c.assignments
                               if not isinstance(c.assignments, dict)
                               else {k: _tidelake_sql(v, aliases) or "NULL" for k, v in c.assignments.items()})
                   for c in self.clauses]
        table = self.where.open()
        source_schema = self.source.schema
        empty = io.collect_arrow(self.source.limit(0))
        task = _MergeTask(self.where, None, on, clauses, empty.schema)
        pairs = task.builder(table, empty)._on  # (target column, source column)
        targets = {t for t, _ in pairs}
        level = "table"
        if set(table.partition_keys) <= targets:
            level = "bucket" if set(table._raw.bucket_keys) <= targets else "partition"
        by_source = any(c.kind == "not_matched_by_source_delete" for c in clauses)
        deletes = by_source or any(c.kind == "matched_delete" for c in clauses)
        spark = self.source.sparkSession

        def job(snapshot: int | None) -> list[tuple[Group, bytes]]:
            from pyspark.sql.types import BinaryType, IntegerType, StructField, StructType

            grouping, groups = _plan(table, snapshot, None, level, deletes=deletes)
            routed_schema = StructType([*source_schema.fields, StructField(_PARTITION, BinaryType(), False),
                                        StructField(_BUCKET, IntegerType(), False)])
            routed = self.source.mapInArrow(_Router(self.where, pairs, grouping), routed_schema)
            splits = spark.createDataFrame(
                [(g[0], g[1], task) for g, tasks in groups.items() for task in tasks],
                StructType([StructField(_PARTITION, BinaryType(), False), StructField(_BUCKET, IntegerType(), False),
                            StructField(_TASK, BinaryType(), False)]))
            task = _MergeTask(self.where, snapshot, on, clauses, empty.schema, by_source)
            return _collected([r.asDict() for r in _merged_groups(routed, splits, task).collect()])

        return _run_job(table, job)


def _merged_groups(routed: DataFrame, splits: DataFrame, task: _MergeTask) -> DataFrame:
    """``task`` run on every target group, with the group's source rows (``routed``) and its
    splits: a cogroup in Arrow on PySpark 4.0+; on 3.x (no Arrow cogroup) both sides shuffled
    by group into one DataFrame and grouped again inside each task (:class:`_TaskGroups`)."""
    grouped = routed.groupBy(_PARTITION, _BUCKET).cogroup(splits.groupBy(_PARTITION, _BUCKET))
    if hasattr(grouped, "applyInArrow"):
        def merge_group(rows: pa.Table, splits: pa.Table) -> pa.Table:  # Spark reads the arity
            return task(rows, splits)

        return grouped.applyInArrow(merge_group, _RESULT)
    both = routed.unionByName(splits, allowMissingColumns=True).repartition(_PARTITION, _BUCKET)
    return both.mapInArrow(_TaskGroups(task, routed.columns), _RESULT)


@dataclass(frozen=True)
class _TaskGroups:
    """``mapInArrow`` function of PySpark 3.x merges: the rows of one task (source rows with a
    null split, split rows with null source columns, every row of a group in this task) split
    into groups, each given to ``task`` as a cogroup would."""

    task: _MergeTask
    source_columns: list[str]

    def __call__(self, batches: Any) -> Any:
        import pyarrow.compute as pc

        rows = pa.Table.from_batches(list(batches))
        if rows.num_rows == 0:
            return
        groups = rows.select([_PARTITION, _BUCKET]).group_by([_PARTITION, _BUCKET]).aggregate([]).to_pylist()
        for group in groups:
            mine = rows.filter(pc.and_(pc.equal(rows.column(_PARTITION), pa.scalar(group[_PARTITION], pa.binary())),
                                       pc.equal(rows.column(_BUCKET), group[_BUCKET])))
            task_rows = pc.is_valid(mine.column(_TASK))
            source = mine.filter(pc.invert(task_rows)).select(self.source_columns)
            splits = mine.filter(task_rows).select([_PARTITION, _BUCKET, _TASK])
            yield from self.task(source, splits).to_batches()


@dataclass(frozen=True)
class _Router:
    """``mapInArrow`` function appending each source row's target group (its join columns read
    as the target's columns, placed by the engine)."""

    where: io.Location
    pairs: list[tuple[str, str]]
    grouping: _Grouping

    def __call__(self, batches: Any) -> Any:
        table = self.where.open()
        schema = table.schema
        for batch in batches:
            if self.grouping.level == "table":
                places = [(b"", -1)] * batch.num_rows
            else:
                keys = pa.table({t: batch.column(s).cast(schema.field(t).type) for t, s in self.pairs})
                places = [self.grouping.group(p, b) for p, b in table._raw.row_places(keys)]
            yield (batch.append_column(_PARTITION, pa.array([p for p, _ in places], pa.binary()))
                   .append_column(_BUCKET, pa.array([b for _, b in places], pa.int32())))


@dataclass(frozen=True)
class _MergeTask:
    """Cogroup function: one target group's share of a merge, from its source rows and splits."""

    where: io.Location
    snapshot: int | None
    on: Any
    clauses: list[MergeClause]
    source_schema: pa.Schema
    by_source: bool = False

    def builder(self, table: Table, source: pa.Table) -> dml.MergeBuilder:
        builder = table.merge(source, self.on)
        for c in self.clauses:
            values = c.assignments if c.assignments is not None else "*"
            if c.kind == "matched_update":
                builder.when_matched_update(values, c.condition)
            elif c.kind == "matched_delete":
                builder.when_matched_delete(c.condition)
            elif c.kind == "not_matched_insert":
                builder.when_not_matched_insert(values, c.condition)
            else:
                builder.when_not_matched_by_source_delete(c.condition)
        return builder

    def __call__(self, rows: pa.Table, splits: pa.Table) -> pa.Table:
        if rows.num_rows == 0 and not self.by_source:
            return _RESULT_SCHEMA.empty_table()
        either = rows if rows.num_rows else splits
        group = (either.column(_PARTITION)[0].as_py(), either.column(_BUCKET)[0].as_py())
        source = rows.drop_columns([_PARTITION, _BUCKET]).cast(self.source_schema) if rows.num_rows \
            else self.source_schema.empty_table()
        tasks = splits.column(_TASK).to_pylist()
        change = self.builder(self.where.open(), source).prepare(self.snapshot, tasks=tasks)
        return _result(group, change.payload)


def merge(target_path: str, source: DataFrame, on: str | list[str], *, target_alias: str = "target",
          source_alias: str = "source", storage_options: dict[str, str] | None = None) -> SparkMerge:
    """Merge ``source`` into the table at ``target_path`` on ``on`` (key columns, or a Spark SQL
    condition over the two aliases); add clauses, then ``.execute()``."""
    return SparkMerge(target_path, source, on, target_alias, source_alias, storage_options)


def run_dml(spark: SparkSession, plan: DmlPlan) -> DataFrame:
    """Run a parsed statement with :func:`delete` / :func:`update` / :func:`merge`; its metrics
    as a one-row DataFrame."""
    if plan.kind == "delete":
        result = delete(plan.path, plan.where, storage_options=plan.storage_options, target_alias=plan.target_alias,
                        spark=spark)
    elif plan.kind == "update":
        result = update(plan.path, plan.assignments, plan.where, storage_options=plan.storage_options,
                        target_alias=plan.target_alias, spark=spark)
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
