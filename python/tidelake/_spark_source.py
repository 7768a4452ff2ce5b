"""The ``tidelake`` Python Data Source (PySpark 4.x): batch reads and writes.

Spark builds these objects in a planner worker and pickles them to executors and to a
driver-side commit worker, none of them the user's process: they hold plain data only (option
dicts, a ``StructType``, payload bytes) and open the table inside each call.

* Reads: ``partitions()`` plans one snapshot on the driver (time travel by ``snapshot-id``,
  ``tag`` or ``timestamp-ms``; a user ``.schema(...)`` selects columns) and ships each split's
  bytes; ``read()`` streams a split and casts every batch to exactly the Arrow schema Spark
  checks. Filter push-down (pruning only: Spark still applies every filter) is offered by
  :class:`PushdownDataSource`, because a reader overriding ``pushFilters`` fails every read
  unless ``spark.sql.python.filterPushdown.enabled`` is true.
* Writes (``append`` / ``overwrite``): every task writes its own uniquely named files with an
  engine writer and returns the commit-message bytes; ``commit()`` commits them atomically as
  (``spark-batch-<uuid>``, :data:`~tidelake._spark_io.JOB_IDENTIFIER`); ``abort()`` deletes the
  files only when that commit did not land.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Iterator
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

from . import _spark_io as io
from .scan import Split

if TYPE_CHECKING:
    from pyspark.sql.datasource import Filter
    from pyspark.sql.types import StructType

__all__ = ["TidelakeDataSource", "PushdownDataSource", "SplitPartition", "TaskMessages"]


class SplitPartition(InputPartition):
    """One planned split (plain picklable data); ``changes`` marks a split of a change scan."""

    def __init__(self, split: Split, changes: bool = False) -> None:
        super().__init__(split)
        self.split = split
        self.changes = changes


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
    if not isinstance(partition, SplitPartition):  # Spark's placeholder for an empty plan
        return
    yield from io.rows_of_split(partition.split, io.arrow_schema(schema), partition.changes)


class BatchReader(DataSourceReader):
    """Reads one snapshot; see the module docs."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self.options = options
        self.schema = schema
        self.filters: list[tuple[str, str, Any]] = []

    def partitions(self) -> list[InputPartition]:
        table = io.location(self.options).open()
        columns = io.projection(table, self.schema)
        scan = table.scan(columns=columns, filter=self.filters or None, **io.time_travel(self.options))
        return [SplitPartition(s) for s in scan.splits()]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(partition, self.schema)


_COMPARISONS = {"EqualTo": "=", "GreaterThan": ">", "GreaterThanOrEqual": ">=", "LessThan": "<",
                "LessThanOrEqual": "<="}


def _pushable_value(value: Any) -> bool:
    # Timestamps are left to Spark: their zone semantics differ between TIMESTAMP and
    # TIMESTAMP_LTZ columns. Everything else converts exactly.
    if isinstance(value, dt.datetime):
        return False
    return isinstance(value, (bool, int, float, str, dt.date, decimal.Decimal))


def filter_term(f: Filter) -> tuple[str, str, Any] | None:
    """A Spark data source filter as a tidelake DNF term, or None when it is not pushed."""
    attribute: tuple[str, ...] = getattr(f, "attribute", ())
    if len(attribute) != 1:
        return None
    column, kind = attribute[0], type(f).__name__
    value: Any = getattr(f, "value", None)  # comparisons and In have one; the Filter base has not
    if kind in _COMPARISONS and _pushable_value(value):
        return (column, _COMPARISONS[kind], value)
    if kind == "In" and value and all(_pushable_value(v) for v in value):
        return (column, "in", list(value))
    if kind == "IsNull":
        return (column, "is_null", None)
    if kind == "IsNotNull":
        return (column, "is_not_null", None)
    return None


class PushdownReader(BatchReader):
    """A :class:`BatchReader` that uses Spark's filters to prune partitions, files and row
    groups. Spark still evaluates every filter (they are all returned as not handled)."""

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        for f in filters:
            term = filter_term(f)
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


class TidelakeDataSource(DataSource):
    """The ``tidelake`` format: ``spark.read/readStream.format("tidelake").load(path)`` and
    ``df.write/writeStream.format("tidelake").save(path)``. Options are listed in the README
    (Spark section)."""

    reader_class: type[BatchReader] = BatchReader

    @classmethod
    def name(cls) -> str:
        return "tidelake"

    def schema(self) -> StructType:
        options = dict(self.options)
        return io.spark_schema(io.location(options).open(), io.flag(options, "row-kind"))

    def reader(self, schema: StructType) -> DataSourceReader:
        return self.reader_class(dict(self.options), schema)

    def writer(self, schema: StructType, overwrite: bool) -> BatchWriter:
        return BatchWriter(dict(self.options), overwrite)

    def streamReader(self, schema: StructType) -> Any:
        from ._spark_stream import StreamReader

        return StreamReader(dict(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> Any:
        from ._spark_stream import StreamWriter

        return StreamWriter(dict(self.options), overwrite)


class PushdownDataSource(TidelakeDataSource):
    """``tidelake`` with filter push-down; registered by ``register(spark, filter_pushdown=True)``,
    which also sets ``spark.sql.python.filterPushdown.enabled``."""

    reader_class = PushdownReader
