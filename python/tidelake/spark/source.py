"""The ``tidelake`` Python Data Source (PySpark 4.x): batch reads and writes.

Spark builds these objects in a planner worker and pickles them to executors and to a
driver-side commit worker, none of them the user's process: they hold plain data only (option
dicts, a ``StructType``, payload bytes) and open the table inside each call.

* Which snapshot a read reads is Paimon's ``scan.mode`` and its options (:mod:`tidelake.startup`);
  ``scan.mode = incremental`` reads the changes between two snapshots (inserts and
  update-afters, as a stream without ``row-kind``).
* Reads pinned by ``snapshot-id``, ``tag`` or ``timestamp-ms``: ``partitions()`` plans that
  snapshot on the driver and ships the splits' bytes, packed into tasks by size as Paimon packs
  them (``source.split.target-size``, ``source.split.open-file-cost``:
  :func:`~tidelake.spark.plain.engine_tasks`), not one task per split.
* Reads of the latest snapshot resolve it at each query execution, not at planning: PySpark
  (4.3) plans a read once per relation and reuses its partitions for every later query of the
  DataFrame or temporary view (``PythonDataSourceV2.readInfo``). ``partitions()`` therefore
  returns :class:`LatestPartition` slots that pin nothing; each task picks the snapshot of the
  running query, the newest one committed at or before the query's start (the time in Spark's
  UUIDv7 query id ``spark.sql.execution.query.id``, the same in every task of the query and
  its retries), plans it (once per worker process), packs its splits as a pinned read does and
  reads every ``slots``-th packed task. Spark makes that id when a DataFrame is defined and
  gives its first action that id (later actions get new ones), so a first action sees the
  table as of the DataFrame's definition, as a file-source DataFrame lists its files then.
  Without a query id (not a SQL execution) a task reads the latest snapshot. Invariant: tasks
  of one query read one snapshot as long as writers' clocks are not behind the driver's.
* Option ``skip-plain-splits`` (set by :func:`tidelake.spark.read`, with a pinned snapshot):
  only the engine's part of the read (:func:`~tidelake.spark.plain.classified_read`).
* Option ``filter`` (a JSON filter tree, set by :func:`tidelake.spark.read`): the read is
  planned with it (pruning only; Spark applies the query's own filters).
* ``read()`` casts every batch to exactly the Arrow schema Spark checks; a user
  ``.schema(...)`` selects columns.
* Filter push-down (pruning only: Spark still applies every filter) is offered by
  :class:`PushdownDataSource`, because a reader overriding ``pushFilters`` fails every read
  unless ``spark.sql.python.filterPushdown.enabled`` is true; :func:`tidelake.spark.register`
  uses it by default from PySpark 5.0. Not on PySpark 4.3 and older: there a plan made with
  one query's filters is reused by the relation's other scans (later queries with no pushable
  filter, the other side of a self-join), which would drop their rows
  (``tests/test_spark_pushdown.py``).
* Writes (``append`` / ``overwrite``; Spark itself refuses ``errorifexists`` and ``ignore``
  for Python sources): ``writer()`` creates a missing table from the DataFrame's schema and
  the ``primary-key`` / ``partition-by`` / ``bucket`` / other table options
  (:class:`~tidelake.spark.io.CreateSpec`); given for an existing table, the keys must match.
  Every task writes its own uniquely named files with an engine writer and returns the
  commit-message bytes; ``commit()`` commits them atomically as (``spark-batch-<uuid>``,
  :data:`~tidelake.spark.io.JOB_IDENTIFIER`); ``abort()`` deletes the files only when that
  commit did not land.
* Spark's own catalog tables (``CREATE TABLE t USING tidelake LOCATION '/path'`` or ``OPTIONS
  (path '...')``, no column list): Spark gives ``schema()`` the table's properties, ``path``
  among them, but gives the reader and writer no options at all. ``schema()`` therefore puts
  the path in the first field's metadata (:data:`LOCATION_METADATA`), which Spark keeps in the
  catalog and hands back with the schema to ``reader()`` and ``writer()``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)

from .. import expr
from ..exceptions import InvalidArgumentError
from ..expr.spark_filters import spark_filter
from ..scan import Split
from ..startup import scan_mode
from . import io
from .plain import FILTER, SKIP_PLAIN, SPARK_JOINS, classified_read, engine_tasks

if TYPE_CHECKING:
    from pyspark.sql.datasource import Filter
    from pyspark.sql.types import StructType

    from ..table import Table

__all__ = ["TidelakeDataSource", "PushdownDataSource", "SplitPartition", "LatestPartition", "TaskMessages"]

LOCATION_METADATA = "tidelake.location"
"""Field metadata key holding a Spark catalog table's path (see the module docs)."""

CATALOG_TABLE_OPTION = "provider"
"""An option Spark gives ``schema()`` only for a table of its catalog (with ``location``)."""

QUERY_ID = "spark.sql.execution.query.id"
"""The task-local property holding the running SQL query's id (a UUIDv7 in PySpark 4.x)."""


class SplitPartition(InputPartition):
    """One task's planned splits (plain picklable data); ``changes`` marks splits of a change
    scan."""

    def __init__(self, splits: list[Split], changes: bool = False) -> None:
        super().__init__(splits)
        self.splits = splits
        self.changes = changes


class LatestPartition(InputPartition):
    """Slot ``slot`` of ``slots`` of a read of the latest snapshot: pins no snapshot and no
    split (see the module docs)."""

    def __init__(self, where: io.Location, slot: int, slots: int, columns: list[str] | None,
                 filters: list[expr.Filter]) -> None:
        super().__init__(slot)
        self.where, self.slot, self.slots = where, slot, slots
        self.columns, self.filters = columns, filters


def query_time_ms() -> int | None:
    """Start of the running Spark query in epoch ms (its UUIDv7 id), None outside a query."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    text = ctx.getLocalProperty(QUERY_ID) if ctx is not None else None
    if not text:
        return None
    try:
        qid = uuid.UUID(text)
    except ValueError:
        return None
    return qid.int >> 80 if qid.version == 7 else None  # the top 48 bits: Unix ms


_PLANS: dict[tuple, list[list[Split]]] = {}
_PLANS_KEPT = 8


def latest_tasks(partition: LatestPartition) -> list[list[Split]]:
    """The splits of the running query's snapshot packed into tasks (:func:`engine_tasks`;
    planned once per worker process: Python workers are reused across tasks)."""
    table = partition.where.open()
    at = query_time_ms()
    snapshot = table.latest_snapshot() if at is None else table.snapshot_at(at)
    if snapshot is None:
        return []
    key = (partition.where.path, tuple(sorted((partition.where.storage_options or {}).items())), snapshot.id,
           tuple(partition.columns or ()), repr(partition.filters))
    if key not in _PLANS:
        if len(_PLANS) >= _PLANS_KEPT:
            _PLANS.pop(next(iter(_PLANS)))
        where = expr.all_of(partition.filters)
        _PLANS[key] = engine_tasks(table, table.pinned_scan(snapshot.id, columns=partition.columns,
                                                            filter=where).splits())
    return _PLANS[key]


@dataclass
class TaskMessages(WriterCommitMessage):
    """What one write task hands to the driver: its task id and commit-message payloads."""

    task: int
    payloads: list[bytes] = field(default_factory=list)


def task_id() -> int:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return ctx.partitionId() if ctx is not None else 0


def task_payloads(messages: list[WriterCommitMessage | None]) -> list[tuple[int, list[bytes]]]:
    """(task id, payloads) of every task that succeeded (Spark passes None for failed ones)."""
    return [(m.task, m.payloads) for m in messages if isinstance(m, TaskMessages)]


def all_payloads(tasks: list[tuple[int, list[bytes]]]) -> list[bytes]:
    return [p for _, payloads in tasks for p in payloads]


def read_partition(partition: InputPartition, schema: StructType) -> Iterator[pa.RecordBatch]:
    if isinstance(partition, LatestPartition):
        for task in latest_tasks(partition)[partition.slot::partition.slots]:
            for split in task:
                yield from io.rows_of_split(split, io.arrow_schema(schema), False)
    elif isinstance(partition, SplitPartition):  # else: Spark's placeholder for an empty plan
        for split in partition.splits:
            yield from io.rows_of_split(split, io.arrow_schema(schema), partition.changes)


def given_filter(options: dict[str, str]) -> expr.Filter | None:
    """The ``filter`` option: a JSON filter tree (:func:`tidelake.expr.filter_json`)."""
    text = options.get(FILTER)
    if not text:
        return None
    try:
        tree = json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidArgumentError(f"option {FILTER} must be a JSON filter tree, got {text!r} ({e})") from None
    return expr.from_json(tree)


class BatchReader(DataSourceReader):
    """Reads one snapshot; see the module docs."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self.options = options
        self.schema = schema
        self.given = given_filter(options)
        self.filters: list[expr.Filter] = [] if self.given is None else [self.given]

    def partitions(self) -> list[InputPartition]:
        where = io.location(self.options)
        table = where.open()
        columns = io.projection(table, self.schema)
        start = scan_mode(self.options, table.options)
        if start.mode == "incremental":  # the changes between two snapshots, inserts and update-afters
            changes = table.changes_scan(columns=columns, filter=expr.all_of(self.filters),
                                         **start.incremental_range(table))
            return [SplitPartition([s], changes=True) for s in changes.splits()]
        pinned = start.batch_snapshot(table)
        by_creation = start.read_options(table)
        if by_creation:  # the latest snapshot's files created since a time: planned once, here
            splits = table.scan(columns=columns, filter=expr.all_of(self.filters), options=by_creation).splits()
            return [SplitPartition(task) for task in engine_tasks(table, splits)]
        if io.flag(self.options, SKIP_PLAIN):
            return self.not_plain_partitions(table, columns, pinned)
        splits = table.scan(columns=columns, filter=expr.all_of(self.filters), **pinned).splits()
        if io.is_pinned(pinned):
            return [SplitPartition(task) for task in engine_tasks(table, splits)]
        # As many slots as packed tasks now, and at least one per bucket of a fixed-bucket
        # table, so that a view over a table that grows keeps reading in parallel.
        slots = max(len(engine_tasks(table, splits)), table.effective_options["bucket"], 1)
        return [LatestPartition(where, i, slots, columns, self.filters) for i in range(slots)]

    def not_plain_partitions(self, table: Table, columns: list[str] | None,
                             pinned: dict[str, Any]) -> list[InputPartition]:
        """The engine's splits of a pinned snapshot (:func:`~tidelake.spark.plain.classified_read`:
        :func:`tidelake.spark.read` reads the rest with Spark's Parquet reader), packed into
        tasks. Planned with the ``filter`` option only (no filter Spark pushed), as there, so
        that both classify alike (and with the same joins, option ``spark-joins``)."""
        if not io.is_pinned(pinned):
            raise InvalidArgumentError(f"option {SKIP_PLAIN} needs a pinned snapshot (snapshot-id, tag or "
                                       "timestamp-ms)")
        joins = io.flag(self.options, SPARK_JOINS)
        engine = classified_read(table, columns, pinned, self.given, joins=joins).engine
        return [SplitPartition(task) for task in engine_tasks(table, engine)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(partition, self.schema)


class PushdownReader(BatchReader):
    """A :class:`BatchReader` that uses Spark's filters to prune partitions, files and row
    groups. Spark still evaluates every filter (they are all returned as not handled)."""

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        for f in filters:
            term = spark_filter(f)
            if term is not None:
                self.filters.append(term)
            yield f


class BatchWriter(DataSourceArrowWriter):
    """``df.write.format("tidelake").mode("append"|"overwrite")``; see the module docs."""

    def __init__(self, options: dict[str, str], overwrite: bool) -> None:
        self.location = io.location(options)
        self.overwrite = overwrite
        self.commit_user = io.job_user("batch")

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TaskMessages:
        return TaskMessages(task_id(), io.write_task(self.location, self.commit_user, self.overwrite, iterator))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        table = self.location.open()
        tasks = task_payloads(messages)
        io.check_dynamic_bucket_writers(table, tasks)
        io.commit(table, all_payloads(tasks), self.commit_user, io.JOB_IDENTIFIER, self.overwrite)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        payloads = all_payloads(task_payloads(messages))
        io.discard_unless_committed(self.location, payloads, self.commit_user, io.JOB_IDENTIFIER)


def with_catalog_location(options: Mapping[str, str], schema: StructType) -> dict[str, str]:
    """``options`` with the path of a Spark catalog table, kept in ``schema`` (see the module
    docs), when they have none."""
    options = dict(options)
    if not options.get("path"):
        path = next((f.metadata[LOCATION_METADATA] for f in schema.fields
                     if f.metadata and LOCATION_METADATA in f.metadata), None)
        if path:
            options["path"] = path
    return options


class TidelakeDataSource(DataSource):
    """The ``tidelake`` format: ``spark.read/readStream.format("tidelake").load(path)`` and
    ``df.write/writeStream.format("tidelake").save(path)``. Options are listed in
    docs/spark.md."""

    reader_class: type[BatchReader] = BatchReader

    @classmethod
    def name(cls) -> str:
        return "tidelake"

    def schema(self) -> StructType:
        options = dict(self.options)
        # A stream (``scan.mode``) reads forward from ``snapshot-id``: the latest schema.
        pinned = None if "scan.mode" in options else io.time_travel(options)
        where = io.location(options)
        schema = io.spark_schema(where.open(), io.flag(options, "row-kind"), pinned)
        if CATALOG_TABLE_OPTION in options and schema.fields:
            schema.fields[0].metadata = {**(schema.fields[0].metadata or {}), LOCATION_METADATA: where.path}
        return schema

    def reader(self, schema: StructType) -> DataSourceReader:
        return self.reader_class(with_catalog_location(self.options, schema), schema)

    def writer(self, schema: StructType, overwrite: bool) -> BatchWriter:
        options = with_catalog_location(self.options, schema)
        io.CreateSpec.of_options(options).open_or_create(io.location(options), io.arrow_schema(schema), "append")
        return BatchWriter(options, overwrite)

    def streamReader(self, schema: StructType) -> Any:
        from .stream import StreamReader

        return StreamReader(dict(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> Any:
        from .stream import StreamWriter

        options = dict(self.options)
        io.CreateSpec.of_options(options).open_or_create(io.location(options), io.arrow_schema(schema), "append")
        return StreamWriter(options, overwrite)


class PushdownDataSource(TidelakeDataSource):
    """``tidelake`` with filter push-down; registered by :func:`tidelake.spark.register` on
    PySpark 5.0+ (or with ``filter_pushdown=True``), which also sets
    ``spark.sql.python.filterPushdown.enabled``."""

    reader_class = PushdownReader
